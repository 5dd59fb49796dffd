"""The decay-function contract, run over every model in ``tests/_support.MODELS``.

Every decay function is pure, scores a memory can use in 0..1, starts at its
promised fresh score, never rises without a rehearsal (and a rehearsal never
lowers it), keeps a ``decay_state`` that survives JSON, round-trips through
the registry and pickle, has equality, hash and repr that agree, and forecasts
(``time_until``) what it scores.
"""

from __future__ import annotations

import json
import math
import pickle
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lethe import Entry, Memory
from lethe.decay import BUILTINS, DecayFunction, from_dict

from .._support import (
    DAY,
    HOUR,
    METADATA,
    MODEL_IDS,
    MODELS,
    START,
    Model,
    entry,
    fake_clock,
    memory_score,
)

BUILT = [m for m in MODELS if m.builtin]
BUILT_IDS = [m.id for m in BUILT]
CENTURY = timedelta(days=365 * 100)


def score_of(fn: Any, e: Entry[Any, Any], now: datetime) -> float:
    score = getattr(fn, "score", None)
    return float((score if callable(score) else fn)(e, now))


def lived(
    fn: Any, importance: float, meta: dict[str, Any], gaps: list[int], clock_at: datetime = START
) -> Entry[Any, Any]:
    """An entry as a memory leaves it after a put and a rehearsal after each gap (seconds)."""
    clock = fake_clock(clock_at)
    mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock).put("v", key=1, importance=importance, metadata=meta)
    for gap in gaps:
        clock.advance(gap)
        mem = mem.touch(1)
    return mem.peek(1)


lives = st.fixed_dictionaries(
    {
        "importance": st.sampled_from([0.0, 0.3, 1.0, 2.5]),
        "meta": st.sampled_from(METADATA),
        "gaps": st.lists(st.integers(0, 40 * 86_400), max_size=5),
    }
)


@pytest.mark.parametrize("model", MODELS, ids=MODEL_IDS)
class TestEveryModel:
    def test_is_a_decay_function(self, model: Model) -> None:
        fn = model.make()
        if model.builtin:
            assert isinstance(fn, DecayFunction)
        else:
            assert callable(fn)

    def test_fresh_score(self, model: Model) -> None:
        fn = model.make()
        assert memory_score(fn, entry(), START) == pytest.approx(model.fresh, abs=1e-12)
        if model.fresh == 1.0 and not hasattr(fn, "weights"):
            assert score_of(fn, entry(), START) == 1.0

    def test_earlier_now_counts_as_zero_elapsed(self, model: Model) -> None:
        fn = model.make()
        assert score_of(fn, entry(), START - HOUR) == score_of(fn, entry(), START)

    def test_very_large_elapsed(self, model: Model) -> None:
        fn = model.make()
        late = memory_score(fn, entry(), START + CENTURY)
        assert 0.0 <= late <= memory_score(fn, entry(), START)
        if model.fades:
            assert late < 1e-3

    def test_at_its_maximum_at_zero_elapsed(self, model: Model) -> None:
        fn = model.make()
        e = entry(importance=1.0)
        top = score_of(fn, e, START)
        for hours in (1, 24, 24 * 30):
            assert score_of(fn, e, START + timedelta(hours=hours)) <= top

    def test_never_increases_on_a_fixed_grid(self, model: Model) -> None:
        fn = model.make()
        e = entry(inserted=START - 10 * DAY, accessed=START - 3 * HOUR, access_count=4, importance=0.7)
        last = math.inf
        for hours in range(0, 24 * 60, 7):
            s = score_of(fn, e, START + timedelta(hours=hours))
            assert s <= last
            last = s

    @given(life=lives, offsets=st.lists(st.integers(0, 400 * 86_400), min_size=1, max_size=6))
    def test_pure_in_range_and_never_rising(self, model: Model, life: dict[str, Any], offsets: list[int]) -> None:
        fn = model.make()
        e = lived(fn, **life)
        last = math.inf
        for offset in sorted(offsets):
            now = e.last_accessed_at + timedelta(seconds=offset)
            raw = score_of(fn, e, now)
            assert math.isfinite(raw)
            assert raw >= 0.0
            assert score_of(fn, e, now) == raw  # pure: same entry, same time, same answer
            s = memory_score(fn, e, now)
            assert 0.0 <= s <= 1.0
            assert s <= last + 1e-12
            last = s

    @given(life=lives, at=st.integers(0, 60 * 86_400))
    def test_the_memory_scores_as_the_function_does(self, model: Model, life: dict[str, Any], at: int) -> None:
        """A memory's fast path (built-ins' float scoring) agrees with the public ``score``."""
        fn = model.make()
        clock = fake_clock()
        mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock)
        mem = mem.put("v", key=1, importance=life["importance"], metadata=life["meta"])
        for gap in life["gaps"]:
            clock.advance(gap)
            mem = mem.touch(1)
        clock.advance(at)
        assert mem.score(1) == pytest.approx(memory_score(fn, mem.peek(1), clock.now), rel=1e-12, abs=1e-300)

    @given(
        importance=st.sampled_from([0.0, 0.3, 1.0, 2.5]),
        kind=st.sampled_from(["a", "b", "fact", None]),
        tone=st.floats(min_value=0.0, max_value=1.0),
        steps=st.lists(
            st.tuples(st.integers(min_value=0, max_value=40 * 86_400), st.booleans()),
            min_size=1,
            max_size=8,
        ),
    )
    def test_rehearsal_never_lowers_the_score(
        self, model: Model, importance: float, kind: str | None, tone: float, steps: list[tuple[int, bool]]
    ) -> None:
        clock = fake_clock()
        meta: dict[str, Any] = {"emotional_tone": tone, "type": kind or "conversation", "channels": 2}
        if kind is not None:
            meta["kind"] = kind
        mem: Memory[Any, Any] = Memory(decay_fn=model.make(), clock_fn=clock)
        mem = mem.put("v", key=1, importance=importance, metadata=meta)
        untouched: Memory[Any, Any] | None = None  # the memory as it was before the last rehearsal
        last = mem.score(1)
        assert 0.0 <= last <= 1.0
        for gap, rehearse in steps:
            clock.advance(gap)
            now = mem.score(1)
            assert 0.0 <= now <= 1.0
            assert now <= last + 1e-12  # never rises without a rehearsal
            if untouched is not None:
                assert now >= untouched.score(1) - 1e-12  # a rehearsal never lowers the score later on
            untouched = None
            if rehearse:
                touched = mem.touch(1)
                assert touched.score(1) >= now - 1e-12
                untouched, mem = mem, touched
                now = mem.score(1)
            last = now

    @given(life=lives, gap=st.integers(0, 30 * 86_400))
    def test_rehearse_state_survives_json(self, model: Model, life: dict[str, Any], gap: int) -> None:
        fn = model.make()
        rehearse = getattr(fn, "rehearse", None)
        if not callable(rehearse):
            return
        e = lived(fn, **life)
        now = e.last_accessed_at + timedelta(seconds=gap)
        state = rehearse(e, now)
        assert rehearse(e, now) == state  # pure
        dump, load = getattr(fn, "dump_state", None), getattr(fn, "load_state", None)
        if callable(dump) and callable(load):
            data = json.loads(json.dumps(dump(state)))
            assert load(data) == state
            assert load(None) is None
        else:
            assert json.loads(json.dumps(state)) == state

    def test_round_trips_through_the_registry_and_pickle(self, model: Model) -> None:
        fn = model.make()
        if not model.builtin:
            assert pickle.loads(pickle.dumps(fn)) is fn
            return
        data = json.loads(json.dumps(fn.to_dict()))
        back = from_dict(data)
        assert back == fn
        assert hash(back) == hash(fn)
        assert repr(back) == repr(fn)
        assert back.to_dict() == fn.to_dict()
        assert pickle.loads(pickle.dumps(fn)) == fn
        assert hash(pickle.loads(pickle.dumps(fn))) == hash(fn)

    def test_frozen(self, model: Model) -> None:
        if not model.builtin:
            return
        fn = model.make()
        # Every declared parameter (other names on a slotted class hit CPython's gh-90562 on 3.10-3.11).
        for param in type(fn).params:
            with pytest.raises(AttributeError):
                setattr(fn, param.name, 3)

    @given(life=lives, level=st.floats(0.01, 0.99))
    def test_time_until_agrees_with_score(self, model: Model, life: dict[str, Any], level: float) -> None:
        fn = model.make()
        closed = getattr(fn, "time_until", None)
        if not callable(closed):
            return
        e = lived(fn, **life)
        secs = closed(e, level)
        fresh = score_of(fn, e, e.last_accessed_at)
        if secs is None or secs == math.inf:
            # Never (or beyond any representable time): still at or above the level after a millennium.
            assert score_of(fn, e, e.last_accessed_at + timedelta(days=365_000)) >= level * (1 - 1e-9)
            return
        if fresh <= level:
            assert secs <= 1e-6
            return
        assert secs > 0
        if secs >= (datetime.max.replace(tzinfo=START.tzinfo) - e.last_accessed_at).total_seconds() - 1:
            return  # past the range of datetime
        at = e.last_accessed_at + timedelta(seconds=secs)
        assert score_of(fn, e, at) == pytest.approx(level, rel=1e-6)
        assert score_of(fn, e, at - timedelta(seconds=secs / 2)) >= level


