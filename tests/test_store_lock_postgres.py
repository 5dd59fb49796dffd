"""PostgreSQL's writer lock: once a memory has other writers, each commit is one run of ``fn``.

``Shared`` takes ``PostgresStore.lock(name)`` (an advisory lock, in a transaction of its own
connection) from a write's catch-up to its commit once its last read found another writer's
commit; a writer alone commits in one round trip, without it, and its commit goes in only while
no other writer holds the lock.  The lock only saves work: a holder that never lets go delays a
writer by a second (or the store's ``timeout``) at most, and a killed one frees it at once.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest

from lethe import Memory
from lethe.store import PostgresStore, Shared, _postgres

from ._writers import counted, race_in_processes, race_in_threads, take_turns

WRITERS = 4
UPDATES = 30
LOCK_CLASS = 0x6C65_7468  # the writer locks' first key, as PostgresStore documents it


def test_fn_runs_once_per_commit_across_processes(postgres_dsn: str) -> None:
    runs, version = race_in_processes(partial(PostgresStore, postgres_dsn), WRITERS, UPDATES)
    assert version == WRITERS * UPDATES
    # One attempt per commit, but where a writer went alone: every writer starts alone (its last
    # read found no one else's commit) and commits without the lock, in one round trip; all but
    # one lose that race, and so does the one that won it, on its next write.  From then on they
    # take the lock, until one finds no other waiting for it (near the end).  Without the lock:
    # about 350 runs.
    assert version <= runs <= version + 2 * WRITERS


def test_without_the_lock_writers_race_and_nothing_is_lost(postgres_dsn: str) -> None:
    runs, version = race_in_processes(partial(PostgresStore, postgres_dsn), WRITERS, UPDATES, locking=False)
    assert version == WRITERS * UPDATES
    assert runs >= version


def test_fn_runs_once_per_commit_across_threads(postgres_dsn: str) -> None:
    runs, version = race_in_threads(partial(PostgresStore, postgres_dsn), WRITERS, UPDATES)
    assert version == WRITERS * UPDATES
    assert version <= runs <= version + 2 * WRITERS  # (see above)


def test_fn_runs_once_per_commit_when_writers_take_turns_one_after_another(postgres_dsn: str) -> None:
    with PostgresStore(postgres_dsn) as a_store, PostgresStore(postgres_dsn) as b_store:
        runs, a, b = take_turns(a_store, b_store)
        # Each starts alone (nothing new at its last read) and commits without the lock: a's 1 and
        # 2 go in; b's 3, made on version 0, loses to them and runs again under the lock, and a's
        # 4 loses to 3 the same way.  From then on both take the lock: fn runs once per commit.
        assert runs == ["1", "2", "3", "3", "4", "4", "5", "6", "7"]
        assert a.version == 7
        b.current()
        b.current()  # a read outside a write that finds no one else's commit: b is alone again
        runs.clear()
        b.update(counted(runs, "8"))
        a.update(counted(runs, "9"))  # a takes the lock still, and reads first
        assert runs == ["8", "9"]
        assert sorted(b.current().keys()) == [str(k) for k in range(1, 10)]


def _another_writer_commits(store: PostgresStore) -> None:
    """A commit by another writer of "notes": a writer under test that finds it takes the lock."""
    other: Shared[str, str] = Shared(store, "notes", Memory())
    other.update(lambda m: m.put("o", key="o"))


def _key(name: str) -> int:
    """The second key of ``name``'s writer lock: a stable hash of the name, a signed int4."""
    return zlib.crc32(name.encode()) - (1 << 31)


