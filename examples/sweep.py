"""A periodic sweep, scheduled for the next moment any entry falls below the eviction threshold.

Rather than calling ``evict()`` every minute, the scheduler asks when the next
entry will fade out and sleeps until then: ``Memory.next_eviction()`` answers
with the first moment some entry scores below the threshold (or expires), so a
sweep at exactly that moment removes it.  The clock is simulated, so the run is
instant and the same every time.

Run it: ``python examples/sweep.py``.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from lethe import ManualClock, Memory

START = datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc)


def run(until: timedelta = timedelta(hours=12)) -> list[tuple[datetime, list[Any]]]:
    """Simulate ``until`` of sweeps; returns each sweep's time and the keys it evicted."""
    clock = ManualClock(START)  # a simulated clock the scheduler moves forward
    mem: Memory[str, str] = Memory(max_entries=50, half_life=timedelta(hours=1), clock_fn=clock)
    mem = mem.put("fleeting chit-chat", key="chat")
    mem = mem.put("the user's open question about billing", key="question", importance=1.5)
    mem = mem.put("the deploy runbook location", key="runbook", importance=3.0)
    mem = mem.put("the user's name is Ada", key="name", pinned=True)
    sweeps: list[tuple[datetime, list[Any]]] = []
    end = START + until
    while True:
        when = mem.next_eviction()
        if when is None or when > end:
            break
        clock.set(when)  # a real scheduler sleeps until `when` here
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
