"""Forecasts are the first microsecond the memory sees below, for every built-in model.

``time_until(key, t)`` from now names the first whole microsecond at which
``score(key) < t``: there the score is below, one microsecond earlier it is
not.  ``next_eviction()`` names the first moment an ``evict()`` removes
something, and one microsecond earlier it removes nothing.  These are checked
by moving a ``ManualClock`` to the forecast and to the microsecond before it,
for every built-in decay function, under random importances, thresholds,
rehearsals and deadlines.  A closed form only gives an estimate, checked
against the scores with a couple of score calls (counted below).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lethe import ManualClock, Memory
from lethe._memory.forecast import first_us
from lethe.decay import BUILTINS
from lethe.decay._scorer import Scorer

T0 = datetime(2026, 1, 1, 12, tzinfo=timezone.utc)
US = timedelta(microseconds=1)
MODELS = sorted(BUILTINS)
#: Models whose forecasts start from a closed form (``time_until``) rather than a bisection.
CLOSED = [m for m in MODELS if callable(getattr(Memory(decay_fn=m).decay_fn, "time_until", None))]

thresholds = st.sampled_from([0.999, 0.9, 0.5, 0.25, 0.15, 0.05, 1e-3, 1e-6]) | st.floats(1e-4, 0.9999)
importances = st.sampled_from([0.01, 0.3, 1.0, 1.5, 3.0, 100.0]) | st.floats(0.01, 10.0)
gaps = st.integers(0, 10**11).map(lambda us: timedelta(microseconds=us))  # up to about a day
rehearsals = st.lists(st.tuples(gaps, st.sampled_from(["get", "touch", "update"])), max_size=4)
ttls = st.none() | st.integers(1, 10**12).map(lambda us: timedelta(microseconds=us))


def build(model: str, clock: ManualClock, importance: float, pattern: Any, ttl: Any, **config: Any) -> Memory[Any, Any]:
    """A memory holding ``k`` (rehearsed along ``pattern``) and ``other`` (put once)."""
    mem: Memory[Any, Any] = Memory(half_life=timedelta(hours=1), decay_fn=model, clock_fn=clock, **config)
    mem = mem.put("v", key="k", importance=importance, ttl=ttl).put("w", key="other")
    for gap, op in pattern:
        clock.advance(gap)
        if "k" not in mem:  # past its deadline
            break
        if op == "get":
            mem = mem.get("k")[0]
        elif op == "touch":
            mem = mem.touch("k")
        else:
            mem = mem.update("k", "v2")
    return mem


def check_time_until(mem: Memory[Any, Any], clock: ManualClock, key: Any, threshold: float) -> None:
    """``now + time_until`` is the first microsecond at which the score is below ``threshold``."""
    now = clock.now
    wait = mem.time_until(key, threshold)
    try:
        if wait is None:
            clock.set(now + timedelta(days=365 * 900))
            assert key in mem
            assert mem.score(key) >= threshold
            return
        assert wait >= timedelta(0)
        clock.set(now + wait)
        assert key not in mem or mem.score(key) < threshold  # past its deadline the entry is gone
        if wait > timedelta(0):
            clock.set(now + wait - US)
            assert key in mem
            assert mem.score(key) >= threshold, wait
    finally:
        clock.set(now)


def check_next_eviction(mem: Memory[Any, Any], clock: ManualClock) -> None:
    """``evict()`` at ``next_eviction()`` removes something; a microsecond earlier, nothing."""
    now = clock.now
    when = mem.next_eviction()
    try:
        if when is None:
            clock.set(now + timedelta(days=365 * 900))
            assert mem.evict()[1] == ()
            return
        assert when >= now
        clock.set(when)
        assert mem.evict()[1] != ()
        if when > now:
            clock.set(when - US)
            assert mem.evict()[1] == ()
    finally:
        clock.set(now)


@pytest.mark.parametrize("model", MODELS)
@given(threshold=thresholds, importance=importances, pattern=rehearsals, ttl=ttls, later=gaps)
def test_time_until_is_the_first_microsecond_below(
    model: str, threshold: float, importance: float, pattern: Any, ttl: Any, later: timedelta
) -> None:
    clock = ManualClock(T0)
    mem = build(model, clock, importance, pattern, ttl)
    clock.advance(later)
    for key in ("k", "other"):
        if key in mem:
            check_time_until(mem, clock, key, threshold)


@pytest.mark.parametrize("model", MODELS)
@given(threshold=thresholds, importance=importances, pattern=rehearsals, ttl=ttls, later=gaps)
def test_next_eviction_is_the_first_microsecond_an_evict_removes(
    model: str, threshold: float, importance: float, pattern: Any, ttl: Any, later: timedelta
) -> None:
    clock = ManualClock(T0)
    mem = build(model, clock, importance, pattern, ttl, eviction_threshold=threshold, summarize_threshold=threshold)
    clock.advance(later)
    check_next_eviction(mem, clock)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("threshold", [0.9, 0.5, 0.15, 0.05, 1e-3])
def test_the_documented_scenario_for_every_model(model: str, threshold: float) -> None:
    """Read 30 minutes after the put: the scenario that found forecasts 1 µs late and 13 µs early."""
    clock = ManualClock(T0)
    mem: Memory[Any, Any] = Memory(max_entries=10, half_life=timedelta(hours=1), decay_fn=model, clock_fn=clock)
    mem = mem.put("plain", key="plain").put("x", key="fresh", importance=1.5)
    clock.advance(timedelta(minutes=30))
    mem, _ = mem.get("plain")
    for key in ("plain", "fresh"):
        check_time_until(mem, clock, key, threshold)
    check_next_eviction(mem.configure(eviction_threshold=threshold, summarize_threshold=threshold), clock)


def test_fsrs_read_after_30_minutes_is_not_forecast_early() -> None:
    """Regression: the closed form put this crossing 13 µs early (an evict() then kept the entry).

    The crossing is about 1,400 years away, where FSRS's curve is so flat that
    one rounding step of the score spans many microseconds (and clock readings
    past 2**53 µs are floats 8 µs apart).
    """
    clock = ManualClock(T0)
    mem: Memory[Any, Any] = Memory(max_entries=10, half_life=timedelta(hours=1), decay_fn="fsrs", clock_fn=clock)
    mem = mem.put("plain", key="plain")
    clock.advance(timedelta(minutes=30))
    mem, _ = mem.get("plain")
    wait = mem.time_until("plain", 0.15)
    assert wait is not None
    assert wait > timedelta(days=365 * 1000)
    check_time_until(mem, clock, "plain", 0.15)
    evicting = mem.configure(eviction_threshold=0.15, summarize_threshold=0.15)
    assert evicting.next_eviction() == clock.now + wait
    check_next_eviction(evicting, clock)


@pytest.mark.parametrize(
    ("model", "key", "threshold"),
    [
        ("exponential", "plain", 0.15),
        ("exponential", "fresh", 0.9),
        ("access_weighted", "fresh", 0.9),
        ("power_law", "plain", 0.9),
        ("soft_floor", "plain", 0.15),
        ("soft_floor", "fresh", 0.15),
    ],
)
def test_closed_forms_that_were_a_microsecond_late(model: str, key: str, threshold: float) -> None:
    clock = ManualClock(T0)
    mem: Memory[Any, Any] = Memory(max_entries=10, half_life=timedelta(hours=1), decay_fn=model, clock_fn=clock)
    mem = mem.put("plain", key="plain").put("x", key="fresh", importance=1.5)
    clock.advance(timedelta(minutes=30))
    mem, _ = mem.get("plain")
    check_time_until(mem, clock, key, threshold)


# -- the closed form stays O(1) ----------------------------------------------------------


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Count calls to ``Scorer.one`` (every score a forecast asks for)."""
    calls = [0]
    one = Scorer.one

    def counting(self: Scorer, entry: Any, now: datetime, now_us: float) -> float:
        calls[0] += 1
        return one(self, entry, now, now_us)

    with monkeypatch.context() as patch:
        patch.setattr(Scorer, "one", counting)
        yield calls


