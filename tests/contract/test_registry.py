"""The contract suite runs over every model there is: a new one cannot be left out of it."""

from __future__ import annotations

import inspect
from typing import Any

import lethe.decay
from lethe.decay import BUILTINS

from .._support import MODELS, Model, parts

#: Exported names that are not decay functions.
NOT_MODELS = {"DecayFunction", "Grouped", "ChildStates", "Picked"}


def exported_models() -> dict[str, Any]:
    """Every decay class and factory ``lethe.decay`` exports."""
    out: dict[str, Any] = {}
    for name in lethe.decay.__all__:
        obj = getattr(lethe.decay, name)
        if name in NOT_MODELS or not callable(obj):
            continue
        if inspect.isclass(obj) or name == "priority_blend":
            out[name] = obj
    return out


def test_every_registered_name_has_a_model() -> None:
    covered = {m.covers for m in MODELS}
    missing = sorted(set(BUILTINS) - covered)
    assert not missing, f"add these registry names to tests/_support.MODELS: {missing}"


def test_every_registered_name_is_built_by_name() -> None:
    """Each name has a model built the way ``Memory(decay_fn=name)`` builds it."""
    by_name = {m.id for m in MODELS}
    assert set(BUILTINS) <= by_name


def test_every_exported_decay_class_and_factory_has_a_model() -> None:
    built = {type(fn) for m in MODELS for fn in parts(m.make())}
    covers = {m.covers for m in MODELS}
    missing = []
    for name, obj in exported_models().items():
        if inspect.isclass(obj):
            if obj not in built:
                missing.append(name)
        elif name not in covers:
            missing.append(name)
    assert not missing, f"add models for these exports to tests/_support.MODELS: {missing}"
    assert "priority_blend" in covers


def test_the_exports_checked_are_the_ones_expected() -> None:
    """The guard above sees the decay classes, not nothing (a broken filter would pass it)."""
    names = set(exported_models())
    assert {"Exponential", "FSRS", "Product", "Blend", "ByMetadata", "priority_blend", "Importance"} <= names
    assert all(n not in names for n in NOT_MODELS)


def test_a_plain_callable_and_an_importance_including_model_are_covered() -> None:
    assert any(not m.builtin and inspect.isfunction(m.make()) for m in MODELS)
    assert any(getattr(m.make(), "includes_importance", False) for m in MODELS)
    assert any(not getattr(m.make(), "includes_importance", False) for m in MODELS if m.builtin)


def test_model_ids_are_unique() -> None:
    ids = [m.id for m in MODELS]
    assert len(ids) == len(set(ids))
    assert all(isinstance(m, Model) for m in MODELS)
