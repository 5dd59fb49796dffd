"""Every model's parameters are declared once; repr, equality, hashing, to_dict and from_dict agree.

For every class the registry rebuilds (``lethe.decay._registry``), built with
one parameter changed at a time:

* the repr names that parameter (and only parameters that differ from their
  defaults), reads back (``eval``) as an equal model, and differs from the
  repr of every other variant: equal reprs if and only if equal models;
* equal models hash equal; ``from_dict(to_dict())`` and pickling round-trip;
* the declaration, the ``__init__`` signature and ``to_dict``'s fields agree.

And the one adapter: Memory and the combinators refuse the same bad decay
functions and report a bad result with one message.
"""

from __future__ import annotations

import ast
import inspect
import math
import pickle
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import lethe.decay
from lethe import Entry, ManualClock, Memory
from lethe.decay import (
    ACTR,
    FSRS,
    FSRS6_DEFAULT_PARAMETERS,
    AccessFrequency,
    AdaptiveDecay,
    Blend,
    ByMetadata,
    Exponential,
    Importance,
    PowerLaw,
    Product,
    from_dict,
)
from lethe.decay._base import Model
from lethe.decay._protocol import (
    DeclaresRate,
    Forecasts,
    IncludesImportance,
    KeepsState,
    MergesStates,
    Rehearses,
    Serializable,
)
from lethe.decay._registry import _CLASSES

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
CLASSES = sorted(set(_CLASSES.values()), key=lambda c: c.__name__)
NAMESPACE: dict[str, Any] = {name: getattr(lethe.decay, name) for name in lethe.decay.__all__}

#: A legal value other than the default, for every parameter of every class.
OTHER: dict[str, Any] = {
    "half_life": 120.0,
    "boost": 2.5,
    "decay": 0.3,
    "noise": 0.5,
    "threshold": -2.0,
    "history": 3,
    "base_tau": 1000.0,
    "ltp_multiplier": 2.0,
    "alpha": 0.7,
    "beta": 0.9,
    "emotion_key": "mood",
    "growth": 3.0,
    "type_key": "kind",
    "connections_key": "links",
    "channels_key": "via",
    "base_rate": 0.01,
    "min_retention": 0.1,
    "access_stability_k": 0.6,
    "relation_resistance_k": 0.2,
    "channel_diversity_k": 0.4,
    "recency_boost": 2.0,
    "recency_age_threshold": 24.0,
    "recency_access_threshold": 2.0,
    "type_multipliers": {"fact": 0.1},
    "default_multiplier": 0.5,
    "exponent": 2.0,
    "floor_max": 0.5,
    "midpoint": 0.2,
    "steepness": 3.0,
    "saturation": 7.0,
    "parameters": [*FSRS6_DEFAULT_PARAMETERS[:20], 0.3],
    "key": "other",
    "choices": {"fact": PowerLaw(60)},
    "default": Exponential(60),
    "weights": [(Exponential(60), 1.0), (PowerLaw(60), 3.0)],
}
#: The arguments a class needs before any is changed (required parameters).
BASE: dict[type, dict[str, Any]] = {
    Blend: {"weights": [(Exponential(), 1.0)]},
    ByMetadata: {"key": "kind", "choices": {}},
}


def build(cls: type, **changes: Any) -> Any:
    if cls is Product:
        return Product(*changes.get("functions", (Exponential(),)))
    return cls(**{**BASE.get(cls, {}), **changes})


def variants(cls: type[Model]) -> list[tuple[str, Any]]:
    """``(parameter, model)`` for the base model and one model per changed parameter."""
    out: list[tuple[str, Any]] = [("", build(cls))]
    for param in cls.params:
        if param.name == "functions":
            out.append(("functions", build(cls, functions=(Exponential(60), PowerLaw(60)))))
        else:
            out.append((param.name, build(cls, **{param.name: OTHER[param.name]})))
    return out


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
class TestEveryModel:
    def test_the_declaration_is_the_signature_and_to_dict(self, cls: type[Model]) -> None:
        names = list(inspect.signature(cls).parameters)
        assert [p.name for p in cls.params] == names
        assert set(build(cls).to_dict()) == {"name", *names}
        assert cls._fields() == frozenset(names)

    def test_reprs_are_equal_exactly_when_models_are(self, cls: type[Model]) -> None:
        models = variants(cls)
        for i, (_, a) in enumerate(models):
            for j, (_, b) in enumerate(models):
                assert (repr(a) == repr(b)) == (a == b) == (i == j), (repr(a), repr(b))

    def test_a_changed_parameter_is_shown_and_the_repr_reads_back(self, cls: type[Model]) -> None:
        for name, model in variants(cls):
            text = repr(model)
            if name and name != "functions":
                assert f"{name}=" in text
            again = eval(text, NAMESPACE)
            assert again == model
            assert repr(again) == text
            assert hash(again) == hash(model)

    def test_defaults_are_not_shown(self, cls: type[Model]) -> None:
        if cls in BASE or cls is Product:
            return
        assert repr(cls()) == f"{cls.__name__}()"

    def test_to_dict_from_dict_and_pickle_round_trip(self, cls: type[Model]) -> None:
        for _, model in variants(cls):
            assert from_dict(model.to_dict()) == model
            assert pickle.loads(pickle.dumps(model)) == model
            assert hash(pickle.loads(pickle.dumps(model))) == hash(model)

    def test_equal_models_hash_equal(self, cls: type[Model]) -> None:
        for (_, a), (_, b) in zip(variants(cls), variants(cls)):
            assert a == b
            assert hash(a) == hash(b)

    def test_replace_changes_one_parameter(self, cls: type[Model]) -> None:
        base = build(cls)
        for name, model in variants(cls)[1:]:
            assert base.__replace__(**{name: getattr(model, name)}) == model
            assert model.__replace__() == model
        with pytest.raises(TypeError, match="no parameter 'nope'"):
            base.__replace__(nope=1)

    def test_frozen(self, cls: type[Model]) -> None:
        model = build(cls)
        for name in [p.name for p in cls.params] or ["anything"]:
            with pytest.raises(AttributeError):
                setattr(model, name, 1)
            with pytest.raises(AttributeError):
                delattr(model, name)


