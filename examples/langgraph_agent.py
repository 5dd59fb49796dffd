"""A LangGraph agent that remembers its user across runs, through lethe's LangGraph store.

Each run builds a fresh graph and a fresh ``LetheStore`` over one SQLite file, as two
separate processes would.  The agent's node recalls what it knows about the user (a search
of the user's namespace, by meaning and freshness), shows it to the model, and remembers
what the user tells it.  The namespace is a lethe memory of capacity 100 with an
exponential decay: it forgets its least alive memory when full, and a memory recalled is
rehearsed.

The model is ``GenericFakeChatModel`` from ``langchain_core`` (scripted replies, no
network); the embedder is a small hashed bag of words.  Put a real chat model and
embedder in their place (see docs/agents.md).  Needs ``pip install 'lethe-decay[langgraph]'``.

Run it: ``python examples/langgraph_agent.py``.
"""

from __future__ import annotations

import hashlib
import math
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.config import get_store
from langgraph.graph import START, MessagesState, StateGraph

from lethe import Memory
from lethe.integrations.langgraph import LetheStore
from lethe.store import SQLiteStore

USER = ("users", "ada", "memories")
DIMS = 64
MEMORY: Memory[str, dict[str, str]] = Memory(max_entries=100, half_life=7 * 24 * 3600)
"""Each namespace's capacity and decay (every process opening the file gives the same)."""


def embed(texts: Sequence[str]) -> list[list[float]]:
    """A hashed bag of words, one unit vector per text (a stand-in for a real embedding model)."""
    vectors = []
    for text in texts:
        v = [0.0] * DIMS
        for word in re.findall(r"\w+", text.lower()):
            v[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMS] += 1.0
        norm = math.hypot(*v) or 1.0
        vectors.append([x / norm for x in v] if any(v) else [1.0] + [0.0] * (DIMS - 1))
    return vectors


def run(db: Path, message: str, reply: str) -> tuple[str, list[str]]:
    """One conversation turn in a fresh process's objects: the reply and the memories recalled."""
    recalled: list[str] = []
    model = GenericFakeChatModel(messages=iter([AIMessage(reply)]))

    def respond(state: MessagesState) -> dict[str, list[AIMessage]]:
        store = get_store()
        said = str(state["messages"][-1].content)
        recalled.extend(item.value["text"] for item in store.search(USER, query=said, limit=3))
        system = SystemMessage("What you remember about the user:\n" + "\n".join(f"- {m}" for m in recalled))
        answer = model.invoke([system, *state["messages"]])
        if said.lower().startswith(("my ", "i ")):  # a statement about the user: remember it
            store.put(USER, hashlib.sha256(said.encode()).hexdigest()[:16], {"text": said})
        return {"messages": [AIMessage(str(answer.content))]}

    with (
        SQLiteStore(str(db)) as engine,
        LetheStore(
            engine,
            index={"dims": DIMS, "embed": embed, "fields": ["text"]},
            memory=MEMORY,
        ) as store,
    ):
        graph = StateGraph(MessagesState).add_node("respond", respond).add_edge(START, "respond").compile(store=store)
        out = graph.invoke({"messages": [HumanMessage(message)]})
        return str(out["messages"][-1].content), recalled


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "agent-memory.db"
        first, _ = run(db, "My favourite tea is genmaicha, and I take it without sugar.", "Noted: genmaicha, no sugar.")
        print(f"run 1  user: my favourite tea is genmaicha ...\n       agent: {first}")
        second, recalled = run(db, "Which tea should I brew?", "Genmaicha, without sugar.")
        print(f"run 2  user: which tea should I brew?\n       recalled: {recalled}\n       agent: {second}")


if __name__ == "__main__":
    main()
