"""``RedisStore.open`` while another client drops the memory: the drop's script removes the keys,
then (the names set being in another Cluster slot) a second command unlists the name.  An open
in between finds the memory gone (``MemoryGone``), never a damaged one; once the name is
unlisted it creates the memory afresh.  On the session's ``redis-server`` (``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lethe import Memory
from lethe.store import MemoryGone, RedisStore, Shared, StoreError, _redis

from ._support import fake_clock

redis = pytest.importorskip("redis")


class Interrupted(redis.Redis):  # type: ignore[misc]
    """A client that runs ``then`` (once) right after answering its next ``SISMEMBER``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.then: Callable[[], object] | None = None

    def sismember(self, *args: Any) -> Any:
        found = super().sismember(*args)
        then, self.then = self.then, None
        if then is not None:
            then()
        return found


@pytest.fixture
def client(redis_url: str) -> Iterator[Interrupted]:
    made = Interrupted.from_url(redis_url, socket_timeout=5)
    yield made
    made.close()


@pytest.fixture
def store(client: Interrupted, redis_prefix: str) -> Iterator[RedisStore]:
    with RedisStore(client, prefix=redis_prefix, timeout=3.0) as made:
        yield made


def _template() -> Memory[Any, Any]:
    return Memory(clock_fn=fake_clock())


def _left(client: Interrupted, store: RedisStore, name: str) -> list[bytes]:
    tag = store._keys(name)[0].rsplit(":", 1)[0]
    return sorted(client.scan_iter(match=f"{tag}:*"))


def test_an_open_between_a_drops_script_and_its_unlisting_finds_the_memory_gone(
    client: Interrupted, store: RedisStore
) -> None:
    Shared(store, "m", _template()).update(lambda m: m.put("v", key="k"))
    # The drop's first part alone, as another client runs it: every key goes, the name stays listed.
    assert [int(n) for n in store._scripts["drop"](keys=store._keys("m"), args=[_redis._DROP_CHUNK])] == [
        len(_redis._KEYS),
        0,
    ]
    assert store.names() == ["m"]
    for _ in range(2):  # every try, and nothing written by any
        with pytest.raises(MemoryGone, match=r"no longer in the store.*drop\('m'\)"):
            Shared(store, "m", _template().put("new", key="x"))
        assert _left(client, store, "m") == []
    client.srem(f"{store.prefix}:names", "m")  # the drop's second part
    fresh: Shared[Any, Any] = Shared(store, "m", _template().put("new", key="x"))  # created afresh
    assert (fresh.version, [e.key for e in fresh.current()]) == (0, ["x"])
    assert store.names() == ["m"]


def test_a_memory_with_keys_left_but_not_its_configuration_is_damaged_not_gone(
    client: Interrupted, store: RedisStore
) -> None:
    Shared(store, "m", _template()).update(lambda m: m.put("v", key="k"))
    client.delete(store._keys("m")[0])
    with pytest.raises(StoreError, match=r"configuration .* missing") as raised:
        Shared(store, "m", _template())
    assert not isinstance(raised.value, MemoryGone)


def test_an_open_that_saw_the_name_listed_just_before_the_drop_unlisted_it_creates_the_memory(
    client: Interrupted, store: RedisStore
) -> None:
    Shared(store, "m", _template()).update(lambda m: m.put("v", key="k"))
    store._scripts["drop"](keys=store._keys("m"), args=[_redis._DROP_CHUNK])
    # The drop's second part lands after the open read the listing, before its script runs.
    client.then = lambda: client.srem(f"{store.prefix}:names", "m")
    fresh: Shared[Any, Any] = Shared(store, "m", _template().put("new", key="x"))
    assert client.then is None
    assert (fresh.version, [e.key for e in fresh.current()]) == (0, ["x"])
    assert store.names() == ["m"]
