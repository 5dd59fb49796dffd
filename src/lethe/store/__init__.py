"""Durable memory shared by processes, on one host (SQLite) or many (PostgreSQL, Redis): a replicated log of changes.

Every process keeps a replica of the memory, an ordinary immutable
:class:`~lethe.Memory`; the store keeps an append-only log of what each
committed operation changed (the entries written and removed, not the
operation), plus checkpoints.  A write catches up, runs your function on the
replica and appends at exactly the next version, or catches up and runs it
again: nothing is lost and nothing is doubled.  Replaying the log never runs
the decay function or a hook.  See ``docs/store.md``.

>>> import os, tempfile
>>> from lethe import Memory
>>> from lethe.store import Shared, SQLiteStore
>>> with tempfile.TemporaryDirectory() as tmp, SQLiteStore(os.path.join(tmp, "agent-memory.db")) as store:
...     shared = Shared(store, "support-bot", Memory(max_entries=1000))
...     mem = shared.update(lambda m: m.put("node 7 fixed", key="deploy"))
...     entry = shared.transact(lambda m: m.get("deploy"))
...     entry.value, shared.version
('node 7 fixed', 2)
"""

from typing import TYPE_CHECKING

from lethe.store._clock import StoreClock
from lethe.store._engine import Store
from lethe.store._errors import CommitUnknown, HistoryRewound, MemoryGone, StoreError, TemplateIgnored
from lethe.store._memory import InMemoryStore
from lethe.store._shared import Shared
from lethe.store._sqlite import SQLiteStore

if TYPE_CHECKING:
    from lethe.store._postgres import PostgresStore
    from lethe.store._redis import RedisStore

__all__ = [
    "CommitUnknown",
    "HistoryRewound",
    "InMemoryStore",
    "MemoryGone",
    "PostgresStore",
    "RedisStore",
    "SQLiteStore",
    "Shared",
    "Store",
    "StoreClock",
    "StoreError",
    "TemplateIgnored",
]


def __getattr__(name: str) -> object:
    # The engines on servers need their client library (an optional extra): imported on first use.
    if name == "PostgresStore":
        from lethe.store._postgres import PostgresStore

        return PostgresStore
    if name == "RedisStore":
        from lethe.store._redis import RedisStore

        return RedisStore
    raise AttributeError(f"module 'lethe.store' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