def test_the_reprs_that_had_drifted() -> None:
    assert repr(ACTR()) == "ACTR()"
    assert repr(ACTR(threshold=-2.0)) == "ACTR(threshold=-2.0)"
    assert ACTR() != ACTR(threshold=-2.0)
    every = {name: OTHER[name] for name in (p.name for p in AdaptiveDecay.params)}
    text = repr(AdaptiveDecay(**every))
    assert all(f"{name}=" in text for name in every)
    assert eval(text, NAMESPACE) == AdaptiveDecay(**every)
    assert repr(FSRS()) == "FSRS()"
    assert repr(Importance()) == "Importance()"


def test_a_model_with_a_custom_part_is_custom_as_a_whole() -> None:
    def custom(entry: Entry[Any, Any], now: datetime) -> float:
        return 0.5

    for fn in (
        Product(Exponential(), custom),
        Product(Product(custom)),
        Blend({custom: 1}),
        ByMetadata("k", {}, custom),
    ):
        assert fn.to_dict()["name"] == "custom"


class TestOneAdapter:
    """Memory and the combinators call a decay function the same way, with the same messages."""

    @pytest.mark.parametrize(
        ("bad", "message"),
        [
            (Exponential, r"pass an instance: Exponential\(\), not the class"),
            (3, r"must be .*an object with score\(entry, now\), or a callable \(entry, now\) -> float; got int"),
            (lambda entry: 1.0, r"must accept \(entry, now\)"),
        ],
    )
    def test_bad_functions_are_refused_alike(self, bad: Any, message: str) -> None:
        with pytest.raises(TypeError, match=message) as info:
            Memory(decay_fn=bad)
        assert str(info.value).startswith("decay_fn")
        for build_ in (lambda f: Product(f), lambda f: Blend({f: 1}), lambda f: ByMetadata("k", {"x": f})):
            with pytest.raises(TypeError, match=message):
                build_(bad)

    @pytest.mark.parametrize("value", [math.nan, math.inf, "0.5", 10**400])
    def test_a_bad_result_is_reported_with_one_message(self, value: Any) -> None:
        def custom(entry: Entry[Any, Any], now: datetime) -> Any:
            return value

        messages = []
        for fn in (custom, Product(custom), Blend({custom: 1}), ByMetadata("k", {}, custom)):
            mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=ManualClock(T0)).put("v", key="the key")
            with pytest.raises(ValueError, match="for key 'the key'") as info:
                mem.scored()
            messages.append(str(info.value).split(" returned ", 1)[1])
        assert len(set(messages)) == 1

    def test_protocols(self) -> None:
        for protocol in (Rehearses, KeepsState, MergesStates):
            assert isinstance(ACTR(), protocol)
        assert not isinstance(Exponential(), Rehearses)
        assert isinstance(Exponential(), DeclaresRate)
        assert isinstance(Exponential(), Forecasts)
        assert isinstance(AccessFrequency(), IncludesImportance)
        assert all(isinstance(build(cls), Serializable) for cls in CLASSES)

    def test_user_parts_are_checked_and_built_ins_are_fast(self) -> None:
        clock = ManualClock(T0)
        fn = Product(Exponential(3600), lambda entry, now: 0.5)
        mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock).put("v", key="k")
        clock.advance(timedelta(hours=1))
        assert mem.score("k") == 0.25
        assert [part.is_builtin for part in fn._parts] == [True, False]


def test_optional_members_are_looked_up_in_one_module() -> None:
    """No ``getattr`` probe for a decay function's members outside the adapter (the CLI aside)."""
    members = {
        "_raw", "_rehearse", "_values", "decay_rate", "dump_state", "half_life", "includes_importance",
        "load_state", "merge_states", "name", "rehearse", "score", "time_until", "to_dict",
    }  # fmt: skip
    allowed = {"decay/_adapter.py", "_core/validate.py"}
    src = Path(lethe.decay.__file__).parent.parent
    found = []
    for path in src.rglob("*.py"):
        rel = path.relative_to(src).as_posix()
        if rel in allowed or rel.startswith("_cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in {"getattr", "hasattr"}
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in members
            ):
                found.append(f"{rel}:{node.lineno}")
    assert found == []