def forecast_calls(monkeypatch: pytest.MonkeyPatch, model: str, threshold: float, importance: float) -> int:
    clock = ManualClock(T0)
    mem: Memory[Any, Any] = Memory(half_life=timedelta(hours=1), decay_fn=model, clock_fn=clock)
    mem = mem.put("v", key="k", importance=importance)
    clock.advance(timedelta(minutes=17, microseconds=3))
    with counted(monkeypatch) as calls:
        mem.time_until("k", threshold)
    return calls[0]


@pytest.mark.parametrize("model", CLOSED)
def test_a_closed_form_forecast_takes_a_few_scores(monkeypatch: pytest.MonkeyPatch, model: str) -> None:
    counts = [
        forecast_calls(monkeypatch, model, threshold, importance)
        for threshold in (0.9, 0.7, 0.5, 0.33, 0.25, 0.1, 0.05, 0.01)
        for importance in (0.95, 1.0, 1.5, 4.0)
    ]
    # The score now, the estimate and the microsecond before it; a few more when it is off.
    assert max(counts) <= 12, counts
    assert sum(1 for c in counts if c <= 3) >= 0.75 * len(counts), counts


def test_without_a_closed_form_the_search_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = forecast_calls(monkeypatch, "actr", 0.05, 1.0)
    assert 3 < calls <= 150


def test_next_eviction_takes_a_few_scores_per_candidate(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = ManualClock(T0)
    mem: Memory[Any, Any] = Memory(half_life=timedelta(hours=1), clock_fn=clock)
    for i in range(200):
        mem = mem.put(f"v{i}", key=i, importance=1.0 + (i % 7) / 10)
        clock.advance(timedelta(seconds=1, microseconds=i))
    with counted(monkeypatch) as calls:
        when = mem.next_eviction()
    assert when is not None
    assert calls[0] <= 12  # Exponential is indexed: only the lowest entries are forecast, each in a few scores
    # Tied entries are all candidates: a few scores each.
    tied = Memory(half_life=timedelta(hours=1), clock_fn=clock).put_many([(i, i) for i in range(100)])
    with counted(monkeypatch) as calls:
        assert tied.next_eviction() is not None
    assert calls[0] <= 3 * 100


# -- past the year 2255 a clock reading is a float coarser than a microsecond ---------


@pytest.mark.parametrize("offset", range(8))
def test_a_bisected_crossing_past_2255_is_exact(offset: int) -> None:
    crossing = T0 + timedelta(days=365 * 300, microseconds=offset)

    def cliff(entry: Any, now: datetime) -> float:
        return 1.0 if now < crossing else 0.0

    mem: Memory[Any, Any] = Memory(decay_fn=cliff, clock_fn=ManualClock(T0)).put("v", key="k")
    assert mem.time_until("k", 0.5) == crossing - T0
    assert mem.next_eviction() == crossing


@given(st.integers(2**53 - 10, 2**62))
def test_first_us_is_the_first_microsecond_that_reads_as_a_deadline(us: int) -> None:
    reading = float(us)
    first = first_us(reading)
    assert float(first) >= reading
    assert float(first - 1) < reading
