"""What the engines on SQL share, written once: the schema, and every operation but the commit and the wait.

:class:`~lethe.store.SQLiteStore` and :class:`~lethe.store.PostgresStore` keep
the same six tables and read and write them with the same statements; what
each says its own way is its :class:`Dialect` (the parameter mark, the table
prefix, a column type, the locks a transaction takes, the errors that mean
another writer got there first).  Each engine keeps what its client library
does its own way: its connections, how a transaction begins and ends, how its
errors are reported, trying again after a failure, and its commit
(:meth:`~lethe.store.Store.append`) and :meth:`~lethe.store.Store.wait`.  It
hands this module's :class:`SQL` a function that runs a piece of work on its
connection (:class:`Run`), and the operations here do the rest.

Another engine on SQL (MySQL, say) is a module with its connections, its
:class:`Dialect`, an ``append`` and a ``wait``, and one line in the engine
list of the tests (``tests/conftest.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from lethe.store._engine import FORMAT, VERSION, config_missing
from lethe.store._errors import StoreError

T = TypeVar("T")

#: The largest int a version or put order may be: SQLite's INTEGER, PostgreSQL's BIGINT.
MAX_INT = 2**63 - 1


class Cursor(Protocol):
    """What the operations here read from a statement's cursor (DB-API: sqlite3, psycopg)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def executemany(self, query: str, params: Iterable[Any], /) -> object: ...


class Connection(Protocol):
    """What the operations here ask of a connection: ``execute`` and a cursor (DB-API)."""

    def execute(self, query: str, params: Any = ..., /) -> Cursor: ...

    def cursor(self) -> Cursor: ...


class Run(Protocol):
    """An engine's way to run ``work`` on its connection, once or (on a server) again after a
    lost connection, and to report its client's errors as :class:`StoreError`.

    ``write``: in a write transaction (an engine that is read-only refuses it,
    nothing written).  ``snapshot``: every statement of ``work`` reads the same
    instant (a read transaction, or for a write one, a snapshot of the state it
    copies).  Neither: ``work`` runs its statements as they come, each on its own.
    """

    def __call__(self, work: Callable[[Connection], T], *, write: bool = False, snapshot: bool = False) -> T: ...


@dataclass(frozen=True)
class Dialect:
    """What one SQL engine says its own way; every statement here is written in its terms.

    Statements given here are written as the shared ones are: tables as
    ``{memories}``, ``{log}``, ... (the prefix added) and parameters as ``?``
    (the engine's ``mark`` put in).

    >>> d = Dialect(mark="%s", prefix="x_", integer="BIGINT")
    >>> statements(d).config
    'SELECT config FROM x_memories WHERE name = %s'
    """

    #: The parameter placeholder: ``?`` (qmark) or ``%s`` (format).
    mark: str
    #: Put before every table name (several programs' tables share a PostgreSQL database).
    prefix: str = ""
    #: The column type of a version or a put order (a signed 64-bit int).
    integer: str = "INTEGER"
    #: After a table kept in the order of its primary key, with no other row id (SQLite's
    #: ``WITHOUT ROWID``: looked up by it, each table is one B-tree, not two).
    keyed: str = ""
    #: Whether each log row keeps the operation id of the commit that wrote it (an engine that
    #: looks up a commit whose reply was lost).
    operation_ids: bool = False
    #: An insert that skips a row whose key is taken: ``{table}`` and ``{values}`` filled in.
    insert_new: str = "INSERT INTO {table} VALUES {values} ON CONFLICT DO NOTHING"
    #: Taken first when the tables are created: several processes creating them at once (None:
    #: the engine's write transaction already excludes the others).
    create_lock: str | None = None
    #: Taken first by a compaction, on the memory's configuration row: a drop waits for it.
    #: Finding no row is finding no memory.  (None: the write transaction excludes drops.)
    compact_lock: str | None = None
    #: Taken by a drop after the configuration row is deleted and before the log is: commits
    #: in flight end first (None: the write transaction excludes commits).
    drop_lock: str | None = None
    #: Tells waiting replicas that the memory (the one parameter: its name) changed; sent by a
    #: drop (an engine's commit says so itself).  None: the engine's waiters poll.
    announce: str | None = None
    #: The errors that mean a write transaction lost to a concurrent one (nothing written).
    conflict: tuple[type[Exception], ...] = ()


#: The tables of a store, as the shared statements name them (each engine's prefix before).
TABLES = ("meta", "memories", "entries", "log", "checkpoints", "checkpoint_entries")


