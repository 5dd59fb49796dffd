"""Unit tests of Memory, one operation at a time."""

from __future__ import annotations

import copy
import math
import sys
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from lethe import Entry, LetheError, ManualClock, Memory, MemoryFullError, Stats, SummarizeError
from lethe.decay import ACTR, AccessWeighted, Exponential

from ._support import HOUR, START, fake_clock


class TestConstruction:
    def test_defaults(self) -> None:
        mem: Memory[Any, Any] = Memory()
        assert mem.max_entries == 1000
        assert mem.decay_fn == Exponential(half_life=3600)
        assert mem.half_life == 3600.0
        assert (mem.eviction_threshold, mem.summarize_threshold) == (0.05, 0.15)
        assert mem.summarize_fn is None
        assert mem.on_evict is None
        assert mem.clock_fn is None
        assert len(mem) == 0

    def test_keyword_only(self) -> None:
        with pytest.raises(TypeError):
            Memory(10)  # type: ignore[misc]

    @pytest.mark.parametrize(
        ("name", "cls"),
        [("exponential", Exponential), ("access_weighted", AccessWeighted), ("actr", ACTR), ("combined", ACTR)],
    )
    def test_decay_names(self, name: str, cls: type) -> None:
        mem: Memory[Any, Any] = Memory(decay_fn=name, half_life=120)
        assert isinstance(mem.decay_fn, cls)
        assert mem.decay_fn.half_life == 120.0

    def test_half_life_timedelta_or_seconds(self) -> None:
        assert Memory(half_life=timedelta(minutes=2)).half_life == 120.0
        assert Memory(half_life=90).half_life == 90.0

    @pytest.mark.parametrize(
        ("kwargs", "exc", "names"),
        [
            ({"max_entries": 0}, ValueError, "max_entries"),
            ({"max_entries": -3}, ValueError, "max_entries"),
            ({"max_entries": True}, TypeError, "max_entries"),
            ({"max_entries": 2.0}, TypeError, "max_entries"),
            ({"half_life": 0}, ValueError, "half_life"),
            ({"half_life": -1}, ValueError, "half_life"),
            ({"half_life": math.nan}, ValueError, "half_life"),
            ({"half_life": math.inf}, ValueError, "half_life"),
            ({"half_life": timedelta(0)}, ValueError, "half_life"),
            ({"half_life": "1h"}, TypeError, "half_life"),
            ({"eviction_threshold": math.nan}, ValueError, "eviction_threshold"),
            ({"eviction_threshold": -0.1}, ValueError, "eviction_threshold"),
            ({"summarize_threshold": 1.5}, ValueError, "summarize_threshold"),
            ({"eviction_threshold": 0.3, "summarize_threshold": 0.2}, ValueError, "summarize_threshold"),
            ({"decay_fn": "linear"}, ValueError, "decay_fn"),
            ({"decay_fn": 42}, TypeError, "decay_fn"),
            ({"summarize_fn": "x"}, TypeError, "summarize_fn"),
            ({"on_evict": 1}, TypeError, "on_evict"),
            ({"clock_fn": object()}, TypeError, "clock_fn"),
        ],
    )
    def test_bad_configuration_names_the_parameter(self, kwargs: dict[str, Any], exc: type, names: str) -> None:
        with pytest.raises(exc, match=names):
            Memory(**kwargs)

    def test_repr_is_short(self, make: Any) -> None:
        mem = make()
        for i in range(50):
            mem = mem.put(f"value {i}" * 20)
        text = repr(mem)
        assert text == "Memory(size=50, max_entries=1000, decay_fn=Exponential())"


