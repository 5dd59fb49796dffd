"""The store's engines against hostile or damaged servers, and their lifecycle: a Redis that evicts
any key, a memory whose configuration key vanished, keys holding what lethe never writes, a reader
far behind a compacted log, ``drop`` and ``close``.  On real servers (``tests/_servers.py``); the
tests that leave a server busy or change its settings own a ``redis-server`` of their own."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lethe import Memory
from lethe.store import Shared, Store, StoreError

from ._servers import redis_server, redis_unavailable
from ._support import fake_clock
from .conftest import DURABLE_ENGINES, ENGINES, make_store

KINDS = ENGINES
SERVED = DURABLE_ENGINES  # the engines that hold connections to close, and rows another client changes


def _template(**kw: Any) -> Memory[Any, Any]:
    return Memory(clock_fn=fake_clock(), **kw)


def _put(i: int) -> Callable[[Memory[Any, Any]], Memory[Any, Any]]:
    return lambda m: m.put(f"v{i}", key=i % 5)


def _build(kind: str, request: pytest.FixtureRequest, tmp_path: Path, **kw: Any) -> Store:
    return make_store(kind, request, tmp_path, **kw)


@pytest.fixture
def own_redis() -> Iterator[str]:
    """A redis-server for this test alone (killed afterwards, busy or not)."""
    why = redis_unavailable()
    if why is not None:
        pytest.skip(why)
    with redis_server() as url:
        yield url


def _client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url, socket_timeout=5)


def _key(store: Any, name: str, which: str) -> str:
    """The Redis key ``which`` (``"latest"``, ``"first"``, ...) of the memory ``name``."""
    from lethe.store._redis import _KEYS

    return str(store._keys(name)[_KEYS.index(which)])


def _calls(client: Any, command: str) -> int:
    """How many times the server ran ``command`` (scripts' calls included) since its stats were reset."""
    return int(client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))


# -- a Redis that evicts any key ----------------------------------------------------------


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu", "allkeys-random"])
def test_redis_refuses_a_server_that_evicts_any_key(own_redis: str, policy: str) -> None:
    from lethe.store import RedisStore

    client = _client(own_redis)
    client.config_set("maxmemory-policy", policy)
    try:
        with pytest.raises(StoreError) as raised:
            RedisStore(own_redis)
        message = str(raised.value)
        for said in ("maxmemory-policy", policy, "noeviction", "volatile-", "TTL", "allow_eviction=True"):
            assert said in message
        RedisStore(own_redis, allow_eviction=True).close()  # the opt-in
    finally:
        client.config_set("maxmemory-policy", "noeviction")
        client.close()


@pytest.mark.parametrize("policy", ["noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"])
def test_redis_accepts_a_server_that_never_evicts_lethe_keys(own_redis: str, policy: str) -> None:
    from lethe.store import RedisStore

    client = _client(own_redis)
    client.config_set("maxmemory-policy", policy)
    try:
        with RedisStore(own_redis, allow_eviction=False) as store:
            Shared(store, "m", _template()).update(_put(1))
    finally:
        client.config_set("maxmemory-policy", "noeviction")
        client.close()


def test_redis_that_does_not_tell_its_policy_is_accepted(own_redis: str) -> None:
    import redis

    from lethe.store import RedisStore

    class Silent(redis.Redis):
        def info(self, *args: Any, **kwargs: Any) -> Any:
            if args and args[0] == "memory":
                return {}  # a managed Redis that leaves the field out
            return super().info(*args, **kwargs)

    client = _client(own_redis)
    client.config_set("maxmemory-policy", "allkeys-lru")
    try:
        with RedisStore(Silent.from_url(own_redis), allow_eviction=False) as store:
            assert store.names() == []
    finally:
        client.config_set("maxmemory-policy", "noeviction")
        client.close()


# -- a memory whose configuration vanished ------------------------------------------------


def _forget_config(kind: str, store: Any, request: pytest.FixtureRequest, tmp_path: Path, name: str) -> None:
    """Delete the configuration of ``name`` behind the engine's back, leaving the rest of it."""
    if kind == "sqlite":
        with sqlite3.connect(tmp_path / "store.db") as conn:
            conn.execute("DELETE FROM memories WHERE name = ?", (name,))
        conn.close()
    elif kind == "postgres":
        import psycopg

        with psycopg.connect(request.getfixturevalue("postgres_dsn"), autocommit=True) as conn:
            conn.execute("DELETE FROM lethe_memories WHERE name = %s", (name,))
    else:
        client = _client(request.getfixturevalue("redis_url"))
        assert client.delete(_key(store, name, "config")) == 1
        client.close()


