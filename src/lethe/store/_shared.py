"""One named memory in a store, kept as a replica in this process and updated by compare-and-swap."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from lethe._change import Change
from lethe._config import Config
from lethe._entry import Entry
from lethe._gc import paused
from lethe._map import EMPTY
from lethe._memory import Memory
from lethe._serialize import memory_to_dict
from lethe._snapshot import Snapshot
from lethe.store import _records
from lethe.store._engine import Store
from lethe.store._errors import StoreError

K = TypeVar("K")
V = TypeVar("V")
R = TypeVar("R")

#: The configuration fields a store keeps (hooks are process-local and never stored).
_CONFIG_FIELDS = ("max_entries", "decay_fn", "half_life", "eviction_threshold", "summarize_threshold")
_EMPTY = Snapshot(EMPTY, 0, 0, None, -math.inf)


def _config_document(config: Config) -> dict[str, Any]:
    """The stored part of ``config``; a custom decay function counts by its kind, not its repr."""
    full = memory_to_dict(config, _EMPTY)
    doc = {name: full[name] for name in _CONFIG_FIELDS}
    if doc["decay_fn"].get("name") == "custom":
        doc["decay_fn"] = {"name": "custom"}
    return doc


class Shared(Generic[K, V]):
    """A memory many processes (and threads) update, kept in a :class:`~lethe.store.Store`.

    The store keeps an append-only log of what each committed operation
    changed; this object keeps a replica, an ordinary immutable
    :class:`~lethe.Memory`, and the version it has caught up to.  Reads are
    in-process reads of the replica.  A write (:meth:`update`,
    :meth:`transact`) catches up, runs your function on the replica, and
    appends the change at exactly ``version + 1``; if another writer got
    there first it catches up and runs your function again.  So every
    committed version is the result of your function applied to the version
    before it: nothing is lost, nothing is doubled, no version is skipped.

    The ``template`` gives the configuration and the hooks.  The first open
    of ``name`` stores its configuration (``max_entries``, ``decay_fn``,
    ``half_life``, the thresholds) and its entries; a later open uses the
    stored entries and must give the same configuration.  Hooks are this
    process's own and never stored:

    * ``on_evict`` is called by this object, once per commit of *this*
      process that evicted something, after the commit, with
      ``committed.evicted``: everything the operations of your function
      evicted on the way to the version it returned (not only the last
      operation's); never for an attempt that lost the race, never for
      another process's commits (read those from :meth:`evictions`).
    * ``summarize_fn`` runs while your function runs.  Within one
      :meth:`update`, a summary computed for an entry (its key, put order
      and value) on an attempt that lost the race is reused by the next
      attempt, so it runs at most once per entry value per call.
    * ``clock_fn`` is read by your function's operations as usual.

    Thread safety: one ``Shared`` serializes its own writers with a lock;
    several ``Shared`` objects (in one or many processes) on one store race
    through the store's compare-and-swap.

    Args:
        store: Where the log is kept (:class:`~lethe.store.SQLiteStore`,
            :class:`~lethe.store.InMemoryStore`, any :class:`~lethe.store.Store`).
        name: The memory's name in the store.
        template: The configuration, hooks and (for a new name) initial entries.
        checkpoint_every: Have the store checkpoint the memory (copy its
            current entries) after at least this many commits, and at least a
            quarter as many as the memory holds entries, so the copy costs
            O(1) per commit amortized; the log before the older of the two
            newest checkpoints is deleted, so :meth:`at` and
            :meth:`evictions` reach back at least that many versions.

    Raises:
        ValueError: ``name`` exists with another configuration (the message
            names the field); a key or value JSON cannot carry.
        StoreError: the stored log or checkpoint cannot be read.

    >>> from lethe import Memory
    >>> from lethe.store import InMemoryStore, Shared
    >>> store = InMemoryStore()
    >>> a = Shared(store, "notes", Memory(max_entries=10))
    >>> b = Shared(store, "notes", Memory(max_entries=10))
    >>> _ = a.update(lambda m: m.put("node 7 fixed", key="deploy"))
    >>> b.current().peek("deploy").value, b.version
    ('node 7 fixed', 1)
    """

    def __init__(self, store: Store, name: str, template: Memory[K, V], *, checkpoint_every: int = 256) -> None:
        if not isinstance(template, Memory):
            raise TypeError(f"template must be a Memory, got {type(template).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if type(checkpoint_every) is not int or checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be a positive int, got {checkpoint_every!r}")
        self._store = store
        self._name = name
        self._checkpoint_every = checkpoint_every
        self._config: Config = template._config
        self._decay_fn = template._config.decay_fn
        self._on_evict = template._config.on_evict
        self._summarize = template._config.summarize_fn
        # The configuration a write runs under: the template's, but on_evict is called
        # here after a commit, and summaries are remembered across attempts.
        self._run_config = dataclasses.replace(
            self._config,
            on_evict=self._heard,
            summarize_fn=None if self._summarize is None else self._summarized,
        )
        self._summaries: dict[tuple[Any, int], tuple[Any, Any]] = {}
        self._attempt: list[Entry[K, V]] = []  # what the operations of one attempt of fn evicted
        self._lock = threading.RLock()
        mine = _config_document(self._config)
        try:
            stored = store.config(name)
        except KeyError:  # a new name: store the template's entries too (another process may beat us to it)
            snapshot = template._snapshot()
            rows = [(e.seq, _records.row(e, self._decay_fn)) for e in snapshot.entries.values()]
            stored = store.open(name, _records.dumps(mine), _records.head(snapshot), rows)
        theirs = json.loads(stored)
        for field in _CONFIG_FIELDS:
            if theirs.get(field) != mine[field]:
                raise ValueError(
                    f"{name!r} was stored with another configuration: {field} is {theirs.get(field)!r} "
                    f"in the store, {mine[field]!r} here"
                )
        self._version, self._replica = self._loaded()
        self._checkpointed = self._version
        self._catch_up()

    # -- reading ----------------------------------------------------------

    @property
    def name(self) -> str:
        """The memory's name in the store."""
        return self._name

    @property
    def store(self) -> Store:
        """The store the log is kept in."""
        return self._store

    @property
    def version(self) -> int:
        """The version :meth:`current` last saw (0: the initial entries, n: after n commits)."""
        return self._version

    def _restored(self, what: str, head: str, rows: list[str]) -> Memory[K, V]:
        """A memory under the template's configuration from a stored head and rows."""
        try:
            snapshot = _records.snapshot(head, rows, self._decay_fn, self._config.max_entries)
        except ValueError as exc:
            raise StoreError(f"{self._name!r}: {what} cannot be read: {exc}") from None
        return Memory._restored(self._config, snapshot)

    def _loaded(self) -> tuple[int, Memory[K, V]]:
        """The current state, read from the store's current entries (no log to replay)."""
        # The rows read and the entries built from them all stay reachable: a collector pass
        # meanwhile frees nothing and, in a process holding much, walks all of it (as from_dict).
        with paused():
            version, head, rows = self._store.load(self._name)
            return version, self._restored(f"the state at version {version}", head, rows)

    def _checkpointed_at(self, at_most: int) -> tuple[int, Memory[K, V]]:
        """The newest checkpoint at or before ``at_most``."""
        with paused():
            try:
                version, head, rows = self._store.checkpoint(self._name, at_most)
            except KeyError:
                raise StoreError(f"{self._name!r}: no checkpoint at or before version {at_most} is kept") from None
            return version, self._restored(f"checkpoint {version}", head, rows)

    def _change(self, version: int, record: str, evicted: bool) -> Change:
        try:
            return _records.change(record, self._decay_fn, evicted=evicted)
        except ValueError as exc:
            raise StoreError(f"{self._name!r}: log record {version} cannot be read: {exc}") from None

    def _folded(
        self, version: int, mem: Memory[K, V], rows: list[tuple[int, str]] | Any
    ) -> tuple[int, Memory[K, V]]:
        for v, record in rows:
            if v != version + 1:
                raise StoreError(f"{self._name!r}: the log goes from version {version} to {v} (truncated)")
            try:
                mem = mem._applied(self._change(v, record, evicted=False))
            except KeyError as exc:
                raise StoreError(f"{self._name!r}: log record {v} removes a key not held: {exc}") from None
            version = v
        return version, mem

    def _catch_up(self) -> None:
        rows = self._store.read(self._name, self._version)
        if rows and rows[0][0] != self._version + 1:
            # Compacted past this replica: start again from the current entries.
            version, mem = self._loaded()
            rows = self._store.read(self._name, version)
            self._version, self._replica = self._folded(version, mem, rows)
            return
        self._version, self._replica = self._folded(self._version, self._replica, rows)

    def current(self) -> Memory[K, V]:
        """The latest committed version, an ordinary immutable :class:`~lethe.Memory`.

        Reads the log after :attr:`version` and applies it (no decay function
        and no hook runs); O(m log n) for m changed entries.

        Raises:
            StoreError: the log cannot be read (truncated or damaged).
        """
        with self._lock:
            self._catch_up()
            return self._replica

    def at(self, version: int) -> Memory[K, V]:
        """The memory as it was at ``version``, within the retained log.

        Folds the log from the newest checkpoint at or before ``version``.
        Versions from the older of the two newest checkpoints on are kept.

        Raises:
            ValueError: ``version`` is negative or after the latest version.
            StoreError: ``version`` is older than the retained log.

        >>> from lethe import Memory
        >>> from lethe.store import InMemoryStore, Shared
        >>> shared = Shared(InMemoryStore(), "notes", Memory())
        >>> _ = shared.update(lambda m: m.put("one", key=1))
        >>> _ = shared.update(lambda m: m.put("two", key=2))
        >>> len(shared.at(1)), len(shared.at(2))
        (1, 2)
        """
        if type(version) is not int or version < 0:
            raise ValueError(f"version must be an int >= 0, got {version!r}")
        base, mem = self._checkpointed_at(version)
        rows = self._store.read(self._name, base, version)
        found, mem = self._folded(base, mem, rows)
        if found != version:
            raise ValueError(f"version {version} is after the latest version ({found})")
        return mem

    def evictions(self, since: int = 0) -> Iterator[tuple[int, tuple[Entry[K, V], ...]]]:
        """The entries each committed version after ``since`` evicted, summaries included.

        Yields ``(version, evicted)`` for every version after ``since`` (up to
        the latest when called) whose operation evicted something, by any
        process: a durable feed to archive from (remember the last version
        handled and pass it as ``since`` next time).

        Raises:
            StoreError: versions after ``since`` were already compacted away.

        >>> from lethe import Memory
        >>> from lethe.store import InMemoryStore, Shared
        >>> shared = Shared(InMemoryStore(), "notes", Memory(max_entries=1))
        >>> _ = shared.update(lambda m: m.put("old", key="a"))
        >>> _ = shared.update(lambda m: m.put("new", key="b"))
        >>> {v: tuple(e.key for e in gone) for v, gone in shared.evictions(since=0)}
        {2: ('a',)}
        """
        if type(since) is not int or since < 0:
            raise ValueError(f"since must be an int >= 0, got {since!r}")
        rows = self._store.read(self._name, since)
        if rows and rows[0][0] != since + 1:
            raise StoreError(f"{self._name!r}: the log after version {since} was compacted (from {rows[0][0]} on)")
        return self._evicted(since, rows)

    def _evicted(self, since: int, rows: Any) -> Iterator[tuple[int, tuple[Entry[K, V], ...]]]:
        for version, record in rows:
            if version != since + 1:
                raise StoreError(f"{self._name!r}: the log goes from version {since} to {version} (truncated)")
            since = version
            change = self._change(version, record, evicted=True)
            if change.evicted:
                yield version, change.evicted

    # -- writing ----------------------------------------------------------

    def _summarized(self, entry: Entry[Any, Any]) -> Any:
        """``summarize_fn(entry)``, remembered for the entry's key, put order and value
        through one write's attempts."""
        known = self._summaries.get((entry.key, entry.seq))
        if known is not None and (known[0] is entry.value or known[0] == entry.value):
            return known[1]
        assert self._summarize is not None
        summary = self._summarize(entry)
        self._summaries[(entry.key, entry.seq)] = (entry.value, summary)
        return summary

    def transact(self, fn: Callable[[Memory[K, V]], tuple[Memory[K, V], R]]) -> R:
        """Commit ``fn(current)[0]`` and return ``fn(current)[1]``, retrying on a lost race.

        ``fn`` gets the latest version and returns ``(new_memory, result)``;
        ``new_memory`` must be made from the memory it got by its operations
        (``put``, ``get``, ``evict``, ...).  If another writer committed first,
        ``fn`` runs again on the newer version, so it may run several times:
        keep it free of other side effects.  When ``new_memory`` changes
        nothing, nothing is committed.

        Raises:
            TypeError: ``fn`` returned something else (nothing is written).
            Whatever ``fn`` raises: nothing is written, the replica is unchanged.
            ValueError: a key or value JSON cannot carry (nothing is written).
            CommitUnknown: the store's server could not be reached to learn
                whether the commit went in; the replica is unchanged, and the
                next read catches up and shows it if it did.

        >>> from lethe import Memory
        >>> from lethe.store import InMemoryStore, Shared
        >>> shared = Shared(InMemoryStore(), "notes", Memory())
        >>> _ = shared.update(lambda m: m.put("node 7 fixed", key="deploy"))
        >>> shared.transact(lambda m: m.get("deploy")).access_count, shared.version
        (1, 2)
        """
        with self._lock:
            try:
                while True:
                    self._catch_up()
                    base = self._replica
                    runner = base._rehooked(self._run_config, ())
                    self._attempt.clear()
                    out = fn(runner)
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise TypeError(
                            f"fn must return a (Memory, result) pair, got {type(out).__name__}"
                        )
                    new, result = out
                    if self._commit(base, runner, new):
                        return result
            finally:
                self._summaries.clear()
                self._attempt.clear()

    def update(self, fn: Callable[[Memory[K, V]], Memory[K, V]]) -> Memory[K, V]:
        """Commit ``fn(current)`` and return the committed version, retrying on a lost race.

        As :meth:`transact`, for a function that returns only the new memory.

        Raises:
            TypeError: ``fn`` returned something other than a memory made from
                the one it got (nothing is written).
            Whatever ``fn`` raises: nothing is written, the replica is unchanged.

        >>> from lethe import Memory
        >>> from lethe.store import InMemoryStore, Shared
        >>> shared = Shared(InMemoryStore(), "notes", Memory())
        >>> shared.update(lambda m: m.put("node 7 fixed", key="deploy")).peek("deploy").value
        'node 7 fixed'
        """

        def both(mem: Memory[K, V]) -> tuple[Memory[K, V], Memory[K, V]]:
            new = fn(mem)
            return new, new

        with self._lock:
            self.transact(both)
            return self._replica

    def _commit(self, base: Memory[K, V], runner: Memory[K, V], new: object) -> bool:
        """Append what turns ``base`` into ``new``; whether it went in (or there was nothing to commit)."""
        if not isinstance(new, Memory) or new._config is not self._run_config:
            what = type(new).__name__ if not isinstance(new, Memory) else "a Memory with another configuration"
            raise TypeError(f"fn must return a Memory made from the one it was given, got {what}")
        change = runner._changes(new, self._evicted_by(new))
        if not change and not change.evicted and change.next_key == base._next_key and (
            change.next_seq == base._next_seq and change.latest_us == base._latest_us
        ):
            return True  # nothing to commit
        fn = self._decay_fn
        held = base._entries
        written = [(e.seq, _records.row(e, fn)) for e in change.written]
        removed = [held[k].seq for k in change.removed]
        for e in change.written:
            old = held.get(e.key)
            if old is not None and old.seq != e.seq:
                removed.append(old.seq)  # the key was put again: its old row goes
        head = _records.head(new._snapshot())
        evicted = (_records.row(e, fn) for e in change.evicted)
        record = _records.record(head, (r for _, r in written), change.removed, evicted)
        version = self._version + 1
        if not self._store.append(self._name, version, record, head, written, removed):
            return False
        committed: Memory[K, V] = new._rehooked(self._config, change.evicted)
        self._version, self._replica = version, committed
        self._maybe_checkpoint()
        if committed.evicted and self._on_evict is not None:
            self._on_evict(committed.evicted)
        return True

    def _heard(self, evicted: tuple[Entry[K, V], ...]) -> None:
        """The ``on_evict`` of the memories ``fn`` works on: each operation's evictions, kept."""
        self._attempt.extend(evicted)

    def _evicted_by(self, new: Memory[K, V]) -> tuple[Entry[K, V], ...]:
        """What the operations that made ``new`` evicted: every entry an operation of this
        attempt evicted, unless ``new`` still holds it (evicted on a version ``fn`` dropped),
        each once, in the order they were evicted."""
        if not self._attempt:
            return ()
        held = new._entries
        seen: set[tuple[Any, int]] = set()
        out = []
        for e in self._attempt:
            kept = held.get(e.key)
            if (kept is not None and kept.seq == e.seq) or (e.key, e.seq) in seen:
                continue
            seen.add((e.key, e.seq))
            out.append(e)
        return tuple(out)

    def _maybe_checkpoint(self) -> None:
        gap = max(self._checkpoint_every, len(self._replica) // 4)
        if self._version - self._checkpointed < gap:
            return
        try:
            self._store.compact(self._name, gap)
        except StoreError:
            # The commit stands and must be reported (and on_evict called): compaction is tried
            # again after the next commit (the server went away, or another writer held a lock).
            return
        self._checkpointed = self._version  # written here or by someone else lately

    async def atransact(self, fn: Callable[[Memory[K, V]], tuple[Memory[K, V], R]]) -> R:
        """:meth:`transact` in a worker thread (``asyncio.to_thread``): the event loop
        keeps running while the store is written; ``fn`` runs in that thread."""
        return await asyncio.to_thread(self.transact, fn)

    async def aupdate(self, fn: Callable[[Memory[K, V]], Memory[K, V]]) -> Memory[K, V]:
        """:meth:`update` in a worker thread (``asyncio.to_thread``): the event loop
        keeps running while the store is written; ``fn`` runs in that thread.

        >>> import asyncio
        >>> from lethe import Memory
        >>> from lethe.store import InMemoryStore, Shared
        >>> shared = Shared(InMemoryStore(), "notes", Memory())
        >>> asyncio.run(shared.aupdate(lambda m: m.put("v", key="k"))).peek("k").value
        'v'
        """
        return await asyncio.to_thread(self.update, fn)

    def __repr__(self) -> str:
        return f"Shared({self._store!r}, {self._name!r}, version={self._version})"
