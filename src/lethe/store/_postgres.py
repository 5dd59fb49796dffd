"""An engine on PostgreSQL: many named memories in one database, shared by processes on many hosts.

Needs the ``postgres`` extra (psycopg 3): ``pip install 'lethe-decay[postgres]'``.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import select
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from lethe.store._deadline import bounded
from lethe.store._engine import check_format, checked_timeout
from lethe.store._errors import CommitUnknown, StoreError
from lethe.store._retry import Retry
from lethe.store._sql import MAX_INT, SQL, TABLES, Dialect, bound

# Without the extra the class still imports (``from lethe.store import *`` works); building one
# says what to install.
_MISSING: str | None = None
try:
    import psycopg
    from psycopg import errors as _errors
except ImportError:
    _MISSING = "PostgresStore needs psycopg 3: pip install 'lethe-decay[postgres]'"
#: Whether several statements go in one round trip (psycopg's pipeline mode, libpq 14+).
_PIPELINES = not _MISSING and psycopg.Pipeline.is_supported()

T = TypeVar("T")

#: The channel commits are announced on (the payload: the md5 of the memory's name).
_CHANNEL = "lethe_log"
#: Serializes the creation of the tables by several processes at once.
_SCHEMA_LOCK = 0x6C65_7468  # "leth"

#: How PostgreSQL says what differs: the tables prefixed (they live beside the database's
#: others), a log row keeping its commit's operation id (a lost reply is looked up by it), and
#: locks taken inside the transactions, which exclude only what must wait (see
#: PostgresStore.drop); a drop wakes the waiters LISTENing (see PostgresStore.wait).
DIALECT = Dialect(
    mark="%s",
    prefix="lethe_",
    integer="BIGINT",
    operation_ids=True,
    create_lock=f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})",
    compact_lock="SELECT FROM {memories} WHERE name = ? FOR KEY SHARE",
    drop_lock="LOCK TABLE {log} IN SHARE ROW EXCLUSIVE MODE",
    announce=f"SELECT pg_notify('{_CHANNEL}', md5(?))",
    conflict=() if _MISSING else (_errors.UniqueViolation, _errors.SerializationFailure),
)

#: Each table's name, as :data:`DIALECT` prefixes it (the statements below are written as the
#: shared ones are, ``{log}`` for the log table, and named once, at import).
_TABLES = {name: DIALECT.prefix + name for name in TABLES}


def _named(text: str) -> str:
    """``text`` with its tables (``{log}``, ``{meta}``, ...) named as :data:`DIALECT` names them."""
    return text.format(**_TABLES)


#: A commit, in one statement (see PostgresStore.append); ``{gone}`` picks the entry rows it
#: removes, ``{put}`` gives the rows it writes.
_COMMIT = """
WITH latest AS (
    SELECT coalesce(
        (SELECT max(version) FROM {log} WHERE name = %(name)s),
        (SELECT max(version) FROM {checkpoints} WHERE name = %(name)s)
    ) AS version
), logged AS (
    INSERT INTO {log} (name, version, head, record, op)
    SELECT %(name)s, %(version)s, %(head)s, %(record)s, %(op)s
    FROM latest, (SELECT pg_notify(%(channel)s, md5(%(name)s))) AS notified
    WHERE latest.version = %(version)s - 1 AND (%(parent)s::text IS NULL OR %(parent)s::text = coalesce(
        (SELECT head FROM {log} WHERE name = %(name)s AND version = %(version)s - 1),
        (SELECT head FROM {checkpoints} WHERE name = %(name)s AND version = %(version)s - 1)
    )) AND (%(key)s::integer IS NULL OR pg_try_advisory_xact_lock(%(class)s, %(key)s::integer))
    RETURNING version
), gone AS (
    DELETE FROM {entries}
    WHERE name = %(name)s AND {gone} AND EXISTS (SELECT FROM logged)
), put AS (
    INSERT INTO {entries} (name, seq, entry)
    {put}
    WHERE EXISTS (SELECT FROM logged)
    ON CONFLICT (name, seq) DO UPDATE SET entry = EXCLUDED.entry
), configured AS (
    UPDATE {memories} SET config = %(config)s
    WHERE name = %(name)s AND %(config)s::text IS NOT NULL AND EXISTS (SELECT FROM logged)
)
SELECT count(*) FROM logged
"""
#: A commit of any size: the rows written and removed as arrays.
_APPEND = _named(
    _COMMIT.replace("{gone}", "seq = ANY(%(removed)s::bigint[])").replace(
        "{put}", "SELECT %(name)s, w.seq, w.entry FROM unnest(%(seqs)s::bigint[], %(rows)s::text[]) AS w(seq, entry)"
    )
)
#: Most commits (a put, a get): one row written and at most one removed, as plain values.  The
#: array parameters cost PostgreSQL about a third of such a commit's time (measured on loopback).
_APPEND_ONE = _named(
    _COMMIT.replace("{gone}", "seq = %(gone)s::bigint").replace(
        "{put}", "SELECT %(name)s, %(seq)s::bigint, %(row)s::text"
    )
)
#: The writer locks' class, the first of pg_advisory_lock's two keys (the second is the memory's,
#: see _lock_key): "leth", as _SCHEMA_LOCK, which lives in the one-key form's space, apart.
_LOCK_CLASS = 0x6C65_7468
#: How long a writer waits for a memory's writer lock before it writes without it (as on SQLite).
_LOCK_PATIENCE = 1.0
#: Whether other sessions wait for a writer lock (``pg_locks`` shows the two keys as oids).
_WAITERS = (
    "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND classid = %s::bigint::oid"
    " AND objid = %s::bigint::oid AND objsubid = 2 AND NOT granted)"
)
#: The latest version of a memory in the log (a wait for a writer lock that saw it move on
#: was not in vain: the lock changed hands).
_LATEST = _named("SELECT max(version) FROM {log} WHERE name = %s")
#: A writer lock's transaction, begun in one round trip: the lock waited for ``_LOCK_PATIENCE``
#: at most, then the store's ``timeout`` again for what the commit waits on (a drop, say).
_TAKE = (
    "BEGIN",
    "SELECT set_config('lock_timeout', %s, true)",
    "SELECT pg_advisory_xact_lock(%s, %s)",
    "SELECT set_config('lock_timeout', %s, true)",
)


def _lock_key(name: str) -> int:
    """The second key of the writer lock of the memory ``name``: a stable hash, a signed int4
    (two names sharing one only take turns when they need not)."""
    return zlib.crc32(name.encode("utf-8", "surrogatepass")) - (1 << 31)


#: Whether a commit's log row is there: inserting it waits for the transaction that may hold
#: it to end, and inserts nothing if it was committed (see PostgresStore.append).
_PROBE = _named(
    "INSERT INTO {log} (name, version, head, record, op) VALUES (%s, %s, '', '', '')"
    " ON CONFLICT (name, version) DO NOTHING RETURNING version"
)
#: The operation id of a version's log row.
_OPERATION = _named("SELECT op FROM {log} WHERE name = %s AND version = %s")
#: Whether a database holds lethe's tables (see holds_store).
_HOLDS = _named("SELECT count(*) FROM {meta}")

#: The longest a thread of a :class:`PostgresStore` listens for commits before another thread
#: waiting on the same store gets its turn (each waits at most this past its own timeout).
_LISTEN_SLICE = 0.1
#: How long a waiting thread steps aside between its turns when others wait too.
_TURN = 0.001

#: SQLSTATEs of a failed connection attempt worth trying again: a connection exception, and a
#: server shutting down, crashed or starting up (crash recovery).  Others (a wrong password,
#: no such database) are not mended by waiting.
_TRANSIENT = ("08", "57P01", "57P02", "57P03")


#: The first statement of a transaction that reads, or copies, one snapshot of the state.
_READ_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"
_WRITE_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"


class _Lost(Exception):
    """The connection failed, or could not be made (the message is the client's, stripped)."""

    def __init__(self, cause: psycopg.Error) -> None:
        super().__init__(str(cause).strip())


class _Unsent(_Lost):
    """The writer lock's session had ended before the commit was sent on it: nothing of the
    commit reached the server, so it can be sent again at once, without the lock."""


def _refusal(exc: psycopg.Error, timeout: float) -> str:
    """What the server's refusal ``exc`` says, for a :class:`StoreError`: a lock wait past
    ``timeout`` is told so (another writer's lock, or a lock another session holds on lethe's
    tables), the rest as the server said it."""
    if isinstance(exc, _errors.LockNotAvailable):
        return f"a lock it needed stayed held by another session for {timeout} s (another writer, or a table lock)"
    return str(exc).strip()


def _lost(exc: Exception) -> bool:
    """Whether trying again may mend ``exc``: the connection failed, or could not be made."""
    return isinstance(exc, _Lost)


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
        self._retry = Retry(self.timeout)
        # How long a reply is waited for before the connection is taken for lost (a server that
        # stopped answering without closing it): past what a statement waits for a lock.
        self._silence = max(2 * self.timeout, self.timeout + 5.0)
        self._sql = SQL(DIALECT)
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
        # Writer locks (see lock): each memory's state in this process, the connections that
        # take them (one per lock held at once, kept for the next), and what each thread's
        # lock blocks are.
        self._holds_lock = threading.Lock()
        self._holds: dict[str, _Hold] = {}
        self._idle: list[tuple[int, psycopg.Connection[Any], tuple[int, datetime]]] = []
        self._blocks = threading.local()
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
            with self._bounded(conn):
                session = self._check(conn)
        except psycopg.Error as exc:
            broken = conn.closed
            conn.close()
            if broken:
                raise _Lost(exc) from None
            raise StoreError(f"cannot use the store's tables: {_refusal(exc, self.timeout)}") from None
        except BaseException:
            conn.close()
            raise
        return conn, session

    def _check(self, conn: psycopg.Connection[Any]) -> tuple[int, datetime]:
        """Create the tables unless they exist, check the format; return the session's backend."""
        try:
            meta = self._sql.meta(conn)
        except _errors.UndefinedTable:
            meta = {}
        if not meta:
            # Created in one transaction with their metadata, so tables found with it are complete;
            # a reconnect does not take the lock (a session holding it, cut off, would stall them all).
            with conn.transaction():
                self._sql.create(conn)
                meta = self._sql.meta(conn)
        check_format(meta)
        found = conn.execute(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
        ).fetchone()
        assert found is not None  # a session always sees itself
        return int(found[0]), found[1]

    def _bounded(self, conn: psycopg.Connection[Any]) -> AbstractContextManager[None]:
        """A ``with`` block whose waits for a reply on ``conn`` end, with the connection lost, once
        ``_silence`` seconds pass (a server that stopped answering without closing it)."""
        return bounded(conn.fileno, self._silence)

    def _attempt(self, work: Callable[[psycopg.Connection[Any]], T], bulk: bool = False) -> T:
        """``work(connection)`` under the lock; raises :class:`_Lost` if the connection
        could not be made or broke, and :class:`StoreError` for a lock held past ``timeout`` or
        a statement the server ended (cancelled, past a ``statement_timeout``: rolled back).
        Its replies are waited for ``_silence`` seconds at most, unless it is ``bulk`` work
        (every entry of a memory: its length has no bound to wait for)."""
        with self._lock:
            conn = self._connection()
            try:
                with nullcontext() if bulk else self._bounded(conn):
                    return work(conn)
            except psycopg.OperationalError as exc:
                if conn.closed:
                    raise _Lost(exc) from None
                refusal = _refusal(exc, self.timeout)
                raise StoreError(f"PostgreSQL ended the statement (nothing was written): {refusal}") from None

    def _retrying(self, work: Callable[[psycopg.Connection[Any]], T], bulk: bool = False) -> T:
        """``work(connection)``, on a new connection again while the connection fails, for up
        to ``timeout`` seconds after the first failure (:attr:`_retry`); ``work`` must be safe
        to run again.  ``bulk``: as :meth:`_attempt`."""
        try:
            return self._retry.call(partial(self._attempt, work, bulk), _lost)
        except _Lost as lost:
            raise self._unreachable(lost) from lost

    def _unreachable(self, lost: _Lost) -> StoreError:
        return StoreError(f"cannot reach PostgreSQL again within {self.timeout} s: {lost}")

    def _run(self, work: Callable[[psycopg.Connection[Any]], T], *, write: bool = False, snapshot: bool = False) -> T:
        """``work(connection)``, tried again as :meth:`_retrying` does (see
        :class:`lethe.store._sql.Run`): in a transaction when it writes or reads a snapshot,
        the snapshot's isolation level REPEATABLE READ (READ ONLY when it only reads)."""
        return self._retrying(self._transaction(work, write, snapshot))

    def _run_bulk(
        self, work: Callable[[psycopg.Connection[Any]], T], *, write: bool = False, snapshot: bool = False
    ) -> T:
        """:meth:`_run` for work on every entry of a memory (open, load, checkpoint, compact,
        drop): no bound on the wait for its replies, which take as long as the memory is large."""
        return self._retrying(self._transaction(work, write, snapshot), bulk=True)

    @staticmethod
    def _transaction(
        work: Callable[[psycopg.Connection[Any]], T], write: bool, snapshot: bool
    ) -> Callable[[psycopg.Connection[Any]], T]:
        """``work`` in a transaction when it writes or reads a snapshot (see :meth:`_run`)."""
        if not (write or snapshot):
            return work

        def transaction(conn: psycopg.Connection[Any]) -> T:
            with conn.transaction():
                if snapshot:
                    conn.execute(_WRITE_SNAPSHOT if write else _READ_SNAPSHOT)
                return work(conn)

        return transaction

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
                with self._bounded(listener):
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
        with self._holds_lock:
            idle, self._idle = self._idle, []
        for pid, conn, _ in idle:
            if pid == os.getpid():
                conn.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return "PostgresStore(...)"  # the connection string may hold a password

    # -- the engine -------------------------------------------------------

    def names(self) -> list[str]:
        """See :meth:`lethe.store.Store.names`."""
        return self._sql.names(self._run)

    def config(self, name: str) -> str:
        """See :meth:`lethe.store.Store.config`."""
        return self._sql.config(self._run, name)

    def open(self, name: str, config: str, head: str, rows: Sequence[tuple[int, str]]) -> str:
        """See :meth:`lethe.store.Store.open`."""
        return self._sql.open(self._run_bulk, name, config, head, rows)

    def load(self, name: str) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.load`."""
        return self._sql.load(self._run_bulk, name)

    def read(self, name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
        """See :meth:`lethe.store.Store.read`.  Under this thread's writer lock of ``name``,
        on the lock's own transaction."""
        hold = self._held_here(name)
        if hold is not None and hold.read is not None:
            (first, rows), hold.read = hold.read, None  # (once: later reads read again)
            if rows and upto is None and after >= first:  # (none: a dropped memory is told by a read)
                return [row for row in self._sql.records(rows, name) if row[0] > after]
        if hold is not None and hold.conn is not None:
            conn = hold.conn

            def on_hold(work: Callable[[psycopg.Connection[Any]], T], **_: bool) -> T:
                with self._bounded(conn):
                    return work(conn)

            try:
                return self._sql.read(on_hold, name, after, upto)
            except psycopg.Error:
                conn.close()  # the lock is lost with its transaction
                hold.conn = None
        return self._sql.read(self._run, name, after, upto)

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
        """See :meth:`lethe.store.Store.append`; the class docstring tells how a lost reply is resolved."""
        if version > MAX_INT:  # the latest version read was the last a BIGINT holds: nothing is sent
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
            "config": config,
            "parent": parent,
            "class": _LOCK_CLASS,
            # In a lock block that did not wait: the commit goes in only if no other writer
            # holds the lock (its transaction takes it, for the one statement; see lock).
            "key": _lock_key(name) if self._yields(name) else None,
        }

        if len(written) == 1 and len(removed) <= 1:
            statement = _APPEND_ONE
            (params["seq"], params["row"]), params["gone"] = written[0], removed[0] if removed else None
        else:
            statement = _APPEND
            params["seqs"], params["rows"] = [seq for seq, _ in written], [row for _, row in written]
            params["removed"] = list(removed)

        def commit(conn: psycopg.Connection[Any]) -> bool:
            nonlocal sent_on
            sent_on = self._session
            # One statement, so one round trip and one transaction (autocommit).  The log row goes
            # in only at the version after the latest (the compare-and-swap; of two writers that
            # both read version - 1, the second gets a unique violation on the primary key), the
            # entry rows change only if it went in, and the notification (see wait) is delivered
            # at commit.
            done = conn.execute(statement, params).fetchone()
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
                free = conn.execute(_PROBE, (name, version)).fetchone()
                if free is None:
                    found = conn.execute(_OPERATION, (name, version)).fetchone()
                    mine = found is not None and found[0] == operation
            return mine

        held = self._held_here(name)
        tries = self._retry.tries()
        while True:
            learning = sent_on is not None
            try:
                if held is not None and not learning:
                    # Under this thread's writer lock: on its transaction, whose COMMIT lets go.
                    sent_on, hold, held = held.session, held, None
                    done = self._commit_held(hold, statement, params)
                elif learning:
                    done = self._attempt(learn)
                else:
                    done = self._attempt(commit)
                if done:
                    return True
                if not learning and not self._retrying(lambda conn: self._sql.known(conn, name)):
                    raise KeyError(name)  # never opened, or dropped: nothing written
                return False
            except _errors.UniqueViolation:
                return False  # rolled back: nothing written
            except StoreError as exc:
                if not learning:
                    raise  # the server answered (a lock held too long): rolled back, nothing written
                raise CommitUnknown(f"{name!r}: whether version {version} was committed is unknown: {exc}") from None
            except _Unsent:
                sent_on = None  # nothing went out: the commit is sent again, without the lock
                continue
            except _Lost as lost:
                if tries.again():
                    continue
                if sent_on is None:
                    raise self._unreachable(lost) from lost
                raise CommitUnknown(
                    f"{name!r}: whether version {version} was committed is unknown: the connection failed"
                    f" while it was sent, and PostgreSQL could not be reached again within {self.timeout} s"
                    f" ({lost})"
                ) from self._unreachable(lost)

    #: A writer lock costs a round trip here: a :class:`~lethe.store.Shared` takes it only
    #: once its memory has other writers (see :meth:`lock`).
    lock_round_trip = True

    #: The lock reads the log too: :class:`~lethe.store.Shared` passes ``after`` to :meth:`lock`.
    lock_reads = True

    def lock(
        self, name: str, waiting: Callable[[], object] | None = None, *, wait: bool = True, after: int | None = None
    ) -> _WriterLock:
        """Hold the writer lock of the memory ``name`` for a ``with`` block, against the writers
        of every process and host; the block gets whether it is held.

        :class:`~lethe.store.Shared` takes it (unless made with ``locking=False``) around
        each write once the memory has other writers, so its function runs once per commit
        however many writers race; a writer alone commits in one round trip, without it.
        It is a transaction-level advisory lock (``pg_advisory_xact_lock``, keys
        ``"leth"`` and a hash of the name) in a transaction on a connection of its own,
        begun in one round trip; in the block this thread reads and commits the memory
        on that transaction, and the commit's ``COMMIT`` (in the commit's round trip)
        lets go.  It holds no rows: readers, the compaction and a drop never wait for it.
        The server lets go when the session ends (a client killed included, and one idle
        in the transaction past ``timeout``), and a writer that waits for it a second
        (or ``timeout``, when shorter) while it does not change hands goes on without it
        (a commit never depends on it: see ``Store.append``); while it changes hands (the
        memory's latest version moved on) the wait goes on, up to ``timeout``.  Reentrant
        within a thread.  ``waiting`` is not called: the wait is the server's.  The block's
        ``alone`` tells whether no other writer (of any process) waited for the lock at its
        commit.

        With ``wait=False`` nothing is taken (no round trip, and the block gets False), but
        the commits made in the block go in only while no other writer holds the lock:
        a writer that found no other writer's commit at its last read goes ahead alone,
        and never past one that took the lock.

        With ``after``, the round trip that takes the lock also reads the log after that
        version, once the lock is held: the block's first :meth:`read` from there on (the
        writer's catch-up) is answered from it, without a round trip of its own.
        """
        if self._closed:
            raise StoreError("the store is closed")
        return _WriterLock(self, name, wait, after)

    def _modes(self) -> dict[str, list[bool]]:
        """This thread's lock blocks, by memory, innermost last: whether each waited."""
        modes: dict[str, list[bool]] | None = getattr(self._blocks, "modes", None)
        if modes is None:
            modes = self._blocks.modes = {}
        return modes

    def _yields(self, name: str) -> bool:
        """Whether a commit of ``name`` from this thread goes in only while no writer holds its
        lock: made in a lock block that did not wait (see :meth:`lock`)."""
        modes = self._modes().get(name)
        return modes is not None and not modes[-1]

    def _take(self, name: str, after: int | None = None) -> _Hold | None:
        """The writer lock of ``name`` taken by this thread (None: not, after waiting for it
        ``_LOCK_PATIENCE`` seconds or ``timeout`` at most, or the server could not take it)."""
        me = threading.get_ident()
        with self._holds_lock:
            hold = self._holds.get(name)
            if hold is None:
                hold = self._holds[name] = _Hold(name)
            if hold.owner == me:
                hold.depth += 1
                return hold
            # Counted until this thread holds the lock or gives up: the holder's commit sees it
            # (_WriterLock.alone), and no thread forgets the hold meanwhile (_forget).
            hold.waiting += 1
        got = False
        patience = min(self.timeout, _LOCK_PATIENCE)
        try:
            got = hold.mutex.acquire(timeout=patience) and self._taken(hold, name, patience, after)
        finally:
            with self._holds_lock:
                hold.waiting -= 1
                if not got:
                    self._forget(hold)
        return hold if got else None

    def _taken(self, hold: _Hold, name: str, patience: float, after: int | None) -> bool:
        """Take the server's lock for ``hold``, whose thread lock this thread holds, waiting
        ``patience`` seconds while it does not change hands: whether it did (else the thread
        lock is let go of).  With ``after``, the log after it is read in the same round trip,
        once the lock is held (see :meth:`read`)."""
        begin, wait, take, timeout = _TAKE
        deadline = time.monotonic() + self.timeout
        seen: tuple[Any, ...] | None = None  # the latest version when this wait began
        broken = 0
        while True:
            try:
                conn, session = self._lock_connection()
            except (_Lost, StoreError):
                break
            try:
                with self._bounded(conn), _pipeline(conn):  # one round trip
                    conn.execute(begin)
                    latest = conn.execute(_LATEST, (name,))
                    conn.execute(wait, (f"{max(1, int(patience * 1000))}ms",))
                    conn.execute(take, (_LOCK_CLASS, _lock_key(name)))
                    conn.execute(timeout, (f"{int(self.timeout * 1000)}ms",))
                    log = None if after is None else conn.execute(self._sql.q.read, (name, bound(after), MAX_INT))
            except psycopg.Error as exc:
                waited = isinstance(exc, _errors.LockNotAvailable) and not conn.closed
                before = None
                if waited and seen is None:
                    try:
                        before = latest.fetchone()  # (the read before the wait)
                    except psycopg.Error:
                        # That read itself waited past timeout (the log's table locked by another
                        # session): no turn of the writers to wait for.  Without the lock.
                        conn.close()
                        break
                conn.close()  # (see _commit_held: not kept after a pipeline cut short)
                if not waited:
                    broken += 1
                    if broken < 2:
                        continue  # a kept connection had broken: once more, on a new one
                    break
                # Waited its patience.  If the lock changed hands meanwhile (a commit went in),
                # the writers are taking turns, not stuck behind one: wait again (up to the
                # store's timeout in all); else go on without it.
                if seen is not None:
                    before = seen
                try:
                    seen = self._attempt(lambda c: c.execute(_LATEST, (name,)).fetchone())
                except (_Lost, StoreError):
                    break
                if seen == before or time.monotonic() >= deadline:
                    break
                continue
            except BaseException:  # an interrupt while waiting: the session may still get the lock
                conn.close()
                hold.mutex.release()
                raise
            hold.owner, hold.depth, hold.conn, hold.session = threading.get_ident(), 1, conn, session
            hold.alone = False
            hold.read = None if log is None or after is None else (after, log.fetchall())
            return True
        hold.mutex.release()
        return False

    def _forget(self, hold: _Hold) -> None:
        """Drop ``hold`` from the holds (under ``_holds_lock``) unless a thread holds or waits
        for it: a process that writes many memories keeps the state of those being written."""
        if hold.waiting == 0 and (hold.owner is None or hold.depth == 0) and self._holds.get(hold.name) is hold:
            del self._holds[hold.name]

    def _let_go(self, hold: _Hold) -> None:
        """End a block of ``hold``: the last one ends its transaction, if the commit did not
        (nothing was committed), and so lets go of the lock."""
        hold.depth -= 1
        if hold.depth:
            return
        conn, session, hold.conn, hold.owner, hold.read = hold.conn, hold.session, None, None, None
        try:
            if conn is not None:
                self._idle_again(conn, session)
        finally:
            with self._holds_lock:
                self._forget(hold)
            hold.mutex.release()

    def _held_here(self, name: str) -> _Hold | None:
        """The writer lock of ``name`` while this thread holds it, its transaction open."""
        hold = self._holds.get(name)
        if hold is None or hold.owner != threading.get_ident() or hold.conn is None or self._closed:
            return None  # (closed: the usual path says so)
        if hold.conn.info.transaction_status != psycopg.pq.TransactionStatus.INTRANS:
            return None  # ended by its commit, or broken
        return hold

    def _lock_connection(self) -> tuple[psycopg.Connection[Any], tuple[int, datetime]]:
        """A connection to take a writer lock on: an idle one of this process, or a new one."""
        pid = os.getpid()
        with self._holds_lock:
            while self._idle:
                owner, conn, session = self._idle.pop()
                if owner == pid and not conn.closed:
                    return conn, session
        if self._closed:
            raise StoreError("the store is closed")
        return self._connect()

    def _idle_again(self, conn: psycopg.Connection[Any], session: tuple[int, datetime] | None) -> None:
        """Keep ``conn`` (whose session is ``session``) for the next lock, its transaction (if
        one is open) rolled back."""
        try:
            if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                with self._bounded(conn):
                    conn.execute("ROLLBACK")
        except psycopg.Error:
            conn.close()
        with self._holds_lock:
            if session is None or conn.closed or self._closed or len(self._idle) >= _IDLE_LOCKS:
                conn.close()
            else:
                self._idle.append((os.getpid(), conn, session))

    def _commit_held(self, hold: _Hold, statement: str, values: dict[str, Any]) -> bool:
        """A commit on a writer lock's connection, and the COMMIT of its transaction, in one
        round trip: whether it went in.  Whatever happens the transaction ends (the lock with it).
        It also notes whether another writer waited for the lock then (see ``_WriterLock.alone``).

        Raises:
            _Unsent: the server had ended the session before the commit was sent: nothing was.
            _Lost: the connection broke (whether the commit went in is for the caller to learn).
            StoreError: a lock it needed stayed held past ``timeout``: nothing was written.
        """
        conn = hold.conn
        assert conn is not None
        key = _lock_key(values["name"]) & 0xFFFF_FFFF
        if _ended(conn):  # (a pipeline sent on it would fail twice, and psycopg log the second)
            conn.close()
            raise _Unsent(psycopg.OperationalError("the server ended the session holding the writer lock"))
        try:
            with self._bounded(conn), _pipeline(conn):
                cursor = conn.execute(statement, values)
                waiting = conn.execute(_WAITERS, (_LOCK_CLASS, key))
                conn.execute("COMMIT")
            done, others = cursor.fetchone(), waiting.fetchone()
            hold.alone = others is not None and not others[0] and not hold.waiting  # (this process's too)
            return done is not None and done[0] == 1
        except psycopg.Error as exc:
            if conn.closed or exc.sqlstate is None or exc.sqlstate.startswith(_TRANSIENT):
                # The connection broke, the session was ended, or psycopg gave up on it (not an
                # answer of the server's): the COMMIT may have gone in.  The caller learns whether.
                conn.close()
                raise _Lost(exc) from None
            # The server refused a statement: its transaction is rolled back, nothing of it was
            # committed.  Closed, not kept: a pipeline cut short can leave psycopg believing in a
            # statement it prepared that the server never made, and every later use would fail.
            conn.close()
            if isinstance(exc, _errors.UniqueViolation):
                return False  # rolled back: nothing written
            refusal = _refusal(exc, self.timeout)
            raise StoreError(f"PostgreSQL refused the commit (nothing was written): {refusal}") from None

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
            return self._sql.head(conn, name)[0]

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
        tries = self._retry.tries()  # to reach the server again, once it failed
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
                if not tries.again():
                    raise self._unreachable(exc if isinstance(exc, _Lost) else _Lost(exc)) from exc

    def time(self) -> float:
        """See :meth:`lethe.store.Store.time`: the server's clock (``clock_timestamp()``)."""

        def work(conn: psycopg.Connection[Any]) -> float:
            row = conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()
            assert row is not None
            return float(row[0])

        return self._retrying(work)

    def checkpoint(self, name: str, at_most: int | None = None) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.checkpoint`."""
        return self._sql.checkpoint(self._run_bulk, name, at_most)

    def compact(self, name: str, min_gap: int) -> bool:
        """See :meth:`lethe.store.Store.compact`.  Tried again after a lost reply, a
        compaction that was made answers False (the checkpoint it made is recent)."""
        return self._sql.compact(self._run_bulk, name, min_gap)

    def drop(self, name: str) -> bool:
        """See :meth:`lethe.store.Store.drop`: one transaction.  It waits for the commits in
        flight to end (briefly holding off commits to every memory of the database: a drop is
        rare), so no commit of the dropped memory lands after it; then it wakes its waiters."""
        return self._sql.drop(self._run_bulk, name)


# Connections found in a process that did not open them: kept referenced, never used or closed.
_INHERITED: list[psycopg.Connection[Any]] = []

#: The most connections a store keeps for writer locks while none is held.
_IDLE_LOCKS = 4


class _Hold:
    """One memory's writer lock in this process: its thread lock, owner, depth (reentrant),
    and the connection whose open transaction holds the server's lock, with its session."""

    __slots__ = ("alone", "conn", "depth", "mutex", "name", "owner", "read", "session", "waiting")

    def __init__(self, name: str) -> None:
        self.name = name
        self.mutex = threading.Lock()
        self.owner: int | None = None
        self.waiting = 0  # threads of this process waiting for it (pg_locks does not show them)
        self.depth = 0
        self.conn: psycopg.Connection[Any] | None = None
        self.session: tuple[int, datetime] | None = None
        self.alone = False  # no other writer waited for the lock at this hold's commit
        # The log after a version, read as the lock was taken: (that version, its records).
        self.read: tuple[int, list[tuple[Any, Any]]] | None = None


def _ended(conn: psycopg.Connection[Any]) -> bool:
    """Whether the server ended ``conn``'s session while it sat idle in its transaction (as
    ``idle_in_transaction_session_timeout`` does to a holder slower than ``timeout``), told
    without a round trip: the server said so before it closed the socket, and has nothing
    else to say to a connection that sent nothing and listens to nothing."""
    try:
        if conn.pgconn.status != psycopg.pq.ConnStatus.OK:
            return True
        fd = conn.fileno()
        if hasattr(select, "poll"):  # (select() refuses descriptors from 1024 on)
            ready = select.poll()
            ready.register(fd, select.POLLIN)
            return bool(ready.poll(0))
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError, psycopg.Error):
        return True


