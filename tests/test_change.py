"""Changes between versions: applying one rebuilds the newer version without the decay math or a hook.

The base of a replicated log: whatever an operation did (a put at capacity, an
eviction with summaries, an expiry, a consolidation, a clear), the change
found between the two versions, applied to the older one, gives a memory
equal to the newer one; and a cold replica folding every change from the
first version answers every read as the original does.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import Entry, Memory
from lethe._core.change import Change
from lethe._memory import version as _version
from lethe._memory.version import changes, config_of, restored, snapshot_of

from ._support import MODEL_IDS, MODELS, Model, fake_clock, summary

KEYS = st.one_of(st.integers(0, 12), st.sampled_from([True, False, "a", "b", (1, "x")]))
OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("put"), KEYS, st.sampled_from([0.0, 0.5, 1.0, 3.0]), st.booleans(), st.sampled_from([None, 30, 600])
        ),
        st.tuples(st.just("put_many"), st.lists(KEYS, max_size=5)),
        st.tuples(st.sampled_from(["get", "touch", "pin", "unpin", "delete"]), KEYS),
        st.tuples(st.sampled_from(["evict", "summarize", "clear", "consolidate"])),
        st.tuples(st.just("wait"), st.sampled_from([1, 60, 900, 7200, 86_400])),
    ),
    max_size=40,
)


def _step(mem: Memory[Any, Any], op: tuple[Any, ...], clock: Any) -> Memory[Any, Any]:
    kind = op[0]
    try:
        if kind == "put":
            _, key, importance, pinned, ttl = op
            ttl = None if pinned else ttl
            return mem.put(f"value of {key!r}", key=key, importance=importance, pinned=pinned, ttl=ttl)
        if kind == "put_many":
            return mem.put_many([(k, f"batch {k!r}") for k in op[1]])
        if kind == "get":
            return mem.get(op[1])[0]
        if kind in ("touch", "pin", "unpin", "delete"):
            return getattr(mem, kind)(op[1])  # type: ignore[no-any-return]
        if kind == "evict":
            return mem.evict()[0]
        if kind == "summarize":
            return mem.summarize()
        if kind == "clear":
            return mem.clear()
        if kind == "consolidate":
            return mem.consolidate(threshold=0.5)[0]
        clock.advance(timedelta(seconds=op[1]))
        return mem
    except (KeyError, LookupError):
        return mem
    except Exception as exc:  # at capacity with every entry pinned
        if type(exc).__name__ == "MemoryFullError":
            return mem
        raise


def _same_reads(a: Memory[Any, Any], b: Memory[Any, Any]) -> None:
    assert a == b
    assert [(e.key, s) for e, s in a.scored()] == [(e.key, s) for e, s in b.scored()]
    assert [e.key for e in a.top(3)] == [e.key for e in b.top(3)]
    assert a.next_eviction() == b.next_eviction()


@pytest.mark.parametrize("model", MODELS, ids=MODEL_IDS)
@settings(max_examples=12)
@given(ops=OPS)
def test_applying_each_change_gives_the_next_version(model: Model, ops: list[tuple[Any, ...]]) -> None:
    clock = fake_clock()
    first: Memory[Any, Any] = Memory(max_entries=6, decay_fn=model.make(), clock_fn=clock, summarize_fn=summary)
    mem = replica = first
    log: list[Change] = []
    for op in ops:
        new = _step(mem, op, clock)
        change = changes(mem, new)
        applied = _version.applied(mem, change)
        assert applied == new
        assert applied.evicted == new.evicted
        replica = _version.applied(replica, change)  # a replica that has seen every change
        log.append(change)
        mem = new
    _same_reads(replica, mem)
    # A cold replica: the first version rebuilt from its snapshot, then the log folded in.
    cold = restored(Memory, config_of(first), snapshot_of(first))
    for change in log:
        cold = _version.applied(cold, change)
    _same_reads(cold, mem)


def test_a_change_runs_no_hook_and_no_decay_function() -> None:
    clock = fake_clock()
    calls: list[str] = []

    def decay(e: Entry[Any, Any], now: Any) -> float:
        calls.append("decay")
        return 0.5

    def summarize(e: Entry[Any, Any]) -> str:
        calls.append("summarize")
        return "s"

    def on_evict(es: tuple[Entry[Any, Any], ...]) -> None:
        calls.append("on_evict")

    mem: Memory[Any, Any] = Memory(
        max_entries=2, decay_fn=decay, clock_fn=clock, summarize_fn=summarize, on_evict=on_evict
    )
    mem = mem.put("a", key="a").put("b", key="b")
    new = mem.put("c", key="c")  # evicts one, summarized and reported
    assert new.evicted
    assert calls
    calls.clear()
    change = changes(mem, new)
    replayed = _version.applied(mem, change)
    assert calls == []
    assert replayed == new
    assert [e.summary for e in change.evicted] == ["s"]


def test_the_change_of_one_write_to_a_large_memory_is_that_write() -> None:
    clock = fake_clock()
    mem: Memory[int, str] = Memory(max_entries=20_000, clock_fn=clock)
    mem = mem.put_many([(i, "v") for i in range(10_000)])
    clock.advance(60)
    new, _ = mem.get(7)
    change = changes(mem, new)
    assert [e.key for e in change.written] == [7]
    assert change.removed == ()
    assert (change.next_key, change.next_seq, change.latest) == (new._next_key, new._next_seq, new._latest)
    assert bool(change)
    assert not bool(changes(new, new))


def test_a_change_from_another_memory_is_refused() -> None:
    clock = fake_clock()
    a: Memory[str, str] = Memory(clock_fn=clock).put("x", key="x")
    change = Change((), ("missing",), 0, 1, None, float("-inf"))
    with pytest.raises(KeyError):
        _version.applied(a, change)
