"""The ranking that indexes nothing: every query scores every entry.

The floor for decay functions whose ranking changes with time in a way no
index follows (per-entry rates, custom callables without ``rank_key``), and
where an index gives up (:data:`~lethe.ranking._merged.MAX_GROUPS`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from itertools import compress
from operator import attrgetter
from typing import Any

from lethe._core.entry import Entry
from lethe._core.expiry import any_deadline, expired
from lethe.decay._scorer import Scorer
from lethe.ranking._protocol import Entries, rank

_SEQ = attrgetter("seq")
_PINNED = attrgetter("pinned")


class Scan:
    """The ranking that keeps nothing but how many entries are pinned: every query scores
    every entry, O(n).  (The count spares the queries a pass over every entry when none is.)"""

    __slots__ = ("pinned",)

    def __init__(self, pinned: int = 0) -> None:
        self.pinned = pinned

    def add(self, entry: Entry[Any, Any]) -> Scan:
        """The scan with ``entry`` counted."""
        return Scan(self.pinned + 1) if entry.pinned else self

    def remove(self, entry: Entry[Any, Any]) -> Scan:
        """The scan without ``entry`` counted."""
        return Scan(self.pinned - 1) if entry.pinned else self

    def swap(self, old: Entry[Any, Any], new: Entry[Any, Any]) -> Scan:
        """The scan with ``old`` replaced by ``new``."""
        return self if old.pinned == new.pinned else Scan(self.pinned + (1 if new.pinned else -1))

    def rebuilt(self, entries: Iterable[Entry[Any, Any]], origin_us: float) -> Scan:
        """A scan of ``entries`` alone."""
        return Scan(sum(map(_PINNED, entries)))

    def edited(
        self, gone: Mapping[int, Entry[Any, Any]], replaced: dict[int, Entry[Any, Any]], added: list[Entry[Any, Any]]
    ) -> Scan:
        """The scan after many changes (replacements keep their pinning)."""
        change = sum(map(_PINNED, added)) - sum(map(_PINNED, gone.values()))
        return Scan(self.pinned + change) if change else self

    def ranked(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Iterator[Entry[Any, Any]]:
        """Every entry not expired, in rank order: all scored, then sorted."""
        pinned, rest = self.at_least(entries, 0.0, now_us)
        rest = [e for e in rest if not expired(e, now_us)]
        return iter(rank(pinned, rest, scorer.many(rest, now, now_us))[0])

    def top(
        self, entries: Entries, scorer: Scorer, n: int, now: datetime, now_us: float, may_expire: bool = True
    ) -> list[Entry[Any, Any]]:
        """The first ``n`` of :meth:`ranked`, without sorting the rest."""
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
        """``(pinned, unpinned)``: every entry (the scan cannot tell which reach ``limit``)."""
        everything = entries.to_list()
        if not self.pinned:
            return [], everything
        return [e for e in everything if e.pinned], [e for e in everything if not e.pinned]

    def below(
        self, entries: Entries, scorer: Scorer, limit: float, now: datetime, now_us: float
    ) -> list[Entry[Any, Any]]:
        """Every unpinned entry."""
        return self.soonest(entries)

    def lowest(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Entry[Any, Any] | None:
        """The unpinned entry ranking last, every entry scored."""
        return scorer.lowest(entries.to_list(), now, now_us)

    def soonest(self, entries: Entries) -> list[Entry[Any, Any]]:
        """Every unpinned entry."""
        everything = entries.to_list()
        return [e for e in everything if not e.pinned] if self.pinned else everything

    def __repr__(self) -> str:
        return f"Scan(pinned={self.pinned})"


#: The scan of an empty memory.
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