class TestPut:
    def test_fresh_entry(self, make: Any, clock: ManualClock) -> None:
        mem = make().put("v", key="k", importance=0.5, metadata={"a": 1})
        e = mem.peek("k")
        assert (e.key, e.value, e.access_count, e.pinned, e.importance) == ("k", "v", 0, False, 0.5)
        assert e.inserted_at == e.last_accessed_at == clock.now
        assert e.metadata == {"a": 1}
        assert e.summary is None
        assert not e.summarized

    def test_generated_keys_increase_over_history(self, make: Any) -> None:
        mem = make().put("a").put("b")
        assert sorted(mem.keys()) == [0, 1]
        mem = mem.delete(1).put("c")
        assert 2 in mem
        assert 1 not in mem
        mem = mem.clear().put("d")
        assert list(mem.keys()) == [3]

    def test_generated_key_skips_present_keys(self, make: Any) -> None:
        mem = make().put("x", key=0).put("y", key=1).put("auto")
        assert sorted(mem.keys()) == [0, 1, 2]
        assert mem.peek(2).value == "auto"

    def test_replacing_a_key_resets_it_and_evicts_nothing(self, make: Any, clock: ManualClock) -> None:
        evicted: list[Any] = []
        mem = make(max_entries=2, on_evict=evicted.append).put("a", key="a").put("b", key="b")
        clock.advance(HOUR)
        mem, _ = mem.get("a")
        clock.advance(HOUR)
        mem = mem.put("A", key="a", importance=2.0)
        e = mem.peek("a")
        assert (e.value, e.access_count, e.importance, e.inserted_at) == ("A", 0, 2.0, clock.now)
        assert len(mem) == 2
        assert evicted == []

    def test_metadata_is_a_read_only_copy(self, make: Any) -> None:
        meta = {"source": "user"}
        mem = make().put("v", key="k", metadata=meta)
        meta["source"] = "changed"
        stored = mem.peek("k").metadata
        assert stored == {"source": "user"}
        with pytest.raises(TypeError):
            stored["source"] = "x"  # type: ignore[index]

    @pytest.mark.parametrize(
        ("kwargs", "exc", "name"),
        [
            ({"importance": -1.0}, ValueError, "importance"),
            ({"importance": math.nan}, ValueError, "importance"),
            ({"importance": math.inf}, ValueError, "importance"),
            ({"importance": "high"}, TypeError, "importance"),
            ({"importance": True}, TypeError, "importance"),
            ({"pinned": 1}, TypeError, "pinned"),
            ({"metadata": [1, 2]}, TypeError, "metadata"),
            ({"key": ["unhashable"]}, TypeError, "key"),
        ],
    )
    def test_bad_input_names_the_parameter_and_changes_nothing(
        self, make: Any, kwargs: dict[str, Any], exc: type, name: str
    ) -> None:
        mem = make().put("a", key="a")
        before = mem.to_dict()
        with pytest.raises(exc, match=name):
            mem.put("v", **kwargs)
        assert mem.to_dict() == before

    def test_old_versions_are_unchanged(self, make: Any) -> None:
        m0 = make()
        m1 = m0.put("a", key="a")
        m2 = m1.put("b", key="b")
        assert len(m0) == 0
        assert len(m1) == 1
        assert len(m2) == 2
        assert "b" not in m1


class TestCapacity:
    def test_lowest_scored_unpinned_is_evicted_summarized_and_reported(self, make: Any, clock: ManualClock) -> None:
        reported: list[tuple[Entry[Any, Any], ...]] = []
        mem = make(max_entries=3, summarize_fn=lambda e: f"sum:{e.value}", on_evict=reported.append)
        mem = mem.put("old", key="old", pinned=True)
        clock.advance(HOUR)
        mem = mem.put("mid", key="mid")
        clock.advance(HOUR)
        mem = mem.put("new", key="new")
        mem = mem.put("newest", key="newest")
        assert sorted(mem.keys()) == ["new", "newest", "old"]
        assert len(reported) == 1
        assert len(reported[0]) == 1
        gone = reported[0][0]
        assert (gone.key, gone.summary, gone.summarized) == ("mid", "sum:mid", True)

    def test_all_pinned_raises_and_changes_nothing(self, make: Any) -> None:
        mem = make(max_entries=2).put("a", key="a", pinned=True).put("b", key="b", pinned=True)
        with pytest.raises(MemoryFullError):
            mem.put("c", key="c")
        assert sorted(mem.keys()) == ["a", "b"]
        assert issubclass(MemoryFullError, LetheError)

    def test_ties_evict_the_oldest_put(self, make: Any) -> None:
        mem = make(max_entries=3).put(1, key="a").put(2, key="b").put(3, key="c").put(4, key="d")
        assert sorted(mem.keys()) == ["b", "c", "d"]

    def test_summary_is_not_recomputed_on_eviction(self, make: Any, clock: ManualClock) -> None:
        calls: list[Any] = []
        mem = make(max_entries=2, summarize_fn=lambda e: calls.append(e.key))
        mem = mem.put("a", key="a")
        clock.advance(timedelta(hours=5))
        mem = mem.summarize()
        assert calls == ["a"]
        assert mem.peek("a").summarized
        assert mem.peek("a").summary is None
        mem = mem.put("b", key="b").put("c", key="c")
        assert calls == ["a"]

    def test_failing_summarize_fn_leaves_memory_unchanged(self, make: Any) -> None:
        def boom(entry: Entry[Any, Any]) -> str:
            raise RuntimeError("LLM timed out")

        mem = make(max_entries=1, summarize_fn=boom).put("a", key="a")
        with pytest.raises(SummarizeError) as info:
            mem.put("b", key="b")
        assert isinstance(info.value.__cause__, RuntimeError)
        assert list(mem.keys()) == ["a"]

    def test_failing_on_evict_propagates_and_leaves_memory_unchanged(self, make: Any) -> None:
        def boom(entries: tuple[Entry[Any, Any], ...]) -> None:
            raise OSError("log full")

        mem = make(max_entries=1, on_evict=boom).put("a", key="a")
        with pytest.raises(OSError, match="log full"):
            mem.put("b", key="b")
        assert list(mem.keys()) == ["a"]


