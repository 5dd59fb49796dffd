"""Writes at their edges: generated keys and put order, pin/unpin, summarize, delete, keys(),
rehearsals keeping an entry's facts, and a memory never going back in time after any write."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from lethe import ManualClock, Memory

from ._support import HOUR, START


def stamped_after_clock_goes_back(mem: Memory[Any, Any], clock: ManualClock) -> datetime:
    """Set the clock back a day and put: the moment the new entry is stamped with."""
    clock.now = START - 24 * HOUR
    return mem.put("probe", key="__probe__").peek("__probe__").inserted_at


WRITES: dict[str, Callable[[Memory[Any, Any]], Memory[Any, Any]]] = {
    "put": lambda m: m.put("new", key="new"),
    "put_generated": lambda m: m.put("new"),
    "pin": lambda m: m.pin("old"),
    "unpin": lambda m: m.pin("old").unpin("old"),
    "touch": lambda m: m.touch("old"),
    "update": lambda m: m.update("old", "newer"),
    "summarize": lambda m: m.summarize(),
}


class TestTimeNeverGoesBack:
    @pytest.mark.parametrize("write", sorted(WRITES))
    def test_a_write_remembers_its_moment(self, make: Any, clock: ManualClock, write: str) -> None:
        mem = make(summarize_fn=lambda e: "gist", half_life=60).put("v", key="old")
        clock.advance(timedelta(hours=2))
        written = WRITES[write](mem)
        assert written is not mem
        assert stamped_after_clock_goes_back(written, clock) == START + 2 * HOUR

    def test_a_delete_does_not_read_the_clock(self, make: Any, clock: ManualClock) -> None:
        mem = make().put("v", key="old").put("w", key="other")
        calls = clock.calls
        gone = mem.delete("other")
        assert clock.calls == calls
        assert stamped_after_clock_goes_back(gone, clock) == START


class TestPutOrder:
    def test_put_order_counts_from_zero_without_gaps(self, make: Any) -> None:
        mem = make().put("a", key="a").put("b").put("c", key="c").put("a again", key="a")
        assert [mem.peek(k).seq for k in ("c", 0, "a")] == [2, 1, 3]
        assert make().put("x", key="x").peek("x").seq == 0

    def test_a_generated_key_skips_only_keys_in_use(self, make: Any) -> None:
        mem = make().put("zero", key=0).put("gen")
        assert sorted(mem.keys()) == [0, 1]
        mem = make().put("two", key=2).put("a").put("b").put("c")
        assert sorted(mem.keys()) == [0, 1, 2, 3]
        assert mem.peek(3).value == "c"


class TestPinning:
    def test_unpin_leaves_a_plain_unpinned_entry(self, make: Any) -> None:
        mem = make().put("v", key="k").pin("k").unpin("k")
        assert mem.peek("k").pinned is False
        assert mem.pinned_count() == 0

    def test_pinning_twice_or_unpinning_an_unpinned_entry_changes_nothing(self, make: Any) -> None:
        mem = make().put("v", key="k")
        assert mem.unpin("k") is mem
        pinned = mem.pin("k")
        assert pinned.peek("k").pinned is True
        assert pinned.pin("k") is pinned

    def test_missing_keys(self, make: Any) -> None:
        with pytest.raises(KeyError):
            make().pin("nope")
        with pytest.raises(KeyError):
            make().unpin("nope")


class TestSummarize:
    def test_pinned_entries_are_not_summarized(self, make: Any, clock: ManualClock) -> None:
        mem = make(summarize_fn=lambda e: "gist").put("v", key="p").pin("p").put("w", key="u")
        clock.advance(timedelta(hours=10))
        done = mem.summarize()
        assert done.peek("p").summary is None
        assert done.peek("p").summarized is False
        assert done.peek("u").summary == "gist"

    def test_nothing_to_do_returns_the_same_memory(self, make: Any, clock: ManualClock) -> None:
        calls: list[Any] = []
        mem = make(summarize_fn=lambda e: calls.append(e.key) or "gist").put("v", key="k")
        assert mem.summarize() is mem  # still fresh
        clock.advance(timedelta(hours=10))
        done = mem.summarize()
        assert calls == ["k"]
        assert done.summarize() is done  # already summarized
        assert calls == ["k"]
        assert make().put("v", key="k").summarize().peek("k").summarized is False

    def test_exactly_at_the_threshold_is_not_below_it(self, make: Any) -> None:
        mem = make(summarize_fn=lambda e: "gist", summarize_threshold=0.25, eviction_threshold=0.1)
        mem = mem.put("at", key="at", importance=0.25).put("under", key="under", importance=0.2499)
        done = mem.summarize()
        assert done.peek("at").summary is None
        assert done.peek("under").summary == "gist"


class TestRehearsalKeepsFacts:
    def test_summary_and_deadline_survive_a_rehearsal(self, make: Any, clock: ManualClock) -> None:
        mem = make(summarize_fn=lambda e: "gist").put("v", key="k", ttl=timedelta(hours=12))
        clock.advance(timedelta(hours=10))
        mem = mem.summarize()
        mem, entry = mem.get("k")
        assert (entry.summary, entry.summarized) == ("gist", True)
        assert entry.expires_at == START + timedelta(hours=12)
        assert entry.access_count == 1
        assert mem.score("k") == 1.0
        clock.now = START + timedelta(hours=12)
        assert "k" not in mem  # a rehearsal did not move the deadline
        with pytest.raises(KeyError):
            mem.touch("k")


class TestStats:
    def test_a_score_equal_to_the_eviction_threshold_is_active(self, make: Any) -> None:
        mem = make(eviction_threshold=0.25, summarize_threshold=0.5)
        mem = mem.put("at", key="at", importance=0.25).put("under", key="under", importance=0.2499)
        assert mem.stats().active == 1
        assert mem.active_count() == 1


class TestKeysAndMembership:
    def test_keys_view(self, make: Any) -> None:
        mem = make().put("a", key="a").put("b", key=("t", 1))
        keys = mem.keys()
        assert "a" in keys
        assert ("t", 1) in keys
        assert "zz" not in keys
        assert len(keys) == 2
        assert set(keys) == {"a", ("t", 1)}
        assert "a" in mem
        assert "zz" not in mem

    def test_delete_of_a_missing_key_changes_nothing(self, make: Any) -> None:
        mem = make().put("a", key="a")
        assert mem.delete("zz") is mem
        gone = mem.delete("a")
        assert "a" not in gone
        assert "a" in mem
