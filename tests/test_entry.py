"""Entry built directly (as custom decay functions' tests do) and its read-only metadata."""

from __future__ import annotations

import pickle
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from lethe import Entry
from lethe._core.entry import FrozenDict
from lethe._core.map import PersistentMap

T = datetime(2026, 1, 1, tzinfo=timezone.utc)


def make(**kw: Any) -> Entry[Any, Any]:
    fields: dict[str, Any] = {"key": "k", "value": "v", "inserted_at": T, "last_accessed_at": T}
    fields.update(kw)
    return Entry(**fields)


class TestDirectConstruction:
    def test_microsecond_epochs_are_derived(self) -> None:
        later = T + timedelta(seconds=1, microseconds=7)
        e = make(last_accessed_at=later, expires_at=later + timedelta(hours=1))
        assert e.inserted_us == T.timestamp() * 1e6
        assert e.accessed_us - e.inserted_us == 1_000_007.0
        assert e.expires_us == e.accessed_us + 3_600_000_000.0
        assert make().expires_us is None

    @pytest.mark.parametrize("field", ["inserted_at", "last_accessed_at", "expires_at"])
    def test_naive_datetimes_are_rejected_naming_the_field(self, field: str) -> None:
        with pytest.raises(ValueError, match=field):
            make(**{field: datetime(2026, 1, 1)})

    @pytest.mark.parametrize("field", ["inserted_at", "last_accessed_at", "expires_at"])
    def test_non_datetimes_are_rejected_naming_the_field(self, field: str) -> None:
        with pytest.raises(TypeError, match=field):
            make(**{field: 12.5})

    @pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
    def test_access_count(self, bad: Any) -> None:
        with pytest.raises(ValueError, match="access_count"):
            make(access_count=bad)

    @pytest.mark.parametrize(
        ("field", "bad"), [("pinned", 1), ("pinned", "yes"), ("summarized", 0), ("summarized", None)]
    )
    def test_flags_must_be_bools(self, field: str, bad: Any) -> None:
        # An entry a memory could hold but never load back (to_dict writes what from_dict refuses).
        with pytest.raises(TypeError, match=f"^{field} must be a bool, got "):
            make(**{field: bad})

    @pytest.mark.parametrize("bad", [-1, 1.0, True, "0", None])
    def test_seq_is_an_int_at_least_zero(self, bad: Any) -> None:
        with pytest.raises((TypeError, ValueError), match=r"^seq must be "):
            make(seq=bad)

    def test_last_access_cannot_come_before_the_put(self) -> None:
        earlier = r"^last_accessed_at \(2025-12-31T23:59:59\+00:00\) is earlier than inserted_at"
        with pytest.raises(ValueError, match=earlier):
            make(last_accessed_at=T - timedelta(seconds=1))
        assert make(last_accessed_at=T).accessed_us == make().inserted_us  # the same instant is fine
        # Past 2**53 microseconds (the year 2255) the two float instants are one: the datetimes tell.
        late = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=2**54)
        with pytest.raises(ValueError, match="is earlier than inserted_at"):
            make(inserted_at=late + timedelta(microseconds=1), last_accessed_at=late)

    def test_a_merge_that_builds_a_bad_entry_is_refused_where_it_is_built(self) -> None:
        from dataclasses import replace

        from lethe import ManualClock, Memory

        mem: Memory[str, str] = Memory(clock_fn=ManualClock(T))
        mem = mem.put("deploy failed", key="a").put("deploy failed!", key="b")
        with pytest.raises(TypeError, match=r"^pinned must be a bool"):
            mem.consolidate(merge=lambda group: replace(group[0], pinned=1))

    def test_importance_is_checked_and_metadata_frozen(self) -> None:
        with pytest.raises(ValueError, match="importance"):
            make(importance=-0.5)
        meta = {"a": [1]}
        e = make(metadata=meta, importance=2)
        meta["b"] = 2
        assert e.metadata == {"a": [1]}
        assert type(e.metadata) is FrozenDict
        assert e.importance == 2.0
        assert type(e.importance) is float


class TestFrozenDict:
    @pytest.mark.parametrize(
        "mutate",
        [
            lambda d: d.__setitem__("x", 1),
            lambda d: d.__delitem__("a"),
            lambda d: d.clear(),
            lambda d: d.pop("a"),
            lambda d: d.popitem(),
            lambda d: d.setdefault("x", 1),
            lambda d: d.update(x=1),
            lambda d: d.__ior__({"x": 1}),
        ],
    )
    def test_every_mutation_is_refused(self, mutate: Any) -> None:
        d = FrozenDict({"a": 1})
        with pytest.raises(TypeError, match="read-only"):
            mutate(d)
        assert d == {"a": 1}

    def test_hash_pickle_repr(self) -> None:
        d = FrozenDict({"a": 1, "b": 2})
        assert hash(d) == hash(FrozenDict({"b": 2, "a": 1}))
        back = pickle.loads(pickle.dumps(d))
        assert back == d
        assert type(back) is FrozenDict
        assert repr(d) == "{'a': 1, 'b': 2}"


def test_a_shrinking_map_folds_back_into_one_small_leaf() -> None:
    m: PersistentMap[int, int] = PersistentMap()
    for i in range(2000):
        m = m.set(i, i)
    assert type(m._root) is tuple
    for i in range(1995):
        m = m.delete(i)
    assert type(m._root) is dict
    assert dict(m.items()) == {i: i for i in range(1995, 2000)}
    for i in range(1995, 2000):
        m = m.delete(i)
    assert len(m) == 0
    assert m._root == {}
