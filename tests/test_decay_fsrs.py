"""FSRS-6 as a decay function: insertion and rehearsals are reviews rated Good."""

from __future__ import annotations

import json
import math
import pickle
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lethe import ManualClock, Memory
from lethe.decay import FSRS, FSRS6_DEFAULT_PARAMETERS, DecayFunction, by_name, from_dict

from ._support import START, entry

DAY = timedelta(days=1)

# The published FSRS-6 defaults, written out again (open-spaced-repetition/py-fsrs DEFAULT_PARAMETERS).
W = [
    0.212, 1.2931, 2.3065, 8.2956, 6.4133, 0.8334, 3.0194, 0.001, 1.8722, 0.1666, 0.796,
    1.4835, 0.0614, 0.2629, 1.6483, 0.6014, 1.8729, 0.5425, 0.0912, 0.0658, 0.1542,
]  # fmt: skip
DECAY = W[20]
FACTOR = 0.9 ** (-1 / DECAY) - 1


def curve(t_days: float, s: float) -> float:
    return (1 + FACTOR * t_days / s) ** -DECAY


def d0(grade: int) -> float:
    return W[4] - math.exp(W[5] * (grade - 1)) + 1


def good_review(s: float, d: float, elapsed_days: float) -> tuple[float, float]:
    """One review rated Good (G = 3), from the FSRS-6 equations."""
    if elapsed_days < 1:
        s_new = s * max(1.0, math.exp(W[17] * (3 - 3 + W[18])) * s ** -W[19])
    else:
        r = curve(elapsed_days, s)
        s_new = s * (math.exp(W[8]) * (11 - d) * s ** -W[9] * (math.exp(W[10] * (1 - r)) - 1) * 1 * 1 + 1)
    d_new = W[7] * d0(4) + (1 - W[7]) * (d + 0.0 * (10 - d) / 9)
    return s_new, min(max(d_new, 1.0), 10.0)


def test_default_parameters_are_the_published_ones() -> None:
    assert list(FSRS6_DEFAULT_PARAMETERS) == W
    assert len(FSRS().parameters) == 21
    assert FSRS().parameters == FSRS6_DEFAULT_PARAMETERS


def test_is_a_decay_function() -> None:
    assert isinstance(FSRS(), DecayFunction)


def test_initial_state_is_a_first_review_rated_good() -> None:
    s, d = FSRS().initial_state
    assert s == W[2]
    assert d == pytest.approx(min(max(d0(3), 1), 10), rel=1e-12)
    assert d == pytest.approx(2.1181, abs=1e-4)


def test_forgetting_curve() -> None:
    fn = FSRS()
    assert fn.score(entry(), START) == 1.0
    assert fn.score(entry(), START + timedelta(days=W[2])) == pytest.approx(0.9, rel=1e-12)
    assert fn.score(entry(), START + 30 * DAY) == pytest.approx(curve(30, W[2]), rel=1e-12)
    assert fn.score(entry(), START + 30 * DAY) == pytest.approx(0.66753, abs=1e-5)
    assert fn.retrievability(10.0, 4.0) == pytest.approx(curve(10.0, 4.0), rel=1e-12)


def test_half_life_is_where_r_reaches_one_half() -> None:
    fn = FSRS()
    hl = fn.half_life
    assert hl / 86_400 == pytest.approx(208.40, abs=0.01)
    assert fn.score(entry(), START + timedelta(seconds=hl)) == pytest.approx(0.5, rel=1e-9)
    t = fn.time_until(entry(), 0.8)
    assert t is not None
    assert fn.score(entry(), START + timedelta(seconds=t)) == pytest.approx(0.8, rel=1e-9)
    assert fn.time_until(entry(), 0.0) is None
    assert fn.time_until(entry(), 1.0) == 0.0


def test_long_term_rehearsal_matches_the_equations(clock: ManualClock) -> None:
    mem: Memory[Any, Any] = Memory(decay_fn=FSRS(), clock_fn=clock).put("v", key=1)
    clock.advance(5 * DAY)
    mem = mem.touch(1)
    s, d = good_review(W[2], d0(3), 5.0)
    state = mem.peek(1).decay_state
    assert state[0] == pytest.approx(s, rel=1e-12)
    assert state[1] == pytest.approx(d, rel=1e-12)
    assert s == pytest.approx(18.1679, abs=1e-4)
    assert d == pytest.approx(2.1112, abs=1e-4)
    clock.advance(3 * DAY)
    assert mem.score(1) == pytest.approx(curve(3, s), rel=1e-12)
    assert mem.score(1) == pytest.approx(0.97713, abs=1e-5)


