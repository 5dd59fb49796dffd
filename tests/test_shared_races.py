"""lethe.store.Shared where operations meet: a configure during an open, history across a
configure, a name dropped and made again, writes from hooks and forked children, cancellations."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory
from lethe.decay import ACTR, FSRS
from lethe.store import CommitUnknown, InMemoryStore, Shared, SQLiteStore, Store, StoreError

from ._support import fake_clock


@pytest.fixture
def clock() -> ManualClock:
    return fake_clock()


def test_a_write_through_another_shared_of_the_memory_on_every_run_of_fn_is_refused(
    store: Store, clock: ManualClock
) -> None:
    """It commits on every run of fn, and the outer write loses every race to it: forever."""
    outer: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock))
    inner: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock))
    runs = []

    def fn(m: Memory[str, str]) -> Memory[str, str]:
        runs.append(1)
        if len(runs) > 3:
            pytest.fail("fn ran again and again")
        inner.update(lambda n: n.put(f"note {len(runs)}", key="inner"))
        return m.put("decision", key="outer")

    with pytest.raises(RuntimeError, match="on every run"):
        outer.update(fn)
    assert len(runs) == 2
    assert inner.version == 2  # the two notes, each its own write
    assert "outer" not in outer.current()
    # Once (a race another writer could have made as well) is a race like any other.
    runs.clear()

    def racing_once(m: Memory[str, str]) -> Memory[str, str]:
        runs.append(1)
        if len(runs) == 1:
            inner.update(lambda n: n.put("x", key="x"))
        return m.put("y", key="y")

    once = outer.update(racing_once)
    assert len(runs) == 2
    assert {"x", "y"} <= {e.key for e in once}

    def elsewhere(m: Memory[str, str]) -> Memory[str, str]:
        inner.update(lambda n: n.put("ok", key="k"))  # another memory's write inside fn: that one's business
        return m.put("done", key="done")

    Shared(store, "other", Memory(clock_fn=clock)).update(elsewhere)
    assert "k" in inner.current()


class _Racing:
    """A store whose next ``load`` first lets ``before`` run (another process, just then)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.before: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def load(self, name: str) -> tuple[int, str, list[str]]:
        if self.before is not None:
            before, self.before = self.before, None
            before()
        return self._store.load(name)


def test_a_configure_during_an_open_is_not_missed(tmp_path: Path, clock: ManualClock) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    writer: Shared[str, str] = Shared(store, "notes", Memory(max_entries=5, clock_fn=clock))
    writer.update(lambda m: m.put("v", key="k"))
    racing = _Racing(store)
    racing.before = lambda: writer.configure(max_entries=50, decay_fn="actr")
    with pytest.raises(ValueError, match="max_entries"):  # the template is no longer the stored configuration
        Shared(racing, "notes", Memory(max_entries=5, clock_fn=clock))  # type: ignore[arg-type]
    store.close()


def test_a_configure_during_a_reload_is_followed(tmp_path: Path, clock: ManualClock) -> None:
    """A replica compacted past reloads the current entries: under the configuration they are in."""
    store = SQLiteStore(tmp_path / "store.db")
    racing = _Racing(store)
    follower: Shared[str, str] = Shared(racing, "notes", Memory(max_entries=5, clock_fn=clock))  # type: ignore[arg-type]
    writer: Shared[str, str] = Shared(store, "notes", Memory(max_entries=5, clock_fn=clock), checkpoint_every=1)
    for i in range(5):
        writer.update(lambda m, i=i: m.put(f"v{i}", key=f"k{i}"))
        writer.update(lambda m, i=i: m.delete(f"k{i}"))
    racing.before = lambda: writer.configure(max_entries=50, decay_fn="actr")
    mem = follower.current()
    assert (mem.max_entries, mem.decay_fn) == (50, ACTR())
    assert [e.key for e in mem] == [e.key for e in writer.current()]
    store.close()


def test_history_before_a_configure_reads_under_the_configuration_of_its_time(
    store: Store, clock: ManualClock
) -> None:
    shared: Shared[str, str] = Shared(store, "notes", Memory(max_entries=2, decay_fn="actr", clock_fn=clock))
    shared.update(lambda m: m.put("a", key="a"))
    shared.transact(lambda m: m.get("a"))
    shared.update(lambda m: m.put("b", key="b"))
    shared.update(lambda m: m.put("c", key="c"))  # evicts one
    before = [shared.at(v) for v in range(5)]
    shared.configure(max_entries=10, decay_fn="fsrs")
    shared.update(lambda m: m.put("d", key="d"))
    for v in range(5):
        then = shared.at(v)
        assert (then.max_entries, then.decay_fn) == (2, ACTR())
        assert list(then) == list(before[v])
    assert (shared.at(5).max_entries, shared.at(5).decay_fn) == (10, FSRS())
    assert [v for v, _ in shared.evictions(0)] == [4]


