"""The default engine: one SQLite file, many named memories, shared by the processes of one host."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TypeVar

from lethe._core.validate import flag
from lethe.store._engine import check_format, checked_timeout
from lethe.store._errors import StoreError
from lethe.store._lock import PATIENCE, FileLocks, Held
from lethe.store._retry import Retry
from lethe.store._sql import MAX_INT, SQL, Dialect

T = TypeVar("T")

#: How SQLite says what differs: no table prefix (the file is lethe's alone), and the tables
#: looked up by their primary key kept in its order alone (``WITHOUT ROWID``).  Its write
#: transaction (``BEGIN IMMEDIATE``) holds the whole file, so no lock is taken inside one and no
#: writer loses to another; a commit is seen by polling.
DIALECT = Dialect(
    mark="?",
    integer="INTEGER",
    keyed=" WITHOUT ROWID",
    insert_new="INSERT OR IGNORE INTO {table} VALUES {values}",
)

#: SQLite's commit (see SQLiteStore.append), in the statements of its dialect.
_LOG = "INSERT INTO log VALUES (?, ?, ?, ?)"
_SET_CONFIG = "UPDATE memories SET config = ? WHERE name = ?"
_REMOVE = "DELETE FROM entries WHERE name = ? AND seq = ?"
_WRITE = "INSERT OR REPLACE INTO entries VALUES (?, ?, ?)"
#: A number of the connection's that changes when another connection commits to the file.
_DATA_VERSION = "PRAGMA data_version"


def _data_version(conn: sqlite3.Connection) -> int:
    """``conn``'s data_version now."""
    found: int = conn.execute(_DATA_VERSION).fetchone()[0]
    return found

# Every open store, so that no connection is open across os.fork (see _before_fork).
_OPEN: weakref.WeakSet[SQLiteStore] = weakref.WeakSet()
# Connections found in a process that did not open them: kept referenced, never used or closed.
_INHERITED: list[sqlite3.Connection] = []



