"""The bulk path of a write (many changes in one pass) against the same changes made one by one.

``Edit.apply`` takes a write that changes a sizeable fraction of the entries
(``evict()`` of many, ``put_many``, a change applied to a version) through a
bulk path: the map edited in one pass, the order index leaf by leaf, the
collector held back.  Forcing one path or the other must give the same
memory, answer for answer, and the older versions must not change.
"""

from __future__ import annotations

import gc
import weakref
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import Entry, Memory
from lethe._memory import edit as _edit
from lethe._memory import version as _version
from lethe._memory.version import changes

from ._support import invariants

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _summary(e: Entry[Any, Any]) -> str:
    return f"about {e.key}"


def _build(decay: str, puts: list[tuple[int, int, bool, bool, bool]], clock: list[datetime]) -> Memory[Any, Any]:
    mem: Memory[Any, Any] = Memory(
        max_entries=10_000,
        decay_fn=decay,
        half_life=60.0,
        eviction_threshold=0.05,
        summarize_threshold=0.2,
        summarize_fn=_summary,
        clock_fn=lambda: clock[0],
    )
    for key, importance, pinned, ttl, tick in puts:
        if tick:
            clock[0] += timedelta(seconds=37)
        mem = mem.put(
            f"v{key}", key=key, importance=importance / 4, pinned=pinned, ttl=None if pinned or not ttl else 400
        )
    return mem


def _with_bulk(monkeypatch: pytest.MonkeyPatch, bulk: bool) -> None:
    # _BULK * changes <= entries takes the one-by-one path: 0 always does, a huge factor never (but for no change).
    monkeypatch.setattr(_edit, "_BULK", 10**9 if bulk else 0)


entries = st.lists(
    st.tuples(st.integers(0, 300), st.integers(0, 12), st.booleans(), st.booleans(), st.booleans()),
    min_size=1,
    max_size=120,
)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["exponential", "actr"]), entries, st.integers(0, 900), st.lists(st.integers(0, 300), max_size=60)
)
def test_bulk_and_single_writes_agree(
    decay: str, puts: list[tuple[int, int, bool, bool, bool]], later: int, batch: list[int]
) -> None:
    results = []
    with pytest.MonkeyPatch.context() as monkeypatch:
        for bulk in (False, True):
            _with_bulk(monkeypatch, bulk)
            clock = [T0]
            base = _build(decay, puts, clock)
            before = base.to_dict()
            clock[0] += timedelta(seconds=later)
            evicted_mem, evicted = base.evict()
            put = evicted_mem.put_many([(k, f"w{k}") for k in batch], importance=0.75)
            applied = _version.applied(base, changes(base, put))
            assert base.to_dict() == before  # the old version answers as before
            for mem in (evicted_mem, put, applied):
                invariants(mem)
            results.append(
                (
                    evicted_mem.to_dict(),
                    [(e.key, e.summary) for e in evicted],
                    put.to_dict(),
                    [(e.key, s) for e, s in put.scored()],
                    put.next_eviction(),
                    applied.to_dict(),
                )
            )
    assert results[0] == results[1]


def test_the_collector_is_as_it_was_after_a_bulk_write() -> None:
    mem: Memory[Any, Any] = Memory(max_entries=5000, clock_fn=lambda: T0)
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            gc.enable() if enabled else gc.disable()
            big = mem.put_many((i, i) for i in range(3000))
            assert gc.isenabled() is enabled
            assert len(big.scored()) == 3000
            assert gc.isenabled() is enabled
            Memory.from_dict(big.to_dict(), clock_fn=lambda: T0)
            assert gc.isenabled() is enabled
            faint = mem.configure(eviction_threshold=0.5, summarize_threshold=0.5).put_many(
                ((i, i) for i in range(3000)), importance=0.1
            )
            assert len(faint.evict()[1]) == 3000
            assert gc.isenabled() is enabled
            with pytest.raises(ValueError, match="entries"):
                Memory.from_dict({**big.to_dict(), "entries": [{"key": 1}]})
            assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_a_large_bulk_write_leaves_objects_a_process_froze_frozen_and_garbage_collectable() -> None:
    # A bulk write moves what it made into the oldest generation (gc.freeze then unfreeze): a
    # process's own frozen objects (a pre-forking server's) must stay so.
    mem: Memory[Any, Any] = Memory(max_entries=50_000, clock_fn=lambda: T0)
    was = gc.isenabled()
    gc.enable()
    try:
        kept = [[i] for i in range(100)]
        gc.freeze()
        big = mem.put_many((i, i) for i in range(30_000))
        tracked = {id(o) for o in gc.get_objects()}  # (every generation's: not the frozen)
        assert not tracked & {id(k) for k in kept}
        gc.unfreeze()
        assert len(kept) == 100
        big = mem.put_many((i, i) for i in range(30_000))
        assert len(big) == 30_000

        class Cycle:
            pass

        cycle = Cycle()
        cycle.me = cycle  # type: ignore[attr-defined]
        gone = weakref.ref(cycle)
        del cycle
        Memory.from_dict(big.to_dict(), clock_fn=lambda: T0)  # (the cycle moved to the oldest generation)
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
        gc.enable() if was else gc.disable()
