"""One named memory in a store, kept as a replica in this process and updated by compare-and-swap."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from functools import partial
from typing import Any, Generic, TypeVar

from lethe._core.change import Change
from lethe._core.clock import to_us, utc_now
from lethe._core.entry import Entry
from lethe._core.errors import ClockWarning
from lethe._core.gc import paused
from lethe._core.map import EMPTY
from lethe._core.snapshot import Snapshot
from lethe._core.validate import flag, is_number
from lethe._memory.config import FIELDS, HOOKS, STORED, Config
from lethe._memory.document import FORMAT, VERSION
from lethe._memory.memory import Memory
from lethe._memory.version import applied, changes, config_of, rehooked, restored, snapshot_of
from lethe.decay._adapter import CUSTOM, identity
from lethe.store import _records
from lethe.store._engine import Store
from lethe.store._errors import CommitUnknown, HistoryRewound, MemoryGone, StoreError, TemplateIgnored

K = TypeVar("K")
V = TypeVar("V")
R = TypeVar("R")
T = TypeVar("T")

#: The longest one call of an engine's ``wait`` blocks for (``wait()`` calls it again until its
#: timeout): what a ``close()`` from another thread waits for before ``wait()`` raises.  (Each
#: call costs a follower with nothing to follow a few commands on the server: not shorter.)
_WAIT_SLICE = 1.0


def _config_document(config: Config) -> dict[str, Any]:
    """The stored part of ``config``; a custom decay function counts by its identity (its
    qualified name and parameters, or a name it declares), never by a repr naming an address."""
    doc = config.to_document()
    if doc["decay_fn"].get("name") == CUSTOM:
        doc["decay_fn"] = {"name": CUSTOM, "function": identity(config.decay_fn)}
    return doc


def stored_template(doc: dict[str, Any], **options: Any) -> Memory[Any, Any]:
    """An empty memory under the configuration document ``doc`` as a store keeps it, built as
    :meth:`Memory.from_dict` builds one (``options``: its keyword arguments, e.g. the
    ``decay_fn`` standing for a custom one).

    Raises:
        ValueError, TypeError: ``doc`` is not a configuration ``from_dict`` reads.
    """
    fields = {name: doc[name] for name in STORED if name in doc}
    empty = {"format": FORMAT, "version": VERSION, "next_key": 0, "next_seq": 0, "latest": None, "entries": []}
    return Memory.from_dict({**empty, **fields}, **options)


def _mismatch(stored: dict[str, Any], mine: dict[str, Any]) -> str | None:
    """The first configuration field in which ``stored`` differs from ``mine``, or None."""
    for field in STORED:
        theirs = stored.get(field)
        if field == "decay_fn" and theirs == {"name": CUSTOM} and mine[field].get("name") == CUSTOM:
            continue  # stored by an older lethe, which kept no identity for a custom function
        if theirs != mine[field]:
            return field
    return None


#: The first and the longest pause between two looks at the store in :meth:`Shared.await_change`.
_FIRST_POLL = 0.001
_LAST_POLL = 0.05


def _outcome(failed: BaseException | None, cancel: _Cancel) -> str:
    """What a cancelled asynchronous write did, its worker having ended with ``failed``."""
    if cancel.committed is not None:
        done = f"the write was committed (version {cancel.committed}) before the cancellation took effect"
        return done if failed is None else f"{done}; then it raised {type(failed).__name__}: {failed}"
    if isinstance(failed, CommitUnknown):
        return f"whether the write was committed is unknown ({failed}): read current() before writing again"
    if failed is None:
        return "the write was done (nothing to commit) before the cancellation took effect"
    if isinstance(failed, _Stopped):
        return "cancelled before its commit was sent: nothing was committed"
    return f"nothing was committed: the write raised {type(failed).__name__}: {failed}"


def _seq(entry: Entry[Any, Any]) -> int:
    return entry.seq


def _checked_wait(timeout: object) -> float:
    """A wait's ``timeout``: a number of seconds >= 0, else the error naming it."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
        raise ValueError(f"timeout must be None or a number of seconds >= 0, got {timeout!r}")
    return float(timeout)


#: Every Shared object of this process, to mend its lock in a forked child.
_LIVE: weakref.WeakSet[Shared[Any, Any]] = weakref.WeakSet()


class _Running:
    """A write running in this thread, on one memory: the object running it, and how many
    attempts of its function committed to that memory through another object (each such
    commit makes the attempt lose its race)."""

    __slots__ = ("commits", "owner")

    def __init__(self, owner: object) -> None:
        self.owner = owner
        self.commits = 0


#: The writes running in each thread, by memory (store object, name).
_WRITES = threading.local()


def _writing() -> dict[tuple[int, str], _Running]:
    """The writes running in this thread (see :meth:`Shared._write`)."""
    try:
        found: dict[tuple[int, str], _Running] = _WRITES.memories
    except AttributeError:
        found = _WRITES.memories = {}
    return found


def _after_fork_in_child() -> None:
    _writing().clear()
    for shared in list(_LIVE):
        shared._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _reading(
    lock: Callable[..., AbstractContextManager[bool]], after: Callable[[], int], name: str, waiting: object = None
) -> AbstractContextManager[bool]:
    """``lock(name, waiting)``, told to read the log after ``after()`` as it is taken."""
    return lock(name, waiting, after=after())


def _unlocked(name: str, waiting: object = None) -> AbstractContextManager[bool]:
    """The writer lock of an engine that has none, or of a Shared made with locking=False."""
    return nullcontext(False)

#: How many times a catch-up starts again from the current entries when other writers keep
#: compacting the log past them (each time from a newer version) before it reports a gap.
_RELOADS = 100


class _Stopped(Exception):
    """A cancelled asynchronous write stopped before its commit was sent (internal)."""


class _Cancel:
    """Between an asynchronous write and its worker thread: whether it was cancelled (no
    commit is sent after that), and the version its commit made (None: none)."""

    __slots__ = ("committed", "requested")

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.committed: int | None = None


