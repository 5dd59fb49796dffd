"""Property tests: the invariants of scores, capacity, ordering and immutability."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lethe import Entry, Memory, MemoryFullError
from lethe._map import PersistentMap

from .conftest import Clock

DECAYS = ["exponential", "access_weighted", "actr"]

keys = st.one_of(st.integers(-5, 30), st.sampled_from(["a", "b", "c", "d", "e"]))
importance = st.floats(0.0, 3.0, allow_nan=False)
steps = st.floats(0.0, 5 * 3600.0, allow_nan=False)

ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), keys, importance, st.booleans()),
        st.tuples(st.just("auto"), importance),
        st.tuples(st.just("get"), keys),
        st.tuples(st.just("touch"), keys, importance),
        st.tuples(st.just("update"), keys),
        st.tuples(st.just("pin"), keys),
        st.tuples(st.just("unpin"), keys),
        st.tuples(st.just("delete"), keys),
        st.tuples(st.just("evict")),
        st.tuples(st.just("summarize")),
        st.tuples(st.just("clear")),
        st.tuples(st.just("tick"), steps),
    ),
    max_size=40,
)


def apply(mem: Memory[Any, Any], op: tuple[Any, ...], clock: Clock) -> Memory[Any, Any]:
    name = op[0]
    try:
        if name == "put":
            return mem.put(f"v{op[1]}", key=op[1], importance=op[2], pinned=op[3])
        if name == "auto":
            return mem.put("auto", importance=op[1])
        if name == "get":
            return mem.get(op[1])[0]
        if name == "touch":
            return mem.touch(op[1], importance=op[2])
        if name == "update":
            return mem.update(op[1], f"u{op[1]}")
        if name in ("pin", "unpin", "delete"):
            return getattr(mem, name)(op[1])  # type: ignore[no-any-return]
        if name == "evict":
            return mem.evict()[0]
        if name == "summarize":
            return mem.summarize()
        if name == "clear":
            return mem.clear()
        clock.tick(op[1])
        return mem
    except (KeyError, MemoryFullError):
        return mem


def snapshot(mem: Memory[Any, Any]) -> Any:
    return sorted(((repr(e.key), e) for e in mem._entries.values()), key=lambda p: p[0])


@pytest.mark.parametrize("decay", DECAYS)
@given(ops=ops, cap=st.integers(1, 6))
def test_invariants_hold_after_any_sequence(decay: str, ops: list[tuple[Any, ...]], cap: int) -> None:
    clock = Clock()
    summarized: list[Any] = []

    def summarize(e: Entry[Any, Any]) -> str:
        summarized.append((e.key, e.value, e.seq))
        return f"s:{e.value}"

    mem: Memory[Any, Any] = Memory(max_entries=cap, decay_fn=decay, summarize_fn=summarize, clock_fn=clock)
    history: list[tuple[Memory[Any, Any], Any, Any]] = []
    for op in ops:
        history.append((mem, snapshot(mem), mem.score_map()))
        mem = apply(mem, op, clock)
        assert len(mem) <= cap
        scored = mem.scored()
        scores = [s for _, s in scored]
        assert all(0.0 <= s <= 1.0 for s in scores)
        assert scores == sorted(scores, reverse=True)
        assert all(s == 1.0 for e, s in scored if e.pinned)
        assert all(mem.score(e.key) == s for e, s in scored)
        assert all(s >= mem.eviction_threshold for e in mem.active() for s in [mem.score(e.key)])
    # Old versions answer exactly as before (the clock has not moved since the last snapshot).
    for old, snap, _ in history:
        assert snapshot(old) == snap
    # summarize_fn ran at most once per (entry, value).
    assert len(summarized) == len(set(summarized))


@pytest.mark.parametrize("decay", DECAYS)
@given(
    imps=st.lists(importance, min_size=1, max_size=8),
    accesses=st.lists(st.floats(1.0, 7200.0), max_size=5),
    waits=st.lists(st.floats(0.0, 50_000.0), min_size=2, max_size=6),
)
def test_scores_never_increase_without_rehearsal(
    decay: str, imps: list[float], accesses: list[float], waits: list[float]
) -> None:
    clock = Clock()
    mem: Memory[Any, Any] = Memory(decay_fn=decay, clock_fn=clock)
    for i, imp in enumerate(imps):
        mem = mem.put(i, key=i, importance=imp)
    for wait in accesses:
        clock.tick(wait)
        mem = mem.touch(0)
    last = mem.score_map()
    for wait in waits:
        clock.tick(wait)
        now = mem.score_map()
        assert all(now[k] <= last[k] + 1e-12 for k in now)
        last = now


@pytest.mark.parametrize("decay", DECAYS)
@given(
    imps=st.lists(importance, min_size=2, max_size=10),
    gaps=st.lists(st.floats(0.0, 3 * 3600.0), min_size=2, max_size=10),
    pins=st.lists(st.booleans(), min_size=2, max_size=10),
)
def test_capacity_evicts_the_lowest_scored_unpinned_entry(
    decay: str, imps: list[float], gaps: list[float], pins: list[bool]
) -> None:
    clock = Clock()
    n = min(len(imps), len(gaps), len(pins))
    reported: list[tuple[Entry[Any, Any], ...]] = []
    mem: Memory[Any, Any] = Memory(max_entries=n, decay_fn=decay, clock_fn=clock, on_evict=reported.append)
    for i in range(n):
        clock.tick(gaps[i])
        mem = mem.put(i, key=i, importance=imps[i], pinned=pins[i])
    before = mem.scored()
    unpinned = [(e, s) for e, s in before if not e.pinned]
    try:
        after = mem.put("new", key="new")
    except MemoryFullError:
        assert not unpinned
        return
    lowest = min(s for _, s in unpinned)
    (gone,) = reported[0]
    assert mem.score(gone.key) == lowest
    assert gone.key not in after
    assert len(after) == n
    assert gone.key == unpinned[-1][0].key


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 40), st.integers()), max_size=200))
def test_persistent_map_matches_a_dict(ops: list[tuple[bool, int, int]]) -> None:
    m: PersistentMap[int, int] = PersistentMap()
    model: dict[int, int] = {}
    versions = []
    for is_set, k, v in ops:
        versions.append((m, dict(model)))
        if is_set:
            m = m.set(k, v)
            model[k] = v
        else:
            m = m.discard(k)
            model.pop(k, None)
        assert len(m) == len(model)
        assert dict(m.items()) == model
    for old, snap in versions:
        assert dict(old.items()) == snap
        assert len(old) == len(snap)


@given(st.sets(st.integers(), min_size=0, max_size=300), st.data())
def test_persistent_map_grows_and_shrinks(keys_: set[int], data: st.DataObject) -> None:
    m: PersistentMap[int, int] = PersistentMap()
    for k in keys_:
        m = m.add(k, -k)
    assert sorted(m.keys()) == sorted(keys_)
    assert all(m[k] == -k and k in m for k in keys_)
    doomed = data.draw(st.lists(st.sampled_from(sorted(keys_)), unique=True) if keys_ else st.just([]))
    for k in doomed:
        m = m.delete(k)
        assert k not in m
        assert m.get(k) is None
    assert sorted(m.keys()) == sorted(keys_ - set(doomed))
    with pytest.raises(KeyError):
        m.delete(10**30)


class Collide:
    """A key type whose hashes collide, to exercise full-depth leaves."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Collide) and other.n == self.n


