"""Which ranking a memory gets: the one place the order of preference between rankings is written.

The adapter (:class:`~lethe.decay._adapter.Adapter`) finds what a decay
function declares, each capability on its own; :data:`CHOICES` says which
ranking each capability allows, most specific first, and :func:`choose` takes
the first row whose capability the scorer has.  A new ranking is its module
in this package and one row here.
"""

from __future__ import annotations

from collections.abc import Callable

from lethe.decay._scorer import Scorer
from lethe.ranking._bounded import Bounds
from lethe.ranking._grouped import Groups
from lethe.ranking._protocol import Ranking
from lethe.ranking._scan import SCAN
from lethe.ranking._single_rate import Order

#: ``(capability, the ranking of an empty memory)``, in order of preference.
CHOICES: tuple[tuple[Callable[[Scorer], bool], Callable[[Scorer], Ranking]], ...] = (
    (lambda scorer: scorer.rate_us is not None, Order),  # one rate for every entry: one fixed order
    (lambda scorer: scorer.rank_key is not None, Groups),  # fixed within groups
    (lambda scorer: scorer.bounds is not None, Bounds),  # between time-invariant bounds
    (lambda scorer: True, lambda scorer: SCAN),  # anything: every query scores every entry
)


def choose(scorer: Scorer) -> Ranking:
    """The ranking of an empty memory scoring with ``scorer``: the first of :data:`CHOICES` it allows."""
    return next(build(scorer) for allows, build in CHOICES if allows(scorer))
