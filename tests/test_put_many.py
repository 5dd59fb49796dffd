"""``put_many`` gives exactly what chained ``put`` calls at one clock reading give."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import Entry, Memory, MemoryFullError

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _memory(decay: str, cap: int, log: list[Any]) -> Memory[Any, Any]:
    def summarize(e: Entry[Any, Any]) -> str:
        return f"about {e.key}"

    return Memory(
        max_entries=cap,
        decay_fn=decay,
        half_life=60.0,
        clock_fn=lambda: T0,
        summarize_fn=summarize,
        on_evict=lambda es: log.append([(e.key, e.summary) for e in es]),
    )


pairs = st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 30)), st.integers()), max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["exponential", "actr"]),
    st.integers(1, 40),
    st.lists(st.tuples(st.integers(0, 30), st.booleans()), max_size=30),
    pairs,
    st.sampled_from([0.5, 1.0, 3.0]),
    st.sampled_from([None, 30.0]),
)
def test_put_many_equals_chained_puts(
    decay: str,
    cap: int,
    before: list[tuple[int, bool]],
    batch: list[tuple[int | None, int]],
    importance: float,
    ttl: float | None,
) -> None:
    chain_log: list[Any] = []
    bulk_log: list[Any] = []
    base_chain = _memory(decay, cap, chain_log)
    base_bulk = _memory(decay, cap, bulk_log)
    for key, pinned in before:
        if len(base_chain) < cap or key in base_chain:
            base_chain = base_chain.put(f"old {key}", key=key, pinned=pinned, importance=key / 10)
            base_bulk = base_bulk.put(f"old {key}", key=key, pinned=pinned, importance=key / 10)
    chained: Memory[Any, Any] = base_chain
    try:
        for key, value in batch:
            chained = chained.put(value, key=key, importance=importance, ttl=ttl)
    except MemoryFullError:
        with pytest.raises(MemoryFullError):
            base_bulk.put_many(batch, importance=importance, ttl=ttl)
        return
    bulk = base_bulk.put_many(batch, importance=importance, ttl=ttl)
    assert bulk.to_dict() == chained.to_dict()
    # The chain tells on_evict once per put; the batch once, of the same entries in the same order.
    assert len(bulk_log) <= 1
    told = [pair for call in bulk_log for pair in call]
    assert told == [pair for call in chain_log for pair in call]
    assert [(e.key, e.summary) for e in bulk.evicted] == told
    assert [(e.key, s) for e, s in bulk.scored()] == [(e.key, s) for e, s in chained.scored()]
    assert [e.key for e in bulk.top(5)] == [e.key for e in chained.top(5)]
    if chained.pinned_count() < cap:  # auto keys carry on alike
        assert bulk.put("next").to_dict() == chained.put("next").to_dict()


def test_put_many_accepts_a_mapping_and_keeps_its_order() -> None:
    mem: Memory[str, str] = Memory(clock_fn=lambda: T0)
    mem = mem.put_many({"b": "2", "a": "1"}, importance=2.0, metadata={"source": "import"})
    assert [(e.key, e.seq) for e in sorted(mem._entries.values(), key=lambda e: e.seq)] == [("b", 0), ("a", 1)]
    assert mem.peek("a").metadata == {"source": "import"}
    assert mem.peek("a").importance == 2.0


def test_put_many_of_nothing_is_an_equal_memory() -> None:
    mem: Memory[str, str] = Memory(clock_fn=lambda: T0).put("v", key="k")
    assert mem.put_many([]) == mem


@pytest.mark.parametrize(
    ("items", "kwargs", "error", "message"),
    [
        ([("k", "v"), "not a pair"], {}, TypeError, r"items\[1\] must be a \(key, value\) pair"),
        ([("k", "v", "extra")], {}, TypeError, r"items\[0\] must be a \(key, value\) pair"),
        ([(["unhashable"], "v")], {}, TypeError, r"items\[0\]: key must be hashable"),
        ([("k", "v")], {"importance": -1.0}, ValueError, "importance"),
        ([("k", "v")], {"pinned": 1}, TypeError, "pinned"),
        ([("k", "v")], {"ttl": 0}, ValueError, "ttl"),
        ([("k", "v")], {"metadata": ["x"]}, TypeError, "metadata"),
        ([("k", "v")], {"pinned": True, "ttl": 5.0}, ValueError, "pinned entry cannot expire"),
    ],
)
def test_bad_input_raises_and_changes_nothing(
    items: list[Any], kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    mem: Memory[Any, Any] = Memory(clock_fn=lambda: T0).put("v", key="kept")
    snapshot = mem.to_dict()
    with pytest.raises(error, match=message):
        mem.put_many(items, **kwargs)
    assert mem.to_dict() == snapshot


def test_a_failing_hook_midway_leaves_the_memory_unchanged() -> None:
    def summarize(e: Entry[Any, Any]) -> str:
        raise RuntimeError("LLM timed out")

    mem: Memory[Any, Any] = Memory(max_entries=2, clock_fn=lambda: T0, summarize_fn=summarize)
    mem = mem.put("a", key="a").put("b", key="b")
    snapshot = mem.to_dict()
    with pytest.raises(Exception, match="LLM timed out"):
        mem.put_many([("c", "c")])
    assert mem.to_dict() == snapshot


def test_put_many_in_bulk_rebuilds_and_stays_exact_far_from_the_origin() -> None:
    """Large batches go through the bulk path (index rebuilt, keys re-based); answers stay exact."""
    t = [T0]
    mem: Memory[Any, Any] = Memory(max_entries=5000, half_life=1.0, clock_fn=lambda: t[0])
    mem = mem.put_many((i, i) for i in range(1000))
    t[0] += timedelta(days=2)  # far past the index's re-basing bound
    batch = [(i, i) for i in range(1000, 3000)]
    chained = mem
    for key, value in batch:
        chained = chained.put(value, key=key, importance=1.5)
    bulk = mem.put_many(batch, importance=1.5)
    assert bulk.to_dict() == chained.to_dict()
    assert [e.key for e in bulk.top(3)] == [2999, 2998, 2997]  # clamped ties: latest put first
    assert [e.key for e in bulk.evict()[1]] == [e.key for e in chained.evict()[1]] == list(range(999, -1, -1))
    assert bulk.next_eviction() == t[0]  # the first thousand have faded
    after = bulk.evict()[0].next_eviction()
    assert after == chained.evict()[0].next_eviction()
    assert after == t[0] + timedelta(seconds=4, microseconds=906891)  # 1.5 * 2**-s < 0.05 from s = log2(30)


def test_put_many_of_nothing_is_no_write() -> None:
    now = {"t": datetime(2026, 1, 1, tzinfo=timezone.utc)}
    mem: Memory[Any, Any] = Memory(half_life=600, clock_fn=lambda: now["t"]).put("a", key="a")
    now["t"] += timedelta(hours=1)
    empty = mem.put_many([])
    now["t"] -= timedelta(hours=1)
    # Like no put at all: the memory has not seen the later reading, so it scores at the clock's.
    assert empty.score("a") == mem.score("a") == 1.0
