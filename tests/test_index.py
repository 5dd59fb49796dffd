"""The order index answers exactly as a full scan would.

A memory with ``Exponential`` keeps an index on the ranking; its twin uses the
same formula through a plain callable, which the memory cannot index and so
scans.  Driven through the same random operations, the two must agree on
every answer: ranking, ``top``, ``above``, victims at capacity, ``evict`` and
``next_eviction`` — including the ties that clamping at 1.0, underflow to
0.0, importance 0, equal timestamps and deadlines create.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import Entry, ManualClock, Memory
from lethe.decay import Exponential
from lethe.ranking import Order, Scan

from ._support import fake_clock

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
HALF_LIFE = 60.0


class Scanned:
    """Exponential's formula behind a callable: nothing the memory can index."""

    def __init__(self) -> None:
        self._fn = Exponential(HALF_LIFE)

    def __call__(self, entry: Entry[Any, Any], now: datetime) -> float:
        return self._fn.score(entry, now)


def _twins(cap: int, clock: ManualClock, log: list[tuple[str, Any]]) -> tuple[Memory[Any, Any], Memory[Any, Any]]:
    def on_evict(tag: str) -> Any:
        return lambda es: log.append((tag, [e.key for e in es]))

    def summarize(e: Entry[Any, Any]) -> str:
        return f"summary of {e.key}"

    common: dict[str, Any] = {
        "max_entries": cap,
        "half_life": HALF_LIFE,
        "clock_fn": clock,
        "summarize_fn": summarize,
        "eviction_threshold": 0.1,
        "summarize_threshold": 0.3,
    }
    indexed: Memory[Any, Any] = Memory(decay_fn="exponential", on_evict=on_evict("indexed"), **common)
    scanned: Memory[Any, Any] = Memory(decay_fn=Scanned(), on_evict=on_evict("scanned"), **common)
    assert isinstance(indexed._ranking, Order)
    assert isinstance(scanned._ranking, Scan)
    return indexed, scanned


keys = st.integers(0, 7)
importances = st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 1e300])
steps = st.sampled_from([0.0, 0.0, 1.0, 30.0, 60.0, 120.0, 3600.0, 86_400.0 * 60])
ops = st.one_of(
    st.tuples(st.just("put"), keys, importances, st.booleans(), st.sampled_from([None, None, 30.0, 600.0])),
    st.tuples(st.just("get"), keys),
    st.tuples(st.just("touch"), keys, importances),
    st.tuples(st.just("pin"), keys),
    st.tuples(st.just("unpin"), keys),
    st.tuples(st.just("delete"), keys),
    st.tuples(
        st.just("evict"),
    ),
    st.tuples(
        st.just("summarize"),
    ),
    st.tuples(st.just("advance"), steps),
)


def _apply(mem: Memory[Any, Any], op: tuple[Any, ...]) -> tuple[Memory[Any, Any], Any]:
    name, *args = op
    if name == "put":
        key, importance, pinned, ttl = args
        return mem.put(f"v{key}", key=key, importance=importance, pinned=pinned, ttl=None if pinned else ttl), None
    if name == "evict":
        new, out = mem.evict()
        return new, [(e.key, e.summary) for e in out]
    if name == "summarize":
        return mem.summarize(), None
    key = args[0]
    if key not in mem:
        return mem, None
    if name == "get":
        new, entry = mem.get(key)
        return new, entry.key
    if name == "touch":
        return mem.touch(key, importance=args[1]), None
    return getattr(mem, name)(key), None


def _observe(mem: Memory[Any, Any]) -> dict[str, Any]:
    return {
        "ranked": [(e.key, s) for e, s in mem.scored()],
        "iter": [e.key for e in mem],
        "top": [[e.key for e in mem.top(k)] for k in (0, 1, 3, 20)],
        "active": [e.key for e in mem.active()],
        "above": [[e.key for e in mem.above(t)] for t in (0.0, 0.5, 1.0)],
        "stats": mem.stats(),
        "next_eviction": mem.next_eviction(),
    }


