"""Built-in decay functions by name: the only names ``Memory.from_dict`` will resolve."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from lethe.decay._classic import ACTR, AccessWeighted, Exponential

__all__ = ["BUILTINS", "by_name", "from_dict"]

_Factory = Callable[..., Any]

#: Names accepted by ``Memory(decay_fn=...)`` and ``lethe curves``, mapped to their classes.
BUILTINS: Mapping[str, _Factory] = MappingProxyType(
    {
        "exponential": Exponential,
        "access_weighted": AccessWeighted,
        "actr": ACTR,
        "combined": ACTR,
    }
)


def by_name(name: str, half_life: timedelta | float) -> Any:
    """The built-in decay function called ``name``, built with ``half_life``.

    Raises:
        ValueError: ``name`` is not a built-in (the message lists them).

    >>> by_name("exponential", 60)
    Exponential(half_life=60.0)
    """
    try:
        factory = BUILTINS[name]
    except (KeyError, TypeError):
        raise ValueError(f"decay_fn: unknown decay function {name!r}; choose one of {sorted(BUILTINS)}") from None
    return factory(half_life=half_life)


def from_dict(data: object) -> Any:
    """Rebuild a built-in decay function from its ``to_dict()`` output.

    Only names in :data:`BUILTINS` are looked up: nothing named in ``data`` is
    imported or called by name.

    Raises:
        ValueError, TypeError: ``data`` is not a valid description (naming the field).

    >>> from_dict({"name": "actr", "half_life": 60.0, "decay": 0.5})
    ACTR(half_life=60.0, decay=0.5, noise=0.25, history=10)
    """
    if not isinstance(data, dict):
        raise ValueError(f"decay_fn must be an object, got {type(data).__name__}")
    params = dict(data)
    name = params.pop("name", None)
    if not isinstance(name, str) or name not in BUILTINS:
        raise ValueError(f"decay_fn.name: unknown decay function {name!r}; choose one of {sorted(BUILTINS)}")
    try:
        return BUILTINS[name](**params)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"decay_fn: bad parameters for {name!r}: {exc}") from None
