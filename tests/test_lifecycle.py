"""Time-to-live, forecasts (time_until, next_eviction) and consolidation."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory, jaccard_words

from ._support import START

HOUR = timedelta(hours=1)


class TestTTL:
    def test_expired_entry_scores_zero_and_is_hidden_then_evicted(self, clock: ManualClock) -> None:
        reported: list[Any] = []
        for decay in ("exponential", "access_weighted", "actr"):
            reported.clear()
            mem: Memory[Any, Any] = Memory(decay_fn=decay, clock_fn=clock, on_evict=reported.append)
            mem = mem.put("short", key="s", ttl=60).put("long", key="l", expires_at=clock.now + HOUR)
            assert mem.peek("s").expires_at == clock.now + timedelta(seconds=60)
            assert mem.score("s") == 1.0
            clock.advance(61)
            assert "s" not in mem
            with pytest.raises(KeyError):
                mem.score("s")
            assert [e.key for e in mem.active()] == ["l"]
            assert [e.key for e in mem.top(5)] == ["l"]
            assert mem.above(0.0) == [mem.peek("l")]
            assert [e.key for e in mem] == ["l"]
            assert len(mem) == 1
            new, evicted = mem.evict()
            assert [e.key for e in evicted] == ["s"]
            assert reported == [evicted]
            assert list(new.keys()) == ["l"]
            clock.now = START

    def test_expired_entries_are_evicted_even_with_zero_threshold(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(eviction_threshold=0.0, summarize_threshold=0.0, clock_fn=clock)
        mem = mem.put("x", key="x", ttl=1)
        clock.advance(2)
        assert mem.active() == []
        assert [e.key for e in mem.evict()[1]] == ["x"]

    def test_expired_entry_is_the_first_capacity_victim(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(max_entries=2, clock_fn=clock)
        mem = mem.put("a", key="a").put("b", key="b", importance=5.0, ttl=10)
        clock.advance(11)
        mem = mem.put("c", key="c")
        assert sorted(mem.keys()) == ["a", "c"]

    def test_pinned_entries_cannot_be_put_with_a_deadline(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock)
        with pytest.raises(ValueError, match="ttl"):
            mem.put("x", pinned=True, ttl=5)
        with pytest.raises(ValueError, match="ttl"):
            mem.put("x", ttl=5, expires_at=clock.now)
        with pytest.raises(ValueError, match="ttl"):
            mem.put("x", ttl=-5)
        with pytest.raises(ValueError, match="expires_at"):
            mem.put("x", expires_at=datetime(2030, 1, 1))

    def test_pinning_suspends_the_deadline(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("x", key="x", ttl=5).pin("x")
        clock.advance(10)
        assert mem.score("x") == 1.0
        assert mem.evict()[1] == ()
        unpinned = mem.unpin("x")
        assert "x" not in unpinned  # its deadline runs again, and it has passed
        assert [e.key for e in unpinned.evict()[1]] == ["x"]

    def test_deadline_round_trips(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("x", key="x", ttl=30)
        back = Memory.from_dict(json.loads(json.dumps(mem.to_dict())), clock_fn=clock)
        assert back == mem
        assert back.peek("x").expires_at == mem.peek("x").expires_at


class TestForecasts:
    @pytest.mark.parametrize("decay", ["exponential", "access_weighted", "actr"])
    def test_time_until_matches_the_score(self, clock: ManualClock, decay: str) -> None:
        mem: Memory[Any, Any] = Memory(decay_fn=decay, clock_fn=clock).put("v", key="k", importance=0.8)
        clock.advance(600)
        mem = mem.touch("k")
        clock.advance(300)
        wait = mem.time_until("k", 0.2)
        assert wait is not None
        assert wait > timedelta(0)
        clock.advance(wait - timedelta(milliseconds=1))
        assert mem.score("k") >= 0.2
        clock.advance(timedelta(milliseconds=2))
        assert mem.score("k") < 0.2

    def test_closed_form_is_exact(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(half_life=3600, clock_fn=clock).put("v", key="k", importance=0.5)
        assert mem.time_until("k", 0.25) == HOUR + timedelta(microseconds=1)
        assert mem.time_until("k", 0.9) == timedelta(0)

    def test_pinned_never_and_zero_threshold_never(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("v", key="p", pinned=True).put("w", key="w")
        assert mem.time_until("p", 0.5) is None
        assert mem.time_until("w", 0.0) is None
        with pytest.raises(KeyError):
            mem.time_until("nope", 0.5)

    def test_custom_function_that_never_decays(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(decay_fn=lambda e, now: 0.7, clock_fn=clock).put("v", key="k")
        assert mem.time_until("k", 0.5) is None
        assert mem.next_eviction() is None

    def test_deadline_counts(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(half_life=3600, clock_fn=clock).put("v", key="k", ttl=60)
        assert mem.time_until("k", 0.5) == timedelta(seconds=60)

    def test_next_eviction(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(half_life=3600, eviction_threshold=0.25, summarize_threshold=0.25)
        mem = mem.__replace__(clock_fn=clock)
        assert mem.next_eviction() is None
        mem = mem.put("a", key="a").put("b", key="b", importance=0.5).put("p", key="p", pinned=True)
        assert mem.next_eviction() == START + HOUR + timedelta(microseconds=1)
        # Sweeping at the forecast moment removes the entry (the forecast is strictly past the crossing).
        clock.now = START + HOUR + timedelta(microseconds=1)
        assert [e.key for e in mem.evict()[1]] == ["b"]
        clock.now = START
        mem = mem.put("t", key="t", ttl=60)
        assert mem.next_eviction() == START + timedelta(seconds=60)
        clock.advance(2 * HOUR + timedelta(seconds=1))
        assert mem.next_eviction() == clock.now
        swept, evicted = mem.evict()
        assert sorted(e.key for e in evicted) == ["a", "b", "t"]
        assert swept.next_eviction() is None


class TestConsolidate:
    def test_default_merge(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(decay_fn="actr", clock_fn=clock)
        mem = mem.put("the user likes dark mode in the editor", key="a", importance=0.5, metadata={"src": "chat"})
        clock.advance(60)
        mem, _ = mem.get("a")
        mem = mem.put("user likes dark mode in the editor", key="b", importance=0.9, metadata={"tag": 1})
        mem = mem.put("deploy failed on node 7", key="c")
        mem = mem.put("the user likes dark mode in the editor", key="pinned", pinned=True)
        merged, groups = mem.consolidate()
        assert [[e.key for e in g] for g in groups] == [["b", "a"]]
        assert sorted(merged.keys()) == ["b", "c", "pinned"]
        e = merged.peek("b")
        assert e.value == "user likes dark mode in the editor"
        assert e.access_count == 1
        assert e.importance == 0.9
        assert e.inserted_at == START
        assert dict(e.metadata) == {"src": "chat", "tag": 1, "consolidated_from": ["a"]}
        assert len(e.decay_state) == 3  # a's insertion and rehearsal, b's insertion
        assert len(mem) == 4

    def test_nothing_to_merge_returns_the_same_memory(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("alpha beta", key=1).put("gamma delta", key=2)
        assert mem.consolidate() == (mem, [])

    def test_custom_similarity_and_merge(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock)
        for i, v in enumerate([10, 11, 30, 12]):
            mem = mem.put(v, key=i)

        def close(a: int, b: int) -> float:
            return 1.0 if abs(a - b) <= 1 else 0.0

        def keep_smallest(group: tuple[Entry[Any, Any], ...]) -> Entry[Any, Any]:
            return min(group, key=lambda e: e.value)

        merged, groups = mem.consolidate(similarity=close, threshold=1.0, merge=keep_smallest)
        assert sorted(merged.keys()) == [0, 2]
        assert sorted(e.key for e in groups[0]) == [0, 1, 3]

    def test_bad_arguments(self, clock: ManualClock) -> None:
        mem: Memory[Any, Any] = Memory(clock_fn=clock).put("a b", key=1).put("a b", key=2)
        with pytest.raises(ValueError, match="threshold"):
            mem.consolidate(threshold=1.5)
        with pytest.raises(ValueError, match="min_group"):
            mem.consolidate(min_group=1)
        with pytest.raises(TypeError, match="similarity"):
            mem.consolidate(similarity=3)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="merge"):
            mem.consolidate(merge=lambda g: "x")  # type: ignore[arg-type,return-value]
        with pytest.raises(ValueError, match="not in its group"):
            mem.consolidate(merge=lambda g: g[0].__class__(key=99, value=1, inserted_at=START, last_accessed_at=START))

    def test_prefix_filter_finds_the_same_groups_as_all_pairs(self, clock: ManualClock) -> None:
        import random

        rng = random.Random(7)
        vocab = [f"w{i}" for i in range(60)]
        mem: Memory[Any, Any] = Memory(max_entries=5000, clock_fn=clock)
        base = [rng.sample(vocab, 8) for _ in range(300)]
        for i in range(1500):
            words = list(base[i % 300])
            if rng.random() < 0.5:
                words[rng.randrange(8)] = rng.choice(vocab)
            mem = mem.put(" ".join(words), key=i)
        fast = mem.consolidate(threshold=0.7)[1]
        slow = mem.consolidate(similarity=lambda a, b: jaccard_words(a, b), threshold=0.7)[1]
        assert sorted(sorted(e.key for e in g) for g in fast) == sorted(sorted(e.key for e in g) for g in slow)
        assert fast


def test_jaccard_words() -> None:
    assert jaccard_words("A b c", "a B d") == 0.5
    assert jaccard_words("", "") == 0.0
    assert jaccard_words("same", "SAME") == 1.0
