"""lethe: immutable, typed memory with decay for agent code.

Entries lose relevance over time unless rehearsed, important ones last
longer, pinned ones never decay, and the memory stays bounded: at capacity the
lowest-scored entry is summarized and evicted, never silently dropped.

>>> from datetime import datetime, timezone
>>> from lethe import Memory
>>> mem = Memory(clock_fn=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
>>> mem = mem.put("the user prefers short answers", key="style")
>>> mem, entry = mem.get("style")
>>> entry.access_count
1
"""

from lethe._core.clock import ManualClock
from lethe._core.entry import Entry
from lethe._core.errors import ClockWarning, LetheError, MemoryFullError, SummarizeError
from lethe._core.vector import Vector
from lethe._memory.consolidate import jaccard_words
from lethe._memory.memory import Memory
from lethe._memory.reads import Stats

__version__ = "0.1.0"

__all__ = [
    "ClockWarning",
    "Entry",
    "LetheError",
    "ManualClock",
    "Memory",
    "MemoryFullError",
    "Stats",
    "SummarizeError",
    "Vector",
    "__version__",
    "jaccard_words",
]
