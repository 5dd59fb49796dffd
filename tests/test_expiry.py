"""An entry past its ``ttl`` deadline is gone for every read, indexed or not."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from lethe import Entry, ManualClock, Memory, MemoryFullError

from ._support import START, fake_clock

MODELS = ["exponential", "actr", "fsrs", lambda e, now: 0.9]


@pytest.fixture(params=MODELS, ids=["exponential", "actr", "fsrs", "custom"])
def expired(request: Any, clock: ManualClock) -> Memory[Any, Any]:
    """A memory holding "otp" (expired a second ago), "note" and pinned "rule"."""
    mem: Memory[Any, Any] = Memory(decay_fn=request.param, half_life=86_400, clock_fn=clock)
    mem = mem.put("code 1234", key="otp", ttl=60, importance=5.0)
    mem = mem.put("note", key="note").put("rule", key="rule", pinned=True)
    clock.advance(61)
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
    def test_the_deadline_instant_is_already_gone(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("v", key="k", ttl=60)
        clock.advance(60)
        assert "k" not in mem
        assert len(mem) == 0

    def test_a_pinned_entry_with_a_deadline_is_kept(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("v", key="k", ttl=60).pin("k")
        clock.advance(600)
        assert "k" in mem
        assert len(mem) == 1
        assert mem.put("w", key="w").evicted == ()

    def test_a_replaced_entry_takes_its_new_deadline(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("v", key="k", ttl=60)
        mem = mem.put("w", key="k", ttl=600)
        clock.advance(120)
        assert mem.peek("k").value == "w"
        assert mem.put("x", key="x").evicted == ()

    def test_a_deleted_entry_is_not_reported_when_its_deadline_passes(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("v", key="k", ttl=60).delete("k")
        clock.advance(120)
        assert mem.put("x", key="x").evicted == ()


class TestStatsAgreeWithActiveCount:
    def test_zero_threshold_with_an_expired_entry(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(eviction_threshold=0.0, summarize_threshold=0.0, clock_fn=clock)
        mem = mem.put("x", key="x", ttl=1).put("y", key="y")
        clock.advance(2)
        assert mem.stats().active == mem.active_count() == 1


def test_a_custom_function_never_sees_an_expired_entry(clock: ManualClock) -> None:
    seen: list[Any] = []

    def decay(entry: Entry[Any, Any], now: datetime) -> float:
        seen.append(entry.key)
        return 0.5

    mem: Memory[Any, Any] = Memory(decay_fn=decay, clock_fn=clock).put("v", key="gone", ttl=1).put("w", key="kept")
    clock.advance(5)
    seen.clear()
    mem.scored()
    mem.stats()
    list(mem)
    assert set(seen) == {"kept"}


class ExpiryMachine(RuleBasedStateMachine):
    """A memory under random puts (with and without ``ttl``), rehearsals, pins, deletes and
    time, against a model of which keys are live.  Every entry put is, at the end, exactly
    one of: held, replaced, deleted, or reported once as evicted."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = fake_clock()
        self.reported: list[Any] = []
        self.mem: Memory[Any, Any] | None = None
        self.deadline: dict[str, float | None] = {}  # live keys: seconds since START, None: no deadline
        self.pinned: set[str] = set()
        self.gone_by_hand: list[Any] = []  # replaced or deleted: not reported
        self.put_count = 0

    @initialize(decay=st.sampled_from(["exponential", "actr", "custom"]), capacity=st.integers(2, 6))
    def build(self, decay: str, capacity: int) -> None:
        fn: Any = (lambda e, now: 0.5) if decay == "custom" else decay
        self.mem = Memory(
            max_entries=capacity, decay_fn=fn, half_life=600, clock_fn=self.clock, on_evict=self.reported.extend
        )

    def now(self) -> float:
        return (self.clock.now - START).total_seconds()

    def live(self) -> set[str]:
        now = self.now()
        return {k for k, d in self.deadline.items() if k in self.pinned or d is None or now < d}

    def absorb(self, new: Memory[Any, Any]) -> None:
        """Track what ``new`` removed (capacity victims and expired entries)."""
        for e in new.evicted:
            self.deadline.pop(e.key, None)
            self.pinned.discard(e.key)
        self.mem = new

    @rule(key=st.sampled_from("abcdefgh"), ttl=st.one_of(st.none(), st.integers(1, 120)))
    def put(self, key: str, ttl: int | None) -> None:
        assert self.mem is not None
        if key in self.mem:  # a replacement: the old entry goes, unreported
            self.gone_by_hand.append(self.mem.peek(key).value)
        elif key in self.deadline:  # expired but still held: the write reports it first
            pass
        try:
            new = self.mem.put(self.put_count, key=key, ttl=ttl)
        except MemoryFullError:
            return
        self.put_count += 1
        self.absorb(new)
        self.deadline[key] = None if ttl is None else self.now() + ttl
        self.pinned.discard(key)

    @rule(key=st.sampled_from("abcdefgh"))
    def rehearse(self, key: str) -> None:
        assert self.mem is not None
        if key not in self.live():
            with pytest.raises(KeyError):
                self.mem.get(key)
            return
        self.absorb(self.mem.get(key)[0])

    @rule(key=st.sampled_from("abcdefgh"))
    def pin(self, key: str) -> None:
        assert self.mem is not None
        if key in self.live():
            self.absorb(self.mem.pin(key))
            self.pinned.add(key)

    @rule(key=st.sampled_from("abcdefgh"))
    def delete(self, key: str) -> None:
        assert self.mem is not None
        held = {e["key"]: e["value"] for e in self.mem.to_dict()["entries"]}
        new = self.mem.delete(key)
        assert new.evicted == ()  # delete reports nothing and removes nothing else
        self.absorb(new)
        if key in held:  # live or past its deadline: removed, unreported
            self.gone_by_hand.append(held[key])
            self.deadline.pop(key)
            self.pinned.discard(key)

    @rule(seconds=st.integers(1, 90))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule()
    def evict(self) -> None:
        assert self.mem is not None
        new, out = self.mem.evict()
        assert new.evicted == out
        self.absorb(new)

    @invariant()
    def reads_agree_with_the_model(self) -> None:
        if self.mem is None:
            return
        live = self.live()
        assert set(self.mem.keys()) == live
        assert len(self.mem) == len(live)
        assert {e.key for e in self.mem} == live
        assert {e.key for e, _ in self.mem.scored()} == live
        assert self.mem.stats().size == len(live)

    @invariant()
    def nothing_is_lost_or_reported_twice(self) -> None:
        if self.mem is None:
            return
        reported = [e.value for e in self.reported]
        assert len(reported) == len(set(reported))
        held = [e["value"] for e in self.mem.to_dict()["entries"]]
        by_hand = self.gone_by_hand
        assert sorted(reported + held + by_hand) == list(range(self.put_count))


