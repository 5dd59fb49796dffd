"""Decay functions: how an entry's relevance falls with time and rises with use.

Every decay function maps an entry and a moment to a raw score in 0..1 that
:class:`~lethe.Memory` multiplies by the entry's importance.  Pick one by name
(``Memory(decay_fn="actr")``), pass an instance with your parameters, or pass
any callable ``(entry, now) -> float``.  See ``docs/decay-models.md`` for
every model's formula and source.

>>> from lethe import Memory
>>> from lethe.decay import ACTR
>>> Memory(decay_fn=ACTR(half_life=600)).decay_fn
ACTR(half_life=600.0)
"""

from lethe.decay._classic import ACTR, AccessWeighted, Exponential
from lethe.decay._combinators import (
    AccessFrequency,
    Blend,
    ByMetadata,
    ChildStates,
    Importance,
    Picked,
    Product,
    Recency,
    priority_blend,
)
from lethe.decay._field import AdaptiveDecay, EbbinghausLTP, PowerLaw, SoftFloor, StabilityExponential
from lethe.decay._fsrs import FSRS, FSRS6_DEFAULT_PARAMETERS, FSRS6_PARAMETER_BOUNDS
from lethe.decay._protocol import DecayFunction, Grouped
from lethe.decay._registry import BUILTINS, by_name, from_dict

__all__ = [
    "ACTR",
    "BUILTINS",
    "FSRS",
    "FSRS6_DEFAULT_PARAMETERS",
    "FSRS6_PARAMETER_BOUNDS",
    "AccessFrequency",
    "AccessWeighted",
    "AdaptiveDecay",
    "Blend",
    "ByMetadata",
    "ChildStates",
    "DecayFunction",
    "EbbinghausLTP",
    "Exponential",
    "Grouped",
    "Importance",
    "Picked",
    "PowerLaw",
    "Product",
    "Recency",
    "SoftFloor",
    "StabilityExponential",
    "by_name",
    "from_dict",
    "priority_blend",
]
