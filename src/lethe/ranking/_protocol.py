"""What every ranking is to a memory (:class:`Ranking`), and the order of equal rank values (:func:`rank`).

A memory asks its ranking for candidates (the top, the lowest, those that may
score above or below a limit) and tells it of every change; the scores
themselves always come from the decay function, so every ranking gives the
answers a full sort of :meth:`~lethe.Memory.score` would.  Ties are broken
here, once for all of them: pinned entries first, then by rank value, equal
values latest put first.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from itertools import compress, islice
from operator import attrgetter, eq
from typing import Any, Protocol

from lethe._core.entry import Entry
from lethe._core.map import PersistentMap
from lethe.decay._scorer import Scorer

#: A memory's entries by key, as every query of a ranking gets them.
Entries = PersistentMap[Any, Entry[Any, Any]]
_SEQ = attrgetter("seq")


class Ranking(Protocol):
    """What a memory needs of a ranking strategy.  Immutable: a change returns a new ranking."""

    def add(self, entry: Entry[Any, Any]) -> Ranking:
        """The ranking with ``entry`` added."""

    def remove(self, entry: Entry[Any, Any]) -> Ranking:
        """The ranking without ``entry`` (which it holds)."""

    def swap(self, old: Entry[Any, Any], new: Entry[Any, Any]) -> Ranking:
        """The ranking with ``old`` replaced by ``new``."""

    def rebuilt(self, entries: Iterable[Entry[Any, Any]], origin_us: float) -> Ranking:
        """A ranking of ``entries`` alone (``origin_us``: the latest clock reading, or NaN)."""

    def edited(
        self, gone: Mapping[int, Entry[Any, Any]], replaced: dict[int, Entry[Any, Any]], added: list[Entry[Any, Any]]
    ) -> Ranking:
        """Many changes in bulk: without the entries of ``gone`` (by seq), ``replaced`` swapped in by
        seq (each keeps its key, seq and pinning), ``added`` added."""

    def ranked(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Iterator[Entry[Any, Any]]:
        """Every entry not expired at ``now_us``, in rank order (lazily where the strategy can)."""

    def top(
        self, entries: Entries, scorer: Scorer, n: int, now: datetime, now_us: float, may_expire: bool = True
    ) -> list[Entry[Any, Any]]:
        """The first ``n`` of :meth:`ranked` (``may_expire`` False: no entry has a deadline that runs)."""

    def at_least(
        self, entries: Entries, limit: float, now_us: float
    ) -> tuple[list[Entry[Any, Any]], list[Entry[Any, Any]]]:
        """``(pinned, unpinned)``; the unpinned ones may score ``limit`` or more (a superset)."""

    def below(
        self, entries: Entries, scorer: Scorer, limit: float, now: datetime, now_us: float
    ) -> list[Entry[Any, Any]]:
        """Unpinned entries that may score below ``limit`` (a superset; the memory scores them
        and sees to expired entries itself)."""

    def lowest(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Entry[Any, Any] | None:
        """The unpinned entry ranking last (earliest put among equals); None if every entry is pinned."""

    def soonest(self, entries: Entries) -> list[Entry[Any, Any]]:
        """Unpinned entries among which is the first to fall below any threshold (a superset)."""


def rank(
    pinned: list[Entry[Any, Any]], entries: list[Entry[Any, Any]], values: list[float]
) -> tuple[list[Entry[Any, Any]], list[float]]:
    """``pinned`` (latest put first), then ``entries`` by rank value, equals latest put first;
    and their scores (rank values clamped to 0..1, 1.0 for pinned entries)."""
    if len(pinned) > 1:
        pinned = sorted(pinned, key=_SEQ, reverse=True)
    order = sorted(range(len(entries)), key=values.__getitem__, reverse=True)
    ranked = [entries[i] for i in order]
    ranked_values = [values[i] for i in order]
    # Runs of equal values (underflowed to 0.0, importance 0, expired, or true ties) go latest put first.
    ties = list(compress(range(1, len(order)), map(eq, ranked_values, islice(ranked_values, 1, None))))
    i = 0
    while i < len(ties):
        start = ties[i]
        end = start
        while i < len(ties) and ties[i] == end:
            i += 1
            end += 1
        ranked[start - 1 : end] = sorted(ranked[start - 1 : end], key=_SEQ, reverse=True)
    if ranked_values and (ranked_values[0] > 1.0 or not ranked_values[-1] > 0.0):  # sorted: the ends tell
        ranked_values = [1.0 if v >= 1.0 else (v if v > 0.0 else 0.0) for v in ranked_values]
    return pinned + ranked, [1.0] * len(pinned) + ranked_values
