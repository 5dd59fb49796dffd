"""Combinators (Product, Blend, ByMetadata, priority_blend) and properties shared by every built-in."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import Entry, ManualClock, Memory
from lethe.decay import (
    ACTR,
    FSRS,
    AccessFrequency,
    AdaptiveDecay,
    Blend,
    ByMetadata,
    ChildStates,
    EbbinghausLTP,
    Exponential,
    Importance,
    Picked,
    PowerLaw,
    Product,
    Recency,
    StabilityExponential,
    from_dict,
    priority_blend,
)

from ._support import START, entry, memory_score

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)

# Every built-in's shared contract, combinators included (range, monotony, rehearsals, round trips,
# the maximum at zero elapsed), is in tests/contract/test_decay.py.


# --- Product ------------------------------------------------------------------------------


class TestProduct:
    def test_multiplies_raw_scores(self) -> None:
        a, b = PowerLaw(half_life=600, exponent=0.5), Exponential(half_life=DAY)
        e = entry(importance=0.5)
        for hours in (0, 1, 10, 100):
            now = START + timedelta(hours=hours)
            assert Product(a, b).score(e, now) == pytest.approx(a.score(e, now) * b.score(e, now), rel=1e-12)

    def test_importance_is_applied_once(self, clock: ManualClock) -> None:
        assert Product(Exponential(), PowerLaw()).includes_importance is False
        assert Product(Exponential(), StabilityExponential()).includes_importance is True
        mem: Memory[Any, Any] = Memory(decay_fn=Product(Exponential(), PowerLaw()), clock_fn=clock)
        mem = mem.put("v", key=1, importance=0.5)
        clock.advance(HOUR)
        assert mem.score(1) == pytest.approx(0.5 * 0.5 * 0.5, rel=1e-12)

    def test_children_keep_their_own_state(self, clock: ManualClock) -> None:
        fn = Product(FSRS(), ACTR(), Exponential())
        mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock).put("v", key=1)
        alone_fsrs: Memory[Any, Any] = Memory(decay_fn=FSRS(), clock_fn=clock).put("v", key=1)
        alone_actr: Memory[Any, Any] = Memory(decay_fn=ACTR(), clock_fn=clock).put("v", key=1)
        for gap in (HOUR, 3 * DAY, 10 * DAY):
            clock.advance(gap)
            mem, alone_fsrs, alone_actr = mem.touch(1), alone_fsrs.touch(1), alone_actr.touch(1)
        state = mem.peek(1).decay_state
        assert type(state) is ChildStates
        assert state == (alone_fsrs.peek(1).decay_state, alone_actr.peek(1).decay_state, None)
        clock.advance(5 * DAY)
        exp = Exponential().score(mem.peek(1), clock.now)
        assert mem.score(1) == pytest.approx(alone_fsrs.score(1) * alone_actr.score(1) * exp, rel=1e-12)

    def test_needs_functions(self) -> None:
        with pytest.raises(ValueError, match="at least one"):
            Product()
        with pytest.raises(TypeError, match="decay function"):
            Product(3)


# --- Blend --------------------------------------------------------------------------------


class TestBlend:
    def test_weights_are_normalized_pairs(self) -> None:
        a, b = Exponential(), PowerLaw()
        fn = Blend({a: 3, b: 1})
        assert fn.weights == ((a, 0.75), (b, 0.25))
        assert Blend([(a, 3), (b, 1)]) == fn
        assert fn.functions == (a, b)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.floats(min_value=1e-6, max_value=1e12), min_size=1, max_size=5))
    def test_a_blend_reads_back_equal_to_itself(self, raw: list[float]) -> None:
        # The weights it keeps are normalized; normalizing them again moved some by a bit, so a
        # saved or printed Blend did not read back equal (and a load reset its decay state).
        parts = [Exponential(60.0 * (i + 1)) for i in range(len(raw))]
        fn = Blend(list(zip(parts, raw)))
        assert Blend(fn.weights) == fn
        assert Blend(dict(fn.weights)).weights == fn.weights
        clock = ManualClock(START)
        mem: Memory[str, str] = Memory(decay_fn=fn, clock_fn=clock).put("v", key="k")
        back: Memory[str, str] = Memory.from_dict(json.loads(json.dumps(mem.to_dict())), clock_fn=clock)
        assert back.decay_fn == fn
        assert back == mem

    def test_the_reported_weights_read_back(self) -> None:
        fn = Blend({Exponential(60): 949431.75, PowerLaw(): 0.001})
        assert Blend(fn.weights).weights == fn.weights
        assert eval(repr(fn), {"Blend": Blend, "Exponential": Exponential, "PowerLaw": PowerLaw}) == fn

    def test_weighted_average_of_memory_scores(self) -> None:
        a, b = Exponential(), StabilityExponential()
        fn = Blend({a: 1, b: 3})
        e = entry(importance=0.6)
        for hours in (0, 2, 30):
            now = START + timedelta(hours=hours)
            expected = 0.25 * memory_score(a, e, now) + 0.75 * memory_score(b, e, now)
            assert fn.score(e, now) == pytest.approx(expected, rel=1e-12)

    @pytest.mark.parametrize("child", [Exponential(), StabilityExponential(), AdaptiveDecay(), EbbinghausLTP()])
    def test_a_blend_of_one_scores_like_its_child(self, child: Any, clock: ManualClock) -> None:
        meta = {"emotional_tone": 1.0}
        alone: Memory[Any, Any] = Memory(decay_fn=child, clock_fn=clock).put("v", key=1, importance=0.7, metadata=meta)
        blended: Memory[Any, Any] = Memory(decay_fn=Blend({child: 5}), clock_fn=clock)
        blended = blended.put("v", key=1, importance=0.7, metadata=meta)
        for gap in (0, 1, 40, 500):
            clock.advance(timedelta(hours=gap))
            assert blended.score(1) == pytest.approx(alone.score(1), rel=1e-12)

    def test_rejects_bad_weights(self) -> None:
        with pytest.raises(ValueError, match="weight"):
            Blend({Exponential(): -1})
        with pytest.raises(ValueError, match="positive sum"):
            Blend({Exponential(): 0})
        with pytest.raises(ValueError, match="at least one"):
            Blend({})


class TestPriorityBlend:
    def test_seed_formula(self) -> None:
        fn = priority_blend()
        inserted = START
        e = Entry(
            key=1,
            value="v",
            inserted_at=inserted,
            last_accessed_at=inserted + 3 * DAY,
            access_count=25,
            importance=0.8,
        )
        now = inserted + 10 * DAY
        recency = 0.5 ** (10 / 7)
        access = 25 / 100
        retention = math.exp(-(7 * 86_400) / (86_400 * 0.8 * 1.5**25))
        expected = 0.4 * 0.8 + 0.3 * recency + 0.2 * access + 0.1 * retention
        assert fn.score(e, now) == pytest.approx(expected, rel=1e-12)

    def test_components(self) -> None:
        assert Importance().score(entry(importance=3.0), START) == 1.0
        assert AccessFrequency().score(entry(access_count=300), START) == 1.0
        assert AccessFrequency(saturation=10).score(entry(access_count=5), START) == 0.5
        assert Recency(half_life=DAY).score(entry(), START + 2 * DAY) == 0.25
        custom = priority_blend(importance=1, recency=0, access=0, retention=0)
        assert custom.score(entry(importance=0.3), START + 100 * DAY) == pytest.approx(0.3)

    def test_fresh_entry_scores_point_eight(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(decay_fn=priority_blend(), clock_fn=clock).put("v", key=1)
        assert mem.score(1) == pytest.approx(0.8, rel=1e-12)


# --- ByMetadata ---------------------------------------------------------------------------


class TestByMetadata:
    def test_picks_a_function_per_entry(self, clock: ManualClock) -> None:
        fast, slow, other = Exponential(half_life=HOUR), Exponential(half_life=DAY), StabilityExponential()
        fn = ByMetadata("kind", {"episode": fast, "fact": slow}, default=other)
        mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock)
        mem = mem.put("e", key="e", importance=0.5, metadata={"kind": "episode"})
        mem = mem.put("f", key="f", metadata={"kind": "fact"})
        mem = mem.put("x", key="x", importance=0.8)
        clock.advance(2 * HOUR)
        assert mem.score("e") == pytest.approx(0.5 * 0.25, rel=1e-12)
        assert mem.score("f") == pytest.approx(0.5 ** (2 / 24), rel=1e-12)
        assert mem.score("x") == pytest.approx(math.exp(-7200 / (86_400 * 0.8)), rel=1e-12)

    def test_values_match_by_type(self) -> None:
        fn = ByMetadata("n", {1: Exponential(half_life=60)}, default=Exponential(half_life=3600))
        assert fn.pick(entry(metadata={"n": 1}))[0] == 0
        assert fn.pick(entry(metadata={"n": True}))[0] == -1
        assert fn.pick(entry(metadata={"n": [1]}))[0] == -1
        assert fn.pick(entry())[0] == -1

    def test_state_belongs_to_the_chosen_child(self, clock: ManualClock) -> None:
        fn = ByMetadata("kind", {"a": FSRS()}, default=ACTR())
        mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock).put("v", key=1, metadata={"kind": "a"})
        clock.advance(3 * DAY)
        mem = mem.touch(1)
        state = mem.peek(1).decay_state
        assert type(state) is Picked
        assert state[0] == 0
        assert state[1] == pytest.approx(FSRS().review(*FSRS().initial_state, 3.0))
        # The same state on an entry that now picks the default is not handed to ACT-R.
        moved = Entry(
            key=1,
            value="v",
            inserted_at=START,
            last_accessed_at=clock.now,
            access_count=1,
            decay_state=state,
        )
        bare = Entry(key=1, value="v", inserted_at=START, last_accessed_at=clock.now, access_count=1)
        later = clock.now + DAY
        assert fn.score(moved, later) == fn.score(bare, later)
        assert fn.dump_state(state) == [0, list(state[1])]
        assert fn.load_state(fn.dump_state(state)) == state
        with pytest.raises(ValueError, match="choice index"):
            fn.load_state([5, None])

    def test_validates(self) -> None:
        with pytest.raises(TypeError, match="key"):
            ByMetadata(3, {})  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="twice"):
            ByMetadata("k", [("a", Exponential()), ("a", PowerLaw())])
        with pytest.raises(TypeError, match="value"):
            ByMetadata("k", {("t",): Exponential()})
        assert ByMetadata("k", {}).default == Exponential()


# --- serialization ------------------------------------------------------------------------


def test_nested_to_dict_is_json_and_rebuilds() -> None:
    fn = ByMetadata("kind", {"a": Product(ACTR(), Exponential())}, default=priority_blend())
    data = fn.to_dict()
    assert data["name"] == "by_metadata"
    assert data["choices"][0][1]["name"] == "product"
    assert data["default"]["name"] == "blend"
    assert from_dict(json.loads(json.dumps(data))) == fn


def test_custom_children_make_the_combinator_custom(clock: ManualClock) -> None:
    def flat(e: Entry[Any, Any], now: datetime) -> float:
        return 0.5

    fn = Product(Exponential(), flat)
    assert fn.to_dict()["name"] == "custom"
    assert Blend({flat: 1}).to_dict()["name"] == "custom"
    assert ByMetadata("k", {}, default=flat).to_dict()["name"] == "custom"
    mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock).put("v", key=1)
    clock.advance(HOUR)
    assert mem.score(1) == pytest.approx(0.25)
    back = Memory.from_dict(json.loads(json.dumps(mem.to_dict())), decay_fn=fn, clock_fn=clock)
    assert back.score(1) == mem.score(1)


def test_custom_children_are_checked() -> None:
    def bad(e: Entry[Any, Any], now: datetime) -> float:
        return math.nan

    with pytest.raises(ValueError, match="finite"):
        Product(bad).score(entry(), START)


@pytest.mark.parametrize(
    "data",
    [
        {"name": "product", "functions": [{"name": "os.system"}]},
        {"name": "product"},
        {"name": "blend", "weights": [[{"name": "exponential"}]]},
        {"name": "blend", "weights": [[{"name": "exponential"}, -2]]},
        {"name": "by_metadata", "key": "k", "choices": [["a"]], "default": {"name": "exponential"}},
        {"name": "by_metadata", "key": "k", "choices": [], "default": None},
        {"name": "importance", "x": 1},
        {"name": 3},
        [],
    ],
)
def test_from_dict_rejects_bad_descriptions(data: Any) -> None:
    with pytest.raises(ValueError, match="decay_fn"):
        from_dict(data)


def test_from_dict_rejects_deep_nesting() -> None:
    data: dict[str, Any] = {"name": "exponential"}
    for _ in range(40):
        data = {"name": "product", "functions": [data]}
    with pytest.raises(ValueError, match="nested too deeply"):
        from_dict(data)
