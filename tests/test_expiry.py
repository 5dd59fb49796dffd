"""An entry past its ``ttl`` deadline is gone for every read, indexed or not."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from lethe import Entry, Memory
from tests.conftest import Clock

MODELS = ["exponential", "actr", "fsrs", lambda e, now: 0.9]


@pytest.fixture(params=MODELS, ids=["exponential", "actr", "fsrs", "custom"])
def expired(request: Any, clock: Clock) -> Memory[Any, Any]:
    """A memory holding "otp" (expired a second ago), "note" and pinned "rule"."""
    mem: Memory[Any, Any] = Memory(decay_fn=request.param, half_life=86_400, clock_fn=clock)
    mem = mem.put("code 1234", key="otp", ttl=60, importance=5.0)
    mem = mem.put("note", key="note").put("rule", key="rule", pinned=True)
    clock.tick(61)
    return mem


class TestGoneForEveryRead:
    def test_membership_and_lookups(self, expired: Memory[Any, Any]) -> None:
        assert "otp" not in expired
        for read in (expired.peek, expired.score, expired.get):
            with pytest.raises(KeyError):
                read("otp")
        with pytest.raises(KeyError):
            expired.time_until("otp", 0.5)

    def test_collections(self, expired: Memory[Any, Any]) -> None:
        live = ["rule", "note"]
        assert [e.key for e in expired] == live
        assert [e.key for e, _ in expired.scored()] == live
        assert list(expired.score_map()) == live
        assert [e.key for e in expired.filter(lambda e: True)] == live
        assert [e.key for e in expired.top(5)] == live
        assert [e.key for e, _ in expired.top_scored(5)] == live
        assert [e.key for e in expired.above(0.0)] == live
        assert [e.key for e in expired.active()] == live
        assert sorted(expired.keys()) == ["note", "rule"]
        view = expired.keys()
        assert "otp" not in view
        assert len(view) == 2

    def test_counts(self, expired: Memory[Any, Any]) -> None:
        assert len(expired) == 2
        stats = expired.stats()
        assert (stats.size, stats.active, stats.pinned) == (2, 2, 1)
        assert stats.active == expired.active_count()

    def test_the_memory_holds_it_until_a_write_reports_it(self, expired: Memory[Any, Any]) -> None:
        assert "otp" in [e["key"] for e in expired.to_dict()["entries"]]  # not silently dropped
        new = expired.touch("note")
        assert [e.key for e in new.evicted] == ["otp"]
        assert "otp" not in [e["key"] for e in new.to_dict()["entries"]]


class TestAtTheDeadline:
    def test_the_deadline_instant_is_already_gone(self, clock: Clock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("v", key="k", ttl=60)
        clock.tick(60)
        assert "k" not in mem
        assert len(mem) == 0

    def test_a_pinned_entry_with_a_deadline_is_kept(self, clock: Clock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("v", key="k", ttl=60).pin("k")
        clock.tick(600)
        assert "k" in mem
        assert len(mem) == 1
        assert mem.put("w", key="w").evicted == ()

    def test_a_replaced_entry_takes_its_new_deadline(self, clock: Clock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("v", key="k", ttl=60)
        mem = mem.put("w", key="k", ttl=600)
        clock.tick(120)
        assert mem.peek("k").value == "w"
        assert mem.put("x", key="x").evicted == ()

    def test_a_deleted_entry_is_not_reported_when_its_deadline_passes(self, clock: Clock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("v", key="k", ttl=60).delete("k")
        clock.tick(120)
        assert mem.put("x", key="x").evicted == ()


class TestStatsAgreeWithActiveCount:
    def test_zero_threshold_with_an_expired_entry(self, clock: Clock) -> None:
        mem: Memory[Any, Any] = Memory(eviction_threshold=0.0, summarize_threshold=0.0, clock_fn=clock)
        mem = mem.put("x", key="x", ttl=1).put("y", key="y")
        clock.tick(2)
        assert mem.stats().active == mem.active_count() == 1


def test_a_custom_function_never_sees_an_expired_entry(clock: Clock) -> None:
    seen: list[Any] = []

    def decay(entry: Entry[Any, Any], now: datetime) -> float:
        seen.append(entry.key)
        return 0.5

    mem: Memory[Any, Any] = Memory(decay_fn=decay, clock_fn=clock).put("v", key="gone", ttl=1).put("w", key="kept")
    clock.tick(5)
    seen.clear()
    mem.scored()
    mem.stats()
    list(mem)
    assert set(seen) == {"kept"}
