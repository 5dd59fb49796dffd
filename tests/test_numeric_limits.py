"""Numbers and time at their limits: no OverflowError, no ZeroDivisionError, no lost hour.

* Forecasts (``next_eviction``, ``time_until``) past ``datetime.max`` are None.
* Out-of-range numbers raise ValueError naming the parameter, with a short message.
* Arguments that cannot mean anything (a deadline not after now, a threshold
  outside 0..1) are refused.
* Extreme but legal parameters, importances and clocks (year 9999) never raise
  from a read, a write or a forecast.
* Time arithmetic is on UTC instants, whatever the clock's timezone.
"""

from __future__ import annotations

import gc
import math
import warnings
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import Entry, ManualClock, Memory
from lethe.decay import (
    ACTR,
    BUILTINS,
    FSRS,
    FSRS6_DEFAULT_PARAMETERS,
    AccessFrequency,
    AccessWeighted,
    AdaptiveDecay,
    Blend,
    EbbinghausLTP,
    Exponential,
    PowerLaw,
    Product,
    Recency,
    SoftFloor,
    StabilityExponential,
    from_dict,
)

from ._support import fake_clock

UTC = timezone.utc
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NEAR_MAX = datetime.max.replace(tzinfo=UTC) - timedelta(seconds=1)
HUGE = 10**400
W = FSRS6_DEFAULT_PARAMETERS


def fixed(t: datetime) -> ManualClock:
    return fake_clock(t)


# -- forecasts beyond datetime.max ---------------------------------------------------


@pytest.mark.parametrize(
    "decay",
    ["fsrs", PowerLaw(exponent=0.1), Exponential(half_life=1e11), Exponential(half_life=timedelta(days=3_650_000))],
    ids=["fsrs", "power_law_0.1", "half_life_1e11", "half_life_10000_years"],
)
def test_a_crossing_past_datetime_max_is_none(decay: Any) -> None:
    mem: Memory[Any, Any] = Memory(decay_fn=decay, clock_fn=fixed(T0)).put("v", key="k")
    assert mem.next_eviction() is None
    assert mem.time_until("k", 0.05) is None
    assert mem.time_until("k", 0.999999) is not None  # near crossings are still forecast


def test_forecasts_at_a_clock_near_year_9999() -> None:
    for name in BUILTINS:
        mem: Memory[Any, Any] = Memory(decay_fn=name, clock_fn=fixed(NEAR_MAX)).put("v", key="k")
        assert mem.next_eviction() is None, name
        assert mem.time_until("k", 0.5) is None, name
        left = mem.time_until("k", 1.0)  # past 2**53 µs floats step by 32 µs
        assert left is None or left < timedelta(milliseconds=1), name
        assert 0.0 <= mem.score("k") <= 1.0


def test_a_clock_near_year_9999_can_put_score_and_use_a_short_ttl() -> None:
    clock = fixed(NEAR_MAX)
    mem: Memory[Any, Any] = Memory(clock_fn=clock).put("v", key="k").put("w", key="t", ttl=0.5)
    assert mem.score("k") == 1.0
    assert mem.peek("t").expires_at is not None
    expires = mem.peek("t").expires_at
    when = mem.next_eviction()
    # Past 2**53 µs a clock reading is a float (32 µs apart here): the memory sees the entry
    # expired from the first microsecond that reads as its deadline, up to 16 µs before it.
    assert when is not None
    assert expires - timedelta(microseconds=16) <= when <= expires
    clock.set(when)
    assert [e.key for e in mem.evict()[1]] == ["t"]
    clock.set(when - timedelta(microseconds=1))
    assert mem.evict()[1] == ()
    clock.set(NEAR_MAX)
    with pytest.raises(ValueError, match="ttl"):
        mem.put("x", ttl=10)  # its deadline would be past datetime.max
    mem, _ = mem.get("k")
    assert sorted(e.key for e in mem.top(2)) == ["k", "t"]


def test_huge_importance_forecasts_a_representable_moment() -> None:
    clock = fixed(T0)
    mem: Memory[Any, Any] = Memory(clock_fn=clock).put("v", key="k", importance=1e307)
    at = mem.next_eviction()
    assert at is not None  # about 1025 half-lives
    assert mem.time_until("k", 0.05) == at - T0
    clock.now = at
    _, gone = mem.evict()
    assert [e.key for e in gone] == ["k"]
    power: Memory[Any, Any] = Memory(decay_fn="power_law", clock_fn=clock).put("v", key="k", importance=1e8)
    assert power.next_eviction() is None  # about 230,000 years away


