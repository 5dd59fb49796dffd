"""The bounded ranking: the index of a decay function whose scores lie between time-invariant bounds (ACT-R).

Some rankings change with time and cannot be indexed by any fixed key: ACT-R's
base-level activation ``ln(sum_j t_j ** -d)`` weighs recency against frequency,
and which of two entries scores higher depends on when you ask.  But every
term lies between the term of the entry's newest access and that of its
oldest, so the activation of an entry with ``n`` accesses lies between
``ln n - d ln(age of the oldest)`` and ``ln n - d ln(age of the newest)``:
bounds that, for a given ``n``, order the entries by one time-invariant key
each.  A built-in decay function declares them with private members:

* ``_rank_bounds(entry) -> (group, high_key, low_key)``;
* ``_bound(group, key, now_us, upper) -> float``, non-decreasing in ``key``:
  within the group, an entry scores at most ``_bound(group, high_key, now_us,
  True)`` and at least ``_bound(group, low_key, now_us, False)``;
* ``_exact(group) -> bool``: whether, in the group, the score is a function of
  the key alone (the bounds meet: ACT-R's entries never rehearsed).  Entries
  of one key there score alike, so a run of them (a ``put_many`` batch, a
  frozen clock) is scored once and given out in put order, as ``Groups`` does.

:class:`Bounds` keeps, per group, one persistent B+tree by high key and one by
low key (the skeleton of :mod:`lethe.ranking._merged`), and answers by a
threshold search (Fagin, Lotem & Naor, "Optimal aggregation algorithms for
middleware", 2003): read the entries in the order of their bounds, merged
across groups, score each one read, and stop as soon as no unread entry's
bound can beat (or tie) the best score found.  The answers are exactly a full
scan's; the cost is the entries whose bounds overlap the answer's score: for
entries never rehearsed (bounds exact) about ``G + k`` score calls for
``top(k)`` and ``G`` for the victim of a put at capacity, however many of them
share one instant.  Past :data:`~lethe.ranking._merged.MAX_GROUPS` live groups
the memory scans.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator
from datetime import datetime
from heapq import heappop, heappush
from itertools import count
from typing import Any

from lethe._core.btree import Tree
from lethe._core.entry import Entry
from lethe.decay._scorer import Scorer
from lethe.ranking._merged import Limit, Merged, live, next_live, valuer
from lethe.ranking._protocol import Entries

RankBounds = Callable[[Entry[Any, Any]], tuple[Hashable, float, float]]
Bound = Callable[[Hashable, float, float, bool], float]
Exact = Callable[[Hashable], bool]

# Unread entries, the next of each group: (bound, negated if upper; tick, entry, key, group, the rest).
Unread = tuple[float, int, Entry[Any, Any], Any, Hashable, Iterator[tuple[Any, ...]]]

_FIRST = (-math.inf, -1)


def _declared(scorer: Scorer) -> tuple[RankBounds, Bound, Exact]:
    if scorer.bounds is None:
        raise ValueError("Bounds needs a decay function that declares score bounds")
    return scorer.bounds


class Bounds(Merged):
    """The ranking strategy of a decay function declaring score bounds: per group, one
    ``(high_key, seq)`` and one ``(low_key, seq)`` B+tree, searched by threshold at query time
    (see the module doc and :class:`~lethe.ranking.Ranking`)."""

    __slots__ = ()

    def __init__(self, scorer: Scorer) -> None:
        super().__init__(scorer, _declared(scorer)[0])

    def _ceiling(self, now_us: float) -> Limit:
        bound = _declared(self.scorer)[1]
        return lambda group, key, e: bound(group, key, now_us, True)

    def _floor(self, scorer: Scorer, now: datetime, now_us: float) -> Limit:
        bound = _declared(self.scorer)[1]
        return lambda group, key, e: bound(group, key, now_us, False)

    # -- queries --------------------------------------------------------------

    def _merged(self, scorer: Scorer, now: datetime, now_us: float) -> Iterator[Entry[Any, Any]]:
        value = valuer(scorer, now, now_us)
        _, bound, exact = _declared(self.scorer)
        tick = count()
        # Unread entries, the next of each group: (-upper bound, tick, entry, key, group, the rest).
        unread: list[Unread] = []
        for group, (highs, _) in self.groups.items():
            rest = highs.descending()
            for key, _, e in rest:  # the first of the group, by its bound (pushed inline: a hot path)
                heappush(unread, (-bound(group, key, now_us, True), next(tick), e, key, group, rest))
                break
        # Scored: (-value, -seq, tick, entry, the run it heads in an exact group or None).
        found: list[tuple[float, int, int, Entry[Any, Any], tuple[Any, Tree] | None]] = []
        while True:
            # Read while an unread entry may rank at or above the best found (a tie may be put later).
            while unread and (not found or unread[0][0] <= found[0][0]):
                _, _, e, key, group, rest = heappop(unread)
                if exact(group):
                    # The score is a function of the key: the run of equal keys scores alike, and
                    # comes out latest put first; its other members follow from ``found`` one by one.
                    highs = self.groups[group][0]
                    member = e if live(e, now_us) else next_live(highs, key, e.seq, now_us)
                    if member is not None:
                        heappush(found, (-value(member), -member.seq, next(tick), member, (key, highs)))
                    rest = highs.descending_below((key, -1))
                elif live(e, now_us):
                    heappush(found, (-value(e), -e.seq, next(tick), e, None))
                for key, _, e in rest:  # the next of the group, if any
                    heappush(unread, (-bound(group, key, now_us, True), next(tick), e, key, group, rest))
                    break
            if not found:
                return
            negative, _, _, e, run = heappop(found)
            yield e
            if run is not None:
                member = next_live(run[1], run[0], e.seq, now_us)
                if member is not None:
                    heappush(found, (negative, -member.seq, next(tick), member, run))

    def lowest(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Entry[Any, Any] | None:
        """The unpinned entry ranking last (lowest rank value, then earliest put); None if all are pinned.

        (A memory removes its expired entries before it looks for a victim.)
        """
        value = valuer(scorer, now, now_us)
        _, bound, exact = _declared(self.scorer)
        tick = count()
        # Unread entries, the next of each group: (lower bound, tick, entry, key, group, the rest).
        unread: list[Unread] = []
        for group, (_, lows) in self.groups.items():
            rest = lows.ascending_from(_FIRST)
            for key, _, e in rest:  # the first of the group, by its bound (pushed inline: a hot path)
                heappush(unread, (bound(group, key, now_us, False), next(tick), e, key, group, rest))
                break
        best: Entry[Any, Any] | None = None
        least = math.inf
        # Read while an unread entry may score at or below the lowest found (a tie may be put earlier).
        while unread and unread[0][0] <= least:
            _, _, e, key, group, rest = heappop(unread)
            v = value(e)
            if best is None or v < least or (v == least and e.seq < best.seq):
                best, least = e, v
            if exact(group):  # the rest of the run scores alike and was put later: skip it
                rest = self.groups[group][1].ascending_from((key, math.inf))
            for key, _, e in rest:  # the next of the group, if any
                heappush(unread, (bound(group, key, now_us, False), next(tick), e, key, group, rest))
                break
        return best

    def soonest(self, entries: Entries) -> list[Entry[Any, Any]]:
        """Every unpinned entry: bounds do not tell which falls first."""
        return [item[2] for highs, _ in self.groups.values() for item in highs.to_list()]

