"""An engine on PostgreSQL: many named memories in one database, shared by processes on many hosts.

Needs the ``postgres`` extra (psycopg 3): ``pip install 'lethe-decay[postgres]'``.
"""

from __future__ import annotations

import hashlib
import os
import random
import secrets
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from lethe.store._engine import FORMAT, VERSION, check_format, checked_timeout, config_missing
from lethe.store._errors import CommitUnknown, StoreError

# Without the extra the class still imports (``from lethe.store import *`` works); building one
# says what to install.
_MISSING: str | None = None
try:
    import psycopg
    from psycopg import errors as _errors
except ImportError:
    _MISSING = "PostgresStore needs psycopg 3: pip install 'lethe-decay[postgres]'"

T = TypeVar("T")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS lethe_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS lethe_memories (name TEXT PRIMARY KEY, config TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS lethe_entries (name TEXT NOT NULL, seq BIGINT NOT NULL, entry TEXT NOT NULL,"
    " PRIMARY KEY (name, seq))",
    "CREATE TABLE IF NOT EXISTS lethe_log (name TEXT NOT NULL, version BIGINT NOT NULL, head TEXT NOT NULL,"
    " record TEXT NOT NULL, op TEXT NOT NULL, PRIMARY KEY (name, version))",
    "CREATE TABLE IF NOT EXISTS lethe_checkpoints (name TEXT NOT NULL, version BIGINT NOT NULL, head TEXT NOT NULL,"
    " PRIMARY KEY (name, version))",
    "CREATE TABLE IF NOT EXISTS lethe_checkpoint_entries (name TEXT NOT NULL, version BIGINT NOT NULL,"
    " seq BIGINT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (name, version, seq))",
)
#: A commit, in one statement (see PostgresStore.append).
_APPEND = """
WITH latest AS (
    SELECT coalesce(
        (SELECT max(version) FROM lethe_log WHERE name = %(name)s),
        (SELECT max(version) FROM lethe_checkpoints WHERE name = %(name)s)
    ) AS version
), logged AS (
    INSERT INTO lethe_log (name, version, head, record, op)
    SELECT %(name)s, %(version)s, %(head)s, %(record)s, %(op)s
    FROM latest, (SELECT pg_notify(%(channel)s, md5(%(name)s))) AS notified
    WHERE latest.version = %(version)s - 1
    RETURNING version
), gone AS (
    DELETE FROM lethe_entries
    WHERE name = %(name)s AND seq = ANY(%(removed)s::bigint[]) AND EXISTS (SELECT FROM logged)
), put AS (
    INSERT INTO lethe_entries (name, seq, entry)
    SELECT %(name)s, w.seq, w.entry FROM unnest(%(seqs)s::bigint[], %(rows)s::text[]) AS w(seq, entry)
    WHERE EXISTS (SELECT FROM logged)
    ON CONFLICT (name, seq) DO UPDATE SET entry = EXCLUDED.entry
), configured AS (
    UPDATE lethe_memories SET config = %(config)s
    WHERE name = %(name)s AND %(config)s::text IS NOT NULL AND EXISTS (SELECT FROM logged)
)
SELECT count(*) FROM logged
"""
#: The channel commits are announced on (the payload: the md5 of the memory's name).
_CHANNEL = "lethe_log"
#: Serializes the creation of the tables by several processes at once.
_SCHEMA_LOCK = 0x6C65_7468  # "leth"

#: The largest version and put order a BIGINT holds.
_MAX_INT = 2**63 - 1

#: The longest pause between two tries to reach the server, in seconds.
_MAX_PAUSE = 0.5

#: The longest a thread of a :class:`PostgresStore` listens for commits before another thread
#: waiting on the same store gets its turn (each waits at most this past its own timeout).
_LISTEN_SLICE = 0.1
#: How long a waiting thread steps aside between its turns when others wait too.
_TURN = 0.001

#: SQLSTATEs of a failed connection attempt worth trying again: a connection exception, and a
#: server shutting down, crashed or starting up (crash recovery).  Others (a wrong password,
#: no such database) are not mended by waiting.
_TRANSIENT = ("08", "57P01", "57P02", "57P03")


class _Lost(Exception):
    """The connection failed, or could not be made (the message is the client's, stripped)."""

    def __init__(self, cause: psycopg.Error) -> None:
        super().__init__(str(cause).strip())


class PostgresStore:
    """A :class:`~lethe.store.Store` in a PostgreSQL database: many named memories, many hosts.

    The tables (``lethe_memories``, ``lethe_entries``, ``lethe_log``,
    ``lethe_checkpoints``, ``lethe_checkpoint_entries``, ``lethe_meta``) are
    created on first use and live beside the database's other tables.  A
    commit is one statement, so one round trip and one transaction: the log
    row goes in under the primary key
    ``(name, version)``, which is the compare-and-swap (a writer that lost
    the race gets a unique violation and nothing of it is written), then the
    entry rows it changed.  A commit that returned is as durable as the
    server makes it (by default, on disk at commit).

    Lost replies: each log row carries the operation id of the commit that
    wrote it.  When the connection fails during a commit (the server
    restarted, the session was terminated, the network dropped the reply),
    the store reconnects, trying for up to ``timeout`` seconds,
    terminates the session the commit was sent on if it is still there,
    waits for that session's transaction to end (a probe insert of the same
    log row waits on it, and is rolled back), and reads back whether the
    version holds its operation id: True if so, False if the version is
    free or another writer's.  If the server stays unreachable it raises
    :class:`~lethe.store.CommitUnknown`.  The other methods reconnect and
    try again the same way, then raise :class:`~lethe.store.StoreError`.
    A session of this store whose client vanished mid-transaction is ended
    by the server after ``timeout`` (``idle_in_transaction_session_timeout``),
    so it does not hold other writers' locks.

    Processes: each process opens its own connection on first use; one
    inherited through ``fork`` is never used or closed by the child.  After
    :meth:`close` every method raises :class:`~lethe.store.StoreError`.

    :meth:`drop` removes a memory's rows from every table in one transaction,
    after the commits in flight (see :meth:`drop`).  A memory whose
    ``lethe_memories`` row is gone while other rows of it are not is damaged:
    :meth:`open` refuses it (nothing is reset), and :meth:`drop` removes what
    is left.

    Args:
        conninfo: A libpq connection string or URL
            (``"postgresql://user@host:5432/db"``).
        timeout: Seconds to wait to connect, for a lock another writer
            holds, and to keep trying to reach the server after a connection
            failed.

    Raises:
        StoreError: the server cannot be reached, or the database holds a
            lethe store written by a newer lethe; nothing is written.
    """

    def __init__(self, conninfo: str, *, timeout: float = 30.0) -> None:
        if _MISSING:
            raise ImportError(_MISSING)
        self.conninfo = conninfo
        self.timeout = checked_timeout(timeout)
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._session: tuple[int, datetime] | None = None  # the connection's backend: pid and start
        # A second connection, LISTENing for commits (see wait), opened on first use.
        self._listen_lock = threading.Lock()
        self._listener: psycopg.Connection[Any] | None = None
        self._heard: dict[str, int] = {}  # notifications taken from the listener, by channel payload
        self._waiting = 0  # threads in wait()
        self._waiting_lock = threading.Lock()
        self._listener_pid = os.getpid()
        self._pid = os.getpid()
        self._closed = False
        _LIVE.add(self)
        with self._lock:
            try:
                self._connection()
            except _Lost as lost:
                raise StoreError(f"cannot connect to PostgreSQL: {lost}") from None

    # -- connections ------------------------------------------------------

    def _connection(self) -> psycopg.Connection[Any]:
        """This process's connection, opened (and the tables checked) on first use, or
        again after it broke; hold the lock.  Raises :class:`_Lost` if it cannot be made."""
        if self._closed:
            raise StoreError("the store is closed")
        if self._conn is not None and (self._pid != os.getpid() or self._conn.closed):
            if self._pid != os.getpid():
                _INHERITED.append(self._conn)  # another process's: closing it here would end its session
            else:
                self._conn.close()
            self._conn = None
        if self._conn is None:
            self._conn, self._session = self._connect()
            self._pid = os.getpid()
        return self._conn

    def _connect(self) -> tuple[psycopg.Connection[Any], tuple[int, datetime]]:
        milliseconds = int(self.timeout * 1000)
        try:
            conn = psycopg.connect(
                self.conninfo,
                autocommit=True,
                connect_timeout=max(1, round(self.timeout)),
                options=f"-c lock_timeout={milliseconds}"
                f" -c idle_in_transaction_session_timeout={max(1000, milliseconds)}",
            )
        except psycopg.OperationalError as exc:
            if exc.sqlstate is None or exc.sqlstate.startswith(_TRANSIENT):
                raise _Lost(exc) from None
            raise StoreError(f"cannot connect to PostgreSQL: {str(exc).strip()}") from None
        except psycopg.ProgrammingError:
            # libpq's message repeats the connection string, password and all: say only what is wrong.
            raise StoreError("not a valid PostgreSQL URL or connection string") from None
        try:
            session = self._check(conn)
        except psycopg.OperationalError as exc:
            broken = conn.closed
            conn.close()
            if broken:
                raise _Lost(exc) from None
            raise
        except BaseException:
            conn.close()
            raise
        return conn, session

    def _check(self, conn: psycopg.Connection[Any]) -> tuple[int, datetime]:
        """Create the tables unless they exist, check the format; return the session's backend."""
        try:
            meta = dict(conn.execute("SELECT key, value FROM lethe_meta").fetchall())
        except _errors.UndefinedTable:
            meta = {}
        if not meta:
            # Created in one transaction with their metadata, so tables found with it are complete;
            # a reconnect does not take the lock (a session holding it, cut off, would stall them all).
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
        found = conn.execute(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
        ).fetchone()
        assert found is not None  # a session always sees itself
        return int(found[0]), found[1]

    def _attempt(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work(connection)`` under the lock; raises :class:`_Lost` if the connection
        could not be made or broke, and :class:`StoreError` for a lock held past ``timeout``."""
        with self._lock:
            conn = self._connection()
            try:
                return work(conn)
            except psycopg.OperationalError as exc:
                if conn.closed:
                    raise _Lost(exc) from None
                if isinstance(exc, _errors.LockNotAvailable):
                    raise StoreError(f"the memory stayed locked by another writer for {self.timeout} s") from None
                raise

    def _retrying(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work(connection)``, on a new connection again while the connection fails, for up
        to ``timeout`` seconds after the first failure; ``work`` must be safe to run again."""
        deadline: float | None = None
        pause = 0.0
        while True:
            try:
                return self._attempt(work)
            except _Lost as lost:
                deadline = self._pause(deadline, pause, lost)
                pause = min(max(2 * pause, 0.01), _MAX_PAUSE)

    def _pause(self, deadline: float | None, pause: float, lost: _Lost) -> float:
        """Sleep before trying again; the deadline (set now if None); :class:`StoreError` once it passed."""
        now = time.monotonic()
        if deadline is None:
            deadline = now + self.timeout
        if now >= deadline:
            raise StoreError(f"cannot reach PostgreSQL again within {self.timeout} s: {lost}")
        # Jittered, so that many clients coming back after a restart do not come in step.
        time.sleep(min(pause * random.uniform(0.5, 1.0), deadline - now))
        return deadline

    def _listening(self) -> psycopg.Connection[Any]:
        """This process's connection that listens for commits; hold ``_listen_lock``."""
        if self._closed:
            raise StoreError("the store is closed")
        if self._listener is not None and (self._listener_pid != os.getpid() or self._listener.closed):
            if self._listener_pid != os.getpid():
                _INHERITED.append(self._listener)
            self._listener = None
        if self._listener is None:
            listener, _ = self._connect()
            try:
                listener.execute(f"LISTEN {_CHANNEL}")
            except psycopg.OperationalError as exc:
                listener.close()
                raise _Lost(exc) from None
            self._listener, self._listener_pid = listener, os.getpid()
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

        def work(conn: psycopg.Connection[Any]) -> list[str]:
            return [row[0] for row in conn.execute("SELECT name FROM lethe_memories ORDER BY name")]

        return self._retrying(work)

    def config(self, name: str) -> str:
        """See :meth:`lethe.store.Store.config`."""

        def work(conn: psycopg.Connection[Any]) -> Any:
            return conn.execute("SELECT config FROM lethe_memories WHERE name = %s", (name,)).fetchone()

        row = self._retrying(work)
        if row is None:
            raise KeyError(name)
        return str(row[0])

    def open(self, name: str, config: str, head: str, rows: Sequence[tuple[int, str]]) -> str:
        """See :meth:`lethe.store.Store.open`."""

        def work(conn: psycopg.Connection[Any]) -> str | None:
            with conn.transaction():
                created = conn.execute(
                    "INSERT INTO lethe_memories VALUES (%s, %s) ON CONFLICT (name) DO NOTHING RETURNING name",
                    (name, config),
                ).fetchone()
                if created is None:
                    row = conn.execute("SELECT config FROM lethe_memories WHERE name = %s", (name,)).fetchone()
                    return None if row is None else str(row[0])  # None: dropped meanwhile, try again
                if self._remains(conn, name):
                    raise StoreError(config_missing(name))  # rolled back: nothing written
                with conn.cursor() as cur:
                    cur.executemany("INSERT INTO lethe_entries VALUES (%s, %s, %s)", [(name, s, r) for s, r in rows])
                conn.execute("INSERT INTO lethe_checkpoints VALUES (%s, 0, %s)", (name, head))
                conn.execute(
                    "INSERT INTO lethe_checkpoint_entries SELECT name, 0, seq, entry FROM lethe_entries"
                    " WHERE name = %s",
                    (name,),
                )
                return config

        while True:
            stored = self._retrying(work)
            if stored is not None:
                return stored

    @staticmethod
    def _remains(conn: psycopg.Connection[Any], name: str) -> bool:
        """Whether any row of ``name`` but its configuration is in the database."""
        return any(
            conn.execute(f"SELECT FROM {table} WHERE name = %s LIMIT 1", (name,)).fetchone() is not None
            for table in ("lethe_log", "lethe_checkpoints", "lethe_entries", "lethe_checkpoint_entries")
        )

    @staticmethod
    def _known(conn: psycopg.Connection[Any], name: str) -> bool:
        """Whether ``name`` is a memory of this database (its configuration is there)."""
        return conn.execute("SELECT FROM lethe_memories WHERE name = %s", (name,)).fetchone() is not None

    def _head(self, conn: psycopg.Connection[Any], name: str) -> tuple[int, str]:
        row = conn.execute(
            "SELECT version, head FROM lethe_log WHERE name = %s ORDER BY version DESC LIMIT 1", (name,)
        ).fetchone() or conn.execute(
            "SELECT version, head FROM lethe_checkpoints WHERE name = %s ORDER BY version DESC LIMIT 1", (name,)
        ).fetchone()
        if row is None:
            raise KeyError(name)
        return int(row[0]), str(row[1])

    def load(self, name: str) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.load`."""

        def work(conn: psycopg.Connection[Any]) -> tuple[int, str, list[tuple[int, str]]]:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                version, head = self._head(conn, name)
                rows = conn.execute("SELECT seq, entry FROM lethe_entries WHERE name = %s", (name,)).fetchall()
            return version, head, rows

        return self._retrying(work)

    def read(self, name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
        """See :meth:`lethe.store.Store.read`."""
        high = _MAX_INT if upto is None else upto

        def work(conn: psycopg.Connection[Any]) -> list[tuple[int, str]] | None:
            rows = [
                (int(v), str(r))
                for v, r in conn.execute(
                    "SELECT version, record FROM lethe_log WHERE name = %s AND version > %s AND version <= %s"
                    " ORDER BY version",
                    (name, after, high),
                )
            ]
            return rows if rows or self._known(conn, name) else None

        found = self._retrying(work)
        if found is None:
            raise KeyError(name)
        return found

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
        """See :meth:`lethe.store.Store.append`; the class docstring tells how a lost reply is resolved."""
        if version > _MAX_INT:  # the latest version read was the last a BIGINT holds: nothing is sent
            raise StoreError(f"{name!r}: the store is damaged: its latest version is {version - 1}, the last it keeps")
        operation = secrets.token_hex(8)
        sent_on: tuple[int, datetime] | None = None  # the session the commit went out on
        params = {
            "name": name,
            "version": version,
            "head": head,
            "record": record,
            "op": operation,
            "channel": _CHANNEL,
            "removed": list(removed),
            "config": config,
        }

        seqs, rows = [seq for seq, _ in written], [row for _, row in written]

        def commit(conn: psycopg.Connection[Any]) -> bool:
            nonlocal sent_on
            sent_on = self._session
            # One statement, so one round trip and one transaction (autocommit).  The log row goes
            # in only at the version after the latest (the compare-and-swap; of two writers that
            # both read version - 1, the second gets a unique violation on the primary key), the
            # entry rows change only if it went in, and the notification (see wait) is delivered
            # at commit.
            done = conn.execute(_APPEND, {**params, "seqs": seqs, "rows": rows}).fetchone()
            return done is not None and done[0] == 1

        def learn(conn: psycopg.Connection[Any]) -> bool:
            # The old session may still be on, running the statement: end it (if the statement
            # reached its commit, that commit is not cut short by a termination).
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = %s AND backend_start = %s", sent_on
            )
            mine = False
            # Rolled back at the end whatever happens: the probe writes nothing.  (Not by raising
            # ``psycopg.Rollback``: when the connection breaks after the probe's last reply,
            # psycopg cannot roll back and lets that exception through.  The answer stands, though:
            # it was read after the commit in question had ended, and the broken session's
            # transaction ends with it.)
            with conn.transaction(force_rollback=True):
                # Inserting the same log row waits until the transaction that may hold it ends; then
                # the row is there if and only if it was committed.
                free = conn.execute(
                    "INSERT INTO lethe_log (name, version, head, record, op) VALUES (%s, %s, '', '', '')"
                    " ON CONFLICT (name, version) DO NOTHING RETURNING version",
                    (name, version),
                ).fetchone()
                if free is None:
                    found = conn.execute(
                        "SELECT op FROM lethe_log WHERE name = %s AND version = %s", (name, version)
                    ).fetchone()
                    mine = found is not None and found[0] == operation
            return mine

        deadline: float | None = None
        pause = 0.0
        while True:
            learning = sent_on is not None
            try:
                if self._attempt(learn if learning else commit):
                    return True
                if not learning and not self._retrying(lambda conn: self._known(conn, name)):
                    raise KeyError(name)  # never opened, or dropped: nothing written
                return False
            except _errors.UniqueViolation:
                return False  # rolled back: nothing written
            except StoreError as exc:
                if not learning:
                    raise  # the server answered (a lock held too long): rolled back, nothing written
                raise CommitUnknown(f"{name!r}: whether version {version} was committed is unknown: {exc}") from None
            except _Lost as lost:
                try:
                    deadline = self._pause(deadline, pause, lost)
                except StoreError as exc:
                    if sent_on is None:
                        raise
                    raise CommitUnknown(
                        f"{name!r}: whether version {version} was committed is unknown: the connection failed"
                        f" while it was sent, and PostgreSQL could not be reached again within {self.timeout} s"
                        f" ({lost})"
                    ) from exc
                pause = min(max(2 * pause, 0.01), _MAX_PAUSE)

    def wait(self, name: str, after: int, timeout: float) -> int:
        """See :meth:`lethe.store.Store.wait`.

        Every commit sends a notification on the channel ``lethe_log`` (the
        md5 of the memory's name); a second connection of this store
        listens to it (``LISTEN``) from before the latest version is read, so no
        commit in between is missed.  Threads of one process share that
        connection, taking it in turns of at most 0.1 s, so none waits past
        its ``timeout`` for another.
        """
        digest = hashlib.md5(name.encode()).hexdigest()
        deadline = time.monotonic() + timeout

        def latest(conn: psycopg.Connection[Any]) -> int:
            return self._head(conn, name)[0]

        if timeout <= 0:
            return self._retrying(latest)  # nothing to wait for: no need to listen
        with self._waiting_lock:
            self._waiting += 1
        try:
            return self._wait_listening(digest, after, deadline, latest)
        finally:
            with self._waiting_lock:
                self._waiting -= 1

    def _wait_listening(
        self, digest: str, after: int, deadline: float, latest: Callable[[psycopg.Connection[Any]], int]
    ) -> int:
        """:meth:`wait` on the listening connection, in turns with this process's other waiters."""
        failed: float | None = None  # the deadline to reach the server again, once it failed
        pause = 0.0
        heard = -1  # how many notifications for this name had been heard at the last read
        version = after
        while True:
            if self._waiting > 1:
                time.sleep(_TURN)  # a lock is not fair: let a waiting thread take its turn
            try:
                # Threads share the listening connection, a slice each: whichever holds it counts
                # every notification it takes (for any name), and a waiter reads the latest version
                # again only when its name's count moved.
                with self._listen_lock:
                    listener = self._listening()  # listening before the read: no commit slips between
                    count = self._heard.get(digest, 0)
                    if count != heard:
                        heard = count
                        version = self._retrying(latest)
                    left = deadline - time.monotonic()
                    if version != after or left <= 0:
                        return version
                    for note in listener.notifies(timeout=min(left, _LISTEN_SLICE)):
                        self._heard[note.payload] = self._heard.get(note.payload, 0) + 1
                        if note.payload == digest:
                            break
            except (_Lost, psycopg.OperationalError) as exc:
                with self._listen_lock:
                    if self._listener is not None:
                        self._listener.close()
                        self._listener = None
                heard = -1  # notifications sent while no connection listened are lost: read again
                failed = self._pause(failed, pause, exc if isinstance(exc, _Lost) else _Lost(exc))
                pause = min(max(2 * pause, 0.01), _MAX_PAUSE)

    def time(self) -> float:
        """See :meth:`lethe.store.Store.time`: the server's clock (``clock_timestamp()``)."""

        def work(conn: psycopg.Connection[Any]) -> float:
            row = conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()
            assert row is not None
            return float(row[0])

        return self._retrying(work)

    def checkpoint(self, name: str, at_most: int | None = None) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.checkpoint`."""
        high = _MAX_INT if at_most is None else at_most

        def work(conn: psycopg.Connection[Any]) -> tuple[Any, list[tuple[int, str]]]:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                row = conn.execute(
                    "SELECT version, head FROM lethe_checkpoints WHERE name = %s AND version <= %s"
                    " ORDER BY version DESC LIMIT 1",
                    (name, high),
                ).fetchone()
                if row is None:
                    return None, []
                rows = conn.execute(
                    "SELECT seq, entry FROM lethe_checkpoint_entries WHERE name = %s AND version = %s", (name, row[0])
                ).fetchall()
            return row, rows

        row, rows = self._retrying(work)
        if row is None:
            raise KeyError(name if at_most is None else at_most)
        return int(row[0]), str(row[1]), rows

    def compact(self, name: str, min_gap: int) -> bool:
        """See :meth:`lethe.store.Store.compact`.  Tried again after a lost reply, a
        compaction that was made answers False (the checkpoint it made is recent)."""

        def work(conn: psycopg.Connection[Any]) -> bool:
            # One snapshot, so the head and the rows copied are of one version; writers go on.
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                # Held until the end: a drop waits for this compaction (or this one fails if the
                # drop came first), so no checkpoint of a dropped memory is left behind.
                if conn.execute(
                    "SELECT FROM lethe_memories WHERE name = %s FOR KEY SHARE", (name,)
                ).fetchone() is None:
                    raise KeyError(name)
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
            return True

        try:
            return self._retrying(work)
        except (_errors.UniqueViolation, _errors.SerializationFailure):
            return False  # another process checkpointed this version meanwhile: nothing written

    def drop(self, name: str) -> bool:
        """See :meth:`lethe.store.Store.drop`: one transaction.  It waits for the commits in
        flight to end (briefly holding off commits to every memory of the database: a drop is
        rare), so no commit of the dropped memory lands after it; then it wakes its waiters."""

        def work(conn: psycopg.Connection[Any]) -> bool:
            with conn.transaction():
                # The configuration first: a compaction holding it (FOR KEY SHARE) ends before.
                removed = conn.execute("DELETE FROM lethe_memories WHERE name = %s", (name,)).rowcount
                # Then the log, locked against commits (ROW EXCLUSIVE): one in flight ends first
                # and is deleted with the rest; one that comes after finds no version to follow.
                conn.execute("LOCK TABLE lethe_log IN SHARE ROW EXCLUSIVE MODE")
                for table in ("lethe_log", "lethe_entries", "lethe_checkpoints", "lethe_checkpoint_entries"):
                    removed += conn.execute(f"DELETE FROM {table} WHERE name = %s", (name,)).rowcount
                conn.execute("SELECT pg_notify(%s, md5(%s))", (_CHANNEL, name))
            return removed > 0

        return self._retrying(work)


# Connections found in a process that did not open them: kept referenced, never used or closed.
_INHERITED: list[psycopg.Connection[Any]] = []

#: What psycopg raises (nothing when it is not installed): for callers that guard a raw client error.
CLIENT_ERRORS: tuple[type[Exception], ...] = () if _MISSING else (psycopg.Error,)


def holds_store(conninfo: str, timeout: float) -> bool:
    """Whether the database at ``conninfo`` holds lethe's tables with their metadata, read on
    a read-only session (a :class:`PostgresStore` creates them in a database without them).

    The session takes ``options`` as the store's does (overriding any in ``conninfo``), so
    both look for the tables on the same ``search_path``.

    Raises:
        ImportError: psycopg is not installed (the message says what to install).
        StoreError: the server cannot be reached, ``conninfo`` is malformed, or the tables
            cannot be read.
    """
    if _MISSING:
        raise ImportError(_MISSING)
    try:
        conn = psycopg.connect(
            conninfo,
            autocommit=True,
            connect_timeout=max(1, round(timeout)),
            options="-c default_transaction_read_only=on",
        )
    except psycopg.OperationalError as exc:
        raise StoreError(f"cannot connect to PostgreSQL: {str(exc).strip()}") from None
    except psycopg.Error:  # libpq refused the string itself, and its message repeats it
        raise StoreError("not a valid PostgreSQL URL or connection string") from None
    with conn:
        try:
            found = conn.execute("SELECT count(*) FROM lethe_meta").fetchone()
        except _errors.UndefinedTable:
            return False
        except psycopg.Error as exc:
            raise StoreError(f"cannot read the store: {str(exc).strip()}") from None
    return bool(found and found[0])


#: Every store of this process, to mend its locks in a forked child.
_LIVE: weakref.WeakSet[PostgresStore] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # A lock another thread held at the fork (a query, a turn listening) stays held in the
    # child, by a thread it does not have: the child's first call would wait forever.  Its
    # connections are the parent's and are never used here (see _connection).
    for store in list(_LIVE):
        store._lock = threading.Lock()
        store._listen_lock = threading.Lock()
        store._waiting_lock = threading.Lock()
        store._waiting = 0
        store._heard = {}


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
