"""``Memory.consolidate`` at its edges: argument checking, thresholds, group order, time."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory

from ._support import HOUR, START


def same_letter(a: str, b: str) -> float:
    """Values are similar when they start with the same letter."""
    return 1.0 if a[0] == b[0] else 0.0


def keys_of(groups: list[tuple[Entry[Any, Any], ...]]) -> list[list[Any]]:
    return [[e.key for e in g] for g in groups]


class TestArguments:
    @pytest.fixture
    def mem(self, make: Any) -> Memory[Any, Any]:
        return make().put("a b", key=1).put("a b", key=2)

    def test_threshold(self, mem: Memory[Any, Any]) -> None:
        with pytest.raises(TypeError, match=r"^threshold must be a number, got str$"):
            mem.consolidate(threshold="0.5")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"^threshold must be between 0 and 1, got -0.1$"):
            mem.consolidate(threshold=-0.1)

    @pytest.mark.parametrize(("bad", "name"), [("3", "str"), (2.5, "float"), (True, "bool")])
    def test_min_group_must_be_an_int(self, mem: Memory[Any, Any], bad: Any, name: str) -> None:
        with pytest.raises(TypeError, match=rf"^min_group must be an int, got {name}$"):
            mem.consolidate(min_group=bad)

    def test_similarity_must_be_callable(self, mem: Memory[Any, Any]) -> None:
        with pytest.raises(TypeError, match=r"^similarity must be callable, got int$"):
            mem.consolidate(similarity=3)  # type: ignore[arg-type]

    def test_merge_must_be_callable_even_with_nothing_to_merge(self, make: Any) -> None:
        for mem in (make(), make().put("a b", key=1).put("a b", key=2)):
            with pytest.raises(TypeError, match=r"^merge must be callable or None, got int$"):
                mem.consolidate(merge=42)  # type: ignore[arg-type]

    def test_merge_must_return_an_entry(self, mem: Memory[Any, Any]) -> None:
        with pytest.raises(TypeError, match=r"^merge must return an Entry, got str$"):
            mem.consolidate(merge=lambda g: "x")  # type: ignore[arg-type,return-value]


    @pytest.mark.parametrize("bad", ["0.9", None, float("nan"), True])
    def test_similarity_must_return_a_number(self, mem: Memory[Any, Any], bad: Any) -> None:
        with pytest.raises(ValueError, match=r"^similarity returned .* for the values of keys 2 and 1; it must return"):
            mem.consolidate(similarity=lambda a, b: bad)

    def test_a_merged_entry_last_accessed_after_now_is_refused(self, mem: Memory[Any, Any]) -> None:
        # Its times are clock readings: a later one would move the memory's clock (every other
        # entry would then score as of then).
        later = datetime(2100, 1, 1, tzinfo=timezone.utc)
        with pytest.raises(ValueError, match=r"^merge returned an entry last accessed at 2100-01-01T00:00:00\+00:00"):
            mem.consolidate(merge=lambda group: replace(group[0], last_accessed_at=later))


class TestThresholds:
    def test_threshold_zero_groups_everything(self, make: Any) -> None:
        mem = make().put("apple", key="a").put("banana", key="b").put("cherry", key="c")
        merged, groups = mem.consolidate(similarity=same_letter, threshold=0.0)
        assert len(merged) == 1
        assert sorted(e.key for e in groups[0]) == ["a", "b", "c"]

    def test_threshold_one_needs_identical(self, make: Any) -> None:
        mem = make().put("apple", key="a").put("avocado", key="b").put("banana", key="c")
        merged, groups = mem.consolidate(similarity=same_letter, threshold=1.0)
        assert sorted(merged.keys()) == ["b", "c"]
        assert keys_of(groups) == [["b", "a"]]

    def test_min_group(self, make: Any) -> None:
        mem = make().put("a1", key=1).put("a2", key=2).put("b1", key=3).put("b2", key=4).put("b3", key=5)
        merged, groups = mem.consolidate(similarity=same_letter, min_group=3)
        assert keys_of(groups) == [[5, 4, 3]]
        assert sorted(merged.keys()) == [1, 2, 5]


class TestGroups:
    def test_groups_are_listed_by_their_surviving_entry_put_order(self, make: Any) -> None:
        # Equal scores rank the most recent put first, so each group's survivor is its newest entry.
        mem = make()
        for key in ["b-old", "a-old", "a-new", "b-new"]:
            mem = mem.put(key, key=key)
        merged, groups = mem.consolidate(similarity=same_letter)
        assert keys_of(groups) == [["a-new", "a-old"], ["b-new", "b-old"]]
        assert sorted(merged.keys()) == ["a-new", "b-new"]

    def test_pinned_entries_are_left_alone(self, make: Any) -> None:
        mem = make().put("a1", key=1).put("a2", key=2, pinned=True).put("a3", key=3)
        merged, groups = mem.consolidate(similarity=same_letter)
        assert keys_of(groups) == [[3, 1]]
        assert sorted(merged.keys()) == [2, 3]
        assert merged.peek(2) == mem.peek(2)

    def test_the_receiver_is_unchanged(self, make: Any) -> None:
        mem = make().put("a1", key=1).put("a2", key=2)
        before = dict(zip(mem.keys(), map(mem.peek, mem.keys())))
        mem.consolidate(similarity=same_letter)
        assert dict(zip(mem.keys(), map(mem.peek, mem.keys()))) == before


class TestTime:
    def test_a_custom_decay_function_gets_the_time(self, make: Any) -> None:
        seen: list[Any] = []

        def decay(entry: Entry[Any, Any], now: datetime) -> float:
            seen.append(now)
            return 0.9 if entry.key == "low" else 1.0

        mem = make(decay_fn=decay).put("a x", key="low").put("a y", key="high")
        merged, groups = mem.consolidate(similarity=same_letter)
        assert keys_of(groups) == [["high", "low"]]
        assert list(merged.keys()) == ["high"]
        assert seen
        assert all(isinstance(t, datetime) and t == START for t in seen)

    def test_the_result_remembers_when_it_was_made(self, make: Any, clock: ManualClock) -> None:
        mem = make().put("a1", key=1).put("a2", key=2)
        clock.advance(HOUR)
        merged, _ = mem.consolidate(similarity=same_letter)
        clock.now = START - HOUR  # the clock steps back
        assert merged.put("x", key="x").peek("x").inserted_at == START + HOUR


def test_tuple_keys_consolidated_round_trip_through_json() -> None:
    import json
    from datetime import datetime, timezone

    def clock() -> datetime:
        return datetime(2026, 1, 1, tzinfo=timezone.utc)

    mem: Memory[Any, Any] = Memory(clock_fn=clock)
    mem = mem.put("deploy failed on node 7", key=("u", 1)).put("deploy failed on node 7!", key=("u", 2))
    merged, _ = mem.consolidate()
    back = Memory.from_dict(json.loads(json.dumps(merged.to_dict())), clock_fn=clock)
    assert back == merged
