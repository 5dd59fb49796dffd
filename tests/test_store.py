"""lethe.store: a memory shared through a log of changes, on InMemoryStore and on a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lethe import ClockWarning, Entry, ManualClock, Memory
from lethe.store import InMemoryStore, Shared, SQLiteStore, Store, StoreClock, StoreError

from ._support import fake_clock, sqlite_integrity
from .conftest import make_store


@pytest.fixture
def clock() -> ManualClock:
    return fake_clock()


def _template(clock: ManualClock, **kw: Any) -> Memory[Any, Any]:
    return Memory(clock_fn=clock, **kw)


def test_round_trip(store: Store, clock: ManualClock) -> None:
    shared = Shared(store, "bot", _template(clock, max_entries=10))
    assert shared.version == 0
    mem = shared.update(lambda m: m.put("node 7 fixed", key="deploy"))
    assert shared.version == 1
    assert mem.peek("deploy").value == "node 7 fixed"
    entry = shared.transact(lambda m: m.get("deploy"))
    assert entry.access_count == 1
    assert shared.version == 2
    cold = Shared(store, "bot", _template(clock, max_entries=10))
    assert cold.version == 2
    assert cold.current() == shared.current()


def test_first_open_stores_the_template_entries(store: Store, clock: ManualClock) -> None:
    template = _template(clock).put("a", key=1).put("b", key=2)
    shared = Shared(store, "bot", template)
    assert shared.current() == template
    # A later open uses the stored entries, not its template's.
    assert Shared(store, "bot", _template(clock)).current() == template


def test_two_replicas_see_each_other(store: Store, clock: ManualClock) -> None:
    a = Shared(store, "bot", _template(clock))
    b = Shared(store, "bot", _template(clock))
    for i in range(10):
        (a if i % 2 else b).update(lambda m, i=i: m.put(f"v{i}", key=i))
    assert a.current() == b.current()
    assert len(a.current()) == 10
    assert a.version == b.version == 10


def test_lost_race_retries_on_the_newer_version(store: Store, clock: ManualClock) -> None:
    a = Shared(store, "bot", _template(clock))
    b = Shared(store, "bot", _template(clock))
    calls = []

    def fn(m: Memory[Any, Any]) -> Memory[Any, Any]:
        calls.append(len(m))
        if len(calls) == 1:
            b.update(lambda m: m.put("from b", key="b"))  # b commits version 1 first
        return m.put("from a", key="a")

    mem = a.update(fn)
    assert calls == [0, 1]
    assert set(mem.keys()) == {"a", "b"}
    assert a.version == 2
    assert b.current() == mem


def test_nothing_to_commit_writes_nothing(store: Store, clock: ManualClock) -> None:
    shared = Shared(store, "bot", _template(clock))
    shared.update(lambda m: m.put("v", key="k"))
    assert shared.update(lambda m: m) == shared.current()
    assert shared.update(lambda m: m.delete("missing")) == shared.current()
    assert shared.version == 1


def test_fn_raising_commits_nothing(store: Store, clock: ManualClock) -> None:
    shared = Shared(store, "bot", _template(clock))
    shared.update(lambda m: m.put("v", key="k"))
    before = shared.current()

    def boom(m: Memory[Any, Any]) -> Memory[Any, Any]:
        m.put("x", key="x")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        shared.update(boom)
    assert shared.current() is before
    assert shared.version == 1
    assert list(store.read("bot", 0)) == list(store.read("bot", 0))[:1]


@pytest.mark.parametrize(
    "result",
    [None, "memory", 3, Memory()],
    ids=["none", "str", "int", "another-memory"],
)
def test_fn_returning_a_non_memory_is_a_type_error(store: Store, clock: ManualClock, result: object) -> None:
    shared = Shared(store, "bot", _template(clock))
    with pytest.raises(TypeError, match="fn must return a Memory"):
        shared.update(lambda m: m.put("x", key="x") and result)  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="pair"):
        shared.transact(lambda m: m.put("x", key="x"))  # type: ignore[arg-type, return-value]
    assert shared.version == 0
    assert list(store.read("bot", 0)) == []


def test_a_different_configuration_names_the_field(store: Store, clock: ManualClock) -> None:
    Shared(store, "bot", _template(clock, max_entries=10))
    with pytest.raises(ValueError, match="max_entries is 10 in the store, 11 here"):
        Shared(store, "bot", _template(clock, max_entries=11))
    with pytest.raises(ValueError, match="decay_fn"):
        Shared(store, "bot", _template(clock, max_entries=10, decay_fn="power_law"))
    # Hooks are not configuration: another on_evict is fine; another name is another memory.
    Shared(store, "bot", _template(clock, max_entries=10, on_evict=lambda gone: None))
    Shared(store, "other", _template(clock, max_entries=11))


def test_on_evict_once_per_own_commit_and_never_for_a_lost_race(store: Store, clock: ManualClock) -> None:
    heard_a: list[tuple[Entry[Any, Any], ...]] = []
    heard_b: list[tuple[Entry[Any, Any], ...]] = []
    a = Shared(store, "bot", _template(clock, max_entries=2, on_evict=heard_a.append))
    b = Shared(store, "bot", _template(clock, max_entries=2, on_evict=heard_b.append))
    a.update(lambda m: m.put(1, key=1).put(2, key=2))
    attempts = []

    def fn(m: Memory[Any, Any]) -> Memory[Any, Any]:
        attempts.append(1)
        clock.advance(1)
        if len(attempts) == 1:
            b.update(lambda m: m.put(3, key=3))  # evicts 1, committed by b
        return m.put(4, key=4)  # evicts one more, on each attempt

    a.update(fn)
    assert len(attempts) == 2
    assert [[e.key for e in gone] for gone in heard_b] == [[1]]
    assert [[e.key for e in gone] for gone in heard_a] == [[2]]
    feed = [(v, [e.key for e in gone]) for v, gone in a.evictions(since=0)]
    assert feed == [(2, [1]), (3, [2])]
    assert [v for v, _ in a.evictions(since=2)] == [3]


def test_summarize_fn_runs_once_per_entry_value_across_retries(store: Store, clock: ManualClock) -> None:
    summarized: list[Any] = []

    def summarize(e: Entry[Any, Any]) -> str:
        summarized.append(e.key)
        return f"summary of {e.value}"

    a = Shared(store, "bot", _template(clock, max_entries=2, summarize_fn=summarize))
    b = Shared(store, "bot", _template(clock, max_entries=2, summarize_fn=summarize))
    a.update(lambda m: m.put("one", key=1, importance=5.0).put("two", key=2))
    clock.advance(3600)
    attempts = []

    def fn(m: Memory[Any, Any]) -> Memory[Any, Any]:
        attempts.append(1)
        if len(attempts) == 1:
            b.update(lambda m: m.touch(1))  # a race that leaves entry 2 the victim again
        return m.put("three", key=3)

    mem = a.update(fn)
    assert len(attempts) == 2
    assert summarized == [2]
    ((version, gone),) = list(a.evictions())
    assert version == 3
    assert gone[0].summary == "summary of two"
    assert set(mem.keys()) == {1, 3}


def test_past_versions_and_the_eviction_feed(store: Store, clock: ManualClock) -> None:
    shared = Shared(store, "bot", _template(clock))
    versions = [shared.current()]
    for i in range(5):
        clock.advance(1)
        versions.append(shared.update(lambda m, i=i: m.put(i, key=i)))
    for v, mem in enumerate(versions):
        assert shared.at(v) == mem
    with pytest.raises(ValueError, match="after the latest"):
        shared.at(6)
    with pytest.raises(ValueError, match="version"):
        shared.at(-1)


def test_checkpoints_keep_the_log_bounded(store: Store, clock: ManualClock) -> None:
    shared = Shared(store, "bot", _template(clock, max_entries=5), checkpoint_every=10)
    for i in range(95):
        clock.advance(1)
        shared.update(lambda m, i=i: m.put(i, key=i % 7))
    rows = store.read("bot", 0)
    assert len(rows) <= 20
    assert rows[-1][0] == 95
    version, _, _ = store.checkpoint("bot")
    assert version == 90
    cold = Shared(store, "bot", _template(clock, max_entries=5))
    assert cold.version == 95
    assert cold.current() == shared.current()
    assert shared.at(85) == Shared(store, "bot", _template(clock, max_entries=5)).at(85)
    with pytest.raises(StoreError, match="no checkpoint"):
        shared.at(3)
    with pytest.raises(StoreError, match="compacted"):
        list(shared.evictions(since=3))


def test_a_lagging_replica_catches_up_past_compaction(store: Store, clock: ManualClock) -> None:
    lagging = Shared(store, "bot", _template(clock, max_entries=5))
    busy = Shared(store, "bot", _template(clock, max_entries=5), checkpoint_every=5)
    for i in range(40):
        clock.advance(1)
        busy.update(lambda m, i=i: m.put(i, key=i))
    assert lagging.current() == busy.current()
    assert lagging.version == 40
    lagging.update(lambda m: m.put("x", key="x"))
    assert busy.current() == lagging.current()


def test_threads_lose_nothing(store: Store, clock: ManualClock) -> None:
    lock = threading.Lock()
    evicted: list[Any] = []

    def on_evict(gone: tuple[Entry[Any, Any], ...]) -> None:
        with lock:
            evicted.extend(e.value for e in gone)

    def worker(w: int) -> None:
        shared = Shared(store, "bot", _template(clock, max_entries=8, on_evict=on_evict))
        for i in range(25):
            shared.update(lambda m, i=i: m.put(f"{w}-{i}"))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = Shared(store, "bot", _template(clock, max_entries=8))
    assert final.version == 100
    kept = [e.value for e in final.current()]
    fed = [e.value for _, gone in final.evictions() for e in gone]
    assert sorted(kept + fed) == sorted(f"{w}-{i}" for w in range(4) for i in range(25))
    assert sorted(evicted) == sorted(fed)


def test_async_forms(store: Store, clock: ManualClock) -> None:
    shared = Shared(store, "bot", _template(clock))

    async def main() -> Any:
        await shared.aupdate(lambda m: m.put("v", key="k"))
        return await shared.atransact(lambda m: m.get("k"))

    assert asyncio.run(main()).access_count == 1
    assert shared.version == 2


def test_every_model_replays_equal(store: Store) -> None:
    from ._support import MODEL_IDS, MODELS

    for model, ident in zip(MODELS, MODEL_IDS):
        clock = fake_clock()
        template = Memory(max_entries=4, decay_fn=model.make(), clock_fn=clock)
        shared = Shared(store, ident, template)
        for i in range(12):
            clock.advance(600)
            shared.update(lambda m, i=i: m.put(f"v{i}", key=i % 6, importance=1.0 + i % 3))
            if i % 4 == 0:
                shared.update(lambda m, i=i: m.get(i % 6)[0] if i % 6 in m else m)
        shared.update(lambda m: m.evict()[0])
        cold = Shared(store, ident, Memory(max_entries=4, decay_fn=template.decay_fn, clock_fn=clock))
        assert cold.current() == shared.current(), ident


def test_store_protocol() -> None:
    assert isinstance(InMemoryStore(), Store)


# -- SQLite files ---------------------------------------------------------------------------


def test_not_a_store_file_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"not a database at all, just text" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a lethe store"):
        SQLiteStore(path)
    assert path.read_bytes() == before


def test_another_sqlite_database_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="other tables"):
        SQLiteStore(path)
    assert path.read_bytes() == before


def test_a_newer_format_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'version'")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="newer lethe"):
        SQLiteStore(path)
    assert path.read_bytes() == before


def _damage(path: Path, statement: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(statement)
    conn.commit()
    conn.close()


def test_a_truncated_log_is_a_store_error(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "store.db"
    with SQLiteStore(path) as store:
        behind = Shared(store, "bot", _template(clock))
        shared = Shared(store, "bot", _template(clock))
        for i in range(5):
            shared.update(lambda m, i=i: m.put(i, key=i))
        _damage(path, "DELETE FROM log WHERE version = 3")
        with pytest.raises(StoreError, match="truncated"):
            behind.current()
        assert behind.version == 0
        with pytest.raises(StoreError, match="truncated"):
            shared.at(4)
        with pytest.raises(StoreError, match="truncated"):
            list(shared.evictions(since=0))
        _damage(path, "UPDATE log SET record = '{\"written\": 1}' WHERE version = 1")
        with pytest.raises(StoreError, match="record 1 cannot be read"):
            behind.current()
        assert len(shared.current()) == 5  # a replica past the damage does not read it


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("UPDATE entries SET entry = '[1, 2]' WHERE seq = 1", r"entries\[\d\]: expected a list of 15 fields"),
        ("UPDATE entries SET entry = 'nonsense' WHERE seq = 1", "not JSON"),
        ("UPDATE entries SET entry = replace(entry, '[1,1,', '[1,0,') WHERE seq = 1", "duplicate key 0"),
        ("UPDATE entries SET entry = replace(entry, '[1,1,', '[0,1,') WHERE seq = 1", "duplicate seq 0"),
        ("UPDATE entries SET entry = replace(entry, '[1,1,\"v1\",', '[1,1,\"v1\",-9') WHERE seq = 1", "inserted_us"),
        ("UPDATE log SET head = '[1]' WHERE version = 3", "head: expected"),
        ("UPDATE log SET head = '[3, -1, null]' WHERE version = 3", r"head\.next_seq"),
    ],
)
def test_a_damaged_state_is_a_store_error(
    tmp_path: Path, clock: ManualClock, statement: str, message: str
) -> None:
    path = tmp_path / "store.db"
    with SQLiteStore(path) as store:
        shared = Shared(store, "bot", _template(clock))
        for i in range(3):
            shared.update(lambda m, i=i: m.put(f"v{i}", key=i))
    _damage(path, statement)
    with SQLiteStore(path) as store, pytest.raises(StoreError, match="the state at version 3 cannot be read") as err:
        Shared(store, "bot", _template(clock))
    assert re.search(message, str(err.value))


def test_durable_option_and_one_file_many_names(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "store.db"
    with SQLiteStore(path, durable=True) as store:
        assert store.durable
        Shared(store, "a", _template(clock)).update(lambda m: m.put("a", key="a"))
        Shared(store, "b", _template(clock)).update(lambda m: m.put("b", key="b"))
        assert store.names() == ["a", "b"]
    assert sqlite_integrity(path) == "ok"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    stored = json.loads(conn.execute("SELECT config FROM memories WHERE name = 'a'").fetchone()[0])
    assert stored["max_entries"] == 1000
    conn.close()


def test_a_closed_store_refuses_use(tmp_path: Path, clock: ManualClock) -> None:
    store = SQLiteStore(tmp_path / "store.db")
    store.close()
    with pytest.raises(StoreError, match="closed"):
        Shared(store, "bot", _template(clock))


def test_names_and_config_read_without_writing(store: Store, clock: ManualClock) -> None:
    with pytest.raises(KeyError):
        store.config("notes")
    assert store.names() == []
    Shared(store, "notes", Memory(max_entries=7, clock_fn=clock))
    Shared(store, "alpha", Memory(clock_fn=clock))
    assert store.names() == ["alpha", "notes"]
    assert json.loads(store.config("notes"))["max_entries"] == 7


def test_a_lock_held_too_long_is_a_store_error(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "store.db"
    with SQLiteStore(path) as store:
        Shared(store, "bot", _template(clock)).update(lambda m: m.put("v", key="k"))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with SQLiteStore(path, timeout=0.05) as store:
            shared = Shared(store, "bot", _template(clock))
            before = shared.current()
            with pytest.raises(StoreError, match=r"locked by another writer for 0\.05 s"):
                shared.update(lambda m: m.put("w", key="j"))
            assert shared.current() is before
            assert shared.version == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with SQLiteStore(path) as store:
        assert Shared(store, "bot", _template(clock)).version == 1


def _feed(shared: Shared[Any, Any]) -> dict[int, list[Any]]:
    return {v: [e.key for e in gone] for v, gone in shared.evictions(since=0)}


def test_a_function_that_changes_nothing_commits_nothing_after_an_eviction(store: Store, clock: ManualClock) -> None:
    heard: list[list[Any]] = []
    shared = Shared(store, "bot", _template(clock, max_entries=1, on_evict=lambda g: heard.append([e.key for e in g])))
    shared.update(lambda m: m.put("old", key="a"))
    shared.update(lambda m: m.put("new", key="b"))
    before = shared.current()
    assert shared.update(lambda m: m) is before
    assert shared.transact(lambda m: (m, "same")) == "same"
    assert shared.version == 2
    assert _feed(shared) == {2: ["a"]}
    assert heard == [["a"]]


def test_every_eviction_of_a_function_is_in_the_feed(store: Store, clock: ManualClock) -> None:
    heard: list[list[Any]] = []
    shared = Shared(store, "bot", _template(clock, max_entries=1, on_evict=lambda g: heard.append([e.key for e in g])))
    shared.update(lambda m: m.put("x", key="x"))
    # put evicts x, then get (which evicts nothing) makes the version the function returns
    committed = shared.update(lambda m: m.put("y", key="y").put("z", key="z").get("z")[0])
    assert [e.key for e in committed.evicted] == ["x", "y"]
    assert _feed(shared) == {2: ["x", "y"]}
    assert heard == [["x", "y"]]
    assert Shared(store, "bot", _template(clock, max_entries=1)).current().to_dict() == committed.to_dict()


def test_an_eviction_on_a_version_the_function_dropped_is_not_reported(store: Store, clock: ManualClock) -> None:
    heard: list[list[Any]] = []
    shared = Shared(store, "bot", _template(clock, max_entries=1, on_evict=lambda g: heard.append([e.key for e in g])))
    shared.update(lambda m: m.put("x", key="x"))

    def look_then_rehearse(m: Memory[Any, Any]) -> Memory[Any, Any]:
        m.put("y", key="y")  # evicts x from a version that is dropped
        return m.get("x")[0]

    committed = shared.update(look_then_rehearse)
    assert committed.evicted == ()
    assert committed.peek("x") is not None
    assert _feed(shared) == {}
    assert heard == []


def test_a_row_holding_two_json_values_is_named(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "store.db"
    with SQLiteStore(path) as store:
        shared = Shared(store, "bot", _template(clock))
        for i in range(3):
            shared.update(lambda m, i=i: m.put(f"v{i}", key=i))
    _damage(path, "UPDATE entries SET entry = entry || ',' || entry WHERE seq = 1")
    with SQLiteStore(path) as store, pytest.raises(StoreError, match=r"entries\[\d\]: not JSON"):
        Shared(store, "bot", _template(clock))


def test_importing_lethe_never_imports_a_server_client() -> None:
    code = (
        "import sys, lethe, lethe.store\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('psycopg', 'redis')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_postgres_store_reports_an_unreachable_server() -> None:
    pytest.importorskip("psycopg")
    from lethe.store import PostgresStore

    from ._servers import free_port

    with pytest.raises(StoreError, match="cannot connect to PostgreSQL"):
        PostgresStore(f"postgresql://lethe@127.0.0.1:{free_port()}/postgres", timeout=1)


def test_a_commit_sent_twice_is_applied_once(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A lost reply makes redis-py send the same script again: the server must know its own commit.
    store = make_store("redis", request, tmp_path)
    shared = Shared(store, "bot", Memory())
    shared.update(lambda m: m.put("v", key="k"))
    import lethe.store._redis as engine

    monkeypatch.setattr(engine.secrets, "token_hex", lambda n: "same-operation")
    head, record = "[1,1,null]", '{"head":[1,1,null],"written":[],"removed":[],"evicted":[]}'
    assert store.append("bot", 2, record, head, [], [])
    assert store.append("bot", 2, record, head, [], [])  # the same operation again: yes, once
    assert [v for v, _ in store.read("bot", 0)] == [1, 2]
    monkeypatch.setattr(engine.secrets, "token_hex", lambda n: "another-operation")
    assert not store.append("bot", 2, record, head, [], [])  # another writer's try at version 2: lost
    store.close()


def test_wait_returns_once_another_replica_commits(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    follower = Shared(store, "bot", _template(clock, max_entries=10))
    assert follower.wait(timeout=0) is False
    assert follower.wait(timeout=0.05) is False
    # The writer uses a store object (a connection) of its own where the engine has connections.
    other = _reopened(store, tmp_path)
    writer = Shared(other, "bot", _template(clock, max_entries=10))
    started = threading.Event()

    def commit() -> None:
        started.wait()
        for i in range(3):
            writer.update(lambda m, i=i: m.put(i, key=i))

    thread = threading.Thread(target=commit)
    thread.start()
    started.set()
    try:
        assert follower.wait(timeout=30) is True
        assert follower.version >= 1
        while follower.version < 3:
            assert follower.wait(timeout=30) is True
        thread.join()
        assert follower.current() == writer.current()
        assert follower.wait(timeout=0.01) is False
    finally:
        thread.join()
        if other is not store:
            other.close()


@pytest.mark.parametrize("timeout", [-1, float("nan"), "1", True])
def test_wait_refuses_a_bad_timeout(store: Store, clock: ManualClock, timeout: Any) -> None:
    shared = Shared(store, "bot", _template(clock))
    with pytest.raises(ValueError, match="timeout"):
        shared.wait(timeout)


def _reopened(store: Store, tmp_path: Path) -> Store:
    """Another store object on the same place (the same object for InMemoryStore)."""
    if isinstance(store, SQLiteStore):
        return SQLiteStore(store.path)
    if type(store).__name__ == "PostgresStore":
        from lethe.store import PostgresStore

        assert isinstance(store, PostgresStore)
        return PostgresStore(store.conninfo)
    if type(store).__name__ == "RedisStore":
        from lethe.store import RedisStore

        assert isinstance(store, RedisStore)
        kwargs = store._client.connection_pool.connection_kwargs
        return RedisStore(f"redis://{kwargs['host']}:{kwargs['port']}/0", prefix=store.prefix)
    return store


def test_store_clock_reads_the_stores_clock(store: Store) -> None:
    clock = StoreClock(store)
    assert clock.offset is None
    first = clock()
    assert first.tzinfo is not None
    assert first.utcoffset() == timedelta(0)
    # Every engine here runs on this host, so the store's clock is this host's (within slack).
    assert abs(first.timestamp() - time.time()) < 5
    assert clock.offset is not None
    assert abs(clock.offset) < 5
    readings = [clock() for _ in range(50)]
    assert readings == sorted(readings)
    assert readings[0] >= first


class _AheadStore(InMemoryStore):
    """An in-memory engine whose clock runs an hour ahead of this host's, counting its readings."""

    def __init__(self) -> None:
        super().__init__()
        self.readings = 0

    def time(self) -> float:
        self.readings += 1
        return time.time() + 3600


