"""The ranking index of a decay function whose ranking is fixed within groups of entries.

A decay function may declare :meth:`~lethe.decay.Grouped.rank_key`: for each
entry a *group* (what enters the score besides one time-invariant number,
such as the importance or the access count) and a *key* (that number, such
as the last access time), with the promise that within one group, at every
moment, an entry with a smaller key never scores above one with a larger key,
and entries with the same key score alike.  (When the memory multiplies the
raw score by the importance, the adapter puts the importance in the group:
multiplying by one positive number keeps the order.)  Then the ranking only
changes *between* groups, and :class:`Groups` keeps one persistent B+tree per
group, sorted by ``(key, seq)``, plus one of the pinned entries.

Every query merges the groups by their scores at ``now``, computed by the
decay function as a full scan would; the index only finds the candidates.
Scores can tie *across* keys of one group (clamping, underflow to 0.0, a
flat curve, float rounding) and across groups; rank order breaks those ties
by ``seq``, which the key order does not give.  So nothing is assumed: a
group is read as a sequence of *runs* (entries of one key: scored once, their
members in ``seq`` order) and a run is never taken for the last of its value
until the group's next run has been scored and found strictly lower (higher
for the ascending queries).  :meth:`Groups.ranked` keeps in one heap the runs
it has loaded and, per group, the next run, scored but *pending*; a pending run
sorts before loaded ones of the same value, so a loaded entry is given out
only when every group's unread entries score strictly below it.  ``top(k)``
costs about ``2G + k`` score calls and as many O(log n) seeks (G groups), plus
one per run that ties the last answer exactly; ``lowest`` about ``G`` plus the
runs that tie the lowest score.  A large tie of distinct keys (thousands of
entries underflowed to 0.0) is read run by run: correct, and O(runs).

Groups must stay few: past :data:`MAX_GROUPS` live groups (an ``AccessWeighted``
memory rehearsed into many access counts, a user function with a group per
entry) the ranking becomes :class:`~lethe._ranking.Scan` for good (a memory
built again, ``configure`` or ``from_dict``, indexes anew).  A group emptied by
removals is dropped, so only live groups count.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from datetime import datetime
from heapq import heappop, heappush
from itertools import islice
from typing import Any

from lethe._btree import Tree
from lethe._entry import Entry
from lethe._map import PersistentMap
from lethe._ranking import Ranking, Scan
from lethe._scoring import Scorer, clamp

Entries = PersistentMap[Any, Entry[Any, Any]]
RankKey = Callable[[Entry[Any, Any]], tuple[Hashable, float]]

#: The most live groups a memory indexes; one more and it scans.
MAX_GROUPS = 64

_INF = math.inf
_FIRST = (-_INF, -1)
_NO_GROUPS: dict[Hashable, Tree] = {}


def _live(entry: Entry[Any, Any], now_us: float) -> bool:
    deadline = entry.expires_us
    return deadline is None or now_us < deadline


class Groups:
    """The ranking strategy of a decay function declaring ``rank_key``: one ``(key, seq)``
    B+tree per group, merged by score at query time (see the module doc and ``_ranking.Ranking``)."""

    __slots__ = ("groups", "pinned", "rank_key", "scorer")

    scorer: Scorer
    rank_key: RankKey
    groups: dict[Hashable, Tree]  # never mutated once a ranking holds it
    pinned: Tree  # (0.0, seq, entry)

    def __init__(self, scorer: Scorer) -> None:
        rank_key = scorer.rank_key
        if rank_key is None:
            raise ValueError("Groups needs a decay function that declares rank_key")
        self.scorer = scorer
        self.rank_key = rank_key
        self.groups = _NO_GROUPS
        self.pinned = Tree()

    def _with(self, groups: dict[Hashable, Tree], pinned: Tree) -> Ranking:
        if len(groups) > MAX_GROUPS:
            return Scan(len(pinned))
        new: Groups = object.__new__(Groups)
        new.scorer = self.scorer
        new.rank_key = self.rank_key
        new.groups = groups
        new.pinned = pinned
        return new

    # -- changes --------------------------------------------------------------

    def add(self, entry: Entry[Any, Any]) -> Ranking:
        """The ranking with ``entry`` added."""
        if entry.pinned:
            return self._with(self.groups, self.pinned.insert((0.0, entry.seq, entry)))
        group, key = self.rank_key(entry)
        groups = dict(self.groups)
        tree = groups.get(group)
        item = (key, entry.seq, entry)
        groups[group] = Tree([item]) if tree is None else tree.insert(item)
        return self._with(groups, self.pinned)

    def remove(self, entry: Entry[Any, Any]) -> Ranking:
        """The ranking without ``entry`` (which it holds)."""
        if entry.pinned:
            return self._with(self.groups, self.pinned.delete((0.0, entry.seq)))
        group, key = self.rank_key(entry)
        groups = dict(self.groups)
        tree = groups[group].delete((key, entry.seq))
        if len(tree):
            groups[group] = tree
        else:
            del groups[group]
        return self._with(groups, self.pinned)

    def swap(self, old: Entry[Any, Any], new: Entry[Any, Any]) -> Ranking:
        """The ranking with ``old`` replaced by ``new``."""
        removed = self.remove(old)
        return removed.add(new)

    def rebuilt(self, entries: Iterable[Entry[Any, Any]], origin_us: float) -> Ranking:
        """A ranking of ``entries`` alone: O(n log n), near-linear for entries already in key order."""
        rank_key = self.rank_key
        pinned: list[tuple[float, int, Entry[Any, Any]]] = []
        lists: dict[Hashable, list[tuple[Any, int, Entry[Any, Any]]]] = {}
        entries = iter(entries)  # on to a scan midway: the rest counted from where it stopped
        for e in entries:
            if e.pinned:
                pinned.append((0.0, e.seq, e))
                continue
            group, key = rank_key(e)
            items = lists.get(group)
            if items is None:
                if len(lists) == MAX_GROUPS:  # a scan from here on (``e`` is not pinned)
                    return Scan(len(pinned) + sum(e.pinned for e in entries))
                lists[group] = items = []
            items.append((key, e.seq, e))
        groups: dict[Hashable, Tree] = {}
        for group, items in lists.items():
            items.sort()  # (key, seq) pairs are unique: the entries are never compared
            groups[group] = Tree(items)
        pinned.sort()
        return self._with(groups, Tree(pinned))

    def edited(
        self, gone: Mapping[int, Entry[Any, Any]], replaced: dict[int, Entry[Any, Any]], added: list[Entry[Any, Any]]
    ) -> Ranking:
        """Many changes in bulk: rebuilt from the surviving entries, taken group by group in key
        order (so the sorts run in near-linear time), with their replacements and ``added``."""
        kept = [replaced.get(e.seq, e) for e in self.entries() if e.seq not in gone]
        return self.rebuilt(kept + added, math.nan)

    def entries(self) -> Iterator[Entry[Any, Any]]:
        """Every entry: the pinned ones, then group by group in key order."""
        for tree in (self.pinned, *self.groups.values()):
            for item in tree.to_list():
                yield item[2]

    # -- queries --------------------------------------------------------------

    def ranked(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Iterator[Entry[Any, Any]]:
        """Entries in rank order, lazily: pinned first (latest put first), then by rank value,
        equals latest put first; expired entries left out."""
        for item in self.pinned.descending():
            yield item[2]
        value = _valuer(scorer, now, now_us)
        # (-value, 0 if pending else 1, -seq, entry, key, tree): a pending item is the first live
        # member of a group's next run; a loaded one is the next member of a run being read.
        heap: list[tuple[float, int, int, Entry[Any, Any], Any, Tree]] = []
        for tree in self.groups.values():
            _push_run(heap, tree, tree.descending(), value, now_us)
        while heap:
            top = heap[0]
            neg, loaded, _, entry, key, tree = top
            if loaded:  # no unread entry can rank above it: every group's next run scores lower
                heappop(heap)
                yield entry
                for k, seq, e in tree.descending_below((key, entry.seq)):
                    if k != key:
                        break
                    if _live(e, now_us):
                        heappush(heap, (neg, 1, -seq, e, key, tree))
                        break
                continue
            # A pending run at the top: load it, and score the group's next run.
            heappop(heap)
            heappush(heap, (neg, 1, top[2], entry, key, tree))
            _push_run(heap, tree, tree.descending_below((key, -1)), value, now_us)

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
        firsts: list[tuple[float, Tree, tuple[Any, ...]]] = []
        for tree in self.groups.values():
            item = tree.first()
            if item is not None:
                firsts.append((value(item[2]), tree, item))
        if not firsts:
            return None
        least = min(v for v, _, _ in firsts)
        best: tuple[Any, ...] | None = None
        for v, tree, item in firsts:
            if v != least:
                continue
            # Every run of this group scoring ``least`` (a prefix of its key order) may hold the earliest put.
            while True:
                if best is None or item[1] < best[1]:
                    best = item  # a run's first item is its earliest put
                item = tree.ceiling((item[0], _INF))
                if item is None or value(item[2]) != least:
                    break
        return None if best is None else best[2]

    def at_least(
        self, entries: Entries, limit: float, now_us: float
    ) -> tuple[list[Entry[Any, Any]], list[Entry[Any, Any]]]:
        """``(pinned, unpinned)``: the unpinned ones may score ``limit`` or more (a superset)."""
        pinned = [item[2] for item in self.pinned.descending()]
        found: list[Entry[Any, Any]] = []
        if limit <= 0.0:
            for tree in self.groups.values():
                found += [item[2] for item in tree.to_list()]
            return pinned, found
        value = _valuer_us(self.scorer, now_us)
        append = found.append
        for tree in self.groups.values():
            last: Any = None
            for k, _, e in tree.descending():
                if k != last:  # a new run: it and every lower key score below the limit once it does
                    if clamp(value(e)) < limit:
                        break
                    last = k
                append(e)
        return pinned, found

    def below(
        self, entries: Entries, scorer: Scorer, limit: float, now: datetime, now_us: float
    ) -> list[Entry[Any, Any]]:
        """Unpinned entries that may score below ``limit`` (a superset; no order)."""
        found: list[Entry[Any, Any]] = []
        if not limit > 0.0:
            return found
        value = _valuer(scorer, now, now_us)
        append = found.append
        for tree in self.groups.values():
            last: Any = None
            for k, _, e in tree.ascending_from(_FIRST):
                if k != last:  # a new run: it and every higher key score at least the limit once it does
                    if not clamp(value(e)) < limit:
                        break
                    last = k
                append(e)
        return found

    def soonest(self, entries: Entries) -> list[Entry[Any, Any]]:
        """One entry of each group's lowest key: within a group it never scores above any other,
        so it falls below any threshold no later than they do."""
        out: list[Entry[Any, Any]] = []
        for tree in self.groups.values():
            item = tree.first()
            if item is not None:
                out.append(item[2])
        return out

    def __repr__(self) -> str:
        return f"Groups({len(self.groups)} groups)"


def _valuer(scorer: Scorer, now: datetime, now_us: float) -> Callable[[Entry[Any, Any]], float]:
    """An entry's rank value at ``now``, expiry left aside (the queries see to it)."""
    raw = scorer.raw
    if scorer.multiply:
        return lambda e: raw(e, now, now_us) * e.importance
    return lambda e: raw(e, now, now_us)


def _valuer_us(scorer: Scorer, now_us: float) -> Callable[[Entry[Any, Any]], float]:
    """:func:`_valuer` without a datetime (the fast path of a built-in; a custom function gets one made)."""
    raw_us = scorer.raw_us
    if scorer.multiply:
        return lambda e: raw_us(e, now_us) * e.importance
    return lambda e: raw_us(e, now_us)


def _push_run(
    heap: list[tuple[float, int, int, Entry[Any, Any], Any, Tree]],
    tree: Tree,
    items: Iterator[tuple[Any, ...]],
    value: Callable[[Entry[Any, Any]], float],
    now_us: float,
) -> None:
    """Push, as pending, the first live entry of ``items`` (a group read from some key down), scored."""
    for k, seq, e in items:
        if _live(e, now_us):
            heappush(heap, (-value(e), 0, -seq, e, k, tree))
            return
