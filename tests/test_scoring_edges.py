"""Scores at their edges: deadlines to the microsecond, clamping, custom and subclassed decay functions."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from lethe import Entry, ManualClock
from lethe.decay import ACTR, Blend, Exponential, Importance

from ._support import HOUR, START

US = timedelta(microseconds=1)


class TestDeadlineInstant:
    @pytest.mark.parametrize("decay_fn", ["exponential", lambda e, now: 1.0])
    def test_an_entry_scores_zero_from_its_deadline_on(self, make: Any, clock: ManualClock, decay_fn: Any) -> None:
        mem = make(decay_fn=decay_fn, half_life=timedelta(days=1)).put("v", key="k", ttl=60)
        clock.now = START + timedelta(seconds=60) - US
        assert mem.score("k") > 0.9
        assert mem.stats().mean_score == mem.score("k")
        clock.now = START + timedelta(seconds=60)
        assert "k" not in mem  # from its deadline on, gone for every read
        with pytest.raises(KeyError):
            mem.score("k")
        assert mem.stats().size == mem.stats().active == 0
        assert mem.stats().mean_score is None

    def test_summarize_sees_the_deadline_at_its_instant(self, make: Any, clock: ManualClock) -> None:
        mem = make(summarize_fn=lambda e: "gist", half_life=timedelta(days=1))
        mem = mem.put("v", key="k", expires_at=START + HOUR)
        clock.now = START + HOUR - US
        assert mem.summarize() is mem
        clock.now = START + HOUR
        summarized = mem.summarize()  # a write: the expired entry is summarized and removed
        assert [(e.key, e.summary) for e in summarized.evicted] == [("k", "gist")]
        assert "k" not in summarized


class TestCustomFunctions:
    def test_integer_results_become_float_scores(self, make: Any) -> None:
        mem = make(decay_fn=lambda e, now: 1).put("v", key="k").put("w", key="half", importance=0.5)
        assert mem.score("k") == 1.0
        assert type(mem.score("k")) is float
        assert mem.score("half") == 0.5
        zero = make(decay_fn=lambda e, now: 0).put("v", key="k")
        assert zero.score("k") == 0.0
        assert type(zero.score("k")) is float

    def test_out_of_range_results_are_clamped(self, make: Any) -> None:
        mem = make(decay_fn=lambda e, now: e.value).put(-3.0, key="neg").put(7.5, key="big")
        assert mem.score("neg") == 0.0
        assert mem.score("big") == 1.0
        assert mem.stats().mean_score == 0.5

    def test_every_score_gets_the_time_and_deadlines(self, make: Any, clock: ManualClock) -> None:
        seen: list[Any] = []

        def decay(entry: Entry[Any, Any], now: datetime) -> float:
            seen.append(now)
            return 0.1

        mem = make(decay_fn=decay, summarize_fn=lambda e: "s").put("a", key="a").put("b", key="b", ttl=60)
        clock.advance(30)
        stats = mem.stats()
        assert stats.mean_score == pytest.approx(0.1)
        assert [mem.summarize().peek(k).summary for k in "ab"] == ["s", "s"]
        assert seen
        assert all(t == START + timedelta(seconds=30) for t in seen)
        clock.advance(30)
        assert mem.stats().mean_score == pytest.approx(0.1)  # "b" expired: no longer counted
        assert mem.stats().size == 1

    def test_a_rehearse_hook_gets_the_time(self, make: Any, clock: ManualClock) -> None:
        class Counting:
            def score(self, entry: Entry[Any, Any], now: datetime) -> float:
                return 1.0

            def rehearse(self, entry: Entry[Any, Any], now: datetime) -> Any:
                return (entry.decay_state or ()) + (now,)

        mem = make(decay_fn=Counting()).put("v", key="k")
        clock.advance(HOUR)
        mem, entry = mem.get("k")
        assert entry.decay_state == (START + HOUR,)
        clock.advance(HOUR)
        assert mem.touch("k").peek("k").decay_state == (START + HOUR, START + 2 * HOUR)


class TestBuiltinsThatIncludeImportance:
    def test_importance_is_not_applied_twice(self, make: Any) -> None:
        mem = make(decay_fn=Importance()).put("a", key="a", importance=0.3).put("b", key="b", importance=0.5)
        assert mem.score("a") == 0.3
        assert mem.stats().mean_score == pytest.approx(0.4)
        assert mem.stats().median_score == pytest.approx(0.4)

    def test_a_blend_of_one_function_scores_like_it(self, make: Any, clock: ManualClock) -> None:
        mem = make(decay_fn=Blend({Exponential(half_life=3600): 1.0})).put("v", key="k", importance=0.5)
        clock.advance(HOUR)
        assert mem.score("k") == pytest.approx(0.25)
        assert mem.stats().mean_score == pytest.approx(0.25)

    def test_summarize_ranks_by_the_same_scores(self, make: Any) -> None:
        mem = make(
            decay_fn=Importance(),
            summarize_threshold=0.2,
            eviction_threshold=0.1,
            summarize_fn=lambda e: e.value.upper(),
        )
        mem = mem.put("a", key="a", importance=0.3).put("b", key="b", importance=0.15)
        done = mem.summarize()
        assert [done.peek(k).summary for k in "ab"] == [None, "B"]


class TestSubclassedBuiltins:
    """A user subclass of a built-in is not a built-in: its overrides are honoured."""

    def test_an_overridden_score(self, make: Any, clock: ManualClock) -> None:
        class Floor(Exponential):
            __slots__ = ()

            def score(self, entry: Entry[Any, Any], now: datetime) -> float:
                return max(0.3, super().score(entry, now))

        mem = make(decay_fn=Floor(half_life=3600)).put("v", key="k")
        clock.advance(timedelta(hours=5))
        assert mem.score("k") == 0.3
        assert mem.stats().mean_score == 0.3
        assert mem.time_until("k", 0.3) is None

    def test_an_overridden_rehearse(self, make: Any, clock: ManualClock) -> None:
        class Marked(ACTR):
            __slots__ = ()

            def rehearse(self, entry: Entry[Any, Any], now: datetime) -> tuple[float, ...]:
                return (*super().rehearse(entry, now), -1.0)

        mem = make(decay_fn=Marked()).put("v", key="k")
        clock.advance(HOUR)
        mem, entry = mem.get("k")
        assert entry.decay_state[-1] == -1.0
