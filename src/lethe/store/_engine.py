"""The engine interface: what :class:`~lethe.store.Shared` needs from a place that keeps logs.

An engine keeps, for each named memory, as text it never interprets (JSON
written by :class:`~lethe.store.Shared`):

* the **configuration** document, written once by the first open;
* the **current state**: the latest version number, a small *head* (the
  memory's counters and latest clock reading) and one *row* per entry, keyed
  by the entry's put order (``seq``, an int from 0 to 2**63 - 1), so that
  opening reads the current entries and nothing else.  Reads give each row
  back with the put order it is keyed by, which the reader checks against the
  row's own: a commit removes rows by put order, so a row keyed by another one
  (written there by something else) would outlive its entry;
* the **log**: one record per committed version ``1, 2, 3, ...``, what that
  version changed.  Appending is a compare-and-swap on the version number:
  the record goes in at exactly ``latest + 1``, together with the new head
  and the rows it writes and removes, or nothing is written at all;
* **checkpoints**: copies of the state at some versions, made by the engine
  itself (:meth:`Store.compact`), from which a past version is rebuilt and
  before which the log is dropped.

A new engine (Redis, PostgreSQL, ...) implements these methods (``append``'s
``parent`` check included: a writer that has read nothing since its last
commit relies on it), each one
atomic on its own, and passes the engine tests in ``tests/test_store.py``
(and, on a server, the lost replies and server crashes of
``tests/test_store_faults.py``): it joins them by one line in ``ENGINES`` in
``tests/conftest.py``, the one list they run over (a guard test fails while
a class implementing :class:`Store` in ``lethe.store`` is missing from it).
An engine may also offer writer locks, ``lock(name, waiting=None)``: a context
manager holding the memory's lock against the memory's other writers,
whose ``__enter__`` gives whether it is held; ``waiting()`` is called between
tries while another writer holds it.  :class:`~lethe.store.Shared` holds it from each
write's catch-up to its commit, so its ``fn`` runs once per commit.  It only
saves work (a commit is safe without it), so it must never hang a writer:
:class:`~lethe.store.SQLiteStore` offers one (``lethe.store._lock``).  An engine
whose lock costs a round trip says so (``lock_round_trip = True``) and takes
``lock(name, waiting, wait=False)``: a block that takes nothing, in which a
commit goes in only while no other writer holds the lock; a writer alone
commits in such a block, and takes the lock once it meets another writer (a
lost race), until the lock's ``alone`` says no one waited for it at its commit
(:class:`~lethe.store.PostgresStore` offers one: an advisory lock).  An engine that can
tell without reading the log that no one committed a memory since this object last read or
committed it offers ``latest_known(name)``: that version and its head, else None; a writer
holding the lock then skips its catch-up (:class:`~lethe.store.SQLiteStore`: SQLite's
``data_version``).
An engine on SQL writes only its connections, commit and wait: the tables and
the other operations are ``lethe.store._sql``'s, in the engine's
:class:`~lethe.store._sql.Dialect`.  An engine that tries again after a lost
connection does so by ``lethe.store._retry.Retry``, the one policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from lethe._core.validate import number
from lethe.store._errors import StoreError

#: What an engine's metadata says: the format, and the version of it this lethe writes.
FORMAT = "lethe.store"
VERSION = 1


def checked_timeout(timeout: object) -> float:
    """An engine's ``timeout``: a finite number of seconds >= 0, else the error naming it."""
    return number(timeout, "timeout", low=0.0, kind="a number of seconds", expected="a finite number of seconds >= 0")


def check_format(meta: Mapping[str, str], where: str = "") -> None:
    """Raise :class:`StoreError` (its message starting with ``where``) unless ``meta``, an
    engine's stored ``format`` and ``version``, is a lethe store this lethe reads."""
    if meta.get("format") != FORMAT:
        raise StoreError(f"{where}not a lethe store (format {meta.get('format')!r})")
    version = meta.get("version", "")
    if not version.isdigit() or int(version) > VERSION:
        raise StoreError(
            f"{where}a lethe store of format version {version}, written by a newer lethe; "
            f"this one reads version {VERSION}"
        )