# -- out-of-range numbers ------------------------------------------------------------


def _short(exc: BaseException) -> None:
    assert len(str(exc)) < 300, str(exc)


@pytest.mark.parametrize("ttl", [timedelta.max, 1e20, 1e300, HUGE], ids=["timedelta.max", "1e20", "1e300", "10**400"])
def test_a_ttl_past_datetime_max_is_a_value_error(ttl: Any) -> None:
    mem: Memory[Any, Any] = Memory(clock_fn=fixed(T0))
    for call in (lambda: mem.put("v", ttl=ttl), lambda: mem.put_many([("a", 1)], ttl=ttl)):
        with pytest.raises(ValueError, match="ttl") as info:
            call()
        _short(info.value)
    assert len(mem) == 0


def test_fsrs_parameters_beyond_float_range() -> None:
    for i in (0, 5, 20):
        params: list[Any] = list(W)
        params[i] = HUGE
        with pytest.raises(ValueError, match=rf"parameters\[{i}\]") as info:
            FSRS(parameters=params)
        _short(info.value)
        with pytest.raises(ValueError, match=rf"parameters\[{i}\]"):
            from_dict({"name": "fsrs", "parameters": params})


MODEL_PARAMETERS: list[tuple[Any, str]] = [
    (Exponential, "half_life"),
    (AccessWeighted, "half_life"),
    (AccessWeighted, "boost"),
    (ACTR, "half_life"),
    (ACTR, "decay"),
    (ACTR, "noise"),
    (ACTR, "threshold"),
    (ACTR, "history"),
    (PowerLaw, "half_life"),
    (PowerLaw, "exponent"),
    (SoftFloor, "half_life"),
    (SoftFloor, "floor_max"),
    (SoftFloor, "midpoint"),
    (SoftFloor, "steepness"),
    (EbbinghausLTP, "base_tau"),
    (EbbinghausLTP, "ltp_multiplier"),
    (EbbinghausLTP, "alpha"),
    (EbbinghausLTP, "beta"),
    (StabilityExponential, "half_life"),
    (StabilityExponential, "growth"),
    (AdaptiveDecay, "base_rate"),
    (AdaptiveDecay, "min_retention"),
    (AdaptiveDecay, "access_stability_k"),
    (AdaptiveDecay, "relation_resistance_k"),
    (AdaptiveDecay, "channel_diversity_k"),
    (AdaptiveDecay, "recency_boost"),
    (AdaptiveDecay, "recency_age_threshold"),
    (AdaptiveDecay, "recency_access_threshold"),
    (AdaptiveDecay, "default_multiplier"),
    (Recency, "half_life"),
    (AccessFrequency, "saturation"),
]


@pytest.mark.parametrize(("cls", "name"), MODEL_PARAMETERS, ids=[f"{c.__name__}.{n}" for c, n in MODEL_PARAMETERS])
@pytest.mark.parametrize("value", [HUGE, -HUGE, math.inf, math.nan], ids=["10**400", "-10**400", "inf", "nan"])
def test_every_model_parameter_refuses_out_of_range_numbers(cls: Any, name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=name) as info:
        cls(**{name: value})
    _short(info.value)


def test_type_multipliers_and_blend_weights_refuse_huge_ints() -> None:
    with pytest.raises(ValueError, match="type_multipliers") as info:
        AdaptiveDecay(type_multipliers={"fact": HUGE})
    _short(info.value)
    with pytest.raises(ValueError, match="weight") as info:
        Blend({Exponential(): HUGE})
    _short(info.value)


def test_a_custom_decay_function_returning_a_huge_int() -> None:
    for decay in (lambda e, now: HUGE, Product(Exponential(), lambda e, now: HUGE)):
        mem: Memory[Any, Any] = Memory(decay_fn=decay, clock_fn=fixed(T0)).put("v", key="the key")
        with pytest.raises(ValueError, match="decay_fn") as info:
            mem.scored()
        assert "the key" in str(info.value)
        _short(info.value)


async def _async_score(entry: Entry[Any, Any], now: datetime) -> float:
    return 0.5


class _AsyncScore:
    async def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        return 0.5


def test_an_async_decay_function_is_refused_at_construction() -> None:
    for decay in (_async_score, _AsyncScore()):
        with pytest.raises(TypeError, match="decay_fn"):
            Memory(decay_fn=decay)
        with pytest.raises(TypeError, match="async"):
            Product(decay)


