"""Changing a memory's configuration keeps its entries: ``configure``, ``copy.replace``,
``dataclasses.replace``; the half-life in use; hooks refused when the memory is built."""

from __future__ import annotations

import copy
import dataclasses
import math
import sys
from datetime import datetime, timedelta
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory
from lethe.decay import (
    ACTR,
    FSRS,
    AccessWeighted,
    AdaptiveDecay,
    Blend,
    EbbinghausLTP,
    Exponential,
    PowerLaw,
    Recency,
    SoftFloor,
    StabilityExponential,
)

from ._support import HOUR, START, fake_clock
from .test_config import keep_latest

needs_copy_replace = pytest.mark.skipif(sys.version_info < (3, 13), reason="copy.replace is new in Python 3.13")


def flat(entry: Entry[Any, Any], now: datetime) -> float:
    return 0.5


def history(mem: Memory[Any, Any], clock: ManualClock) -> tuple[Memory[Any, Any], datetime]:
    """Puts, a generated key deleted, rehearsals: returns the memory and the latest moment it saw."""
    mem = mem.put("a").put("b").put("c", key="c").put("d", key="d").delete(1)
    clock.advance(HOUR)
    mem = mem.touch("c")
    clock.advance(60)
    mem, _ = mem.get("c")
    mem = mem.touch(0, importance=2.0)
    return mem, clock.now


def same_entries(new: Memory[Any, Any], old: Memory[Any, Any]) -> None:
    assert sorted(map(str, new.keys())) == sorted(map(str, old.keys()))
    for key in list(old.keys()):
        a, b = new.peek(key), old.peek(key)
        assert (a.value, a.seq, a.access_count, a.last_accessed_at, a.importance) == (
            b.value,
            b.seq,
            b.access_count,
            b.last_accessed_at,
            b.importance,
        )


def carries_on(new: Memory[Any, Any], seen: datetime) -> None:
    """Key generation, put order and the latest clock reading carry on in ``new``."""
    nxt = new.put("e")
    assert 2 in nxt  # keys 0 and 1 were generated before (1 then deleted)
    assert 1 not in nxt
    assert nxt.peek(2).seq == 4  # after the four earlier puts
    keep_latest(new, seen)


# The three ways to change a configuration: each must keep every entry.
WAYS = {
    "configure": lambda mem, **changes: mem.configure(**changes),
    "dataclasses.replace": lambda mem, **changes: dataclasses.replace(mem, **changes),
}
if sys.version_info >= (3, 13):
    WAYS["copy.replace"] = lambda mem, **changes: copy.replace(mem, **changes)  # type: ignore[attr-defined]


@pytest.fixture(params=sorted(WAYS))
def change(request: pytest.FixtureRequest) -> Any:
    return WAYS[request.param]


class TestEveryWayKeepsTheEntries:
    def test_a_new_capacity(self, make: Any, clock: ManualClock, change: Any) -> None:
        mem, seen = history(make(), clock)
        new = change(mem, max_entries=7)
        assert new.max_entries == 7
        same_entries(new, mem)
        assert new == mem.configure(max_entries=7)
        carries_on(new, seen)
        assert mem.max_entries == 1000  # the receiver is unchanged

    def test_a_new_half_life_rescores(self, make: Any, clock: ManualClock, change: Any) -> None:
        mem = make(half_life=3600).put("v", key="k")
        new = change(mem, half_life=7200)
        assert new.half_life == 7200.0
        assert new.decay_fn == Exponential(half_life=7200)
        clock.advance(7200)
        assert new.score("k") == 0.5
        assert mem.score("k") == 0.25

    def test_a_new_decay_function_reindexes(self, make: Any, clock: ManualClock, change: Any) -> None:
        mem = make(decay_fn="actr", half_life=3600).put_many((k, k) for k in range(20))
        for k in range(0, 20, 3):
            clock.advance(600)
            mem = mem.touch(k)
        new = change(mem, decay_fn="exponential")
        assert new.decay_fn == Exponential(half_life=3600)
        clock.advance(HOUR)
        ranked = [e.key for e, _ in new.scored()]
        assert [e.key for e in new.top(20)] == ranked
        assert [e.key for e in new] == ranked
        assert [e.key for e in new.above(0.0)] == ranked
        assert ranked[0] == 18  # the latest touched
        assert len(new.put("x", key="x")) == 21

    def test_hooks_may_change(self, make: Any, clock: ManualClock, change: Any) -> None:
        mem, _ = history(make(), clock)
        later = fake_clock(clock.now + HOUR)
        new = change(mem, clock_fn=later, summarize_fn=lambda e: "s")
        assert new.clock_fn is later
        same_entries(new, mem)
        assert new.put("z", key="z").peek("z").inserted_at == clock.now + HOUR

    def test_shrinking_below_the_size_raises_and_runs_no_hook(self, make: Any, change: Any) -> None:
        evicted: list[Any] = []
        mem = make(on_evict=evicted.append).put("a", key="a").put("b", key="b")
        with pytest.raises(ValueError, match="max_entries"):
            change(mem, max_entries=1)
        assert evicted == []
        assert len(change(mem, max_entries=2)) == 2

    def test_bad_values_raise(self, make: Any, change: Any) -> None:
        mem = make().put("a", key="a")
        with pytest.raises(ValueError, match="eviction_threshold"):
            change(mem, eviction_threshold=2.0)
        with pytest.raises(TypeError, match="clock_fn"):
            change(mem, clock_fn=3)
        assert len(mem) == 1

    def test_unknown_fields_are_named(self, make: Any, change: Any) -> None:
        with pytest.raises(TypeError, match="bogus"):
            change(make(), bogus=1)

    def test_a_fresh_memory(self, make: Any, change: Any) -> None:
        new = change(make(), max_entries=3)
        assert len(new) == 0
        assert new == make(max_entries=3, clock_fn=new.clock_fn)


