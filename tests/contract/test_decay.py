"""The decay-function contract, run over every model in ``tests/_support.MODELS``.

Every decay function is pure, scores a memory can use in 0..1, starts at its
promised fresh score, never rises without a rehearsal (and a rehearsal never
lowers it), keeps a ``decay_state`` that survives JSON, round-trips through
the registry and pickle, has equality, hash and repr that agree, forecasts
(``time_until``) what it scores, and declares how its state moves in time
(``moved_state``), so a memory moved with ``Memory.from_dict(shift_to=...)``
scores as the original did.
"""

from __future__ import annotations

import dataclasses
import itertools
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
from lethe.decay._adapter import is_builtin, moved_state
from lethe.decay._base import Param, Stateful

from .._support import (
    BY_ID,
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
    parts,
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

    @given(life=lives, seconds=st.integers(-3650 * 86_400, 3650 * 86_400))
    def test_state_moves_in_time_and_back(self, model: Model, life: dict[str, Any], seconds: int) -> None:
        """``moved_state`` by ``t + d`` then ``t - d`` (or by identity) is the state itself; every
        instant it moves is one of the entry's accesses; and the entry moved by ``d`` with its
        moved state scores at ``now + d`` as the original at ``now`` (a state holding an instant
        its model does not declare would score differently)."""
        fn = model.make()
        e = lived(fn, **life)
        state = e.decay_state
        d = seconds * 1e6
        seen: list[float] = []

        def there(t: float) -> float:
            seen.append(t)
            return t + d

        def unmoved(custom_state: Any) -> Any:
            return custom_state

        assert moved_state(fn, state, lambda t: t, unmoved) == state
        moved = moved_state(fn, state, there, unmoved)
        back = moved_state(fn, moved, lambda t: t - d, unmoved)
        assert back == state
        assert type(back) is type(state)
        if state is None:
            assert moved is None
        accesses = {e.inserted_us + gap * 1e6 for gap in itertools.accumulate([0, *life["gaps"]])}
        assert set(seen) <= accesses
        if seen and seconds:
            assert moved != state
        delta = timedelta(seconds=seconds)
        shifted = dataclasses.replace(
            e, inserted_at=e.inserted_at + delta, last_accessed_at=e.last_accessed_at + delta, decay_state=moved
        )
        for offset in (0, 1, 3600, 10 * 86_400):
            now = e.last_accessed_at + timedelta(seconds=offset)
            assert memory_score(fn, shifted, now + delta) == pytest.approx(
                memory_score(fn, e, now), rel=1e-12, abs=1e-300
            )

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


# -- a stateful model declares how its state moves in time ----------------------------------


@pytest.mark.parametrize(
    ("model_id", "kind"),
    [
        ("actr", None),
        ("actr/history=3", None),
        ("product/includes_importance", None),
        ("by_metadata", "b"),
        ("by_metadata/nested", "a"),
        ("by_metadata/nested", None),
    ],
)
def test_a_state_of_access_times_moves(model_id: str, kind: str | None) -> None:
    """Where the state keeps ACT-R access times (at any depth), they are the instants that move."""
    fn = BY_ID[model_id].make()
    e = lived(fn, 1.0, {} if kind is None else {"kind": kind}, [60, 3600, 86_400])
    seen: list[float] = []

    def later(t: float) -> float:
        seen.append(t)
        return t + 1e6

    moved = moved_state(fn, e.decay_state, later, lambda state: state)
    assert seen
    assert moved != e.decay_state
    assert set(seen) <= {e.inserted_us + s * 1e6 for s in (0, 60, 3660, 90_060)}
    assert e.last_accessed_at == START + timedelta(seconds=90_060)


@pytest.mark.parametrize("model_id", ["fsrs", "by_metadata"])
def test_a_state_without_instants_stays_as_is(model_id: str) -> None:
    fn = BY_ID[model_id].make()
    e = lived(fn, 1.0, {"kind": "a"}, [60, 3600])
    assert e.decay_state is not None

    def nowhere(t: float) -> float:
        raise AssertionError("FSRS's (S, D) holds no instant")

    assert moved_state(fn, e.decay_state, nowhere, lambda state: state) == e.decay_state


def test_a_custom_functions_state_goes_to_custom() -> None:
    seen: list[Any] = []

    def custom(state: Any) -> Any:
        seen.append(state)
        return "moved"

    assert moved_state(lambda entry, now: 1.0, 7, lambda t: t, custom) == "moved"
    assert seen == [7]
    assert moved_state(lambda entry, now: 1.0, None, lambda t: t, custom) is None
    assert seen == [7]


def test_every_stateful_builtin_declares_how_its_state_moves() -> None:
    """A built-in that keeps a state is a ``Stateful`` (so it declares ``moved_state``), and a
    stateless one declares nothing to move."""
    for model in BUILT:
        for fn in parts(model.make()):
            if not is_builtin(fn):
                continue
            keeps = hasattr(fn, "_rehearse") or hasattr(fn, "rehearse") or hasattr(fn, "dump_state")
            assert keeps == isinstance(fn, Stateful), fn
            assert keeps == hasattr(fn, "moved_state"), fn


def test_a_stateful_model_without_the_declaration_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Forgetful keeps a decay_state.*moved_state"):

        class Forgetful(Stateful):
            name = "forgetful"
            params = (Param("x", lambda value, name: value),)
            __slots__ = ("x",)

            def __init__(self, x: float = 1.0) -> None:
                self._init(x)

            def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
                return 1.0

            def _rehearse(self, entry: Entry[Any, Any], now_us: float) -> Any:
                return (now_us,)

    class Unnamed(Stateful):
        """Without a name, the class is made; an instance is not."""

        __slots__ = ()

        def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
            return 1.0

        def _rehearse(self, entry: Entry[Any, Any], now_us: float) -> Any:
            return (now_us,)

    with pytest.raises(TypeError, match="moved_state"):
        Unnamed()  # type: ignore[abstract]


SHIFTS = [timedelta(days=-400, seconds=7), timedelta(days=3000, microseconds=250)]


@pytest.mark.parametrize("shift", SHIFTS, ids=["back", "ahead"])
@pytest.mark.parametrize("model", MODELS, ids=MODEL_IDS)
def test_shift_to_keeps_every_entrys_age_and_score(model: Model, shift: timedelta) -> None:
    """``Memory.from_dict(shift_to=...)`` of a memory rehearsed several times: every entry moves
    by the one delta, and scores at the shifted now as the original at its own now."""
    fn = model.make()
    clock = fake_clock()
    mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock)
    for i, meta in enumerate(METADATA):
        mem = mem.put(f"v{i}", key=i, importance=(0.3, 1.0, 2.5, 0.7)[i], metadata=meta)
        clock.advance(600 * i + 1)
    for gap in (60, 3600, 2 * 86_400, 7, 5 * 86_400):
        clock.advance(gap)
        for key in range(len(METADATA)):
            if key != gap % len(METADATA):
                mem = mem.touch(key)
    data = json.loads(json.dumps(mem.to_dict()))
    assert data["latest"] == clock.now.isoformat()  # shift_to moves the latest reading to target
    target = clock.now + shift
    present = fake_clock(target)
    back: Memory[Any, Any] = Memory.from_dict(
        data, clock_fn=present, shift_to=target, decay_fn=None if model.builtin else fn
    )
    assert len(back) == len(mem)
    for key in range(len(METADATA)):
        e, b = mem.peek(key), back.peek(key)
        assert (b.inserted_at, b.last_accessed_at) == (e.inserted_at + shift, e.last_accessed_at + shift)
        assert b.access_count == e.access_count
    for step in (0, 1, 3600, 30 * 86_400):
        clock.set(target - shift + timedelta(seconds=step))
        present.set(target + timedelta(seconds=step))
        for key in range(len(METADATA)):
            assert back.score(key) == pytest.approx(mem.score(key), rel=1e-9, abs=1e-300), (key, step)
