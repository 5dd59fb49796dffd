"""The skeleton of the rankings that merge groups at query time: :class:`Merged`.

Two rankings keep the unpinned entries in a few *groups* by time-invariant
keys and merge the groups by score when asked.  ``Bounds`` (``_bounded``)
places each entry at a *high* key and a *low* key: within its group the
entry scores at most what its high key allows and at least what its low key
allows.  ``Groups`` (``_grouped``) is the case where the two are one key
(``rank_key``: the ranking is fixed within a group).  What they share lives
here:

* the pinned entries, in one tree of their own (``(0.0, seq, entry)``), given
  out first, latest put first;
* per live group, a *store*: its members by ``(high_key, seq)`` and by
  ``(low_key, seq)``, two persistent B+trees, or one tree twice where the keys
  are one (:attr:`Merged.two_keys`); a group emptied by removals is dropped,
  so only live groups count;
* every change (add, remove, swap, rebuild, bulk edit), made on a copy of the
  group table, and the fall back to :class:`~lethe.ranking._scan.Scan` for good
  past :data:`MAX_GROUPS` live groups (a memory built again indexes anew);
* the queries that cut each group at a limit (``at_least``, ``below``): read
  its keys in order and stop at the first whose bound (:meth:`Merged._ceiling`,
  :meth:`Merged._floor`) crosses the limit.

Each keeps its own bounds and the merges behind ``ranked`` and ``lowest``,
built from :func:`valuer`, :func:`live` and :func:`next_live`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from datetime import datetime
from itertools import chain, islice
from operator import itemgetter
from typing import Any, ClassVar

from lethe._core.btree import Tree
from lethe._core.entry import Entry
from lethe.decay._scorer import Scorer, clamp
from lethe.ranking._protocol import Entries, Ranking
from lethe.ranking._scan import Scan

#: The most live groups a memory indexes; one more and it scans.
MAX_GROUPS = 64

#: Where a decay function places an entry: ``(group, high_key, low_key)``, or ``(group, key)``.
Place = Callable[[Entry[Any, Any]], tuple[Any, ...]]
#: A bound on the rank value of the entries at ``key`` in ``group``: ``(group, key, first entry) -> float``.
Limit = Callable[[Hashable, Any, Entry[Any, Any]], float]
#: A group's store: its members by ``(high_key, seq)`` and by ``(low_key, seq)`` (one tree twice
#: where the two keys are one).
Store = tuple[Tree, Tree]
_Item = tuple[Any, int, Entry[Any, Any]]

_FIRST = (-math.inf, -1)
_ENTRY = itemgetter(2)
_HIGHS = itemgetter(0)


def live(entry: Entry[Any, Any], now_us: float) -> bool:
    """Whether ``entry`` has not expired at ``now_us``."""
    deadline = entry.expires_us
    return deadline is None or now_us < deadline


def valuer(scorer: Scorer, now: datetime, now_us: float) -> Callable[[Entry[Any, Any]], float]:
    """An entry's rank value at ``now``, expiry left aside (the queries see to it)."""
    raw = scorer.raw
    if scorer.multiply:
        return lambda e: raw(e, now, now_us) * e.importance
    return lambda e: raw(e, now, now_us)


def next_live(tree: Tree, key: Any, seq: int, now_us: float) -> Entry[Any, Any] | None:
    """The next live member, in descending order, of the run of ``key`` after ``seq``; None at its end."""
    for k, _, e in tree.descending_below((key, seq)):
        if k != key:
            return None
        if live(e, now_us):
            found: Entry[Any, Any] = e
            return found
    return None