def run_twins(cap: int, script: list[tuple[Any, ...]], apply: Any) -> None:
    """Run ``script`` on an indexed memory and a scanned twin; after every step both must
    have answered, failed, evicted and reported alike, and hold the same entries."""
    clock = fake_clock(T0)
    log: list[tuple[str, Any]] = []
    indexed, scanned = _twins(cap, clock, log)
    for op in script:
        if op[0] == "advance":
            clock.now += timedelta(seconds=op[1])
            continue
        try:
            indexed, got = apply(indexed, op)
        except Exception as exc:  # the same error, raised by both
            failure: Any = (type(exc), str(exc))
        else:
            failure = None
        try:
            scanned, want = apply(scanned, op)
        except Exception as exc:
            expected: Any = (type(exc), str(exc))
        else:
            expected = None
        assert failure == expected
        if expected is not None:
            continue
        assert failure is None
        assert got == want
        assert _observe(indexed) == _observe(scanned)
        assert [e for e in log if e[0] == "indexed"] == [("indexed", k) for tag, k in log if tag == "scanned"]
        assert sorted(e.key for e in indexed._entries.values()) == sorted(e.key for e in scanned._entries.values())
        assert all(e == scanned.peek(e.key) for e in indexed)


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 6), st.lists(ops, max_size=60))
def test_indexed_memory_answers_as_a_scan(cap: int, script: list[tuple[Any, ...]]) -> None:
    run_twins(cap, script, _apply)


def test_the_index_survives_a_clock_jump_far_past_its_origin() -> None:
    """Keys are re-based when time moves far on; old and new entries still rank right."""
    clock = fake_clock(T0)
    mem: Memory[Any, Any] = Memory(max_entries=3, half_life=1.0, clock_fn=clock)
    mem = mem.put("old", key="old", importance=1e300)
    clock.now += timedelta(days=3)  # 2.6e5 half-lives: past the re-basing bound
    mem = mem.put("a", key="a", importance=0.5).put("b", key="b")
    assert [e.key for e in mem] == ["b", "a", "old"]
    assert mem.score("old") == 0.0
    assert mem.score("a") == 0.5
    mem = mem.put("c", key="c")
    assert "old" not in mem
    assert len(mem) == 3


def test_clamped_entries_rank_by_how_far_above_one_they_are() -> None:
    """Entries clamped at 1.0 tie on score; the one that stays at 1.0 longer ranks first."""
    for decay in ("exponential", Scanned()):
        clock = fake_clock(T0)
        mem: Memory[Any, Any] = Memory(max_entries=10, half_life=60.0, clock_fn=clock, decay_fn=decay)
        mem = mem.put("x", key="big", importance=8.0).put("y", key="one", importance=1.0)
        mem = mem.put("z", key="bigger", importance=64.0).put("w", key="also one", importance=1.0)
        assert [s for _, s in mem.scored()] == [1.0] * 4
        assert [e.key for e in mem] == ["bigger", "big", "also one", "one"]
        clock.now += timedelta(seconds=120)  # the importance-1 entries decay; the others stay clamped
        assert [e.key for e in mem.top(3)] == ["bigger", "big", "also one"]
        assert mem.score("big") == 1.0


def _replay(
    script: list[tuple[Any, ...]], cap: int
) -> tuple[Memory[Any, Any], Memory[Any, Any], list[tuple[str, Any]]]:
    """Run ``script`` on both twins: ``(indexed, scanned, hook log)``."""
    clock = fake_clock(T0)
    log: list[tuple[str, Any]] = []
    indexed, scanned = _twins(cap, clock, log)
    for op in script:
        if op[0] == "advance":
            clock.now += timedelta(seconds=op[1])
            continue
        indexed, _ = _apply(indexed, op)
        scanned, _ = _apply(scanned, op)
    return indexed, scanned, log


