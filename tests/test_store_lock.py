"""The SQLite engine's writer lock: each commit is one run of ``fn``, and the lock never hangs a writer.

``Shared`` holds ``SQLiteStore.lock(name)`` from a write's catch-up to its commit, so writers of
one memory take turns instead of racing: ``fn`` runs once per commit, in threads and processes.
The lock only saves work (the commit's compare-and-swap keeps every write safe without it), so a
holder that dies or never lets go, and two writers waiting for each other, delay a writer by the
store's ``timeout`` at most.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.process
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from lethe import Memory
from lethe.store import Shared, SQLiteStore, StoreError, _lock

from ._support import fake_clock
from ._writers import race_in_processes, race_in_threads, take_turns

WRITERS = 4
UPDATES = 30


def test_fn_runs_once_per_commit_across_processes(tmp_path: Path) -> None:
    runs, version = race_in_processes(partial(SQLiteStore, str(tmp_path / "locked.db")), WRITERS, UPDATES)
    assert version == WRITERS * UPDATES
    assert runs == version  # one attempt per commit


def test_without_the_lock_writers_race_and_nothing_is_lost(tmp_path: Path) -> None:
    opened = partial(SQLiteStore, str(tmp_path / "optimistic.db"))
    runs, version = race_in_processes(opened, WRITERS, UPDATES, locking=False)
    assert version == WRITERS * UPDATES
    assert runs >= version  # lost races ran fn again


def test_fn_runs_once_per_commit_across_threads(tmp_path: Path) -> None:
    runs, version = race_in_threads(partial(SQLiteStore, str(tmp_path / "threads.db")), WRITERS, UPDATES, pause=0)
    assert runs == version == WRITERS * UPDATES


def test_two_writers_waiting_for_each_other_go_on_without_the_lock(tmp_path: Path) -> None:
    """Each holds one memory's lock and, on its first run of fn, writes the other's: neither
    hangs (each waits out the timeout for the other's lock, and writes without it)."""
    path = str(tmp_path / "crossed.db")
    clock = fake_clock()
    both = threading.Barrier(2)
    errors: list[BaseException] = []

    def writer(mine: str, other: str) -> None:
        try:
            with SQLiteStore(path, timeout=0.3) as store:
                here: Shared[str, str] = Shared(store, mine, Memory(clock_fn=clock))
                there: Shared[str, str] = Shared(store, other, Memory(clock_fn=clock))

                runs = []

                def fn(m: Memory[str, str]) -> Memory[str, str]:
                    runs.append(1)
                    if len(runs) == 1:
                        both.wait(timeout=10)  # both hold their own memory's lock now
                        there.update(lambda n: n.put(f"from {mine}", key=f"from {mine}"))
                    return m.put("yes", key="done")

                here.update(fn)
        except BaseException as exc:  # reported below
            errors.append(exc)

    SQLiteStore(path).close()
    threads = [threading.Thread(target=writer, args=pair) for pair in (("a", "b"), ("b", "a"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    with SQLiteStore(path) as store:
        a: Memory[str, str] = Shared(store, "a", Memory(clock_fn=clock)).current()
        b: Memory[str, str] = Shared(store, "b", Memory(clock_fn=clock)).current()
        assert {"done", "from b"} <= set(a.keys())
        assert {"done", "from a"} <= set(b.keys())


def test_a_holder_that_never_lets_go_delays_a_writer_by_the_timeout_at_most(tmp_path: Path) -> None:
    path = str(tmp_path / "held.db")
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        with SQLiteStore(path) as store, store.lock("notes") as held:
            assert held
            holding.set()
            done.wait(timeout=60)

    SQLiteStore(path).close()
    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(timeout=10)
        with SQLiteStore(path, timeout=0.2) as store:
            with store.lock("notes") as held:
                assert not held  # waited 0.2 s: goes on without it
            shared: Shared[str, str] = Shared(store, "notes", Memory())
            assert shared.update(lambda m: m.put("written", key="k")).peek("k").value == "written"
            with store.lock("other") as held:
                assert held  # another memory's lock is another byte
    finally:
        done.set()
        holder.join(timeout=10)


def _hold_forever(path: str, ready: str) -> None:
    with SQLiteStore(path) as store, store.lock("notes"):
        Path(ready).touch()
        threading.Event().wait(600)


@contextmanager
def _held_elsewhere(path: str, ready: Path) -> Iterator[multiprocessing.process.BaseProcess]:
    """Another process holding the lock of "notes" in the store at ``path`` until it is killed."""
    SQLiteStore(path).close()
    with _started(_hold_forever, path, ready) as process:
        yield process


@contextmanager
def _started(
    target: Callable[[str, str], None], path: str, ready: Path
) -> Iterator[multiprocessing.process.BaseProcess]:
    """A process running ``target(path, ready)`` once it has made the file ``ready``; killed
    when the block ends, if it is still running."""
    process = multiprocessing.get_context("spawn").Process(target=target, args=(path, str(ready)))
    process.start()
    try:
        for _ in range(600):
            if ready.exists():
                break
            process.join(timeout=0.1)
        assert ready.exists()
        yield process
    finally:
        if process.is_alive():
            process.kill()
        process.join(timeout=30)


def _kill(process: multiprocessing.process.BaseProcess) -> None:
    assert process.pid is not None
    os.kill(process.pid, signal.SIGKILL)
    process.join(timeout=30)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_the_lock_of_a_killed_process_is_free_at_once(tmp_path: Path) -> None:
    path = str(tmp_path / "killed.db")
    with _held_elsewhere(path, tmp_path / "ready") as process:
        with SQLiteStore(path, timeout=0.05) as store, store.lock("notes") as held:
            assert not held  # the other process holds it
        _kill(process)
        with SQLiteStore(path, timeout=0.05) as store, store.lock("notes") as held:
            assert held  # released by the system with its process


def test_the_lock_is_reentrant_in_a_thread_and_a_read_only_store_takes_none(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SQLiteStore(str(path)) as store:
        Shared(store, "notes", Memory())
        with store.lock("notes") as outer, store.lock("notes") as inner:
            assert outer
            assert inner
    with SQLiteStore(str(path), read_only=True) as store, store.lock("notes") as held:
        assert not held


def test_closing_the_last_store_of_a_file_closes_its_lock_file(tmp_path: Path) -> None:
    fds = Path("/proc/self/fd")
    if not fds.exists():
        pytest.skip("needs /proc/self/fd")
    before = len(list(fds.iterdir()))
    for i in range(50):
        with SQLiteStore(str(tmp_path / f"{i}.db")) as store:
            shared: Shared[str, str] = Shared(store, "notes", Memory())
            shared.update(lambda m: m.put("v", key="k"))
    assert len(list(fds.iterdir())) <= before + 2


def _lock_files_open(path: Path) -> int:
    """How many of this process's descriptors are open on ``path``'s lock file."""
    fds = Path("/proc/self/fd")
    if not fds.exists():
        pytest.skip("needs /proc/self/fd")
    lock_file = str(path) + "-lethe-lock"
    found = 0
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):  # (the listing's own descriptor, closed by now)
            found += os.readlink(fd) == lock_file
    return found


def test_a_store_closed_while_its_lock_is_held_closes_the_lock_file_when_it_is_let_go(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(str(path))
    Shared(store, "notes", Memory())
    with store.lock("notes") as held:
        assert held
        store.close()  # (closing the descriptor now would drop the lock this block holds)
        assert _lock_files_open(path) == 1
    assert _lock_files_open(path) == 0


_OUT_OF_DESCRIPTORS = """
import os, resource, sys
from lethe import Memory
from lethe.store import Shared, SQLiteStore

store = SQLiteStore(sys.argv[1])
Shared(store, "notes", Memory())
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
spent = []
try:
    while True:
        spent.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
with store.lock("notes") as held:
    print(held)
for fd in spent:
    os.close(fd)
with store.lock("notes") as held:
    print(held)
"""


def test_a_process_out_of_descriptors_for_a_while_takes_the_lock_again_once_it_has_one(tmp_path: Path) -> None:
    resource = pytest.importorskip("resource")
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 64:
        pytest.skip("the hard limit of descriptors is below 64")
    import subprocess
    import sys

    ran = subprocess.run(
        [sys.executable, "-c", _OUT_OF_DESCRIPTORS, str(tmp_path / "m.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["False", "True"]


def test_locking_must_be_a_bool(tmp_path: Path) -> None:
    with SQLiteStore(str(tmp_path / "m.db")) as store, pytest.raises(TypeError, match="locking"):
        Shared(store, "notes", Memory(), locking=1)  # type: ignore[arg-type]


def test_fn_runs_once_per_commit_when_writers_take_turns_one_after_another(tmp_path: Path) -> None:
    # No writer waits for the lock here, but each finds the other's commits since it last read:
    # under the lock it reads first, so no run of fn is on a stale replica.
    path = str(tmp_path / "turns.db")
    with SQLiteStore(path) as a_store, SQLiteStore(path) as b_store:
        runs, a, b = take_turns(a_store, b_store)
        assert runs == list("1234567")
        assert a.version == 7
        assert sorted(b.current().keys()) == list("1234567")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_writer_interrupted_while_it_waits_leaves_the_lock_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt  # (Ctrl-C while the writer sleeps between its tries)

    path = str(tmp_path / "interrupted.db")
    with _held_elsewhere(path, tmp_path / "ready") as process, SQLiteStore(path) as store:
        monkeypatch.setattr(time, "sleep", interrupted)  # (what the lock's wait sleeps with)
        with pytest.raises(KeyboardInterrupt), store.lock("notes"):
            pass
        monkeypatch.undo()
        _kill(process)
        with store.lock("notes") as held:
            assert held  # the interrupted wait let go of this process's part of the lock


def test_writers_queued_behind_a_slow_fn_wait_while_the_lock_changes_hands(tmp_path: Path) -> None:
    # 4 writers, a fn of 0.35 s: the last in the queue waits about a second for its turn, past
    # the lock's patience; the lock changed hands meanwhile, so it waits on: fn runs once a commit.
    runs, version = race_in_threads(partial(SQLiteStore, str(tmp_path / "slow.db")), WRITERS, 3, pause=0.35)
    assert runs == version == 3 * WRITERS


def _wait_for_the_lock(path: str, waiting: str) -> None:
    with SQLiteStore(path, timeout=60) as store:
        Path(waiting).touch()
        with store.lock("notes"):
            pass


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP")
def test_a_writer_stopped_while_next_in_line_does_not_keep_the_others_waiting(tmp_path: Path) -> None:
    # One waiting writer at a time is next (it catches up between its tries, the others wait in
    # line); stopped there, it must not hold the others in line until their patience runs out.
    path = str(tmp_path / "line.db")
    with (
        _held_elsewhere(path, tmp_path / "ready") as holder,
        _started(_wait_for_the_lock, path, tmp_path / "waiting") as stopped,
    ):
        time.sleep(0.3)  # it is next in line by now
        assert stopped.pid is not None
        os.kill(stopped.pid, signal.SIGSTOP)
        held: list[bool] = []
        with SQLiteStore(path, timeout=2) as store:  # (it waits a second at most while no one commits)

            def wait() -> None:
                with store.lock("notes") as taken:
                    held.append(taken)

            waiter = threading.Thread(target=wait)
            waiter.start()
            time.sleep(0.2)  # waiting in line behind the stopped one
            _kill(holder)  # the lock is free, and the one next in line cannot take it
            waiter.join(timeout=30)
        assert held == [True]  # not next within a moment, it took the free lock itself


def test_two_writers_on_one_store_object_take_turns_on_the_latest(tmp_path: Path) -> None:
    # One connection: the other writer's commits leave SQLite's data_version as it is, so each
    # writer must still tell that the memory moved on since its own last commit.
    with SQLiteStore(str(tmp_path / "one.db")) as store:
        runs, a, b = take_turns(store, store)
        assert runs == list("1234567")
        assert a.version == 7
        assert sorted(a.current().keys()) == sorted(b.current().keys()) == list("1234567")


def test_a_writer_alone_under_the_lock_reads_no_log_before_its_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under the lock a writer reads what it missed before running fn; SQLite tells without a
    # read that no other connection committed since this writer's last commit.
    path = str(tmp_path / "alone.db")
    with SQLiteStore(path) as store:
        shared: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=fake_clock()))
        shared.update(lambda m: m.put("first", key="0"))
        reads: list[int] = []
        read = store.read

        def counted(name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
            reads.append(after)
            return read(name, after, upto)

        monkeypatch.setattr(store, "read", counted)
        for key in "123":
            shared.update(lambda m, key=key: m.put(key, key=key))
        assert reads == []
        with SQLiteStore(path) as other:  # another connection commits: read again, once
            Shared(other, "notes", Memory(clock_fn=fake_clock())).update(lambda m: m.put("other", key="9"))
        shared.update(lambda m: m.put("4", key="4"))
        assert len(reads) == 1
        shared.update(lambda m: m.put("5", key="5"))  # what that read found is known: no read
        assert len(reads) == 1
        assert sorted(shared.current().keys()) == list("0123459")


def test_a_memory_dropped_and_made_again_through_the_same_store_is_not_taken_for_the_old(
    tmp_path: Path,
) -> None:
    # Through one connection SQLite's data_version stays as it is: the new memory's version 3 is
    # not the old one's, and fn must not run on the old memory's replica.
    with SQLiteStore(str(tmp_path / "again.db")) as store:
        old: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=fake_clock()))
        for key in "abc":
            old.update(lambda m, key=key: m.put(key, key=key))
        assert store.drop("notes")
        new: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=fake_clock()))
        for key in "xyz":
            new.update(lambda m, key=key: m.put(key, key=key))
        assert old.version == new.version == 3
        ran: list[list[str]] = []

        def fn(m: Memory[str, str]) -> Memory[str, str]:
            ran.append(sorted(m.keys()))
            return m.put("d", key="d")

        with pytest.raises(StoreError, match="history went back"):
            old.update(fn)  # it follows the store again (see Shared._rejoin)
        assert ran == []
        assert sorted(old.update(fn).keys()) == list("dxyz")
        assert ran == [list("xyz")]


class _InterruptedOnce:
    """A thread lock whose next acquire takes it and then raises KeyboardInterrupt: what a Ctrl-C
    handled at the bytecode after the acquire does."""

    def __init__(self, lock: Any) -> None:
        self.lock, self.armed = lock, True

    def acquire(self, *args: Any, **kwargs: Any) -> bool:
        got: bool = self.lock.acquire(*args, **kwargs)
        if got and self.armed:
            self.armed = False
            raise KeyboardInterrupt
        return got

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lock, name)


def test_a_ctrl_c_just_after_the_thread_lock_was_taken_does_not_keep_it(tmp_path: Path) -> None:
    # The interrupt lands after the thread lock was taken and before it was recorded: the next
    # write of this process must take the lock, not wait for a thread lock no one will let go.
    with SQLiteStore(str(tmp_path / "interrupted.db"), timeout=0.3) as store:
        with store.lock("notes") as held:
            assert held
        byte = next(iter(_lock._FILES[store._locks._key].bytes.values()))
        byte.mutex = _InterruptedOnce(byte.mutex)  # type: ignore[assignment]
        with pytest.raises(KeyboardInterrupt), store.lock("notes"):
            pass
        for _ in range(2):
            with store.lock("notes") as held:
                assert held  # (before: False, after waiting the patience, on every write)


def test_a_store_closed_while_a_thread_waits_for_its_lock_keeps_the_lock_file_open(tmp_path: Path) -> None:
    # Closing the lock file's descriptor under a waiting thread let it try the lock on a number
    # that the next file opened reused: two holders at once, and a lock let go while held.
    path = str(tmp_path / "closing.db")
    with _held_elsewhere(path, tmp_path / "ready") as holder:
        store = SQLiteStore(path, timeout=30)
        got: list[bool] = []

        def wait() -> None:
            with store.lock("notes", lambda: True) as held:  # (the lock moves on: it waits)
                got.append(held)

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.2)  # waiting for the other process's lock
        descriptor = _lock._FILES[store._locks._key].fd
        store.close()
        assert _names_the_lock_file(descriptor, path)  # still open: a thread is waiting on it
        _kill(holder)
        waiter.join(timeout=30)
        assert got == [True]
    assert not _names_the_lock_file(descriptor, path)  # closed once the waiter let go


def _names_the_lock_file(descriptor: int, path: str) -> bool:
    try:
        found = os.fstat(descriptor)
    except OSError:
        return False
    lock_file = os.stat(path + "-lethe-lock")
    return (found.st_dev, found.st_ino) == (lock_file.st_dev, lock_file.st_ino)
