"""A periodic sweep, scheduled for the next moment any entry falls below the eviction threshold.

Rather than calling ``evict()`` every minute, the scheduler asks when the next
entry will fade out and sleeps until then.  ``Memory.next_eviction()`` answers
that when this version of lethe has it; otherwise :func:`next_eviction` finds
it by bisection on a clock it controls (scores of untouched entries only fall).
The clock is simulated, so the run is instant and the same every time.

Run it: ``python examples/sweep.py``.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from lethe import Memory

START = datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc)
_HORIZON = timedelta(days=365 * 100)


class SimClock:
    """A simulated clock the scheduler moves forward."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def _bisect_next_eviction(mem: Memory[Any, Any], now: datetime) -> datetime | None:
    """The first moment after ``now`` when some unpinned entry scores below ``eviction_threshold``."""
    moment = [now]
    probe: Memory[Any, Any] = _with_clock(mem, lambda: moment[0])
    keys = [e.key for e in probe if not e.pinned]
    if not keys:
        return None

    def faded(at: datetime) -> bool:
        moment[0] = at
        return any(probe.score(k) < probe.eviction_threshold for k in keys)

    if faded(now):
        return now
    half_life = mem.half_life  # stored as seconds
    step = half_life if isinstance(half_life, timedelta) else timedelta(seconds=half_life)
    hi = now + step
    while not faded(hi):
        step *= 2
        hi = now + step
        if step > _HORIZON:
            return None
    lo = now
    while hi - lo > timedelta(seconds=1):
        mid = lo + (hi - lo) / 2
        if faded(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _with_clock(mem: Memory[Any, Any], clock: Any) -> Memory[Any, Any]:
    """The same memory read through another clock (what ``copy.replace`` does on Python 3.13+)."""
    return mem.__replace__(clock_fn=clock)


def next_eviction(mem: Memory[Any, Any], now: datetime) -> datetime | None:
    """When the next entry falls below the eviction threshold (None: never, e.g. all pinned)."""
    method = getattr(mem, "next_eviction", None)
    if callable(method):
        when = method()
        if when is None or isinstance(when, datetime):
            return when
    return _bisect_next_eviction(mem, now)


def run(until: timedelta = timedelta(hours=12)) -> list[tuple[datetime, list[Any]]]:
    """Simulate ``until`` of sweeps; returns each sweep's time and the keys it evicted."""
    clock = SimClock()
    mem: Memory[str, str] = Memory(max_entries=50, half_life=timedelta(hours=1), clock_fn=clock)
    mem = mem.put("fleeting chit-chat", key="chat")
    mem = mem.put("the user's open question about billing", key="question", importance=1.5)
    mem = mem.put("the deploy runbook location", key="runbook", importance=3.0)
    mem = mem.put("the user's name is Ada", key="name", pinned=True)
    sweeps: list[tuple[datetime, list[Any]]] = []
    end = START + until
    while True:
        when = next_eviction(mem, clock.now)
        if when is None or when > end:
            break
        # A real scheduler sleeps until `when` here.  Wake a second late: at the
        # exact crossing the score equals the threshold, and evict() removes
        # only entries strictly below it.
        clock.now = max(clock.now, when) + timedelta(seconds=1)
        mem, evicted = mem.evict()
        sweeps.append((when, [e.key for e in evicted]))
    return sweeps


def main() -> None:
    """Print when each sweep ran and what it evicted."""
    sweeps = run()
    for when, keys in sweeps:
        print(f"{when:%H:%M:%S}  swept, evicted {', '.join(map(str, keys)) or 'nothing'}")
    print(f"{len(sweeps)} sweeps in 12 hours instead of 720 minute-by-minute checks; the pinned entry stays")


if __name__ == "__main__":
    main()
