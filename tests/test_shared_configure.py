"""Shared.configure: a stored configuration changed for every process, in one commit."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory
from lethe.decay import ACTR, FSRS
from lethe.store import InMemoryStore, Shared, SQLiteStore, Store, StoreError

from ._support import fake_clock


@pytest.fixture
def clock() -> ManualClock:
    return fake_clock()


def _filled(shared: Shared[str, str], clock: ManualClock, n: int = 5) -> None:
    for i in range(n):
        shared.update(lambda m, i=i: m.put(f"v{i}", key=f"k{i}", importance=1 + i / 10))
        clock.advance(timedelta(minutes=5))
    shared.transact(lambda m: m.get("k1"))


def _entries(mem: Memory[Any, Any]) -> dict[Any, Entry[Any, Any]]:
    return {e.key: e for e in mem}


def test_configure_changes_the_stored_configuration_for_every_process(store: Store, clock: ManualClock) -> None:
    a: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    b: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    _filled(a, clock)
    mem = a.configure(max_entries=50, half_life=timedelta(hours=3), eviction_threshold=0.02)
    assert (mem.max_entries, mem.half_life, mem.eviction_threshold) == (50, 10800.0, 0.02)
    assert a.version == 7
    # The other process follows when it catches up, keeping its own hooks and clock.
    theirs = b.current()
    assert (theirs.max_entries, theirs.half_life, theirs.eviction_threshold) == (50, 10800.0, 0.02)
    assert _entries(theirs) == _entries(mem)
    assert theirs.scored() == mem.scored()
    b.update(lambda m: m.put("after", key="after"))
    assert "after" in a.current()
    # A new process must give the new configuration; the old one is refused, naming configure.
    with pytest.raises(ValueError, match=r"max_entries .*Shared\.configure"):
        Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    fresh: Shared[str, str] = Shared(
        store, "notes", Memory(max_entries=50, half_life=timedelta(hours=3), eviction_threshold=0.02, clock_fn=clock)
    )
    assert _entries(fresh.current()) == _entries(a.current())


@pytest.mark.parametrize("new_fn", ["actr", "fsrs"])
def test_configure_to_another_decay_function_resets_states_everywhere(
    store: Store, clock: ManualClock, new_fn: str
) -> None:
    a: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    b: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    _filled(a, clock)
    mem = a.configure(decay_fn=new_fn)
    assert isinstance(mem.decay_fn, ACTR if new_fn == "actr" else FSRS)
    assert b.current().decay_fn == mem.decay_fn
    assert _entries(b.current()) == _entries(mem)
    a.transact(lambda m: m.get("k2"))  # states of the new function travel as usual
    assert _entries(b.current()) == _entries(a.current())
    assert b.current().scored() == a.current().scored()
    # A replica opened afterwards from the current entries (no log to replay) agrees too.
    cold: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, decay_fn=new_fn, clock_fn=clock))
    assert _entries(cold.current()) == _entries(a.current())


def test_configure_refuses_hooks_and_bad_values_and_commits_nothing(clock: ManualClock) -> None:
    store = InMemoryStore()
    shared: Shared[str, str] = Shared(store, "notes", Memory(max_entries=10, clock_fn=clock))
    _filled(shared, clock)
    with pytest.raises(TypeError, match="on_evict"):
        shared.configure(on_evict=print)
    with pytest.raises(TypeError, match="colour"):
        shared.configure(colour="red")
    with pytest.raises(ValueError, match="max_entries"):
        shared.configure(max_entries=2)  # below the entries held
    with pytest.raises(ValueError, match="eviction_threshold"):
        shared.configure(eviction_threshold=-1)
    assert shared.version == 6
    assert shared.configure(max_entries=10) is shared.current()  # nothing stored changes: no commit
    assert shared.version == 6


def test_configure_inside_update_is_refused(clock: ManualClock) -> None:
    shared: Shared[str, str] = Shared(InMemoryStore(), "notes", Memory(max_entries=10, clock_fn=clock))
    with pytest.raises(RuntimeError, match="from inside"):
        shared.update(lambda m: shared.configure(max_entries=20))
    assert shared.version == 0


def hourly(entry: Entry[Any, Any], now: datetime) -> float:
    return float(0.5 ** ((now - entry.last_accessed_at).total_seconds() / 3600))


def daily(entry: Entry[Any, Any], now: datetime) -> float:
    return float(0.5 ** ((now - entry.last_accessed_at).total_seconds() / 86400))


def test_a_custom_decay_function_this_process_lacks_is_a_store_error(clock: ManualClock) -> None:
    store = InMemoryStore()
    a: Shared[str, str] = Shared(store, "notes", Memory(decay_fn=hourly, clock_fn=clock))
    b: Shared[str, str] = Shared(store, "notes", Memory(decay_fn=hourly, clock_fn=clock))
    a.update(lambda m: m.put("v", key="k"))
    assert a.configure(decay_fn=daily).decay_fn is daily
    for _ in range(2):
        with pytest.raises(StoreError, match="custom decay function"):
            b.current()
    again: Shared[str, str] = Shared(store, "notes", Memory(decay_fn=daily, clock_fn=clock))
    assert _entries(again.current()) == _entries(a.current())
    # A process with that function follows a change of anything else.
    a.configure(max_entries=5)
    assert again.current().max_entries == 5


def test_a_lagging_replica_reloads_under_the_new_configuration(tmp_path: Path, clock: ManualClock) -> None:
    """Compacted past a replica, the current entries are read under the stored configuration."""
    store = SQLiteStore(tmp_path / "store.db")
    a: Shared[str, str] = Shared(store, "notes", Memory(max_entries=100, clock_fn=clock), checkpoint_every=1)
    b: Shared[str, str] = Shared(store, "notes", Memory(max_entries=100, clock_fn=clock), checkpoint_every=1)
    a.configure(decay_fn="actr")
    for i in range(10):
        a.update(lambda m, i=i: m.put(f"v{i}", key=f"k{i}"))
    assert b.current().decay_fn == a.current().decay_fn
    assert _entries(b.current()) == _entries(a.current())
    store.close()
