"""Every write keeps the order index: reads after it score a handful of entries, not all.

A decay function that declares ``decay_rate`` is indexed.  This one counts how
often the memory asks it for a score, which makes the index observable: an
indexed ``top(3)`` of 2,000 entries asks a few times, a scan asks 2,000 times.
"""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from itertools import islice
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory

from ._support import fake_clock

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
N = 2000
FEW = 60  # well above what an indexed read needs, far below N


class CountingExponential:
    """exp(-rate * elapsed), counting its calls."""

    name = "counting"

    def __init__(self, half_life: float = 60.0) -> None:
        self.decay_rate = math.log(2.0) / half_life
        self.calls = 0

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        self.calls += 1
        elapsed = (now - entry.last_accessed_at).total_seconds()
        return math.exp(-self.decay_rate * max(elapsed, 0.0))


def summary_of(entry: Entry[Any, Any]) -> str:
    return f"about {entry.key}"


def _memory(clock: ManualClock, fn: CountingExponential, **kwargs: Any) -> Memory[Any, Any]:
    mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock, max_entries=N + 10, summarize_fn=summary_of, **kwargs)
    for start in range(0, N, 10):  # ten puts per second: few equal scores (ties are scanned)
        mem = mem.put_many([(i, f"v{i}") for i in range(start, start + 10)])
        clock.now += timedelta(seconds=1)
    return mem.put_many([(N + i, f"w{i}") for i in range(5)], importance=0.5)


def _refill(mem: Memory[Any, Any]) -> Memory[Any, Any]:
    for i in range(N):  # one instant, distinct importances: no ties
        mem = mem.put(i, key=i, importance=(i + 1) / N)
    return mem