def test_store_clock_asks_the_store_once_per_resync() -> None:
    store = _AheadStore()
    clock = StoreClock(store, resync=3600)
    for _ in range(100):
        assert abs(clock().timestamp() - (time.time() + 3600)) < 5
    assert store.readings == 1
    every = StoreClock(store, resync=0)
    for _ in range(10):
        every()
    assert store.readings == 11


def test_store_clock_never_goes_back_and_survives_an_unreachable_server() -> None:
    class Flaky(InMemoryStore):
        def __init__(self) -> None:
            super().__init__()
            self.offsets = [10.0, -10.0]  # a reading, then one 20 s earlier

        def time(self) -> float:
            if not self.offsets:
                raise StoreError("cannot reach the server")
            return time.time() + self.offsets.pop(0)

    clock = StoreClock(Flaky(), resync=0)
    first = clock()
    second = clock()  # the server's clock went back 20 s: this clock does not
    third = clock()  # the server cannot be reached: it goes on from the last reading
    assert first <= second <= third
    unreachable = Flaky()
    unreachable.offsets = []
    with pytest.raises(StoreError, match="cannot reach"):
        StoreClock(unreachable)()  # never read: there is nothing to go on from


@pytest.mark.parametrize("resync", [-1, float("nan"), float("inf"), "1", True])
def test_store_clock_refuses_a_bad_resync(resync: Any) -> None:
    with pytest.raises(ValueError, match="resync"):
        StoreClock(InMemoryStore(), resync=resync)


