"""The group index answers exactly as a full scan would.

A memory whose decay function declares ``rank_key`` (``PowerLaw``, ``SoftFloor``,
``AccessWeighted``, ``StabilityExponential``, ``Recency``, ``Importance``,
``AccessFrequency``, or a user's function) keeps one index per group; its twin
calls the same function through a plain callable, which the memory cannot
index and so scans.  Driven by the same random operations, with few distinct
importances and instants (so scores tie across keys, across groups, at 1.0
and at 0.0), the two must agree on every answer: ranking, ``top``, ``above``,
victims at capacity, ``evict`` and ``next_eviction``.  The score calls of
``put`` at capacity and ``top(10)`` are counted: O(G log n), not n.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import Entry, ManualClock, Memory
from lethe._memory import reads as _reads
from lethe.decay import (
    AccessFrequency,
    AccessWeighted,
    Grouped,
    Importance,
    PowerLaw,
    Recency,
    SoftFloor,
    StabilityExponential,
)
from lethe.ranking import MAX_GROUPS, Groups, Scan

from ._support import START, fake_clock
from .test_index import _apply, _observe

HALF_LIFE = 60.0

MODELS: dict[str, Any] = {
    "power_law": lambda: PowerLaw(HALF_LIFE, exponent=0.7),
    "power_law_steep": lambda: PowerLaw(HALF_LIFE, exponent=200.0),
    "soft_floor": lambda: SoftFloor(HALF_LIFE),
    "access_weighted": lambda: AccessWeighted(HALF_LIFE, boost=2.0),
    "access_weighted_flat": lambda: AccessWeighted(HALF_LIFE, boost=0.0),
    "stability_exponential": lambda: StabilityExponential(HALF_LIFE, growth=2.0),
    "recency": lambda: Recency(HALF_LIFE),
    "importance": Importance,
    "access_frequency": lambda: AccessFrequency(saturation=3),
}


class Scanned:
    """A decay function behind a callable: nothing the memory can index."""

    def __init__(self, fn: Any) -> None:
        self._fn = fn
        self.includes_importance = getattr(fn, "includes_importance", False)

    def __call__(self, entry: Entry[Any, Any], now: datetime) -> float:
        return float(self._fn.score(entry, now))


def _twins(
    model: str, cap: int, clock: ManualClock, log: list[tuple[str, Any]]
) -> tuple[Memory[Any, Any], Memory[Any, Any]]:
    def on_evict(tag: str) -> Any:
        return lambda es: log.append((tag, [e.key for e in es]))

    def summarize(e: Entry[Any, Any]) -> str:
        return f"summary of {e.key}"

    common: dict[str, Any] = {
        "max_entries": cap,
        "clock_fn": clock,
        "summarize_fn": summarize,
        "eviction_threshold": 0.1,
        "summarize_threshold": 0.3,
    }
    fn = MODELS[model]()
    indexed: Memory[Any, Any] = Memory(decay_fn=fn, on_evict=on_evict("indexed"), **common)
    scanned: Memory[Any, Any] = Memory(
        decay_fn=Scanned(fn), half_life=indexed.half_life, on_evict=on_evict("scanned"), **common
    )
    assert isinstance(indexed._ranking, Groups)
    assert isinstance(scanned._ranking, Scan)
    return indexed, scanned


keys = st.integers(0, 7)
importances = st.sampled_from([0.0, 0.5, 1.0, 2.0, 1e300])
steps = st.sampled_from([0.0, 0.0, 0.0, 1.0, 60.0, 120.0, 86_400.0 * 60])
ops = st.one_of(
    st.tuples(st.just("put"), keys, importances, st.booleans(), st.sampled_from([None, None, None, 30.0])),
    st.tuples(st.just("get"), keys),
    st.tuples(st.just("get"), keys),
    st.tuples(st.just("touch"), keys, importances),
    st.tuples(st.just("pin"), keys),
    st.tuples(st.just("unpin"), keys),
    st.tuples(st.just("delete"), keys),
    st.tuples(st.just("evict")),
    st.tuples(st.just("summarize")),
    st.tuples(st.just("advance"), steps),
)


def _extra(mem: Memory[Any, Any]) -> dict[str, Any]:
    now, now_us = _reads.clock(mem)
    lowest = mem._ranking.lowest(mem._entries, mem._config.scorer, now, now_us)
    return {"lowest": None if lowest is None else lowest.key, "top10": [e.key for e in mem.top(10)]}


Twins = Callable[[str, int, ManualClock, list[tuple[str, Any]]], tuple[Memory[Any, Any], Memory[Any, Any]]]


def run_twins(model: str, cap: int, script: list[tuple[Any, ...]], twins: Twins = _twins) -> None:
    """Drive an indexed memory and its scanned twin (``twins``) through ``script``; every answer must agree."""
    clock = fake_clock()
    log: list[tuple[str, Any]] = []
    indexed, scanned = twins(model, cap, clock, log)
    for op in script:
        if op[0] == "advance":
            clock.now += timedelta(seconds=op[1])
            continue
        results = []
        for mem in (indexed, scanned):
            try:
                results.append((*_apply(mem, op), None))
            except Exception as exc:  # the same error, raised by both
                results.append((mem, None, (type(exc), str(exc))))
        (indexed, got, failure), (scanned, want, expected) = results
        assert failure == expected
        assert got == want
        if expected is not None:
            continue
        assert _observe(indexed) == _observe(scanned)
        now_us = clock.now.timestamp() * 1e6
        if not any(e.expires_us is not None and e.expires_us <= now_us for e in indexed._entries.values()):
            # (a memory removes its expired entries before it looks for a victim)
            assert _extra(indexed) == _extra(scanned)
        assert [k for tag, k in log if tag == "indexed"] == [k for tag, k in log if tag == "scanned"]
        assert all(e == scanned.peek(e.key) for e in indexed)


@pytest.mark.parametrize("model", sorted(MODELS))
@settings(max_examples=120, deadline=None)
@given(cap=st.integers(1, 6), script=st.lists(ops, max_size=50))
def test_a_grouped_memory_answers_as_a_scan(model: str, cap: int, script: list[tuple[Any, ...]]) -> None:
    run_twins(model, cap, script)


def test_the_built_ins_declare_their_groups() -> None:
    for make in MODELS.values():
        fn = make()
        assert isinstance(fn, Grouped)


# -- score calls ---------------------------------------------------------------------

N = 10_000


class Counted:
    """``PowerLaw`` through its public protocol, counting every score: a user's grouped function."""

    def __init__(self) -> None:
        self.fn = PowerLaw(3600.0)
        self.half_life = 3600.0
        self.calls = 0

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        self.calls += 1
        return self.fn.score(entry, now)

    def rank_key(self, entry: Entry[Any, Any]) -> tuple[Hashable, float]:
        return self.fn.rank_key(entry)

    def take(self) -> int:
        n, self.calls = self.calls, 0
        return n


