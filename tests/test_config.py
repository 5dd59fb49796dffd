"""Configuration as a value: ``__replace__`` (``copy.replace``), equality, pickling, repr, from_dict hooks."""

from __future__ import annotations

import pickle
from datetime import timedelta
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory
from lethe.decay import ACTR, AccessWeighted, Exponential

from ._support import HOUR, START


def keep_latest(mem: Memory[Any, Any], moment: Any) -> None:
    """``mem`` has seen ``moment``: with its clock set back, a put is stamped ``moment``."""
    clock = mem.clock_fn
    assert isinstance(clock, ManualClock)
    clock.now = START - 10 * HOUR
    assert mem.put("probe", key="__probe__").peek("__probe__").inserted_at == moment


class TestReplace:
    def test_unknown_fields_are_named(self, make: Any) -> None:
        mem = make()
        with pytest.raises(TypeError, match=r"^unknown configuration field\(s\): \['bogus', 'zz'\]$"):
            mem.__replace__(zz=1, bogus=2)

    def test_a_builtin_named_by_the_memory_follows_the_new_half_life(self, make: Any) -> None:
        for name, cls in (("exponential", Exponential), ("access_weighted", AccessWeighted)):
            mem = make(decay_fn=name, half_life=3600)
            moved = mem.__replace__(half_life=7200)
            assert moved.half_life == 7200.0
            assert moved.decay_fn == cls(half_life=7200)

    def test_a_builtin_with_its_own_half_life_is_kept(self, make: Any) -> None:
        own = ACTR(half_life=60, decay=0.3)  # not what the name "actr" builds
        mem = make(decay_fn=own)
        assert mem.half_life == 60.0
        assert mem.__replace__(max_entries=5).decay_fn == own
        # The half-life in use is the function's: a different one is refused, not ignored.
        with pytest.raises(ValueError, match=r"^half_life: 7200 s is not the half-life of decay_fn ACTR"):
            mem.__replace__(half_life=7200)

    def test_an_explicit_decay_fn_wins_over_following(self, make: Any) -> None:
        mem = make(half_life=3600)
        moved = mem.__replace__(half_life=7200, decay_fn=AccessWeighted(half_life=7200))
        assert moved.decay_fn == AccessWeighted(half_life=7200)
        with pytest.raises(ValueError, match=r"^half_life"):
            mem.__replace__(half_life=7200, decay_fn=Exponential(half_life=10))

    def test_a_custom_decay_function_is_kept(self, make: Any) -> None:
        def flat(entry: Entry[Any, Any], now: Any) -> float:
            return 0.5

        moved = make(decay_fn=flat).__replace__(half_life=10)
        assert moved.decay_fn is flat

    def test_other_changes_leave_the_decay_function(self, make: Any) -> None:
        mem = make(half_life=3600)
        moved = mem.__replace__(max_entries=7)
        assert moved.decay_fn == Exponential(half_life=3600)
        assert moved.max_entries == 7

    def test_capacity_may_shrink_to_the_size_but_not_below(self, make: Any) -> None:
        mem = make().put("a", key="a").put("b", key="b")
        assert len(mem.__replace__(max_entries=2)) == 2
        with pytest.raises(ValueError, match=r"^max_entries=1 is below the 2 entries held \(.*; evict first$"):
            mem.__replace__(max_entries=1)

    def test_changes_are_validated(self, make: Any) -> None:
        with pytest.raises(ValueError, match="eviction_threshold"):
            make().__replace__(eviction_threshold=2.0)

    def test_entries_and_history_carry_over(self, make: Any, clock: ManualClock) -> None:
        mem = make().put("a").put("b").put("c", key="c").delete(1)
        clock.advance(HOUR)
        mem = mem.touch("c")  # the latest moment the memory saw
        seen = clock.now
        moved = mem.__replace__(max_entries=50)
        assert moved == mem.__replace__(max_entries=50)
        assert sorted(map(str, moved.keys())) == ["0", "c"]
        assert [moved.peek(k) for k in (0, "c")] == [mem.peek(k) for k in (0, "c")]
        # Key generation carries on: key 1 was generated (then deleted), so the next is 2.
        nxt = moved.put("d")
        assert 2 in nxt
        assert 1 not in nxt
        # Put order carries on: the new entry comes after the three earlier puts.
        assert nxt.peek(2).seq == 3
        # The memory's latest moment carries on: a clock set back does not go back.
        keep_latest(moved, seen)
        assert mem.max_entries == 1000


