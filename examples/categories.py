"""Several memories, one per category, each configured for what it holds.

The layout of the design notes ("Integration with Hutch.Agent"): inputs and
outputs decay with a 2-hour half-life; challenges are worth more (importance
1.5), last longer (8-hour half-life) and stay until they fall below 0.02;
escalations get importance 1.3; notable events are pinned and never evicted;
contacts are structural, so they stay a plain dict.

Run it: ``python examples/categories.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from lethe import Entry, ManualClock, Memory

START = datetime(2026, 1, 1, 8, 0, tzinfo=timezone.utc)


def summarize_input(entry: Entry[Any, Any]) -> str:
    """A short summary of an input (an LLM call in a real agent)."""
    return " ".join(str(entry.value).split()[:4]) + " ..."


@dataclass(frozen=True)
class AgentMemory:
    """One memory per category; every write returns a new ``AgentMemory``."""

    inputs: Memory[Any, Any]
    outputs: Memory[Any, Any]
    challenges: Memory[Any, Any]
    escalations: Memory[Any, Any]
    notable: Memory[Any, Any]
    contacts: dict[str, str] = field(default_factory=dict)

    @classmethod
    def new(cls, clock: ManualClock) -> AgentMemory:
        """The categories with the settings of the design table."""
        two_hours = timedelta(hours=2)
        return cls(
            inputs=Memory(max_entries=500, half_life=two_hours, summarize_fn=summarize_input, clock_fn=clock),
            outputs=Memory(max_entries=500, half_life=two_hours, clock_fn=clock),
            challenges=Memory(
                max_entries=200, half_life=timedelta(hours=8), eviction_threshold=0.02, clock_fn=clock
            ),
            escalations=Memory(max_entries=200, half_life=timedelta(hours=4), clock_fn=clock),
            notable=Memory(max_entries=100, clock_fn=clock),
        )

    def input(self, text: str) -> AgentMemory:
        """Remember an input."""
        return replace(self, inputs=self.inputs.put(text))

    def output(self, text: str) -> AgentMemory:
        """Remember an output."""
        return replace(self, outputs=self.outputs.put(text))

    def challenge(self, text: str) -> AgentMemory:
        """Remember a challenge and its outcome: high value, decays slower."""
        return replace(self, challenges=self.challenges.put(text, importance=1.5))

    def escalation(self, text: str) -> AgentMemory:
        """Remember an escalation: informative, less critical than a challenge."""
        return replace(self, escalations=self.escalations.put(text, importance=1.3))

    def notable_event(self, text: str) -> AgentMemory:
        """Remember something the agent flagged as worth keeping: pinned, never auto-evicted."""
        return replace(self, notable=self.notable.put(text, pinned=True))

    def sweep(self) -> tuple[AgentMemory, dict[str, int]]:
        """Evict what has faded in every category; returns the new memory and counts per category."""
        counts: dict[str, int] = {}
        new: dict[str, Any] = {}
        for name in ("inputs", "outputs", "challenges", "escalations", "notable"):
            mem, evicted = getattr(self, name).evict()
            new[name] = mem
            counts[name] = len(evicted)
        return replace(self, **new), counts

    def sizes(self) -> dict[str, int]:
        """How many entries each category holds."""
        return {
            "inputs": len(self.inputs),
            "outputs": len(self.outputs),
            "challenges": len(self.challenges),
            "escalations": len(self.escalations),
            "notable": len(self.notable),
            "contacts": len(self.contacts),
        }


def run() -> tuple[AgentMemory, dict[str, int]]:
    """A simulated working day, then a sweep 12 hours after the start; returns the memory and evictions."""
    clock = ManualClock(START)  # a simulated clock shared by every category
    agent = AgentMemory.new(clock)
    agent = replace(agent, contacts={"billing": "agent://billing-7"})
    for hour in range(8):
        clock.set(START + timedelta(hours=hour))
        agent = agent.input(f"routine input {hour}: queue depth normal")
        agent = agent.output(f"routine output {hour}: acknowledged")
    clock.set(START + timedelta(hours=1))
    agent = agent.challenge("challenged billing's total for order 88; billing corrected it")
    agent = agent.escalation("escalated a stuck refund to the blackboard")
    agent = agent.notable_event("the operator said: never auto-approve refunds over $500")
    clock.set(START + timedelta(hours=12))
    return agent.sweep()


def main() -> None:
    """Print each category's size after the day's sweep and what the sweep removed."""
    agent, evicted = run()
    print("12 hours after the start, after one sweep:")
    for name, size in agent.sizes().items():
        print(f"  {name:<12} {size:>3} kept  {evicted.get(name, 0):>3} evicted")
    for entry, score in agent.challenges.scored():
        print(f"  challenge still remembered ({score:.2f}): {entry.value}")
    for entry in agent.notable:
        print(f"  notable (pinned): {entry.value}")


if __name__ == "__main__":
    main()
