"""Entries with identical score inputs (one clock reading, one importance) cost the index one score call per
group, not one per entry: a tie group of 10,000 is no slower to query than 10,000 distinct instants.

Deterministic: the decay function's score calls are counted, nothing is timed.  The bounds are
O(log n + k + m) with generous constants: before tie groups were skipped, each of these operations
made about n = 10,000 calls.
"""

from __future__ import annotations

from datetime import timedelta
from itertools import islice
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import Entry, Memory
from lethe.decay import Exponential
from lethe.ranking import Order
from tests._support import START, fake_clock
from tests.test_index import HALF_LIFE, T0, _observe, _twins, run_twins

N = 10_000
HOUR = timedelta(hours=1)


class Calls:
    """How many entries the decay function scored since the last :meth:`take`."""

    def __init__(self) -> None:
        self.n = 0

    def take(self) -> int:
        n, self.n = self.n, 0
        return n


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Count every score the memory asks of ``Exponential`` (its fast paths, looked up when a memory is built)."""
    counter = Calls()
    raw, values = Exponential._raw, Exponential._values

    def counted_raw(self: Exponential, entry: Entry[Any, Any], now_us: float) -> float:
        counter.n += 1
        return raw(self, entry, now_us)

    def counted_values(self: Exponential, entries: list[Entry[Any, Any]], now_us: float) -> list[float]:
        counter.n += len(entries)
        return values(self, entries, now_us)

    monkeypatch.setattr(Exponential, "_raw", counted_raw)
    monkeypatch.setattr(Exponential, "_values", counted_values)
    return counter


def _layout(groups: list[tuple[int, float, int]]) -> tuple[Memory[Any, Any], Any]:
    """A full memory of ``N`` entries loaded with ``put_many``: ``(hour, importance, count)`` per batch."""
    clock = fake_clock()
    mem: Memory[Any, Any] = Memory(
        decay_fn=Exponential(HOUR), max_entries=N, eviction_threshold=0.25, summarize_threshold=0.25, clock_fn=clock
    )
    assert isinstance(mem._ranking, Order)
    done = 0
    for hour, importance, count in groups:
        clock.now = START + hour * HOUR
        mem = mem.put_many(((f"k{done + i}", i) for i in range(count)), importance=importance)
        done += count
    assert len(mem) == N
    return mem, clock


# One instant: every entry scores exactly 0.25 two half-lives later, the eviction threshold itself,
# so the whole group lies within rounding of every bound (and none of it is evicted).
ONE_INSTANT = [(0, 1.0, N)]
# A few instants and importances, exactly equal scores across groups (2.0 * 0.25 == 1.0 * 0.5 == 0.5 * 1.0),
# one group exactly at the threshold, a few entries below it and a few of a huge importance (clamped to 1.0).
MIXED = [(0, 2.0, 2400), (0, 0.5, 30), (0, 1e300, 20), (1, 1.0, 2500), (1, 0.5, 2450), (2, 0.5, 2600)]


@pytest.mark.parametrize("layout", [ONE_INSTANT, MIXED], ids=["one-instant", "mixed"])
def test_queries_on_tie_groups_score_each_group_once(calls: Calls, layout: list[tuple[int, float, int]]) -> None:
    mem, clock = _layout(layout)
    clock.now = START + 2 * HOUR  # ``hour`` 0 entries are two half-lives old
    evictable = sum(count for hour, importance, count in layout if importance * 0.5 ** (2 - hour) < 0.25)
    calls.take()
    counts: dict[str, int] = {}

    top = mem.top(10)
    counts["top(10)"] = calls.take()
    first = list(islice(mem, 10))
    counts["first 10 of iteration"] = calls.take()
    assert [e.key for e in first] == [e.key for e in top]

    full = mem.put("v", key="new")
    counts["put at capacity"] = calls.take()
    assert len(full) == N
    assert "new" in full

    kept, evicted = mem.evict()
    counts["evict()"] = calls.take()
    assert len(evicted) == evictable
    kept.next_eviction()
    counts["next_eviction()"] = calls.take()

    m = evictable
    assert counts["evict()"] >= m  # the counter counts
    assert counts["top(10)"] > 0
    bounds = {
        "top(10)": 64 + 4 * 10,
        "first 10 of iteration": 64 + 4 * 10,
        "put at capacity": 64,
        "evict()": 64 + 2 * m,
        "next_eviction()": 64,
    }
    assert {op: n for op, n in counts.items() if n > bounds[op]} == {}, counts


# -- heavy ties answer as a scan ------------------------------------------------------

batch_importances = st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, 1e300])
tie_ops = st.one_of(
    st.tuples(
        st.just("put_many"),
        st.integers(0, 59),
        st.integers(1, 30),
        batch_importances,
        st.sampled_from([False, False, False, True]),
        st.sampled_from([None, None, 60.0, 90.0]),
    ),
    st.tuples(st.just("put"), st.integers(0, 59), batch_importances),
    st.tuples(st.just("touch"), st.integers(0, 59)),
    st.tuples(st.just("evict")),
    st.tuples(st.just("summarize")),
    st.tuples(st.just("advance"), st.sampled_from([0.0, 0.0, 30.0, 60.0, 120.0, 600.0, 86_400.0 * 30])),
)


def _tie_apply(mem: Memory[Any, Any], op: tuple[Any, ...]) -> tuple[Memory[Any, Any], Any]:
    name, *args = op
    if name == "put_many":
        first, count, importance, pinned, ttl = args
        items = [((first + i) % 60, f"v{first + i}") for i in range(count)]
        return mem.put_many(items, importance=importance, pinned=pinned, ttl=None if pinned else ttl), None
    if name == "put":
        return mem.put(f"v{args[0]}", key=args[0], importance=args[1]), None
    if name == "touch":
        return (mem.touch(args[0]), None) if args[0] in mem else (mem, None)
    if name == "evict":
        new, out = mem.evict()
        return new, [(e.key, e.summary) for e in out]
    return mem.summarize(), None


@settings(max_examples=150, deadline=None)
@given(st.integers(5, 40), st.lists(tie_ops, max_size=25))
def test_tie_groups_answer_as_a_scan(cap: int, script: list[tuple[Any, ...]]) -> None:
    """Batches at one instant, a few instants, importances 0 to 1e300, pinned and ttl: the index agrees."""
    run_twins(cap, script, _tie_apply)


def test_entries_of_different_scores_that_round_to_one_key_are_scored_one_by_one() -> None:
    """Equal keys do not make equal scores: a run shared by two groups is marked and scored entry by entry."""
    clock = fake_clock(T0)
    log: list[tuple[str, Any]] = []
    indexed, scanned = _twins(40, clock, log)
    indexed = indexed.put_many([(f"a{i}", i) for i in range(6)])
    scanned = scanned.put_many([(f"a{i}", i) for i in range(6)])
    clock.now += timedelta(seconds=HALF_LIFE)
    # 0.5 one half-life later: 1.0's key to the last bit, yet not always its score to the last bit.
    for batch in range(3):
        items = [(f"b{batch}{i}", i) for i in range(5)]
        indexed = indexed.put_many(items, importance=0.5) if batch else indexed.put("b", key="b", importance=0.5)
        scanned = scanned.put_many(items, importance=0.5) if batch else scanned.put("b", key="b", importance=0.5)
    key_a = indexed._ranking.key(indexed.peek("a0"))
    assert indexed._ranking.key(indexed.peek("b")) == key_a
    assert isinstance(indexed._ranking, Order)
    assert key_a in indexed._ranking.mixed
    for step in (0.0, 30.0, 600.0):
        clock.now += timedelta(seconds=step)
        assert _observe(indexed) == _observe(scanned)
    for i in range(25):
        indexed = indexed.put(i, key=f"c{i}", importance=0.01)
        scanned = scanned.put(i, key=f"c{i}", importance=0.01)
        assert _observe(indexed) == _observe(scanned)
    assert [k for tag, k in log if tag == "indexed"] == [k for tag, k in log if tag == "scanned"]
