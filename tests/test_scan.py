"""The scan: the ranking of decay functions with no index (custom callables, unkeyed blends).

A scan keeps only a count of pinned entries, so its queries skip the pinned
pass when there are none; every write path must keep that count, and a
custom function's results are checked in the same pass that multiplies them
by importance.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from lethe import Entry, Memory, MemoryFullError
from lethe.decay import PowerLaw
from lethe.ranking import MAX_GROUPS, Scan

from ._support import MINUTE, START, custom_decay, fake_clock, ranking

KEYS = st.sampled_from("abcdefgh")


class ScanMachine(RuleBasedStateMachine):
    """Every write of a scanned memory, in any order: pinned entries always rank first (latest put
    first), and every ranked read equals a brute-force sort of ``score()``."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = fake_clock()
        self.mem: Memory[Any, Any] = Memory(decay_fn=custom_decay, max_entries=6, clock_fn=self.clock)

    def _write(self, write: Callable[[Memory[Any, Any]], Memory[Any, Any]]) -> None:
        with contextlib.suppress(MemoryFullError):  # every entry pinned: the memory is left as it was
            self.mem = write(self.mem)

    @rule(key=KEYS, pinned=st.booleans(), importance=st.sampled_from([0.0, 0.5, 1.0, 3.0]))
    def put(self, key: str, pinned: bool, importance: float) -> None:
        self._write(lambda m: m.put(key, key=key, pinned=pinned, importance=importance))

    @rule(keys=st.lists(KEYS, max_size=8), pinned=st.booleans())
    def put_many(self, keys: list[str], pinned: bool) -> None:
        self._write(lambda m: m.put_many([(k, k) for k in keys], pinned=pinned))

    @precondition(lambda self: len(self.mem) > 0)
    @rule(data=st.data(), op=st.sampled_from(["pin", "unpin", "delete", "touch"]))
    def change(self, data: st.DataObject, op: str) -> None:
        key = data.draw(st.sampled_from(sorted(self.mem.keys())))
        self._write(lambda m: getattr(m, op)(key))

    @rule()
    def evict(self) -> None:
        self.mem = self.mem.evict()[0]

    @rule(room=st.integers(0, 3))
    def configure(self, room: int) -> None:
        self.mem = self.mem.configure(max_entries=max(1, len(self.mem) + room))

    @rule()
    def reload(self) -> None:
        self.mem = Memory.from_dict(self.mem.to_dict(), decay_fn=custom_decay, clock_fn=self.clock)

    @rule(minutes=st.integers(1, 600))
    def advance(self, minutes: int) -> None:
        self.clock.advance(MINUTE * minutes)

    @invariant()
    def ranks_pinned_first(self) -> None:
        mem = self.mem
        assert isinstance(mem._ranking, Scan)
        assert mem._ranking.pinned == mem.pinned_count()
        ranking(mem)


TestScanMachine = ScanMachine.TestCase
TestScanMachine.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)


def test_a_fallen_back_grouped_memory_still_ranks_its_pinned_entries_first() -> None:
    clock = fake_clock(START, step=timedelta(seconds=1))
    mem: Memory[Any, Any] = Memory(decay_fn=PowerLaw(60.0), max_entries=1000, clock_fn=clock)
    mem = mem.put("p", key="p", pinned=True)
    for i in range(MAX_GROUPS):
        mem = mem.put(i, key=i, importance=1.0 + i)
    mem = mem.put("one more", key="x", importance=0.25)  # one group too many: a scan from here on
    assert isinstance(mem._ranking, Scan)
    assert [e.key for e in mem.top(2)] == ["p", MAX_GROUPS - 1]
    clock.step = timedelta(0)  # a brute-force comparison needs the clock to stand still
    ranking(mem)
    loaded = Memory.from_dict(mem.to_dict(), decay_fn=lambda e, now: 0.5, clock_fn=clock)
    assert isinstance(loaded._ranking, Scan)
    assert loaded._ranking.pinned == 1
    assert loaded.top(1)[0].key == "p"


def test_top_makes_no_score_call_when_pinned_entries_fill_it() -> None:
    calls: list[str] = []

    def decay(e: Entry[Any, Any], now: datetime) -> float:
        calls.append(e.key)
        return 0.5

    mem: Memory[Any, Any] = Memory(decay_fn=decay, clock_fn=fake_clock())
    mem = mem.put_many([(k, k) for k in "abcd"]).put("p", key="p", pinned=True).put("q", key="q", pinned=True)
    assert [e.key for e in mem.top(2)] == ["q", "p"]
    assert calls == []
    assert [e.key for e in mem.top(3)] == ["q", "p", "d"]
    assert sorted(calls) == ["a", "b", "c", "d"]  # each unpinned entry once, no pinned one


def _memory_of(result: object, importance: float = 1.0) -> Memory[Any, Any]:
    mem: Memory[Any, Any] = Memory(decay_fn=lambda e, now: 0.5 if e.key != "odd" else result, clock_fn=fake_clock())
    return mem.put("plain", key="plain").put("odd", key="odd", importance=importance)


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (True, "decay_fn returned True for key 'odd'; it must return a number"),
        ("0.5", "decay_fn returned '0.5' for key 'odd'; it must return a number"),
        (math.nan, "decay_fn returned nan for key 'odd'; it must be finite"),
        (math.inf, "decay_fn returned inf for key 'odd'; it must be finite"),
        (-math.inf, "decay_fn returned -inf for key 'odd'; it must be finite"),
        (10**400, "for key 'odd'; it must fit in a float"),
    ],
    ids=["bool", "str", "nan", "inf", "-inf", "huge int"],
)
@pytest.mark.parametrize("importance", [1.0, 0.0], ids=["importance 1", "importance 0"])
def test_a_bad_result_is_named_by_every_scan(result: object, message: str, importance: float) -> None:
    mem = _memory_of(result, importance)
    for read in (lambda m: m.top(1), lambda m: m.scored(), lambda m: m.put("new", key="new").evict()):
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            read(mem)


def test_results_a_float_stands_for_count_as_that_float() -> None:
    # An int is a number; a float whose product with a large importance overflows is infinite
    # before clamping: it ranks first among unpinned entries and scores 1.0.
    assert [(e.key, s) for e, s in _memory_of(1).scored()] == [("odd", 1.0), ("plain", 0.5)]
    huge = _memory_of(1e300, importance=1e10)
    assert [(e.key, s) for e, s in huge.scored()] == [("odd", 1.0), ("plain", 0.5)]
    assert [e.key for e in huge.top(2)] == ["odd", "plain"]
    assert [e.key for e in _memory_of(0, importance=0.0).top(2)] == ["plain", "odd"]
