"""What one operation changed in a memory: the outcome, not the intent.

A :class:`Change` lists the entries an operation wrote and the keys it
removed, with the counters and the clock reading after it, and the entries it
reported as evicted.  It is found by comparing two versions
(:func:`between`), in time proportional to what changed, because versions
share structure.  Applying it to the older version (``lethe._memory.version.applied``)
gives a memory equal to the newer one without running the decay function,
``summarize_fn`` or ``on_evict`` again: replaying a log of changes is a pure
fold that gives the same memory on every host, for every decay model and any
custom callable.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lethe._core.entry import Entry
from lethe._core.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class Change:
    """The difference between two versions of one memory.

    Attributes:
        written: The entries the newer version holds that the older did not
            hold as they are (new keys, and new versions of existing keys).
        removed: The keys the older version held and the newer does not.
        next_key, next_seq: The newer version's key and put-order counters.
        latest, latest_us: The newer version's latest clock reading.
        evicted: What the operation that made the newer version reported
            (``Memory.evicted``), summaries included.
    """

    written: tuple[Entry[Any, Any], ...]
    removed: tuple[Any, ...]
    next_key: int
    next_seq: int
    latest: datetime | None
    latest_us: float
    evicted: tuple[Entry[Any, Any], ...] = ()

    def __bool__(self) -> bool:
        """Whether the change changes anything a memory holds."""
        return bool(self.written or self.removed)


def between(old: Snapshot, new: Snapshot, evicted: tuple[Entry[Any, Any], ...] = ()) -> Change:
    """The change that turns ``old`` into ``new`` (two snapshots of one memory).

    Runtime complexity: O(m log n) for m changed entries when ``new`` was made
    from ``old`` by writes (they share structure); O(n) after a bulk rebuild.
    """
    written, removed = old.entries.diff(new.entries)
    return Change(
        written=tuple(written.values()),
        removed=tuple(removed),
        next_key=new.next_key,
        next_seq=new.next_seq,
        latest=new.latest,
        latest_us=new.latest_us,
        evicted=evicted,
    )
