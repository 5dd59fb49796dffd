"""The default engine: one SQLite file, many named memories, shared by the processes of one host."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from lethe._validate import flag
from lethe.store._engine import FORMAT, VERSION, check_format, checked_timeout, config_missing
from lethe.store._errors import StoreError

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS memories (name TEXT PRIMARY KEY, config TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS entries (name TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL,"
    " PRIMARY KEY (name, seq)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS log (name TEXT NOT NULL, version INTEGER NOT NULL, head TEXT NOT NULL,"
    " record TEXT NOT NULL, PRIMARY KEY (name, version)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS checkpoints (name TEXT NOT NULL, version INTEGER NOT NULL, head TEXT NOT NULL,"
    " PRIMARY KEY (name, version))",
    "CREATE TABLE IF NOT EXISTS checkpoint_entries (name TEXT NOT NULL, version INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " entry TEXT NOT NULL, PRIMARY KEY (name, version, seq)) WITHOUT ROWID",
)
_TABLES = frozenset({"meta", "memories", "entries", "log", "checkpoints", "checkpoint_entries"})

#: The largest int SQLite keeps (a version, a put order): an argument past it is read as it.
_MAX_INT = 2**63 - 1

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


def _int(n: int) -> int:
    """``n`` within the ints SQLite binds (a version asked for past them is past every one kept)."""
    return min(max(n, -_MAX_INT - 1), _MAX_INT)


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
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._closed = False
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
        process opening a new store) has it: tried again until ``timeout``."""
        deadline = time.monotonic() + self.timeout
        pause = 0.001
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                left = deadline - time.monotonic()
                if "locked" not in str(exc) or left <= 0:
                    raise
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.05)

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
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?), ('version', ?)", (FORMAT, str(VERSION)))
            tables = set(_TABLES)
        if not tables >= _TABLES:
            raise StoreError(f"{self.path}: not a lethe store (an SQLite database of other tables or views)")
        check_format(dict(conn.execute("SELECT key, value FROM meta").fetchall()), f"{self.path}: ")

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
        _OPEN.discard(self)

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        read_only = ", read_only=True" if self.read_only else ""
        return f"SQLiteStore({str(self.path)!r}, durable={self.durable}{read_only})"

    # -- the engine -------------------------------------------------------

    def names(self) -> list[str]:
        """See :meth:`lethe.store.Store.names`."""
        with self._lock, self._reporting():
            rows = self._connection().execute("SELECT name FROM memories ORDER BY name").fetchall()
        return [row[0] for row in rows]

    def config(self, name: str) -> str:
        """See :meth:`lethe.store.Store.config`."""
        with self._lock, self._reporting():
            row = self._connection().execute("SELECT config FROM memories WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise KeyError(name)
        return self._text(row[0], name, "configuration")

    def open(self, name: str, config: str, head: str, rows: Sequence[tuple[int, str]]) -> str:
        """See :meth:`lethe.store.Store.open`."""
        with self._lock, self._reporting():
            conn = self._connection()
            row = conn.execute("SELECT config FROM memories WHERE name = ?", (name,)).fetchone()
            if row is not None:
                return self._text(row[0], name, "configuration")
            self._refuse_writes()
            with _writing(conn, self.timeout):
                row = conn.execute("SELECT config FROM memories WHERE name = ?", (name,)).fetchone()
                if row is None and self._remains(conn, name):
                    raise StoreError(config_missing(name, f"{self.path}: "))
                if row is None:
                    conn.execute("INSERT INTO memories VALUES (?, ?)", (name, config))
                    conn.executemany("INSERT INTO entries VALUES (?, ?, ?)", ((name, seq, r) for seq, r in rows))
                    conn.execute("INSERT INTO checkpoints VALUES (?, 0, ?)", (name, head))
                    conn.execute(
                        "INSERT INTO checkpoint_entries SELECT name, 0, seq, entry FROM entries WHERE name = ?", (name,)
                    )
            return config if row is None else self._text(row[0], name, "configuration")

    @staticmethod
    def _remains(conn: sqlite3.Connection, name: str) -> bool:
        """Whether any row of ``name`` but its configuration is in the file."""
        return any(
            conn.execute(f"SELECT 1 FROM {table} WHERE name = ? LIMIT 1", (name,)).fetchone() is not None
            for table in ("log", "checkpoints", "entries", "checkpoint_entries")
        )

    def _head(self, conn: sqlite3.Connection, name: str) -> tuple[int, str]:
        """The latest version of ``name`` and its head: the newest log row, else the newest checkpoint."""
        row = conn.execute(
            "SELECT version, head FROM log WHERE name = ? ORDER BY version DESC LIMIT 1", (name,)
        ).fetchone() or conn.execute(
            "SELECT version, head FROM checkpoints WHERE name = ? ORDER BY version DESC LIMIT 1", (name,)
        ).fetchone()
        if row is None:
            raise KeyError(name)
        return self._version(row[0], name, "latest version"), self._text(row[1], name, "head")

    def _damaged(self, name: str, what: str) -> StoreError:
        return StoreError(f"{self.path}: {name!r}: the store is damaged: {what}")

    def _version(self, value: object, name: str, what: str) -> int:
        """A version as read from a column: SQLite keeps whatever another client wrote there."""
        if type(value) is not int:
            raise self._damaged(name, f"its {what} is {str(value)[:24]!r}, not a version number")
        return value

    def _text(self, value: object, name: str, what: str) -> str:
        """A head, record or configuration as read from a column (a BLOB or a number is refused)."""
        if type(value) is not str:
            raise self._damaged(name, f"its {what} is {type(value).__name__}, not text")
        return value

    def load(self, name: str) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.load`.  The rows are given back as the columns hold them
        (the reader checks each put order and text)."""
        with self._lock, self._reporting():
            conn = self._connection()
            with _reading(conn):
                version, head = self._head(conn, name)
                rows: list[tuple[int, str]] = conn.execute(
                    "SELECT seq, entry FROM entries WHERE name = ?", (name,)
                ).fetchall()
        return version, head, rows

    def read(self, name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
        """See :meth:`lethe.store.Store.read`."""
        high = _MAX_INT if upto is None else _int(upto)
        with self._lock, self._reporting():
            conn = self._connection()
            rows: list[tuple[int, str]] = conn.execute(
                "SELECT version, record FROM log WHERE name = ? AND version > ? AND version <= ? ORDER BY version",
                (name, _int(after), high),
            ).fetchall()
            if not rows and conn.execute("SELECT 1 FROM memories WHERE name = ?", (name,)).fetchone() is None:
                raise KeyError(name)
        for version, record in rows:
            if type(version) is not int or type(record) is not str:
                self._version(version, name, "log version")
                self._text(record, name, f"log record {version}")
        return rows

    def append(
        self,
        name: str,
        version: int,
        record: str,
        head: str,
        written: Sequence[tuple[int, str]],
        removed: Sequence[int],
        config: str | None = None,
    ) -> bool:
        """See :meth:`lethe.store.Store.append`."""
        with self._lock, self._reporting():
            conn = self._connection()
            self._refuse_writes()
            with _writing(conn, self.timeout):
                # The compare-and-swap: the record goes in at exactly the version after the latest.
                latest, _ = self._head(conn, name)
                if latest != version - 1:
                    return False  # another writer got there first (nothing written)
                if version > _MAX_INT:
                    raise self._damaged(name, f"its latest version is {latest}, the last one SQLite keeps")
                conn.execute("INSERT INTO log VALUES (?, ?, ?, ?)", (name, version, head, record))
                if config is not None:
                    conn.execute("UPDATE memories SET config = ? WHERE name = ?", (config, name))
                for seq in removed:  # one or two rows a commit: execute is cheaper than executemany
                    conn.execute("DELETE FROM entries WHERE name = ? AND seq = ?", (name, seq))
                for seq, row in written:
                    conn.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?)", (name, seq, row))
            return True

    def wait(self, name: str, after: int, timeout: float) -> int:
        """See :meth:`lethe.store.Store.wait`.

        SQLite tells no other connection of a commit: this polls the latest
        version, first every 0.5 ms, then less often, up to every 20 ms.
        """
        deadline = time.monotonic() + timeout
        pause = 0.0005
        while True:
            with self._lock, self._reporting():
                version, _ = self._head(self._connection(), name)
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
        high = _MAX_INT if at_most is None else _int(at_most)
        with self._lock, self._reporting():
            conn = self._connection()
            with _reading(conn):
                row = conn.execute(
                    "SELECT version, head FROM checkpoints WHERE name = ? AND version <= ?"
                    " ORDER BY version DESC LIMIT 1",
                    (name, high),
                ).fetchone()
                if row is None:
                    raise KeyError(name if at_most is None else at_most)
                rows: list[tuple[int, str]] = conn.execute(
                    "SELECT seq, entry FROM checkpoint_entries WHERE name = ? AND version = ?", (name, row[0])
                ).fetchall()
        return self._version(row[0], name, "checkpoint"), self._text(row[1], name, "checkpoint's head"), rows

    def compact(self, name: str, min_gap: int) -> bool:
        """See :meth:`lethe.store.Store.compact`."""
        with self._lock, self._reporting():
            conn = self._connection()
            self._refuse_writes()
            with _writing(conn, self.timeout):
                version, head = self._head(conn, name)
                newest = conn.execute("SELECT max(version) FROM checkpoints WHERE name = ?", (name,)).fetchone()[0]
                newest = self._version(newest, name, "newest checkpoint")
                if version - newest < min_gap:
                    return False  # nothing written
                conn.execute("INSERT INTO checkpoints VALUES (?, ?, ?)", (name, version, head))
                conn.execute(
                    "INSERT INTO checkpoint_entries SELECT name, ?, seq, entry FROM entries WHERE name = ?",
                    (version, name),
                )
                for table in ("checkpoint_entries", "checkpoints"):
                    conn.execute(f"DELETE FROM {table} WHERE name = ? AND version < ?", (name, newest))
                conn.execute("DELETE FROM log WHERE name = ? AND version <= ?", (name, newest))
            return True

    def drop(self, name: str) -> bool:
        """See :meth:`lethe.store.Store.drop`: one write transaction."""
        with self._lock, self._reporting():
            conn = self._connection()
            self._refuse_writes()
            with _writing(conn, self.timeout):
                removed = sum(
                    conn.execute(f"DELETE FROM {table} WHERE name = ?", (name,)).rowcount
                    for table in ("memories", "entries", "log", "checkpoints", "checkpoint_entries")
                )
            return removed > 0


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
