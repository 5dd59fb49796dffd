"""Decay functions: how an entry's relevance falls with time and rises with use.

Every decay function maps an entry and a moment to a raw score in 0..1 that
:class:`~lethe.Memory` multiplies by the entry's importance.  Pick one by name
(``Memory(decay_fn="actr")``), pass an instance with your parameters, or pass
any callable ``(entry, now) -> float``.

>>> from lethe import Memory
>>> from lethe.decay import ACTR
>>> Memory(decay_fn=ACTR(half_life=600)).decay_fn
ACTR(half_life=600.0, decay=0.5, noise=0.25, history=10)
"""

from lethe.decay._classic import ACTR, AccessWeighted, Exponential
from lethe.decay._protocol import DecayFunction
from lethe.decay._registry import BUILTINS, by_name, from_dict

__all__ = [
    "ACTR",
    "BUILTINS",
    "AccessWeighted",
    "DecayFunction",
    "Exponential",
    "by_name",
    "from_dict",
]