@contextmanager
def _writing(conn: sqlite3.Connection, timeout: float) -> Iterator[None]:
    """One write transaction: ``BEGIN IMMEDIATE`` (the write lock at once, so no deadlock
    on upgrading a read), committed when the block ends, rolled back when it raises.

    Raises:
        StoreError: another writer held the lock for ``timeout`` seconds.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc):
            raise
        raise StoreError(f"the database stayed locked by another writer for {timeout} s") from None
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextmanager
def _reading(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: every query in the block sees the same version of the file."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def _busy(exc: Exception) -> bool:
    """Whether ``exc`` is SQLite saying another connection holds the lock it needs."""
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


class SQLiteStore:
    """A :class:`~lethe.store.Store` in one SQLite file: many named memories, many processes.

    The file holds six tables: ``meta`` (the format and its version),
    ``memories`` (each name's configuration), ``entries`` (the current
    entries, one row each), ``log`` (one row per committed version with the
    head after it, primary key ``(name, version)``; the newest row is never
    compacted away) and ``checkpoints`` with ``checkpoint_entries`` (copies
    of the state at some versions, version 0 among them until compacted).  It runs in WAL mode, so readers never
    wait for a writer and a writer waits at most ``timeout`` seconds for
    another; an append is one short ``BEGIN IMMEDIATE`` transaction.

    Durability: with ``durable=False`` (the default, ``synchronous=NORMAL``)
    a commit survives the crash of any process, but the last commits before a
    power loss or an operating-system crash may be lost (never half of one).
    ``durable=True`` (``synchronous=FULL``) syncs the write-ahead log to disk
    on every commit: a commit then survives power loss too, at the cost of
    one fsync per commit (from about 0.1 ms on a fast SSD to 10 ms and more
    on a disk or a network volume).

    Processes: a connection is never used in a process other than the one
    that opened it.  Before ``os.fork`` (``multiprocessing``'s ``fork``
    start method included) every open store closes its connection; each
    process reopens its own on first use.  Close a store with :meth:`close`
    (or use it as a context manager) rather than leaving it to the garbage
    collector; every method raises :class:`~lethe.store.StoreError` after it.

    :meth:`drop` removes a memory's rows from every table in one write
    transaction.  A memory whose configuration row is gone while other rows of
    it are not is damaged: :meth:`open` refuses it (nothing is reset), and
    :meth:`drop` removes what is left.

    Read-only: with ``read_only=True``, or when the file exists but this
    process cannot write it (a read-only volume, a file without write
    permission or marked immutable, or a directory where the write-ahead
    log's ``-wal`` and ``-shm`` files cannot be made and are not there
    already), the store is opened for reading only (:attr:`read_only` says
    so): :class:`~lethe.store.Shared` reads it (``current``, ``at``,
    ``evictions``, ``wait``), and every write (a commit, a new name, a
    compaction, :meth:`drop`) raises :class:`~lethe.store.StoreError`
    saying the store is read-only, with nothing written.  The file is read
    through SQLite's ``mode=ro``, which reads the write-ahead log of a writer
    still at work through its ``-shm`` file; where that file cannot be made
    (a read-only directory or volume) and there is no write-ahead log, the
    file is read as ``immutable=1`` (without locks: a file on read-only
    media does not change).  A write-ahead log that holds commits but has no
    ``-shm`` beside it, in a directory where none can be made, is refused
    (:class:`~lethe.store.StoreError`): SQLite would read the file without
    those commits.  Open the store once where it is writable (closing folds
    the log into the file), or copy the file with its ``-wal``.

    Args:
        path: The database file (created if absent, unless read-only).
        durable: Sync every commit to disk (see above).
        timeout: Seconds to wait for a lock held by another connection.
        read_only: Never write to the file (it must be a lethe store
            already); a file this process cannot write is opened so anyway.

    Raises:
        StoreError: ``path`` is not a lethe store (not SQLite, or SQLite with
            other tables), or was written by a newer lethe; nothing is written.

    >>> import tempfile, os
    >>> from lethe import Memory
    >>> from lethe.store import Shared, SQLiteStore
    >>> with tempfile.TemporaryDirectory() as tmp, SQLiteStore(os.path.join(tmp, "m.db")) as store:
    ...     shared = Shared(store, "notes", Memory())
    ...     _ = shared.update(lambda m: m.put("v", key="k"))
    ...     Shared(store, "notes", Memory()).current().peek("k").value
    'v'
    """

    def __init__(
        self, path: str | os.PathLike[str], *, durable: bool = False, timeout: float = 30.0, read_only: bool = False
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or an os.PathLike, got {type(path).__name__}")
        self.path = Path(path)
        self.durable = flag(durable, "durable")
        self.timeout = checked_timeout(timeout)
        #: Whether the store is open for reading only: asked for, or the file cannot be written.
        self.read_only = flag(read_only, "read_only")
        self._asked_read_only = self.read_only
        self._sql = SQL(DIALECT, where=f"{self.path}: ")
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._closed = False
        # Each memory's latest version and head as this object last read or committed them,
        # after the connection's data_version then (see latest_known).
        self._seen: dict[str, tuple[int, int, str]] = {}
        self._locks = FileLocks(str(self.path), patience=min(self.timeout, PATIENCE), limit=self.timeout)
        with self._lock:
            self._connection()
        _OPEN.add(self)

    # -- connections ------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """This process's connection, opened (and the file checked) on first use; hold the lock."""
        if self._closed:
            raise StoreError(f"{self.path}: the store is closed")
        if self._conn is not None and self._pid != os.getpid():
            _INHERITED.append(self._conn)  # another process's: closing it here could hurt it
            self._conn = None
        if self._conn is None:
            self._seen.clear()  # (another connection's data_version)
            self._conn = self._connect()
            self._pid = os.getpid()
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        if not self.read_only and self._unwritable():
            self.read_only = True
        if self.read_only:
            return self._connect_read_only()
        conn = self._open(self.path)
        try:
            with self._reporting():
                self._check(conn)
                self._wal(conn)
            conn.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
            # SQLite copies its write-ahead log into the file every 1,000 pages by default (a
            # 4 MB -wal, ten times a 1,000-entry memory); every 256 pages and back to 1 MB keeps
            # the -wal that small for a few µs a commit.
            conn.execute("PRAGMA wal_autocheckpoint = 256")
            conn.execute(f"PRAGMA journal_size_limit = {1 << 20}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _open(self, target: str | Path, uri: bool = False) -> sqlite3.Connection:
        try:
            return sqlite3.connect(target, timeout=self.timeout, isolation_level=None, check_same_thread=False, uri=uri)
        except sqlite3.Error as exc:  # a directory, or one that does not exist
            raise StoreError(f"{self.path}: cannot open the database file ({exc})") from None

    def _unwritable(self) -> bool:
        """Whether the file exists and this process cannot write it: the file itself, or the
        ``-wal`` and ``-shm`` files every write goes through, neither there to be written nor
        to be made in its directory.  (The operating system says: a read-only volume, missing
        permissions, an immutable file; root is refused only by the first and the last.)"""
        path = str(self.path)
        if not os.path.exists(path):
            return False  # created, or refused, as ever
        if not os.access(path, os.W_OK):
            return True
        if all(os.access(path + side, os.W_OK) for side in ("-wal", "-shm")):
            return False
        return not os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)

    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection that never writes: ``mode=ro``, or ``immutable=1`` where SQLite cannot make
        the ``-shm`` file it reads a write-ahead log through and there is no such log to read."""
        uri = self.path.resolve().as_uri()
        conn = self._open(f"{uri}?mode=ro", uri=True)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:
            conn.close()
            # The -shm file cannot be made: "unable to open" on a read-only volume, "readonly"
            # (SQLITE_READONLY_CANTINIT) in a directory without write permission.
            if "unable to open" not in str(exc) and "readonly" not in str(exc):
                raise StoreError(f"{self.path}: not a lethe store ({exc})") from None
            wal = f"{self.path}-wal"
            if os.path.exists(wal) and os.path.getsize(wal) > 0:
                raise StoreError(
                    f"{self.path}: cannot be read here: its write-ahead log ({wal}) holds commits that are not in "
                    "the file yet, and SQLite reads it through a -shm file it cannot make in this directory; open "
                    "the store once where it is writable (closing it folds the log into the file), or copy the "
                    "file together with its -wal to where it is"
                ) from None
            conn = self._open(f"{uri}?mode=ro&immutable=1", uri=True)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{self.path}: not a lethe store ({exc})") from None
        try:
            with self._reporting():
                self._check(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _refuse_writes(self) -> None:
        """Raise :class:`StoreError` for a write to a read-only store (before anything is written)."""
        if self.read_only:
            why = "opened with read_only=True" if self._asked_read_only else "this process cannot write the file"
            raise StoreError(f"{self.path}: the store is read-only ({why}); nothing was written")

    def _wal(self, conn: sqlite3.Connection) -> None:
        """Put the file in WAL mode (it stays so).  The switch needs the file to itself and SQLite
        answers "locked" at once, not after its busy timeout, while another connection (another
        process opening a new store) has it: tried again until ``timeout``, every 1 ms, then
        twice as long up to every 50 ms (a file opened locally: no jitter needed)."""
        retry = Retry(self.timeout, first=0.001, least=0.001, most=0.05, jitter=0.0)
        retry.call(lambda: conn.execute("PRAGMA journal_mode=WAL"), _busy)

    @contextmanager
    def _reporting(self) -> Iterator[None]:
        """SQLite's own errors as :class:`StoreError` naming the file: a damaged file or row
        (bytes that are not UTF-8 text, a malformed page), a lock held past ``timeout``, a full disk."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if "locked" in str(exc):
                raise StoreError(f"{self.path}: the database stayed locked for {self.timeout} s ({exc})") from None
            raise StoreError(f"{self.path}: {exc}") from None

    def _check(self, conn: sqlite3.Connection) -> None:
        """Check the file is a lethe store this lethe reads (creating one in an empty file)."""
        try:
            found = conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchall()
            marked = any(conn.execute(f"PRAGMA {name}").fetchone()[0] for name in ("user_version", "application_id"))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a lethe store ({exc})") from None
        tables = {name for kind, name in found if kind == "table"}
        if not found and marked:  # an empty database another program has claimed
            raise StoreError(
                f"{self.path}: not a lethe store (an SQLite database with no tables, of another program:"
                " its user_version or application_id is set)"
            )
        if not found and self.read_only:
            raise StoreError(f"{self.path}: not a lethe store (an SQLite database without tables, read-only)")
        if not found:
            with _writing(conn, self.timeout):
                self._sql.create(conn)
            tables = set(self._sql.q.tables)
        if not tables >= self._sql.q.tables:
            raise StoreError(f"{self.path}: not a lethe store (an SQLite database of other tables or views)")
        check_format(self._sql.meta(conn), f"{self.path}: ")

    def _close_for_fork(self) -> None:
        self._lock.acquire()
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
            self._conn = None

    def _after_fork(self, child: bool) -> None:
        if child:
            self._lock = threading.Lock()
            self._pid = os.getpid()
        else:
            self._lock.release()

    def close(self) -> None:
        """Close this process's connection; the store is not used again."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
            self._closed = True
        self._locks.close()
        _OPEN.discard(self)

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        read_only = ", read_only=True" if self.read_only else ""
        return f"SQLiteStore({str(self.path)!r}, durable={self.durable}{read_only})"

    # -- the engine -------------------------------------------------------

    def _run(self, work: Callable[[sqlite3.Connection], T], *, write: bool = False, snapshot: bool = False) -> T:
        """``work(connection)`` under the lock, SQLite's errors as :class:`StoreError` (see
        :class:`lethe.store._sql.Run`): in a write transaction, refused by a read-only store; in
        a read transaction for a snapshot; else as it comes (each statement on its own)."""
        with self._lock, self._reporting():
            conn = self._connection()
            if write:
                self._refuse_writes()
                with _writing(conn, self.timeout):
                    return work(conn)
            if snapshot:
                with _reading(conn):
                    return work(conn)
            return work(conn)

    def names(self) -> list[str]:
        """See :meth:`lethe.store.Store.names`."""
        return self._sql.names(self._run)

    def config(self, name: str) -> str:
        """See :meth:`lethe.store.Store.config`."""
        return self._sql.config(self._run, name)

    def open(self, name: str, config: str, head: str, rows: Sequence[tuple[int, str]]) -> str:
        """See :meth:`lethe.store.Store.open`."""
        return self._sql.open(self._run, name, config, head, rows)

    def load(self, name: str) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.load`.  The rows are given back as the columns hold them
        (the reader checks each put order and text)."""
        return self._sql.load(self._run, name)

    def read(self, name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
        """See :meth:`lethe.store.Store.read`."""
        if upto is not None:
            return self._sql.read(self._run, name, after, upto)

        def work(conn: sqlite3.Connection) -> list[tuple[int, str]]:
            seen = _data_version(conn)  # (before: a commit after it shows)
            rows = self._sql.records(self._sql.read_on(conn, name, after), name)
            if rows:
                latest, head = self._sql.head(conn, name)
                if latest == rows[-1][0]:
                    self._saw(name, seen, latest, head)
            return rows

        return self._run(work)

    def _saw(self, name: str, data_version: int, version: int, head: str) -> None:
        """Note that ``name`` was at ``version`` whose head is ``head`` when the connection's
        data_version was ``data_version`` (hold the lock)."""
        if len(self._seen) >= 1024 and name not in self._seen:  # (a store of many names: kept small)
            self._seen.clear()
        self._seen[name] = (data_version, version, head)

    def latest_known(self, name: str) -> tuple[int, str] | None:
        """The latest version of ``name`` and its head if this object knows them without reading
        the log, else None: those it last read or committed, while no other connection has
        committed to the file since (SQLite's ``data_version``).  :class:`~lethe.store.Shared`
        holding the writer lock skips its catch-up then (about 13 µs of a commit's 180 µs).
        O(1): one statement that reads no table.

        >>> import os, tempfile
        >>> from lethe import Memory
        >>> from lethe.store import Shared, SQLiteStore
        >>> with tempfile.TemporaryDirectory() as tmp, SQLiteStore(os.path.join(tmp, "m.db")) as store:
        ...     shared = Shared(store, "notes", Memory())
        ...     _ = shared.update(lambda m: m.put("v", key="k"))
        ...     store.latest_known("notes")[0], store.latest_known("other")
        (1, None)
        """
        with self._lock, self._reporting():
            seen = self._seen.get(name)
            if seen is None or self._closed:
                return None
            conn = self._connection()
            if self._seen.get(name) is not seen:
                return None  # (a new connection)
            return (seen[1], seen[2]) if _data_version(conn) == seen[0] else None

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
        with self._lock, self._reporting():
            conn = self._connection()
            self._refuse_writes()
            with _writing(conn, self.timeout):
                # The compare-and-swap: the record goes in at exactly the version after the latest.
                latest, held = self._sql.head(conn, name)
                if latest != version - 1 or (parent is not None and held != parent):
                    return False  # another writer got there first (nothing written)
                if version > MAX_INT:
                    raise self._sql.damaged(name, f"its latest version is {latest}, the last one SQLite keeps")
                conn.execute(_LOG, (name, version, head, record))
                if config is not None:
                    conn.execute(_SET_CONFIG, (config, name))
                for seq in removed:  # one or two rows a commit: execute is cheaper than executemany
                    conn.execute(_REMOVE, (name, seq))
                for seq, row in written:
                    conn.execute(_WRITE, (name, seq, row))
                # No other connection commits while this one writes, and its own commit leaves
                # its data_version as it is.
                seen = _data_version(conn)
            self._saw(name, seen, version, head)
            return True

    def lock(self, name: str, waiting: Callable[[], object] | None = None) -> Held | AbstractContextManager[bool]:
        """Hold the writer lock of the memory ``name`` for a ``with`` block, against the writers
        of every thread and process of this host; the block gets whether it is held.

        :class:`~lethe.store.Shared` takes it around each write (unless made with
        ``locking=False``), so its function runs once per commit however many writers race.
        It is a byte of a side file, ``<path>-lethe-lock``, per memory; the system releases it
        when its process dies, and a writer that waits for it a second (or ``timeout``, when
        shorter) while it does not change hands goes on without it (a commit never depends on
        it: see ``Store.append``); while it changes hands the wait goes on, up to ``timeout``.
        A read-only store holds none.  Reentrant within a thread.  ``waiting`` is called
        between tries while another writer holds it, and returns whether the memory moved on
        meanwhile (a commit went in: the lock changed hands).
        """
        if self.read_only:
            return nullcontext(False)
        return self._locks.held(name, waiting)

    def wait(self, name: str, after: int, timeout: float) -> int:
        """See :meth:`lethe.store.Store.wait`.

        SQLite tells no other connection of a commit: this polls the latest
        version, first every 0.5 ms, then less often, up to every 20 ms.
        """
        deadline = time.monotonic() + timeout
        pause = 0.0005
        while True:
            with self._lock, self._reporting():
                version, _ = self._sql.head(self._connection(), name)
            left = deadline - time.monotonic()
            if version != after or left <= 0:
                return version
            time.sleep(min(pause, left))
            pause = min(pause * 1.5, 0.02)

    def time(self) -> float:
        """See :meth:`lethe.store.Store.time`: this host's clock (SQLite's file lives on this host)."""
        if self._closed:
            raise StoreError(f"{self.path}: the store is closed")
        return time.time()

    def checkpoint(self, name: str, at_most: int | None = None) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.checkpoint`."""
        return self._sql.checkpoint(self._run, name, at_most)

    def compact(self, name: str, min_gap: int) -> bool:
        """See :meth:`lethe.store.Store.compact`."""
        return self._sql.compact(self._run, name, min_gap)

    def drop(self, name: str) -> bool:
        """See :meth:`lethe.store.Store.drop`: one write transaction."""

        def run(work: Callable[[sqlite3.Connection], T], **how: bool) -> T:
            def forgetting(conn: sqlite3.Connection) -> T:
                self._seen.pop(name, None)  # (its own commit leaves data_version as it is)
                return work(conn)

            return self._run(forgetting, **how)

        return self._sql.drop(run, name)


_FORKING: list[SQLiteStore] = []


def _before_fork() -> None:
    _FORKING[:] = sorted(_OPEN, key=id)
    for store in _FORKING:
        store._close_for_fork()


def _after_fork_in_parent() -> None:
    for store in _FORKING:
        store._after_fork(child=False)
    _FORKING.clear()


def _after_fork_in_child() -> None:
    for store in _FORKING:
        store._after_fork(child=True)
    _FORKING.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)
