"""Writer locks for a store on this host: one writer of a memory at a time, so ``fn`` runs once.

A write to a :class:`~lethe.store.Shared` memory is correct without a lock: the commit goes in
at exactly the next version or not at all (the engine's compare-and-swap), and a writer that
lost the race catches up and runs ``fn`` again.  Under contention that repeats work: every
lost race runs ``fn`` once more and folds the others' commits once more.  Holding a lock from
the catch-up to the commit makes each commit one attempt.

The lock is a byte of a side file (``<database>-lethe-lock``, empty: the locks hold no data),
one byte per memory (a stable hash of its name), taken with POSIX record locks
(``fcntl.lockf``), and a ``threading.Lock`` per byte for the threads of this process (POSIX
record locks belong to a process).  A second byte per memory says which waiting writer is next:
only that one catches up between its tries, so the waiters leave the cores to the holder.  Why not
SQLite's own write lock (``BEGIN IMMEDIATE`` held while ``fn`` runs): it holds the whole file,
so a ``fn`` that writes another memory of the same file (allowed, and its own commit) would
wait for itself; a byte per memory lets it.

The lock only saves work, correctness never rests on it, so it never makes a writer hang:

* the system releases it when its process dies (``kill -9`` included);
* a writer that waits for it ``patience`` seconds while it does not change hands (a holder
  whose ``fn`` is slow, or two writers each holding one memory and writing the other's) writes
  without it, as before, and its commit is as safe; while it changes hands (a commit went in:
  the writers take turns behind a ``fn`` that takes a while) the wait goes on, up to ``limit``
  seconds in all;
* where there is no ``fcntl`` (Windows), or the side file cannot be made (a read-only
  directory), writes go on without it; a process out of descriptors for now writes without it
  until it has one again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
import zlib
from collections.abc import Callable

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: writers run optimistically
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileLocks", "Held"]

# A memory's lock is a byte at an offset below 2**31, the byte held by the writer next in line for
# it 2**31 above (below 2**32: every platform with fcntl has a 64-bit off_t).
_SPAN = 1 << 31
# The lock file's name: the database's, and this.
_SUFFIX = "-lethe-lock"
# Why a lock file may fail to open now and open later: no locks for this write, not for good.
_PASSING = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EINTR, errno.EAGAIN})
#: How long a writer waits for a memory's lock, at most, before it writes without it: far longer
#: than writers take turns (a commit is about 0.1 ms), short enough that a holder stuck in a slow
#: ``fn`` costs the others a second, not the store's whole timeout.
PATIENCE = 1.0


# The first pause between tries, and the longest (each is 1.5 times the one before).
_FIRST_PAUSE = 0.00002
_LONGEST_PAUSE = 0.001
# How long a writer waits to be next, at most, before it tries the lock itself.  A holder that
# commits again at once may take the lock again before the next one tries it (so it folds no one
# else's commit; handing the lock on at every commit halved four writers' commits a second), and
# the others would wait in line for as long as it writes.
_IN_LINE = 0.1
# How often a writer waiting to be next catches up (to tell whether the lock changes hands).
_NOW_AND_THEN = 0.05


class _NoLocks(Exception):
    """The file takes no record locks (a file system without them): writes go on without."""


def _try(fd: int, offset: int) -> bool:
    """Take the byte at ``offset`` of ``fd`` if no other process holds it: whether taken.

    Raises:
        _NoLocks: the file system takes no record locks.
    """
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return False
        raise _NoLocks from None
    return True


def _untry(fd: int, offset: int) -> None:
    """Let go of the byte at ``offset`` of ``fd``."""
    with contextlib.suppress(OSError):  # (it is let go when the descriptor closes, at the latest)
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)


def _share(fd: int, database: str) -> None:
    """Give a lock file just made the database's permissions (as SQLite gives its ``-wal`` and
    ``-shm`` files), so every user who may write the database may take its locks."""
    try:
        wanted = os.stat(database).st_mode & 0o666
        if os.fstat(fd).st_mode & 0o666 != wanted:
            os.fchmod(fd, wanted)
    except OSError:
        pass  # not ours to change (another user made it): its locks are still taken where they can be


class _Byte:
    """One locked byte's state in this process: its thread lock, owner and depth (reentrant)."""

    __slots__ = ("depth", "mutex", "owner", "waits")

    def __init__(self) -> None:
        # Reentrant only so that a thread can tell it holds it (see recover): the lock's own
        # reentrancy is the owner and depth below.
        self.mutex = threading.RLock()
        self.owner: int | None = None
        self.depth = 0
        self.waits = 0  # the waits for the byte under the thread lock (a write inside one's catch-up)

    def recover(self) -> None:
        """Let go of the thread lock if this thread holds it without owning the byte or waiting
        for it: an interrupt (Ctrl-C) landed just after it was taken or just before it was let
        go, which would leave every later write of this process waiting for it."""
        while self.owner is None and not self.waits and self.mutex._is_owned():  # type: ignore[attr-defined]
            self.mutex.release()  # (_is_owned: as threading.Condition asks an RLock)