def config_missing(name: str, where: str = "") -> str:
    """What :meth:`Store.open` says of a memory whose configuration is gone but not the rest of it."""
    return (
        f"{where}{name!r}: the configuration of an existing memory is missing (the rest of it is still"
        f" there: a damaged store, or keys lost or evicted); nothing was written, and it is not created"
        f" afresh over what is left. store.drop({name!r}) removes what is left"
    )


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

    def names(self) -> list[str]:
        """The names of the memories this store holds, sorted."""
        ...

    def config(self, name: str) -> str:
        """The configuration document ``name`` was created with.

        Raises:
            KeyError: ``name`` was never opened.
        """
        ...

    def open(self, name: str, config: str, head: str, rows: Sequence[tuple[int, str]]) -> str:
        """Create the memory ``name`` unless it exists; return its stored configuration.

        Creating stores, at once, ``config``, version 0 with ``head`` and the
        entry ``rows`` (``(seq, row)`` pairs), and a checkpoint of that
        version.  When ``name`` exists nothing is written and the
        configuration it was created with is returned (the caller compares it).

        Raises:
            StoreError: the configuration of ``name`` is missing while the rest of it is
                still there (a damaged store: lost keys or rows); nothing is written, so a
                memory is never reset behind its writers' backs.  :meth:`drop` removes
                what is left.
        """
        ...

    def load(self, name: str) -> tuple[int, str, list[tuple[int, str]]]:
        """The current state of ``name``, read at once: ``(version, head, rows)``, each row as a
        ``(seq, row)`` pair, the put order it is keyed by and its text (in any order).

        Raises:
            KeyError: ``name`` was never opened.
        """
        ...

    def read(self, name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
        """The log records ``(version, record)`` of ``name`` with ``after < version <= upto``
        (no upper bound when ``upto`` is None), in version order.

        Records older than the older of the two newest checkpoints may be gone
        (compaction): a caller checks that the first version returned is ``after + 1``.

        Raises:
            KeyError: ``name`` was never opened.
        """
        ...

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
        """Commit ``version`` if the latest version of ``name`` is ``version - 1`` (and, when
        ``parent`` is not None, its head is exactly the text ``parent``); return whether it was
        committed (False: someone got there first, nothing is written).

        ``parent`` is the head of ``version - 1`` as the writer holds it: with it a
        writer commits without reading first (one round trip), and a store whose
        history went back and came forward again to ``version - 1`` by other
        commits is not written over.

        Committing adds ``record`` to the log, sets the head, deletes the rows
        whose put orders are in ``removed``, then writes the ``(seq, row)``
        pairs in ``written``, and (when ``config`` is not None) replaces the
        configuration document :meth:`config` returns, all at once.  When this
        returns True the commit is durable as the engine promises.

        The answer is always true, even when a reply is lost.  An engine on a
        server tags the commit with an operation id of its own; when the
        connection fails while the commit is on its way, it reconnects
        (retrying for up to its ``timeout``), reads back whether version
        ``version`` holds its operation, and answers that: True when it went
        in (once: a commit sent again is recognised, never applied twice),
        False only when it certainly is not in and never will be.  Other
        methods retry on a broken connection the same way.

        Raises:
            KeyError: ``name`` was never opened.
            StoreError: ``version`` is past the versions the engine keeps (its
                latest version was damaged so): nothing is written, never a
                version it could not read back.
            CommitUnknown: the server stayed unreachable past the engine's
                ``timeout``: whether ``version`` was committed is unknown.
        """
        ...

    def wait(self, name: str, after: int, timeout: float) -> int:
        """The latest version of ``name``, as soon as it is not ``after``, or once ``timeout``
        seconds have passed (0: at once), whichever comes first.

        An engine that can be told of a commit blocks on that (a stream read,
        a notification); one that cannot polls.  A version below ``after`` means
        the store went back (it lost versions someone had seen).

        Raises:
            KeyError: ``name`` was never opened.
        """
        ...

    def time(self) -> float:
        """The store's clock: seconds since the Unix epoch, read by the server (by this host
        for an engine that lives on it).  See :class:`~lethe.store.StoreClock`."""
        ...

    def checkpoint(self, name: str, at_most: int | None = None) -> tuple[int, str, list[tuple[int, str]]]:
        """The newest checkpoint ``(version, head, rows)`` of ``name`` with ``version <= at_most``
        (the newest of all when ``at_most`` is None), read at once; the rows are ``(seq, row)``
        pairs, as :meth:`load` gives them.

        Raises:
            KeyError: ``name`` was never opened, or no checkpoint that old is kept.
        """
        ...

    def compact(self, name: str, min_gap: int) -> bool:
        """Checkpoint the current state if the newest checkpoint is at least ``min_gap``
        versions older; then keep only the two newest checkpoints and the log after the
        older of them.  Return whether a checkpoint was made.

        The copy is made inside the engine: no state crosses to the caller.
        """
        ...

    def drop(self, name: str) -> bool:
        """Remove the memory ``name`` at once: its configuration, state, log and checkpoints,
        and its name from :meth:`names`.  Return whether there was anything to remove (False
        for a name never opened, or dropped already: nothing is written).

        Afterwards the methods that read or write ``name`` raise ``KeyError``, as for a name
        never opened (so a :class:`~lethe.store.Shared` still holding a replica of it raises
        :class:`StoreError`), and :meth:`open` creates it afresh.  This is also the way to
        remove what is left of a damaged memory that :meth:`open` refuses.
        """
        ...

    def close(self) -> None:
        """Release what the engine holds (connections); a closed engine is not used again:
        an engine that holds connections raises :class:`StoreError` from every method
        afterwards, a thread blocked in :meth:`wait` included."""
        ...
