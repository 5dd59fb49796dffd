"""The bound search answers exactly as a full scan would, scoring a few entries.

ACT-R's ranking changes with time, but each entry's score lies between
time-invariant bounds (all its accesses at its newest, or at its oldest), so
an ACT-R memory keeps its entries by those bounds and searches them
(``lethe.ranking._bounded``).  Its twin calls the same function through a plain
callable, which the memory cannot index and so scans.  Driven by the same
random operations (rehearsals, so histories spread; few importances and
instants, so scores tie), the two must agree on every answer.  The score
calls of ``put`` at capacity and ``top(10)`` are counted.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import Entry, ManualClock, Memory
from lethe._memory import reads as _reads
from lethe.decay import ACTR
from lethe.ranking import MAX_GROUPS, Bounds, Scan

from ._support import START, fake_clock
from .test_groups import Scanned, _extra, ops, run_twins

HALF_LIFE = 60.0


class ScannedStateful(Scanned):
    """ACT-R behind a callable with its access history (``rehearse`` and the state members):
    scores equal to the model's, nothing the memory can index."""

    def rehearse(self, entry: Entry[Any, Any], now: datetime) -> Any:
        return self._fn.rehearse(entry, now)

    def merge_states(self, entries: Any) -> Any:
        return self._fn.merge_states(entries)

    def dump_state(self, state: Any) -> Any:
        return self._fn.dump_state(state)

    def load_state(self, data: object) -> Any:
        return self._fn.load_state(data)


MODELS: dict[str, Any] = {
    "actr": lambda: ACTR(HALF_LIFE),
    "actr_short_history": lambda: ACTR(HALF_LIFE, history=2),  # Petrov's remainder in play
    "actr_steep": lambda: ACTR(HALF_LIFE, decay=0.9, noise=0.01),
    "actr_flat": lambda: ACTR(HALF_LIFE, decay=0.05, noise=5.0),
}


def _twins(
    model: str, cap: int, clock: ManualClock, log: list[tuple[str, Any]]
) -> tuple[Memory[Any, Any], Memory[Any, Any]]:
    def on_evict(tag: str) -> Any:
        return lambda es: log.append((tag, [e.key for e in es]))

    common: dict[str, Any] = {
        "max_entries": cap,
        "clock_fn": clock,
        "summarize_fn": lambda e: f"summary of {e.key}",
        "eviction_threshold": 0.1,
        "summarize_threshold": 0.3,
    }
    fn = MODELS[model]()
    indexed: Memory[Any, Any] = Memory(decay_fn=fn, on_evict=on_evict("indexed"), **common)
    scanned: Memory[Any, Any] = Memory(
        decay_fn=ScannedStateful(fn), half_life=indexed.half_life, on_evict=on_evict("scanned"), **common
    )
    assert isinstance(indexed._ranking, Bounds)
    assert isinstance(scanned._ranking, Scan)
    return indexed, scanned


@pytest.mark.parametrize("model", sorted(MODELS))
@settings(max_examples=150, deadline=None)
@given(cap=st.integers(1, 6), script=st.lists(ops, max_size=60))
def test_a_bounded_memory_answers_as_a_scan(model: str, cap: int, script: list[tuple[Any, ...]]) -> None:
    run_twins(model, cap, script, _twins)


@settings(max_examples=60, deadline=None)
@given(
    rehearsals=st.lists(st.tuples(st.integers(0, 39), st.sampled_from([0.0, 1.0, 30.0, 3600.0])), max_size=120),
    later=st.sampled_from([0.0, 1.0, 60.0, 86_400.0]),
)
def test_rehearsed_histories_rank_as_a_scan(rehearsals: list[tuple[int, float]], later: float) -> None:
    """Many rehearsals spread each entry's accesses (and fill several count groups)."""
    clock = fake_clock()
    log: list[tuple[str, Any]] = []
    indexed, scanned = _twins("actr_short_history", 40, clock, log)
    for i in range(40):
        clock.advance(1.0)
        indexed, scanned = indexed.put(i, key=i), scanned.put(i, key=i)
    for key, step in rehearsals:
        clock.advance(step)
        indexed, scanned = indexed.get(key)[0], scanned.get(key)[0]
    clock.advance(later)
    assert [e.key for e in indexed.top(40)] == [e.key for e in scanned.top(40)]
    assert [e.key for e in indexed.top(3)] == [e.key for e in scanned.top(3)]
    assert _extra(indexed) == _extra(scanned)
    for limit in (0.05, 0.3, 0.5, 0.9):
        assert [e.key for e in indexed.above(limit)] == [e.key for e in scanned.above(limit)]
    (left, gone), (scan_left, scan_gone) = indexed.evict(), scanned.evict()
    assert [e.key for e in gone] == [e.key for e in scan_gone]
    assert left.keys() == scan_left.keys()
    assert indexed.next_eviction() == scanned.next_eviction()
    assert indexed.put("new", key="new").keys() == scanned.put("new", key="new").keys()