class TestConfigure:
    def test_no_changes_gives_an_equal_memory(self, make: Any, clock: ManualClock) -> None:
        mem, seen = history(make(decay_fn="actr"), clock)
        same = mem.configure()
        assert same == mem
        assert same.score_map() == mem.score_map()
        carries_on(same, seen)

    def test_unknown_field_message(self, make: Any) -> None:
        with pytest.raises(TypeError, match=r"^unknown configuration field\(s\): \['bogus', 'zz'\]$"):
            make().configure(zz=1, bogus=2)

    def test_private_fields_are_not_configuration(self, make: Any) -> None:
        for name in ("_entries", "_next_key", "_ranking", "_config"):
            with pytest.raises(TypeError, match=name):
                make().configure(**{name: None})

    def test_shrinking_message(self, make: Any) -> None:
        mem = make().put("a", key="a").put("b", key="b")
        with pytest.raises(ValueError, match=r"^max_entries=1 is below the 2 entries held \(.*; evict first$"):
            mem.configure(max_entries=1)

    @needs_copy_replace
    def test_copy_replace_is_configure(self, make: Any, clock: ManualClock) -> None:
        mem, _ = history(make(), clock)
        assert copy.replace(mem, half_life=60) == mem.configure(half_life=60)  # type: ignore[attr-defined]


class TestSwitchingDecayModels:
    """The model-private ``decay_state`` does not survive a change of decay function."""

    def rehearsed(self, make: Any, clock: ManualClock, decay_fn: str) -> Memory[Any, Any]:
        mem = make(decay_fn=decay_fn).put_many((k, f"v{k}") for k in range(6))
        for i in range(12):
            clock.advance(timedelta(hours=5 * (i % 3 + 1)))
            mem = mem.touch(i % 4)
        assert any(e.decay_state is not None for e, _ in mem.scored())
        return mem

    def reads_work(self, mem: Memory[Any, Any], clock: ManualClock) -> None:
        for _ in range(3):
            for key in list(mem.keys()):
                assert 0.0 <= mem.score(key) <= 1.0
            assert all(0.0 <= s <= 1.0 for _, s in mem.scored())
            assert len(mem.top(3)) == 3
            assert mem.time_until(0, 0.5) is not None
            mem, _ = mem.get(0)
            clock.advance(timedelta(days=1))
        mem.evict()
        back = Memory.from_dict(mem.to_dict(), clock_fn=mem.clock_fn)
        assert back.score_map() == mem.score_map()

    @pytest.mark.parametrize(("before", "after"), [("actr", "fsrs"), ("fsrs", "actr")])
    def test_reads_work_after_the_switch(
        self, make: Any, clock: ManualClock, change: Any, before: str, after: str
    ) -> None:
        mem = self.rehearsed(make, clock, before)
        new = change(mem, decay_fn=after)
        for key in list(mem.keys()):
            old, entry = mem.peek(key), new.peek(key)
            assert entry.decay_state is None
            assert (entry.access_count, entry.last_accessed_at) == (old.access_count, old.last_accessed_at)
        self.reads_work(new, clock)

    @pytest.mark.parametrize("after", ["actr", "fsrs"])
    def test_a_just_rehearsed_entry_scores_as_just_rehearsed(self, make: Any, clock: ManualClock, after: str) -> None:
        before = "fsrs" if after == "actr" else "actr"
        mem = self.rehearsed(make, clock, before)
        mem = mem.touch(5)
        new = mem.configure(decay_fn=after)
        assert new.score(5) == 1.0
        clock.advance(1)
        assert new.score(5) > 0.9

    def test_the_same_decay_function_keeps_the_state(self, make: Any, clock: ManualClock) -> None:
        mem = self.rehearsed(make, clock, "actr")
        new = mem.configure(max_entries=50)
        assert [new.peek(k).decay_state for k in range(6)] == [mem.peek(k).decay_state for k in range(6)]
        assert new.score_map() == mem.score_map()