class _File:
    """This process's descriptor of one lock file and the state of its bytes.  The descriptor is
    closed only when no store of this process has the file open: closing any descriptor of a
    file drops every POSIX lock this process holds on it."""

    def __init__(self, key: str, fd: int) -> None:
        self.key = key
        self.fd = fd
        self.users = 0
        self.busy = 0  # the threads holding or waiting for one of its locks
        self.bytes: dict[int, _Byte] = {}

    def forget_if_unused(self) -> None:
        """Close the descriptor once no store of this process uses the file and no thread holds
        or waits for a lock in it (closing it would drop that lock, and a waiter would try a
        descriptor the number of which may name another file by then); call under ``_GUARD``."""
        if self.users <= 0 and self.busy <= 0 and _FILES.get(self.key) is self:
            del _FILES[self.key]
            os.close(self.fd)

    def done(self) -> None:
        """A thread that held or waited for a lock in the file is done with it."""
        with _GUARD:
            self.busy -= 1
            if self.users <= 0:  # every store of the file closed meanwhile
                self.forget_if_unused()


_FILES: dict[str, _File] = {}
_GUARD = threading.Lock()


class FileLocks:
    """The writer locks of the memories kept in one database file (see the module's docstring).

    ``path`` is the database's; ``patience`` is how long a writer waits for a memory's lock
    while it does not change hands before it writes without it, ``limit`` how long at most
    (None: ``patience``).  The side file is opened on the first write; call :meth:`close`
    when the store closes.
    """

    def __init__(self, path: str, patience: float, limit: float | None = None) -> None:
        self.patience = patience
        self.limit = max(patience, patience if limit is None else limit)
        self._key = os.path.realpath(path) + _SUFFIX
        self._pid: int | None = None  # the process this object counts as a user of its file in
        self._closed = fcntl is None
        self._found: dict[str, tuple[_File, int, _Byte]] = {}  # each name's byte, in process _pid

    def _file(self) -> _File | None:
        """This process's descriptor of the lock file, opened on first use (and anew in a
        forked child); None where there are no locks."""
        if self._closed:
            return None
        pid = os.getpid()
        with _GUARD:
            found = _FILES.get(self._key)
            if found is None:
                try:
                    fd = os.open(self._key, os.O_RDWR | os.O_CREAT, 0o644)
                except OSError as exc:
                    # A directory this process cannot write: no locks (nor writes).  Out of
                    # descriptors: none for this write, and the file is tried again next time.
                    self._closed = exc.errno not in _PASSING
                    return None
                _share(fd, self._key[: -len(_SUFFIX)])
                found = _FILES[self._key] = _File(self._key, fd)
            if self._pid != pid:
                self._pid = pid
                found.users += 1
            return found

    def held(self, name: str, waiting: Callable[[], object] | None = None) -> Held:
        """The writer lock of the memory ``name``, for a ``with`` block, which gets whether it
        is held (False: waited ``patience`` seconds, or no lock here).  Reentrant in a thread.

        ``waiting`` is called between tries while another writer holds the lock (a writer
        folds in the commits made meanwhile, so that little is left to fold once it holds it);
        it returns whether the memory moved on (the lock changed hands: the wait goes on)."""
        return Held(self, name, waiting)

    def _byte(self, name: str) -> tuple[_File, int, _Byte] | None:
        """The lock file and the byte of ``name`` in it, with its state; None: no locks here."""
        if self._pid == os.getpid():
            found = self._found.get(name)
            if found is not None:
                return found
        else:
            self._found.clear()  # (a forked child: the parent's)
        file = self._file()
        if file is None:
            return None
        offset = zlib.crc32(name.encode("utf-8", "surrogatepass")) % _SPAN
        with _GUARD:
            byte = file.bytes.setdefault(offset, _Byte())
        if len(self._found) > 1024:  # (a store writing many names: keep the cache small)
            self._found.clear()
        found = self._found[name] = (file, offset, byte)
        return found

    def _acquire(self, name: str, waiting: Callable[[], object] | None) -> tuple[_File, int, _Byte] | None:
        """The lock of ``name`` taken (None: not)."""
        found = self._byte(name)
        if found is None:
            return None
        file, offset, byte = found
        me = threading.get_ident()
        if byte.owner == me:  # a write inside this thread's own write: the lock is held already
            byte.depth += 1
            return found
        with _GUARD:
            file.busy += 1
        taken = False
        try:
            taken = self._take(file, offset, byte, waiting, me)
        finally:
            if not taken:
                file.done()
        return found if taken else None

    def _take(self, file: _File, offset: int, byte: _Byte, waiting: Callable[[], object] | None, me: int) -> bool:
        """Take the thread lock of ``byte``, then its byte at ``offset`` of ``file``: whether
        both were taken (and the byte is owned by this thread ``me``)."""
        byte.recover()
        deadline = end = None
        if not byte.mutex.acquire(blocking=False):  # (free, the usual case: no clock read)
            now = time.monotonic()
            deadline, end = now + self.patience, now + self.limit
            # The threads of this process: a turn each, the wait going on while they commit.
            while not byte.mutex.acquire(timeout=max(0.0, min(deadline, end) - time.monotonic())):
                now = time.monotonic()
                if now >= end or waiting is None or not waiting():
                    return False
                deadline = now + self.patience
        try:
            byte.waits += 1
            try:
                if self._wait(file.fd, offset, waiting, deadline, end):
                    byte.owner, byte.depth = me, 1
                    return True
            finally:
                byte.waits -= 1
        except BaseException:  # (waiting() failed, or an interrupt while asleep): not held
            if byte.owner == me:  # (an interrupt just after it was taken)
                byte.owner, byte.depth = None, 0
            _untry(file.fd, offset)  # (no other thread holds it: this one holds the thread lock)
            byte.mutex.release()
            raise
        byte.mutex.release()
        return False

    def _wait(
        self, fd: int, offset: int, waiting: Callable[[], object] | None, deadline: float | None, end: float | None
    ) -> bool:
        """Take the lock at ``offset`` against the other processes: whether it was taken.

        Polled, so that a holder that never lets go (a ``fn`` waiting on something for ever)
        delays a writer by ``patience`` at most.  Of the writers waiting, one is *next* (it
        holds the byte ``_SPAN`` above the lock's): it tries the lock and catches up
        (``waiting``) between tries, so that little is left to fold once it holds it.  The
        others try to be next, and catch up only now and then (to tell whether the lock changes
        hands, so the wait goes on); one not next within ``_IN_LINE`` (the next one stopped, or
        the holder keeps the lock) tries the lock itself from then on.

        When every waiter caught up between tries, their catch-ups competed with the holder's
        commit: with four writers on two cores, 3,360 commits a second against 3,606 with one
        waiter next (0.73x and 0.79x one writer's; medians of nine interleaved trials).
        """
        try:
            if _try(fd, offset):  # (free, the usual case: no clock read)
                return True
            return self._wait_in_line(fd, offset, waiting, deadline, end)
        except _NoLocks:
            return False

    def _wait_in_line(
        self, fd: int, offset: int, waiting: Callable[[], object] | None, deadline: float | None, end: float | None
    ) -> bool:
        """:meth:`_wait`, once the lock was found held."""
        now = time.monotonic()
        if deadline is None or end is None:
            deadline, end = now + self.patience, now + self.limit
        next_byte = offset + _SPAN
        is_next = False
        in_line = now + _IN_LINE  # until then, it waits to be next
        checked = now
        pause = _FIRST_PAUSE
        try:
            while True:
                if not is_next and now < in_line:
                    is_next = _try(fd, next_byte)
                    if is_next:
                        pause = _FIRST_PAUSE
                trying = is_next or now >= in_line
                if trying and _try(fd, offset):
                    return True
                if waiting is not None and (trying or now - checked >= _NOW_AND_THEN):
                    checked = now
                    if waiting():
                        deadline = time.monotonic() + self.patience  # the lock changed hands: turns
                now = time.monotonic()
                left = min(deadline, end) - now
                if left <= 0:
                    return False
                time.sleep(min(pause, left))
                pause = min(pause * 1.5, _LONGEST_PAUSE)
                now = time.monotonic()
        finally:
            _untry(fd, next_byte)  # (also when an interrupt landed just after it was taken)

    @staticmethod
    def _release(file: _File, offset: int, byte: _Byte) -> None:
        byte.depth -= 1
        if byte.depth:
            return
        try:
            fcntl.lockf(file.fd, fcntl.LOCK_UN, 1, offset)
        finally:
            byte.owner = None
            byte.mutex.release()
            file.done()  # (after: a store closing meanwhile keeps the descriptor until then)

    def close(self) -> None:
        """This store no longer writes: the file's descriptor closes with the last such store."""
        if self._closed:
            return
        self._closed = True
        self._found.clear()
        with _GUARD:
            file = _FILES.get(self._key)
            if file is None or self._pid != os.getpid():
                return
            file.users -= 1
            file.forget_if_unused()


class Held:
    """One hold of a memory's writer lock, for a ``with`` block (see :meth:`FileLocks.held`)."""

    __slots__ = ("_got", "_locks", "_name", "_waiting")

    def __init__(self, locks: FileLocks, name: str, waiting: Callable[[], object] | None) -> None:
        self._locks, self._name, self._waiting = locks, name, waiting
        self._got: tuple[_File, int, _Byte] | None = None

    def __enter__(self) -> bool:
        self._got = self._locks._acquire(self._name, self._waiting)
        return self._got is not None

    def __exit__(self, *exc: object) -> None:
        got, self._got = self._got, None
        if got is not None:
            FileLocks._release(*got)


def _before_fork() -> None:
    _GUARD.acquire()


def _after_fork_in_parent() -> None:
    _GUARD.release()


def _after_fork_in_child() -> None:
    # The parent's locks are not the child's (POSIX record locks are not inherited), and its
    # other threads are gone: the child starts with none, and leaves the inherited descriptors
    # alone.  The registry's lock was taken around the fork (so no thread the child lacks held
    # its copy); the child gets a fresh one.
    global _GUARD
    _FILES.clear()
    _GUARD = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)
