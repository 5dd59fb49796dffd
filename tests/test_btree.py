"""The order index's persistent B+tree against a sorted-list model."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lethe._core.btree import Tree


def _model_ops(ops: list[tuple[bool, float]], every: int = 1) -> None:
    tree = Tree()
    model: list[tuple[float, int, str]] = []
    versions: list[tuple[Tree, list[tuple[float, int, str]]]] = []
    for seq, (insert, key) in enumerate(ops):
        if insert or not model:
            item = (key, seq, f"v{seq}")
            tree, before, after = tree.insert_beside(item)
            model = sorted([*model, item])
            at = model.index(item)
            assert before in (None, model[at - 1] if at else None)  # None: first in its leaf
            assert after == (model[at + 1] if at + 1 < len(model) else None)
        else:
            victim = model[int(abs(key) * 7919) % len(model)]
            tree = tree.delete((victim[0], victim[1]))
            model = [i for i in model if i is not victim]
        if seq % every == 0:
            versions.append((tree, model))
        assert len(tree) == len(model)
    for t, m in versions:  # every older version answers as when it was made
        assert t.to_list() == m
        assert list(t.descending()) == m[::-1]
        assert t.first() == (m[0] if m else None)
        for bound in (-1e9, 0.0, 0.5, 1e9):
            for lo in (-2e9, -0.5, 0.25, bound):
                inside = [i for i in m if (lo, -1) <= (i[0], i[1]) < (bound, -1)]
                expected = min(inside, key=lambda i: i[1]) if inside else None
                assert t.earliest((lo, -1), (bound, -1)) == expected
            assert list(t.ascending_from((bound, -1))) == [i for i in m if i[0] >= bound]
            assert t.at_least((bound, -1)) == [i for i in m if i[0] >= bound]
        # Seeks past a run of equal keys, both ways, at every key the tree holds.
        for key in {i[0] for i in m[:: max(1, len(m) // 7)]} | {-1e9, 1e9}:
            for seq in (-1, float("inf")):
                probe = (key, seq)
                above = [i for i in m if (i[0], i[1]) >= probe]
                assert t.ceiling(probe) == (above[0] if above else None)
                assert list(t.descending_below(probe)) == [i for i in m if (i[0], i[1]) < probe][::-1]


@given(st.lists(st.tuples(st.booleans(), st.floats(-1, 1, allow_nan=False)), max_size=300))
def test_tree_matches_a_sorted_list(ops: list[tuple[bool, float]]) -> None:
    _model_ops(ops)


def test_large_tree_grows_and_shrinks_back() -> None:
    rng = random.Random(7)
    ops = [(True, rng.choice([0.0, 0.25, rng.random()])) for _ in range(5000)]
    ops += [(False, rng.random()) for _ in range(4990)]
    _model_ops(ops, every=250)


def test_delete_of_a_missing_item_raises_key_error() -> None:
    tree = Tree([(1.0, 0, "a")])
    for probe in ((1.0, 1), (2.0, 0), (0.0, 0)):
        with pytest.raises(KeyError) as info:
            tree.delete(probe)
        assert info.value.args == (probe,)
    with pytest.raises(KeyError):
        Tree().delete((1.0, 0))


def test_bulk_load_equals_inserts() -> None:
    items = sorted((float(i % 13), i, i) for i in range(3000))
    bulk = Tree(items)
    assert bulk.to_list() == items
    assert bulk.earliest((-1.0, -1), (5.0, -1)) == (0.0, 0, 0)
    assert bulk.earliest((5.0, -1), (6.0, -1)) == (5.0, 5, 5)
    assert len(bulk.delete((0.0, 0))) == 2999
    # Runs of 230 equal keys, skipped in one seek each way.
    assert bulk.ceiling((5.0, float("inf"))) == (6.0, 6, 6)
    assert bulk.ceiling((12.0, float("inf"))) is None
    assert next(bulk.descending_below((5.0, -1))) == (4.0, 2994, 2994)
    assert list(bulk.descending_below((0.0, -1))) == []


def _check_shape(tree: Tree) -> None:
    """Every node within its capacity, and each branch's probes and seqs those of its children."""
    from lethe._core.btree import _MAX, _MIN, _high, _low, _parts

    def walk(node: object, height: int, root: bool) -> None:
        if not height:
            assert 0 < len(node) <= _MAX  # type: ignore[arg-type]
            assert root or len(node) >= _MIN  # type: ignore[arg-type]
            return
        assert len(node) % 3 == 0  # type: ignore[arg-type]
        children, highs, lows = _parts(node)  # type: ignore[arg-type]
        assert 0 < len(children) <= _MAX
        assert highs == [_high(c, height == 1) for c in children]
        assert lows == [_low(c, height == 1) for c in children]
        for child in children:
            walk(child, height - 1, False)

    if tree._root is not None:
        walk(tree._root, tree._height, True)


@given(
    st.integers(0, 2000),
    st.lists(st.floats(-1, 1, allow_nan=False), max_size=600),
    st.data(),
)
def test_edited_equals_single_writes(size: int, new_keys: list[float], data: st.DataObject) -> None:
    """``edited`` (many writes in one pass) against a sorted-list model; the old tree is unchanged."""
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    items = sorted((rng.choice([0.0, 0.5, rng.random()]), seq, f"v{seq}") for seq in range(size))
    tree = Tree(items)
    if data.draw(st.booleans()):  # a tree shaped by single writes, not by the bulk load
        for item in items[::3]:
            tree = tree.delete((item[0], item[1]))
        items = [i for i in items if i not in items[::3]]
    seqs = [i[1] for i in items]
    # Sometimes a run of the lowest keys (as evict() removes), sometimes a random choice.
    cut = data.draw(st.integers(0, len(items)))
    gone = set(seqs[:cut]) if data.draw(st.booleans()) else set(rng.sample(seqs, cut))
    kept = [s for s in seqs if s not in gone]
    replaced = {s: f"r{s}" for s in rng.sample(kept, min(len(kept), data.draw(st.integers(0, 50))))}
    added = sorted((k, size + i, f"a{i}") for i, k in enumerate(new_keys))
    before = tree.to_list()
    new, windows, olds = tree.edited(gone, replaced, added)
    model = sorted(
        [(k, s, replaced.get(s, v)) for k, s, v in items if s not in gone] + added,
        key=lambda i: (i[0], i[1]),
    )
    assert new.to_list() == model
    assert len(new) == len(model)
    assert list(new.descending()) == model[::-1]
    assert tree.to_list() == before
    assert sorted(olds) == sorted(i for i in items if i[1] in replaced)
    _check_shape(new)
    # Each window is a run of consecutive items of the new tree, and together they cover every added item.
    positions = {(i[0], i[1]): n for n, i in enumerate(model)}
    for window in windows:
        at = [positions[(i[0], i[1])] for i in window]
        assert at == list(range(at[0], at[0] + len(at)))
    covered = {(i[0], i[1]) for w in windows for i in w}
    for n, item in enumerate(model):
        if item[1] >= size:
            assert (item[0], item[1]) in covered
            for near in model[max(0, n - 1) : n + 2]:
                assert (near[0], near[1]) in covered
    for lo in (-2.0, 0.0, 0.5):
        inside = [i for i in model if (lo, -1) <= (i[0], i[1]) < (0.75, -1)]
        assert new.earliest((lo, -1), (0.75, -1)) == (min(inside, key=lambda i: i[1]) if inside else None)