def _pipeline(conn: psycopg.Connection[Any]) -> AbstractContextManager[object]:
    """Send the block's statements in one round trip, where libpq can (14 and later)."""
    return conn.pipeline() if _PIPELINES else nullcontext()


class _WriterLock:
    """One block of a memory's writer lock (see :meth:`PostgresStore.lock`)."""

    __slots__ = ("_after", "_got", "_name", "_pid", "_store", "_wait")

    def __init__(self, store: PostgresStore, name: str, wait: bool, after: int | None = None) -> None:
        self._store, self._name, self._wait, self._after = store, name, wait, after
        self._got: _Hold | None = None
        self._pid = os.getpid()

    @property
    def alone(self) -> bool:
        """Whether no other writer waited for the lock when the block's commit went in (False
        before, or without, a commit under it): the next write may go alone again."""
        return self._got is not None and self._got.alone

    def __enter__(self) -> bool:
        self._got = self._store._take(self._name, self._after) if self._wait else None
        self._store._modes().setdefault(self._name, []).append(self._wait)
        return self._got is not None

    def __exit__(self, *exc: object) -> None:
        got, self._got = self._got, None
        if self._pid != os.getpid():
            return  # a child forked inside the block: the lock and its connection are the parent's
        modes = self._store._modes()
        blocks = modes[self._name]
        blocks.pop()
        if not blocks:
            del modes[self._name]
        if got is not None:
            self._store._let_go(got)

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
            found = conn.execute(_HOLDS).fetchone()
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
        # The parent's writer locks are its sessions', not the child's.
        _INHERITED.extend(conn for _, conn, _ in store._idle)
        _INHERITED.extend(hold.conn for hold in store._holds.values() if hold.conn is not None)
        store._holds_lock = threading.Lock()
        store._holds = {}
        store._idle = []
        store._blocks = threading.local()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