def test_persistent_map_survives_hash_collisions() -> None:
    m: PersistentMap[Collide, int] = PersistentMap()
    for i in range(100):
        m = m.set(Collide(i), i)
    assert len(m) == 100
    assert all(m[Collide(i)] == i for i in range(100))
    for i in range(0, 100, 2):
        m = m.delete(Collide(i))
    assert sorted(v for v in m.values()) == list(range(1, 100, 2))


def test_small_memories_stay_small() -> None:
    import sys

    m: PersistentMap[int, int] = PersistentMap()
    assert sys.getsizeof(m._root) < 100
    for i in range(10):
        m = m.set(i, i)
    assert type(m._root) is dict
    assert sys.getsizeof(m._root) < 1024


def test_large_scores_clamp_and_tiny_half_lives_stay_finite() -> None:
    clock = Clock()
    mem: Memory[Any, Any] = Memory(half_life=1e-9, clock_fn=clock).put(1, key=1, importance=1e300)
    clock.tick(timedelta(days=30_000))
    assert mem.score(1) == 0.0
    mem = mem.put(2, key=2, importance=1e300)
    assert mem.score(2) == 1.0
    assert not any(math.isnan(s) for s in mem.score_map().values())


@pytest.mark.parametrize("decay", DECAYS)
@given(
    puts=st.lists(
        st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.booleans(), st.sampled_from([0, 0, 60, 3600])), max_size=40
    ),
    n=st.integers(0, 45),
)
def test_top_is_the_head_of_the_ranked_order(decay: str, puts: list[tuple[float, bool, int]], n: int) -> None:
    clock = Clock()
    mem: Memory[Any, Any] = Memory(decay_fn=decay, clock_fn=clock)
    for imp, pinned, wait in puts:
        mem = mem.put("v", importance=imp, pinned=pinned)
        clock.tick(wait)
    assert [e.key for e in mem.top(n)] == [e.key for e in mem][:n]