def test_equal_reprs_if_and_only_if_equal_models() -> None:
    fns = [m.make() for m in BUILT] + [m.make() for m in BUILT]
    for a in fns:
        for b in fns:
            assert (repr(a) == repr(b)) == (a == b), (a, b)
            if a == b:
                assert hash(a) == hash(b)


HALVING = [m for m in MODELS if m.half_life is not None]


@pytest.mark.parametrize("model", HALVING, ids=[m.id for m in HALVING])
def test_half_at_one_half_life(model: Model) -> None:
    fn = model.make()
    assert model.half_life is not None
    assert score_of(fn, entry(), START + timedelta(seconds=model.half_life)) == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("name", sorted(set(BUILTINS) - {"fsrs"}))
def test_one_half_life_rule_through_memory(name: str) -> None:
    """Every name but FSRS: an untouched entry of importance 1 scores 0.5 after the memory's half-life."""
    clock = fake_clock()
    mem: Memory[Any, Any] = Memory(decay_fn=name, half_life=timedelta(hours=3), clock_fn=clock).put(1, key=1)
    clock.advance(timedelta(hours=3))
    assert mem.score(1) == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("model", BUILT, ids=BUILT_IDS)
def test_the_memory_keeps_the_model_through_json(model: Model) -> None:
    fn = model.make()
    clock = fake_clock()
    mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock)
    mem = mem.put("v", key=1, importance=0.8, metadata={"kind": "a"}).put("w", key=2, metadata={"kind": "b"})
    for gap in (HOUR, 2 * DAY):
        clock.advance(gap)
        mem = mem.touch(1).touch(2)
    clock.advance(DAY)
    back = Memory.from_dict(json.loads(json.dumps(mem.to_dict())), clock_fn=clock)
    assert back.decay_fn == fn
    for key in (1, 2):
        assert back.peek(key).decay_state == mem.peek(key).decay_state
        assert back.score(key) == mem.score(key)
    assert pickle.loads(pickle.dumps(mem)).score(1) == mem.score(1)
