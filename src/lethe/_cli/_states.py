"""The state labels ``inspect`` and ``simulate`` give entries, and how many entries are in each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

#: Every state ``inspect`` and ``simulate`` label an entry with, in the order they are counted.
STATES = ("pinned", "active", "fading", "summarized", "below eviction", "expired", "unscored")


def state(entry: Any, score: float | None, mem: Any, at: datetime) -> str:
    """The entry's state at ``at`` (one of :data:`STATES`).

    ``expired`` (past its deadline), ``pinned``, ``below eviction`` (the next
    ``evict()`` removes it), ``summarized`` (``summarize_fn`` has run on its
    current value: ``Entry.summarized``), ``fading`` (below
    ``summarize_threshold``, not summarized yet), ``active``; ``unscored`` when
    scores are unavailable and none of the others is known.
    """
    if entry.expires_at is not None and entry.expires_at <= at:
        return "expired"
    if entry.pinned:
        return "pinned"
    if score is not None and score < mem.eviction_threshold:
        return "below eviction"
    if entry.summarized:
        return "summarized"
    if score is None:
        return "unscored"
    if score < mem.summarize_threshold:
        return "fading"
    return "active"


def counts(states: Sequence[str]) -> dict[str, int]:
    """How many of ``states`` are each state, in the order of :data:`STATES`, zeros left out."""
    return {s: n for s in STATES if (n := states.count(s))}


def count_text(by_state: Mapping[str, int]) -> str:
    """``by_state`` as ``"1 pinned, 2 active"`` (``"none"`` when empty)."""
    return ", ".join(f"{n} {s}" for s, n in by_state.items()) or "none"
