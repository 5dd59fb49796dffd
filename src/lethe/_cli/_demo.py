"""``lethe demo`` (and ``python -m lethe`` with no command): a short demonstration on a simulated clock."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from typing import Any, TextIO

from lethe import Entry, ManualClock, Memory


def _table(mem: Memory[Any, Any], out: TextIO) -> None:
    for entry, score in mem.scored():
        flags = " pinned" if entry.pinned else ""
        summary = f"  summary: {entry.summary!r}" if entry.summary is not None else ""
        out.write(f"    {score:5.3f}  {entry.key!s:<10} {entry.value!s:<42}{flags}{summary}\n")


def demo(out: TextIO = sys.stdout) -> int:
    """Print a self-contained demonstration with a simulated clock."""
    clock = ManualClock(datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc))
    evicted: list[Entry[Any, Any]] = []

    def summarize(entry: Entry[Any, Any]) -> str:
        # Where an agent would ask an LLM for a one-line summary.
        return str(entry.value).split(",")[0][:24] + "..."

    mem: Memory[str, str] = Memory(
        max_entries=4,
        half_life=timedelta(hours=1),
        summarize_fn=summarize,
        on_evict=evicted.extend,
        clock_fn=clock,
    )
    w = out.write
    w("lethe demo: a 4-entry memory, half-life 1 hour, simulated clock\n\n")
    mem = mem.put("AAPL price spiked to $195.50, volume 3x", key="spike")
    mem = mem.put("user asked for a weekly summary, Fridays", key="weekly")
    mem = mem.put("client X always pays late, chase early", key="client-x", pinned=True)
    mem = mem.put("deploy failed on node 7, disk full", key="deploy", importance=1.5)
    w("09:00  four entries put (client-x pinned, deploy with importance 1.5):\n")
    _table(mem, out)

    clock.advance(timedelta(hours=2))
    mem, _ = mem.get("weekly")
    w("\n11:00  two hours later; 'weekly' was rehearsed with get(), the others decayed:\n")
    _table(mem, out)

    clock.advance(timedelta(hours=1))
    w("\n12:00  one more hour; the pinned entry stays at 1.000:\n")
    _table(mem, out)

    mem = mem.put("new observation: latency p99 up 40%", key="latency")
    w("\n12:00  a fifth entry at capacity: the lowest-scored one is summarized and evicted:\n")
    _table(mem, out)
    for entry in evicted:
        w(f"    evicted {entry.key!r} with summary {entry.summary!r}\n")
    old = mem
    mem, _ = mem.get("deploy")
    w(
        "\nEvery write returned a new memory; older versions are unchanged: "
        f"'deploy' rehearsals before/after get(): {old.peek('deploy').access_count}/"
        f"{mem.peek('deploy').access_count}\n"
    )
    return 0