class Statements:
    """Every statement the shared operations send, in one :class:`Dialect` (see :func:`statements`)."""

    def __init__(self, dialect: Dialect) -> None:
        d = dialect
        tables = {name: d.prefix + name for name in TABLES}

        def sql(text: str) -> str:
            return text.format(**tables).replace("?", d.mark)

        whole = f"{d.integer} NOT NULL"
        operation = ", op TEXT NOT NULL" if d.operation_ids else ""
        #: The tables, created together (in one transaction, with the metadata).
        self.schema = tuple(
            sql(text)
            for text in (
                "CREATE TABLE IF NOT EXISTS {meta} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                "CREATE TABLE IF NOT EXISTS {memories} (name TEXT PRIMARY KEY, config TEXT NOT NULL)",
                f"CREATE TABLE IF NOT EXISTS {{entries}} (name TEXT NOT NULL, seq {whole}, entry TEXT NOT NULL,"
                f" PRIMARY KEY (name, seq)){d.keyed}",
                f"CREATE TABLE IF NOT EXISTS {{log}} (name TEXT NOT NULL, version {whole}, head TEXT NOT NULL,"
                f" record TEXT NOT NULL{operation}, PRIMARY KEY (name, version)){d.keyed}",
                f"CREATE TABLE IF NOT EXISTS {{checkpoints}} (name TEXT NOT NULL, version {whole},"
                " head TEXT NOT NULL, PRIMARY KEY (name, version))",
                f"CREATE TABLE IF NOT EXISTS {{checkpoint_entries}} (name TEXT NOT NULL, version {whole},"
                f" seq {whole}, entry TEXT NOT NULL, PRIMARY KEY (name, version, seq)){d.keyed}",
            )
        )
        self.tables = frozenset(tables.values())
        self.meta = sql("SELECT key, value FROM {meta}")
        self.write_meta = sql(d.insert_new.format(table="{meta}", values="('format', ?), ('version', ?)"))
        self.names = sql("SELECT name FROM {memories} ORDER BY name")
        self.config = sql("SELECT config FROM {memories} WHERE name = ?")
        self.known = sql("SELECT 1 FROM {memories} WHERE name = ?")
        self.claim = sql(d.insert_new.format(table="{memories}", values="(?, ?)"))
        #: Whether a row of a memory but its configuration is there (one statement a table).
        self.remains = tuple(
            sql(f"SELECT 1 FROM {{{table}}} WHERE name = ? LIMIT 1")
            for table in ("log", "checkpoints", "entries", "checkpoint_entries")
        )
        self.put_row = sql("INSERT INTO {entries} VALUES (?, ?, ?)")
        self.head_log = sql("SELECT version, head FROM {log} WHERE name = ? ORDER BY version DESC LIMIT 1")
        self.head_checkpoint = sql(
            "SELECT version, head FROM {checkpoints} WHERE name = ? ORDER BY version DESC LIMIT 1"
        )
        self.rows = sql("SELECT seq, entry FROM {entries} WHERE name = ?")
        self.read = sql(
            "SELECT version, record FROM {log} WHERE name = ? AND version > ? AND version <= ? ORDER BY version"
        )
        self.checkpoint = sql(
            "SELECT version, head FROM {checkpoints} WHERE name = ? AND version <= ? ORDER BY version DESC LIMIT 1"
        )
        self.checkpoint_rows = sql("SELECT seq, entry FROM {checkpoint_entries} WHERE name = ? AND version = ?")
        self.newest_checkpoint = sql("SELECT max(version) FROM {checkpoints} WHERE name = ?")
        self.add_checkpoint = sql("INSERT INTO {checkpoints} VALUES (?, ?, ?)")
        self.copy_rows = sql(
            "INSERT INTO {checkpoint_entries} SELECT name, ?, seq, entry FROM {entries} WHERE name = ?"
        )
        #: What a compaction deletes, given the memory and the older of the two checkpoints it keeps.
        self.trim = (
            sql("DELETE FROM {checkpoint_entries} WHERE name = ? AND version < ?"),
            sql("DELETE FROM {checkpoints} WHERE name = ? AND version < ?"),
            sql("DELETE FROM {log} WHERE name = ? AND version <= ?"),
        )
        self.drop_config = sql("DELETE FROM {memories} WHERE name = ?")
        self.drop_rest = tuple(
            sql(f"DELETE FROM {{{table}}} WHERE name = ?")
            for table in ("log", "entries", "checkpoints", "checkpoint_entries")
        )
        self.create_lock = None if d.create_lock is None else sql(d.create_lock)
        self.compact_lock = None if d.compact_lock is None else sql(d.compact_lock)
        self.drop_lock = None if d.drop_lock is None else sql(d.drop_lock)
        self.announce = None if d.announce is None else sql(d.announce)


