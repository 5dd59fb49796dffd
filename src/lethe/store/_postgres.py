"""An engine on PostgreSQL: many named memories in one database, shared by processes on many hosts.

Needs the ``postgres`` extra (psycopg 3): ``pip install 'lethe-decay[postgres]'``.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from lethe.store._engine import FORMAT, VERSION, check_format
from lethe.store._errors import StoreError

try:
    import psycopg
    from psycopg import errors as _errors
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("PostgresStore needs psycopg 3: pip install 'lethe-decay[postgres]'") from exc

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS lethe_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS lethe_memories (name TEXT PRIMARY KEY, config TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS lethe_entries (name TEXT NOT NULL, seq BIGINT NOT NULL, entry TEXT NOT NULL,"
    " PRIMARY KEY (name, seq))",
    "CREATE TABLE IF NOT EXISTS lethe_log (name TEXT NOT NULL, version BIGINT NOT NULL, head TEXT NOT NULL,"
    " record TEXT NOT NULL, PRIMARY KEY (name, version))",
    "CREATE TABLE IF NOT EXISTS lethe_checkpoints (name TEXT NOT NULL, version BIGINT NOT NULL, head TEXT NOT NULL,"
    " PRIMARY KEY (name, version))",
    "CREATE TABLE IF NOT EXISTS lethe_checkpoint_entries (name TEXT NOT NULL, version BIGINT NOT NULL,"
    " seq BIGINT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (name, version, seq))",
)
#: The channel commits are announced on (the payload: the md5 of the memory's name).
_CHANNEL = "lethe_log"
#: Serializes the creation of the tables by several processes at once.
_SCHEMA_LOCK = 0x6C65_7468  # "leth"


class PostgresStore:
    """A :class:`~lethe.store.Store` in a PostgreSQL database: many named memories, many hosts.

    The tables (``lethe_memories``, ``lethe_entries``, ``lethe_log``,
    ``lethe_checkpoints``, ``lethe_checkpoint_entries``, ``lethe_meta``) are
    created on first use and live beside the database's other tables.  A
    commit is one transaction: the log row goes in under the primary key
    ``(name, version)``, which is the compare-and-swap (a writer that lost
    the race gets a unique violation and nothing of it is written), then the
    entry rows it changed.  A commit that returned is as durable as the
    server makes it (by default, on disk at commit).

    Processes: each process opens its own connection on first use; one
    inherited through ``fork`` is never used or closed by the child.

    Args:
        conninfo: A libpq connection string or URL
            (``"postgresql://user@host:5432/db"``).
        timeout: Seconds to wait to connect, and for a lock another writer holds.

    Raises:
        StoreError: the server cannot be reached, or the database holds a
            lethe store written by a newer lethe; nothing is written.
    """

    def __init__(self, conninfo: str, *, timeout: float = 30.0) -> None:
        self.conninfo = conninfo
        self.timeout = timeout
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        # A second connection, LISTENing for commits (see wait), opened on first use.
        self._listen_lock = threading.Lock()
        self._listener: psycopg.Connection[Any] | None = None
        self._listener_pid = os.getpid()
        self._pid = os.getpid()
        self._closed = False
        with self._lock:
            self._connection()

    # -- connections ------------------------------------------------------

    def _connection(self) -> psycopg.Connection[Any]:
        """This process's connection, opened (and the tables checked) on first use; hold the lock."""
        if self._closed:
            raise StoreError("the store is closed")
        if self._conn is not None and (self._pid != os.getpid() or self._conn.closed):
            if self._pid != os.getpid():
                _INHERITED.append(self._conn)  # another process's: closing it here would end its session
            self._conn = None
        if self._conn is None:
            self._conn = self._connect()
            self._pid = os.getpid()
        return self._conn

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(
                self.conninfo,
                autocommit=True,
                connect_timeout=max(1, round(self.timeout)),
                options=f"-c lock_timeout={int(self.timeout * 1000)}",
            )
        except psycopg.OperationalError as exc:
            raise StoreError(f"cannot connect to PostgreSQL: {str(exc).strip()}") from None
        try:
            self._check(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO lethe_meta VALUES ('format', %s), ('version', %s) ON CONFLICT (key) DO NOTHING",
                (FORMAT, str(VERSION)),
            )
            meta = dict(conn.execute("SELECT key, value FROM lethe_meta").fetchall())
        check_format(meta)

    @contextmanager
    def _transaction(self, snapshot: str = "") -> Iterator[psycopg.Connection[Any]]:
        """This process's connection inside one transaction (rolled back if the block raises);
        ``snapshot``: the isolation to ask for (``"REPEATABLE READ"``: one snapshot for every query)."""
        with self._lock:
            conn = self._connection()
            try:
                with conn.transaction():
                    if snapshot:
                        conn.execute(f"SET TRANSACTION ISOLATION LEVEL {snapshot}")
                    yield conn
            except _errors.LockNotAvailable:
                raise StoreError(f"the memory stayed locked by another writer for {self.timeout} s") from None

    def _listening(self) -> psycopg.Connection[Any]:
        """This process's connection that listens for commits; hold ``_listen_lock``."""
        if self._closed:
            raise StoreError("the store is closed")
        if self._listener is not None and (self._listener_pid != os.getpid() or self._listener.closed):
            if self._listener_pid != os.getpid():
                _INHERITED.append(self._listener)
            self._listener = None
        if self._listener is None:
            self._listener = self._connect()
            self._listener_pid = os.getpid()
            self._listener.execute(f"LISTEN {_CHANNEL}")
        return self._listener

    def close(self) -> None:
        """Close this process's connections; the store is not used again."""
        with self._listen_lock, self._lock:  # the order wait() takes them in
            for conn, pid in ((self._conn, self._pid), (self._listener, self._listener_pid)):
                if conn is not None and pid == os.getpid():
                    conn.close()
            self._conn = self._listener = None
            self._closed = True

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return "PostgresStore(...)"  # the connection string may hold a password

    # -- the engine -------------------------------------------------------

    def names(self) -> list[str]:
        """See :meth:`lethe.store.Store.names`."""
        with self._transaction() as conn:
            return [row[0] for row in conn.execute("SELECT name FROM lethe_memories ORDER BY name")]

    def config(self, name: str) -> str:
        """See :meth:`lethe.store.Store.config`."""
        with self._transaction() as conn:
            row = conn.execute("SELECT config FROM lethe_memories WHERE name = %s", (name,)).fetchone()
        if row is None:
            raise KeyError(name)
        return str(row[0])

    def open(self, name: str, config: str, head: str, rows: Sequence[tuple[int, str]]) -> str:
        """See :meth:`lethe.store.Store.open`."""
        with self._transaction() as conn:
            created = conn.execute(
                "INSERT INTO lethe_memories VALUES (%s, %s) ON CONFLICT (name) DO NOTHING RETURNING name",
                (name, config),
            ).fetchone()
            if created is None:
                row = conn.execute("SELECT config FROM lethe_memories WHERE name = %s", (name,)).fetchone()
                assert row is not None  # memories are never deleted
                return str(row[0])
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO lethe_entries VALUES (%s, %s, %s)", [(name, s, r) for s, r in rows])
            conn.execute("INSERT INTO lethe_checkpoints VALUES (%s, 0, %s)", (name, head))
            conn.execute(
                "INSERT INTO lethe_checkpoint_entries SELECT name, 0, seq, entry FROM lethe_entries WHERE name = %s",
                (name,),
            )
            return config

    def _head(self, conn: psycopg.Connection[Any], name: str) -> tuple[int, str]:
        row = conn.execute(
            "SELECT version, head FROM lethe_log WHERE name = %s ORDER BY version DESC LIMIT 1", (name,)
        ).fetchone() or conn.execute(
            "SELECT version, head FROM lethe_checkpoints WHERE name = %s ORDER BY version DESC LIMIT 1", (name,)
        ).fetchone()
        if row is None:
            raise KeyError(name)
        return int(row[0]), str(row[1])

    def load(self, name: str) -> tuple[int, str, list[str]]:
        """See :meth:`lethe.store.Store.load`."""
        with self._transaction("REPEATABLE READ READ ONLY") as conn:
            version, head = self._head(conn, name)
            rows = [r[0] for r in conn.execute("SELECT entry FROM lethe_entries WHERE name = %s", (name,))]
        return version, head, rows

    def read(self, name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
        """See :meth:`lethe.store.Store.read`."""
        high = 2**63 - 1 if upto is None else upto
        with self._lock:
            return [
                (int(v), str(r))
                for v, r in self._connection().execute(
                    "SELECT version, record FROM lethe_log WHERE name = %s AND version > %s AND version <= %s"
                    " ORDER BY version",
                    (name, after, high),
                )
            ]

    def append(
        self,
        name: str,
        version: int,
        record: str,
        head: str,
        written: Sequence[tuple[int, str]],
        removed: Sequence[int],
    ) -> bool:
        """See :meth:`lethe.store.Store.append`."""
        try:
            with self._transaction() as conn:
                latest, _ = self._head(conn, name)
                if latest != version - 1:
                    return False  # another writer got there first (nothing written)
                # The primary key is the compare-and-swap: of two writers that both read
                # version - 1 as the latest, the second gets a unique violation here.
                # The notification (see wait) is sent by the same statement, and delivered at commit.
                conn.execute(
                    "INSERT INTO lethe_log SELECT %s, %s, %s, %s FROM (SELECT pg_notify(%s, md5(%s))) AS notified",
                    (name, version, head, record, _CHANNEL, name),
                )
                for seq in removed:
                    conn.execute("DELETE FROM lethe_entries WHERE name = %s AND seq = %s", (name, seq))
                for seq, row in written:
                    conn.execute(
                        "INSERT INTO lethe_entries VALUES (%s, %s, %s)"
                        " ON CONFLICT (name, seq) DO UPDATE SET entry = EXCLUDED.entry",
                        (name, seq, row),
                    )
        except _errors.UniqueViolation:
            return False  # rolled back: nothing written
        return True

    def wait(self, name: str, after: int, timeout: float) -> int:
        """See :meth:`lethe.store.Store.wait`.

        Every commit sends a notification on the channel ``lethe_log`` (the
        md5 of the memory's name); a second connection of this store
        listens to it (``LISTEN``) from before the latest version is read, so no
        commit in between is missed.  Threads of one process wait in turn.
        """
        digest = hashlib.md5(name.encode()).hexdigest()
        deadline = time.monotonic() + timeout
        with self._listen_lock:
            try:
                listener = self._listening()
                while True:
                    with self._transaction() as conn:
                        latest, _ = self._head(conn, name)
                    left = deadline - time.monotonic()
                    if latest != after or left <= 0:
                        return latest
                    for note in listener.notifies(timeout=left):
                        if note.payload == digest:
                            break
            except psycopg.OperationalError as exc:
                if self._listener is not None:
                    self._listener.close()
                raise StoreError(f"lost the connection to PostgreSQL: {str(exc).strip()}") from None

    def time(self) -> float:
        """See :meth:`lethe.store.Store.time`: the server's clock (``clock_timestamp()``)."""
        with self._transaction() as conn:
            row = conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()
        assert row is not None
        return float(row[0])

    def checkpoint(self, name: str, at_most: int | None = None) -> tuple[int, str, list[str]]:
        """See :meth:`lethe.store.Store.checkpoint`."""
        high = 2**63 - 1 if at_most is None else at_most
        with self._transaction("REPEATABLE READ READ ONLY") as conn:
            row = conn.execute(
                "SELECT version, head FROM lethe_checkpoints WHERE name = %s AND version <= %s"
                " ORDER BY version DESC LIMIT 1",
                (name, high),
            ).fetchone()
            if row is None:
                raise KeyError(name if at_most is None else at_most)
            rows = [
                r[0]
                for r in conn.execute(
                    "SELECT entry FROM lethe_checkpoint_entries WHERE name = %s AND version = %s", (name, row[0])
                )
            ]
        return int(row[0]), str(row[1]), rows

    def compact(self, name: str, min_gap: int) -> bool:
        """See :meth:`lethe.store.Store.compact`."""
        try:
            # One snapshot, so the head and the rows copied are of one version; writers go on.
            with self._transaction("REPEATABLE READ") as conn:
                version, head = self._head(conn, name)
                found = conn.execute("SELECT max(version) FROM lethe_checkpoints WHERE name = %s", (name,)).fetchone()
                newest = int(found[0]) if found is not None and found[0] is not None else 0
                if version - newest < min_gap:
                    return False
                conn.execute("INSERT INTO lethe_checkpoints VALUES (%s, %s, %s)", (name, version, head))
                conn.execute(
                    "INSERT INTO lethe_checkpoint_entries SELECT name, %s, seq, entry FROM lethe_entries"
                    " WHERE name = %s",
                    (version, name),
                )
                for table in ("lethe_checkpoint_entries", "lethe_checkpoints"):
                    conn.execute(f"DELETE FROM {table} WHERE name = %s AND version < %s", (name, newest))
                conn.execute("DELETE FROM lethe_log WHERE name = %s AND version <= %s", (name, newest))
        except (_errors.UniqueViolation, _errors.SerializationFailure):
            return False  # another process checkpointed this version meanwhile: nothing written
        return True


# Connections found in a process that did not open them: kept referenced, never used or closed.
_INHERITED: list[psycopg.Connection[Any]] = []
