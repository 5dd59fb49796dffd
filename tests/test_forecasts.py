"""Forecasts are exact to the microsecond: ``time_until`` and ``next_eviction``.

The answer is the first microsecond at which the score is strictly below the
threshold; these tests move the fake clock to that moment (and one
microsecond before it) and check the scores and ``evict`` agree.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory
from lethe.decay import PowerLaw, SoftFloor

from ._support import HOUR, START

US = timedelta(microseconds=1)


class Step:
    """A custom decay function: ``high`` until ``at`` after the last access, then ``low``.

    It checks it is always given an aware datetime, and counts its calls.
    """

    def __init__(self, at: timedelta, high: float = 0.5, low: float = 0.2) -> None:
        self.at = at
        self.high = high
        self.low = low

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        assert isinstance(now, datetime)
        assert now.utcoffset() is not None
        return self.high if now - entry.last_accessed_at <= self.at else self.low


def below_from(mem: Memory[Any, Any], clock: ManualClock, key: Any, threshold: float, wait: timedelta) -> None:
    """``wait`` from now is the first microsecond the score is below ``threshold``."""
    start = clock.now
    clock.now = start + wait - US
    assert mem.score(key) >= threshold
    clock.now = start + wait
    assert key not in mem or mem.score(key) < threshold  # past its deadline an entry is gone
    clock.now = start


class TestClosedForm:
    def test_exponential_quarter_after_two_half_lives(self, make: Any, clock: ManualClock) -> None:
        mem = make(half_life=3600).put("v", key="k")
        assert mem.time_until("k", 0.25) == timedelta(hours=2, microseconds=1)
        below_from(mem, clock, "k", 0.25, timedelta(hours=2, microseconds=1))

    def test_a_crossing_within_the_first_second(self, make: Any, clock: ManualClock) -> None:
        mem = make(half_life=3600).put("v", key="k")
        wait = mem.time_until("k", 0.9999)
        assert wait is not None
        assert timedelta(seconds=0.5) < wait < timedelta(seconds=0.6)
        below_from(mem, clock, "k", 0.9999, wait)

    def test_measured_from_the_last_access_not_from_now(self, make: Any, clock: ManualClock) -> None:
        mem = make(half_life=3600).put("v", key="k")
        clock.advance(timedelta(minutes=30))
        assert mem.time_until("k", 0.25) == timedelta(hours=1, minutes=30, microseconds=1)

    def test_importance_scales_the_threshold(self, make: Any, clock: ManualClock) -> None:
        mem = make(half_life=3600).put("v", key="k", importance=0.5)
        assert mem.time_until("k", 0.25) == timedelta(hours=1, microseconds=1)
        # Exactly at its score: below it one microsecond later.
        assert mem.time_until("k", 0.5) == US
        below_from(mem, clock, "k", 0.5, US)

    def test_already_below_is_zero(self, make: Any, clock: ManualClock) -> None:
        mem = make(half_life=3600).put("v", key="k", importance=0.5)
        assert mem.time_until("k", 0.75) == timedelta(0)
        clock.advance(timedelta(hours=3))
        assert mem.time_until("k", 0.25) == timedelta(0)

    def test_a_crossing_just_before_a_whole_microsecond(self, make: Any, clock: ManualClock) -> None:
        """Regression: the crossing (2653076138.998 µs after START) was rounded on the float instant,
        a quarter microsecond coarse there, to ...139.0, and answered one microsecond late."""
        mem = make(half_life=3600).put("v", key="k", importance=0.5)
        assert mem.time_until("k", 0.3) == timedelta(microseconds=2_653_076_139)
        below_from(mem, clock, "k", 0.3, timedelta(microseconds=2_653_076_139))
        evicting = make(half_life=3600, eviction_threshold=0.3, summarize_threshold=0.3)
        evicting = evicting.put("v", key="k", importance=0.5)
        assert evicting.next_eviction() == START + timedelta(microseconds=2_653_076_139)

    def test_the_closed_form_is_settled_on_the_score(self, make: Any, clock: ManualClock) -> None:
        """Regression: PowerLaw's closed form puts the 0.9 crossing at exactly 400 s, where the score
        is already 0.8999999999999999: the answer was one microsecond late."""
        mem = make(decay_fn=PowerLaw(half_life=3600)).put("v", key="k")
        assert mem.time_until("k", 0.9) == timedelta(seconds=400)
        below_from(mem, clock, "k", 0.9, timedelta(seconds=400))

    def test_importance_zero_is_below_every_positive_threshold(self, make: Any) -> None:
        mem = make().put("v", key="k", importance=0)
        assert mem.time_until("k", 1e-9) == timedelta(0)
        assert mem.time_until("k", 0) is None

    def test_threshold_zero_is_never_reached(self, make: Any) -> None:
        mem = make().put("v", key="k").put("t", key="t", ttl=60)
        assert mem.time_until("k", 0) is None
        assert mem.time_until("k", 0.0) is None
        # Not even with a deadline: an expired entry scores 0.0, which is not below 0.
        assert mem.time_until("t", 0) is None

    def test_pinned_never(self, make: Any) -> None:
        mem = make().put("v", key="k", importance=0).pin("k")
        assert mem.time_until("k", 0.5) is None
        assert mem.time_until("k", 1.0) is None


class TestDeadlines:
    def test_a_deadline_before_the_decay_crossing_wins(self, make: Any, clock: ManualClock) -> None:
        mem = make(half_life=3600).put("v", key="k", ttl=600)
        assert mem.time_until("k", 0.01) == timedelta(minutes=10)
        below_from(mem, clock, "k", 0.01, timedelta(minutes=10))

    def test_a_decay_crossing_before_the_deadline_wins(self, make: Any) -> None:
        mem = make(half_life=3600).put("v", key="k", ttl=timedelta(days=1))
        assert mem.time_until("k", 0.5) == timedelta(hours=1, microseconds=1)

    def test_a_deadline_under_a_function_that_never_decays(self, make: Any, clock: ManualClock) -> None:
        mem = make(decay_fn=lambda e, now: 1.0).put("v", key="k", ttl=90)
        assert mem.time_until("k", 0.5) == timedelta(seconds=90)
        assert mem.time_until("k", 0) is None
        below_from(mem, clock, "k", 0.5, timedelta(seconds=90))

    def test_a_deadline_when_the_score_levels_off_above_the_threshold(self, make: Any) -> None:
        # An important entry under SoftFloor never decays below its floor: only its deadline counts.
        mem = make(decay_fn=SoftFloor(half_life=60, floor_max=0.9), eviction_threshold=0.01, summarize_threshold=0.01)
        mem = mem.put("v", key="k", importance=5, ttl=600).put("w", key="w", importance=5)
        assert mem.time_until("w", 0.01) is None
        assert mem.time_until("k", 0.01) == timedelta(minutes=10)
        assert mem.next_eviction() == START + timedelta(minutes=10)

    def test_a_pinned_entry_suspends_its_deadline(self, make: Any) -> None:
        mem = make().put("v", key="k", ttl=60).pin("k")
        assert mem.time_until("k", 0.5) is None
        assert mem.unpin("k").time_until("k", 0.9) == timedelta(seconds=60)


class TestBisection:
    @pytest.mark.parametrize(
        "at",
        [
            timedelta(microseconds=3),
            timedelta(seconds=12, microseconds=345_678),
            timedelta(hours=9, microseconds=1),
            timedelta(days=4, seconds=7, microseconds=999_999),
            timedelta(days=40, microseconds=5),
            timedelta(days=365 * 200, microseconds=77),
        ],
    )
    def test_found_to_the_microsecond(self, make: Any, clock: ManualClock, at: timedelta) -> None:
        mem = make(decay_fn=Step(at)).put("v", key="k")
        # At exactly the plateau's value the score is not below: below from the step on.
        assert mem.time_until("k", 0.5) == at + US
        assert mem.time_until("k", 0.3) == at + US
        below_from(mem, clock, "k", 0.5, at + US)

    def test_measured_from_now_after_some_time(self, make: Any, clock: ManualClock) -> None:
        mem = make(decay_fn=Step(timedelta(seconds=100))).put("v", key="k")
        clock.advance(timedelta(seconds=30, microseconds=5))
        assert mem.time_until("k", 0.5) == timedelta(seconds=69, microseconds=999_996)

    def test_never_below_and_already_below(self, make: Any) -> None:
        mem = make(decay_fn=Step(timedelta(seconds=5))).put("v", key="k")
        assert mem.time_until("k", 0.2) is None  # the low plateau is not below 0.2
        assert mem.time_until("k", 0.6) == timedelta(0)

    def test_beyond_the_thousand_year_horizon_is_never(self, make: Any) -> None:
        far = make(decay_fn=Step(timedelta(days=365 * 1000 + 1))).put("v", key="k")
        assert far.time_until("k", 0.5) is None
        assert far.next_eviction() is None

    def test_importance_multiplies_a_custom_score(self, make: Any) -> None:
        mem = make(decay_fn=Step(timedelta(seconds=5), high=1.0, low=0.5)).put("v", key="k", importance=0.5)
        assert mem.time_until("k", 0.5) == timedelta(seconds=5, microseconds=1)
        assert mem.time_until("k", 0.25) is None


class TestNextEviction:
    def test_evict_at_the_forecast_removes_and_not_a_microsecond_before(self, make: Any, clock: ManualClock) -> None:
        mem = make(half_life=3600, eviction_threshold=0.25, summarize_threshold=0.25)
        mem = mem.put("a", key="a").put("b", key="b", importance=0.5)
        when = mem.next_eviction()
        assert when == START + timedelta(hours=1, microseconds=1)
        clock.now = when - US
        assert mem.evict()[1] == ()
        clock.now = when
        assert [e.key for e in mem.evict()[1]] == ["b"]

    def test_custom_function_and_deadlines(self, make: Any, clock: ManualClock) -> None:
        mem = make(decay_fn=Step(timedelta(seconds=50), high=1.0, low=0.0))
        mem = mem.put("a", key="a").put("b", key="b", ttl=timedelta(seconds=20))
        assert mem.next_eviction() == START + timedelta(seconds=20)
        clock.now = START + timedelta(seconds=20)
        mem, gone = mem.evict()
        assert [e.key for e in gone] == ["b"]
        assert mem.next_eviction() == START + timedelta(seconds=50, microseconds=1)

    def test_a_deadline_counts_even_at_threshold_zero(self, make: Any, clock: ManualClock) -> None:
        mem = make(eviction_threshold=0, summarize_threshold=0).put("a", key="a").put("t", key="t", ttl=45)
        when = mem.next_eviction()
        assert when == START + timedelta(seconds=45)
        clock.now = when - US
        assert mem.evict()[1] == ()
        clock.now = when
        assert [e.key for e in mem.evict()[1]] == ["t"]

    def test_pinned_and_empty(self, make: Any) -> None:
        assert make().next_eviction() is None
        assert make().put("v", key="k").pin("k").next_eviction() is None

    def test_already_evictable_is_now(self, make: Any, clock: ManualClock) -> None:
        mem = make().put("v", key="k", importance=0.01).put("w", key="w")
        clock.advance(HOUR)
        assert mem.next_eviction() == clock.now


class TestArguments:
    def test_threshold_must_be_a_number(self, make: Any) -> None:
        mem = make().put("v", key="k")
        with pytest.raises(TypeError, match=r"^threshold must be a number, got str$"):
            mem.time_until("k", "0.5")
        with pytest.raises(ValueError, match=r"^threshold must not be NaN$"):
            mem.time_until("k", float("nan"))

    def test_missing_key(self, make: Any) -> None:
        with pytest.raises(KeyError):
            make().time_until("nope", 0.5)


def test_a_bisected_crossing_past_year_2255_returns() -> None:
    """Regression: beyond 2**53 µs floats are 2+ µs apart and the bisection used to loop forever."""
    import threading

    crossing = START + timedelta(days=365 * 300)

    def cliff(entry: Entry[Any, Any], now: datetime) -> float:
        return 1.0 if now < crossing else 0.0

    mem: Memory[Any, Any] = Memory(decay_fn=cliff, clock_fn=lambda: START).put("v", key="k")
    answers: list[Any] = []
    def ask() -> None:
        answers.append((mem.time_until("k", 0.5), mem.next_eviction()))

    worker = threading.Thread(target=ask, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "time_until did not return"
    until, moment = answers[0]
    assert abs(until - (crossing - START)) <= timedelta(microseconds=8)  # the float grid there is 4 µs
    assert moment is not None
    assert abs(moment - crossing) <= timedelta(microseconds=8)
