"""lethe.store.Shared under ordinary mistakes and operations: a write inside a write, a memory that
vanished from its store, another custom decay function, a fork mid-write, asyncio cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import time
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory
from lethe.store import (
    HistoryRewound,
    InMemoryStore,
    MemoryGone,
    Shared,
    SQLiteStore,
    Store,
    StoreError,
    TemplateIgnored,
)

from ._support import fake_clock
from .conftest import DURABLE_ENGINES, make_store


@pytest.fixture
def clock() -> ManualClock:
    return fake_clock()


def _cold(shared: Shared[Any, Any]) -> Memory[Any, Any]:
    """The memory as a process that opens the name now reads it (the tests' templates: max_entries=10)."""
    return Shared(shared.store, shared.name, Memory(max_entries=10)).current()


def _same(a: Memory[Any, Any], b: Memory[Any, Any]) -> None:
    assert {e.key: (e.seq, e.value) for e in a} == {e.key: (e.seq, e.value) for e in b}


# -- a write inside a write -------------------------------------------------


def test_write_inside_update_is_refused_and_nothing_committed(store: Store, clock: ManualClock) -> None:
    shared: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))

    def outer(m: Memory[str, str]) -> Memory[str, str]:
        shared.update(lambda inner: inner.put("a note", key="inner"))
        return m.put("the decision", key="outer")

    with pytest.raises(RuntimeError, match=r"from inside a function this Shared is running"):
        shared.update(outer)
    assert shared.version == 0
    assert len(shared.current()) == 0
    with pytest.raises(RuntimeError, match="from inside"):
        shared.transact(lambda m: (m, shared.transact(lambda n: (n.put("x", key="x"), None))))
    assert shared.version == 0


def test_a_refused_inner_write_that_fn_catches_leaves_one_correct_commit(store: Store, clock: ManualClock) -> None:
    shared: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))

    def outer(m: Memory[str, str]) -> Memory[str, str]:
        with contextlib.suppress(RuntimeError):
            shared.update(lambda inner: inner.put("a note", key="inner"))
        return m.put("the decision", key="outer")

    shared.update(outer)
    assert shared.version == 1
    assert list(shared.current().keys()) == ["outer"]
    shared.update(lambda m: m.delete("outer"))
    _same(shared.current(), _cold(shared))
    assert len(_cold(shared)) == 0


def test_catching_up_inside_fn_commits_on_the_right_version(store: Store, clock: ManualClock) -> None:
    """fn reads the latest version (another writer committed meanwhile): the write starts again."""
    shared: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    other: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    runs = []

    def fn(m: Memory[str, str]) -> Memory[str, str]:
        runs.append(len(m))
        if len(runs) == 1:  # another writer commits meanwhile (another thread: no write inside a write)
            writer = threading.Thread(target=other.update, args=(lambda o: o.put("theirs", key="theirs"),))
            writer.start()
            writer.join()
            shared.current()  # catches this replica up while fn runs on the version before
        return m.put("mine", key="mine")

    shared.update(fn)
    assert runs == [0, 1]
    seqs = [e.seq for e in shared.current()]
    assert len(set(seqs)) == 2
    _same(shared.current(), _cold(shared))
    _same(shared.current(), other.current())


# -- a memory that vanished ---------------------------------------------------


def _vanish(store: Store, name: str) -> None:
    assert store.drop(name)  # type: ignore[attr-defined]


def test_a_vanished_memory_raises_store_error_on_every_call_until_made_again(store: Store, clock: ManualClock) -> None:
    shared: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    shared.update(lambda m: m.put("v", key="k"))
    _vanish(store, "notes")
    for _ in range(2):  # every call, not only the first
        with pytest.raises(MemoryGone, match="no longer in the store"):
            shared.current()
        with pytest.raises(MemoryGone, match="no longer in the store"):
            shared.update(lambda m: m.put("w", key="j"))
        with pytest.raises(MemoryGone, match="no longer in the store"):
            shared.wait(timeout=0)
        with pytest.raises(MemoryGone, match="no longer in the store"):
            list(shared.evictions())
        with pytest.raises(StoreError):
            shared.at(1)
    # Created again on purpose: the old replica is told once that history went back, then follows.
    fresh: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    fresh.update(lambda m: m.put("again", key="new"))
    with pytest.raises(HistoryRewound, match="went back"):
        shared.current()
    assert list(shared.current().keys()) == ["new"]


