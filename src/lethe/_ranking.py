"""How a memory ranks its entries: one strategy, chosen when the memory is built.

A memory asks its ranking for candidates (the top, the lowest, those that may
score above or below a limit) and tells it of every change; the scores
themselves always come from the decay function, so every strategy gives the
answers a full sort of :meth:`~lethe.Memory.score` would.  Two strategies
exist:

* :class:`Scan` keeps nothing and scores every entry: the floor for decay
  functions whose ranking changes with time (ACT-R, per-entry rates, custom
  callables);
* ``Order`` (``_order.py``) indexes the ranking of a decay function that
  declares one ``decay_rate`` for every entry, whose ranking never changes.

The order of equal rank values is fixed here too (:func:`rank`): pinned
entries first, then by rank value, equal values latest put first.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from itertools import compress, islice
from operator import attrgetter, eq
from typing import Any, Protocol

from lethe._entry import Entry
from lethe._expiry import any_deadline, expired
from lethe._map import PersistentMap
from lethe._scoring import Scorer

Entries = PersistentMap[Any, Entry[Any, Any]]
_SEQ = attrgetter("seq")
_PINNED = attrgetter("pinned")


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


class Scan:
    """The ranking that keeps nothing but how many entries are pinned: every query scores
    every entry, O(n).  (The count spares the queries a pass over every entry when none is.)"""

    __slots__ = ("pinned",)

    def __init__(self, pinned: int = 0) -> None:
        self.pinned = pinned

    def add(self, entry: Entry[Any, Any]) -> Scan:
        return Scan(self.pinned + 1) if entry.pinned else self

    def remove(self, entry: Entry[Any, Any]) -> Scan:
        return Scan(self.pinned - 1) if entry.pinned else self

    def swap(self, old: Entry[Any, Any], new: Entry[Any, Any]) -> Scan:
        return self if old.pinned == new.pinned else Scan(self.pinned + (1 if new.pinned else -1))

    def rebuilt(self, entries: Iterable[Entry[Any, Any]], origin_us: float) -> Scan:
        return Scan(sum(map(_PINNED, entries)))

    def edited(
        self, gone: Mapping[int, Entry[Any, Any]], replaced: dict[int, Entry[Any, Any]], added: list[Entry[Any, Any]]
    ) -> Scan:
        change = sum(map(_PINNED, added)) - sum(map(_PINNED, gone.values()))
        return Scan(self.pinned + change) if change else self

    def ranked(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Iterator[Entry[Any, Any]]:
        pinned, rest = self.at_least(entries, 0.0, now_us)
        rest = [e for e in rest if not expired(e, now_us)]
        return iter(rank(pinned, rest, scorer.many(rest, now, now_us))[0])

    def top(
        self, entries: Entries, scorer: Scorer, n: int, now: datetime, now_us: float, may_expire: bool = True
    ) -> list[Entry[Any, Any]]:
        live = entries.to_list()
        if may_expire and any_deadline(live):  # the memory knows when none may: no pass over every entry
            live = [e for e in live if not expired(e, now_us)]
        if self.pinned:
            pinned = sorted((e for e in live if e.pinned), key=_SEQ, reverse=True)
            if len(pinned) >= n:
                return pinned[:n]
            rest = [e for e in live if not e.pinned]
        else:
            pinned, rest = [], live
        return pinned + _best(rest, scorer.many(rest, now, now_us, live=True), n - len(pinned))

    def at_least(
        self, entries: Entries, limit: float, now_us: float
    ) -> tuple[list[Entry[Any, Any]], list[Entry[Any, Any]]]:
        everything = entries.to_list()
        if not self.pinned:
            return [], everything
        return [e for e in everything if e.pinned], [e for e in everything if not e.pinned]

    def below(
        self, entries: Entries, scorer: Scorer, limit: float, now: datetime, now_us: float
    ) -> list[Entry[Any, Any]]:
        return self.soonest(entries)

    def lowest(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Entry[Any, Any] | None:
        return scorer.lowest(entries.to_list(), now, now_us)

    def soonest(self, entries: Entries) -> list[Entry[Any, Any]]:
        everything = entries.to_list()
        return [e for e in everything if not e.pinned] if self.pinned else everything

    def __repr__(self) -> str:
        return f"Scan(pinned={self.pinned})"


SCAN = Scan()


def _best(entries: list[Entry[Any, Any]], values: list[float], k: int) -> list[Entry[Any, Any]]:
    """The ``k`` entries first in rank order ((value, seq) descending), in that order."""
    if k <= 0 or not entries:
        return []
    if k < len(entries):
        # The k-th largest value bounds the answer: the k largest floats by a heap in C, then only
        # the entries at or above it (k of them, more on ties) are sorted with their seqs.
        least = heapq.nlargest(k, values)[-1]
        chosen = list(compress(range(len(values)), map(least.__le__, values)))
    else:
        chosen = list(range(len(values)))
    # (value, seq, index) tuples built and compared in C (seqs are unique: indexes never compared).
    keyed = zip(map(values.__getitem__, chosen), map(_SEQ, map(entries.__getitem__, chosen)), chosen)
    return [entries[i] for _, _, i in heapq.nlargest(k, keyed)]


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
