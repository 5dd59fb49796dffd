"""Every public numeric and duration parameter is checked in one place, and no OverflowError escapes.

Each parameter below gets hostile values (ints beyond float range, infinities,
NaN, a bool, a string, None): each is either a legal value or refused with a
TypeError or ValueError whose message names the parameter.  Nothing else
(OverflowError above all) may come out, and reading numbers lethe does not
control (metadata, what a custom decay function declares) never raises one either.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory
from lethe._core.validate import duration, finite_float, integer, number, unit
from lethe.decay import (
    BUILTINS,
    FSRS6_DEFAULT_PARAMETERS,
    Blend,
    ByMetadata,
    Exponential,
    Product,
    by_name,
    priority_blend,
)
from lethe.decay._registry import _PARTS

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
HUGE = 10**400

#: id -> value: the hostile inputs every numeric parameter gets.
BAD: dict[str, Any] = {
    "10**400": HUGE,
    "-10**400": -HUGE,
    "inf": math.inf,
    "-inf": -math.inf,
    "nan": math.nan,
    "True": True,
    "str": "1",
    "None": None,
    "list": [1],
}


def refusal(call: Callable[[Any], object], value: Any) -> Exception | None:
    """Call; the TypeError/ValueError it raised, or None if it accepted ``value``.
    Any other exception (OverflowError above all) fails the test."""
    try:
        call(value)
    except (TypeError, ValueError) as exc:
        return exc
    return None


def memory(**kw: Any) -> Memory[Any, Any]:
    mem: Memory[Any, Any] = Memory(clock_fn=ManualClock(T0), **kw)
    return mem.put("v", key="k")


# (label, call taking the hostile value, name the message must contain, ids that are legal values)
Case = tuple[str, Callable[[Any], object], str, frozenset[str]]


def _memory_cases() -> list[Case]:
    cases: list[Case] = []
    for name in ("half_life", "eviction_threshold", "summarize_threshold"):
        cases.append((f"Memory({name})", lambda v, n=name: Memory(**{n: v}), name, frozenset()))
        cases.append((f"configure({name})", lambda v, n=name: memory().configure(**{n: v}), name, frozenset()))
    cases.append(("Memory(max_entries)", lambda v: Memory(max_entries=v), "max_entries", frozenset()))
    cases.append(("configure(max_entries)", lambda v: memory().configure(max_entries=v), "max_entries", frozenset()))
    for name in ("importance", "ttl"):
        legal = frozenset({"None"}) if name == "ttl" else frozenset()
        cases.append((f"put({name})", lambda v, n=name: memory().put("w", key="j", **{n: v}), name, legal))
        cases.append((f"put_many({name})", lambda v, n=name: memory().put_many({"j": "w"}, **{n: v}), name, legal))
    cases.append(("put(pinned)", lambda v: memory().put("w", key="j", pinned=v), "pinned", frozenset({"True"})))
    cases.append(("touch(importance)", lambda v: memory().touch("k", importance=v), "importance", frozenset({"None"})))
    cases.append(("top(n)", lambda v: memory().top(v), "n", frozenset({"10**400"})))
    cases.append(("top_scored(n)", lambda v: memory().top_scored(v), "n", frozenset({"10**400"})))
    cases.append(("above(threshold)", lambda v: memory().above(v), "threshold", frozenset()))
    cases.append(("time_until(threshold)", lambda v: memory().time_until("k", v), "threshold", frozenset()))
    cases.append(
        (
            "consolidate(threshold)",
            lambda v: memory().consolidate(lambda a, b: 1.0, threshold=v),
            "threshold",
            frozenset(),
        )
    )
    cases.append(
        ("consolidate(min_group)", lambda v: memory().consolidate(min_group=v), "min_group", frozenset({"10**400"}))
    )
    cases.append(("ManualClock.advance(delta)", lambda v: ManualClock(T0).advance(v), "delta", frozenset()))
    cases.append(
        (
            "Entry(importance)",
            lambda v: Entry(key=1, value=0, inserted_at=T0, last_accessed_at=T0, importance=v),
            "importance",
            frozenset(),
        )
    )
    cases.append(
        (
            "Entry(access_count)",
            lambda v: Entry(key=1, value=0, inserted_at=T0, last_accessed_at=T0, access_count=v),
            "access_count",
            frozenset(),
        )
    )
    return cases


def _model_cases() -> list[Case]:
    """Every constructor parameter of every model the registry knows."""
    cases: list[Case] = []
    for label, cls in sorted({**BUILTINS, **_PARTS}.items()):
        for name, param in inspect.signature(cls).parameters.items():
            legal = {"None"} if param.default is None else set()
            if param.default.__class__ is str:
                legal |= {"str"}  # a metadata key: any str
            if name == "history":
                legal = set()
            cases.append((f"{label}({name})", lambda v, c=cls, n=name: c(**{n: v}), name, frozenset(legal)))
    for i in (0, 20):

        def fsrs(v: Any, i: int = i) -> object:
            params: list[object] = list(FSRS6_DEFAULT_PARAMETERS)
            params[i] = v
            return BUILTINS["fsrs"](parameters=params)

        cases.append((f"FSRS(parameters[{i}])", fsrs, f"parameters[{i}]", frozenset()))
    cases.append(
        (
            "AdaptiveDecay(type_multipliers[...])",
            lambda v: BUILTINS["adaptive"](type_multipliers={"fact": v}),
            "type_multipliers",
            frozenset(),
        )
    )
    cases.append(("Blend(weight)", lambda v: Blend([(Exponential(), v)]), "weight", frozenset()))
    cases.append(("Blend(function)", lambda v: Blend([(v, 1.0)]), "weights[0]", frozenset()))
    cases.append(("Product(function)", lambda v: Product(v), "functions[0]", frozenset()))
    cases.append(("ByMetadata(key)", lambda v: ByMetadata(v, {}), "key", frozenset({"str"})))
    cases.append(("ByMetadata(default)", lambda v: ByMetadata("k", {}, v), "default", frozenset({"None"})))
    for name in ("importance", "recency", "access", "retention", "recency_half_life", "saturation"):
        cases.append((f"priority_blend({name})", lambda v, n=name: priority_blend(**{n: v}), name, frozenset()))
    for model in ("exponential", "actr", "fsrs", "adaptive", "ebbinghaus_ltp"):
        cases.append((f"by_name({model!r}, half_life)", lambda v, m=model: by_name(m, v), "half_life", frozenset()))
    return cases


def _document_cases() -> list[Case]:
    """The numbers a saved memory holds, read back by ``Memory.from_dict``."""
    cases: list[Case] = []
    for decay in ("exponential", "actr", "fsrs"):
        doc = Memory(decay_fn=decay, clock_fn=ManualClock(T0)).put("v", key="k").touch("k").to_dict()
        fields = ["max_entries", "half_life", "eviction_threshold", "summarize_threshold", "next_key", "next_seq"]
        for name in fields if decay == "exponential" else []:

            def top_level(v: Any, doc: Any = doc, name: str = name) -> object:
                d = copy.deepcopy(doc)
                d[name] = v
                return Memory.from_dict(d)

            cases.append((f"from_dict {name}", top_level, name, frozenset({"10**400"} if "next" in name else ())))
        for name in ("access_count", "importance", "seq") if decay == "exponential" else ():

            def in_entry(v: Any, doc: Any = doc, name: str = name) -> object:
                d = copy.deepcopy(doc)
                d["entries"][0][name] = v
                return Memory.from_dict(d)

            # A huge seq is an int like any other: then next_seq is too small for it.
            legal = frozenset({"10**400"}) if name == "seq" else frozenset()
            cases.append((f"from_dict entries[0].{name}", in_entry, name, legal))
        for name in doc["decay_fn"]:
            if name == "name":
                continue

            def model_field(v: Any, doc: Any = doc, name: str = name) -> object:
                d = copy.deepcopy(doc)
                d["decay_fn"][name] = v
                return Memory.from_dict(d)

            default = inspect.signature(BUILTINS[decay]).parameters[name].default
            legal = frozenset({"None"}) if default is None else frozenset()
            cases.append((f"from_dict {decay}.{name}", model_field, name, legal))
        if decay != "exponential":

            def state(v: Any, doc: Any = doc) -> object:
                d = copy.deepcopy(doc)
                d["entries"][0]["decay_state"][0] = v
                return Memory.from_dict(d)

            cases.append((f"from_dict {decay} decay_state", state, "decay_state", frozenset()))
    return cases


CASES = _memory_cases() + _model_cases() + _document_cases()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hostile_numbers_are_refused_by_name(case: Case) -> None:
    label, call, name, legal = case
    for value_id, value in BAD.items():
        exc = refusal(call, value)
        if exc is not None:
            assert name in str(exc), f"{label}: the message does not name {name}: {exc}"
            assert len(str(exc)) < 400, f"{label}: message too long: {str(exc)[:100]}..."
        elif value_id not in legal:
            pytest.fail(f"{label} accepted {value_id}")


@pytest.mark.parametrize(
    ("model", "meta"),
    [
        ("ebbinghaus_ltp", {"emotional_tone": HUGE}),
        ("ebbinghaus_ltp", {"emotional_tone": -HUGE}),
        ("adaptive", {"connections": HUGE}),
        ("adaptive", {"channels": -HUGE, "connections": math.nan}),
        ("adaptive", {"type": HUGE}),
    ],
)
def test_metadata_numbers_beyond_float_range_score(model: str, meta: dict[str, Any]) -> None:
    clock = ManualClock(T0)
    mem: Memory[Any, Any] = Memory(decay_fn=model, clock_fn=clock).put("v", key="k", metadata=meta)
    clock.advance(3600)
    assert 0.0 <= mem.score("k") <= 1.0
    assert mem.top(1)


def test_a_huge_emotional_tone_counts_as_full() -> None:
    clock = ManualClock(T0)
    fn = BUILTINS["ebbinghaus_ltp"]()
    full = Memory(decay_fn=fn, clock_fn=clock).put("v", key="k", metadata={"emotional_tone": 1})
    huge = Memory(decay_fn=fn, clock_fn=clock).put("v", key="k", metadata={"emotional_tone": HUGE})
    clock.advance(86_400)
    assert huge.score("k") == full.score("k")


@pytest.mark.parametrize("rate", [HUGE, -HUGE, math.inf, math.nan, True, "fast"])
def test_a_custom_decay_rate_that_is_not_a_rate_is_ignored(rate: object) -> None:
    class Custom:
        decay_rate = rate

        def score(self, entry: Entry[Any, Any], now: datetime) -> float:
            return 0.5

    mem: Memory[Any, Any] = Memory(decay_fn=Custom(), clock_fn=ManualClock(T0)).put("v", key="k")
    assert mem.score("k") == 0.5


@pytest.mark.parametrize("half_life", [HUGE, -HUGE, math.inf, math.nan, True, "long"])
def test_a_custom_half_life_that_is_not_a_duration_is_ignored(half_life: object) -> None:
    class Custom:
        def __init__(self) -> None:
            self.half_life = half_life

        def score(self, entry: Entry[Any, Any], now: datetime) -> float:
            return 0.5

    assert Memory(decay_fn=Custom(), clock_fn=ManualClock(T0)).put("v", key="k").score("k") == 0.5


@pytest.mark.parametrize("value", [HUGE, -HUGE, math.inf, math.nan, True, "0.5", None])
def test_a_custom_score_that_is_not_a_finite_number_is_refused(value: object) -> None:
    mem: Memory[Any, Any] = Memory(decay_fn=lambda e, now: value, clock_fn=ManualClock(T0)).put("v", key="the key")
    with pytest.raises((TypeError, ValueError), match="the key"):
        mem.scored()


class TestValidators:
    """The messages of the validators themselves: one pattern per failure."""

    def test_number(self) -> None:
        assert number(3, "x") == 3.0
        assert type(number(3, "x")) is float
        with pytest.raises(TypeError, match=r"^x must be a number, got bool$"):
            number(True, "x")
        with pytest.raises(ValueError, match=r"^x must be a finite number, got a huge int$"):
            number(HUGE, "x")
        with pytest.raises(ValueError, match=r"^x must be a finite number, got a huge negative int$"):
            number(-HUGE, "x", low=0)
        with pytest.raises(ValueError, match=r"^x must not be NaN$"):
            number(math.nan, "x")
        with pytest.raises(ValueError, match=r"^x must be finite, got inf$"):
            number(math.inf, "x")
        with pytest.raises(ValueError, match=r"^x must be strictly between 0 and 1, got 1$"):
            number(1, "x", low=0, high=1, low_open=True, high_open=True)
        with pytest.raises(ValueError, match=r"^x must be greater than 0 and at most 5, got 0$"):
            number(0, "x", low=0, high=5, low_open=True)
        with pytest.raises(ValueError, match=r"^x must be finite and >= 2, got 1$"):
            number(1, "x", low=2)
        with pytest.raises(ValueError, match=r"^x must be finite and <= 2, got 3$"):
            number(3, "x", high=2)
        with pytest.raises(ValueError, match=r"^x must be odd, got 3$"):
            number(3, "x", high=2, expected="odd")
        # The largest ints a float holds are numbers like any other.
        assert number(int(1.7976931348623157e308), "x") == 1.7976931348623157e308

    def test_unit(self) -> None:
        assert unit(0, "t") == 0.0
        with pytest.raises(TypeError, match=r"^t must be a number between 0 and 1, got str$"):
            unit("0", "t", kind="a number between 0 and 1")
        with pytest.raises(ValueError, match=r"^t must be between 0 and 1, got -0.5$"):
            unit(-0.5, "t")

    def test_integer(self) -> None:
        assert integer(HUGE, "n") == HUGE
        with pytest.raises(TypeError, match=r"^n must be an int, got float$"):
            integer(1.0, "n")
        with pytest.raises(ValueError, match=r"^n must be an int, got float$"):
            integer(1.0, "n", wrong_type=ValueError)
        with pytest.raises(ValueError, match=r"^n must be at most 5, got an int of 401 digits$"):
            integer(HUGE, "n", high=5)
        with pytest.raises(ValueError, match=r"^n must be >= 0, got a negative int of 401 digits$"):
            integer(-HUGE, "n", low=0)

    def test_duration(self) -> None:
        assert duration(timedelta(hours=1), "d") == 3600.0
        for bad in (0, -1, HUGE, -HUGE, math.inf, math.nan, timedelta(0)):
            with pytest.raises(ValueError, match=r"^d must be a positive, finite duration, got "):
                duration(bad, "d")
        for wrong in (True, "1", None):
            with pytest.raises(TypeError, match=r"^d must be a timedelta or a number of seconds, got "):
                duration(wrong, "d")

    def test_finite_float(self) -> None:
        assert finite_float(-2) == -2.0
        for bad in (HUGE, -HUGE, math.inf, math.nan, True, "1", None):
            assert finite_float(bad) is None
