"""How a memory ranks its entries: a family of strategies, one chosen when the memory is built.

Every ranking answers the queries of :class:`Ranking` exactly as a full sort
of the scores would; they differ in what they index, which follows from what
the decay function declares (:func:`choose`, from the table in ``_choose``):

* ``Order`` (``_single_rate``): one ``decay_rate`` for every entry, so one
  ranking that never changes, kept in one B+tree (``Exponential``);
* ``Groups`` (``_grouped``): a ranking fixed within groups (``rank_key``),
  one B+tree per group merged by score (``PowerLaw``, ``AccessWeighted``...);
* ``Bounds`` (``_bounded``): scores between time-invariant bounds, searched
  by threshold (ACT-R);
* ``Scan`` (``_scan``): nothing indexed, every entry scored.

``Groups`` and ``Bounds`` share one skeleton (``_merged``): the pinned
entries, a store per group, the changes and the cut queries.  Internal: not
part of lethe's API.
"""

from lethe.ranking._bounded import Bounds
from lethe.ranking._choose import CHOICES, choose
from lethe.ranking._grouped import Groups
from lethe.ranking._merged import MAX_GROUPS
from lethe.ranking._protocol import Ranking, rank
from lethe.ranking._scan import SCAN, Scan
from lethe.ranking._single_rate import Order

__all__ = [
    "CHOICES",
    "MAX_GROUPS",
    "SCAN",
    "Bounds",
    "Groups",
    "Order",
    "Ranking",
    "Scan",
    "choose",
    "rank",
]
