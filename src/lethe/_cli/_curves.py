"""``lethe curves``: the decay curves of the built-in models, scored by a real ``Memory``, drawn as a chart."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, TextIO

from lethe import ManualClock, Memory
from lethe._cli._chart import render_curves
from lethe._cli._format import format_duration, is_terminal, parse_duration
from lethe._cli._models import build_model, distinct_models, uses_half_life

#: How many times along the span each curve is scored.
SAMPLES = 160


def curve_points(model: Any, span: float, samples: int = SAMPLES) -> list[float]:
    """Scores of a once-inserted, never-rehearsed entry at ``samples`` evenly spaced times in 0..span seconds."""
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    clock = ManualClock(start)
    empty: Memory[str, str] = Memory(decay_fn=model, clock_fn=clock)
    mem = empty.put("x", key="x")
    out = []
    for i in range(samples):
        clock.set(start + timedelta(seconds=span * i / max(samples - 1, 1)))
        out.append(mem.score("x"))
    return out


def curves(models: Sequence[str] | None, half_life: str, span: str, out: TextIO = sys.stdout) -> int:
    """Draw the decay curves of ``models`` (default: every built-in) as a terminal chart."""
    hl = parse_duration(half_life, "--half-life")
    sp = parse_duration(span, "--span")
    names = list(models) if models else distinct_models()
    built = {name: build_model(name, hl) for name in dict.fromkeys(names)}
    data = {name: curve_points(model, sp) for name, model in built.items()}
    without = [name for name in built if not uses_half_life(name, hl)]
    scale = "no half-life" if len(without) == len(built) else f"half-life {format_duration(hl)}"
    out.write(f"score of an entry put at 0 and never rehearsed; {scale}\n")
    if without:
        out.write(f"({', '.join(without)}: no half-life, a time scale of its own)\n")
    for line in render_curves(data, sp, color=is_terminal(out)):
        out.write(line + "\n")
    out.write("  (time since put →, score ↑; importance 1)\n")
    return 0
