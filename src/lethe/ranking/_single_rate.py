"""The single-rate ranking: the index of a decay function with one rate for every entry.

When ``score = importance * exp(-rate * (now - last_access))`` for all entries
(a decay function declaring ``decay_rate``, such as ``Exponential``), the
ranking never changes with time: ``log(score) = key - rate * (now - origin)``
with the time-invariant ``key = log(importance) + rate * (last_access -
origin)``.  The index keeps entries sorted by ``(key, seq)`` in a persistent
B+tree (pinned entries at ``key = +inf``), so the top, the bottom and any
score range are found in O(log n) instead of scoring every entry.  (The
deadlines of entries with a ``ttl`` are the memory's own concern, indexed or
not: see ``lethe._core.expiry``.)

Scores themselves are always computed by the decay function, exactly as for
an unindexed memory; the index only finds the candidates.  Float rounding can
make the key order disagree with the score order by a few ulps, and clamping
(at 1.0) and underflow (at 0.0) create ties that rank by ``seq``, so every
query widens its search by ``_slack`` and breaks ties on the scores it
computed: the answers are the ones a full scan would give.

One more rounding is not relative: once an entry's raw score (before
importance) falls below the smallest normal float, 2**-1022 (about 1,022
half-lives), it is a subnormal rounded to a multiple of 2**-1074, or 0.0.
Multiplied by a large importance, that absolute error becomes
``importance * 2**-1074`` (2**-50 at most), large enough to reorder entries
whose keys are far apart.  So every bound also widens by ``_noise``: the
largest importance the index holds (never lowered by a removal, so it stays
an upper bound) times 2**-1073.

Tie groups.  Entries with the same importance and the same last access (a
``put_many`` batch, a frozen or coarse clock) have the same key and exactly
the same score: the decay function sees nothing else of them.  In the tree
they form one run of equal keys ordered by seq, which every query takes as
one candidate: one score call, then a seek past the run (O(log n)) or its
members in seq order, as the rank order wants them (the earliest put is the
lowest, the latest put ranks first).  Different entries can round to one key
too, though; the keys where that ever happened are kept in ``mixed`` (noted on
every add, recomputed on a rebuild, never cleared by a removal, so a superset)
and their runs are scored entry by entry, as before.  Importance 0 scores 0.0
whatever the access: the run at ``-inf`` is always one group.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from heapq import heappop, heappush
from itertools import chain, compress, islice
from operator import attrgetter, eq, itemgetter
from typing import Any

from lethe._core.btree import Tree
from lethe._core.entry import Entry
from lethe.decay._scorer import Scorer, clamp
from lethe.ranking._protocol import Entries

_INF = math.inf
_LOWEST = (-_INF, -1)
_PINNED = (_INF, -1)
# Keys are kept within this many e-folds above the origin (the origin moves
# when a new key would pass it), so a key holds its value to ~1e-11.
_REBASE = 2.0**16
# exp(x) is exactly 0.0 below this (the smallest subnormal is exp(-744.4)).
_UNDERFLOW = -746.0
# Twice the smallest subnormal: with the subnormal rounding of the raw score and of
# its product with importance, |computed - exact| <= (importance + 1) * _TINY.
_TINY = 2.0**-1073

_KEY = itemgetter(0)
_SEQ = attrgetter("seq")
_IMPORTANCE = attrgetter("importance")
_NONE: frozenset[float] = frozenset()


def _exp(x: float) -> float:
    return math.exp(x) if x < 709.0 else _INF


def _same(a: Entry[Any, Any], b: Entry[Any, Any]) -> bool:
    """Whether the decay function scores ``a`` and ``b`` alike: the same importance and last access."""
    return a.importance == b.importance and a.accessed_us == b.accessed_us


def _mixed(items: list[tuple[float, int, Entry[Any, Any]]]) -> frozenset[float]:
    """The keys that sorted ``items`` share between entries that do not score alike."""
    keys = list(map(_KEY, items))
    dups = compress(range(1, len(keys)), map(eq, keys, islice(keys, 1, None)))
    return frozenset(
        k for i in dups if abs(k := keys[i]) != _INF and not _same(items[i - 1][2], items[i][2])
    )


def _slack(c: float) -> float:
    """A bound on how far rounding can move ``log(score)`` away from ``key - c``."""
    return 1e-9 * (1.0 + abs(c))


class Order:
    """The ranking strategy of a decay function with one rate for every entry: an immutable
    ``(key, seq)`` index of a memory's entries (see :class:`~lethe.ranking.Ranking`)."""

    __slots__ = ("keys", "max_importance", "mixed", "origin_us", "rate_us")

    keys: Tree
    origin_us: float
    rate_us: float
    max_importance: float
    mixed: frozenset[float]  # keys whose run may hold entries that do not score alike

    def __init__(self, scorer: Scorer) -> None:
        rate_us = scorer.rate_us
        if rate_us is None:
            raise ValueError("Order needs a decay function that declares decay_rate")
        self.rate_us = rate_us
        self.origin_us = math.nan
        self.max_importance = 0.0
        self.keys = Tree()
        self.mixed = _NONE

    def _with(self, keys: Tree, origin_us: float, max_importance: float, mixed: frozenset[float]) -> Order:
        new: Order = object.__new__(Order)
        new.rate_us = self.rate_us
        new.origin_us = origin_us
        new.max_importance = max_importance
        new.keys = keys
        new.mixed = mixed
        return new

    @property
    def _noise(self) -> float:
        """A bound on how far an underflowed score can be from ``exp(key - c)`` (see the module doc)."""
        return (self.max_importance + 1.0) * _TINY

    def key(self, entry: Entry[Any, Any]) -> float:
        """The entry's time-invariant rank key (``+inf`` when pinned)."""
        if entry.pinned:
            return _INF
        importance = entry.importance
        if importance == 0.0:
            return -_INF
        return math.log(importance) + (entry.accessed_us - self.origin_us) * self.rate_us

    def add(self, entry: Entry[Any, Any]) -> Order:
        """The index with ``entry`` added."""
        origin = self.origin_us
        if not (entry.accessed_us - origin) * self.rate_us <= _REBASE:  # also when origin is unset (NaN)
            return self.rebuilt([*self.entries(), entry], entry.accessed_us)
        k = self.key(entry)
        return self._added(self.keys, k, entry, self.keys.insert_beside((k, entry.seq, entry)))

    def _added(
        self,
        looked_up: Tree,
        k: float,
        entry: Entry[Any, Any],
        inserted: tuple[Tree, tuple[Any, ...] | None, tuple[Any, ...] | None],
    ) -> Order:
        """The index of ``keys``, which holds ``entry`` at key ``k`` now, ``before`` and ``after``
        it in its leaf: ``inserted`` is ``(keys, before, after)`` as ``Tree.insert_beside`` returns
        it; ``looked_up``: the tree to look beside it in when the leaf cannot tell (``keys``
        itself, or the tree it was inserted into)."""
        keys, before, after = inserted
        origin = self.origin_us
        mixed = self.mixed
        # A run of one group stays one as long as every newcomer scores as any member does:
        # compare with a member beside it (looked up only when the leaf cannot tell).  Most
        # newcomers have a key of their own, which the leaf shows: nothing more to do.
        if before is not None and before[0] == k:
            near: tuple[Any, ...] | None = before
        elif after is not None and after[0] == k:
            near = after
        elif before is None and len(keys) > 1:
            near = looked_up.ceiling((k, -1))
            if near is not None and near[1] == entry.seq:  # the entry itself: the next one was ``after``
                near = None
        else:
            near = None
        if near is not None and near[0] == k and abs(k) != _INF and k not in mixed and not _same(near[2], entry):
            mixed = mixed | {k}
        most = self.max_importance
        return self._with(keys, origin, most if most >= entry.importance else entry.importance, mixed)

    def remove(self, entry: Entry[Any, Any]) -> Order:
        """The index without ``entry`` (which it must hold)."""
        keys = self.keys.delete((self.key(entry), entry.seq))
        return self._with(keys, self.origin_us, self.max_importance, self.mixed)

    def swap(self, old: Entry[Any, Any], new: Entry[Any, Any]) -> Order:
        """The index with ``old`` replaced by ``new``: what ``remove(old).add(new)`` gives, with
        one new index made instead of two."""
        if not (new.accessed_us - self.origin_us) * self.rate_us <= _REBASE:
            return self.remove(old).add(new)  # a new origin: the index is rebuilt
        k = self.key(new)
        inserted = self.keys.delete((self.key(old), old.seq)).insert_beside((k, new.seq, new))
        return self._added(inserted[0], k, new, inserted)

    def rebuilt(self, entries: Iterable[Entry[Any, Any]], origin_us: float) -> Order:
        """An index of ``entries`` keyed from ``origin_us`` (O(n log n))."""
        empty = self._with(Tree(), origin_us, 0.0, _NONE)
        listed = entries if type(entries) is list else list(entries)
        items = sorted(zip(map(empty.key, listed), map(_SEQ, listed), listed))  # (at C speed but the keys)
        return empty._with(Tree(items), origin_us, max(map(_IMPORTANCE, listed), default=0.0), _mixed(items))

    def edited(
        self, gone: Mapping[int, Entry[Any, Any]], replaced: dict[int, Entry[Any, Any]], added: list[Entry[Any, Any]]
    ) -> Order:
        """The index without the entries whose seq is in ``gone``, with ``replaced`` entries
        (same key, same seq) swapped in and ``added`` ones inserted: O(n + m log m), in bulk.

        The surviving items keep their place, so only the changes cost allocations.
        """
        latest = max((e.accessed_us for e in added), default=-_INF)
        if not (latest - self.origin_us) * self.rate_us <= _REBASE and added:
            kept = [e for e in self.entries() if e.seq not in gone]
            return self.rebuilt([replaced.get(e.seq, e) for e in kept] + added, latest)

        key = self.key
        fresh = sorted((key(e), e.seq, e) for e in added)
        keys, windows, olds = self.keys.edited(gone.keys(), replaced, fresh)
        mixed = self.mixed
        # A replacement keeps its key; should it not score as its old self, its run may be mixed now.
        changed = {k for k, seq, old in olds if abs(k) != _INF and not _same(old, replaced[seq])}
        for window in windows:  # every pair of neighbours an added entry has
            changed |= _mixed(window)
        if changed:
            mixed = mixed | changed
        most = max((e.importance for e in (*replaced.values(), *added)), default=0.0)
        return self._with(keys, self.origin_us, max(self.max_importance, most), mixed)

    def entries(self) -> Iterator[Entry[Any, Any]]:
        """Every entry, in no particular order."""
        return (item[2] for item in self.keys.to_list())

    # -- queries ------------------------------------------------------------

    def _c(self, now_us: float) -> float:
        return (now_us - self.origin_us) * self.rate_us

    def ranked(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Iterator[Entry[Any, Any]]:
        """Entries in rank order, lazily: pinned first (latest put first), then
        by rank value, equals latest put first; expired entries left out."""
        unclamped = scorer.unclamped
        c = self._c(now_us)
        slack = _slack(c)
        noise = self._noise
        mixed = self.mixed
        # (-value, -seq, entry, the rest of its tie group or None): the candidates not yet yielded.
        heap: list[tuple[float, int, Entry[Any, Any], Iterator[Entry[Any, Any]] | None]] = []
        items = self.keys.descending()
        last_key, last_value = _INF, 0.0  # the key and value of the entry pushed last
        while True:
            # A plain loop while keys differ; a second entry at the last key starts a tie group.
            for k, seq, entry in items:
                if k == _INF:
                    yield entry
                    continue
                if k == last_key and k not in mixed:
                    # The rest of the run scores as the entry before it: its members join the heap
                    # lazily, latest put first, and the search seeks past the run.
                    group = _unexpired(k, now_us, ((k, seq, entry),), items)
                    first = next(group, None)
                    if first is not None:
                        heappush(heap, (last_value, -first.seq, first, group))
                    items = self.keys.descending_below((k, -1))
                    last_key = _INF
                    break
                if heap:
                    best_possible = _exp(k - c + slack) + noise  # no entry from here on ranks higher
                    while heap and -heap[0][0] > best_possible:
                        value, _, top, rest = heappop(heap)
                        yield top
                        if rest is not None and (following := next(rest, None)) is not None:
                            heappush(heap, (value, -following.seq, following, rest))
                if (deadline := entry.expires_us) is not None and now_us >= deadline:
                    last_key = _INF
                    continue
                last_key, last_value = k, -unclamped(entry, now, now_us)
                heappush(heap, (last_value, -seq, entry, None))
            else:
                break
        while heap:
            value, _, top, rest = heappop(heap)
            yield top
            if rest is not None and (following := next(rest, None)) is not None:
                heappush(heap, (value, -following.seq, following, rest))

    def top(
        self, entries: Entries, scorer: Scorer, n: int, now: datetime, now_us: float, may_expire: bool = True
    ) -> list[Entry[Any, Any]]:
        """The first ``n`` entries of :meth:`ranked`."""
        return list(islice(self.ranked(entries, scorer, now, now_us), min(n, len(entries))))

    def lowest(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Entry[Any, Any] | None:
        """The unpinned entry ranking last (lowest rank value, then earliest put); None if all are pinned."""
        unclamped = scorer.unclamped
        c = self._c(now_us)
        slack = _slack(c)
        best: tuple[float, float, Entry[Any, Any] | None] = (_INF, _INF, None)
        # Entries that certainly score 0.0 (underflowed, importance 0) tie: the earliest put goes.
        # (A memory removes its expired entries before it looks for a victim.)
        start = (c + _UNDERFLOW - slack, -1)
        first = self.keys.first()
        if first is not None and first < start:  # seldom: most memories hold nothing that old
            zero = self.keys.earliest(_LOWEST, start)
            if zero is not None:
                best = (0.0, zero[1], zero[2])
        noise = self._noise
        mixed = self.mixed
        keys = self.keys
        items = keys.ascending_from(start)
        last_key = _INF
        while True:
            for k, seq, entry in items:
                if k == _INF:
                    return best[2]
                if k == last_key and k not in mixed:
                    # The rest of a tie group scores as its first member and was put later: seek past it.
                    items = keys.ascending_from((k, _INF))
                    break
                if _exp(k - c - slack) - noise > best[0]:  # no entry from here on ranks lower
                    return best[2]
                s = unclamped(entry, now, now_us)
                if s < best[0] or (s == best[0] and seq < best[1]):
                    best = (s, seq, entry)
                last_key = k
            else:
                break
        return best[2]

    def at_least(
        self, entries: Entries, limit: float, now_us: float
    ) -> tuple[list[Entry[Any, Any]], list[Entry[Any, Any]]]:
        """``(pinned, unpinned)``: the unpinned ones may score ``limit`` or more (a superset),
        each list by ``(key, seq)`` largest first."""
        bound = -_INF
        limit -= self._noise
        if limit > 0.0:
            c = self._c(now_us)
            bound = math.log(limit) + c - _slack(c)
        items = self.keys.at_least((bound, -1))
        i = bisect_left(items, _PINNED)
        found = [item[2] for item in reversed(items)]
        n = len(items) - i
        return found[:n], found[n:]

    def below(
        self, entries: Entries, scorer: Scorer, limit: float, now: datetime, now_us: float
    ) -> list[Entry[Any, Any]]:
        """Unpinned entries that may score below ``limit`` (a superset; no order).

        A tie group near the bound is scored once, and left out whole if it is
        not below (expiry aside: the memory sees to expired entries itself).
        """
        found: list[Entry[Any, Any]] = []
        if limit > 0.0:
            c = self._c(now_us)
            slack = _slack(c)
            noise = self._noise
            bound = math.log(limit + noise) + c + slack
            mixed = self.mixed
            keys = self.keys
            raw = scorer.raw
            items = keys.ascending_from(_LOWEST)
            item = next(items, None)
            while item is not None:
                k, _, entry = item
                if k >= bound:
                    break
                found.append(entry)
                item = next(items, None)
                if (
                    item is not None
                    and item[0] == k
                    and k not in mixed
                    and not _exp(k - c + slack) + noise < limit  # not certainly below: score the group
                    and not clamp(raw(entry, now, now_us) * entry.importance) < limit
                ):
                    found.pop()
                    items = keys.ascending_from((k, _INF))
                    item = next(items, None)
        return found

    def soonest(self, entries: Entries) -> list[Entry[Any, Any]]:
        """The unpinned entries that may fall below any threshold first: the lowest keys
        (within rounding of each other), one of each tie group."""
        out: list[Entry[Any, Any]] = []
        first_key: float | None = None
        mixed = self.mixed
        keys = self.keys
        items = keys.ascending_from(_LOWEST)
        item = next(items, None)
        while item is not None:
            k, _, entry = item
            if k == _INF:
                break
            if first_key is None:
                first_key = k
            elif not k <= first_key + 2.0 * _slack(first_key if first_key > -_INF else 0.0):
                break
            out.append(entry)
            if first_key == -_INF:
                break
            item = next(items, None)
            if item is not None and item[0] == k and k not in mixed:  # the rest of a tie group falls with it
                items = keys.ascending_from((k, _INF))
                item = next(items, None)
        return out


def _unexpired(
    k: float, now_us: float, head: tuple[tuple[Any, ...], ...], tail: Iterator[tuple[Any, ...]]
) -> Iterator[Entry[Any, Any]]:
    """The unexpired entries of the run at key ``k`` (``head``, then ``tail`` while its key is ``k``)."""
    for key, _, entry in chain(head, tail):
        if key != k:
            return
        if (deadline := entry.expires_us) is None or now_us < deadline:
            yield entry