def test_a_decay_function_returning_an_awaitable_is_refused_and_the_coroutine_closed() -> None:
    made: list[Any] = []

    def sneaky(entry: Entry[Any, Any], now: datetime) -> Any:
        coro = _async_score(entry, now)
        made.append(coro)
        return coro

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a "never awaited" RuntimeWarning fails the test
        for decay in (sneaky, Product(Exponential(), sneaky)):
            mem: Memory[Any, Any] = Memory(decay_fn=decay, clock_fn=fixed(T0)).put("v", key="k")
            with pytest.raises((TypeError, ValueError), match="decay_fn") as info:
                mem.scored()
            assert "awaitable" in str(info.value)
            _short(info.value)
        assert made
        assert all(c.cr_frame is None for c in made)
        made.clear()
        gc.collect()


# -- arguments that cannot mean anything ----------------------------------------------


def test_an_expires_at_not_after_now_is_refused() -> None:
    mem: Memory[Any, Any] = Memory(clock_fn=fixed(T0))
    for moment in (T0, T0 - timedelta(hours=1)):
        with pytest.raises(ValueError, match="expires_at"):
            mem.put("v", expires_at=moment)
        with pytest.raises(ValueError, match="expires_at"):
            mem.put_many([("a", 1)], expires_at=moment)
    assert mem.put("v", key="k", expires_at=T0 + timedelta(microseconds=1)).peek("k").expires_at is not None


def test_a_ttl_shorter_than_a_microsecond_is_refused() -> None:
    mem: Memory[Any, Any] = Memory(clock_fn=fixed(T0))
    with pytest.raises(ValueError, match="ttl"):
        mem.put("v", ttl=1e-7)
    assert mem.put("v", key="k", ttl=1e-6).peek("k").expires_at == T0 + timedelta(microseconds=1)


@pytest.mark.parametrize("threshold", [2, -1, 1.0000001, -0.0001, math.inf, -math.inf])
def test_thresholds_outside_0_to_1_are_refused(threshold: float) -> None:
    mem: Memory[Any, Any] = Memory(clock_fn=fixed(T0)).put("v", key="k")
    with pytest.raises(ValueError, match="threshold"):
        mem.above(threshold)
    with pytest.raises(ValueError, match="threshold"):
        mem.time_until("k", threshold)
    assert mem.above(0) == mem.above(1) == [mem.peek("k")]


# -- extreme but legal parameters ------------------------------------------------------


def test_power_law_exponents_that_break_the_math_are_refused() -> None:
    for exponent in (5e-324, 1e-300, 1e-4):
        with pytest.raises(ValueError, match="exponent"):
            PowerLaw(exponent=exponent)
    with pytest.raises(ValueError, match="half_life"):
        PowerLaw(half_life=5e-324, exponent=1e-3)
    clock = fixed(T0)
    smallest = PowerLaw(exponent=1e-3)
    mem: Memory[Any, Any] = Memory(decay_fn=smallest, clock_fn=clock).put("v", key="k")
    clock.now += timedelta(days=1)
    assert 0.0 < mem.score("k") < 1.0


def test_fsrs_parameters_are_bounded_like_the_optimizers() -> None:
    """py-fsrs clamps every FSRS-6 weight to a published range; out of it the math overflows."""
    for i, value in ((5, 1000.0), (20, 1e-5), (20, 1e300), (8, 800.0), (9, 50.0), (17, 500.0), (2, 1e6)):
        params = list(W)
        params[i] = value
        with pytest.raises(ValueError, match=rf"parameters\[{i}\]"):
            FSRS(parameters=params)
        with pytest.raises(ValueError, match=rf"parameters\[{i}\]"):
            from_dict({"name": "fsrs", "parameters": params})


def test_stability_exponential_with_tiny_half_life_and_importance() -> None:
    clock = fixed(T0)
    mem: Memory[Any, Any] = Memory(decay_fn=StabilityExponential(half_life=1e-10), clock_fn=clock)
    mem = mem.put("v", key="k", importance=5e-324)
    clock.now += timedelta(seconds=1)
    assert mem.score("k") == 0.0
    assert mem.next_eviction() == clock.now