def _victims(script: list[tuple[Any, ...]], cap: int) -> list[Any]:
    """Run ``script`` on both twins; return what each evicted at capacity (they must agree)."""
    _, _, log = _replay(script, cap)
    got = [k for tag, k in log if tag == "indexed"]
    assert got == [k for tag, k in log if tag == "scanned"]
    return got


def test_every_zero_score_ties_and_the_earliest_put_goes_first() -> None:
    """Importance 0 and underflow score 0.0: put order decides.  An expired entry is gone
    before capacity counts: the write removes it first, whatever its put order."""
    zero_first = [("put", "zero", 0.0, False, None), ("put", "ttl", 1.0, False, 30.0), ("advance", 60.0)]
    assert _victims([*zero_first, ("put", "new", 1.0, False, None)], cap=2) == [["ttl"]]
    zeros = [("put", "z1", 0.0, False, None), ("put", "z2", 0.0, False, None), ("advance", 60.0)]
    assert _victims([*zeros, ("put", "new", 1.0, False, None)], cap=2) == [["z1"]]
    ttl_first = [("put", "ttl", 1.0, False, 30.0), ("put", "zero", 0.0, False, None), ("advance", 60.0)]
    assert _victims([*ttl_first, ("put", "new", 1.0, False, None)], cap=2) == [["ttl"]]
    faded = [("put", "a", 4.0, False, None), ("put", "b", 1.0, False, None), ("advance", 86_400.0 * 60)]
    assert _victims([*faded, ("put", "new", 1.0, False, None)], cap=2) == [["a"]]


def test_when_every_entry_is_clamped_the_least_important_goes_first_then_the_earliest_put() -> None:
    script = [("put", k, imp, False, None) for k, imp in (("a", 8.0), ("b", 2.0), ("c", 2.0), ("d", 4.0))]
    assert _victims([*script, ("put", "new", 8.0, False, None)], cap=4) == [["b"]]
    assert _victims([("put", "p", 1.0, True, None), *script, ("put", "new", 8.0, False, None)], cap=5) == [["b"]]


@pytest.mark.parametrize("faded", [0, 3, 60])
def test_evict_of_a_few_or_of_many_answers_as_a_scan(faded: int) -> None:
    """A sweep that removes a few entries edits the index in place; one that removes many rebuilds it."""
    script: list[tuple[Any, ...]] = [("put", f"old{i}", 1.0, False, None) for i in range(faded)]
    script += [("advance", 600.0)]
    script += [("put", f"new{i}", 1.0 + (i % 3), i % 7 == 0, None) for i in range(200)]
    script += [("put", f"mid{i}", 0.25, False, None) for i in range(4)]
    indexed, scanned, _ = _replay(script, 500)
    indexed, got = _apply(indexed, ("evict",))
    scanned, want = _apply(scanned, ("evict",))
    assert got == want
    assert len(got) == faded
    assert len(indexed) == 204  # the 200 new and 4 fading entries stay
    assert not any(key in indexed for key, _ in got)
    assert _observe(indexed) == _observe(scanned)
    assert list(indexed) == list(scanned)


def test_a_subclass_that_changes_the_score_is_not_indexed_by_its_base_rate() -> None:
    """Inheriting ``decay_rate`` is no promise about an overridden ``score``: rank by the scores."""

    class Backwards(Exponential):
        def score(self, entry: Entry[Any, Any], now: datetime) -> float:
            return 1.0 - super().score(entry, now)  # older is better

    clock = fake_clock(T0)
    mem: Memory[Any, Any] = Memory(decay_fn=Backwards(60.0), clock_fn=clock, max_entries=2)
    mem = mem.put("a", key="old")
    clock.now += timedelta(seconds=60)
    mem = mem.put("b", key="new")
    clock.now += timedelta(seconds=60)
    assert [e.key for e in mem.top(2)] == ["old", "new"]
    assert [e.key for e in mem] == ["old", "new"]
    mem = mem.put("c", key="newest")  # at capacity: the lowest score goes, which is the newest-but-one
    assert sorted(e.key for e in mem) == ["newest", "old"]

    class Faster(Exponential):
        @property
        def decay_rate(self) -> float:
            return 2 * super().decay_rate

        def score(self, entry: Entry[Any, Any], now: datetime) -> float:
            s = super().score(entry, now)
            return s * s

    indexed: Memory[Any, Any] = Memory(decay_fn=Faster(60.0), clock_fn=clock)
    assert isinstance(indexed._ranking, Order)  # it declared the rate of the score it has


