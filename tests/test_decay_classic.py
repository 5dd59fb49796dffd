"""The classic decay functions: exponential, access-weighted and ACT-R (Anderson & Lebiere 1998)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lethe import Entry, ManualClock, Memory
from lethe.decay import ACTR, AccessWeighted, Exponential, by_name, from_dict

from ._support import START, entry

# Every built-in's shared contract (range, fresh score, half-life, monotony, round trips) is in
# tests/contract/test_decay.py.


class TestExponential:
    def test_formula(self) -> None:
        fn = Exponential(half_life=timedelta(minutes=10))
        for minutes in (1, 7, 25, 600):
            expected = 0.5 ** (minutes / 10)
            assert fn.score(entry(), START + timedelta(minutes=minutes)) == pytest.approx(expected, rel=1e-12)

    def test_ignores_access_count(self) -> None:
        fn = Exponential()
        later = START + timedelta(hours=2)
        assert fn.score(entry(access_count=0), later) == fn.score(entry(access_count=50), later)

    def test_decay_rate_and_forecast(self) -> None:
        fn = Exponential(half_life=100)
        assert fn.decay_rate == pytest.approx(math.log(2) / 100)
        assert fn.time_until(entry(), 0.25) == pytest.approx(200)
        assert fn.time_until(entry(), 0.0) is None


class TestAccessWeighted:
    def test_formula(self) -> None:
        fn = AccessWeighted(half_life=3600, boost=0.5)
        h = 3600 * (1 + 0.5 * math.log1p(4))
        assert fn.effective_half_life(4) == pytest.approx(h)
        assert fn.score(entry(access_count=4), START + timedelta(seconds=h)) == pytest.approx(0.5)

    def test_non_decreasing_in_access_count(self) -> None:
        fn = AccessWeighted()
        later = START + timedelta(hours=5)
        scores = [fn.score(entry(access_count=n), later) for n in range(0, 200, 7)]
        assert scores == sorted(scores)
        assert scores[-1] > scores[0]

    def test_many_accesses_decay_slowly(self) -> None:
        fn = AccessWeighted(half_life=3600)
        assert fn.score(entry(access_count=1000), START + timedelta(hours=1)) > 0.85

    def test_bad_boost(self) -> None:
        with pytest.raises(ValueError, match="boost"):
            AccessWeighted(boost=-1)


def exact_actr(times_s: list[float], now_s: float, d: float, tau: float, s: float) -> float:
    """The ACT-R equations, written out directly."""
    b = math.log(sum((now_s - t) ** -d for t in times_s))
    return 1.0 / (1.0 + math.exp(-(b - tau) / s))


class TestACTR:
    def test_exact_equation_with_few_accesses(self, clock: ManualClock) -> None:
        fn = ACTR(half_life=600, history=10)
        mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock).put("v", key="k")
        times = [0.0]
        for step in (30, 200, 45, 900):
            clock.advance(step)
            times.append(times[-1] + step)
            mem, _ = mem.get("k")
        clock.advance(1234)
        now = times[-1] + 1234
        expected = exact_actr(times, now, 0.5, -0.5 * math.log(600), 0.25)
        assert mem.score("k") == pytest.approx(expected, rel=1e-9)

    def test_state_stays_bounded_and_petrov_approximates(self, clock: ManualClock) -> None:
        fn = ACTR(half_life=600, history=5)
        mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock).put("v", key="k")
        times = [0.0]
        for _ in range(40):
            clock.advance(60)
            times.append(times[-1] + 60)
            mem, _ = mem.get("k")
        assert len(mem.peek("k").decay_state) == 5
        clock.advance(3000)
        exact = exact_actr(times, times[-1] + 3000, 0.5, -0.5 * math.log(600), 0.25)
        # Evenly spaced accesses are exactly Petrov's assumption: the approximation is close.
        assert mem.score("k") == pytest.approx(exact, rel=2e-2)

    def test_rehearsal_raises_the_score(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(decay_fn="actr", clock_fn=clock).put("a", key="a").put("b", key="b")
        clock.advance(1800)
        mem, _ = mem.get("a")
        clock.advance(3600)
        assert mem.score("a") > mem.score("b")

    def test_parameters_are_validated(self) -> None:
        with pytest.raises(ValueError, match="decay"):
            ACTR(decay=1.0)
        with pytest.raises(ValueError, match="noise"):
            ACTR(noise=0)
        with pytest.raises(ValueError, match="history"):
            ACTR(history=0)

    def test_activation(self) -> None:
        fn = ACTR(half_life=100)
        assert fn.activation(entry(), START) == math.inf
        assert fn.activation(entry(), START + timedelta(seconds=100)) == pytest.approx(-0.5 * math.log(100))

    def test_load_state_rejects_garbage(self) -> None:
        fn = ACTR(history=3)
        assert fn.load_state(None) is None
        assert fn.load_state([2.0, 1.0]) == (1.0, 2.0)
        for bad in ("x", [], [1, 2, 3, 4], ["a"], [math.inf], [True]):
            with pytest.raises(ValueError, match="decay_state"):
                fn.load_state(bad)


class TestCustomDecay:
    def test_plain_callable(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(decay_fn=lambda e, now: 0.4, clock_fn=clock).put(1, key=1, importance=2)
        assert mem.score(1) == pytest.approx(0.8)

    def test_object_with_rehearse_hook(self, clock: ManualClock) -> None:
        class Counting:
            def score(self, entry: Entry[Any, Any], now: datetime) -> float:
                return 1.0 / (1 + (entry.decay_state or 0))

            def rehearse(self, entry: Entry[Any, Any], now: datetime) -> int:
                return (entry.decay_state or 0) + 1

        mem: Memory[Any, Any] = Memory(decay_fn=Counting(), clock_fn=clock).put(1, key=1)
        mem, e = mem.get(1)
        mem, e = mem.get(1)
        assert e.decay_state == 2
        assert mem.score(1) == pytest.approx(1 / 3)

    def test_includes_importance_flag(self, clock: ManualClock) -> None:
        class Own:
            includes_importance = True

            def score(self, entry: Entry[Any, Any], now: datetime) -> float:
                return 0.5

        mem: Memory[Any, Any] = Memory(decay_fn=Own(), clock_fn=clock).put(1, key=1, importance=0.1)
        assert mem.score(1) == 0.5

    @pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "0.5", None, True])
    def test_bad_results_raise_naming_the_key(self, clock: ManualClock, bad: Any) -> None:
        mem: Memory[Any, Any] = Memory(decay_fn=lambda e, now: bad, clock_fn=clock).put(1, key="the-key")
        with pytest.raises(ValueError, match="the-key"):
            mem.score("the-key")
        with pytest.raises(ValueError, match="the-key"):
            mem.scored()

    def test_results_are_clamped(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(decay_fn=lambda e, now: e.value, clock_fn=clock)
        mem = mem.put(-3.0, key="neg").put(7.0, key="big")
        assert mem.score_map() == {"big": 1.0, "neg": 0.0}

    def test_receives_aware_now(self, clock: ManualClock) -> None:
        seen: list[datetime] = []

        def fn(entry: Entry[Any, Any], now: datetime) -> float:
            seen.append(now)
            return 1.0

        Memory(decay_fn=fn, clock_fn=clock).put(1).scored()
        assert seen == [clock.now]
        assert seen[0].tzinfo is not None


def test_by_name_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="decay_fn"):
        by_name("nope", 10)


def test_from_dict_rejects_bad_data() -> None:
    for bad in ([], {"name": "os.system"}, {"name": "exponential", "half_life": -1}, {"name": "actr", "x": 1}):
        with pytest.raises(ValueError, match="decay_fn"):
            from_dict(bad)


def test_utc_and_other_zones_agree() -> None:
    fn = Exponential(half_life=60)
    tz = timezone(timedelta(hours=-7))
    assert fn.score(entry(), (START + timedelta(minutes=1)).astimezone(tz)) == pytest.approx(0.5)


@given(st.floats(1e-3, 1e9), st.floats(0.1, 0.9))
def test_actr_never_rehearsed_entry_scores_as_a_one_access_history(age: float, decay: float) -> None:
    """The shortcut for fresh entries gives what the history formula gives for one access."""
    from dataclasses import replace

    t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    fresh = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t)
    with_history = replace(fresh, decay_state=(fresh.inserted_us,))
    fn = ACTR(decay=decay)
    now = t + timedelta(seconds=age)
    assert math.isclose(fn.score(fresh, now), fn.score(with_history, now), rel_tol=1e-12, abs_tol=1e-300)
