"""ManualClock: the one hand-driven clock for tests, examples, benchmarks and the CLI."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pytest

from lethe import ManualClock, Memory

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_reads_stand_still_until_advanced() -> None:
    clock = ManualClock(START)
    assert clock() == clock() == START
    assert clock.calls == 2
    assert clock.advance(timedelta(minutes=5)) == START + timedelta(minutes=5)
    assert clock.advance(-60) == START + timedelta(minutes=4)
    assert clock() == START + timedelta(minutes=4)


def test_step_moves_each_reading_on() -> None:
    clock = ManualClock(START, step=timedelta(seconds=1))
    assert [clock(), clock()] == [START, START + timedelta(seconds=1)]
    assert "step=" in repr(clock)


def test_set_and_default_start() -> None:
    clock = ManualClock()
    assert clock.now.tzinfo is not None
    assert clock.set(START) == START == clock()


def test_drives_a_memory() -> None:
    clock = ManualClock(START)
    mem: Memory[str, str] = Memory(clock_fn=clock, half_life=timedelta(hours=2))
    mem = mem.put("x", key="k")
    clock.advance(timedelta(hours=2))
    assert mem.score("k") == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda: ManualClock(datetime(2026, 1, 1)), ValueError, "start"),
        (lambda: ManualClock("2026"), TypeError, "start"),  # type: ignore[arg-type]
        (lambda: ManualClock(START, step=1), TypeError, "step"),  # type: ignore[arg-type]
        (lambda: ManualClock(START).advance(True), TypeError, "delta"),
        (lambda: ManualClock(START).advance(1e300), ValueError, "delta"),
        (lambda: ManualClock(START).advance(float("nan")), ValueError, "delta"),
        (lambda: ManualClock(START).advance(timedelta.max), ValueError, "delta"),
        (lambda: ManualClock(START).set(datetime(2026, 1, 1)), ValueError, "moment"),
    ],
)
def test_bad_input_names_the_parameter(call: object, error: type[Exception], name: str) -> None:
    with pytest.raises(error, match=name):
        call()  # type: ignore[operator]


def test_bad_advance_leaves_the_clock_where_it_was() -> None:
    clock = ManualClock(START)
    with pytest.raises(ValueError, match="delta"):
        clock.advance(timedelta.max)
    assert clock() == START


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except ZoneInfoNotFoundError:  # no time zone database on this machine
        pytest.skip(f"time zone {name} not available")


def test_advance_and_step_count_elapsed_time_across_a_daylight_saving_change() -> None:
    # Clocks in New York fall back from 02:00 EDT to 01:00 EST on 2026-11-01: two hours pass
    # between 00:30 and the second 01:30, though the wall clock moved only one.
    new_york = _zone("America/New_York")
    start = datetime(2026, 11, 1, 0, 30, tzinfo=new_york)
    clock = ManualClock(start)
    mem: Memory[str, str] = Memory(clock_fn=clock, half_life=timedelta(hours=1)).put("x", key="k")
    moved = clock.advance(timedelta(hours=2))
    assert moved - start == timedelta(hours=1)  # wall-clock difference, in one zone
    assert moved.astimezone(timezone.utc) - start.astimezone(timezone.utc) == timedelta(hours=2)
    assert (moved.hour, moved.minute, moved.fold) == (1, 30, 1)
    assert mem.score("k") == pytest.approx(0.25)
    stepping = ManualClock(start, step=timedelta(hours=1))
    readings = [stepping() for _ in range(3)]
    assert [r.astimezone(timezone.utc) - readings[0].astimezone(timezone.utc) for r in readings] == [
        timedelta(0),
        timedelta(hours=1),
        timedelta(hours=2),
    ]
    assert readings[-1].tzinfo is new_york
