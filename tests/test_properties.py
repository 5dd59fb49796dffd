"""Property tests of the persistent map and numeric edges.

The memory-level invariants (capacity, eviction of the lowest score, ranking, old versions
unchanged, scores never rising without a rehearsal) run over every decay model in
``tests/contract/test_memory.py``.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lethe import Memory
from lethe._core.map import PersistentMap

from ._support import Collide, fake_clock


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 40), st.integers()), max_size=200))
def test_persistent_map_matches_a_dict(ops: list[tuple[bool, int, int]]) -> None:
    m: PersistentMap[int, int] = PersistentMap()
    model: dict[int, int] = {}
    versions = []
    for is_set, k, v in ops:
        versions.append((m, dict(model)))
        if is_set:
            m = m.set(k, v)
            model[k] = v
        else:
            m = m.discard(k)
            model.pop(k, None)
        assert len(m) == len(model)
        assert dict(m.items()) == model
    for old, snap in versions:
        assert dict(old.items()) == snap
        assert len(old) == len(snap)


@given(st.sets(st.integers(), min_size=0, max_size=300), st.data())
def test_persistent_map_grows_and_shrinks(keys_: set[int], data: st.DataObject) -> None:
    m: PersistentMap[int, int] = PersistentMap()
    for k in keys_:
        m = m.add(k, -k)
    assert sorted(m.keys()) == sorted(keys_)
    assert all(m[k] == -k and k in m for k in keys_)
    doomed = data.draw(st.lists(st.sampled_from(sorted(keys_)), unique=True) if keys_ else st.just([]))
    for k in doomed:
        m = m.delete(k)
        assert k not in m
        assert m.get(k) is None
    assert sorted(m.keys()) == sorted(keys_ - set(doomed))
    with pytest.raises(KeyError):
        m.delete(10**30)


def test_persistent_map_survives_hash_collisions() -> None:
    m: PersistentMap[Collide, int] = PersistentMap()
    for i in range(100):
        m = m.set(Collide(i), i)
    assert len(m) == 100
    assert all(m[Collide(i)] == i for i in range(100))
    for i in range(0, 100, 2):
        m = m.delete(Collide(i))
    assert sorted(v for v in m.values()) == list(range(1, 100, 2))


def test_small_memories_stay_small() -> None:
    import sys

    m: PersistentMap[int, int] = PersistentMap()
    assert sys.getsizeof(m._root) < 100
    for i in range(10):
        m = m.set(i, i)
    assert type(m._root) is dict
    assert sys.getsizeof(m._root) < 1024


def test_large_scores_clamp_and_tiny_half_lives_stay_finite() -> None:
    clock = fake_clock()
    mem: Memory[Any, Any] = Memory(half_life=1e-9, clock_fn=clock).put(1, key=1, importance=1e300)
    clock.advance(timedelta(days=30_000))
    assert mem.score(1) == 0.0
    mem = mem.put(2, key=2, importance=1e300)
    assert mem.score(2) == 1.0
    assert not any(math.isnan(s) for s in mem.score_map().values())