WRITES: dict[str, Callable[[Memory[Any, Any]], Memory[Any, Any]]] = {
    "put": lambda m: m.put("x", key="new"),
    "put_many": lambda m: m.put_many([("a", 1), ("b", 2)]),
    "put_many_bulk": lambda m: m.put_many([(f"n{i}", i) for i in range(N)], importance=0.001),
    "get": lambda m: m.get(5)[0],
    "touch": lambda m: m.touch(6, importance=2.0),
    "update": lambda m: m.update(7, "new value"),
    "pin": lambda m: m.pin(8),
    "unpin": lambda m: m.pin(9).unpin(9),
    "delete": lambda m: m.delete(10),
    "clear": lambda m: _refill(m.clear()),
    "put_many_replace": lambda m: m.put_many([(5, "again"), (6, "again")]),
    "summarize": lambda m: m.__replace__(summarize_threshold=0.9).summarize(),
    "evict": lambda m: m.__replace__(eviction_threshold=0.6, summarize_threshold=0.6).evict()[0],
    "evict_few": lambda m: m.__replace__(eviction_threshold=0.45, summarize_threshold=0.45).evict()[0],
    "consolidate": lambda m: m.put("same words here", key="d1").put("same words here", key="d2").consolidate()[0],
    "replace": lambda m: (
        copy.replace(m, max_entries=N + 20) if hasattr(copy, "replace") else m.__replace__(max_entries=N + 20)
    ),
    "pickle": lambda m: pickle.loads(pickle.dumps(m)),
    "from_dict": lambda m: Memory.from_dict(m.to_dict(), decay_fn=m.decay_fn, clock_fn=m.clock_fn),
    "at_capacity": lambda m: m.__replace__(max_entries=len(m)).put("x", key="over"),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_reads_after_every_write_stay_indexed(write: str) -> None:
    clock = fake_clock(T0)
    mem = WRITES[write](_memory(clock, CountingExponential()))
    assert len(mem) > 0
    fn = mem.decay_fn  # a copy after pickling
    assert isinstance(fn, CountingExponential)
    reads: dict[str, Callable[[], object]] = {
        "top": lambda: mem.top(3),
        "iter": lambda: list(islice(iter(mem), 3)),
        "above": lambda: mem.above(0.99),
        "next_eviction": mem.next_eviction,
        "at_capacity": lambda: mem.__replace__(max_entries=len(mem)).put("y", key="one more"),
    }
    for name, read in reads.items():
        fn.calls = 0
        read()
        # A forecast bisects each candidate's curve (~30 scores each): still far from N entries.
        limit = N // 2 if name == "next_eviction" else FEW
        assert fn.calls < limit, f"{name} after {write} asked for {fn.calls} scores"


def test_the_same_reads_scan_without_a_declared_rate() -> None:
    """The premise: without ``decay_rate`` the same reads score every entry."""
    clock = fake_clock(T0)
    fn = CountingExponential()
    mem = _memory(clock, fn)
    plain: Memory[Any, Any] = Memory.from_dict(mem.to_dict(), decay_fn=lambda e, now: fn.score(e, now), clock_fn=clock)
    fn.calls = 0
    plain.top(3)
    assert fn.calls >= N


def test_put_many_defaults_and_deadlines() -> None:
    clock = fake_clock(T0)
    mem: Memory[Any, Any] = Memory(clock_fn=clock, max_entries=3)
    deadline = T0 + timedelta(minutes=5)
    mem = mem.put_many([("a", 1)], expires_at=deadline).put_many([("b", 2)], ttl=60)
    assert mem.peek("a").importance == 1.0
    assert mem.peek("a").expires_at == deadline
    assert mem.peek("b").expires_at == T0 + timedelta(seconds=60)
    clock.now += timedelta(seconds=61)
    assert [e.key for e in mem.active()] == ["a"]
    assert [e.key for e in mem.__replace__(max_entries=5).evict()[1]] == ["b"]
    # Overflowing puts are replayed one by one, deadlines included.
    mem = mem.put_many([("c", 3), ("d", 4)], ttl=10)
    assert sorted(mem.keys()) == ["a", "c", "d"]
    clock.now += timedelta(seconds=11)
    assert [e.key for e in mem.evict()[1]] == ["d", "c"]


def test_put_many_then_an_earlier_clock_keeps_time_from_running_back() -> None:
    clock = fake_clock(T0)
    mem: Memory[Any, Any] = Memory(clock_fn=clock, half_life=60)
    clock.now += timedelta(hours=1)
    mem = mem.put_many([("a", 1), ("b", 2)])
    clock.now = T0  # the clock steps back
    assert mem.score("a") == 1.0
    assert [e.key for e in mem.top(2)] == ["b", "a"]


@pytest.mark.parametrize(
    ("items", "message"),
    [([("k", "v"), "pair?"], "got str"), ([(["k"], "v")], "got list"), ([(["k"], None)], "key must be hashable")],
)
def test_put_many_error_messages_name_the_type(items: list[Any], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        Memory().put_many(items)


def test_copy_replace_with_a_custom_function_whose_name_is_not_a_string() -> None:
    def fn(entry: Entry[Any, Any], now: datetime) -> float:
        return 1.0

    fn.name = ["not", "a", "string"]  # type: ignore[attr-defined]
    mem: Memory[Any, Any] = Memory(decay_fn=fn).put("v", key="k")
    changed = mem.__replace__(half_life=120)
    assert changed.decay_fn is fn
    assert changed.half_life == 120.0


def test_put_many_deadline_given_as_a_moment_expires() -> None:
    clock = fake_clock(T0)
    mem: Memory[Any, Any] = Memory(clock_fn=clock).put_many([("a", 1)], expires_at=T0 + timedelta(minutes=5))
    clock.now += timedelta(minutes=5)
    assert mem.active() == []
    assert [e.key for e in mem.evict()[1]] == ["a"]


def test_put_many_replacing_a_few_keys_of_a_large_memory() -> None:
    clock = fake_clock(T0)
    mem: Memory[Any, Any] = Memory(clock_fn=clock, half_life=60.0)
    for i in range(40):
        mem = mem.put(i, key=i)
        clock.now += timedelta(seconds=1)
    bulk = mem.put_many([(3, "again")])
    chained = mem.put("again", key=3)
    assert bulk.to_dict() == chained.to_dict()
    assert [e.key for e in bulk.top(2)] == [3, 39]


def test_a_custom_merge_from_the_future_is_refused() -> None:
    # An entry's times are clock readings: one after the memory's would move its clock there for
    # good (every other entry scoring as of then).
    clock = fake_clock(T0)
    mem: Memory[Any, Any] = Memory(clock_fn=clock, half_life=60.0).put("same", key="a").put("same", key="b")
    later = T0 + timedelta(minutes=1)

    def merge(group: tuple[Entry[Any, Any], ...]) -> Entry[Any, Any]:
        return Entry(key="a", value="merged", inserted_at=T0, last_accessed_at=later)

    with pytest.raises(ValueError, match=r"^merge returned an entry last accessed at"):
        mem.consolidate(merge=merge)
    merged, groups = mem.consolidate(
        merge=lambda group: Entry(key="a", value="merged", inserted_at=T0, last_accessed_at=T0)
    )
    assert len(groups) == 1
    assert merged.score("a") == 1.0
    assert merged.put("x", key="x").peek("x").last_accessed_at == T0
