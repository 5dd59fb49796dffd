"""The persistent map behind a memory, checked against a plain dict.

Keys are chosen to exercise every shape of the hash trie: small maps (one
leaf), large maps (branches several levels deep), keys whose hashes are all
equal (a chain of branches down to the deepest level), and keys whose hashes
agree in their low bits only (collisions at the first levels).
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lethe._core.map import EMPTY, PersistentMap

from ._support import Collide


def build(items: dict[Any, Any]) -> PersistentMap[Any, Any]:
    m: PersistentMap[Any, Any] = EMPTY
    for k, v in items.items():
        m = m.set(k, v)
    return m


def agrees(m: PersistentMap[Any, Any], model: dict[Any, Any]) -> None:
    """Every read of ``m`` matches the dict ``model``."""
    assert len(m) == len(model)
    assert dict(m.items()) == model
    assert sorted(map(repr, m.keys())) == sorted(map(repr, model))
    assert sorted(map(repr, m)) == sorted(map(repr, model))
    assert sorted(map(repr, m.values())) == sorted(map(repr, model.values()))
    assert sorted(map(repr, m.to_list())) == sorted(map(repr, model.values()))
    for k, v in model.items():
        assert k in m
        assert m[k] == v
        assert m.get(k) == v
        assert m.get(k, "default") == v


# Shapes: (name, keys).  The hashes are fixed, so the trie shapes are too.
SAME_HASH = [Collide(f"c{i}", 12345) for i in range(40)]
NEGATIVE_SAME_HASH = [Collide(f"n{i}", -987654321) for i in range(20)]
LOW_BITS_COLLIDE = [Collide(f"l{i}", 7 + (i << 15)) for i in range(60)]
SHAPES = {
    "small": list(range(10)),
    "wide": list(range(3000)),
    "strings": [f"key-{i}" for i in range(500)],
    "same_hash": SAME_HASH,
    "negative_same_hash": NEGATIVE_SAME_HASH,
    "low_bits_collide": LOW_BITS_COLLIDE,
}


@pytest.fixture(params=sorted(SHAPES))
def keys(request: pytest.FixtureRequest) -> list[Any]:
    return SHAPES[request.param]


class TestReads:
    def test_a_built_map_reads_like_a_dict(self, keys: list[Any]) -> None:
        model = {k: ("v", i) for i, k in enumerate(keys)}
        agrees(build(model), model)

    def test_absent_keys_are_absent_at_every_depth(self, keys: list[Any]) -> None:
        m = build(dict.fromkeys(keys, 1))
        # Absent keys sharing the hashes of present ones, and unrelated ones.
        absent = [Collide("absent", hash(k)) for k in keys[:50]] + ["nope", -1, 10**6]
        for k in absent:
            assert k not in m
            assert m.get(k) is None
            assert m.get(k, "dflt") == "dflt"
            with pytest.raises(KeyError) as info:
                m[k]
            assert info.value.args == (k,)

    def test_the_empty_map(self) -> None:
        assert len(EMPTY) == 0
        assert list(EMPTY.items()) == []
        assert EMPTY.get("x", 3) == 3
        assert "x" not in EMPTY
        assert repr(EMPTY) == "PersistentMap({})"
        assert len(PersistentMap()) == 0


class TestWrites:
    def test_set_add_replace_and_old_versions_stay_unchanged(self, keys: list[Any]) -> None:
        model: dict[Any, Any] = {}
        m: PersistentMap[Any, Any] = EMPTY
        versions = []
        for i, k in enumerate(keys):
            m = m.add(k, i) if i % 2 else m.set(k, i)
            model[k] = i
            versions.append((m, dict(model)))
        for i, k in enumerate(keys):
            m = m.replace(k, -i) if i % 2 else m.set(k, -i)
            model[k] = -i
        agrees(m, model)
        for old, snapshot in versions[:: max(1, len(versions) // 7)]:
            agrees(old, snapshot)

    def test_delete_and_discard_down_to_empty(self, keys: list[Any]) -> None:
        model = {k: i for i, k in enumerate(keys)}
        full = build(model)
        m = full
        # Delete from both ends so leaves empty out in different orders.
        order = keys[::2] + keys[1::2][::-1]
        for n, k in enumerate(order):
            m = m.delete(k) if n % 2 else m.discard(k)
            del model[k]
            if n % 97 == 0 or len(model) < 20:
                agrees(m, model)
        assert len(m) == 0
        assert list(m.items()) == []
        agrees(full, {k: i for i, k in enumerate(keys)})
        # The emptied map is usable again.
        agrees(m.set("again", 1), {"again": 1})

    def test_delete_of_an_absent_key_raises_naming_it(self, keys: list[Any]) -> None:
        m = build(dict.fromkeys(keys, 1))
        missing = Collide("missing", hash(keys[0]))
        with pytest.raises(KeyError) as info:
            m.delete(missing)
        assert info.value.args == (missing,)
        assert m.discard(missing) is m
        assert len(m) == len(keys)

    def test_set_of_a_present_key_keeps_the_length(self, keys: list[Any]) -> None:
        m = build(dict.fromkeys(keys, 1))
        m2 = m.set(keys[-1], 2)
        assert len(m2) == len(m)
        assert m2[keys[-1]] == 2
        assert m[keys[-1]] == 1

    def test_replace_in_a_deep_map_touches_only_that_key(self, keys: list[Any]) -> None:
        model = dict.fromkeys(keys, 0)
        m = build(model)
        for k in keys[::3]:
            m = m.replace(k, "new")
            model[k] = "new"
        agrees(m, model)

    def test_twenty_keys_with_one_hash_survive_the_deepest_level(self) -> None:
        # More colliding keys than a leaf holds: the trie splits down to its deepest
        # level (hash bits run out) and must keep them all there.
        many = [Collide(f"x{i}", 2**40 + 3) for i in range(100)]
        model = {k: i for i, k in enumerate(many)}
        m = build(model)
        agrees(m, model)
        for k in many[:95]:
            m = m.delete(k)
            del model[k]
        agrees(m, model)


class TestProtocol:
    def test_repr_shows_the_items(self) -> None:
        assert repr(EMPTY.set("a", 1)) == "PersistentMap({'a': 1})"

    def test_pickle_round_trips(self, keys: list[Any]) -> None:
        if isinstance(keys[0], Collide):
            keys = list(range(100))
        model = {k: [k] for k in keys}
        back = pickle.loads(pickle.dumps(build(model)))
        assert type(back) is PersistentMap
        agrees(back, model)
        agrees(back.set("more", 1), {**model, "more": 1})


# Small hash space (values 0..40) so random operations hit collisions, shared
# prefixes and repeated deletes; big enough batches to split and fold leaves.
op = st.tuples(st.sampled_from(["set", "add_or_replace", "delete", "discard"]), st.integers(0, 60))


@given(st.lists(op, max_size=300))
def test_random_operations_match_a_dict(ops: list[tuple[str, int]]) -> None:
    m: PersistentMap[Any, Any] = EMPTY
    model: dict[Any, Any] = {}
    for i, (name, n) in enumerate(ops):
        k = Collide(f"k{n}", n % 41 if n % 3 else (n % 7) << 10)
        if name == "set":
            m = m.set(k, i)
            model[k] = i
        elif name == "add_or_replace":
            m = m.replace(k, i) if k in model else m.add(k, i)
            model[k] = i
        elif name == "delete" and k in model:
            m = m.delete(k)
            del model[k]
        else:
            m = m.discard(k)
            model.pop(k, None)
    agrees(m, model)


class TestDiff:
    """``a.diff(b)``: what turns one version into another, found by skipping shared subtrees."""

    @given(st.lists(op, max_size=200), st.lists(op, max_size=60))
    def test_applying_the_diff_gives_the_other_map(
        self, base_ops: list[tuple[str, int]], ops: list[tuple[str, int]]
    ) -> None:
        a: PersistentMap[Any, Any] = EMPTY
        for kind, k in base_ops:
            a = a.set(k, object()) if kind == "set" else a.discard(k)
        b = a
        for kind, k in ops:
            b = b.set(k, object()) if kind == "set" else b.discard(k)
        changed, removed = a.diff(b)
        expected = dict(b.items())
        before = dict(a.items())
        assert changed == {k: v for k, v in expected.items() if before.get(k) is not v}
        assert sorted(removed) == sorted(k for k in before if k not in expected)
        applied = dict(before)
        applied.update(changed)
        for k in removed:
            del applied[k]
        assert applied == expected

    def test_colliding_keys(self) -> None:
        a: PersistentMap[Any, Any] = EMPTY
        for i in range(40):
            a = a.set(Collide(i), i)
        b = a.set(Collide(3), "three").delete(Collide(7))
        changed, removed = a.diff(b)
        assert changed == {Collide(3): "three"}
        assert removed == [Collide(7)]

    def test_unrelated_maps_with_equal_contents_differ_only_by_identity(self) -> None:
        value = object()
        a = EMPTY.update(dict.fromkeys(range(100), value))
        b = EMPTY.update(dict.fromkeys(range(100), value))
        assert a.diff(b) == ({}, [])
        assert a.diff(a) == ({}, [])

    def test_one_write_in_a_large_map_visits_only_its_path(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import lethe._core.map as module

        a = EMPTY.update({i: i for i in range(10_000)})
        b = a.set(10_000, "new").set(5, "five")
        calls: list[Any] = []
        real = module._items

        def counted(node: Any) -> dict[Any, Any]:
            calls.append(node)
            return real(node)

        monkeypatch.setattr(module, "_items", counted)
        changed, removed = a.diff(b)
        assert changed == {10_000: "new", 5: "five"}
        assert removed == []
        assert 0 < len(calls) <= 4  # the old and new leaf of each changed path, nothing else


class TestEdited:
    """``edited``, the one-pass bulk write, against the same writes made one by one."""

    @staticmethod
    def key(n: int) -> Any:
        # Plain ints (a wide trie) and colliding keys (deep chains, full-depth leaves), mixed.
        return n if n % 2 else Collide(f"k{n}", n % 41 if n % 3 else (n % 7) << 10)

    @given(
        st.sets(st.integers(0, 400), max_size=200),
        st.data(),
    )
    def test_matches_single_writes(self, start: set[int], data: st.DataObject) -> None:
        base = build({self.key(n): n for n in start})
        removed = data.draw(st.lists(st.sampled_from(sorted(start)), unique=True) if start else st.just([]))
        present = [n for n in start if n not in removed]
        replaced = data.draw(st.lists(st.sampled_from(sorted(present)), unique=True) if present else st.just([]))
        added = data.draw(st.sets(st.integers(0, 600).filter(lambda n: n not in present), max_size=200))
        changed = [(self.key(n), -n) for n in replaced] + [(self.key(n), -n - 1000) for n in sorted(added)]
        one_by_one = base
        model = {self.key(n): n for n in start}
        for n in removed:
            one_by_one = one_by_one.delete(self.key(n))
            del model[self.key(n)]
        for k, v in changed:
            one_by_one = one_by_one.set(k, v)
            model[k] = v
        bulk = base.edited([self.key(n) for n in removed], changed, len(added))
        agrees(bulk, model)
        agrees(one_by_one, model)
        agrees(base, {self.key(n): n for n in start})  # the old version is untouched

    def test_everything_removed_is_the_empty_map(self) -> None:
        base = build({i: i for i in range(1000)})
        agrees(base.edited(list(range(1000)), [], 0), {})
        assert base.edited([], [], 0) is base

    def test_a_key_removed_and_set_again_takes_the_new_key_object(self) -> None:
        base = build({1: "one", 2: "two"})
        m = base.edited([1], [(True, "true")], 1)
        assert [type(k) for k in m if k == 1] == [bool]
        assert m[1] == "true"
        assert len(m) == 2