def test_a_replica_at_version_0_never_commits_onto_a_name_made_again(store: Store, clock: ManualClock) -> None:
    stale: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock).put("x", key="x"))
    assert store.drop("notes")  # type: ignore[attr-defined]
    fresh: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock).put("y", key="y"))
    with pytest.raises(StoreError, match="went back"):
        stale.update(lambda m: m.put("z", key="z"))
    assert fresh.version == 0
    assert [e.key for e in fresh.current()] == ["y"]
    stale.update(lambda m: m.put("z", key="z"))  # now it follows the store
    assert sorted(e.key for e in fresh.current()) == sorted(e.key for e in stale.current()) == ["y", "z"]


class _Vanishing:
    """A store that loses the memory between the configuration read and the entries read."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def load(self, name: str) -> tuple[int, str, list[str]]:
        raise KeyError(name)


def test_a_memory_gone_while_it_is_opened_is_a_store_error(clock: ManualClock) -> None:
    store = InMemoryStore()
    Shared(store, "notes", Memory(clock_fn=clock))
    with pytest.raises(StoreError, match="no longer in the store"):
        Shared(_Vanishing(store), "notes", Memory(clock_fn=clock))  # type: ignore[arg-type]


def test_on_evict_may_write_to_its_own_memory(store: Store, clock: ManualClock) -> None:
    shared: Shared[str, str]

    def archive(gone: tuple[Entry[str, str], ...]) -> None:
        shared.update(lambda m: m.put(f"evicted {len(gone)}", key="audit", pinned=True))

    shared = Shared(store, "notes", Memory(max_entries=2, on_evict=archive, clock_fn=clock))
    for key in ("a", "b", "c"):
        shared.update(lambda m, key=key: m.put(key, key=key))
        clock.advance(timedelta(seconds=60))
    assert "audit" in shared.current()


# The test forks on purpose (what lethe does in a forked child); the suite's own threads
# (servers' readers, other tests' pools) make Python 3.12+ warn about any fork.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_child_forked_from_inside_fn_writes(tmp_path: Path, clock: ManualClock) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    shared: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock))
    child = []

    def fn(m: Memory[str, str]) -> Memory[str, str]:
        if not child:
            pid = os.fork()
            if pid == 0:  # the child writes, and never returns into fn
                code = 1
                try:
                    shared.update(lambda n: n.put("child", key="child"))
                    code = 0
                finally:
                    os._exit(code)
            child.append(pid)
        return m.put("parent", key="parent")

    shared.update(fn)
    deadline = time.monotonic() + 20
    while True:
        done, status = os.waitpid(child[0], os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(child[0], signal.SIGKILL)
            pytest.fail("the child hung")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0
    assert {e.key for e in shared.current()} == {"child", "parent"}
    store.close()


def _notes(error: BaseException) -> str:
    return " ".join(getattr(error, "__notes__", []))


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes")
def test_a_cancelled_write_whose_on_evict_failed_says_it_committed(clock: ManualClock) -> None:
    store = InMemoryStore()

    def failing(gone: tuple[Entry[str, str], ...]) -> None:
        time.sleep(0.05)  # the cancellation arrives meanwhile
        raise OSError("archive down")

    shared: Shared[str, str] = Shared(store, "notes", Memory(max_entries=1, on_evict=failing, clock_fn=clock))
    shared.update(lambda m: m.put("a", key="a"))

    async def main() -> None:
        task = asyncio.ensure_future(shared.aupdate(lambda m: m.put("b", key="b")))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError) as caught:
            await task
        assert "was committed (version 2)" in _notes(caught.value)
        assert "OSError: archive down" in _notes(caught.value)

    asyncio.run(main())
    assert shared.version == 2


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes")
def test_a_cancelled_write_whose_commit_is_unknown_says_so(clock: ManualClock) -> None:
    store = InMemoryStore()
    shared: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock))
    append = store.append

    def unknown(*args: Any) -> bool:
        append(*args)
        time.sleep(0.05)
        raise CommitUnknown("'notes': whether version 1 was committed is unknown")

    store.append = unknown  # type: ignore[method-assign]

    async def main() -> None:
        task = asyncio.ensure_future(shared.aupdate(lambda m: m.put("v", key="k")))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError) as caught:
            await task
        assert "whether the write was committed is unknown" in _notes(caught.value)

    asyncio.run(main())


def test_a_write_cancelled_twice_leaves_no_unretrieved_exception(clock: ManualClock) -> None:
    store = InMemoryStore()
    shared: Shared[str, str] = Shared(store, "notes", Memory(clock_fn=clock))
    heard: list[dict[str, Any]] = []

    def slow(m: Memory[str, str]) -> Memory[str, str]:
        time.sleep(0.1)
        return m.put("v", key="k")

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: heard.append(context))
        task = asyncio.ensure_future(shared.aupdate(slow))
        await asyncio.sleep(0.02)
        task.cancel()
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.2)  # the worker ends meanwhile

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asyncio.run(main())
    assert heard == []
    assert shared.version == 0
