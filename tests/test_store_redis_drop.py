"""``RedisStore.drop`` in script calls of bounded length: a memory with more checkpoints than one
call removes is dropped whole, in more calls (counted on the client, never timed), each removing
at most its share; a drop cut off after its first call leaves the name absent to every reader and
writer, refused by ``open`` until a later ``drop`` removes the rest.  On the session's
``redis-server`` (``tests/conftest.py``)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from typing import Any

import pytest

from lethe import Memory
from lethe.store import RedisStore, Shared, StoreError, _redis
from lethe.store._redis import _KEYS

from ._support import fake_clock

redis = pytest.importorskip("redis")

#: The SHA1 the server knows the drop script by (what ``EVALSHA`` is sent with).
DROP_SHA = hashlib.sha1(_redis._DROP.encode()).hexdigest()


class Counting(redis.Redis):  # type: ignore[misc]
    """A client that records every call of the drop script: how many checkpoints its memory had
    before the call and after it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.drops: list[tuple[int, int]] = []

    def evalsha(self, sha: str, numkeys: int, *args: Any) -> Any:
        if sha != DROP_SHA:
            return super().evalsha(sha, numkeys, *args)
        checkpoints = args[_KEYS.index("checkpoints")]
        before = self.zcard(checkpoints) if self.type(checkpoints) == b"zset" else 0
        found = super().evalsha(sha, numkeys, *args)
        self.drops.append((before, self.zcard(checkpoints)))
        return found


@pytest.fixture
def client(redis_url: str) -> Iterator[Counting]:
    made = Counting.from_url(redis_url, socket_timeout=5)
    yield made
    made.close()


@pytest.fixture
def store(client: Counting, redis_prefix: str) -> Iterator[RedisStore]:
    with RedisStore(client, prefix=redis_prefix, timeout=3.0) as made:
        yield made


def _template() -> Memory[Any, Any]:
    return Memory(clock_fn=fake_clock())


def _filled(store: RedisStore, name: str) -> Shared[Any, Any]:
    """``name`` with every kind of key: entries, log, operation ids, feed, checkpoints."""
    shared: Shared[Any, Any] = Shared(store, name, _template(), checkpoint_every=2)
    for i in range(5):
        shared.update(lambda m, i=i: m.put(f"v{i}", key=i % 3))
    return shared


def _add_checkpoints(client: Counting, store: RedisStore, name: str, count: int) -> int:
    """Add ``count`` checkpoints (each with its head and entries copies) to ``name`` behind the
    store's back, as a damaged or hostile server may hold; return how many it then has."""
    checkpoints = store._keys(name)[_KEYS.index("checkpoints")]
    pipe = client.pipeline(transaction=False)
    for v in range(1_000, 1_000 + count):
        pipe.zadd(checkpoints, {str(v): v})
        pipe.set(f"{checkpoints}:{v}:head", "{}")
        pipe.hset(f"{checkpoints}:{v}:entries", "0", "{}")
    pipe.execute()
    return int(client.zcard(checkpoints))


def _left(client: Counting, store: RedisStore, name: str) -> list[bytes]:
    """Every key of ``name`` still in the server (its hash tag), by ``SCAN``."""
    tag = store._keys(name)[0].rsplit(":", 1)[0]
    return sorted(client.scan_iter(match=f"{tag}:*", count=1_000))


def test_a_memory_with_more_checkpoints_than_a_call_removes_is_dropped_whole(
    client: Counting, store: RedisStore
) -> None:
    _filled(store, "m")
    other = _filled(store, "m2")  # its name starts the same: nothing of it goes
    kept = (_left(client, store, "m2"), other.current().to_dict())
    total = _add_checkpoints(client, store, "m", 2 * _redis._DROP_CHUNK + 500)
    assert len(_left(client, store, "m")) > 2 * total
    assert store.drop("m") is True
    assert _left(client, store, "m") == []
    assert store.names() == ["m2"]
    assert (_left(client, store, "m2"), Shared(store, "m2", _template()).current().to_dict()) == kept
    assert len(client.drops) == math.ceil(total / _redis._DROP_CHUNK) == 3
    assert all(before - after <= _redis._DROP_CHUNK for before, after in client.drops)
    assert store.drop("m") is False