def test_reopened_makes_a_vanished_memory_afresh_as_last_configured_with_the_same_hooks(
    store: Store, clock: ManualClock
) -> None:
    evicted: list[tuple[Entry[str, str], ...]] = []
    template = Memory(max_entries=2, clock_fn=clock, on_evict=evicted.append)
    shared: Shared[str, str] = Shared(store, "notes", template, max_clock_skew=None, checkpoint_every=3)
    shared.update(lambda m: m.put("v", key="k"))
    other: Shared[str, str] = Shared(store, "notes", Memory(max_entries=2, clock_fn=clock))
    other.configure(max_entries=3, half_life=7200.0)  # another process's change, seen at the next read
    assert shared.current().max_entries == 3
    _vanish(store, "notes")
    with pytest.raises(MemoryGone):
        shared.current()
    again = shared.reopened()
    assert (len(again.current()), again.current().max_entries, again.current().half_life) == (0, 3, 7200.0)
    for key in ("a", "b", "c", "d"):
        again.update(lambda m, key=key: m.put(key, key=key))
    assert [e.key for gone in evicted for e in gone] == ["a"]  # this process's hook, kept
    assert sorted(again.current().keys()) == ["b", "c", "d"]
    for old in (shared, other):  # (the memory made again: each old replica is told once, then follows)
        with pytest.raises(HistoryRewound):
            old.current()
        assert sorted(old.current().keys()) == ["b", "c", "d"]


def test_reopened_refuses_on_a_closed_shared(store: Store, clock: ManualClock) -> None:
    shared: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    shared.close()
    with pytest.raises(StoreError, match="closed"):
        shared.reopened()


def test_reopened_opens_what_another_process_made_meanwhile(store: Store, clock: ManualClock) -> None:
    shared: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    _vanish(store, "notes")
    Shared(store, "notes", Memory(max_entries=10, clock_fn=clock)).update(lambda m: m.put("new", key="n"))
    assert list(shared.reopened().current().keys()) == ["n"]
    _vanish(store, "notes")
    Shared(store, "notes", Memory(max_entries=5, clock_fn=clock))
    with pytest.raises(ValueError, match="another configuration"):
        shared.reopened()