def test_fsrs_stability_stays_finite_after_many_long_gaps() -> None:
    params = list(W)
    params[17], params[18], params[19] = 2.0, 2.0, 0.0  # each same-day review multiplies S by e**4
    clock = fixed(T0)
    mem: Memory[Any, Any] = Memory(decay_fn=FSRS(parameters=params), clock_fn=clock).put("v", key="k")
    for _ in range(200):
        clock.now += timedelta(minutes=1)
        mem = mem.touch("k")
        s, d = mem.peek("k").decay_state
        assert math.isfinite(s)
        assert 1.0 <= d <= 10.0
    back = Memory.from_dict(mem.to_dict(), clock_fn=clock)
    assert back.peek("k").decay_state == mem.peek("k").decay_state


MODELS = st.sampled_from(
    [
        lambda h: Exponential(h),
        lambda h: AccessWeighted(h, boost=1e6),
        lambda h: ACTR(h, decay=1e-9, noise=1e-300),
        lambda h: ACTR(h, decay=0.999999, noise=1e300, history=1),
        lambda h: PowerLaw(h, exponent=1e-3),
        lambda h: PowerLaw(h, exponent=1e3),
        lambda h: SoftFloor(h, floor_max=1.0, midpoint=1e-300, steepness=1e300),
        lambda h: EbbinghausLTP(h, ltp_multiplier=1e6, alpha=1e6, beta=1e6),
        lambda h: StabilityExponential(h, growth=1e6),
        lambda h: AdaptiveDecay(base_rate=1e6, recency_boost=1e6, channel_diversity_k=1e6),
        lambda h: FSRS(),
        lambda h: Recency(h),
        lambda h: Blend({Exponential(h): 1.0, PowerLaw(h): 1e12}),
        lambda h: Product(PowerLaw(h, exponent=1e-3), Exponential(h)),
    ]
)
HALF_LIVES = st.sampled_from([1e-9, 1e-6, 1.0, 3600.0, 1e9, 3.15e11, 1e15, 1e300])
IMPORTANCES = st.sampled_from([0.0, 5e-324, 1e-300, 0.5, 1.0, 1e8, 1e300, 1e307, 1.7e308])
MOMENTS = st.sampled_from(
    [
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        T0,
        datetime(2255, 6, 1, tzinfo=UTC),
        datetime(9000, 1, 1, tzinfo=UTC),
        NEAR_MAX,
    ]
)
STEPS = st.sampled_from([0.0, 1e-6, 1.0, 86_400.0 * 365, 86_400.0 * 365 * 5000, 1e15])


@settings(max_examples=300, deadline=None)
@given(
    MODELS,
    HALF_LIVES,
    MOMENTS,
    st.lists(st.tuples(st.sampled_from(["put", "get", "evict", "ttl"]), IMPORTANCES, STEPS), max_size=8),
    st.sampled_from([0.0, 1e-300, 0.05, 1.0]),
)
def test_extreme_but_legal_numbers_never_raise(
    model: Any, half_life: float, start: datetime, script: list[tuple[str, float, float]], threshold: float
) -> None:
    try:
        fn = model(half_life)
    except (ValueError, TypeError):
        return  # refused at construction: allowed
    clock = fake_clock(start)
    mem: Memory[Any, Any] = Memory(
        decay_fn=fn, clock_fn=clock, max_entries=3, eviction_threshold=threshold, summarize_threshold=threshold
    )
    for i, (op, importance, step) in enumerate(script):
        try:
            clock.now += timedelta(seconds=step)
        except OverflowError:
            clock.now = NEAR_MAX
        if op == "put":
            mem = mem.put(i, key=i % 4, importance=importance)
        elif op == "ttl":
            if clock.now > NEAR_MAX - timedelta(seconds=60):
                with pytest.raises(ValueError, match="ttl"):  # past datetime.max
                    mem.put(i, key=i % 4, importance=importance, ttl=60.0)
            else:
                mem = mem.put(i, key=i % 4, importance=importance, ttl=60.0)
        elif op == "get" and i % 4 in mem:
            mem, _ = mem.get(i % 4)
        elif op == "evict":
            mem, _ = mem.evict()
        for entry, score in mem.scored():
            assert 0.0 <= score <= 1.0
            for t in (0.0, 5e-324, 0.05, 0.5, 1.0):
                left = mem.time_until(entry.key, t)
                assert left is None or isinstance(left, timedelta)
        at = mem.next_eviction()
        assert at is None or (isinstance(at, datetime) and at.utcoffset() == timedelta(0))
        mem.top(2)
        mem.above(0.5)
        mem.stats()


# -- time zones with daylight saving time ----------------------------------------------


def _berlin() -> tzinfo:
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo("Europe/Berlin")
    except Exception:  # no tz database on this machine
        return _Berlin2026()


