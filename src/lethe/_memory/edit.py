"""The one write path: a draft of a memory's next version, its structures changed together.

Every write of a :class:`~lethe.Memory` starts an :class:`Edit` of the
version it is called on (``lethe._memory.version.write``), makes its changes through
it (never to one structure alone, so the map, the ranking and the deadlines
always describe the same entries; the counters and the latest clock reading
beside them), and the new version is built from what the edit holds.  The structures are persistent: an
edit changes which ones it holds, never the ones the old version holds
(pyrsistent's evolver, immutables' ``MapMutation``).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Generic, TypeVar

from lethe._core import expiry as _expiry
from lethe._core.btree import Tree
from lethe._core.entry import Entry
from lethe._core.gc import paused
from lethe._core.map import EMPTY, PersistentMap
from lethe.ranking import Ranking

K = TypeVar("K")
V = TypeVar("V")

#: Changing more than one entry in this many rebuilds the map and ranking in one pass instead.
_BULK = 8
#: The ``vectors`` of a draft holding none.
NO_VECTORS = (0, 0)


class Edit(Generic[K, V]):
    """One operation's draft of a memory's next version: its contents (the map, the ranking and
    the deadlines), its key and put-order counters, and the latest clock reading it saw.

    ``changed`` tells whether the contents changed (an entry added, removed or replaced);
    ``vectors`` is ``(dimensions, count)``: how many entries hold a vector, and the dimension
    they all have (0 when none does), so a write checks a new vector in O(1).
    """

    __slots__ = (
        "changed",
        "deadlines",
        "entries",
        "latest",
        "latest_us",
        "next_key",
        "next_seq",
        "ranking",
        "vectors",
    )

    def __init__(self, entries: PersistentMap[K, Entry[K, V]], ranking: Ranking, deadlines: Tree) -> None:
        self.entries = entries
        self.ranking = ranking
        self.deadlines = deadlines
        self.changed = False
        self.next_key = self.next_seq = 0
        self.latest: datetime | None = None
        self.latest_us = -math.inf
        self.vectors = NO_VECTORS

    def seen(self, now: datetime, now_us: float) -> None:
        """Let the clock reading ``now`` (``now_us``) count, if later than the latest one."""
        if now_us > self.latest_us:
            self.latest, self.latest_us = now, now_us

    def clear(self, ranking: Ranking) -> None:
        """Remove every entry; ``ranking`` is the empty ranking of the memory.  O(1)."""
        self.entries, self.ranking, self.deadlines = EMPTY, ranking, _expiry.NONE
        self.changed, self.vectors = True, NO_VECTORS

    def counted(self, gone: int, came: int, dimensions: int) -> None:
        """Count ``gone`` vectors fewer and ``came`` more (of ``dimensions``)."""
        held, count = self.vectors
        count += came - gone
        self.vectors = (dimensions or held, count) if count else NO_VECTORS

    def add(self, entry: Entry[K, V]) -> None:
        """Add ``entry``, whose key is absent.  O(log n)."""
        self.changed = True
        self.entries = self.entries.add(entry.key, entry)
        self.ranking = self.ranking.add(entry)
        if entry.expires_us is not None:
            self.deadlines = _expiry.added(self.deadlines, entry)
        if entry.vector is not None:
            self.counted(0, 1, len(entry.vector))

    def remove(self, entry: Entry[K, V]) -> None:
        """Remove ``entry``, which the memory holds.  O(log n)."""
        self.changed = True
        self.entries = self.entries.delete(entry.key)
        self.ranking = self.ranking.remove(entry)
        if entry.expires_us is not None:
            self.deadlines = _expiry.removed(self.deadlines, entry)
        if entry.vector is not None:
            self.counted(1, 0, 0)

    def replace(self, old: Entry[K, V], new: Entry[K, V]) -> None:
        """Put ``new`` in the place of ``old`` (an equal key).  O(log n)."""
        self.changed = True
        if type(old.key) is type(new.key):
            self.entries = self.entries.replace(new.key, new)
        else:  # an equal key of another type (1 and True): the map keeps the new one
            self.entries = self.entries.delete(old.key).add(new.key, new)
        self.ranking = self.ranking.swap(old, new)
        if old.expires_us is not None or new.expires_us is not None:
            self.deadlines = _expiry.added(_expiry.removed(self.deadlines, old), new)
        if old.vector is not new.vector:
            self.counted(old.vector is not None, new.vector is not None, 0 if new.vector is None else len(new.vector))

    def apply(
        self,
        removed: list[Entry[K, V]],
        replaced: list[tuple[Entry[K, V], Entry[K, V]]],
        added: dict[K, Entry[K, V]],
    ) -> None:
        """Many changes at once: remove ``removed``, put each ``(old, new)`` in place (the same
        key and seq, and the same place in the ranking: a summary added), add the entries of
        ``added`` (``{key: entry}``, keys absent once ``removed`` are gone).

        O(m log n) for m changes, or O(n + m log m) when m is a sizeable fraction
        of the n entries: the map and ranking are rebuilt in bulk.
        """
        entries = self.entries
        if removed or replaced or added:
            self.changed = True
        if _BULK * (len(removed) + len(replaced) + len(added)) <= len(entries):
            for entry in removed:
                self.remove(entry)
            for old, new in replaced:
                self.replace(old, new)
            for entry in added.values():
                self.add(entry)
            return
        with paused():  # many new nodes, all of them reachable: nothing for the collector to find
            # One pass over the changed paths of the map (each node copied once), not a rebuild:
            # the untouched part of the map is shared, and no dict of every entry is built.
            changed: list[tuple[Any, Entry[K, V]]] = [(old.key, new) for old, new in replaced]
            changed += added.items()
            self.entries = entries.edited([e.key for e in removed], changed, len(added))
            self.ranking = self.ranking.edited(
                {e.seq: e for e in removed}, {old.seq: new for old, new in replaced}, list(added.values())
            )
        gone = [e.vector for e in removed if e.vector is not None]
        gone += [old.vector for old, _ in replaced if old.vector is not None]
        came = [new.vector for _, new in replaced if new.vector is not None]
        came += [e.vector for e in added.values() if e.vector is not None]
        if gone or came:
            self.counted(len(gone), len(came), len(came[0]) if came else 0)
        deadlines = self.deadlines
        # Most entries have no deadline: only those that have one cost a call.
        for entry in removed:
            if entry.expires_us is not None:
                deadlines = _expiry.removed(deadlines, entry)
        for old, new in replaced:
            if old.expires_us is not None or new.expires_us is not None:
                deadlines = _expiry.added(_expiry.removed(deadlines, old), new)
        for entry in added.values():
            if entry.expires_us is not None:
                deadlines = _expiry.added(deadlines, entry)
        self.deadlines = deadlines
