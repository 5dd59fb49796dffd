"""The engine interface: what :class:`~lethe.store.Shared` needs from a place that keeps logs.

An engine keeps, for each named memory, three things, all as text it never
interprets (JSON documents written by :class:`~lethe.store.Shared`):

* the memory's **configuration** document, written once by the first open;
* **checkpoints**: ``(version, snapshot)`` pairs, the whole memory as it was
  at that version (version 0, the initial entries, is written by the first
  open);
* the **log**: one record per committed version ``1, 2, 3, ...``, what that
  version changed.  Appending is a compare-and-swap on the version number:
  a record goes in at exactly ``latest + 1`` or not at all.

A new engine (Redis, PostgreSQL, ...) implements these methods, each one
atomic on its own, and passes ``tests/test_store_engine.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Store(Protocol):
    """What :class:`~lethe.store.Shared` needs from a store of named, versioned logs.

    Every method is atomic and may be called from several threads at once.
    Versions are ints: 0 is the initial checkpoint, ``n >= 1`` is the log
    record that made version ``n``.

    >>> from lethe.store import InMemoryStore, Store
    >>> isinstance(InMemoryStore(), Store)
    True
    """

    def open(self, name: str, config: str, snapshot: str) -> str:
        """Create the memory ``name`` unless it exists; return its stored configuration.

        Creating stores ``config`` and the checkpoint ``(0, snapshot)``, at
        once; when ``name`` exists nothing is written and the configuration
        it was created with is returned (the caller compares it).
        """
        ...

    def names(self) -> list[str]:
        """The names of the memories this store holds, sorted."""
        ...

    def config(self, name: str) -> str:
        """The configuration document ``name`` was created with.

        Raises:
            KeyError: ``name`` was never opened.
        """
        ...

    def read(self, name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
        """The log records ``(version, record)`` of ``name`` with ``after < version <= upto``
        (no upper bound when ``upto`` is None), in version order.

        Records older than the second newest checkpoint may be gone (compaction):
        a caller checks that the first version returned is ``after + 1``.
        """
        ...

    def append(self, name: str, version: int, record: str) -> bool:
        """Add ``record`` as version ``version`` if the latest version of ``name`` is
        ``version - 1``; return whether it was added (False: someone got there first).

        When this returns True the record is committed (durable as the engine promises).
        """
        ...

    def checkpoint(self, name: str, at_most: int | None = None) -> tuple[int, str]:
        """The newest checkpoint ``(version, snapshot)`` of ``name`` with ``version <= at_most``
        (the newest of all when ``at_most`` is None).

        Raises:
            KeyError: ``name`` was never opened, or no checkpoint that old is kept.
        """
        ...

    def compact(self, name: str, version: int, snapshot: str, min_gap: int) -> bool:
        """Write the checkpoint ``(version, snapshot)`` if the newest one is at least
        ``min_gap`` versions older, keeping the two newest checkpoints and the log records
        after the older of them; return whether it was written."""
        ...

    def close(self) -> None:
        """Release what the engine holds (connections); a closed engine is not used again."""
        ...