def test_redis_keys_deleted_under_a_running_process(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> None:
    """A server restarted without persistence, or FLUSHALL: every call is a StoreError, never KeyError."""
    store = make_store("redis", request, tmp_path)
    shared: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    shared.update(lambda m: m.put("v", key="k"))
    client = store._client  # type: ignore[attr-defined]
    prefix = request.getfixturevalue("redis_prefix")
    for key in list(client.scan_iter(match=f"{prefix}:*")):
        client.delete(key)
    for _ in range(3):
        with pytest.raises(StoreError):
            shared.update(lambda m: m.put("w", key="j"))
        with pytest.raises(StoreError):
            shared.current()
    store.close()


# -- the stored configuration ---------------------------------------------------


def hourly(entry: Entry[Any, Any], now: datetime) -> float:
    return 0.5 ** ((now - entry.last_accessed_at).total_seconds() / 3600)


def every_second(entry: Entry[Any, Any], now: datetime) -> float:
    return 0.5 ** (now - entry.last_accessed_at).total_seconds()


class Tau:
    """A callable decay object with a declared parameter."""

    def __init__(self, tau: float) -> None:
        self.tau = tau

    def __call__(self, entry: Entry[Any, Any], now: datetime) -> float:
        return 0.5 ** ((now - entry.last_accessed_at).total_seconds() / self.tau)

    def __repr__(self) -> str:
        return f"Tau(tau={self.tau})"


def test_another_custom_decay_function_is_refused(store: Store, clock: ManualClock) -> None:
    Shared(store, "notes", Memory(decay_fn=hourly, clock_fn=clock))
    Shared(store, "notes", Memory(decay_fn=hourly, clock_fn=clock))  # the same one reopens
    with pytest.raises(ValueError, match=r"decay_fn .*every_second.*store\.drop"):
        Shared(store, "notes", Memory(decay_fn=every_second, clock_fn=clock))
    Shared(store, "tau", Memory(decay_fn=Tau(60.0), clock_fn=clock))
    Shared(store, "tau", Memory(decay_fn=Tau(60.0), clock_fn=clock))
    with pytest.raises(ValueError, match="decay_fn"):
        Shared(store, "tau", Memory(decay_fn=Tau(1.0), clock_fn=clock))


def test_a_custom_function_stored_by_an_older_lethe_is_accepted(clock: ManualClock) -> None:
    """Older stores kept only {"name": "custom"}: any custom function opens them, as before."""
    store = InMemoryStore()
    mine = Memory(decay_fn=hourly, clock_fn=clock)
    Shared(store, "old", mine)
    stored = json.loads(store.config("old"))
    assert stored["decay_fn"] == {"name": "custom", "function": f"{__name__}.hourly"}
    store._names["old"].config = json.dumps(dict(stored, decay_fn={"name": "custom"}))
    Shared(store, "old", mine)
    Shared(store, "old", Memory(decay_fn=every_second, clock_fn=clock))


def test_a_stored_configuration_that_is_not_json_is_a_store_error(clock: ManualClock) -> None:
    store = InMemoryStore()
    Shared(store, "notes", Memory(clock_fn=clock))
    store._names["notes"].config = "not json {"
    with pytest.raises(StoreError, match="configuration"):
        Shared(store, "notes", Memory(clock_fn=clock))
    store._names["notes"].config = "[1, 2]"
    with pytest.raises(StoreError, match="configuration"):
        Shared(store, "notes", Memory(clock_fn=clock))


def test_template_entries_ignored_by_an_existing_name_warn(clock: ManualClock) -> None:
    store = InMemoryStore()
    Shared(store, "notes", Memory(clock_fn=clock).put("seed", key="s"))
    with pytest.warns(TemplateIgnored, match="1 entries were ignored"):
        again = Shared(store, "notes", Memory(clock_fn=clock).put("other", key="o"))
    assert list(again.current().keys()) == ["s"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Shared(store, "notes", Memory(clock_fn=clock))  # an empty template says nothing


def test_shared_is_a_context_manager_and_refuses_use_once_closed(clock: ManualClock) -> None:
    store = InMemoryStore()
    with Shared(store, "notes", Memory(clock_fn=clock)) as shared:
        shared.update(lambda m: m.put("v", key="k"))
    with pytest.raises(StoreError, match="closed"):
        shared.current()
    with pytest.raises(StoreError, match="closed"):
        shared.update(lambda m: m.put("w", key="j"))
    assert Shared(store, "notes", Memory(clock_fn=clock)).version == 1  # the store is still open


# -- fork -----------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
@pytest.mark.parametrize("engine", DURABLE_ENGINES)  # the child's commit reaches the parent's store
def test_a_child_forked_while_other_threads_write_and_wait_does_not_hang(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> None:
    store = make_store(engine, request, tmp_path)
    shared: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock))
    inside, release = threading.Event(), threading.Event()
    # Another thread waits on the store (PostgreSQL: holding its listening connection's lock in turns).
    waiter = threading.Thread(target=Shared(store, "notes", Memory(clock_fn=clock)).wait, args=(30,))
    waiter.start()

    def slow(m: Memory[str, str]) -> Memory[str, str]:
        inside.set()
        release.wait(30)
        return m.put("parent", key="parent")

    writer = threading.Thread(target=shared.update, args=(slow,))
    writer.start()
    assert inside.wait(10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the point: fork while a thread runs
        pid = os.fork()
    if pid == 0:  # the child: its copy of the lock was held by a thread it does not have
        code = 1
        try:
            shared.update(lambda m: m.put("child", key="child"))
            shared.wait(timeout=0.2)
            code = 0 if "child" in shared.current() else 2
        finally:
            os._exit(code)
    try:
        deadline = time.monotonic() + 20
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the forked child hung in Shared.update")
            time.sleep(0.01)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        release.set()
        writer.join()
        waiter.join()
    assert set(shared.current().keys()) == {"child", "parent"}
    store.close()


# -- asyncio ----------------------------------------------------------------------


def test_await_change_sees_a_commit(clock: ManualClock) -> None:
    store = InMemoryStore()
    follower: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock))
    writer: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock))

    async def main() -> tuple[bool, bool]:
        waiting = asyncio.ensure_future(follower.await_change(timeout=10))
        await asyncio.sleep(0.01)
        await writer.aupdate(lambda m: m.put("v", key="k"))
        return await waiting, await follower.await_change(timeout=0)

    assert asyncio.run(main()) == (True, False)
    assert follower.version == 1
    with pytest.raises(ValueError, match="timeout"):
        asyncio.run(follower.await_change(timeout=-1))


def test_a_cancelled_await_change_leaves_no_thread_behind(tmp_path: Path, clock: ManualClock) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    follower: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock))
    before = threading.active_count()

    async def main() -> None:
        task = asyncio.ensure_future(follower.await_change())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())  # returns: nothing waits in a thread for a commit that never comes
    assert threading.active_count() == before
    store.close()