def test_put_at_capacity_and_top_score_a_few_entries_per_group() -> None:
    """10,000 entries in 4 groups (importances), one clock step apart: O(G log n) score calls, where a scan makes n."""
    fn = Counted()
    clock = fake_clock(START, step=timedelta(seconds=1))
    mem: Memory[Any, Any] = Memory(decay_fn=fn, max_entries=N, clock_fn=clock)
    assert isinstance(mem._ranking, Groups)
    for i in range(N):
        mem = mem.put(i, key=i, importance=0.5 + (i % 4) * 0.5)
    assert len(mem._ranking.groups) == 4
    fn.take()
    for i in range(20):
        mem = mem.put(i, key=f"new{i}")
        assert fn.take() < 50
    assert len(mem) == N
    top = mem.top(10)
    assert fn.take() < 200
    clock.step = timedelta(0)
    now, now_us = _reads.clock(mem)
    value = mem._config.scorer.unclamped
    want = sorted(mem._entries.values(), key=lambda e: (value(e, now, now_us), e.seq), reverse=True)[:10]
    assert top == want
    fn.take()
    assert mem.next_eviction() is not None
    assert fn.take() < 2000  # one forecast per group


def test_too_many_groups_fall_back_to_a_scan() -> None:
    clock = fake_clock(START, step=timedelta(seconds=1))
    mem: Memory[Any, Any] = Memory(decay_fn=PowerLaw(60.0), max_entries=1000, clock_fn=clock)
    for i in range(MAX_GROUPS):
        mem = mem.put(i, key=i, importance=1.0 + i)
    assert isinstance(mem._ranking, Groups)
    mem = mem.put("one more", key="x", importance=0.25)
    assert isinstance(mem._ranking, Scan)
    assert [e.key for e in mem.top(2)] == [MAX_GROUPS - 1, MAX_GROUPS - 2]
    again = Memory.from_dict(mem.delete("x").to_dict(), clock_fn=clock)
    assert isinstance(again._ranking, Groups)


def test_a_subclass_that_changes_the_score_is_not_indexed_by_its_base_groups() -> None:
    class Odd(PowerLaw):
        def score(self, entry: Entry[Any, Any], now: datetime) -> float:
            return 1.0 if entry.key == "odd" else super().score(entry, now)

    assert isinstance(Memory(decay_fn=Odd(60.0))._ranking, Scan)


@pytest.mark.parametrize(
    ("result", "error"),
    [((1.0,), TypeError), (([], 1.0), TypeError), ((0, float("nan")), ValueError), ((0, "1"), ValueError)],
)
def test_a_bad_rank_key_is_named(result: Any, error: type[Exception]) -> None:
    class Bad:
        def score(self, entry: Entry[Any, Any], now: datetime) -> float:
            return 1.0

        def rank_key(self, entry: Entry[Any, Any]) -> Any:
            return result

    with pytest.raises(error, match=r"decay_fn\.rank_key"):
        Memory(decay_fn=Bad()).put("v", key="k")