def test_of_entries_put_at_one_instant_the_earliest_put_is_evicted_first() -> None:
    clock = fake_clock(T0)
    mem: Memory[Any, Any] = Memory(max_entries=4, half_life=60.0, clock_fn=clock)
    mem = mem.put(0, key="pinned", pinned=True)
    mem = mem.put_many([("a", 1), ("b", 2)])  # equal scores for ever after
    clock.now += timedelta(seconds=10)
    mem = mem.put(3, key="c")
    clock.now += timedelta(seconds=10)
    mem = mem.put(4, key="d")
    assert sorted(mem.keys()) == ["b", "c", "d", "pinned"]
    mem = mem.put(5, key="e")
    assert sorted(mem.keys()) == ["c", "d", "e", "pinned"]


def test_top_walks_past_an_expired_entry_that_ranked_first() -> None:
    clock = fake_clock(T0)
    mem: Memory[Any, Any] = Memory(half_life=60.0, clock_fn=clock)
    mem = mem.put("x", key="x").put("e", key="e", importance=4.0, ttl=5).put("y", key="y", importance=0.5)
    clock.now += timedelta(seconds=10)
    assert [e.key for e in mem.top(3)] == ["x", "y"]
    assert [e.key for e in mem] == ["x", "y"]  # expired: gone for every read


def test_evict_then_an_earlier_clock_keeps_the_later_time() -> None:
    clock = fake_clock(T0)
    mem: Memory[Any, Any] = Memory(half_life=60.0, clock_fn=clock).put("a", key="a").put("b", key="b", importance=0.01)
    clock.now += timedelta(seconds=60)
    mem, gone = mem.evict()
    assert [e.key for e in gone] == ["b"]
    clock.now -= timedelta(seconds=60)  # the clock steps back
    assert mem.score("a") == 0.5


def test_an_entry_exactly_at_the_summarize_threshold_is_not_summarized() -> None:
    clock = fake_clock(T0)
    mem: Memory[Any, Any] = Memory(
        half_life=60.0, clock_fn=clock, summarize_fn=lambda e: "s", summarize_threshold=0.5, eviction_threshold=0.1
    )
    mem = mem.put("a", key="a").put("b", key="b", importance=0.99)
    clock.now += timedelta(seconds=60)  # a scores exactly 0.5, b just below
    mem, _ = mem.evict()
    assert mem.peek("a").summary is None
    assert mem.peek("b").summary == "s"


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda m: m.top("3"), TypeError, "n must be an int, got str"),
        (lambda m: m.top(-1), ValueError, "n must be >= 0, got -1"),
        (lambda m: m.pin("k").put("v", key="other"), Exception, "every entry is pinned; unpin or delete one first"),
    ],
)
def test_messages(call: Any, error: type[Exception], message: str) -> None:
    mem: Memory[Any, Any] = Memory(max_entries=1, clock_fn=fake_clock(T0)).put("v", key="k")
    with pytest.raises(error, match=message):
        call(mem)


def test_consolidate_keeps_the_seq_of_the_entry_a_custom_merge_replaces() -> None:
    clock = fake_clock(T0)
    mem: Memory[Any, Any] = Memory(clock_fn=clock).put("same text", key="a").put("same text", key="b")
    seq_of_a = mem.peek("a").seq

    def merge(group: tuple[Entry[Any, Any], ...]) -> Entry[Any, Any]:
        return Entry(key="a", value="merged", inserted_at=T0, last_accessed_at=T0, seq=999)

    merged, _ = mem.consolidate(merge=merge)
    assert merged.peek("a").seq == seq_of_a
    assert merged.put("next", key="c").peek("c").seq == 2