class Merged(ABC):
    """A ranking of pinned entries plus, per live group, its members by high key and by low key,
    merged at query time (see the module doc and :class:`~lethe.ranking.Ranking`).  Subclasses
    give the bounds (:meth:`_ceiling`, :meth:`_floor`), the merge of :meth:`_merged`,
    :meth:`lowest` and :meth:`soonest`."""

    __slots__ = ("groups", "pinned", "place", "scorer")

    #: Whether an entry's low key may differ from its high key: ``place`` gives ``(group, high,
    #: low)`` and a store holds two trees; else ``(group, key)``, and one tree serves as both.
    two_keys: ClassVar[bool] = True

    scorer: Scorer
    place: Place
    groups: dict[Hashable, Store]  # never mutated once a ranking holds it
    pinned: Tree  # (0.0, seq, entry)

    def __init__(self, scorer: Scorer, place: Place) -> None:
        self.scorer = scorer
        self.place = place
        self.groups = {}
        self.pinned = Tree()

    def _with(self, groups: dict[Hashable, Store], pinned: Tree) -> Ranking:
        if len(groups) > MAX_GROUPS:
            return Scan(len(pinned))
        new = object.__new__(type(self))
        new.scorer = self.scorer
        new.place = self.place
        new.groups = groups
        new.pinned = pinned
        return new

    # -- each ranking's own ---------------------------------------------------

    @abstractmethod
    def _ceiling(self, now_us: float) -> Limit:
        """At ``now_us``, a bound from above on the rank value of the entries at a high key,
        non-decreasing in the key (the key's first entry is given: a run of one key scores alike
        where high and low keys are one)."""
        ...

    @abstractmethod
    def _floor(self, scorer: Scorer, now: datetime, now_us: float) -> Limit:
        """At ``now``, a bound from below on the rank value of the entries at a low key,
        non-decreasing in the key."""
        ...

    @abstractmethod
    def _merged(self, scorer: Scorer, now: datetime, now_us: float) -> Iterator[Entry[Any, Any]]:
        """The unpinned entries not expired at ``now_us``, in rank order, lazily."""
        ...

    @abstractmethod
    def lowest(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Entry[Any, Any] | None:
        """The unpinned entry ranking last (lowest rank value, then earliest put); None if all are pinned.

        (A memory removes its expired entries before it looks for a victim.)
        """
        ...

    @abstractmethod
    def soonest(self, entries: Entries) -> list[Entry[Any, Any]]:
        """Unpinned entries among which is the first to fall below any threshold (a superset)."""
        ...

    # -- changes --------------------------------------------------------------

    def add(self, entry: Entry[Any, Any]) -> Ranking:
        """The ranking with ``entry`` added."""
        if entry.pinned:
            return self._with(self.groups, self.pinned.insert((0.0, entry.seq, entry)))
        groups = dict(self.groups)
        self._put(groups, entry)
        return self._with(groups, self.pinned)

    def remove(self, entry: Entry[Any, Any]) -> Ranking:
        """The ranking without ``entry`` (which it holds)."""
        if entry.pinned:
            return self._with(self.groups, self.pinned.delete((0.0, entry.seq)))
        groups = dict(self.groups)
        self._drop(groups, entry)
        return self._with(groups, self.pinned)

    def swap(self, old: Entry[Any, Any], new: Entry[Any, Any]) -> Ranking:
        """The ranking with ``old`` replaced by ``new``: what ``remove(old).add(new)`` gives, with
        one copy of the group table instead of two."""
        groups = dict(self.groups)
        pinned = self.pinned
        if old.pinned:
            pinned = pinned.delete((0.0, old.seq))
        else:
            self._drop(groups, old)
        if new.pinned:
            pinned = pinned.insert((0.0, new.seq, new))
        else:
            self._put(groups, new)
        return self._with(groups, pinned)

    def _put(self, groups: dict[Hashable, Store], entry: Entry[Any, Any]) -> None:
        """Put unpinned ``entry`` in ``groups`` (a copy), in a new group if its own is not there."""
        seq = entry.seq
        if self.two_keys:
            group, high, low = self.place(entry)
            store = groups.get(group)
            if store is None:
                groups[group] = Tree([(high, seq, entry)]), Tree([(low, seq, entry)])
            else:
                groups[group] = store[0].insert((high, seq, entry)), store[1].insert((low, seq, entry))
        else:
            group, key = self.place(entry)
            store = groups.get(group)
            tree = Tree([(key, seq, entry)]) if store is None else store[0].insert((key, seq, entry))
            groups[group] = tree, tree

    def _drop(self, groups: dict[Hashable, Store], entry: Entry[Any, Any]) -> None:
        """Take unpinned ``entry`` out of ``groups`` (a copy), and its group with it once empty."""
        seq = entry.seq
        if self.two_keys:
            group, high, low = self.place(entry)
            highs, lows = groups[group]
            highs = highs.delete((high, seq))
            if len(highs):
                groups[group] = highs, lows.delete((low, seq))
                return
        else:
            group, key = self.place(entry)
            highs = groups[group][0].delete((key, seq))
            if len(highs):
                groups[group] = highs, highs
                return
        del groups[group]

    def rebuilt(self, entries: Iterable[Entry[Any, Any]], origin_us: float) -> Ranking:
        """A ranking of ``entries`` alone: O(n log n), near-linear for entries already in key order."""
        place = self.place
        two_keys = self.two_keys
        pinned: list[_Item] = []
        lists: dict[Hashable, tuple[list[_Item], list[_Item]]] = {}
        entries = iter(entries)  # on to a scan midway: the rest counted from where it stopped
        for e in entries:
            if e.pinned:
                pinned.append((0.0, e.seq, e))
                continue
            placed = place(e)
            both = lists.get(placed[0])
            if both is None:
                if len(lists) == MAX_GROUPS:  # a scan from here on (``e`` is not pinned)
                    return Scan(len(pinned) + sum(e.pinned for e in entries))
                lists[placed[0]] = both = ([], [])
            both[0].append((placed[1], e.seq, e))
            if two_keys:
                both[1].append((placed[2], e.seq, e))
        groups: dict[Hashable, Store] = {}
        for group, (highs, lows) in lists.items():
            highs.sort()  # (key, seq) pairs are unique: the entries are never compared
            tree = Tree(highs)
            if two_keys:
                lows.sort()
                groups[group] = tree, Tree(lows)
            else:
                groups[group] = tree, tree
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
        """Every entry: the pinned ones, then group by group in high-key order."""
        for tree in chain((self.pinned,), map(_HIGHS, self.groups.values())):
            for item in tree.to_list():
                yield item[2]

    # -- queries --------------------------------------------------------------

    def ranked(self, entries: Entries, scorer: Scorer, now: datetime, now_us: float) -> Iterator[Entry[Any, Any]]:
        """Entries in rank order, lazily: pinned first (latest put first), then by rank value,
        equals latest put first; expired entries left out."""
        return chain(map(_ENTRY, self.pinned.descending()), self._merged(scorer, now, now_us))

    def top(
        self, entries: Entries, scorer: Scorer, n: int, now: datetime, now_us: float, may_expire: bool = True
    ) -> list[Entry[Any, Any]]:
        """The first ``n`` entries of :meth:`ranked`."""
        return list(islice(self.ranked(entries, scorer, now, now_us), max(n, 0)))

    def at_least(
        self, entries: Entries, limit: float, now_us: float
    ) -> tuple[list[Entry[Any, Any]], list[Entry[Any, Any]]]:
        """``(pinned, unpinned)``: the unpinned ones may score ``limit`` or more (a superset)."""
        pinned = [item[2] for item in self.pinned.descending()]
        found: list[Entry[Any, Any]] = []
        if not limit > 0.0:
            for highs, _ in self.groups.values():
                found += [item[2] for item in highs.to_list()]
            return pinned, found
        ceiling = self._ceiling(now_us)
        append = found.append
        for group, (highs, _) in self.groups.items():
            last: Any = None
            for k, _, e in highs.descending():
                if k != last:  # a new key: once it scores below the limit, every lower key does
                    if clamp(ceiling(group, k, e)) < limit:
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
        floor = self._floor(scorer, now, now_us)
        append = found.append
        for group, (_, lows) in self.groups.items():
            last: Any = None
            for k, _, e in lows.ascending_from(_FIRST):
                if k != last:  # a new key: once it scores at least the limit, every higher key does
                    if not clamp(floor(group, k, e)) < limit:
                        break
                    last = k
                append(e)
        return found

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.groups)} groups)"