class TestReads:
    def test_peek_does_not_rehearse_get_does(self, make: Any, clock: ManualClock) -> None:
        mem = make().put("v", key="k")
        clock.advance(HOUR)
        assert mem.peek("k").access_count == 0
        assert mem.score("k") == pytest.approx(0.5)
        mem2, entry = mem.get("k")
        assert entry.access_count == 1
        assert entry.last_accessed_at == clock.now
        assert mem2.score("k") == 1.0
        assert mem.score("k") == pytest.approx(0.5)
        assert mem2.peek("k") == entry

    def test_missing_keys_raise_key_error_naming_the_key(self, make: Any) -> None:
        mem = make()
        for op in (mem.peek, mem.score, mem.get, mem.touch, mem.pin, mem.unpin):
            with pytest.raises(KeyError, match="nope"):
                op("nope")
        with pytest.raises(KeyError, match="nope"):
            mem.update("nope", 1)

    def test_scored_is_sorted_with_pinned_first(self, make: Any, clock: ManualClock) -> None:
        mem = make().put("a", key="a")
        clock.advance(HOUR)
        mem = mem.put("b", key="b", importance=3.0).put("c", key="c", pinned=True).put("d", key="d", importance=0.1)
        scored = mem.scored()
        assert [e.key for e, _ in scored] == ["c", "b", "a", "d"]
        scores = [s for _, s in scored]
        assert scores == sorted(scores, reverse=True)
        assert scores[0] == 1.0
        assert scores[2] == pytest.approx(0.5)
        assert scores[3] == pytest.approx(0.1)
        assert [e.key for e in mem] == ["c", "b", "a", "d"]
        assert mem.score_map() == {e.key: s for e, s in scored}

    def test_active_above_top_filter(self, make: Any, clock: ManualClock) -> None:
        mem = make()
        for i in range(6):
            mem = mem.put(i, key=i)
            clock.advance(HOUR)
        scores = mem.score_map()
        assert [e.key for e in mem.active()] == [k for k, s in scores.items() if s >= 0.05]
        assert [e.key for e in mem.above(0.2)] == [k for k, s in scores.items() if s >= 0.2]
        assert [e.key for e in mem.top(2)] == [5, 4]
        assert mem.top(0) == []
        assert len(mem.top(100)) == 6
        assert [e.key for e in mem.filter(lambda e: e.value % 2 == 0)] == [4, 2, 0]
        assert mem.active_count() == len(mem.active())

    def test_bad_read_arguments(self, make: Any) -> None:
        mem = make()
        with pytest.raises(ValueError, match="n"):
            mem.top(-1)
        with pytest.raises(TypeError, match="n"):
            mem.top(1.5)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="threshold"):
            mem.above(math.nan)
        with pytest.raises(TypeError, match="predicate"):
            mem.filter(3)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="key"):
            mem.peek([1])  # type: ignore[arg-type]

    def test_stats(self, make: Any, clock: ManualClock) -> None:
        assert make().stats() == Stats(0, 0, 0, None, None, None, None)
        mem = make().put("a", key="a")
        first = clock.now
        clock.advance(timedelta(hours=5))
        mem = mem.put("b", key="b").put("c", key="c", pinned=True)
        st = mem.stats()
        assert (st.size, st.active, st.pinned) == (3, 2, 1)
        assert (st.oldest_entry, st.newest_entry) == (first, clock.now)
        assert st.mean_score == pytest.approx((1 + 1 + 0.5**5) / 3)
        assert st.median_score == 1.0
        assert mem.pinned_count() == 1

    def test_reads_read_the_clock_once(self, make: Any, clock: ManualClock) -> None:
        mem = make()
        for i in range(20):
            mem = mem.put(i)
        for read in (mem.scored, mem.score_map, mem.active, mem.stats, lambda: list(mem), lambda: mem.top(3)):
            clock.calls = 0
            read()
            assert clock.calls == 1


