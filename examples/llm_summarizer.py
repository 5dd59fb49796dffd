"""An LLM-style ``summarize_fn``: where the real model call goes, with a stand-in that needs no network.

``Memory`` calls ``summarize_fn(entry)`` at most once per value of an entry:
when the entry fades below ``summarize_threshold`` during ``evict()`` or
``summarize()``, or when it is evicted to make room.  The summary is stored on
the entry (``entry.summary``) and travels with it to ``on_evict``.

Run it: ``python examples/llm_summarizer.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from lethe import Entry, Memory

PROMPT = "Summarize this memory in at most {words} words, keeping names and numbers:\n\n{text}"


class LLMSummarizer:
    """A ``summarize_fn`` that asks a language model for a short summary.

    ``complete`` is the model call: a function from prompt text to completion
    text.  Pass your client's call there, for example
    ``lambda p: client.responses.create(model="...", input=p).output_text``.
    The default is :func:`stand_in_complete`, which needs no network.
    """

    def __init__(self, complete: Callable[[str], str] | None = None, words: int = 8) -> None:
        self.complete = stand_in_complete if complete is None else complete
        self.words = words
        self.calls: list[Any] = []

    def __call__(self, entry: Entry[Any, Any]) -> str:
        """The summary of ``entry`` (called by ``Memory``; exceptions become ``SummarizeError``)."""
        self.calls.append(entry.key)
        prompt = PROMPT.format(words=self.words, text=entry.value)
        # >>> The real LLM call goes here: self.complete(prompt) sends the prompt to the model. <<<
        return self.complete(prompt).strip()


def stand_in_complete(prompt: str) -> str:
    """A deterministic stand-in for a model: keeps the capitalized words and numbers of the text."""
    header, _, text = prompt.partition("\n\n")
    limit = int(header.split("at most ")[1].split()[0])
    keep = [w.strip(",.;:") for w in text.split() if w[:1].isupper() or any(c.isdigit() for c in w)]
    return " ".join(keep[:limit]) or " ".join(text.split()[:limit])


def run() -> tuple[LLMSummarizer, list[Entry[Any, Any]], Memory[str, str]]:
    """Fill a small memory, let time pass, evict; returns the summarizer, the evicted entries and the memory."""
    now = [datetime(2026, 1, 1, 9, 0, tzinfo=timezone.utc)]
    evicted: list[Entry[Any, Any]] = []
    summarizer = LLMSummarizer()
    mem: Memory[str, str] = Memory(
        max_entries=3,
        half_life=timedelta(hours=1),
        summarize_fn=summarizer,
        on_evict=evicted.extend,
        clock_fn=lambda: now[0],
    )
    mem = mem.put("Meeting with Acme moved to Thursday 14:00, Dana will present the Q3 numbers", key="meeting")
    mem = mem.put("Invoice 4471 from Globex is 30 days overdue, reminder sent on Monday", key="invoice")
    mem = mem.put("Kim prefers Slack over email for anything urgent", key="kim")
    now[0] += timedelta(hours=2)
    mem, _ = mem.get("kim")
    # A fourth entry at capacity: the lowest-scored one is summarized, then evicted.
    mem = mem.put("Server db-2 disk at 91%, cleanup scheduled for 22:00", key="disk")
    now[0] += timedelta(hours=2)
    # Fading entries are summarized in place (kept, with their summary).
    mem = mem.summarize()
    return summarizer, evicted, mem


def main() -> None:
    """Show which entries the summarizer ran for and what it produced."""
    summarizer, evicted, mem = run()
    print(f"summarize_fn ran {len(summarizer.calls)} times, for: {', '.join(summarizer.calls)}")
    for entry in evicted:
        print(f"evicted {entry.key!r}: summary {entry.summary!r}")
    for entry, score in mem.scored():
        shown = entry.summary if entry.summarized else entry.value
        print(f"kept    {entry.key!r} ({score:.2f}): {shown!r}")


if __name__ == "__main__":
    main()