def test_a_writer_whose_clock_runs_ahead_is_noticed(store: Store) -> None:
    ahead, behind = fake_clock(), fake_clock()
    ahead.advance(3600)
    reader = Shared(store, "bot", _template(behind))
    writer = Shared(store, "bot", _template(ahead))
    writer.update(lambda m: m.put("from the future", key="k"))
    with pytest.warns(ClockWarning, match=r"'bot'.* 3600\.000 s ahead of this process's clock"):
        reader.current()
    writer.update(lambda m: m.put("again", key="j"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reader.current()  # once, until it passes
        behind.advance(3600)
        writer.update(lambda m: m.put("now", key="i"))
        reader.current()
        quiet = Shared(store, "bot", _template(fake_clock()), max_clock_skew=None)
        quiet.current()
    with pytest.warns(ClockWarning):
        Shared(store, "bot", _template(fake_clock()))  # opening a memory ahead of the clock warns too


def test_writers_on_the_store_clock_share_one_timeline() -> None:
    store = _AheadStore()  # as a server whose clock is an hour ahead of every host's
    writer = Shared(store, "bot", Memory(clock_fn=StoreClock(store)))
    writer.update(lambda m: m.put("v", key="k"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reader = Shared(store, "bot", Memory(clock_fn=StoreClock(store)))
        reader.update(lambda m: m.put("w", key="j"))
    assert abs(reader.current().peek("j").inserted_at.timestamp() - (time.time() + 3600)) < 5


@pytest.mark.parametrize("skew", [-1, float("nan"), "1", True])
def test_max_clock_skew_is_checked(skew: Any) -> None:
    with pytest.raises(ValueError, match="max_clock_skew"):
        Shared(InMemoryStore(), "bot", Memory(), max_clock_skew=skew)


def _engines_defined() -> set[str]:
    """Every class that implements :class:`Store` in a module of lethe.store, exported or not
    (a new engine module is found before anything exports it)."""
    import importlib
    import inspect
    import pkgutil

    import lethe.store

    found = set()
    for info in pkgutil.iter_modules(lethe.store.__path__):
        module = importlib.import_module(f"lethe.store.{info.name}")
        for name, obj in vars(module).items():
            defined_here = inspect.isclass(obj) and obj.__module__ == module.__name__
            if defined_here and obj is not Store and issubclass(obj, Store):
                found.add(name)
    return found


def test_the_engine_list_names_every_engine() -> None:
    """A new engine, a module of lethe.store implementing Store, joins the engine tests' one list
    (conftest.ENGINES), which the contract suite (the ``store`` fixture) runs over."""
    import lethe.store

    from .conftest import ENGINE_CLASSES, ENGINES

    listed = {ENGINE_CLASSES[kind] for kind in ENGINES}
    defined = _engines_defined()
    assert defined == listed, f"add these engines to the table in tests/conftest.py: {sorted(defined - listed)}"
    exported = {name for name in lethe.store.__all__ if name.endswith("Store") and name != "Store"}
    assert exported == listed
    assert len(ENGINES) == len(set(ENGINES))


def test_the_engine_guard_sees_the_engines() -> None:
    """The guard above finds the engines, not nothing (a broken filter would pass it), the
    damage suite's list of engines is the one list, and the lists drawn from it hold the engines
    they hold today (a flag of the table set wrong would quietly drop an engine's tests)."""
    from .conftest import DURABLE_ENGINES, ENGINES, LOCAL_ENGINES, SERVER_ENGINES
    from .test_store_damage import ENGINES as DAMAGED

    assert {"InMemoryStore", "SQLiteStore", "PostgresStore", "RedisStore"} <= _engines_defined()
    assert "SQL" not in _engines_defined()  # the shared SQL operations are not an engine on their own
    assert list(DAMAGED) == list(ENGINES)
    assert {"postgres", "redis"} <= set(SERVER_ENGINES)
    assert {"memory", "sqlite"} <= set(LOCAL_ENGINES)
    assert {"sqlite", "postgres", "redis"} <= set(DURABLE_ENGINES)
    assert "memory" not in DURABLE_ENGINES
    assert sorted(SERVER_ENGINES + LOCAL_ENGINES) == sorted(ENGINES)


def test_a_commit_goes_in_only_on_the_head_it_was_made_on(store: Store) -> None:
    store.open("bot", "{}", "[0,0,null]", [])
    first = '{"head":[1,1,null],"written":[],"removed":[],"evicted":[]}'
    assert store.append("bot", 1, first, "[1,1,null]", [(0, "row")], [], None, "[0,0,null]")
    second = '{"head":[2,2,null],"written":[],"removed":[],"evicted":[]}'
    # Version 1 is the latest, but its head is not the one this commit was made on: nothing written.
    assert not store.append("bot", 2, second, "[2,2,null]", [(1, "other")], [0], None, "[1,1,0]")
    assert store.load("bot") == (1, "[1,1,null]", [(0, "row")])
    assert [v for v, _ in store.read("bot", 0)] == [1]
    assert store.append("bot", 2, second, "[2,2,null]", [(1, "other")], [0], None, "[1,1,null]")
    assert store.load("bot") == (2, "[2,2,null]", [(1, "other")])
    store.close()
