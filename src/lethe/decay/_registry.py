"""Built-in decay functions by name: the only names ``Memory.from_dict`` will resolve."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from lethe._core.reprs import short_repr
from lethe._core.validate import duration
from lethe.decay._base import Model
from lethe.decay._classic import ACTR, AccessWeighted, Exponential
from lethe.decay._combinators import AccessFrequency, Blend, ByMetadata, Importance, Product, Recency
from lethe.decay._field import _BIG, AdaptiveDecay, EbbinghausLTP, PowerLaw, SoftFloor, StabilityExponential
from lethe.decay._fsrs import FSRS

__all__ = ["BUILTINS", "by_name", "from_dict"]

_Factory = Callable[..., Any]
_LN2 = math.log(2.0)

#: Names accepted by ``Memory(decay_fn=...)`` and ``lethe curves``, mapped to their classes.
BUILTINS: Mapping[str, _Factory] = MappingProxyType(
    {
        "exponential": Exponential,
        "access_weighted": AccessWeighted,
        "actr": ACTR,
        "combined": ACTR,
        "power_law": PowerLaw,
        "soft_floor": SoftFloor,
        "ebbinghaus_ltp": EbbinghausLTP,
        "stability_exponential": StabilityExponential,
        "adaptive": AdaptiveDecay,
        "fsrs": FSRS,
        "recency": Recency,
    }
)

# Components that only make sense inside a combinator: rebuilt by from_dict, not offered by name.
_PARTS: Mapping[str, _Factory] = MappingProxyType({"importance": Importance, "access_frequency": AccessFrequency})


def _ebbinghaus(half_life: timedelta | float) -> EbbinghausLTP:
    return EbbinghausLTP(base_tau=duration(half_life, "half_life") / _LN2)


def _stability(half_life: timedelta | float) -> StabilityExponential:
    return StabilityExponential(half_life=duration(half_life, "half_life") / _LN2)


def _adaptive(half_life: timedelta | float) -> AdaptiveDecay:
    seconds = duration(half_life, "half_life")
    # A fresh entry (N = 1: creation counts as an access; default type) halves after half_life:
    # base_rate * hours = ln 2 * stability, stability = 1 + 0.3 * ln(1 + N).
    halving = _LN2 * (1.0 + 0.3 * _LN2)
    base_rate = halving / (seconds / 3600.0)
    if not base_rate <= _BIG:  # AdaptiveDecay's bound on base_rate
        raise ValueError(
            f"half_life: {seconds:.6g} s is too short for 'adaptive', whose rate is per hour "
            f"(base_rate <= {_BIG:g}); the shortest is {halving / _BIG * 3600.0:.6g} s"
        )
    return AdaptiveDecay(base_rate=base_rate)


def _fsrs(half_life: timedelta | float) -> FSRS:
    duration(half_life, "half_life")
    return FSRS()


# Names whose time parameter is not a half-life: how by_name builds them from one.
_FROM_HALF_LIFE: Mapping[str, Callable[[timedelta | float], Any]] = MappingProxyType(
    {
        "ebbinghaus_ltp": _ebbinghaus,
        "stability_exponential": _stability,
        "adaptive": _adaptive,
        "fsrs": _fsrs,
    }
)


def by_name(name: str, half_life: timedelta | float) -> Any:
    """The built-in decay function called ``name``, built with ``half_life``.

    Every name gives a once-inserted, untouched entry of importance 1 a score
    of 0.5 after ``half_life``, except ``"fsrs"``: FSRS-6 has its own
    published time scale, so ``half_life`` is ignored (see ``FSRS.half_life``).
    ``"ebbinghaus_ltp"`` and ``"stability_exponential"`` take a time constant,
    built as ``half_life / ln 2``; ``"adaptive"`` gets the ``base_rate`` that
    halves a fresh entry of the default type in ``half_life``.

    Raises:
        ValueError: ``name`` is not a built-in (the message lists them).

    >>> by_name("exponential", 60)
    Exponential(half_life=60.0)
    """
    try:
        factory = BUILTINS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"decay_fn: unknown decay function {short_repr(name)}; choose one of {sorted(BUILTINS)}"
        ) from None
    special = _FROM_HALF_LIFE.get(name)
    if special is not None:
        return special(half_life)
    return factory(half_life=half_life)


# Every class from_dict rebuilds, by the name its to_dict writes.
_CLASSES: Mapping[str, type[Model]] = MappingProxyType(
    {
        cls.name: cls
        for cls in (
            *(ACTR, AccessWeighted, Exponential, PowerLaw, SoftFloor, EbbinghausLTP, StabilityExponential),
            *(AdaptiveDecay, FSRS, Recency, Importance, AccessFrequency, Product, Blend, ByMetadata),
        )
    }
)


#: Names ``Memory(decay_fn=...)`` takes that ``to_dict()`` never writes, with the name it writes.
_ALIASES: Mapping[str, str] = MappingProxyType(
    {name: cls.name for cls in _CLASSES.values() for name, f in BUILTINS.items() if f is cls and name != cls.name}
)


def _build(data: object, where: str, depth: int) -> Any:
    if depth > 32:
        raise ValueError(f"{where}: combinators nested too deeply")
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be an object, got {type(data).__name__}")
    params = dict(data)
    name = params.pop("name", None)
    if "name" not in data:
        raise ValueError(f"{where}.name: missing")
    cls = _CLASSES.get(name) if isinstance(name, str) else None
    if cls is None:
        written = _ALIASES.get(name) if isinstance(name, str) else None
        if written is not None:
            raise ValueError(
                f"{where}.name: {short_repr(name)} is another name for {written!r} in "
                f"Memory(decay_fn=...); a document names it {written!r}"
            )
        raise ValueError(f"{where}.name: unknown decay function {short_repr(name)}; choose one of {sorted(_CLASSES)}")
    return cls._from_json(params, where, lambda part, at: _build(part, at, depth + 1))


def from_dict(data: object) -> Any:
    """Rebuild a built-in decay function (or combinator of built-ins) from its ``to_dict()`` output.

    Every level must hold exactly the fields its ``to_dict()`` writes: a
    missing parameter is not replaced by a default, and an extra one is not
    ignored.  Only the names ``to_dict()`` writes are recognized: the built-ins'
    (those of :data:`BUILTINS` but the alias ``"combined"``, written ``"actr"``),
    the priority components (``importance``, ``access_frequency``) and the
    combinators (``product``, ``blend``, ``by_metadata``, rebuilt recursively):
    nothing named in ``data`` is imported or called by name.

    Runtime complexity: O(size of ``data``).

    Raises:
        ValueError, TypeError: ``data`` is not a valid description (the message
            names the field by its path, e.g. ``decay_fn.half_life: missing``
            or ``decay_fn.functions[0].foo: unknown field``).

    >>> from_dict({"name": "actr", "half_life": 60.0, "decay": 0.5, "noise": 0.25, "threshold": None, "history": 10})
    ACTR(half_life=60.0)
    >>> from_dict({"name": "actr", "half_life": 60.0})
    Traceback (most recent call last):
    ...
    ValueError: decay_fn.decay: missing
    >>> from_dict({"name": "product", "functions": [{"name": "exponential", "half_life": 60.0}]})
    Product(Exponential(half_life=60.0))
    """
    return _build(data, "decay_fn", 0)