def test_the_bounds_hold() -> None:
    """Every score lies within its bounds, across many rehearsal patterns and times."""
    fn = ACTR(HALF_LIFE, history=3)
    clock = fake_clock()
    mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock)
    for i in range(30):
        clock.advance(float(i * i % 17))
        mem = mem.put(i, key=i % 7)
        mem = mem.get(i % 5)[0] if i % 5 in mem else mem
    for later in (0.0, 1e-6, 1.0, 100.0, 1e6):
        now_us = (clock.now.timestamp() + later) * 1e6
        for e in mem._entries.values():
            group, high, low = fn._rank_bounds(e)
            raw = fn._raw(e, now_us)
            assert fn._bound(group, low, now_us, False) <= raw <= fn._bound(group, high, now_us, True)


# -- score calls ---------------------------------------------------------------------

N = 10_000


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every score ACT-R computes (its fast path), for the memories built inside the test."""
    calls = [0]
    raw = ACTR._raw

    def counting(self: ACTR, entry: Entry[Any, Any], now_us: float) -> float:
        calls[0] += 1
        return raw(self, entry, now_us)

    monkeypatch.setattr(ACTR, "_raw", counting)
    return calls


def _take(calls: list[int]) -> int:
    n, calls[0] = calls[0], 0
    return n


def test_put_at_capacity_and_top_score_a_few_entries(counted: list[int]) -> None:
    """10,000 entries in 4 importances, one clock step apart, a tenth of them rehearsed:
    a few dozen score calls where a scan makes 10,000."""
    clock = fake_clock(START, step=timedelta(seconds=1))
    mem: Memory[Any, Any] = Memory(decay_fn=ACTR(3600.0), max_entries=N, clock_fn=clock)
    assert isinstance(mem._ranking, Bounds)
    for i in range(N):
        mem = mem.put(i, key=i, importance=0.5 + (i % 4) * 0.5)
        if i % 10 == 0:
            mem = mem.get(i // 2)[0]
    _take(counted)
    for i in range(20):
        mem = mem.put(i, key=f"new{i}")
        assert _take(counted) < 100
    assert len(mem) == N
    top = mem.top(10)
    assert _take(counted) < 300
    clock.step = timedelta(0)
    now, now_us = _reads.clock(mem)
    value = mem._config.scorer.unclamped
    want = sorted(mem._entries.values(), key=lambda e: (value(e, now, now_us), e.seq), reverse=True)[:10]
    assert top == want


def test_too_many_groups_fall_back_to_a_scan() -> None:
    clock = fake_clock(START, step=timedelta(seconds=1))
    mem: Memory[Any, Any] = Memory(decay_fn=ACTR(60.0), max_entries=1000, clock_fn=clock)
    for i in range(MAX_GROUPS):
        mem = mem.put(i, key=i, importance=1.0 + i)
    assert isinstance(mem._ranking, Bounds)
    mem = mem.put("one more", key="x", importance=0.25)
    assert isinstance(mem._ranking, Scan)
    again = Memory.from_dict(mem.delete("x").to_dict(), clock_fn=clock)
    assert isinstance(again._ranking, Bounds)


def test_a_subclass_of_actr_scans() -> None:
    class Odd(ACTR):
        pass

    assert isinstance(Memory(decay_fn=Odd(60.0))._ranking, Scan)


def test_a_tie_group_is_read_run_by_run(counted: list[int]) -> None:
    """10,000 entries put at one instant (``put_many``, a frozen clock) score alike: a put at
    capacity and ``top(10)`` score a handful of them, and answer as a scan would (put order)."""
    clock = fake_clock()  # frozen: every reading is the same instant until moved
    mem: Memory[Any, Any] = Memory(decay_fn=ACTR(3600.0), max_entries=N, clock_fn=clock)
    mem = mem.put_many((i, i) for i in range(N))
    clock.advance(1800)
    _take(counted)
    full = mem
    for i in range(20):
        full = full.put(i, key=f"new{i}")
        assert _take(counted) < 20
    assert [k for k in range(20) if k not in full] == list(range(20))  # the earliest put go first
    top = mem.top(10)
    assert _take(counted) < 20
    assert [e.key for e in top] == list(range(N - 1, N - 11, -1))  # equals: the latest put first
    assert [e.key for e in mem.top(N)][-3:] == [2, 1, 0]


@pytest.mark.parametrize("history", [1, 2, 10])
@pytest.mark.parametrize("count", [0, 1, 2, 5, 40])
@pytest.mark.parametrize("state", [None, (0.0,), (0.0, 5.0), (-10.0, 3.0, 4.0)])
def test_bounds_hold_for_any_history(history: int, count: int, state: tuple[float, ...] | None) -> None:
    """Any access count and stored history (one merged by consolidation, one read from a file),
    at any later moment: the score lies within the bounds, and in group 1 it is a function of the key."""
    fn = ACTR(HALF_LIFE, history=history)
    base = START.timestamp() * 1e6
    kept = None if state is None else tuple(base + t * 1e6 for t in state)[-history:]
    e: Entry[Any, Any] = Entry(
        key="k",
        value="v",
        inserted_at=START - timedelta(seconds=20),
        last_accessed_at=START + timedelta(seconds=5),
        access_count=count,
        decay_state=kept,
    )
    group, high, low = fn._rank_bounds(e)
    assert low <= high
    for later in (5.000001, 6.0, 60.0, 3600.0, 1e7):
        now_us = base + later * 1e6
        raw = fn._raw(e, now_us)
        assert fn._bound(group, low, now_us, False) <= raw <= fn._bound(group, high, now_us, True)
        if fn._exact(group):
            assert low == high