@functools.cache
def statements(dialect: Dialect) -> Statements:
    """The statements of ``dialect``, made once."""
    return Statements(dialect)


def bound(n: int) -> int:
    """``n`` within the ints both engines bind (asked past them, past every version kept)."""
    return min(max(n, -MAX_INT - 1), MAX_INT)


class SQL:
    """The operations of :class:`~lethe.store.Store` that SQL engines share, in one dialect.

    Each takes the engine's :class:`Run` and ``name``, and raises what the
    :class:`~lethe.store.Store` method of the same name raises.  A column
    holding what lethe never writes there (another client wrote it) raises
    :class:`StoreError` naming the memory, after ``where`` (the engine's
    location, such as its file).

    Args:
        dialect: How the engine says what differs.
        where: Put before each message of a damaged store.
    """

    def __init__(self, dialect: Dialect, where: str = "") -> None:
        self.dialect = dialect
        self.where = where
        self.q = statements(dialect)

    # -- pieces the engines use inside their own transactions ----------------

    def create(self, conn: Connection) -> None:
        """Create the tables and write the metadata, in the engine's write transaction."""
        if self.q.create_lock is not None:
            conn.execute(self.q.create_lock)
        for statement in self.q.schema:
            conn.execute(statement)
        conn.execute(self.q.write_meta, (FORMAT, str(VERSION)))

    def meta(self, conn: Connection) -> dict[str, str]:
        """The metadata (format and version) as stored."""
        return dict(conn.execute(self.q.meta).fetchall())

    def known(self, conn: Connection, name: str) -> bool:
        """Whether ``name`` is a memory of the store (its configuration is there)."""
        return conn.execute(self.q.known, (name,)).fetchone() is not None

    def head(self, conn: Connection, name: str) -> tuple[int, str]:
        """The latest version of ``name`` and its head: the newest log row, else the newest
        checkpoint (compaction keeps the newest log row).

        Raises:
            KeyError: ``name`` was never opened.
        """
        row = (
            conn.execute(self.q.head_log, (name,)).fetchone()
            or conn.execute(self.q.head_checkpoint, (name,)).fetchone()
        )
        if row is None:
            raise KeyError(name)
        return self.version(row[0], name, "latest version"), self.text(row[1], name, "head")

    def damaged(self, name: str, what: str) -> StoreError:
        """The error for a memory whose stored ``what`` is not what lethe writes."""
        return StoreError(f"{self.where}{name!r}: the store is damaged: {what}")

    def version(self, value: object, name: str, what: str) -> int:
        """A version as read from a column (SQLite keeps whatever another client wrote there)."""
        if type(value) is not int:
            raise self.damaged(name, f"its {what} is {str(value)[:24]!r}, not a version number")
        return value

    def text(self, value: object, name: str, what: str) -> str:
        """A head, record or configuration as read from a column (a BLOB or a number is refused)."""
        if type(value) is not str:
            raise self.damaged(name, f"its {what} is {type(value).__name__}, not text")
        return value

    def _config(self, conn: Connection, name: str) -> str | None:
        row = conn.execute(self.q.config, (name,)).fetchone()
        return None if row is None else self.text(row[0], name, "configuration")

    # -- the operations -------------------------------------------------------

    def names(self, run: Run) -> list[str]:
        """See :meth:`lethe.store.Store.names`."""
        return run(lambda conn: [row[0] for row in conn.execute(self.q.names).fetchall()])

    def config(self, run: Run, name: str) -> str:
        """See :meth:`lethe.store.Store.config`."""
        stored = run(lambda conn: self._config(conn, name))
        if stored is None:
            raise KeyError(name)
        return stored

    def open(self, run: Run, name: str, config: str, head: str, rows: Sequence[tuple[int, str]]) -> str:
        """See :meth:`lethe.store.Store.open`: a read, and a write transaction only to create."""

        def create(conn: Connection) -> str | None:
            # The configuration row first: of two processes creating the name, the second skips
            # it (waiting for the first's transaction where the engine locks rows) and reads it.
            if not conn.execute(self.q.claim, (name, config)).rowcount:
                return self._config(conn, name)  # None: dropped meanwhile, try again
            if any(conn.execute(statement, (name,)).fetchone() is not None for statement in self.q.remains):
                raise StoreError(config_missing(name, self.where))  # rolled back: nothing written
            conn.cursor().executemany(self.q.put_row, [(name, seq, row) for seq, row in rows])
            self._checkpoint(conn, name, 0, head)
            return config

        while True:
            stored = run(lambda conn: self._config(conn, name))
            if stored is None:
                stored = run(create, write=True)
            if stored is not None:
                return stored

    def load(self, run: Run, name: str) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.load`.  The rows are given back as the columns hold
        them (the reader checks each put order and text)."""

        def work(conn: Connection) -> tuple[int, str, list[tuple[int, str]]]:
            version, head = self.head(conn, name)
            return version, head, conn.execute(self.q.rows, (name,)).fetchall()

        return run(work, snapshot=True)

    def read(self, run: Run, name: str, after: int, upto: int | None = None) -> list[tuple[int, str]]:
        """See :meth:`lethe.store.Store.read`."""
        return self.records(run(functools.partial(self.read_on, name=name, after=after, upto=upto)), name)

    def read_on(self, conn: Connection, name: str, after: int, upto: int | None = None) -> list[tuple[int, str]]:
        """:meth:`read` on ``conn``, the rows as the database gave them (see :meth:`records`)."""
        rows: list[tuple[int, str]] = conn.execute(
            self.q.read, (name, bound(after), MAX_INT if upto is None else bound(upto))
        ).fetchall()
        if not rows and not self.known(conn, name):
            raise KeyError(name)
        return rows

    def records(self, rows: list[tuple[Any, Any]], name: str) -> list[tuple[int, str]]:
        """``rows`` of the log as the database gave them, each a version and its record.

        Raises:
            StoreError: a version that is not one, or a record that is not text.
        """
        for version, record in rows:
            if type(version) is not int or type(record) is not str:
                self.version(version, name, "log version")
                self.text(record, name, f"log record {version}")
        return rows

    def checkpoint(self, run: Run, name: str, at_most: int | None = None) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.checkpoint`."""
        high = MAX_INT if at_most is None else bound(at_most)

        def work(conn: Connection) -> tuple[Any, list[tuple[int, str]]]:
            found = conn.execute(self.q.checkpoint, (name, high)).fetchone()
            if found is None:
                raise KeyError(name if at_most is None else at_most)
            return found, conn.execute(self.q.checkpoint_rows, (name, found[0])).fetchall()

        found, rows = run(work, snapshot=True)
        return self.version(found[0], name, "checkpoint"), self.text(found[1], name, "checkpoint's head"), rows

    def compact(self, run: Run, name: str, min_gap: int) -> bool:
        """See :meth:`lethe.store.Store.compact`: one write transaction, copying from one snapshot
        (so the head and the rows copied are of one version).  Tried again after a lost reply,
        a compaction that was made answers False (the checkpoint it made is recent)."""

        def work(conn: Connection) -> bool:
            # Held until the end: a drop waits for this compaction (or this one fails if the drop
            # came first), so no checkpoint of a dropped memory is left behind.
            if self.q.compact_lock is not None and conn.execute(self.q.compact_lock, (name,)).fetchone() is None:
                raise KeyError(name)
            version, head = self.head(conn, name)
            newest = self.version(
                conn.execute(self.q.newest_checkpoint, (name,)).fetchone()[0], name, "newest checkpoint"
            )
            if version - newest < min_gap:
                return False  # nothing written
            self._checkpoint(conn, name, version, head)
            for statement in self.q.trim:
                conn.execute(statement, (name, newest))
            return True

        try:
            return run(work, write=True, snapshot=True)
        except self.dialect.conflict:
            return False  # another process checkpointed this version meanwhile: nothing written

    def _checkpoint(self, conn: Connection, name: str, version: int, head: str) -> None:
        """Copy the current rows of ``name`` as the checkpoint of ``version``, with ``head``."""
        conn.execute(self.q.add_checkpoint, (name, version, head))
        conn.execute(self.q.copy_rows, (version, name))

    def drop(self, run: Run, name: str) -> bool:
        """See :meth:`lethe.store.Store.drop`: one write transaction."""

        def work(conn: Connection) -> bool:
            # The configuration first: a compaction holding it (the compact lock) ends before.
            removed: int = conn.execute(self.q.drop_config, (name,)).rowcount
            # Then the log, locked against commits: one in flight ends first and is deleted with
            # the rest; one that comes after finds no version to follow.
            if self.q.drop_lock is not None:
                conn.execute(self.q.drop_lock)
            for statement in self.q.drop_rest:
                removed += conn.execute(statement, (name,)).rowcount
            if self.q.announce is not None:
                conn.execute(self.q.announce, (name,))
            return removed > 0

        return run(work, write=True)