def test_a_cancelled_aupdate_commits_nothing_not_yet_sent(clock: ManualClock) -> None:
    store = InMemoryStore()
    shared: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock))
    inside, release = threading.Event(), threading.Event()

    def slow(m: Memory[str, str]) -> Memory[str, str]:
        inside.set()
        release.wait(30)
        return m.put("late", key="late")

    async def main() -> None:
        task = asyncio.ensure_future(shared.aupdate(slow))
        await asyncio.to_thread(inside.wait, 10)
        task.cancel()
        await asyncio.sleep(0.01)
        release.set()
        with pytest.raises(asyncio.CancelledError) as caught:
            await task
        if sys.version_info >= (3, 11):
            assert "nothing was committed" in " ".join(caught.value.__notes__)

    asyncio.run(main())
    assert shared.version == 0
    assert Shared(store, "notes", Memory(clock_fn=clock)).version == 0


def test_a_cancelled_aupdate_whose_commit_was_made_says_so(clock: ManualClock) -> None:
    store = InMemoryStore()
    shared: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock))
    sent = threading.Event()
    append = store.append

    def slow_append(*args: Any) -> bool:
        done = append(*args)
        sent.set()
        time.sleep(0.05)  # the cancellation arrives after the commit went in
        return done

    store.append = slow_append  # type: ignore[method-assign]

    async def main() -> None:
        task = asyncio.ensure_future(shared.aupdate(lambda m: m.put("v", key="k")))
        await asyncio.to_thread(sent.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError) as caught:
            await task
        if sys.version_info >= (3, 11):
            assert "was committed (version 1) before the cancellation" in " ".join(caught.value.__notes__)

    asyncio.run(main())
    assert shared.version == 1


_CALLABLES = '''
import dataclasses, functools
from lethe.decay import Blend, Exponential, Product
from lethe.decay._adapter import identity

def hourly(e, now): return 1.0
def daily(e, now): return 1.0

class Plain:
    def __init__(self, tau): self.tau = tau
    def __call__(self, e, now): return 1.0
    def method(self, e, now): return 1.0

@dataclasses.dataclass
class Tagged:
    tags: frozenset
    def __call__(self, e, now): return 1.0

class Sub(Exponential): pass

class Named:
    name = "my-decay"
    def __call__(self, e, now): return 1.0

ALL = [hourly, daily, Plain(1), Plain(2), Plain(1).method, Plain(2).method, functools.partial(hourly, 3),
       functools.partial(daily, 3), Tagged(frozenset("abcdefgh")), Tagged(frozenset("abc")),
       Product(hourly, Exponential()), Product(daily, Exponential(half_life=5)), Sub(), Named(),
       Blend([(hourly, 1.0), (Exponential(), 1.0)])]
for fn in ALL:
    print(identity(fn))
'''


def test_a_custom_function_has_one_identity_in_every_process_and_others_another(tmp_path: Path) -> None:
    """Printed by two processes with different str hashes (set order): the same; two functions: two."""
    import subprocess

    script = tmp_path / "callables.py"
    script.write_text(_CALLABLES)
    printed = [
        subprocess.run(
            [sys.executable, str(script)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        for seed in ("1", "2")
    ]
    assert printed[0] == printed[1]
    assert len(set(printed[0])) == len(printed[0]) == 15
    assert "my-decay" in printed[0]


def test_combinators_holding_other_custom_functions_are_refused(store: Store, clock: ManualClock) -> None:
    from lethe.decay import Exponential, Product

    Shared(store, "notes", Memory(decay_fn=Product(hourly, Exponential()), clock_fn=clock))
    Shared(store, "notes", Memory(decay_fn=Product(hourly, Exponential()), clock_fn=clock))
    with pytest.raises(ValueError, match="decay_fn"):
        Shared(store, "notes", Memory(decay_fn=Product(every_second, Exponential()), clock_fn=clock))


@pytest.mark.parametrize("commits", [0, 1])
def test_await_change_tells_of_a_memory_made_again_as_wait_does(store: Store, clock: ManualClock, commits: int) -> None:
    replicas: list[Shared[str, str]] = []
    for _ in range(2):
        shared: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
        for i in range(commits):
            shared.update(lambda m, i=i: m.put("v", key=f"k{i}"))
        replicas.append(shared)
    _vanish(store, "notes")
    again: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    for i in range(commits):  # back at the version the old replicas saw, by other commits
        again.update(lambda m, i=i: m.put("w", key=f"j{i}"))
    waiting, awaiting = replicas
    with pytest.raises(HistoryRewound):
        waiting.wait(timeout=0)
    with pytest.raises(HistoryRewound):
        asyncio.run(awaiting.await_change(timeout=0))
    assert awaiting.current().keys() == again.current().keys()
