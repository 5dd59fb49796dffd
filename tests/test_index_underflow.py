"""The ranking index agrees with a full scan when scores underflow.

After about 1,022 half-lives an entry's raw score is a subnormal float (a
multiple of 2**-1074) or 0.0; multiplied by a large importance, that rounding
reorders entries whose keys are far apart.  An indexed memory must still give
the answers of a full scan: ``scored()`` of a twin whose decay function computes
the same scores through a callable the memory cannot index.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import Entry, ManualClock, Memory
from lethe.decay import Exponential

from ._support import fake_clock

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


class ScannedExponential:
    """Exponential's formula behind a plain callable: a memory cannot index it."""

    def __init__(self, half_life: float) -> None:
        self._fn = Exponential(half_life)

    def __call__(self, entry: Entry[Any, Any], now: datetime) -> float:
        return self._fn.score(entry, now)


def _twins(cap: int, clock: ManualClock, log: list[tuple[str, list[Any]]]) -> tuple[Memory[Any, Any], Memory[Any, Any]]:
    common: dict[str, Any] = {"max_entries": cap, "half_life": 1.0, "clock_fn": clock, "eviction_threshold": 0.0}
    indexed: Memory[Any, Any] = Memory(on_evict=lambda es: log.append(("i", [e.key for e in es])), **common)
    scanned: Memory[Any, Any] = Memory(
        decay_fn=ScannedExponential(1.0), on_evict=lambda es: log.append(("s", [e.key for e in es])), **common
    )
    return indexed, scanned


def _agree(indexed: Memory[Any, Any], scanned: Memory[Any, Any]) -> None:
    truth = [(e.key, s) for e, s in scanned.scored()]
    assert [(e.key, s) for e, s in indexed.scored()] == truth
    assert [e.key for e in indexed] == [k for k, _ in truth]
    for n in (1, 2, 5):
        assert [e.key for e in indexed.top(n)] == [k for k, _ in truth[:n]]
    for t in (0.0, 5e-324, 1e-300, 1e-30, 0.5):
        assert [e.key for e in indexed.above(t)] == [e.key for e in scanned.above(t)]


def _layout(cap: int, puts: list[tuple[float, str, float]], now: float) -> tuple[Memory[Any, Any], ...]:
    """Both twins after ``puts`` of ``(seconds after T0, key, importance)``, read at ``now``; and the hook log."""
    clock = fake_clock(T0)
    log: list[tuple[str, list[Any]]] = []
    pair = list(_twins(cap, clock, log))
    for i in range(2):
        for at, key, importance in puts:
            clock.now = T0 + timedelta(seconds=at)
            pair[i] = pair[i].put(key, key=key, importance=importance)
    clock.now = T0 + timedelta(seconds=now)
    return pair[0], pair[1], log  # type: ignore[return-value]


def test_an_underflowed_high_importance_entry_is_the_victim() -> None:
    """Importance 1e300 after 1100 half-lives computes 0.0; an entry at 6e-33 outranks it."""
    indexed, scanned, log = _layout(2, [(0.0, "deep", 1e300), (1100.0 - 107.0, "faded", 1.0)], 1100.0)
    assert scanned.score("deep") == 0.0
    assert scanned.score("faded") > 0.0
    _agree(indexed, scanned)
    indexed.put("c", key="new"), scanned.put("c", key="new")
    assert log == [("i", ["deep"]), ("s", ["deep"])]


def test_a_subnormal_that_rounds_up_ranks_as_computed() -> None:
    """2**-1073.32 rounds up to 2**-1073: times 1e300 it computes above an entry whose true score is higher."""
    indexed, scanned, _ = _layout(5, [(0.0, "deep", 1e300), (1073.32 - 76.6, "near", 1.0)], 1073.32)
    assert scanned.score("deep") > scanned.score("near")
    _agree(indexed, scanned)


LONG_GAPS = st.sampled_from([0.0, 1.0, 60.0, 700.0, 1022.0, 1075.0, 2000.0, 5000.0])
PUT_IMPORTANCES = st.sampled_from([0.0, 5e-324, 1e-300, 0.3, 1.0, 3.0, 1e10, 1e300, 1.7e308])


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 6),
    st.lists(
        st.one_of(
            st.tuples(st.just("put"), st.integers(0, 7), PUT_IMPORTANCES),
            st.tuples(st.just("get"), st.integers(0, 7), st.just(0.0)),
            st.tuples(st.just("advance"), st.just(0), LONG_GAPS),
        ),
        max_size=40,
    ),
)
def test_the_index_answers_as_a_scan_across_thousands_of_half_lives(
    cap: int, script: list[tuple[str, int, float]]
) -> None:
    clock = fake_clock(T0)
    log: list[tuple[str, list[Any]]] = []
    indexed, scanned = _twins(cap, clock, log)
    for op, key, arg in script:
        if op == "advance":
            clock.now += timedelta(seconds=arg)
            continue
        if op == "put":
            indexed, scanned = indexed.put(key, key=key, importance=arg), scanned.put(key, key=key, importance=arg)
        elif key in indexed:
            indexed, scanned = indexed.get(key)[0], scanned.get(key)[0]
        assert [k for tag, k in log if tag == "i"] == [k for tag, k in log if tag == "s"]
        _agree(indexed, scanned)