class TestRehearsal:
    def test_touch_sets_importance(self, make: Any, clock: ManualClock) -> None:
        mem = make().put("v", key="k")
        clock.advance(HOUR)
        mem = mem.touch("k", importance=0.25)
        e = mem.peek("k")
        assert (e.importance, e.access_count, e.last_accessed_at) == (0.25, 1, clock.now)
        assert mem.score("k") == 0.25
        with pytest.raises(ValueError, match="importance"):
            mem.touch("k", importance=-2)

    def test_update_replaces_value_and_restarts_summary(self, make: Any, clock: ManualClock) -> None:
        calls: list[Any] = []
        mem = make(summarize_fn=lambda e: calls.append(e.value) or f"s:{e.value}").put("v1", key="k")
        clock.advance(timedelta(hours=4))
        mem = mem.summarize()
        assert mem.peek("k").summary == "s:v1"
        mem = mem.update("k", "v2")
        e = mem.peek("k")
        assert (e.value, e.summary, e.summarized, e.access_count) == ("v2", None, False, 1)
        clock.advance(timedelta(hours=4))
        mem = mem.summarize().summarize()
        assert mem.peek("k").summary == "s:v2"
        assert calls == ["v1", "v2"]

    def test_pin_and_unpin(self, make: Any, clock: ManualClock) -> None:
        mem = make().put("v", key="k")
        clock.advance(timedelta(hours=10))
        pinned = mem.pin("k")
        assert pinned.score("k") == 1.0
        assert pinned.peek("k").pinned
        assert pinned.pin("k") is pinned
        assert pinned.unpin("k").score("k") == pytest.approx(0.5**10)


class TestRemoval:
    def test_delete(self, make: Any) -> None:
        mem = make().put("v", key="k")
        assert "k" not in mem.delete("k")
        assert mem.delete("missing") == mem

    def test_clear_keeps_configuration(self, make: Any) -> None:
        mem = make(max_entries=7).put(1).put(2)
        cleared = mem.clear()
        assert len(cleared) == 0
        assert cleared.max_entries == 7
        assert len(mem) == 2

    def test_evict_summarizes_then_removes(self, make: Any, clock: ManualClock) -> None:
        reported: list[tuple[Entry[Any, Any], ...]] = []
        mem = make(summarize_fn=lambda e: f"s:{e.value}", on_evict=reported.append)
        mem = mem.put("gone", key="gone")
        clock.advance(timedelta(hours=2))
        mem = mem.put("fading", key="fading").put("pinned", key="pinned", pinned=True)
        clock.advance(timedelta(hours=3))  # gone: 0.5**5 = 0.03, fading: 0.5**3 = 0.125
        mem = mem.put("fresh", key="fresh")
        new, evicted = mem.evict()
        assert [e.key for e in evicted] == ["gone"]
        assert evicted[0].summary == "s:gone"
        assert reported == [evicted]
        assert sorted(new.keys()) == ["fading", "fresh", "pinned"]
        assert new.peek("fading").summary == "s:fading"
        assert new.peek("fresh").summary is None
        assert not new.peek("pinned").summarized
        assert "gone" in mem
        assert mem.peek("fading").summary is None

    def test_evict_with_nothing_to_do(self, make: Any) -> None:
        calls: list[Any] = []
        mem = make(on_evict=calls.append).put("a")
        new, evicted = mem.evict()
        assert evicted == ()
        assert calls == []
        assert new == mem

    def test_evict_without_summarize_fn_removes_directly(self, make: Any, clock: ManualClock) -> None:
        mem = make().put("a", key="a")
        clock.advance(timedelta(hours=6))
        new, evicted = mem.evict()
        assert len(new) == 0
        assert evicted[0].summary is None
        assert not evicted[0].summarized

    def test_summarize_runs_once_even_when_it_returns_none(self, make: Any, clock: ManualClock) -> None:
        calls: list[Any] = []
        mem = make(summarize_fn=calls.append).put("a", key="a")
        clock.advance(timedelta(hours=3))
        mem = mem.summarize().summarize()
        mem, _ = mem.evict()
        assert len(calls) == 1
        assert mem.peek("a").summarized