def test_the_script_calls_of_a_drop_grow_with_its_checkpoints(
    client: Counting, store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_redis, "_DROP_CHUNK", 10)
    calls, expected = [], []
    for extra in (0, 25, 95):
        _filled(store, "m")
        total = _add_checkpoints(client, store, "m", extra)
        expected.append(math.ceil(total / 10))
        client.drops.clear()
        assert store.drop("m") is True
        assert _left(client, store, "m") == []
        assert [before for before, _ in client.drops][:1] == [total]
        assert all(0 < before - after <= 10 for before, after in client.drops[:-1])
        assert client.drops[-1][1] == 0
        calls.append(len(client.drops))
    assert calls == expected
    assert calls[0] == 1
    assert calls[0] < calls[1] < calls[2]


def test_a_drop_cut_off_after_its_first_call_leaves_the_name_dropped(
    client: Counting, store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_redis, "_DROP_CHUNK", 10)
    held = _filled(store, "m")
    total = _add_checkpoints(client, store, "m", 35)
    # What one drop sends first, and nothing after it (the process killed there).
    assert [int(n) for n in store._scripts["drop"](keys=store._keys("m"), args=[10])] == [len(_KEYS), 1]
    checkpoints = store._keys("m")[_KEYS.index("checkpoints")]
    assert client.zcard(checkpoints) == total - 10
    left = _left(client, store, "m")
    assert left
    assert all(key.decode().startswith(checkpoints) for key in left)  # only checkpoints are left
    for call in (
        lambda: store.config("m"),
        lambda: store.load("m"),
        lambda: store.read("m", 0),
        lambda: store.append("m", 6, "{}", "{}", [], []),
        lambda: store.wait("m", 5, 0.0),
        lambda: store.checkpoint("m"),
        lambda: store.compact("m", 1),
    ):
        with pytest.raises(KeyError):
            call()
    with pytest.raises(StoreError, match="no longer in the store"):
        held.update(lambda m: m.put("late", key="late"))
    assert store.names() == ["m"]  # listed until the drop ends: an operator sees what is left
    for _ in range(2):  # refused, and refused again: nothing was written by the first try
        with pytest.raises(StoreError, match=r"configuration .* missing") as raised:
            Shared(store, "m", _template().put("new", key="x"))
        assert "drop('m')" in str(raised.value)
        assert "cut off midway" in str(raised.value)
        assert _left(client, store, "m") == left
    client.drops.clear()
    assert store.drop("m") is True  # the rest goes
    assert len(client.drops) == math.ceil((total - 10) / 10)
    assert _left(client, store, "m") == []
    assert store.names() == []
    fresh: Shared[Any, Any] = Shared(store, "m", _template().put("new", key="x"))  # created afresh
    assert fresh.version == 0
    assert [e.key for e in fresh.current()] == ["x"]
    fresh.update(lambda m: m.put("v", key="k"))
    assert fresh.version == 1


def test_a_checkpoints_key_of_another_type_goes_in_one_call(client: Counting, store: RedisStore) -> None:
    shared: Shared[Any, Any] = Shared(store, "m", _template(), checkpoint_every=10_000)  # version 0's alone
    shared.update(lambda m: m.put("v", key="k"))
    checkpoints = store._keys("m")[_KEYS.index("checkpoints")]
    client.delete(checkpoints)
    client.rpush(checkpoints, *range(5_000))  # a list: no members to visit, the key goes whole
    assert store.drop("m") is True
    assert len(client.drops) == 1
    assert _left(client, store, "m") == []
