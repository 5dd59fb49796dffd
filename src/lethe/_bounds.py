"""The ranking index of a decay function whose scores lie between time-invariant bounds (ACT-R).

Some rankings change with time and cannot be indexed by any fixed key: ACT-R's
base-level activation ``ln(sum_j t_j ** -d)`` weighs recency against frequency,
and which of two entries scores higher depends on when you ask.  But every
term lies between the term of the entry's newest access and that of its
oldest, so the activation of an entry with ``n`` accesses lies between
``ln n - d ln(age of the oldest)`` and ``ln n - d ln(age of the newest)``:
bounds that, for a given ``n``, order the entries by one time-invariant key
each.  A built-in decay function declares them with two private members:

* ``_rank_bounds(entry) -> (group, high_key, low_key)``;
* ``_bound(group, key, now_us, upper) -> float``, non-decreasing in ``key``:
  within the group, an entry scores at most ``_bound(group, high_key, now_us,
  True)`` and at least ``_bound(group, low_key, now_us, False)``;
* ``_exact(group) -> bool``: whether, in the group, the score is a function of
  the key alone (the bounds meet: ACT-R's entries never rehearsed).  Entries
  of one key there score alike, so a run of them (a ``put_many`` batch, a
  frozen clock) is scored once and given out in put order, as ``Groups`` does.

:class:`Bounds` keeps, per group, one persistent B+tree by high key and one by
low key, and answers by a threshold search (Fagin, Lotem & Naor, "Optimal
aggregation algorithms for middleware", 2003): read the entries in the order
of their bounds, merged across groups, score each one read, and stop as soon
as no unread entry's bound can beat (or tie) the best score found.  The
answers are exactly a full scan's; the cost is the entries whose bounds
overlap the answer's score: for entries never rehearsed (bounds exact) about
``G + k`` score calls for ``top(k)`` and ``G`` for the victim of a put at
capacity, however many of them share one instant.  Past :data:`~lethe._groups.MAX_GROUPS` live groups the memory scans.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from datetime import datetime
from heapq import heappop, heappush
from itertools import count, islice
from typing import Any

from lethe._btree import Tree
from lethe._entry import Entry
from lethe._groups import MAX_GROUPS, _live, _valuer
from lethe._map import PersistentMap
from lethe._ranking import Ranking, Scan
from lethe._scoring import Scorer, clamp

Entries = PersistentMap[Any, Entry[Any, Any]]
RankBounds = Callable[[Entry[Any, Any]], tuple[Hashable, float, float]]
Bound = Callable[[Hashable, float, float, bool], float]
_Item = tuple[float, int, Entry[Any, Any]]

_FIRST = (-math.inf, -1)
_NO_GROUPS: dict[Hashable, tuple[Tree, Tree]] = {}


class Bounds:
    """The ranking strategy of a decay function declaring score bounds: per group, one
    ``(high_key, seq)`` and one ``(low_key, seq)`` B+tree, searched by threshold at query time
    (see the module doc and ``_ranking.Ranking``)."""

    __slots__ = ("bound", "exact", "groups", "pinned", "rank_bounds")

    rank_bounds: RankBounds
    bound: Bound
    exact: Callable[[Hashable], bool]
    groups: dict[Hashable, tuple[Tree, Tree]]  # never mutated once a ranking holds it
    pinned: Tree  # (0.0, seq, entry)

    def __init__(self, scorer: Scorer) -> None:
        if scorer.bounds is None:
            raise ValueError("Bounds needs a decay function that declares score bounds")
        self.rank_bounds, self.bound, self.exact = scorer.bounds
        self.groups = _NO_GROUPS
        self.pinned = Tree()

    def _with(self, groups: dict[Hashable, tuple[Tree, Tree]], pinned: Tree) -> Ranking:
        if len(groups) > MAX_GROUPS:
            return Scan(len(pinned))
        new: Bounds = object.__new__(Bounds)
        new.rank_bounds = self.rank_bounds
        new.bound = self.bound
        new.exact = self.exact
        new.groups = groups
        new.pinned = pinned
        return new

    # -- changes --------------------------------------------------------------

    def add(self, entry: Entry[Any, Any]) -> Ranking:
        """The ranking with ``entry`` added."""
        if entry.pinned:
            return self._with(self.groups, self.pinned.insert((0.0, entry.seq, entry)))
        group, high, low = self.rank_bounds(entry)
        groups = dict(self.groups)
        trees = groups.get(group)
        seq = entry.seq
        if trees is None:
            groups[group] = (Tree([(high, seq, entry)]), Tree([(low, seq, entry)]))
        else:
            groups[group] = (trees[0].insert((high, seq, entry)), trees[1].insert((low, seq, entry)))
        return self._with(groups, self.pinned)

    def remove(self, entry: Entry[Any, Any]) -> Ranking:
        """The ranking without ``entry`` (which it holds)."""
        if entry.pinned:
            return self._with(self.groups, self.pinned.delete((0.0, entry.seq)))
        group, high, low = self.rank_bounds(entry)
        groups = dict(self.groups)
        highs, lows = groups[group]
        highs = highs.delete((high, entry.seq))
        if len(highs):
            groups[group] = (highs, lows.delete((low, entry.seq)))
        else:
            del groups[group]
        return self._with(groups, self.pinned)

    def swap(self, old: Entry[Any, Any], new: Entry[Any, Any]) -> Ranking:
        """The ranking with ``old`` replaced by ``new``."""
        return self.remove(old).add(new)

    def rebuilt(self, entries: Iterable[Entry[Any, Any]], origin_us: float) -> Ranking:
        """A ranking of ``entries`` alone: O(n log n)."""
        rank_bounds = self.rank_bounds
        pinned: list[_Item] = []
        lists: dict[Hashable, tuple[list[_Item], list[_Item]]] = {}
        entries = iter(entries)  # on to a scan midway: the rest counted from where it stopped
        for e in entries:
            if e.pinned:
                pinned.append((0.0, e.seq, e))
                continue
            group, high, low = rank_bounds(e)
            both = lists.get(group)
            if both is None:
                if len(lists) == MAX_GROUPS:  # a scan from here on (``e`` is not pinned)
                    return Scan(len(pinned) + sum(e.pinned for e in entries))
                lists[group] = both = ([], [])
            both[0].append((high, e.seq, e))
            both[1].append((low, e.seq, e))
        groups: dict[Hashable, tuple[Tree, Tree]] = {}
        for group, (highs, lows) in lists.items():
            highs.sort()  # (key, seq) pairs are unique: the entries are never compared
            lows.sort()
            groups[group] = (Tree(highs), Tree(lows))
        pinned.sort()
        return self._with(groups, Tree(pinned))

    def edited(
        self, gone: Mapping[int, Entry[Any, Any]], replaced: dict[int, Entry[Any, Any]], added: list[Entry[Any, Any]]
    ) -> Ranking:
        """Many changes in bulk: rebuilt from the surviving entries, their replacements and ``added``."""
        kept = [replaced.get(e.seq, e) for e in self.entries() if e.seq not in gone]
        return self.rebuilt(kept + added, math.nan)

    def entries(self) -> Iterator[Entry[Any, Any]]:
        """Every entry: the pinned ones, then group by group in high-key order."""
        for item in self.pinned.to_list():
            yield item[2]
        for highs, _ in self.groups.values():
            for item in highs.to_list():
                yield item[2]

    # -- queries --------------------------------------------------------------

    def ranked(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Iterator[Entry[Any, Any]]:
        """Entries in rank order, lazily: pinned first (latest put first), then by rank value,
        equals latest put first; expired entries left out."""
        for item in self.pinned.descending():
            yield item[2]
        value = _valuer(scorer, now, now_us)
        bound, exact = self.bound, self.exact
        tick = count()
        # Unread entries, the next of each group: (-upper bound, tick, entry, key, group, the rest).
        unread: list[tuple[float, int, Entry[Any, Any], Any, Hashable, Iterator[tuple[Any, ...]]]] = []
        for group, (highs, _) in self.groups.items():
            _push_next(unread, highs.descending(), group, bound, now_us, True, tick)
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
                    member = e if _live(e, now_us) else _next_live(highs, key, e.seq, now_us)
                    if member is not None:
                        heappush(found, (-value(member), -member.seq, next(tick), member, (key, highs)))
                    rest = highs.descending_below((key, -1))
                elif _live(e, now_us):
                    heappush(found, (-value(e), -e.seq, next(tick), e, None))
                _push_next(unread, rest, group, bound, now_us, True, tick)
            if not found:
                return
            negative, _, _, e, run = heappop(found)
            yield e
            if run is not None:
                member = _next_live(run[1], run[0], e.seq, now_us)
                if member is not None:
                    heappush(found, (negative, -member.seq, next(tick), member, run))

    def top(
        self, entries: Entries, scorer: Scorer, n: int, now: datetime, now_us: float, may_expire: bool = True
    ) -> list[Entry[Any, Any]]:
        """The first ``n`` entries of :meth:`ranked`."""
        return list(islice(self.ranked(entries, scorer, now, now_us), max(n, 0)))

    def lowest(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Entry[Any, Any] | None:
        """The unpinned entry ranking last (lowest rank value, then earliest put); None if all are pinned.

        (A memory removes its expired entries before it looks for a victim.)
        """
        value = _valuer(scorer, now, now_us)
        bound, exact = self.bound, self.exact
        tick = count()
        unread: list[tuple[float, int, Entry[Any, Any], Any, Hashable, Iterator[tuple[Any, ...]]]] = []
        for group, (_, lows) in self.groups.items():
            _push_next(unread, lows.ascending_from(_FIRST), group, bound, now_us, False, tick)
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
            _push_next(unread, rest, group, bound, now_us, False, tick)
        return best

    def at_least(
        self, entries: Entries, limit: float, now_us: float
    ) -> tuple[list[Entry[Any, Any]], list[Entry[Any, Any]]]:
        """``(pinned, unpinned)``: the unpinned ones may score ``limit`` or more (a superset)."""
        pinned = [item[2] for item in self.pinned.descending()]
        found: list[Entry[Any, Any]] = []
        bound = self.bound
        for group, (highs, _) in self.groups.items():
            for key, _, e in highs.descending():
                if limit > 0.0 and clamp(bound(group, key, now_us, True)) < limit:
                    break  # it and every lower key score below the limit
                found.append(e)
        return pinned, found

    def below(
        self, entries: Entries, scorer: Scorer, limit: float, now: datetime, now_us: float
    ) -> list[Entry[Any, Any]]:
        """Unpinned entries that may score below ``limit`` (a superset; no order)."""
        found: list[Entry[Any, Any]] = []
        if not limit > 0.0:
            return found
        bound = self.bound
        for group, (_, lows) in self.groups.items():
            for key, _, e in lows.ascending_from(_FIRST):
                if not clamp(bound(group, key, now_us, False)) < limit:
                    break  # it and every higher key score at least the limit
                found.append(e)
        return found

    def soonest(self, entries: Entries) -> list[Entry[Any, Any]]:
        """Every unpinned entry: bounds do not tell which falls first."""
        return [item[2] for highs, _ in self.groups.values() for item in highs.to_list()]

    def __repr__(self) -> str:
        return f"Bounds({len(self.groups)} groups)"


def _push_next(
    unread: list[tuple[float, int, Entry[Any, Any], Any, Hashable, Iterator[tuple[Any, ...]]]],
    rest: Iterator[tuple[Any, ...]],
    group: Hashable,
    bound: Bound,
    now_us: float,
    upper: bool,
    tick: Iterator[int],
) -> None:
    """Push the next item of ``rest`` (a group read in bound order) as unread, with its bound
    (negated when ``upper``: the heap gives the largest first)."""
    for key, _, e in rest:
        b = bound(group, key, now_us, upper)
        heappush(unread, (-b if upper else b, next(tick), e, key, group, rest))
        return


def _next_live(tree: Tree, key: Any, seq: int, now_us: float) -> Entry[Any, Any] | None:
    """The next live member, in descending order, of the run of ``key`` after ``seq``; None at its end."""
    for k, _, e in tree.descending_below((key, seq)):
        if k != key:
            return None
        if _live(e, now_us):
            found: Entry[Any, Any] = e
            return found
    return None
