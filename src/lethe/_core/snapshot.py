"""What a memory is besides its configuration: the value every rebuild starts from.

Unpickling, :meth:`Memory.configure` (``copy.replace``, ``dataclasses.replace``)
and :meth:`Memory.from_dict` each produce a :class:`Snapshot`, and one path,
``lethe._memory.version.rebuilt``, turns a configuration and a snapshot into a memory
(rebuilding the ranking and the deadlines from the entries).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from lethe._core.entry import Entry
from lethe._core.map import EMPTY, PersistentMap
from lethe._core.record import evolve


class Snapshot(NamedTuple):
    """A memory's entries, key and put-order counters, and the latest clock reading it saw."""

    entries: PersistentMap[Any, Entry[Any, Any]]
    next_key: int
    next_seq: int
    latest: datetime | None
    latest_us: float  # -inf when the memory has not read the clock yet
    #: The same entries in a list, in the order they were made, when whoever made the snapshot has
    #: one (a load): the ranking builds from it in half the time it takes from the map, whose order
    #: (by hash) sends every read to another part of memory.
    built: list[Entry[Any, Any]] | None = None

    def without_decay_state(self) -> Snapshot:
        """This snapshot with every ``decay_state`` reset to None (for a new decay function).

        Model-private state (ACT-R's access times, FSRS's stability) means nothing
        to another function; the access count and last access carry over.
        """
        entries = self.entries
        if all(e.decay_state is None for e in entries.values()):
            return self
        reset = {e.key: e if e.decay_state is None else evolve(e, decay_state=None) for e in entries.values()}
        return self._replace(entries=EMPTY.update(reset), built=None)

