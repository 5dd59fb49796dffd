"""The rankings are one family, chosen in one place.

Every module of ``lethe.ranking`` but its shared parts holds one ranking, and
the choice table (``lethe.ranking.CHOICES``) builds each of them; a memory's
ranking comes from that table alone, in its order, from what the adapter
found the decay function declares (each capability on its own).
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
from datetime import datetime
from typing import Any

import pytest

import lethe.ranking
from lethe import Entry, Memory
from lethe.decay import ACTR, BUILTINS, Exponential, PowerLaw
from lethe.decay._scorer import make_scorer
from lethe.ranking import CHOICES, Bounds, Groups, Order, Ranking, Scan, choose

#: The modules that hold what the rankings share, not a ranking.
SHARED = {"_choose", "_merged", "_protocol"}
#: What a ranking answers to.
MEMBERS = {name for name in vars(Ranking) if not name.startswith("_")}


def _rankings() -> dict[str, type]:
    """Each module of the package that defines a ranking (a class with every member of
    ``Ranking``, no subclass of its own: not a skeleton), and that ranking."""
    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(lethe.ranking.__path__):
        module = importlib.import_module(f"lethe.ranking.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or cls is Ranking or cls.__subclasses__():
                continue
            if MEMBERS.issubset(dir(cls)):
                assert info.name not in found, f"{info.name} defines two rankings"
                found[info.name] = cls
    return found


def _plain(entry: Entry[Any, Any], now: datetime) -> float:
    return 0.5


#: A decay function allowing each row of the table, in the table's order.
SAMPLES = (Exponential(60.0), PowerLaw(60.0), ACTR(), _plain)


def test_every_ranking_module_has_its_row_in_the_table() -> None:
    modules = {info.name for info in pkgutil.iter_modules(lethe.ranking.__path__)}
    rankings = _rankings()
    assert set(rankings) == modules - SHARED
    assert len(CHOICES) == len(SAMPLES) == len(rankings)
    built = []
    for row, fn in enumerate(SAMPLES):
        scorer = make_scorer(fn, 60.0)
        allows = [i for i, (test, _) in enumerate(CHOICES) if test(scorer)]
        assert allows[0] == row, (fn, allows)  # each sample is the row's own, not an earlier one's
        built.append(type(CHOICES[row][1](scorer)))
    assert built == [Order, Groups, Bounds, Scan]
    assert set(built) == set(rankings.values())


#: The ranking each built-in model gets, from what it declares.
EXPECTED: dict[str, type] = {
    "exponential": Order,  # decay_rate
    "access_weighted": Groups,  # rank_key
    "power_law": Groups,
    "soft_floor": Groups,
    "stability_exponential": Groups,
    "recency": Groups,
    "actr": Bounds,  # score bounds
    "combined": Bounds,
    "ebbinghaus_ltp": Scan,
    "adaptive": Scan,
    "fsrs": Scan,
}


def test_every_built_in_is_expected() -> None:
    assert set(BUILTINS) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_built_in_gets_the_ranking_of_its_capabilities(name: str) -> None:
    mem: Memory[Any, Any] = Memory(decay_fn=name)
    assert type(mem._ranking) is EXPECTED[name]
    assert type(choose(mem._config.scorer)) is EXPECTED[name]


def test_a_plain_callable_is_scanned() -> None:
    assert isinstance(Memory(decay_fn=_plain)._ranking, Scan)


class _RatedAndGrouped:
    """Declares one rate for every entry and a grouping too: both true of its score."""

    decay_rate = math.log(2.0) / 60.0

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        return math.exp(-self.decay_rate * (now - entry.last_accessed_at).total_seconds())

    def rank_key(self, entry: Entry[Any, Any]) -> tuple[None, float]:
        return None, entry.accessed_us


def test_a_function_allowing_several_rankings_gets_the_first_in_the_table() -> None:
    mem: Memory[Any, Any] = Memory(decay_fn=_RatedAndGrouped())
    scorer = mem._config.scorer
    # The adapter reports each capability; the order of preference is the table's alone.
    assert scorer.rate_us is not None
    assert scorer.rank_key is not None
    assert isinstance(mem._ranking, Order)
    grouped_first = (CHOICES[1], CHOICES[0], *CHOICES[2:])
    assert isinstance(next(build(scorer) for allows, build in grouped_first if allows(scorer)), Groups)