class _Diverged(Exception):
    """A log record was made on another version than the one folded so far (internal)."""

    def __init__(self, version: int) -> None:
        super().__init__(version)
        self.version = version


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
      The commit stands whatever the hook does: an exception it raises
      reaches the caller of :meth:`update` or :meth:`transact` with the
      commit in place (the replica shows it; on Python 3.11+ the exception
      carries a note saying which version), so do not simply retry the
      write, or it is done twice.  (A plain :class:`~lethe.Memory` calls
      the hook before it returns the new version, which a failing hook
      then discards.)
    * ``summarize_fn`` runs while your function runs.  Within one
      :meth:`update`, a summary computed for an entry (its key, put order
      and value) on an attempt that lost the race is reused by the next
      attempt, so it runs at most once per entry value per call.
    * ``clock_fn`` is read by your function's operations as usual.

    Thread safety: one ``Shared`` serializes its own writers with a lock;
    several ``Shared`` objects (in one or many processes) on one store take
    turns through the engine's writer lock where it has one (SQLite,
    PostgreSQL), and race through the store's compare-and-swap where it has not.

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
        max_clock_skew: Warn (:class:`~lethe.ClockWarning`) when the memory's
            latest clock reading, made by some writer, is ahead of this
            process's clock by more than this many seconds (None: never):
            until this process's clock catches up, its operations all happen
            at that reading.  :class:`~lethe.store.StoreClock` gives every
            writer one clock.
        locking: Hold the store's writer lock of the memory from each write's
            catch-up to its commit, where the engine has one
            (:meth:`SQLiteStore.lock <lethe.store.SQLiteStore.lock>`,
            :meth:`PostgresStore.lock <lethe.store.PostgresStore.lock>`): writers take
            turns, and ``fn`` runs once per commit however many race.  On PostgreSQL
            the lock costs a round trip, so a writer alone (no other writer's commit at
            its last read, and no one waiting for the lock at its last commit) commits
            without it, in one round trip, and runs ``fn`` again once if another writer
            came meanwhile.  False: write optimistically everywhere (``fn`` runs again
            after another writer's commit), for a ``fn`` that takes long (a slow
            ``summarize_fn``) and would keep the others waiting, or the most commits
            per second with a cheap one.

    A custom decay function is stored by its identity (its qualified name and
    parameters, or a ``name`` it declares), so a process with another one is
    refused.  :meth:`configure` changes the
    stored configuration for every process; ``store.drop(name)`` removes the
    memory.  ``with Shared(...) as shared:`` closes the object (not the
    store) on leaving the block.

    Raises:
        ValueError: ``name`` exists with another configuration (the message
            names the field), or holds a NUL character or a lone surrogate;
            a key or value in the template JSON cannot carry, or would give
            back as something else.
        StoreError: the stored configuration, log or checkpoint cannot be read.

    Warns:
        TemplateIgnored: ``name`` exists and ``template`` holds entries (they
            are not written).

    >>> from lethe import Memory
    >>> from lethe.store import InMemoryStore, Shared
    >>> store = InMemoryStore()
    >>> a = Shared(store, "notes", Memory(max_entries=10))
    >>> b = Shared(store, "notes", Memory(max_entries=10))
    >>> _ = a.update(lambda m: m.put("node 7 fixed", key="deploy"))
    >>> b.current().peek("deploy").value, b.version
    ('node 7 fixed', 1)
    """

    def __init__(
        self,
        store: Store,
        name: str,
        template: Memory[K, V],
        *,
        checkpoint_every: int = 256,
        max_clock_skew: float | None = 1.0,
        locking: bool = True,
    ) -> None:
        if not isinstance(template, Memory):
            raise TypeError(f"template must be a Memory, got {type(template).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if "\x00" in name or not _records.utf8(name):  # what PostgreSQL's text and Redis's keys cannot hold
            raise ValueError(f"name must be text without NUL characters or lone surrogates, got {name!r}")
        if type(checkpoint_every) is not int or checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be a positive int, got {checkpoint_every!r}")
        if max_clock_skew is not None and not (is_number(max_clock_skew) and max_clock_skew >= 0):
            raise ValueError(f"max_clock_skew must be None or a number of seconds >= 0, got {max_clock_skew!r}")
        self._max_clock_skew = max_clock_skew
        self._max_skew_us = math.inf if max_clock_skew is None else max_clock_skew * 1e6
        self._locking = flag(locking, "locking")
        self._skewed = False
        self._store = store
        self._name = name
        self._checkpoint_every = checkpoint_every
        self._template_fn = config_of(template).decay_fn  # the one custom function this process has
        self._on_evict = config_of(template).on_evict
        self._summarize = config_of(template).summarize_fn
        self._follow(config_of(template))
        self._summaries: dict[tuple[Any, int], tuple[Any, Any]] = {}
        self._attempt: list[Entry[K, V]] = []  # what the operations of one attempt of fn evicted
        self._lock = threading.RLock()
        self._closed = False
        self._version, self._tip = 0, None
        # The head of this replica's version, exactly as stored (None: not known), and whether the
        # last look at the store found no one else's commit: then a write sends its commit at once,
        # the head it was made on its compare-and-swap, without reading first (one round trip).
        self._head_text: str | None = None
        self._fresh = False
        self._created: str | None = None  # the id the name got when it was created (older stores: none)
        mine = _config_document(self._config)
        try:
            stored = store.config(name)
        except KeyError:  # a new name: store the template's entries too (another process may beat us to it)
            snapshot = snapshot_of(template)
            rows = [(e.seq, _records.row(e, self._decay_fn)) for e in snapshot.entries.values()]
            created = {**mine, "created": _records.new_tip()}
            stored = store.open(name, _records.dumps(created), _records.head(snapshot, _records.new_tip()), rows)
        else:
            if len(template):
                warnings.warn(
                    f"{name!r} is already in the store: the template's {len(template)} entries were ignored "
                    "(a template's entries only fill a new name; write them with update())",
                    TemplateIgnored,
                    stacklevel=2,
                )
        self._version, self._replica, self._tip, self._head_text = self._loaded(self._config, stored)
        # When the store last checkpointed is not known here: the first commit of this object
        # past one interval asks it (the store compacts only when its own gap is that wide), so
        # objects that each commit less than an interval still keep the log bounded.
        self._checkpointed = 0
        self._catch_up()
        self._check_clock()
        _LIVE.add(self)

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

    def _call(self, method: Callable[..., T], *args: Any) -> T:
        """``method(name, *args)``, a method of the store; a name the store no longer holds
        (its keys deleted, the store emptied, a server restarted without persistence) raises
        :class:`MemoryGone` on every call until it is created again, never ``KeyError``."""
        self._refuse_if_closed()
        try:
            return method(self._name, *args)
        except KeyError:
            raise MemoryGone(
                f"{self._name!r} is no longer in the store (dropped, or its keys deleted: emptied, evicted, "
                f"or a server restarted without persistence); this replica saw version {self._version}. "
                f"Nothing was written. Open it again with Shared(...), or shared.reopened(), to create it afresh"
            ) from None

    def _refuse_if_closed(self) -> None:
        """StoreError once :meth:`close` was called."""
        if self._closed:
            raise StoreError(f"{self._name!r}: this Shared is closed")

    def _follow(self, config: Config) -> None:
        """Make ``config`` (with this process's hooks) the one replicas and writes use."""
        self._config = config
        self._decay_fn = config.decay_fn
        # The configuration a write runs under: the same, but on_evict is called here after
        # a commit, and summaries are remembered across attempts.
        self._run_config = dataclasses.replace(
            config,
            on_evict=self._heard,
            summarize_fn=None if self._summarize is None else self._summarized,
        )

    def _adopted(self, doc: dict[str, Any], current: Config) -> Config:
        """The configuration the stored document ``doc`` describes, with this process's hooks
        (``current`` when it describes that one).

        Raises:
            StoreError: ``doc`` names a custom decay function this process does not have, or
                is malformed.
        """
        if _mismatch(doc, _config_document(current)) is None:
            return current
        decay = doc.get("decay_fn")
        custom = isinstance(decay, dict) and decay.get("name") == CUSTOM
        if custom and decay != {"name": CUSTOM, "function": identity(self._template_fn)}:
            raise StoreError(
                f"{self._name!r}: its configuration was changed (Shared.configure) to a custom decay function "
                f"this process does not have ({decay!r}): open it again with a template of that configuration"
            )
        try:
            empty = stored_template(doc, decay_fn=self._template_fn if custom else None)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"{self._name!r}: the stored configuration cannot be read: {exc}") from None
        hooks = {name: getattr(current, name) for name in HOOKS}
        return dataclasses.replace(config_of(empty), **hooks)

    def _restored(
        self, what: str, head: str, rows: Sequence[tuple[int, str]], config: Config | None = None
    ) -> tuple[Memory[K, V], str | None]:
        """A memory under ``config`` (this object's by default) from a stored head and rows
        (``(seq, row)`` pairs), and its tip."""
        config = config or self._config
        try:
            snapshot, tip = _records.snapshot(head, rows, config.decay_fn, config.max_entries)
        except ValueError as exc:
            raise StoreError(f"{self._name!r}: {what} cannot be read: {exc}") from None
        return restored(Memory, config, snapshot), tip

    def _parsed(self, stored: str) -> dict[str, Any]:
        """The stored configuration document ``stored``, parsed: an object with every stored
        field (each lethe wrote all of them), its values checked when it is read as a
        configuration (:meth:`_adopted`, :meth:`_readable`)."""
        try:
            doc = json.loads(stored)
        except (ValueError, TypeError, RecursionError):  # (not text; nested past what json reads)
            doc = None
        if not isinstance(doc, dict):
            raise StoreError(f"{self._name!r}: the stored configuration is not a JSON object: {stored[:80]!r}")
        missing = [field for field in STORED if field not in doc]
        if missing:
            raise StoreError(f"{self._name!r}: the stored configuration has no {missing[0]}: {stored[:80]!r}")
        created = doc.get("created")
        if created is not None and not (isinstance(created, str) and _records.is_tip(created)):
            raise StoreError(f"{self._name!r}: the stored configuration's creation id is {created!r}")
        return doc

    def _loaded(
        self, config: Config | None = None, stored: str | None = None
    ) -> tuple[int, Memory[K, V], str | None, str]:
        """The current state ``(version, memory, tip, head)``, read from the store's current
        entries (no log to replay), under
        the stored configuration (``stored``, when just read), which this object then follows;
        with ``config``, the stored configuration must be that one (``ValueError`` otherwise).

        The configuration is read again after the entries: a :meth:`configure` in between
        (whose entries are not the ones of the configuration read) reads both again."""
        for _ in range(_RELOADS):
            text = self._call(self._store.config) if stored is None else stored
            stored = None
            doc = self._parsed(text)
            if config is None:
                wanted = self._adopted(doc, self._config)
            else:
                field = _mismatch(doc, _config_document(config))
                if field is not None:
                    self._readable(doc)
                    raise ValueError(
                        f"{self._name!r} was stored with another configuration: {field} is {doc.get(field)!r} in "
                        f"the store, {_config_document(config)[field]!r} here. Open it with the stored "
                        f"configuration (then Shared.configure(...) changes it for every process), or remove "
                        f"it with store.drop({self._name!r}) and create it again"
                    )
                wanted = config
            # The rows read and the entries built from them all stay reachable: a collector pass
            # meanwhile frees nothing and, in a process holding much, walks all of it (as from_dict).
            with paused():
                version, head, rows = self._call(self._store.load)
                try:
                    state = self._restored(f"the state at version {version}", head, rows, wanted)
                except StoreError:
                    if self._call(self._store.config) == text:
                        raise
                    continue  # configured meanwhile: rows of another decay function
                del rows  # (tuples the collector would walk once it runs again)
            if self._call(self._store.config) == text:
                if wanted is not self._config:
                    self._follow(wanted)
                self._created = doc.get("created")
                return version, *state, head
        raise StoreError(f"{self._name!r}: the stored configuration changed {_RELOADS} times while it was read")

    def _readable(self, doc: dict[str, Any]) -> None:
        """Raise :class:`StoreError` unless the stored configuration ``doc`` is one
        ``Memory.from_dict`` reads (a custom decay function standing for the one it names):
        another configuration, not a damaged one."""
        decay = doc.get("decay_fn")
        custom = isinstance(decay, dict) and decay.get("name") == CUSTOM
        try:
            stored_template(doc, decay_fn=self._template_fn if custom else None)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"{self._name!r}: the stored configuration cannot be read: {exc}") from None

    def _checkpointed_at(self, at_most: int) -> tuple[int, str, list[tuple[int, str]]]:
        """The newest checkpoint at or before ``at_most``, as stored: ``(version, head, rows)``."""
        try:
            return self._store.checkpoint(self._name, at_most)
        except KeyError:
            self._call(self._store.wait, 0, 0.0)  # the name itself may be gone
            raise StoreError(f"{self._name!r}: no checkpoint at or before version {at_most} is kept") from None

    def _configured(self, version: int, record: str) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """The configuration log record ``version`` set and the one before it (None: it set none)."""
        try:
            return _records.configured(record)
        except ValueError as exc:
            raise StoreError(f"{self._name!r}: log record {version} cannot be read: {exc}") from None

    def _config_before(self, rows: Sequence[tuple[int, str]]) -> Config:
        """The configuration in force before the log ``rows``: the one the first of them that
        changed it replaced, else the current one."""
        for v, record in rows:
            doc = self._configured(v, record)
            if doc is not None:
                if doc[1] is None:
                    raise StoreError(f"{self._name!r}: log record {v} does not say the configuration it replaced")
                return self._adopted(doc[1], self._config)
        return self._config

    def _change(
        self, version: int, record: str, evicted: bool, decay_fn: Any = None
    ) -> tuple[Change, str | None, str | None]:
        try:
            return _records.change(record, self._decay_fn if decay_fn is None else decay_fn, evicted=evicted)
        except ValueError as exc:
            raise StoreError(f"{self._name!r}: log record {version} cannot be read: {exc}") from None

    def _folded(
        self, version: int, mem: Memory[K, V], tip: str | None, rows: list[tuple[int, str]] | Any, head: str | None
    ) -> tuple[int, Memory[K, V], str | None, str | None]:
        """``mem`` (at ``version``, whose tip is ``tip`` and head ``head``) with the log ``rows``
        applied: ``(version, memory, tip, head)``.

        Raises:
            _Diverged: a record was made on another version than the one folded so far.
        """
        last = None  # the last record folded: the head kept is its own (read once, not per record)
        for v, record in rows:
            if v != version + 1:
                raise StoreError(f"{self._name!r}: the log goes from version {version} to {v} (truncated)")
            doc = self._configured(v, record)
            config = config_of(mem) if doc is None else self._adopted(doc[0], config_of(mem))
            change, prev, new_tip = self._change(v, record, evicted=False, decay_fn=config.decay_fn)
            if prev is not None and tip is not None and prev != tip:
                raise _Diverged(version)
            try:
                _records.check_change(change, snapshot_of(mem), config.max_entries, whole=doc is not None)
            except ValueError as exc:
                raise StoreError(f"{self._name!r}: log record {v} was not made on version {version}: {exc}") from None
            if doc is not None:  # a new configuration: the record holds every entry
                written = list(change.written)
                snapshot = Snapshot(
                    entries=EMPTY.update({e.key: e for e in written}),
                    next_key=change.next_key,
                    next_seq=change.next_seq,
                    latest=change.latest,
                    latest_us=change.latest_us,
                    built=written,
                )
                mem = restored(Memory, config, snapshot)
            else:
                try:
                    mem = applied(mem, change)
                except KeyError as exc:
                    raise StoreError(f"{self._name!r}: log record {v} removes a key not held: {exc}") from None
            version, tip, last = v, new_tip, record
        return version, mem, tip, head if last is None else _records.head_of(last)

    def _caught_up(self, version: int, mem: Memory[K, V], tip: str | None, head: str | None) -> None:
        """Make ``mem`` (at ``version``, whose tip is ``tip`` and head ``head``) the replica, and
        follow its configuration when a record changed it."""
        self._version, self._replica, self._tip, self._head_text = version, mem, tip, head
        if config_of(mem) is not self._config:
            self._follow(config_of(mem))

    def _catch_up(self) -> None:
        """Fold the log after :attr:`version` into the replica (from the current entries when
        the log was compacted past it).

        Raises:
            StoreError: the store's history is no longer the one this replica saw (see
                :meth:`_rejoin`), or the log cannot be read.
        """
        version, tip = self._version, self._tip
        if version == 0 and self._created is not None and self._parsed(
            self._call(self._store.config)
        ).get("created") != self._created:
            self._rejoin()  # version 0 has no record to compare tips with: dropped and made again
        # The record of this replica's own version comes along (when its id is known), so one
        # read also tells whether the store still holds the history this replica saw.
        start = self._read_from()
        check = start != version  # (the record of this replica's version is read too)
        rows = self._call(self._store.read, start)
        try:
            if check:
                if not rows:
                    raise _Diverged(version)  # the newest record is always kept: the store went back
                if rows[0][0] == version:
                    found = _records.tip_of(rows[0][1])
                    if found is None:  # not as written: parsing names what is wrong, or finds it
                        found = self._change(version, rows[0][1], evicted=False)[2]
                    if found != tip:
                        raise _Diverged(version)
                    rows = rows[1:]
            self._fresh = not rows
            if rows and rows[0][0] != version + 1:
                # Compacted past this replica: start again from the current entries, and again
                # if other writers compacted past those too before their log was read.
                for _ in range(_RELOADS):
                    version, mem, tip, head = self._loaded()
                    rows = self._call(self._store.read, version)
                    if not rows or rows[0][0] == version + 1:
                        break
                self._caught_up(*self._folded(version, mem, tip, rows, head))
                self._check_clock()
                return
            self._caught_up(*self._folded(version, self._replica, tip, rows, self._head_text))
        except _Diverged:
            self._rejoin()
        if rows:
            self._check_clock()

    def _read_from(self) -> int:
        """The version the catch-up reads the log after: the one before this replica's, whose
        record tells its id, where the id is known (see :meth:`_catch_up`)."""
        version = self._version
        return version - 1 if self._tip is not None and version > 0 else version

    def _check_clock(self) -> None:
        """Warn (:class:`~lethe.ClockWarning`, once until it passes) when the memory's latest
        clock reading is ahead of this process's clock by more than ``max_clock_skew``."""
        latest = snapshot_of(self._replica).latest_us
        if latest == -math.inf or self._max_skew_us == math.inf:
            return
        clock = self._config.clock_fn or utc_now
        ahead = latest - to_us(clock(), "clock_fn()")
        if ahead <= self._max_skew_us:
            self._skewed = False
        elif not self._skewed:
            self._skewed = True
            warnings.warn(
                ClockWarning(
                    f"{self._name!r}: the memory's latest clock reading is {ahead / 1e6:.3f} s ahead of this "
                    "process's clock: a writer's clock runs ahead, and this process's operations all happen "
                    "at that reading until its clock catches up (decay stands still here). Give every "
                    "writer lethe.store.StoreClock(store) as clock_fn, or keep the hosts' clocks in step"
                ),
                stacklevel=4,
            )

    def _rejoin(self) -> None:
        """Follow the store again after its history went back: it no longer holds the
        versions this replica saw last (a server restarted without its latest writes, a
        store restored from a backup).  The replica becomes the store's current state.

        Raises:
            HistoryRewound: always, naming the version seen and the version the store holds.
        """
        seen = self._version
        self._version, self._replica, self._tip, self._head_text = self._loaded()
        self._checkpointed = min(self._checkpointed, self._version)
        raise HistoryRewound(
            f"{self._name!r}: the store's history went back: this replica saw version {seen}, and the "
            f"store now holds version {self._version} without some of the versions seen (a server "
            f"that restarted without its latest writes, a restored backup). The replica now follows "
            f"the store: call again to go on"
        )

    def current(self) -> Memory[K, V]:
        """The latest committed version, an ordinary immutable :class:`~lethe.Memory`.

        Reads the log after :attr:`version` and applies it (no decay function
        and no hook runs); O(m log n) for m changed entries.

        Raises:
            MemoryGone: the memory is no longer in the store (dropped, its keys deleted).
            HistoryRewound: the store no longer holds versions this replica saw (it then
                follows the store: call again to go on).
            StoreError: the log cannot be read (truncated or damaged).
        """
        with self._lock:
            self._catch_up()
            return self._replica

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a version after the one this replica had when called is committed, by any
        process, and catch up to it.

        The engine says when a commit happens: Redis and Valkey by a blocking
        stream read, PostgreSQL by ``LISTEN``/``NOTIFY``; SQLite cannot tell
        another process, so :class:`~lethe.store.SQLiteStore` polls (every 0.5 ms
        at first, backing off to 20 ms).  A replica that follows a memory to
        act on every change loops ``while shared.wait(): ...``.

        Args:
            timeout: Seconds to wait at most; None waits until a commit.

        Returns:
            True once the replica moved on (read it with :meth:`current`), False
            when ``timeout`` seconds passed first.

        Raises:
            ValueError: ``timeout`` is negative or not a number.
            MemoryGone: the memory is no longer in the store.
            HistoryRewound: the store's history went back (the replica then
                follows the store, as after :meth:`update`).
            StoreError: the log cannot be read.

        >>> from lethe import Memory
        >>> from lethe.store import InMemoryStore, Shared
        >>> store = InMemoryStore()
        >>> follower = Shared(store, "notes", Memory())
        >>> follower.wait(timeout=0)
        False
        >>> _ = Shared(store, "notes", Memory()).update(lambda m: m.put("v", key="k"))
        >>> follower.wait(timeout=5), follower.version
        (True, 1)
        """
        deadline = None if timeout is None else time.monotonic() + _checked_wait(timeout)
        with self._lock:
            start = self._version
        moved = True  # a catch-up is due: at first, and once the engine saw a commit
        while True:
            if moved:
                with self._lock:
                    self._catch_up()
                    seen = self._version
                if seen != start:
                    return True
            left = _WAIT_SLICE if deadline is None else min(deadline - time.monotonic(), _WAIT_SLICE)
            if left <= 0:
                return False
            latest = self._call(self._store.wait, seen, left)
            moved = latest != seen
            if moved:
                with self._lock:
                    if self._version == seen:
                        self._stalled(seen, latest)

    def at(self, version: int) -> Memory[K, V]:
        """The memory as it was at ``version``, within the retained log.

        Folds the log from the newest checkpoint at or before ``version``.
        Versions from the older of the two newest checkpoints on are kept.

        Raises:
            ValueError: ``version`` is negative or after the latest version.
            MemoryGone: the memory is no longer in the store.
            StoreError: ``version`` is older than the retained log, or the log lacks a
                record up to it that the store's latest version says it holds (damaged).

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
        with paused():
            base, head, stored = self._checkpointed_at(version)
            latest = self._call(self._store.wait, base, 0.0)  # before the log: it holds at least that
            # To the latest: a configure after the checkpoint says the configuration it was made under.
            rows = self._call(self._store.read, base)
            mem, tip = self._restored(f"checkpoint {base}", head, stored, self._config_before(rows))
        try:
            found, mem, _, _ = self._folded(base, mem, tip, [(v, r) for v, r in rows if v <= version], head)
        except _Diverged as exc:
            made = exc.version + 1
            raise StoreError(f"{self._name!r}: log record {made} was not made on version {exc.version}") from None
        if found != version:
            if version > latest and found >= latest:
                raise ValueError(f"version {version} is after the latest version ({found})")
            raise StoreError(
                f"{self._name!r}: the log from checkpoint {base} on holds no record of version {found + 1}, "
                f"which the store's latest version ({latest}) says it has: a damaged store"
            )
        return mem

    def evictions(self, since: int = 0) -> Iterator[tuple[int, tuple[Entry[K, V], ...]]]:
        """The entries each committed version after ``since`` evicted, summaries included.

        Yields ``(version, evicted)`` for every version after ``since`` (up to
        the latest when called) whose operation evicted something, by any
        process: a durable feed to archive from (remember the last version
        handled and pass it as ``since`` next time).

        Raises:
            MemoryGone: the memory is no longer in the store.
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
        rows = self._call(self._store.read, since)
        if rows and rows[0][0] != since + 1:
            raise StoreError(f"{self._name!r}: the log after version {since} was compacted (from {rows[0][0]} on)")
        return self._evicted(since, rows)

    def _evicted(self, since: int, rows: Any) -> Iterator[tuple[int, tuple[Entry[K, V], ...]]]:
        config = self._config_before(rows)
        for version, record in rows:
            if version != since + 1:
                raise StoreError(f"{self._name!r}: the log goes from version {since} to {version} (truncated)")
            since = version
            doc = self._configured(version, record)
            if doc is not None:
                config = self._adopted(doc[0], config)
            change = self._change(version, record, evicted=True, decay_fn=config.decay_fn)[0]
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
            ValueError: a key or value JSON cannot carry, or would give back as
                something else (nothing is written).
            RuntimeError: called from inside a function this object runs for
                :meth:`update` or :meth:`transact` (nothing is written).
            MemoryGone: the memory is no longer in the store (nothing is written).
            HistoryRewound: the store no longer holds versions this replica saw
                (nothing is written; the replica then follows the store).
            StoreError: this object is closed (nothing is written).
            CommitUnknown: the store's server could not be reached to learn
                whether the commit went in; the replica is unchanged, and the
                next read catches up and shows it if it did.
            Whatever ``on_evict`` raises: raised after the commit, which stands.

        >>> from lethe import Memory
        >>> from lethe.store import InMemoryStore, Shared
        >>> shared = Shared(InMemoryStore(), "notes", Memory())
        >>> _ = shared.update(lambda m: m.put("node 7 fixed", key="deploy"))
        >>> shared.transact(lambda m: m.get("deploy")).access_count, shared.version
        (1, 2)
        """
        return self._transact(fn, None)

    def _transact(self, fn: Callable[[Memory[K, V]], tuple[Memory[K, V], R]], cancel: _Cancel | None) -> R:
        """:meth:`transact`; once ``cancel`` is requested, no commit is sent (:class:`_Stopped`
        is raised instead), and it is told of a commit made."""
        with self._lock:
            with self._write() as outer, ExitStack() as held:
                running = _writing()[(id(self._store), self._name)] if outer is None else None
                writing_runs = 0  # runs of fn that wrote to this memory through another object
                # Under the engine's writer lock, where it has one: read first, and fn runs once
                # (the lock does not tell whether another writer committed since this one last
                # read).  Without one, when the last read found no one else's commit: send the
                # commit without reading first (one round trip; a lost race reads what it missed).
                # A lock that costs a round trip (a server's) is taken only then: alone, the
                # commit goes in without it, unless another writer holds it.
                lock, later = self._writer_lock()
                locked = later is None and held.enter_context(lock(self._name, self._moved_on))
                unread = not locked and self._fresh and self._head_text is not None
                if later is not None:
                    if unread:
                        held.enter_context(later)
                    else:
                        self._contend(held, lock)
                        later = None
                if not unread and not (locked and self._unchanged()):
                    self._catch_up()
                while True:
                    base, version, tip, head = self._replica, self._version, self._tip, self._head_text
                    runner = rehooked(base, self._run_config, ())
                    self._attempt.clear()
                    before = 0 if running is None else running.commits
                    try:
                        out = fn(runner)
                    except Exception:
                        if not (unread and self._newer(version)):
                            raise
                        unread = False  # it failed on what was not the latest: again on that
                        continue
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise TypeError(f"fn must return a (Memory, result) pair, got {type(out).__name__}")
                    new, result = out
                    if cancel is not None and cancel.requested.is_set():
                        raise _Stopped
                    committed = self._commit(base, version, tip, runner, new, parent=head)
                    if committed is True and unread and self._newer(version):
                        unread = False  # nothing to commit, on what was not the latest: again on that
                        continue
                    unread = False
                    if committed is not False:
                        break
                    if running is not None and running.commits > before:
                        writing_runs += 1
                        if writing_runs > 1:
                            # Each run of fn commits that write, and this one loses the race to
                            # it: for ever.
                            raise RuntimeError(
                                f"{self._name!r}: the function given to update() or transact() writes to the "
                                f"same memory through another Shared on every run ({running.commits} commits so "
                                "far), so it can never commit; make every change in that function's own memory "
                                "(the one it was given)"
                            )
                    if later is not None:  # (a race lost alone: another writer is here)
                        held.close()
                        self._contend(held, lock)
                        later = None
                    self._lost()
                if outer is not None and isinstance(committed, Memory):
                    outer.commits += 1
            if isinstance(committed, Memory):
                if cancel is not None:
                    cancel.committed = self._version
                # Outside the write: on_evict may write to this memory again.
                self._report(committed)
            return result

    def _unchanged(self) -> bool:
        """Whether the store knows, without reading the log, that this replica's version is still
        the latest (``latest_known``: SQLite's, while no other connection committed to the file
        since this replica last read or committed): the catch-up under the lock is skipped.  The
        head tells a memory dropped and made again through the same store from this one."""
        known = getattr(self._store, "latest_known", None)
        return (
            known is not None
            and self._head_text is not None
            and self._call(known) == (self._version, self._head_text)
        )

    def _contend(self, held: ExitStack, lock: Callable[..., AbstractContextManager[bool]]) -> None:
        """Take a writer lock that costs a round trip for the rest of this write (``held``): the
        memory has other writers.  So are the next writes, unless the lock says no other writer
        waited for it at this one's commit (its ``alone``) and the read under it found no one
        else's commit, or until a read outside a write (a ``current()``) finds none: then this
        one commits alone again, in one round trip.  (Finding nothing new under the lock does not
        tell on its own: the others may be waiting for it.)"""
        block = lock(self._name, self._moved_on)
        held.enter_context(block)
        held.callback(self._contended, block)

    def _contended(self, block: object) -> None:
        self._fresh = self._fresh and getattr(block, "alone", False) is True

    def _moved_on(self) -> bool:
        """Catch up; whether that found versions after this replica's (while this writer waits
        for the writer lock: the lock changed hands, so the writers are taking turns, not stuck
        behind one, and the wait goes on).  Nothing is read while the store knows that no one
        committed since (see :meth:`_unchanged`)."""
        return not self._unchanged() and self._newer(self._version)

    def _newer(self, version: int) -> bool:
        """Catch up; whether that found versions after ``version`` (what a run of ``fn`` on a
        replica not read first saw was then not the latest)."""
        self._catch_up()
        return self._version != version

    @contextmanager
    def _write(self) -> Iterator[_Running | None]:
        """Hold this object's lock for one write, refusing a write through this object from
        inside it; yield what the write running on this memory in this thread is (None: this)."""
        writing = _writing()
        key = (id(self._store), self._name)
        with self._lock:
            outer = writing.get(key)
            if outer is not None and outer.owner is self:
                # The inner write would commit first, and the outer one on the version it
                # started from: two entries with one put order, and replicas that disagree.
                raise RuntimeError(
                    f"{self._name!r}: a write from inside a function this Shared is running for update(), "
                    "transact() or configure(); make every change in that function's own memory (the one "
                    "it was given)"
                )
            if outer is None:
                writing[key] = _Running(self)
            try:
                yield outer
            finally:
                if outer is None:
                    writing.pop(key, None)  # (None: a child forked inside the write, with a fresh registry)
                self._summaries.clear()
                self._attempt.clear()

    def _writer_lock(self) -> tuple[Callable[..., AbstractContextManager[bool]], AbstractContextManager[bool] | None]:
        """The store's writer lock of this memory, ``lock(name, waiting)`` for one write (see
        ``SQLiteStore.lock``): held from the catch-up to the commit, so ``fn`` runs once.
        Nothing where the engine has no such lock (a wrapper) or this object was made with
        ``locking=False``.  While another writer holds it, this one folds in what was committed
        meanwhile (``waiting``, which says whether it found any): once it holds the lock, little
        is left to fold.

        Second, for a lock that costs a round trip (``lock_round_trip``, a server's): the block
        of a commit sent without taking it, which goes in only while no other writer holds it.

        A lock that can read the log as it is taken (``lock_reads``, PostgreSQL's) is told the
        version the catch-up reads after, so the catch-up costs no round trip of its own."""
        lock = getattr(self._store, "lock", None) if self._locking else None
        if lock is None:
            return _unlocked, None
        later: AbstractContextManager[bool] | None = None
        if getattr(self._store, "lock_round_trip", False):
            later = lock(self._name, None, wait=False)
        if getattr(self._store, "lock_reads", False):
            return partial(_reading, lock, self._read_from), later
        return lock, later

    def _lost(self) -> None:
        """After a commit that did not go in: someone committed its version first, or it never
        reached the store (an engine that lost the connection says so).  Catch up; if that finds
        nothing, ask the store its latest version (see :meth:`_stalled`)."""
        seen = self._version
        self._catch_up()
        if self._version == seen:
            # Nothing missed, and the history is the one seen: the store's head of this version is
            # not the one the commit was made on (another client wrote it), or the commit never
            # arrived.  The next commit is sent without the head (after a read, as here).
            self._head_text = None
            self._stalled(seen, self._call(self._store.wait, seen, 0.0))

    def _stalled(self, seen: int, latest: int) -> None:
        """After a catch-up from version ``seen`` that found nothing, while the store's latest
        version is ``latest``.  Below ``seen``, the store went back (:meth:`_rejoin`).  Above it,
        a commit may have come in after the log was read: catch up again, and if that finds
        nothing either, the store's log lacks the versions its latest version says it holds
        (a commit appends its record at once), and nothing would ever commit.

        Raises:
            StoreError: the store went back, or is damaged so (nothing was written).
        """
        if latest < seen:
            self._rejoin()
        if latest > seen:
            self._catch_up()
            if self._version == seen:
                raise StoreError(
                    f"{self._name!r}: the store's latest version is {latest}, but its log holds no record after "
                    f"version {seen} (a damaged store); nothing was written"
                )

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

        return self._update(fn, None)

    def _update(self, fn: Callable[[Memory[K, V]], Memory[K, V]], cancel: _Cancel | None) -> Memory[K, V]:
        def both(mem: Memory[K, V]) -> tuple[Memory[K, V], Memory[K, V]]:
            new = fn(mem)
            return new, new

        with self._lock:
            self._transact(both, cancel)
            return self._replica

    def configure(self, **changes: Any) -> Memory[K, V]:
        """Change the stored configuration, for every process, keeping every entry.

        ``changes`` are any of the stored fields (``max_entries``,
        ``decay_fn``, ``half_life``, ``eviction_threshold``,
        ``summarize_threshold``), applied as :meth:`lethe.Memory.configure`
        applies them, in one commit that carries the new configuration and
        every entry as it now is.  Every other ``Shared`` on the name follows
        it when it catches up (a custom decay function only where its template
        has that function: elsewhere reads raise :class:`StoreError` until the
        process opens the name again with it), and a later open must give the
        new configuration.

        Runtime complexity: O(n log n), and every entry is written once.

        Raises:
            TypeError: a field that is not stored (a hook: hooks are each
                process's own, give them in the template), or an unknown field.
            ValueError: a bad value, as :meth:`lethe.Memory.configure` (nothing
                is committed).
            RuntimeError: called from inside a function this object runs for
                :meth:`update` or :meth:`transact`.
            MemoryGone, HistoryRewound, StoreError: as :meth:`transact`.

        >>> from lethe import Memory
        >>> from lethe.store import InMemoryStore, Shared
        >>> store = InMemoryStore()
        >>> a = Shared(store, "notes", Memory(max_entries=10))
        >>> _ = a.configure(max_entries=100)
        >>> b = Shared(store, "notes", Memory(max_entries=100))
        >>> a.current().max_entries, b.version
        (100, 1)
        """
        unknown = sorted(set(changes) - set(FIELDS))
        if unknown:
            raise TypeError(f"unknown configuration field(s): {unknown}")
        local = sorted(set(changes) - set(STORED))
        if local:
            raise TypeError(
                f"configure changes the stored configuration ({', '.join(STORED)}); "
                f"{', '.join(local)} cannot be stored: give hooks in the template"
            )
        with self._write() as outer, self._writer_lock()[0](self._name, self._moved_on):
            self._catch_up()
            while True:
                base, version, tip, parent = self._replica, self._version, self._tip, self._head_text
                new = base.configure(**changes)
                doc, was = _config_document(config_of(new)), _config_document(config_of(base))
                if _mismatch(doc, was) is None:
                    return base  # nothing stored changes
                if self._created is not None:
                    doc["created"] = was["created"] = self._created
                fn = config_of(new).decay_fn
                written = [(e.seq, _records.row(e, fn)) for e in sorted(snapshot_of(new).entries.values(), key=_seq)]
                new_tip = _records.new_tip()
                head = self._head(new, new_tip)
                text = _records.dumps(doc)
                rows = (r for _, r in written)
                record = _records.record(head, tip, rows, (), (), config=text, was=_records.dumps(was))
                # Store.append's arguments by position, as the engine protocol takes them (a store, or a
                # wrapper around one, may take them by position only): a commit, the store's hot path.
                if self._call(self._store.append, version + 1, record, head, written, (), text, parent):
                    if doc["decay_fn"].get("name") == CUSTOM:
                        self._template_fn = fn  # this process has it now: it follows a change back to it
                    self._follow(config_of(new))
                    self._version, self._replica, self._tip, self._head_text = version + 1, new, new_tip, head
                    self._maybe_checkpoint()
                    if outer is not None:
                        outer.commits += 1
                    return new
                self._lost()

    def _commit(
        self,
        base: Memory[K, V],
        version: int,
        tip: str | None,
        runner: Memory[K, V],
        new: object,
        *,
        parent: str | None,
    ) -> Memory[K, V] | bool:
        """Append what turns ``base`` (at ``version``, whose tip is ``tip`` and head ``parent``)
        into ``new``: the committed memory, True when there was nothing to commit, False when
        it did not go in."""
        if not isinstance(new, Memory) or config_of(new) is not config_of(runner):
            what = type(new).__name__ if not isinstance(new, Memory) else "a Memory with another configuration"
            raise TypeError(f"fn must return a Memory made from the one it was given, got {what}")
        change = changes(runner, new, self._evicted_by(new))
        was = snapshot_of(base)
        if not change and not change.evicted and change.next_key == was.next_key and (
            change.next_seq == was.next_seq and change.latest_us == was.latest_us
        ):
            return True  # nothing to commit
        fn = self._decay_fn
        held = was.entries
        written = [(e.seq, _records.row(e, fn)) for e in change.written]
        removed = [held[k].seq for k in change.removed]
        for e in change.written:
            old = held.get(e.key)
            if old is not None and old.seq != e.seq:
                removed.append(old.seq)  # the key was put again: its old row goes
        new_tip = _records.new_tip()
        head = self._head(new, new_tip)
        evicted = (_records.row(e, fn) for e in change.evicted)
        record = _records.record(head, tip, (r for _, r in written), change.removed, evicted)
        version += 1
        # Store.append's arguments by position, as the engine protocol takes them (see configure).
        if not self._call(self._store.append, version, record, head, written, removed, None, parent):
            return False
        committed: Memory[K, V] = rehooked(new, config_of(base), change.evicted)
        self._version, self._replica, self._tip, self._head_text = version, committed, new_tip, head
        self._maybe_checkpoint()
        return committed

    def _report(self, committed: Memory[K, V]) -> None:
        """Call ``on_evict`` with what the commit of ``committed`` (this object's latest) evicted."""
        if committed.evicted and self._on_evict is not None:
            try:
                self._on_evict(committed.evicted)
            except Exception as exc:
                # The commit cannot be taken back: say so, or a caller retrying does the write twice.
                if hasattr(exc, "add_note"):  # Python 3.11+
                    exc.add_note(
                        f"lethe: version {self._version} of {self._name!r} was committed; on_evict failed after it"
                    )
                raise

    def _head(self, new: Memory[K, V], tip: str) -> str:
        """The head of ``new``, the version whose tip is ``tip``, to commit.

        Raises:
            StoreError: a counter went past what a store keeps (the head it was made from
                was damaged so), and nothing is written: a head no replica could read.
        """
        try:
            return _records.head(snapshot_of(new), tip)
        except ValueError as exc:
            raise StoreError(f"{self._name!r}: {exc}; nothing was written") from None

    def _heard(self, evicted: tuple[Entry[K, V], ...]) -> None:
        """The ``on_evict`` of the memories ``fn`` works on: each operation's evictions, kept."""
        self._attempt.extend(evicted)

    def _evicted_by(self, new: Memory[K, V]) -> tuple[Entry[K, V], ...]:
        """What the operations that made ``new`` evicted: every entry an operation of this
        attempt evicted, unless ``new`` still holds it (evicted on a version ``fn`` dropped),
        each once, in the order they were evicted."""
        if not self._attempt:
            return ()
        held = snapshot_of(new).entries
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
            self._call(self._store.compact, gap)
        except StoreError:
            # The commit stands and must be reported (and on_evict called): compaction is tried
            # again after the next commit (the server went away, or another writer held a lock).
            return
        self._checkpointed = self._version  # written here or by someone else lately

    async def atransact(self, fn: Callable[[Memory[K, V]], tuple[Memory[K, V], R]]) -> R:
        """:meth:`transact` in a worker thread (``asyncio.to_thread``): the event loop
        keeps running while the store is written; ``fn`` runs in that thread.

        Cancelled (``task.cancel()``, ``asyncio.timeout``), it stops at its next
        step: a commit not yet sent is never sent, one already on its way is
        made.  Either way the :class:`asyncio.CancelledError` comes once the
        worker thread stopped, so the replica then shows which (read
        :meth:`current` before writing again); on Python 3.11+ the error
        carries a note that says it (under ``asyncio.timeout``, the
        ``TimeoutError``'s ``__context__`` is that error).
        """
        return await self._in_thread(lambda cancel: self._transact(fn, cancel))

    async def aupdate(self, fn: Callable[[Memory[K, V]], Memory[K, V]]) -> Memory[K, V]:
        """:meth:`update` in a worker thread (``asyncio.to_thread``): the event loop
        keeps running while the store is written; ``fn`` runs in that thread.
        A cancellation is as for :meth:`atransact`: no commit not yet sent is sent.

        >>> import asyncio
        >>> from lethe import Memory
        >>> from lethe.store import InMemoryStore, Shared
        >>> shared = Shared(InMemoryStore(), "notes", Memory())
        >>> asyncio.run(shared.aupdate(lambda m: m.put("v", key="k"))).peek("k").value
        'v'
        """
        return await self._in_thread(lambda cancel: self._update(fn, cancel))

    async def _in_thread(self, write: Callable[[_Cancel], R]) -> R:
        """``write(cancel)`` in a worker thread; cancelled, ``cancel`` is requested, the worker
        is awaited, and the cancellation goes on with a note of what was committed."""
        cancel = _Cancel()
        worker = asyncio.ensure_future(asyncio.to_thread(write, cancel))
        # Read whatever the worker ends with, even when nobody awaits it any more.
        worker.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            return await asyncio.shield(worker)
        except asyncio.CancelledError as cancelled:
            cancel.requested.set()
            await asyncio.wait({worker})  # cancelled again meanwhile: the worker finishes alone
            if hasattr(cancelled, "add_note"):  # Python 3.11+
                cancelled.add_note(f"lethe: {self._name!r}: {_outcome(worker.exception(), cancel)}")
            raise

    async def await_change(self, timeout: float | None = None) -> bool:
        """:meth:`wait` for asyncio: wait until a version after the one this replica had
        when called is committed, by any process, and catch up to it.

        It polls the store (one short read in a worker thread, every 1 ms at
        first, backing off to 50 ms) and sleeps on the event loop in between,
        so a cancelled wait leaves no thread behind beyond that one read, and
        ``asyncio.run()`` ends at once.

        Args:
            timeout: Seconds to wait at most; None waits until a commit.

        Returns:
            True once the replica moved on, False when ``timeout`` passed first.

        Raises:
            ValueError: ``timeout`` is negative or not a number.
            StoreError: as :meth:`wait`.

        >>> import asyncio
        >>> from lethe import Memory
        >>> from lethe.store import InMemoryStore, Shared
        >>> store = InMemoryStore()
        >>> follower = Shared(store, "notes", Memory())
        >>> asyncio.run(follower.await_change(timeout=0))
        False
        """
        deadline = None if timeout is None else time.monotonic() + _checked_wait(timeout)
        start = self._version
        pause = _FIRST_POLL
        check = True  # the first poll catches up whatever the store says, as wait() does
        while True:
            if await asyncio.to_thread(self._moved, start, check):
                return True
            check = False
            left = math.inf if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return False
            await asyncio.sleep(min(pause, left))
            pause = min(2 * pause, _LAST_POLL)

    def _moved(self, start: int, check: bool) -> bool:
        """Whether the replica moved past ``start``, catching up when the store did (or
        ``check``: a memory made again may be back at ``start``): one short read, and never a
        wait for a write of this object in another thread."""
        if self._version != start:
            return True
        latest = self._call(self._store.wait, start, 0.0)
        if (latest == start and not check) or not self._lock.acquire(blocking=False):
            return False  # nothing new, or a write of this object runs: it catches up; look again
        try:
            self._catch_up()
            if self._version == start:
                self._stalled(start, latest)
            return self._version != start
        finally:
            self._lock.release()

    # -- lifetime ---------------------------------------------------------

    def reopened(self) -> Shared[K, V]:
        """A new ``Shared`` of the same store and name, with this one's options
        (``checkpoint_every``, ``max_clock_skew``, ``locking``) and, for template, the
        configuration this replica last saw (a :meth:`configure` by another process
        included) with this process's hooks and no entries.

        After :class:`~lethe.store.MemoryGone` (the memory was dropped, or a server
        restarted without it) it makes the memory afresh, empty, as it was configured;
        when another process made it again meanwhile it opens that one.  This object is
        left as it is: close it when done with it.  O(1) plus the open.

        Raises:
            ValueError: the name now holds a memory of another configuration.
            StoreError: this object is closed, or the store cannot be read.

        >>> from lethe import Memory
        >>> from lethe.store import InMemoryStore, MemoryGone, Shared
        >>> store = InMemoryStore()
        >>> shared = Shared(store, "notes", Memory(max_entries=10))
        >>> _ = shared.update(lambda m: m.put("node 7 fixed"))
        >>> store.drop("notes")
        True
        >>> try:
        ...     shared.current()
        ... except MemoryGone:
        ...     shared = shared.reopened()
        >>> len(shared.current()), shared.current().max_entries
        (0, 10)
        """
        with self._lock:
            self._refuse_if_closed()
            template = self._replica.clear()
        return Shared(
            self._store,
            self._name,
            template,
            checkpoint_every=self._checkpoint_every,
            max_clock_skew=self._max_clock_skew,
            locking=self._locking,
        )

    def close(self) -> None:
        """Stop using this object: every later read or write raises :class:`StoreError`.

        The store stays open (other ``Shared`` objects may use it): close it
        yourself.  ``with Shared(...) as shared:`` closes on leaving the block.
        A :meth:`wait` in another thread raises within a second.
        """
        self._closed = True

    def __enter__(self) -> Shared[K, V]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _after_fork_in_child(self) -> None:
        """Make this object usable in a forked child: a lock another thread held at the fork
        stays held by a thread the child does not have (a child forked from inside a write of
        the thread that forked holds it too, and never returns to that write: it starts anew)."""
        self._lock = threading.RLock()
        self._summaries.clear()
        self._attempt.clear()

    def __repr__(self) -> str:
        return f"Shared({self._store!r}, {self._name!r}, version={self._version})"