HALF_LIVES: list[Any] = [
    Exponential(half_life=60),
    AccessWeighted(half_life=60),
    ACTR(half_life=60),
    ACTR(half_life=60, threshold=-1.0),
    PowerLaw(half_life=60, exponent=2.0),
    SoftFloor(half_life=60),
    Recency(half_life=60),
    StabilityExponential(half_life=60),
    EbbinghausLTP(base_tau=60),
    AdaptiveDecay(),
    FSRS(),
    Blend({Exponential(half_life=60): 1.0, Recency(half_life=600): 1.0}),
]


class TestTheHalfLifeInUse:
    @pytest.mark.parametrize("decay_fn", HALF_LIVES, ids=repr)
    def test_a_decay_object_reports_its_half_life(self, make: Any, clock: ManualClock, decay_fn: Any) -> None:
        mem = make(decay_fn=decay_fn).put("v", key="k")
        h = mem.half_life
        clock.advance(h)
        assert math.isclose(mem.score("k"), 0.5, rel_tol=1e-6)
        # Giving it again is no conflict: the configuration round-trips.
        assert make(decay_fn=decay_fn, half_life=h).half_life == h

    @pytest.mark.parametrize("decay_fn", HALF_LIVES, ids=repr)
    def test_a_different_half_life_is_refused(self, make: Any, decay_fn: Any) -> None:
        with pytest.raises(ValueError, match=r"^half_life"):
            make(decay_fn=decay_fn, half_life=timedelta(days=1000))

    def test_an_exact_half_life_is_reported_as_declared(self, make: Any) -> None:
        assert make(decay_fn=Exponential(half_life=60)).half_life == 60.0
        assert make(decay_fn=ACTR(half_life=600)).half_life == 600.0
        assert make(decay_fn=FSRS()).half_life == FSRS().half_life
        assert make(decay_fn=Exponential(half_life=60), half_life=timedelta(minutes=1)).half_life == 60.0

    def test_names_are_built_with_the_half_life(self, make: Any, clock: ManualClock) -> None:
        for name in ("exponential", "actr", "power_law", "ebbinghaus_ltp", "stability_exponential", "adaptive"):
            mem = make(decay_fn=name, half_life=120).put("v", key="k")
            assert mem.half_life == 120.0
        assert make(decay_fn="exponential").half_life == 3600.0

    def test_fsrs_by_name_has_its_own_time_scale(self, make: Any, change: Any) -> None:
        # By name, FSRS-6 ignores half_life (see by_name); the memory reports the one in use.
        assert make(decay_fn="fsrs").half_life == FSRS().half_life
        mem = make(decay_fn="fsrs", half_life=3600).put("v", key="k")
        assert mem.half_life == FSRS().half_life
        assert change(mem, half_life=60).half_life == FSRS().half_life
        with pytest.raises(ValueError, match=r"^half_life"):
            make(decay_fn=FSRS(), half_life=3600)

    def test_a_custom_function_keeps_the_half_life_for_names(self, make: Any, clock: ManualClock) -> None:
        assert make(decay_fn=flat).half_life == 3600.0
        mem = make(decay_fn=flat, half_life=60).put("v", key="k")
        assert mem.half_life == 60.0
        moved = mem.configure(decay_fn="exponential")
        assert moved.decay_fn == Exponential(half_life=60)

    def test_a_new_decay_object_brings_its_half_life(self, make: Any, clock: ManualClock, change: Any) -> None:
        mem = make(half_life=3600).put("v", key="k")
        new = change(mem, decay_fn=ACTR(half_life=60))
        assert new.half_life == 60.0
        assert "k" in new

    def test_a_decay_object_of_its_own_does_not_follow(self, make: Any, change: Any) -> None:
        mem = make(decay_fn=ACTR(half_life=60, decay=0.3)).put("v", key="k")
        with pytest.raises(ValueError, match=r"^half_life"):
            change(mem, half_life=120)
        new = change(mem, half_life=120, decay_fn=ACTR(half_life=120, decay=0.3))
        assert new.half_life == 120.0
        assert "k" in new

    def test_the_default_is_an_hour(self) -> None:
        assert Memory().half_life == 3600.0
        default = next(f.default for f in dataclasses.fields(Memory) if f.name == "half_life")
        assert default == timedelta(hours=1)


