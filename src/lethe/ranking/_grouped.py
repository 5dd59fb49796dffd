"""The grouped ranking: the index of a decay function whose ranking is fixed within groups of entries.

A decay function may declare :meth:`~lethe.decay.Grouped.rank_key`: for each
entry a *group* (what enters the score besides one time-invariant number,
such as the importance or the access count) and a *key* (that number, such
as the last access time), with the promise that within one group, at every
moment, an entry with a smaller key never scores above one with a larger key,
and entries with the same key score alike.  (When the memory multiplies the
raw score by the importance, the adapter puts the importance in the group:
multiplying by one positive number keeps the order.)  Then the ranking only
changes *between* groups, and :class:`Groups` keeps one persistent B+tree per
group, sorted by ``(key, seq)``: the skeleton of :mod:`lethe.ranking._merged`
with one key for an entry's high and low keys.

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

Groups must stay few: past :data:`~lethe.ranking._merged.MAX_GROUPS` live
groups (an ``AccessWeighted`` memory rehearsed into many access counts, a user
function with a group per entry) the ranking becomes a scan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from heapq import heappop, heappush
from typing import Any

from lethe._core.btree import Tree
from lethe._core.entry import Entry
from lethe.decay._scorer import Scorer
from lethe.ranking._merged import Limit, Merged, live, next_live, valuer
from lethe.ranking._protocol import Entries

_INF = float("inf")


class Groups(Merged):
    """The ranking strategy of a decay function declaring ``rank_key``: one ``(key, seq)``
    B+tree per group, merged by score at query time (see the module doc and
    :class:`~lethe.ranking.Ranking`)."""

    __slots__ = ()
    two_keys = False

    def __init__(self, scorer: Scorer) -> None:
        rank_key = scorer.rank_key
        if rank_key is None:
            raise ValueError("Groups needs a decay function that declares rank_key")
        super().__init__(scorer, rank_key)

    def _ceiling(self, now_us: float) -> Limit:
        # The score itself (a run scores alike), without a datetime: a built-in's fast path.
        raw_us = self.scorer.raw_us
        if self.scorer.multiply:
            return lambda group, key, e: raw_us(e, now_us) * e.importance
        return lambda group, key, e: raw_us(e, now_us)

    def _floor(self, scorer: Scorer, now: datetime, now_us: float) -> Limit:
        value = valuer(scorer, now, now_us)
        return lambda group, key, e: value(e)

    # -- queries --------------------------------------------------------------

    def _merged(self, scorer: Scorer, now: datetime, now_us: float) -> Iterator[Entry[Any, Any]]:
        value = valuer(scorer, now, now_us)
        # (-value, 0 if pending else 1, -seq, entry, key, tree): a pending item is the first live
        # member of a group's next run; a loaded one is the next member of a run being read.
        heap: list[tuple[float, int, int, Entry[Any, Any], Any, Tree]] = []
        for tree, _ in self.groups.values():
            _push_run(heap, tree, tree.descending(), value, now_us)
        while heap:
            top = heap[0]
            neg, loaded, _, entry, key, tree = top
            if loaded:  # no unread entry can rank above it: every group's next run scores lower
                heappop(heap)
                yield entry
                member = next_live(tree, key, entry.seq, now_us)
                if member is not None:
                    heappush(heap, (neg, 1, -member.seq, member, key, tree))
                continue
            # A pending run at the top: load it, and score the group's next run.
            heappop(heap)
            heappush(heap, (neg, 1, top[2], entry, key, tree))
            _push_run(heap, tree, tree.descending_below((key, -1)), value, now_us)

    def lowest(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Entry[Any, Any] | None:
        """The unpinned entry ranking last (lowest rank value, then earliest put); None if all are pinned.

        (A memory removes its expired entries before it looks for a victim.)
        """
        value = valuer(scorer, now, now_us)
        firsts: list[tuple[float, Tree, tuple[Any, ...]]] = []
        for tree, _ in self.groups.values():
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

    def soonest(self, entries: Entries) -> list[Entry[Any, Any]]:
        """One entry of each group's lowest key: within a group it never scores above any other,
        so it falls below any threshold no later than they do."""
        out: list[Entry[Any, Any]] = []
        for tree, _ in self.groups.values():
            item = tree.first()
            if item is not None:
                out.append(item[2])
        return out


def _push_run(
    heap: list[tuple[float, int, int, Entry[Any, Any], Any, Tree]],
    tree: Tree,
    items: Iterator[tuple[Any, ...]],
    value: Callable[[Entry[Any, Any]], float],
    now_us: float,
) -> None:
    """Push, as pending, the first live entry of ``items`` (a group read from some key down), scored."""
    for k, seq, e in items:
        if live(e, now_us):
            heappush(heap, (-value(e), 0, -seq, e, k, tree))
            return