@contextmanager
def _held_by_another_session(dsn: str, name: str) -> Iterator[Any]:
    """Another client's session holding the writer lock of ``name`` until the block ends."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_CLASS, _key(name)))
        yield other


def test_a_holder_that_never_lets_go_delays_a_writer_by_the_timeout_at_most(postgres_dsn: str) -> None:
    with PostgresStore(postgres_dsn, timeout=0.3) as store:
        shared: Shared[str, str] = Shared(store, "notes", Memory())
        shared.update(lambda m: m.put("first", key="k"))
        with _held_by_another_session(postgres_dsn, "notes"):
            began = time.monotonic()
            with store.lock("notes") as held:
                assert not held  # waited 0.3 s: goes on without it
            assert 0.25 < time.monotonic() - began < 5
            # Alone (its commit refused while the lock is held), then without the lock: it commits.
            assert shared.update(lambda m: m.put("written", key="k")).peek("k").value == "written"
            assert shared.version == 2
            with store.lock("other") as held:
                assert held  # another memory's lock is another key


def test_a_commit_sent_without_the_lock_yields_to_a_holder_but_one_outside_a_lock_block_does_not(
    postgres_dsn: str,
) -> None:
    with PostgresStore(postgres_dsn) as store:
        shared: Shared[str, str] = Shared(store, "notes", Memory())
        head = store.load("notes")[1]
        with _held_by_another_session(postgres_dsn, "notes") as other:
            with store.lock("notes", wait=False) as held:
                assert not held
                assert not store.append("notes", 1, "{}", head, [], [])  # refused: nothing written
            assert store.wait("notes", 0, 0) == 0
            other.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_CLASS, _key("notes")))
            with store.lock("notes", wait=False):
                assert shared.update(lambda m: m.put("v", key="k")).peek("k").value == "v"
        with _held_by_another_session(postgres_dsn, "notes"):
            # A writer made with locking=False never waits for the lock, nor yields to it.
            optimistic: Shared[str, str] = Shared(store, "notes", Memory(), locking=False)
            began = time.monotonic()
            optimistic.update(lambda m: m.put("w", key="k"))
            assert time.monotonic() - began < 0.5
            assert optimistic.version == 2


def test_the_lock_of_a_killed_session_is_free_at_once(postgres_dsn: str) -> None:
    import psycopg

    with PostgresStore(postgres_dsn, timeout=5) as store:
        Shared(store, "notes", Memory())
        with _held_by_another_session(postgres_dsn, "notes") as other:
            pid = other.info.backend_pid
            with psycopg.connect(postgres_dsn, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
            began = time.monotonic()
            with store.lock("notes") as held:
                assert held  # released by the server with its session
            assert time.monotonic() - began < 2


def test_the_lock_is_reentrant_in_a_thread_and_let_go_when_fn_raises(postgres_dsn: str) -> None:
    with PostgresStore(postgres_dsn) as store, PostgresStore(postgres_dsn, timeout=0.2) as other:
        shared: Shared[str, str] = Shared(store, "notes", Memory())
        with store.lock("notes") as outer, store.lock("notes") as inner:
            assert outer
            assert inner
            with other.lock("notes") as held:
                assert not held  # another store (another session) waits for it
        with other.lock("notes") as held:
            assert held  # let go with the outer block

        def fails(m: Memory[str, str]) -> Memory[str, str]:
            raise LookupError("no")

        for _ in range(2):  # the second write finds the first's commit: it takes the lock
            _another_writer_commits(other)
            with pytest.raises(LookupError):
                shared.update(fails)
        with other.lock("notes") as held:
            assert held  # let go after fn raised
        shared.update(lambda m: m.put("v", key="v"))
        assert shared.version == 3


def test_a_function_slower_than_the_timeout_under_the_lock_still_commits(
    postgres_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The server ends a session idle in its transaction past the store's timeout: the lock's
    # session, while fn runs.  The commit is not sent on it (psycopg would log the pipeline it
    # ended): nothing went out, so it goes in at once without the lock, and fn runs once.
    caplog.set_level(logging.WARNING, logger="psycopg")
    with PostgresStore(postgres_dsn, timeout=1) as store, PostgresStore(postgres_dsn) as other:
        shared: Shared[str, str] = Shared(store, "notes", Memory())
        _another_writer_commits(other)
        shared.update(lambda m: m.put("first", key="first"))  # under the lock, on a connection kept
        other_put: Shared[str, str] = Shared(other, "notes", Memory())
        other_put.update(lambda m: m.put("o2", key="o2"))
        runs: list[int] = []

        def slow(m: Memory[str, str]) -> Memory[str, str]:
            runs.append(1)
            if len(runs) == 1:
                time.sleep(1.5)
            return m.put("slow", key="k")

        assert shared.update(slow).peek("k").value == "slow"
        assert runs == [1]
        assert shared.version == 4
        with other.lock("notes") as held:
            assert held
    assert caplog.records == []


def test_a_lock_waited_for_in_vain_many_times_is_taken_once_free(postgres_dsn: str) -> None:
    # psycopg prepares a statement on its sixth run; a wait cut short must not leave the
    # store's lock connection believing in a statement the server never prepared.
    with PostgresStore(postgres_dsn, timeout=0.05) as store:
        Shared(store, "notes", Memory())
        with _held_by_another_session(postgres_dsn, "notes") as other:
            for _ in range(8):
                with store.lock("notes") as held:
                    assert not held
            other.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_CLASS, _key("notes")))
            for _ in range(8):
                with store.lock("notes") as held:
                    assert held


def test_threads_of_one_store_take_turns_too(postgres_dsn: str) -> None:
    # A thread waiting for the lock in this process is not in pg_locks: the holder must not
    # take itself for alone (about 1.4 runs per commit when it did).
    runs, version = race_in_threads(partial(PostgresStore, postgres_dsn), WRITERS, UPDATES, one_store=True)
    assert version == WRITERS * UPDATES
    assert version <= runs <= version + 2 * WRITERS


@pytest.mark.parametrize("locking", [True, False])
def test_a_commit_the_server_cancels_is_a_store_error_and_nothing_is_written(postgres_dsn: str, locking: bool) -> None:
    import psycopg

    from lethe.store import StoreError

    with PostgresStore(postgres_dsn) as store, PostgresStore(postgres_dsn) as other:
        shared: Shared[str, str] = Shared(store, "notes", Memory(), locking=locking)
        _another_writer_commits(other)  # (so the next write takes the lock)
        with psycopg.connect(postgres_dsn) as blocker:
            blocker.execute("LOCK TABLE lethe_log IN ACCESS EXCLUSIVE MODE")  # the commit waits on it

            def cancel() -> None:
                time.sleep(0.5)
                with psycopg.connect(postgres_dsn, autocommit=True) as admin:
                    admin.execute(
                        "SELECT pg_cancel_backend(pid) FROM pg_stat_activity"
                        " WHERE wait_event_type = 'Lock' AND datname = current_database()"
                    )

            canceller = threading.Thread(target=cancel)
            canceller.start()
            with pytest.raises(StoreError, match="nothing was written"):
                shared.update(lambda m: m.put("v", key="k"))
            canceller.join()
        assert shared.update(lambda m: m.put("v", key="k")).peek("k").value == "v"
        assert shared.version == 2


def test_a_closed_store_has_no_lock(postgres_dsn: str) -> None:
    from lethe.store import StoreError

    store = PostgresStore(postgres_dsn)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.lock("notes")


# The test forks on purpose (what lethe does in a forked child); the suite's own threads
# (servers' readers, other tests' pools) make Python 3.12+ warn about any fork.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_inside_fn_leaves_the_parents_lock_alone(postgres_dsn: str) -> None:
    with PostgresStore(postgres_dsn) as store, PostgresStore(postgres_dsn, timeout=0.5) as other:
        shared: Shared[str, str] = Shared(store, "notes", Memory())
        _another_writer_commits(other)  # (so the next write takes the lock)
        parent = os.getpid()

        def fn(m: Memory[str, str]) -> Memory[str, str]:
            if os.fork() == 0:
                raise SystemExit(0)  # the child leaves update() by unwinding it
            return m.put("v", key="k")

        try:
            shared.update(fn)
        except BaseException as exc:
            if os.getpid() != parent:
                os._exit(0 if type(exc) is SystemExit else 1)  # the child, unwound: how?
            raise
        _, status = os.wait()
        assert os.waitstatus_to_exitcode(status) == 0  # it unwound without touching the lock
        assert shared.version == 2
        with other.lock("notes") as held:
            assert held  # the parent's commit let go of it


def test_writers_queued_behind_a_slow_fn_wait_while_the_lock_changes_hands(postgres_dsn: str) -> None:
    # 4 writers, a fn of 0.35 s: the last in the queue waits about a second for its turn, past
    # the lock's patience; the lock changed hands meanwhile, so it waits on, and fn runs once per
    # commit but for each writer's first (see test_fn_runs_once_per_commit_across_processes).
    runs, version = race_in_threads(partial(PostgresStore, postgres_dsn), WRITERS, 3, pause=0.35)
    assert version <= runs <= version + WRITERS


def test_a_store_keeps_no_lock_state_for_memories_no_thread_writes(postgres_dsn: str) -> None:
    # A process writing many memories (a namespace per user, say) must not grow without bound;
    # the races above take and let go of the locks of threads waiting for each other.
    with PostgresStore(postgres_dsn) as store:
        for i in range(20):
            with store.lock(f"user-{i}") as held:
                assert held
                assert list(store._holds) == [f"user-{i}"]
        assert store._holds == {}
        shared: Shared[str, str] = Shared(store, "race", Memory())
        runs: list[str] = []

        def writer(w: int) -> None:
            for u in range(5):
                shared.update(counted(runs, f"{w}-{u}"))

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert len(shared.current()) == WRITERS * 5
        assert store._holds == {}


def test_a_waiter_giving_up_leaves_the_thread_that_took_the_lock_holding_it(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two threads wait for a store's lock; the one that gets it waits on the server behind another
    # session, while the other gives up.  Giving up must not forget the lock state the taker holds:
    # its reads and commit then ran outside the lock's transaction, and a nested block waited.
    monkeypatch.setattr(_postgres, "_LOCK_PATIENCE", 2.0)
    with PostgresStore(postgres_dsn, timeout=5) as store, PostgresStore(postgres_dsn, timeout=5) as other:
        Shared(store, "m", Memory())
        first_holds, let_go = threading.Event(), threading.Event()
        results: dict[str, Any] = {}

        def first() -> None:
            with store.lock("m"):
                first_holds.set()
                let_go.wait()

        def queued() -> None:  # next in the server's queue, from before the first lets go
            with other.lock("m") as held:
                results["other"] = held
                time.sleep(1.5)

        def waiter(who: str) -> None:
            with store.lock("m") as held:
                results[who] = held
                if held:
                    results["kept"] = "m" in store._holds
                    with store.lock("m") as again:
                        results["nested"] = again

        threads = [threading.Thread(target=first)]
        threads[0].start()
        first_holds.wait()
        threads.append(threading.Thread(target=queued))
        threads[1].start()
        time.sleep(0.3)
        threads += [threading.Thread(target=waiter, args=(who,)) for who in ("b", "e")]
        for t in threads[2:]:
            t.start()
        time.sleep(1.0)
        let_go.set()
        for t in threads:
            t.join(timeout=30)
        assert results["other"] is True
        assert sorted([results["b"], results["e"]]) == [False, True]  # one took it, the other gave up
        assert results["kept"] is True
        assert results["nested"] is True  # (reentrant: at once, where it waited and went without)
        assert store._holds == {}


def test_writers_of_a_process_with_many_files_open_take_turns_too(postgres_dsn: str) -> None:
    # Its connections' descriptors are past 1024, which select() refuses: a commit under the
    # lock was taken for lost, and fn ran again.
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1300:
        pytest.skip(f"at most {hard} open files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1300) if hard == resource.RLIM_INFINITY else hard, hard))
    files = [open(os.devnull) for _ in range(1100)]  # noqa: SIM115
    try:
        with PostgresStore(postgres_dsn) as a_store, PostgresStore(postgres_dsn) as b_store:
            runs, _, _ = take_turns(a_store, b_store)
            assert runs == ["1", "2", "3", "3", "4", "4", "5", "6", "7"]  # (as above)
    finally:
        for f in files:
            f.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_an_interrupt_while_a_thread_waits_for_the_lock_is_raised_as_itself(postgres_dsn: str) -> None:
    signal = pytest.importorskip("signal")
    if not hasattr(signal, "setitimer"):
        pytest.skip("no interval timers here")
    with PostgresStore(postgres_dsn, timeout=5) as store:
        holds, let_go = threading.Event(), threading.Event()

        def holder() -> None:
            with store.lock("m"):
                holds.set()
                let_go.wait()

        def interrupt(signum: int, frame: object) -> None:
            raise KeyboardInterrupt

        thread = threading.Thread(target=holder)
        thread.start()
        holds.wait()
        was = signal.signal(signal.SIGALRM, interrupt)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.2)
            with pytest.raises(KeyboardInterrupt), store.lock("m"):
                pass
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, was)
            let_go.set()
            thread.join(timeout=30)
        assert store._holds == {}
        with store.lock("m") as held:
            assert held