@pytest.mark.parametrize("kind", SERVED)
def test_a_memory_whose_configuration_vanished_is_never_reset(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store = _build(kind, request, tmp_path)
    try:
        shared: Shared[Any, Any] = Shared(store, "m", _template(), checkpoint_every=2)
        for i in range(5):
            shared.update(_put(i))
        kept = shared.current().to_dict()
        _forget_config(kind, store, request, tmp_path, "m")
        for _ in range(2):  # refused, and refused again: nothing was written by the first try
            with pytest.raises(StoreError, match=r"configuration .* missing") as raised:
                Shared(store, "m", _template().put("new", key="x"))
            assert "drop('m')" in str(raised.value)
        assert store.load("m")[0] == 5
        assert [v for v, _ in store.read("m", 4)] == [5]
        assert store.drop("m") is True  # what is left goes; the name is then new
        fresh: Shared[Any, Any] = Shared(store, "m", _template())
        assert fresh.version == 0
        assert len(fresh.current()) == 0
        assert kept != fresh.current().to_dict()
    finally:
        store.close()


def test_a_redis_memory_whose_keys_all_vanished_but_its_name_is_not_reset(redis_url: str, redis_prefix: str) -> None:
    from lethe.store import RedisStore

    with RedisStore(redis_url, prefix=redis_prefix) as store:
        Shared(store, "m", _template()).update(_put(1))
        client = _client(redis_url)
        tag = store._keys("m")[0].rsplit(":", 1)[0]
        gone = list(client.scan_iter(match=f"{tag}:*"))
        assert gone
        assert client.delete(*gone) == len(gone)  # all its keys, as an eviction may do
        assert store.names() == ["m"]
        with pytest.raises(StoreError, match=r"configuration .* missing"):
            Shared(store, "m", _template())
        assert list(client.scan_iter(match=f"{tag}:*")) == []  # nothing created
        assert store.drop("m") is True
        assert store.names() == []
        assert Shared(store, "m", _template()).version == 0
        client.close()


# -- keys holding what lethe never writes --------------------------------------------------


def _redis_memory(url: str, commits: int = 3, timeout: float = 3.0) -> Any:
    from lethe.store import RedisStore

    store = RedisStore(url, prefix="h", timeout=timeout)
    shared: Shared[Any, Any] = Shared(store, "m", _template(), checkpoint_every=10_000)
    for i in range(commits):
        shared.update(_put(i))
    return store


@pytest.mark.parametrize("value", ["1e15", "abc", "", "-3", "3.5", "99999999999999999999", " 3"])
def test_redis_read_refuses_a_latest_version_that_is_no_version(own_redis: str, value: str) -> None:
    store = _redis_memory(own_redis)
    client = _client(own_redis)
    client.set(_key(store, "m", "latest"), value)
    for call in (lambda: store.read("m", 0), lambda: store.load("m"), lambda: store.wait("m", 0, 0.0)):
        with pytest.raises(StoreError, match="latest version"):
            call()
    with pytest.raises(StoreError, match="latest version"):
        store.compact("m", 1)
    assert client.ping()  # not left running a script (BUSY)
    client.close()
    store.close()


@pytest.mark.parametrize("value", ["abc", "-99999999999999", "0", "9"])
def test_redis_refuses_a_first_version_that_is_no_version_or_past_the_log(own_redis: str, value: str) -> None:
    store = _redis_memory(own_redis)  # latest 3: the first retained record is at most 4
    client = _client(own_redis)
    client.set(_key(store, "m", "first"), value)
    with pytest.raises(StoreError, match="first"):
        store.read("m", 0)
    with pytest.raises(StoreError, match="first"):
        store.compact("m", 1)
    assert client.ping()
    client.close()
    store.close()


def test_redis_read_reports_a_hole_in_the_log(own_redis: str) -> None:
    store = _redis_memory(own_redis, commits=5)
    client = _client(own_redis)
    client.hdel(_key(store, "m", "log"), "3")
    with pytest.raises(StoreError, match="version 3"):
        store.read("m", 0)
    assert [v for v, _ in store.read("m", 3)] == [4, 5]  # the log above the hole is read
    client.set(_key(store, "m", "latest"), "9999999999999")  # a number, far past the log
    with pytest.raises(StoreError, match="version 6"):
        store.read("m", 4)
    assert client.ping()
    client.close()
    store.close()


@pytest.mark.parametrize(
    ("which", "command", "value"),
    [
        ("checkpoints", "zadd", {"x": 1}),
        ("checkpoints", "zadd", {"9999999999999": 9999999999999}),  # past the latest version
        ("log", "set", "a string"),
        ("entries", "set", "a string"),
    ],
)
def test_redis_damaged_keys_raise_store_error(own_redis: str, which: str, command: str, value: Any) -> None:
    store = _redis_memory(own_redis)
    client = _client(own_redis)
    key = _key(store, "m", which)
    if command == "set":
        client.delete(key)
    getattr(client, command)(key, value)
    failed = 0
    for call in (
        lambda: store.compact("m", 1),
        lambda: store.read("m", 0),
        lambda: store.load("m"),
        lambda: store.checkpoint("m"),
        lambda: Shared(store, "m", _template()),
    ):
        try:
            call()
        except StoreError:
            failed += 1
        # anything else (a raw ResponseError, ValueError, IndexError) fails the test
    assert failed >= 1
    assert client.ping()
    client.close()
    store.close()


def test_redis_read_of_a_reader_far_behind_costs_what_it_missed(own_redis: str, monkeypatch: Any) -> None:
    # A memory at version 1,000,005 whose log was compacted to its last five records: reading
    # after version 0 visits those five, not the million numbers before them.
    from lethe.store import _redis

    store = _redis_memory(own_redis, commits=0)
    client = _client(own_redis)
    client.hset(_key(store, "m", "log"), mapping={str(v): f"r{v}" for v in range(1_000_001, 1_000_006)})
    client.set(_key(store, "m", "first"), 1_000_001)
    client.set(_key(store, "m", "latest"), 1_000_005)
    client.config_resetstat()
    rows = store.read("m", 0)
    assert [v for v, _ in rows] == list(range(1_000_001, 1_000_006))  # compacted: starts after 1
    assert _calls(client, "hmget") == 1
    monkeypatch.setattr(_redis, "_READ_CHUNK", 2)  # then in chunks of two records a call
    client.config_resetstat()
    assert store.read("m", 1_000_000) == rows
    assert _calls(client, "evalsha") == 3
    assert _calls(client, "hmget") == 3
    assert store.read("m", 1_000_002, 1_000_004) == rows[2:4]
    client.close()
    store.close()


def test_redis_read_in_chunks_shows_a_compaction_between_them_as_a_gap(
    redis_url: str, redis_prefix: str, monkeypatch: Any
) -> None:
    # The log is read a few records a call; other writers compact it between two calls.  The
    # rows then start later than asked (a compaction, which a replica reloads past), never with
    # a hole in the middle or as history going back.
    from lethe.store import RedisStore, _redis

    monkeypatch.setattr(_redis, "_READ_CHUNK", 4)
    with RedisStore(redis_url, prefix=redis_prefix) as store:
        writer: Shared[Any, Any] = Shared(store, "m", _template(), checkpoint_every=10_000)
        reader: Shared[Any, Any] = Shared(store, "m", _template(), checkpoint_every=10_000)
        for i in range(30):
            writer.update(_put(i))
        script = store._scripts["read"]
        calls = []

        def read(**kwargs: Any) -> Any:
            calls.append(kwargs["args"][0])
            found = script(**kwargs)
            if len(calls) == 1:  # between the first call and the next: commits, then two compactions
                for i in range(30, 40):
                    writer.update(_put(i))
                    assert store.compact("m", 1)
            return found

        monkeypatch.setitem(store._scripts, "read", read)
        rows = store.read("m", 0)
        versions = [v for v, _ in rows]
        assert versions[0] > 5
        assert versions == list(range(versions[0], versions[-1] + 1))
        assert versions[-1] in (30, 40)
        calls.clear()  # the reader's catch-up meets the same: ten commits and compactions between two calls
        assert reader.current().to_dict() == writer.current().to_dict()
        assert reader.version == writer.version == 50
        assert len(calls) > 1


def test_redis_compaction_trims_a_long_log_a_bounded_part_a_call(own_redis: str, monkeypatch: Any) -> None:
    from lethe.store import _redis

    monkeypatch.setattr(_redis, "_TRIM", 10)
    store = _redis_memory(own_redis, commits=35)
    client = _client(own_redis)
    assert store.compact("m", 1)  # a checkpoint at 35, the older one at 0: nothing to trim
    Shared(store, "m", _template()).update(_put(99))
    assert store.compact("m", 1)  # a checkpoint at 36: the log up to 35 goes, ten records a call
    first = _key(store, "m", "first")
    assert int(client.get(first)) == 11
    assert client.hlen(_key(store, "m", "log")) == 26
    assert [v for v, _ in store.read("m", 0)][:1] == [11]
    trims = 1
    while int(client.get(first)) < 36:
        assert not store.compact("m", 1)  # no new checkpoint; the trimming goes on
        trims += 1
    assert trims == 4
    assert [v for v, _ in store.read("m", 0)] == [36]
    assert client.hlen(_key(store, "m", "ops")) == 1
    client.close()
    store.close()


# -- drop ------------------------------------------------------------------------------------


def _leftovers(kind: str, store: Any, request: pytest.FixtureRequest, tmp_path: Path, name: str) -> int:
    """How many keys or rows of ``name`` the engine still holds."""
    if kind == "memory":
        return int(name in store._names)
    if kind == "redis":
        client = _client(request.getfixturevalue("redis_url"))
        tag = store._keys(name)[0].rsplit(":", 1)[0]
        found = len(list(client.scan_iter(match=f"{tag}:*")))
        client.close()
        return found
    tables = ["memories", "entries", "log", "checkpoints", "checkpoint_entries"]
    if kind == "sqlite":
        with sqlite3.connect(tmp_path / "store.db") as conn:
            found = sum(conn.execute(f"SELECT count(*) FROM {t} WHERE name = ?", (name,)).fetchone()[0] for t in tables)
        conn.close()
        return found
    import psycopg

    with psycopg.connect(request.getfixturevalue("postgres_dsn")) as pg:
        return sum(
            pg.execute(f"SELECT count(*) FROM lethe_{t} WHERE name = %s", (name,)).fetchone()[0]  # type: ignore[index]
            for t in tables
        )


@pytest.mark.parametrize("kind", KINDS)
def test_drop_removes_a_memory_and_nothing_else(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    store = _build(kind, request, tmp_path)
    try:
        a: Shared[Any, Any] = Shared(store, "a", _template(), checkpoint_every=2)
        b: Shared[Any, Any] = Shared(store, "ab", _template(), checkpoint_every=2)
        for i in range(7):  # checkpoints and compactions: every kind of key or row exists
            a.update(_put(i))
            b.update(_put(i))
        assert _leftovers(kind, store, request, tmp_path, "a") > 0
        assert store.drop("a") is True
        assert _leftovers(kind, store, request, tmp_path, "a") == 0
        assert store.names() == ["ab"]
        for call in (
            lambda: store.config("a"),
            lambda: store.load("a"),
            lambda: store.read("a", 0),
            lambda: store.append("a", 8, "{}", "{}", [], []),
            lambda: store.wait("a", 7, 0.0),
            lambda: store.checkpoint("a"),
            lambda: store.compact("a", 1),
        ):
            with pytest.raises(KeyError):
                call()
        assert store.drop("a") is False
        assert store.drop("never") is False
        assert Shared(store, "ab", _template()).current().to_dict() == b.current().to_dict()
        fresh: Shared[Any, Any] = Shared(store, "a", _template().put("t", key="t"))  # created afresh
        assert fresh.version == 0
        assert [e.key for e in fresh.current()] == ["t"]
        fresh.update(_put(1))
        assert fresh.version == 1
    finally:
        store.close()


@pytest.mark.parametrize("kind", KINDS)
def test_drop_while_others_commit_and_compact_leaves_nothing_behind(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store = _build(kind, request, tmp_path)
    try:
        Shared(store, "m", _template())
        ended: list[BaseException] = []
        versions: list[int] = []

        def commit() -> None:
            try:
                while True:
                    version = store.load("m")[0] + 1
                    if store.append("m", version, "{}", "{}", [(version % 3, "r")], [(version + 1) % 3]):
                        versions.append(version)
                        if version % 4 == 0:
                            store.compact("m", 2)
            except BaseException as exc:
                ended.append(exc)

        writers = [threading.Thread(target=commit, daemon=True) for _ in range(2)]
        for writer in writers:
            writer.start()
        deadline = time.monotonic() + 30
        while len(versions) < 20 and not ended:
            assert time.monotonic() < deadline, "the writers made no progress"
            time.sleep(0.005)
        assert store.drop("m") is True
        for writer in writers:
            writer.join(timeout=30)
            assert not writer.is_alive()
        assert [type(e) for e in ended] == [KeyError, KeyError], ended
        assert _leftovers(kind, store, request, tmp_path, "m") == 0
        assert store.names() == []
    finally:
        store.close()


def test_postgres_drop_waits_for_a_commit_in_flight(postgres_dsn: str) -> None:
    # A commit of the memory is on its way (its transaction wrote the log row, and has not
    # ended) when the drop starts: the drop deletes it too, rather than leave it behind.
    import psycopg

    from lethe.store import PostgresStore

    with PostgresStore(postgres_dsn) as store:
        Shared(store, "m", _template()).update(_put(1))
        dropped: list[bool] = []
        with psycopg.connect(postgres_dsn) as other:  # a transaction, open until commit()
            other.execute("INSERT INTO lethe_log VALUES ('m', 2, '{}', '{}', 'op')")
            dropper = threading.Thread(target=lambda: dropped.append(store.drop("m")), daemon=True)
            dropper.start()
            time.sleep(0.3)  # the drop has started
            other.commit()
        dropper.join(timeout=30)
        assert dropped == [True]
        with psycopg.connect(postgres_dsn) as conn:
            assert conn.execute("SELECT count(*) FROM lethe_log WHERE name = 'm'").fetchone() == (0,)


@pytest.mark.parametrize("kind", KINDS)
def test_a_name_never_opened_is_a_key_error_to_every_reader(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store = _build(kind, request, tmp_path)
    try:
        for call in (lambda: store.read("nobody", 0), lambda: store.append("nobody", 1, "{}", "{}", [], [])):
            with pytest.raises(KeyError):
                call()
    finally:
        store.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_waiter_on_a_dropped_memory_gets_key_error(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    store = _build(kind, request, tmp_path, **({} if kind == "memory" else {"timeout": 2.0}))
    try:
        Shared(store, "m", _template()).update(_put(1))
        got: list[BaseException | int] = []

        def wait() -> None:
            try:
                got.append(store.wait("m", 1, 30.0))
            except BaseException as exc:
                got.append(exc)

        waiter = threading.Thread(target=wait, daemon=True)
        waiter.start()
        time.sleep(0.3)  # blocked in the wait
        assert store.drop("m") is True
        waiter.join(timeout=20)
        assert not waiter.is_alive()
        assert len(got) == 1
        assert isinstance(got[0], KeyError), got
    finally:
        store.close()


# -- close -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", SERVED)
def test_a_closed_store_refuses_every_method(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    store = _build(kind, request, tmp_path)
    Shared(store, "m", _template(), checkpoint_every=1).update(_put(1))
    store.close()
    for call in (
        store.names,
        lambda: store.config("m"),
        lambda: store.open("n", "{}", "{}", []),
        lambda: store.load("m"),
        lambda: store.read("m", 0),
        lambda: store.append("m", 2, "{}", "{}", [], []),
        lambda: store.wait("m", 1, 0.0),
        lambda: store.wait("m", 1, 0.5),
        store.time,
        lambda: store.checkpoint("m"),
        lambda: store.compact("m", 1),
        lambda: store.drop("m"),
    ):
        with pytest.raises(StoreError, match="closed"):
            call()
    store.close()  # again: nothing to do


def _closing_ends_a_wait(wait: Callable[[], object], close: Callable[[], None], within: float) -> None:
    """``close()`` from this thread, while another is blocked in ``wait()``, ends that wait
    within ``within`` seconds with a StoreError saying so."""
    got: list[object] = []

    def waiting() -> None:
        try:
            got.append(wait())
        except BaseException as exc:
            got.append(exc)

    waiter = threading.Thread(target=waiting, daemon=True)
    waiter.start()
    time.sleep(0.3)  # blocked in the wait
    close()
    waiter.join(timeout=within)
    assert not waiter.is_alive()
    assert len(got) == 1
    assert isinstance(got[0], StoreError), got
    assert "closed" in str(got[0])


@pytest.mark.parametrize("kind", SERVED)
def test_a_thread_waiting_when_the_store_closes_gets_store_error(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store = _build(kind, request, tmp_path)
    Shared(store, "m", _template()).update(_put(1))
    _closing_ends_a_wait(lambda: store.wait("m", 1, 20.0), store.close, within=20)


@pytest.mark.parametrize("kind", SERVED)
def test_a_shared_closed_while_another_thread_waits_on_it_ends_the_wait(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store = _build(kind, request, tmp_path)
    follower: Shared[int, str] = Shared(store, "m", _template())
    # No timeout: until a commit, or the object is closed (within one slice of the engine's
    # wait, a second).
    _closing_ends_a_wait(follower.wait, follower.close, within=5)
    store.close()
    store.close()