class TestEquality:
    def test_different_configuration_same_entries(self, make: Any) -> None:
        assert make(max_entries=5) != make(max_entries=6)
        assert make(max_entries=5).put(1, key=1) != make(max_entries=6).put(1, key=1)
        assert make(max_entries=5).put(1, key=1) == make(max_entries=5).put(1, key=1)

    def test_a_subset_of_the_entries_is_not_equal(self, make: Any) -> None:
        both = make().put("a", key="a").put("b", key="b")
        one = both.delete("b")
        # Same configuration and history counters, one entry fewer.
        assert one != both
        assert both != one

    def test_same_entries_different_history_is_not_equal(self, make: Any) -> None:
        mem = make().put("a", key="a")
        again = mem.put("b", key="b").delete("b")
        assert len(again) == len(mem)
        assert again.peek("a") == mem.peek("a")
        assert again != mem
        generated = make().put("x").delete(0)
        assert generated != make()

    def test_equal_entries_under_different_keys(self, make: Any) -> None:
        assert make().put("a", key="a") != make().put("a", key="b")

    def test_not_comparable_with_other_types(self, make: Any) -> None:
        assert make().__eq__(object()) is NotImplemented


class TestPickle:
    def test_round_trip_is_equal_and_keeps_history(self, make: Any, clock: ManualClock) -> None:
        mem = make(max_entries=9, half_life=120, eviction_threshold=0.1, summarize_threshold=0.2)
        mem = mem.put("a").put("b", key="b", importance=0.5, metadata={"m": 1}).put("c", ttl=7200).delete(0)
        clock.advance(HOUR)
        mem, _ = mem.get("b")
        mem = mem.pin(1)
        seen = clock.now
        back = pickle.loads(pickle.dumps(mem))
        assert back.to_dict() == mem.to_dict()
        assert back == mem.__replace__(clock_fn=back.clock_fn)
        assert back.max_entries == 9
        assert back.half_life == 120.0
        assert (back.eviction_threshold, back.summarize_threshold) == (0.1, 0.2)
        assert back.peek("b").access_count == 1
        assert back.peek(1).pinned
        assert back.put("d").peek(2).seq == 3
        keep_latest(back, seen)

    def test_a_fresh_memory_round_trips(self, make: Any, clock: ManualClock) -> None:
        back = pickle.loads(pickle.dumps(make()))
        assert back == make(clock_fn=back.clock_fn)
        back.clock_fn.now = START - HOUR
        assert back.put("x", key="x").peek("x").inserted_at == START - HOUR


class TestFromDictHooks:
    def test_hooks_are_attached_again(self, make: Any, clock: ManualClock) -> None:
        def summarize(e: Entry[Any, Any]) -> str:
            return f"sum:{e.value}"

        evicted: list[Any] = []

        def on_evict(entries: tuple[Entry[Any, Any], ...]) -> None:
            evicted.extend(e.key for e in entries)

        data = make(max_entries=1).put("a", key="a").to_dict()
        back = Memory.from_dict(data, summarize_fn=summarize, on_evict=on_evict, clock_fn=clock)
        assert back.summarize_fn is summarize
        assert back.on_evict is on_evict
        back = back.put("b", key="b")
        assert evicted == ["a"]


def test_repr_names_size_capacity_and_decay_function(make: Any) -> None:
    mem = make(max_entries=3, half_life=timedelta(minutes=1)).put(1)
    assert repr(mem) == "Memory(size=1, max_entries=3, decay_fn=Exponential(half_life=60.0))"