class _Berlin2026(tzinfo):
    """Europe/Berlin in 2026 only: CET, and CEST from 29 March to 25 October (fold-aware)."""

    _START = datetime(2026, 3, 29, 2)  # wall clock jumps 02:00 -> 03:00
    _END = datetime(2026, 10, 25, 2)  # wall clock repeats 02:00..03:00

    def utcoffset(self, dt: datetime | None) -> timedelta:
        assert dt is not None
        naive = dt.replace(tzinfo=None, fold=0)
        summer = self._START <= naive < self._END + timedelta(hours=1)
        if self._END <= naive < self._END + timedelta(hours=1):
            summer = dt.fold == 0
        return timedelta(hours=2 if summer else 1)

    def dst(self, dt: datetime | None) -> timedelta:
        return self.utcoffset(dt) - timedelta(hours=1)

    def tzname(self, dt: datetime | None) -> str:
        return "CEST" if self.dst(dt) else "CET"

    def fromutc(self, dt: datetime) -> datetime:
        naive = dt.replace(tzinfo=None)
        start_utc, end_utc = datetime(2026, 3, 29, 1), datetime(2026, 10, 25, 1)
        if start_utc <= naive < end_utc:
            return (naive + timedelta(hours=2)).replace(tzinfo=self)
        local = (naive + timedelta(hours=1)).replace(tzinfo=self)
        if end_utc <= naive < end_utc + timedelta(hours=1):
            local = local.replace(fold=1)
        return local


def test_next_eviction_across_the_spring_change_is_absolute() -> None:
    berlin = _berlin()
    clock = fake_clock(datetime(2026, 3, 29, 1, 30, tzinfo=berlin))  # 00:30 UTC, before the jump
    mem: Memory[Any, Any] = Memory(half_life=3600, clock_fn=clock).put("v", key="k")
    at = mem.next_eviction()
    assert at is not None
    assert at.utcoffset() == timedelta(0)
    expected = datetime(2026, 3, 29, 0, 30, tzinfo=UTC) + timedelta(hours=math.log2(1 / 0.05))
    assert abs(at - expected) < timedelta(milliseconds=1)
    clock.now = at.astimezone(berlin)
    _, gone = mem.evict()
    assert [e.key for e in gone] == ["k"]
    assert mem.peek("k").inserted_at.utcoffset() == timedelta(0)  # stored as UTC


def test_stats_in_the_repeated_autumn_hour() -> None:
    berlin = _berlin()
    first = datetime(2026, 10, 25, 2, 30, tzinfo=berlin)  # CEST: 00:30 UTC
    second = datetime(2026, 10, 25, 2, 10, fold=1, tzinfo=berlin)  # CET: 01:10 UTC, 40 minutes later
    assert second.astimezone(UTC) - first.astimezone(UTC) == timedelta(minutes=40)
    clock = fake_clock(first)
    mem: Memory[Any, Any] = Memory(clock_fn=clock).put("a", key="a")
    clock.now = second
    mem = mem.put("b", key="b")
    stats = mem.stats()
    # (fold=1 datetimes never compare equal across zones: compare UTC readings)
    assert stats.oldest_entry == first.astimezone(UTC)
    assert stats.newest_entry == second.astimezone(UTC)
    assert stats.oldest_entry is not None
    assert stats.oldest_entry.utcoffset() == timedelta(0)
    assert stats.oldest_entry.hour == 0
    assert stats.newest_entry is not None
    assert stats.newest_entry.hour == 1
    assert [e.key for e in mem] == ["b", "a"]


def test_expires_at_in_another_zone_is_stored_as_utc() -> None:
    berlin = _berlin()
    deadline = datetime(2026, 3, 29, 3, 30, tzinfo=berlin)  # 01:30 UTC
    mem: Memory[Any, Any] = Memory(clock_fn=fixed(T0)).put("v", key="k", expires_at=deadline)
    stored = mem.peek("k").expires_at
    assert stored == deadline
    assert stored is not None
    assert stored.utcoffset() == timedelta(0)


def test_entries_built_in_another_zone_hold_utc() -> None:
    berlin = _berlin()
    t = datetime(2026, 10, 25, 2, 10, fold=1, tzinfo=berlin)
    e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t, expires_at=t + timedelta(hours=1))
    assert e.inserted_at == t.astimezone(UTC)
    assert e.inserted_at.tzinfo is UTC
    assert e.last_accessed_at.tzinfo is UTC
    assert e.expires_at is not None
    assert e.expires_at.tzinfo is UTC
