"""Fault injection: every hook call an operation makes can fail, and nothing changes.

For each operation and each decay model in ``tests/_support.MODELS``, the hooks
the operation calls (``summarize_fn``, ``on_evict``, ``clock_fn`` and the decay
function's ``score``/``rehearse``) are first counted on a dry run; then the
same operation is repeated once per call, with that hook raising on exactly
that call.  Each time the caller's memory must be unchanged (``to_dict()`` and
``score_map()`` as before), still pass its invariants, the error must be the
documented one (``SummarizeError`` from the original for ``summarize_fn``, the
original exception for the others), and the operation retried with the fault
cleared must give what an undisturbed run gives.

Every model runs twice: as itself (built-ins take the memory's fast paths), and
behind :class:`~tests._support.FaultyDecay`, a custom object that scores and
rehearses exactly as the model does but can fail on any call.

    LETHE_FAULTS_REPORT=faults.json python -m pytest -q tests/test_faults.py

(the report counts the injected faults per operation and per decay function).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from lethe import Entry, Memory, SummarizeError

from ._support import BY_ID, HOUR, METADATA, MODEL_IDS, Boom, Fault, FaultyDecay, fake_clock, invariants, summary

#: Faults injected over the whole module (docs/reliability.md quotes the total).
INJECTED: Counter[str] = Counter()


class Rig:
    """A memory whose hooks can each be made to fail on a chosen call."""

    def __init__(self, model: str, wrapped: bool) -> None:
        self.clock = fake_clock()
        self.evicted: list[tuple[Entry[Any, Any], ...]] = []
        self.hooks: dict[str, Fault] = {
            "summarize_fn": Fault(summary),
            "on_evict": Fault(self.evicted.append),
            "clock_fn": Fault(self.clock),
        }
        decay_fn: Any = BY_ID[model].make()
        if wrapped:
            self.hooks["decay"] = FaultyDecay(decay_fn)
            decay_fn = self.hooks["decay"]
        self.mem: Memory[Any, Any] = Memory(
            max_entries=4,
            decay_fn=decay_fn,
            eviction_threshold=0.05,
            summarize_threshold=0.4,
            summarize_fn=self.hooks["summarize_fn"],
            on_evict=self.hooks["on_evict"],
            clock_fn=self.hooks["clock_fn"],
        )
        # Four entries: one faded (evictable), one fading (summarizable), one fresh, one pinned
        # (under the exponential models; slower ones keep more of them).
        mem = self.mem.put("old", key="old", metadata=METADATA[1])
        self.clock.advance(5 * HOUR)
        mem = mem.put("mid", key="mid", metadata=METADATA[2])
        self.clock.advance(timedelta(minutes=90))
        mem = mem.put("new", key="new", importance=0.8).put("pin", key="pin", pinned=True)
        self.clock.advance(timedelta(minutes=10))
        self.mem = mem

    def disarm(self) -> None:
        for hook in self.hooks.values():
            hook.arm(None)

    def snapshot(self) -> tuple[Any, Any]:
        self.disarm()
        return self.mem.to_dict(), self.mem.score_map()


def _result(out: Any) -> Any:
    """A comparable form of what an operation returned."""
    if isinstance(out, Memory):
        return ("memory", out.to_dict(), out.score_map())
    if isinstance(out, tuple) and out and isinstance(out[0], Memory):
        return ("memory+", out[0].to_dict(), out[0].score_map(), out[1])
    return ("value", out)


OPERATIONS: dict[str, Callable[[Memory[Any, Any]], Any]] = {
    "put new key at capacity": lambda m: m.put("x", key="x"),
    "put auto key at capacity": lambda m: m.put("y"),
    "put existing key": lambda m: m.put("again", key="mid"),
    "get": lambda m: m.get("mid"),
    "touch": lambda m: m.touch("old", importance=2.0),
    "update": lambda m: m.update("new", "newer"),
    "pin": lambda m: m.pin("old"),
    "unpin": lambda m: m.unpin("pin"),
    "delete": lambda m: m.delete("old"),
    "clear": lambda m: m.clear(),
    "summarize": lambda m: m.summarize(),
    "evict": lambda m: m.evict(),
    "scored": lambda m: m.scored(),
    "score_map": lambda m: m.score_map(),
    "score": lambda m: m.score("mid"),
    "top": lambda m: m.top(2),
    "top_scored": lambda m: m.top_scored(2),
    "above": lambda m: m.above(0.1),
    "filter": lambda m: m.filter(lambda e: True),
    "active": lambda m: m.active(),
    "stats": lambda m: m.stats(),
    "iterate": lambda m: list(m),
    "time_until": lambda m: m.time_until("mid", 0.2),
    "next_eviction": lambda m: m.next_eviction(),
}


#: Operations that score at least one entry.
SCORING = {
    "put new key at capacity", "put auto key at capacity", "summarize", "evict", "scored", "score_map", "score",
    "top", "top_scored", "above", "filter", "active", "stats", "iterate", "time_until", "next_eviction",
}  # fmt: skip


def _cases() -> list[tuple[str, bool, str]]:
    return [(model, wrapped, op) for model in MODEL_IDS for wrapped in (False, True) for op in OPERATIONS]


def _id(case: tuple[str, bool, str]) -> str:
    model, wrapped, op = case
    return f"{model}{'-wrapped' if wrapped else ''}-{op}"


@pytest.mark.parametrize("case", _cases(), ids=_id)
def test_every_hook_call_can_fail_without_changing_anything(case: tuple[str, bool, str]) -> None:
    model, wrapped, op = case
    run = OPERATIONS[op]
    rig = Rig(model, wrapped)
    before = rig.snapshot()
    invariants(rig.mem)
    # Dry run: what the operation returns undisturbed, and how often it calls each hook.
    rig.disarm()
    reported_before = len(rig.evicted)
    out = run(rig.mem)
    counts = {name: hook.calls for name, hook in rig.hooks.items()}
    expected = _result(out)
    del rig.evicted[reported_before:]
    assert rig.snapshot() == before
    assert counts["clock_fn"] >= 1 or op in ("delete", "clear")
    injected = 0
    for name, total in counts.items():
        for n in range(1, total + 1):
            rig.disarm()
            rig.hooks[name].arm(n)
            with pytest.raises(Exception) as info:  # noqa: PT011 - the exact type is checked below
                run(rig.mem)
            assert rig.hooks[name].calls == n
            if name == "summarize_fn":
                assert type(info.value) is SummarizeError
                assert type(info.value.__cause__) is Boom
            else:
                assert type(info.value) is Boom
            injected += 1
            # The caller's memory is as it was, and still whole.
            assert rig.snapshot() == before
            invariants(rig.mem, ranked=False)
            # A retry with the fault gone gives the undisturbed answer.
            assert _result(run(rig.mem)) == expected
    invariants(rig.mem)
    label = f"{model}-wrapped" if wrapped else model
    INJECTED[op] += injected
    INJECTED[f"hook:{label}"] += injected
    report = os.environ.get("LETHE_FAULTS_REPORT")
    if report:
        with open(report, "w") as f:
            json.dump(dict(INJECTED), f, indent=2)
    if op == "put new key at capacity" or (op == "evict" and out[1]):
        assert counts["on_evict"] == 1
        assert counts["summarize_fn"] >= 1
        assert injected >= 3
    if wrapped and op in SCORING:
        assert counts["decay"] >= 1


def test_faults_were_injected_into_every_hook() -> None:
    """The sweep above reaches each hook from the operations that call it."""
    rig = Rig("custom", wrapped=True)
    rig.disarm()
    rig.mem.put("x", key="x")
    assert all(hook.calls > 0 for hook in rig.hooks.values())


# -- re-entrancy ------------------------------------------------------------------


def test_hooks_calling_back_into_the_old_memory_see_a_consistent_snapshot() -> None:
    clock = fake_clock()
    seen: list[tuple[str, Any]] = []
    holder: dict[str, Memory[Any, Any]] = {}
    depth = [0]

    def reenter(tag: str) -> None:
        if depth[0]:
            return
        depth[0] += 1
        try:
            mem = holder["mem"]
            seen.append((tag + ":scored", [(e.key, s) for e, s in mem.scored()]))
            after_get, entry = mem.get("b")
            seen.append((tag + ":get", (entry.key, entry.access_count, len(after_get))))
            grown = mem.put("nested", key="nested")
            seen.append((tag + ":put", sorted(map(str, grown.keys()))))
            seen.append((tag + ":dict", mem.to_dict()))
        finally:
            depth[0] -= 1

    def summarize_fn(e: Entry[Any, Any]) -> str:
        reenter("summarize")
        return f"s:{e.value}"

    def on_evict(batch: tuple[Entry[Any, Any], ...]) -> None:
        reenter("on_evict")

    mem: Memory[Any, Any] = Memory(max_entries=3, summarize_fn=summarize_fn, on_evict=on_evict, clock_fn=clock)
    mem = mem.put("A", key="a")
    clock.advance(HOUR)
    mem = mem.put("B", key="b").put("C", key="c")
    clock.advance(HOUR)
    holder["mem"] = mem
    before = (mem.to_dict(), mem.score_map(), [(e.key, s) for e, s in mem.scored()])

    new = mem.put("D", key="d")  # evicts "a": summarize_fn, then on_evict, both re-enter

    tags = [t for t, _ in seen]
    assert tags == [
        "summarize:scored", "summarize:get", "summarize:put", "summarize:dict",
        "on_evict:scored", "on_evict:get", "on_evict:put", "on_evict:dict",
    ]  # fmt: skip
    for tag, value in seen:
        if tag.endswith(":scored"):
            assert value == before[2]
        elif tag.endswith(":get"):
            assert value == ("b", 1, 3)
        elif tag.endswith(":put"):
            assert value == ["b", "c", "nested"]
        else:
            assert value == before[0]
    # The outer operation is unaffected by what the hooks did, and so is the old memory.
    assert sorted(new.keys()) == ["b", "c", "d"]
    assert new.peek("b").access_count == 0
    assert "nested" not in new
    assert (mem.to_dict(), mem.score_map(), [(e.key, s) for e, s in mem.scored()]) == before
    invariants(new)
    invariants(mem)


def test_reentrant_evict_sees_the_memory_it_was_called_on() -> None:
    clock = fake_clock()
    holder: dict[str, Memory[Any, Any]] = {}
    inner: list[Any] = []
    calls: list[int] = []

    def on_evict(batch: tuple[Entry[Any, Any], ...]) -> None:
        calls.append(len(batch))
        if len(calls) > 1:
            return  # the nested evict's own report
        mem = holder["mem"]
        again, out = mem.evict()
        inner.append((sorted(map(str, mem.keys())), [e.key for e in out], len(again)))

    mem: Memory[Any, Any] = Memory(max_entries=5, on_evict=on_evict, clock_fn=clock)
    mem = mem.put(1, key="gone1").put(2, key="gone2")
    clock.advance(10 * HOUR)
    mem = mem.put(3, key="stays")
    holder["mem"] = mem
    new, out = mem.evict()
    assert sorted(e.key for e in out) == ["gone1", "gone2"]
    assert calls == [2, 2]
    # The nested evict on the same old memory found the same two entries and left "stays".
    assert inner[0][0] == ["gone1", "gone2", "stays"]
    assert sorted(inner[0][1]) == ["gone1", "gone2"]
    assert inner[0][2] == 1
    assert list(new.keys()) == ["stays"]
    assert sorted(map(str, mem.keys())) == ["gone1", "gone2", "stays"]