def test_short_term_rehearsal_uses_the_same_day_equation(clock: ManualClock) -> None:
    mem: Memory[Any, Any] = Memory(decay_fn=FSRS(), clock_fn=clock).put("v", key=1)
    clock.advance(timedelta(hours=2))
    mem = mem.touch(1)
    s, d = good_review(W[2], d0(3), 2 / 24)
    # For S0 the raw same-day increase is below 1, so Good keeps the stability.
    assert math.exp(W[17] * W[18]) * W[2] ** -W[19] < 1
    assert s == W[2]
    assert mem.peek(1).decay_state == pytest.approx((s, d), rel=1e-12)
    # A larger stability gets a real same-day increase from a tiny one.
    fn = FSRS()
    small = fn.review(0.1, 5.0, 0.5)
    assert small[0] == pytest.approx(0.1 * math.exp(W[17] * W[18]) * 0.1 ** -W[19], rel=1e-12)
    assert small[0] > 0.1


def test_a_series_of_rehearsals_follows_the_equations(clock: ManualClock) -> None:
    fn = FSRS()
    mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock).put("v", key=1)
    s, d = W[2], min(max(d0(3), 1.0), 10.0)
    for gap_days in [0.2, 1.5, 4, 0.5, 12, 40]:
        clock.advance(timedelta(days=gap_days))
        mem = mem.touch(1)
        s, d = good_review(s, d, gap_days)
        assert mem.peek(1).decay_state == pytest.approx((s, d), rel=1e-9)
    clock.advance(20 * DAY)
    assert mem.score(1) == pytest.approx(curve(20, s), rel=1e-9)


def test_never_increases_without_rehearsal_and_rehearsal_never_lowers(clock: ManualClock) -> None:
    mem: Memory[Any, Any] = Memory(decay_fn=FSRS(), clock_fn=clock).put("v", key=1, importance=0.7)
    for gap in [timedelta(hours=3), 2 * DAY, 10 * DAY, 90 * DAY]:
        last = mem.score(1)
        for _ in range(5):
            clock.advance(gap / 5)
            now = mem.score(1)
            assert 0.0 <= now <= last
            last = now
        touched = mem.touch(1)
        assert touched.score(1) >= last
        clock.advance(gap)
        assert touched.score(1) >= mem.score(1)
        mem = touched


@given(
    gaps=st.lists(st.floats(min_value=0.0, max_value=400.0), min_size=1, max_size=12),
    later=st.floats(min_value=0.0, max_value=1000.0),
)
def test_stability_never_falls_with_good_reviews(gaps: list[float], later: float) -> None:
    fn = FSRS()
    s, d = fn.initial_state
    for g in gaps:
        s2, d2 = fn.review(s, d, g)
        assert s2 >= s
        assert 1.0 <= d2 <= 10.0
        assert fn.retrievability(later, s2) >= fn.retrievability(later + g, s)
        s, d = s2, d2


def test_round_trips(clock: ManualClock) -> None:
    fn = FSRS()
    assert from_dict(json.loads(json.dumps(fn.to_dict()))) == fn
    assert pickle.loads(pickle.dumps(fn)) == fn
    custom = FSRS(parameters=[*W[:20], 0.3])
    assert from_dict(custom.to_dict()) == custom
    assert custom != fn
    mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock).put("v", key=1)
    clock.advance(3 * DAY)
    mem = mem.touch(1)
    clock.advance(DAY)
    back = Memory.from_dict(json.loads(json.dumps(mem.to_dict())), clock_fn=clock)
    assert back.peek(1).decay_state == mem.peek(1).decay_state
    assert back.score(1) == mem.score(1)


def test_load_state_rejects_garbage() -> None:
    fn = FSRS()
    assert fn.load_state(None) is None
    assert fn.load_state([3.0, 5.0]) == (3.0, 5.0)
    for bad in ([1.0], [0.0, 5.0], [1.0, 11.0], "x", [True, 2.0], [math.nan, 2.0]):
        with pytest.raises(ValueError, match="decay_state"):
            fn.load_state(bad)


def test_foreign_state_is_ignored() -> None:
    fn = FSRS()
    e = entry(decay_state=(1.7e15, 1.8e15))  # ACT-R access times, not (S, D)
    assert fn.state(e) == fn.initial_state


def test_validates_parameters() -> None:
    with pytest.raises(ValueError, match="21"):
        FSRS(parameters=[1.0] * 20)
    with pytest.raises(ValueError, match=r"parameters\[20\]"):
        FSRS(parameters=[*W[:20], 0.0])
    with pytest.raises(ValueError, match=r"parameters\[3\]"):
        FSRS(parameters=[*W[:3], math.inf, *W[4:]])


def test_by_name_and_memory(clock: ManualClock) -> None:
    assert by_name("fsrs", 3600) == FSRS()
    mem: Memory[Any, Any] = Memory(decay_fn="fsrs", clock_fn=clock).put("v", key=1, importance=0.5)
    clock.advance(timedelta(days=W[2]))
    assert mem.score(1) == pytest.approx(0.45, rel=1e-12)
    assert repr(FSRS()) == "FSRS()"
