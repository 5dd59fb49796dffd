"""An agent loop: store observations, rehearse what is used, build the prompt within a token budget.

Each step the agent observes something, puts it in memory, uses (``get``) the
entries its task needs, and builds a prompt from ``scored()``: the best entries
go in whole, fading ones as their summary, and what does not fit is left out.
The clock is simulated, so the run is the same every time.

Run it: ``python examples/agent_loop.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from lethe import Entry, ManualClock, Memory

TokenCounter = Callable[[str], int]


def word_count(text: str) -> int:
    """The default token counter: whitespace-separated words (swap in a real tokenizer)."""
    return len(text.split())


def summarize(entry: Entry[Any, Any]) -> str:
    """A cheap summary: the first clause of the observation."""
    return str(entry.value).split(",")[0]


def build_prompt(
    mem: Memory[Any, Any],
    budget: int,
    count: TokenCounter = word_count,
    full_above: float = 0.5,
) -> tuple[str, dict[str, str]]:
    """The prompt's memory section and each key's tier: ``"full"``, ``"summary"`` or ``"absent"``.

    Entries go in by score.  An entry scoring at least ``full_above`` goes in
    whole if it fits, else as its summary; a fading entry goes in only as its
    summary; whatever does not fit in ``budget`` tokens is absent.
    """
    lines: list[str] = []
    tiers: dict[str, str] = {}
    used = 0
    for entry, score in mem.scored():
        summary = entry.summary if entry.summary is not None else summarize(entry)
        options = [("full", str(entry.value)), ("summary", str(summary))] if score >= full_above else [
            ("summary", str(summary))
        ]
        tiers[str(entry.key)] = "absent"
        for tier, text in options:
            line = f"- {text}"
            cost = count(line)
            if used + cost <= budget:
                lines.append(line)
                used += cost
                tiers[str(entry.key)] = tier
                break
    return "Relevant memory:\n" + "\n".join(lines), tiers


def run(budget: int = 45, count: TokenCounter = word_count) -> tuple[list[str], dict[str, str]]:
    """Run the loop; returns the final prompt's lines and each key's tier."""
    clock = ManualClock(datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc))  # moved forward by hand
    mem: Memory[str, str] = Memory(
        max_entries=8, half_life=timedelta(minutes=30), summarize_fn=summarize, clock_fn=clock
    )
    observations = [
        ("build", "the build uses Python 3.12, tests run with pytest -q in about ten seconds"),
        ("style", "the user wants short answers, no apologies, code first"),
        ("db", "the staging database is Postgres 16 on port 5433, read-only for agents"),
        ("flaky", "test_network is flaky on CI, rerun once before reporting a failure"),
        ("deadline", "the release is due Friday, the changelog must be updated first"),
        ("lunch", "the user mentioned lunch at noon, nothing to do with the task"),
    ]
    for step, (key, text) in enumerate(observations):
        mem = mem.put(text, key=key)
        # The task keeps needing the user's style and the build command: rehearse them.
        for used in ("style", "build"):
            if used in mem:
                mem, _ = mem.get(used)
        clock.advance(timedelta(minutes=20 if step < len(observations) - 1 else 5))
    mem = mem.summarize()
    prompt, tiers = build_prompt(mem, budget, count)
    return prompt.splitlines(), tiers


def main() -> None:
    """Print the prompt built at the end of the loop, and how each memory made it in."""
    lines, tiers = run()
    print("\n".join(lines))
    print()
    for key, tier in tiers.items():
        print(f"{key:<9} {tier}")


if __name__ == "__main__":
    main()
