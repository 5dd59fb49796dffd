"""An engine that keeps everything in this process's memory: for tests and single-process use."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class _Named:
    config: str
    version: int
    head: str
    rows: dict[int, str]
    log: dict[int, str] = field(default_factory=dict)
    checkpoints: dict[int, tuple[str, dict[int, str]]] = field(default_factory=dict)


class InMemoryStore:
    """A :class:`~lethe.store.Store` held in a dict, guarded by a lock.

    It behaves as :class:`~lethe.store.SQLiteStore` does (compare-and-swap
    appends, checkpoints, compaction) but lasts as long as the object: share
    it between threads of one process, not between processes.  :meth:`drop`
    removes a memory (a thread waiting on it gets ``KeyError``); :meth:`close`
    releases nothing, and the store stays usable.

    >>> from lethe import Memory
    >>> from lethe.store import InMemoryStore, Shared
    >>> shared = Shared(InMemoryStore(), "notes", Memory())
    >>> shared.update(lambda m: m.put("v", key="k")).peek("k").value, shared.version
    ('v', 1)
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._committed = threading.Condition(self._lock)
        self._names: dict[str, _Named] = {}

    def names(self) -> list[str]:
        """See :meth:`lethe.store.Store.names`."""
        with self._lock:
            return sorted(self._names)

    def config(self, name: str) -> str:
        """See :meth:`lethe.store.Store.config`."""
        with self._lock:
            return self._names[name].config

    def open(self, name: str, config: str, head: str, rows: Sequence[tuple[int, str]]) -> str:
        """See :meth:`lethe.store.Store.open`."""
        with self._lock:
            named = self._names.get(name)
            if named is None:
                state = dict(rows)
                named = self._names[name] = _Named(config, 0, head, state, checkpoints={0: (head, dict(state))})
            return named.config

    def load(self, name: str) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.load`."""
        with self._lock:
            named = self._names[name]
            return named.version, named.head, list(named.rows.items())

    def read(self, name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
        """See :meth:`lethe.store.Store.read`."""
        with self._lock:
            log = self._names[name].log
            return [(v, log[v]) for v in sorted(log) if v > after and (upto is None or v <= upto)]

    def append(
        self,
        name: str,
        version: int,
        record: str,
        head: str,
        written: Sequence[tuple[int, str]],
        removed: Sequence[int],
        config: str | None = None,
        parent: str | None = None,
    ) -> bool:
        """See :meth:`lethe.store.Store.append`."""
        with self._lock:
            named = self._names[name]
            if named.version != version - 1 or (parent is not None and named.head != parent):
                return False
            named.log[version] = record
            if config is not None:
                named.config = config
            named.version, named.head = version, head
            for seq in removed:
                named.rows.pop(seq, None)
            named.rows.update(written)
            self._committed.notify_all()
            return True

    def wait(self, name: str, after: int, timeout: float) -> int:
        """See :meth:`lethe.store.Store.wait`."""
        with self._lock:
            named = self._names[name]
            self._committed.wait_for(lambda: named.version != after or self._names.get(name) is not named, timeout)
            if self._names.get(name) is not named:
                raise KeyError(name)  # dropped meanwhile
            return named.version

    def time(self) -> float:
        """See :meth:`lethe.store.Store.time`: this host's clock."""
        return time.time()

    def checkpoint(self, name: str, at_most: int | None = None) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.checkpoint`."""
        with self._lock:
            checkpoints = self._names[name].checkpoints
            found = [v for v in checkpoints if at_most is None or v <= at_most]
            if not found:
                raise KeyError(at_most)
            version = max(found)
            head, rows = checkpoints[version]
            return version, head, list(rows.items())

    def compact(self, name: str, min_gap: int) -> bool:
        """See :meth:`lethe.store.Store.compact`."""
        with self._lock:
            named = self._names[name]
            if named.version - max(named.checkpoints) < min_gap:
                return False
            named.checkpoints[named.version] = (named.head, dict(named.rows))
            kept = sorted(named.checkpoints)[-2:]
            named.checkpoints = {v: named.checkpoints[v] for v in kept}
            named.log = {v: r for v, r in named.log.items() if v > kept[0]}
            return True

    def drop(self, name: str) -> bool:
        """See :meth:`lethe.store.Store.drop`."""
        with self._lock:
            if self._names.pop(name, None) is None:
                return False
            self._committed.notify_all()  # a waiter on it learns it is gone
            return True

    def close(self) -> None:
        """Nothing to release: the store stays usable (it lives as long as the object)."""