class Scores:
    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        return 0.5


class TestHooksRefusedWhenBuilt:
    def test_a_decay_class(self, make: Any) -> None:
        with pytest.raises(TypeError, match=r"^decay_fn: pass an instance: Exponential\(\), not the class$"):
            make(decay_fn=Exponential)
        with pytest.raises(TypeError, match=r"pass an instance: Scores\(\)"):
            make(decay_fn=Scores)

    def test_a_callable_with_the_wrong_arguments(self, make: Any) -> None:
        class OneArg:
            def score(self, entry: Entry[Any, Any]) -> float:
                return 0.5

        for bad in (lambda entry: 1.0, lambda: 1.0, lambda entry, now, extra: 1.0, OneArg()):
            with pytest.raises(TypeError, match=r"^decay_fn"):
                make(decay_fn=bad)

    def test_callables_that_fit(self, make: Any) -> None:
        for good in (flat, lambda *args: 0.5, lambda entry, now, extra=1: 0.5, Scores(), max):
            assert make(decay_fn=good).decay_fn is good

    def test_async_decay_functions(self, make: Any) -> None:
        async def decay(entry: Entry[Any, Any], now: datetime) -> float:
            return 0.5

        class AsyncScore:
            async def score(self, entry: Entry[Any, Any], now: datetime) -> float:
                return 0.5

        class AsyncCall:
            async def __call__(self, entry: Entry[Any, Any], now: datetime) -> float:
                return 0.5

        for bad in (decay, AsyncScore(), AsyncCall()):
            with pytest.raises(TypeError, match=r"^decay_fn.*async"):
                make(decay_fn=bad)

    def test_async_hooks(self, make: Any) -> None:
        async def summarize(entry: Entry[Any, Any]) -> str:
            return "s"

        async def on_evict(entries: tuple[Entry[Any, Any], ...]) -> None:
            return None

        async def clock() -> datetime:
            return START

        for name, hook in (("summarize_fn", summarize), ("on_evict", on_evict), ("clock_fn", clock)):
            with pytest.raises(TypeError, match=rf"^{name}.*async"):
                make(**{name: hook})

    def test_hooks_with_the_wrong_arguments(self, make: Any) -> None:
        for name, hook in (
            ("summarize_fn", lambda: "s"),
            ("on_evict", lambda a, b: None),
            ("clock_fn", lambda now: START),
        ):
            with pytest.raises(TypeError, match=rf"^{name}"):
                make(**{name: hook})
        mem = make(summarize_fn=lambda e, *rest: "s", on_evict=print, clock_fn=fake_clock())
        assert mem.on_evict is print

    def test_a_configure_that_is_refused_leaves_the_memory(self, make: Any, clock: ManualClock, change: Any) -> None:
        async def summarize(entry: Entry[Any, Any]) -> str:
            return "s"

        mem, _ = history(make(), clock)
        before = mem.to_dict()
        for bad in ({"decay_fn": Exponential}, {"summarize_fn": summarize}, {"decay_fn": lambda e: 1.0}):
            with pytest.raises(TypeError):
                change(mem, **bad)
        assert mem.to_dict() == before
        assert mem.summarize_fn is None


def test_shrinking_counts_the_entries_past_their_deadline_that_are_still_held(clock: ManualClock) -> None:
    """They are written by to_dict until a write removes them: a smaller max_entries would make
    a document from_dict refuses."""
    mem: Memory[Any, Any] = Memory(max_entries=3, clock_fn=clock)
    mem = mem.put("a", key="a").put("b", key="b").put("code", key="otp", ttl=10)
    clock.advance(20)
    assert len(mem) == 2
    with pytest.raises(ValueError, match=r"^max_entries=2 is below the 3 entries held \(.*; evict first$"):
        mem.configure(max_entries=2)
    swept = mem.evict()[0].configure(max_entries=2)
    assert Memory.from_dict(swept.to_dict(), clock_fn=clock) == swept


def test_max_entries_beyond_what_a_store_can_count_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^max_entries must be at most 2\*\*63 - 1, got an int of 401 digits$"):
        Memory(max_entries=10**400)


def test_a_custom_function_that_declares_a_half_life_has_that_one_in_use() -> None:
    class Declared:
        half_life = 100.0

        def score(self, entry: Entry[Any, Any], now: datetime) -> float:
            return 1.0

    assert Memory(decay_fn=Declared()).half_life == 100.0
    assert Memory(decay_fn=Declared(), half_life=100).half_life == 100.0
    with pytest.raises(ValueError, match=r"^half_life: 60 s is not the half-life of decay_fn"):
        Memory(decay_fn=Declared(), half_life=60)