TestExpiryMachine = ExpiryMachine.TestCase
TestExpiryMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


class TestOneClockReadingPerCall:
    """A clock that moves on at every reading: a deadline falling between two readings of one
    call must never leave an entry both reported and held."""

    @pytest.mark.parametrize("decay", ["exponential", "actr"])
    @pytest.mark.parametrize("write", ["get", "touch", "update", "pin", "score", "time_until"])
    def test_the_entry_is_looked_up_at_the_calls_one_reading(self, decay: str, write: str) -> None:
        readings: list[datetime] = []
        clock = fake_clock()

        def ticking() -> datetime:
            clock.advance(1)
            readings.append(clock.now)
            return clock.now

        told: list[Any] = []
        mem: Memory[Any, Any] = Memory(decay_fn=decay, clock_fn=ticking, on_evict=told.extend)
        mem = mem.put("code", key="otp", ttl=1.5)  # read at +1 s: expires at +2.5 s
        readings.clear()
        call = {
            "get": lambda: mem.get("otp")[0],
            "touch": lambda: mem.touch("otp"),
            "update": lambda: mem.update("otp", "new"),
            "pin": lambda: mem.pin("otp"),
            "score": lambda: mem.score("otp"),
            "time_until": lambda: mem.time_until("otp", 0.5),
        }[write]
        result = call()  # read at +2 s: still live
        assert len(readings) == 1
        if isinstance(result, Memory):
            assert result.evicted == ()
            assert told == []
            assert [e["key"] for e in result.to_dict()["entries"]] == ["otp"]


def test_put_many_summarizes_an_expired_entry_once(clock: ManualClock) -> None:
    calls: list[Any] = []

    def summarize(entry: Entry[Any, Any]) -> str:
        calls.append(entry.key)
        return "gist"

    mem: Memory[Any, Any] = Memory(max_entries=2, summarize_fn=summarize, clock_fn=clock)
    mem = mem.put("code", key="otp", ttl=10).put("b", key="b")
    clock.advance(11)
    new = mem.put_many([("c", 1), ("d", 2)])  # over capacity: replayed put by put
    assert calls == ["otp", "b"]
    assert [e.key for e in new.evicted] == ["otp", "b"]