class TestClock:
    def test_naive_clock_raises(self) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=lambda: datetime(2026, 1, 1))
        with pytest.raises(ValueError, match="aware"):
            mem.put("x")

    def test_non_datetime_clock_raises(self) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=lambda: 12.0)  # type: ignore[arg-type,return-value]
        with pytest.raises(TypeError, match="clock_fn"):
            mem.put("x")

    def test_clock_going_backwards_is_zero_elapsed(self, make: Any, clock: ManualClock) -> None:
        mem = make().put("v", key="k")
        clock.advance(timedelta(hours=1))
        mem, _ = mem.get("k")
        clock.advance(timedelta(hours=-5))
        assert mem.score("k") == 1.0
        mem = mem.put("w", key="w")
        assert mem.peek("w").inserted_at == START + HOUR
        clock.advance(timedelta(hours=6))
        assert mem.score("k") == pytest.approx(0.5)

    def test_other_timezones(self, make: Any) -> None:
        tz = timezone(timedelta(hours=5))
        moments = iter([datetime(2026, 1, 1, 17, tzinfo=tz), datetime(2026, 1, 1, 13, tzinfo=timezone.utc)])
        mem: Memory[Any, Any] = Memory(clock_fn=lambda: next(moments)).put("v", key="k")
        assert mem.score("k") == pytest.approx(0.5)


class TestProtocol:
    def test_equality(self, make: Any) -> None:
        a = make().put("x", key=1)
        assert a == a.delete(99)
        assert a != a.put("y", key=2)
        assert a != "not a memory"
        with pytest.raises(TypeError):
            hash(a)

    def test_copy_replace(self, make: Any, clock: ManualClock) -> None:
        mem = make().put("v", key="k")
        clock.advance(HOUR)
        other = fake_clock(clock.now + HOUR)
        moved = mem.__replace__(clock_fn=other, half_life=7200)
        assert moved.peek("k") == mem.peek("k")
        assert moved.score("k") == pytest.approx(0.5)
        with pytest.raises(ValueError, match="max_entries"):
            mem.put(1).__replace__(max_entries=1)
        if sys.version_info >= (3, 13):
            assert copy.replace(mem, max_entries=5).max_entries == 5  # type: ignore[attr-defined]

    def test_frozen(self, make: Any) -> None:
        mem = make()
        with pytest.raises(AttributeError):
            mem.max_entries = 5
        entry = mem.put(1, key=1).peek(1)
        with pytest.raises(AttributeError):
            entry.value = 2


def test_update_with_the_same_value_keeps_its_summary(clock: ManualClock) -> None:
    calls: list[tuple[Any, Any]] = []

    def summarize(e: Entry[Any, Any]) -> str:
        calls.append((e.key, e.value))
        return f"s:{e.value}"

    mem = Memory(max_entries=2, clock_fn=clock, summarize_fn=summarize).put("v", key="a", importance=0.0)
    mem = mem.summarize()
    assert calls == [("a", "v")]
    same = mem.update("a", "v")
    assert same.peek("a").summary == "s:v"
    assert same.peek("a").access_count == 1  # still a rehearsal
    changed = mem.update("a", "w")
    assert changed.peek("a").summary is None
    assert not changed.peek("a").summarized
    same.put("x", key="b").put("y", key="c")  # evicts a: its summary holds, no second call
    assert calls == [("a", "v")]
    assert mem.update("a", 1).peek("a").summary is None  # another type is another value
