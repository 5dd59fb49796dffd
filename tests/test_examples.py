"""Every recipe in examples/ runs and does what it says."""

from __future__ import annotations

import importlib.util
import sqlite3
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType

import pytest

from lethe import Memory

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_each_example_runs_as_a_script(path: Path) -> None:
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert 'if __name__ == "__main__":\n    main()' in path.read_text()


def test_agent_loop_three_tiers(capsys: pytest.CaptureFixture[str]) -> None:
    agent_loop = load("agent_loop")
    lines, tiers = agent_loop.run()
    assert set(tiers.values()) == {"full", "summary", "absent"}
    assert tiers["style"] == "full"  # rehearsed every step
    assert tiers["build"] == "full"
    assert tiers["deadline"] == "summary"
    assert tiers["db"] == "absent"
    assert sum(agent_loop.word_count(line) for line in lines[1:]) <= 45
    assert "- the release is due Friday" in lines
    # A bigger budget lets everything in; a different token counter changes the fit.
    _, roomy = agent_loop.run(budget=1000)
    assert "absent" not in roomy.values()
    _, by_chars = agent_loop.run(budget=45, count=len)
    assert list(by_chars.values()).count("absent") > list(tiers.values()).count("absent")
    agent_loop.main()
    out = capsys.readouterr().out
    assert out.startswith("Relevant memory:\n")
    assert "deadline  summary" in out


def test_categories_settings_and_sweep(capsys: pytest.CaptureFixture[str]) -> None:
    categories = load("categories")
    agent, evicted = categories.run()
    assert agent.challenges.half_life == 8 * 3600
    assert agent.challenges.eviction_threshold == 0.02
    assert agent.inputs.half_life == 2 * 3600
    assert [e.importance for e in agent.challenges] == [1.5]
    assert [e.importance for e in agent.escalations] == [1.3]
    assert all(e.pinned for e in agent.notable)
    assert agent.sizes() == {
        "inputs": 4,
        "outputs": 4,
        "challenges": 1,
        "escalations": 1,
        "notable": 1,
        "contacts": 1,
    }
    assert evicted == {"inputs": 4, "outputs": 4, "challenges": 0, "escalations": 0, "notable": 0}
    assert [e.summary for e in agent.inputs if e.summarized]  # fading inputs were summarized
    categories.main()
    out = capsys.readouterr().out
    assert "challenge still remembered" in out
    assert "notable (pinned): the operator said" in out


def test_persistence_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    persistence = load("persistence")
    result = persistence.run(tmp_path)
    assert result["json_keys"] == ["session-1", "session-2", "session-3"]
    assert result["sqlite_keys"] == result["json_keys"]
    assert result["same"] is True
    assert result["rehearsals"] == 3
    assert (tmp_path / "memory.json").exists()
    with sqlite3.connect(tmp_path / "memory.sqlite3") as conn:
        assert conn.execute("SELECT name FROM memories").fetchall() == [("default",)]
    conn.close()
    clock = persistence.fixed_clock()
    restored = persistence.load_json(tmp_path / "memory.json", clock)
    assert restored == persistence.load_sqlite(tmp_path / "memory.sqlite3", clock=clock)
    persistence.main()
    out = capsys.readouterr().out
    assert "both stores agree:    True" in out
    assert "rehearsed 3 times" in out


def test_llm_summarizer(capsys: pytest.CaptureFixture[str]) -> None:
    llm = load("llm_summarizer")
    summarizer, evicted, mem = llm.run()
    assert summarizer.calls == ["meeting", "invoice"]
    assert [e.key for e in evicted] == ["meeting"]
    assert evicted[0].summary == "Meeting Acme Thursday 14:00 Dana Q3"
    assert mem.peek("invoice").summary == "Invoice 4471 Globex 30 Monday"
    assert mem.peek("kim").summary is None
    prompts: list[str] = []
    custom = llm.LLMSummarizer(complete=lambda p: prompts.append(p) or " SHORT ", words=3)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    m: Memory[str, str] = Memory(max_entries=1, summarize_fn=custom, clock_fn=lambda: now)
    m = m.put("first", key="a").put("second", key="b")
    assert prompts == [llm.PROMPT.format(words=3, text="first")]
    assert "a" not in m
    llm.main()
    assert "summarize_fn ran 2 times, for: meeting, invoice" in capsys.readouterr().out


def test_sweep_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    sweep = load("sweep")
    sweeps = sweep.run()
    assert [keys for _, keys in sweeps] == [["chat"], ["question"], ["runbook"]]
    start = sweep.START
    # 0.5 ** (t / 1h) * importance = 0.05  ->  t = log2(20 * importance) hours.
    expected = [4.321928, 4.906891, 5.906891]
    for (when, _), hours in zip(sweeps, expected):
        assert abs((when - start).total_seconds() - hours * 3600) < 2
    sweep.main()
    assert "3 sweeps in 12 hours" in capsys.readouterr().out


def test_shared_workers_lose_and_double_nothing() -> None:
    # The workers are spawned: they import the example as a script, so it runs as one here too.
    path = EXAMPLES / "shared_workers.py"
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "3 workers put 24 notes into one 5-entry memory"
    assert [line.split(":")[0] for line in lines[1:4]] == ["worker 0", "worker 1", "worker 2"]
    held = [line for line in lines if line.startswith("  w")]
    assert len(held) == 5
    assert "eviction feed: 19 entries evicted, by 19 versions" in lines
    assert lines[-3:] == [
        "every put is kept or in the eviction feed, exactly once: True",
        "every eviction was reported by one worker's on_evict: True",
        "every commit was one put or one rehearsal: True",
    ]


def test_langgraph_agent_remembers_across_runs(tmp_path: Path) -> None:
    from lethe.integrations.langgraph import LetheStore
    from lethe.store import SQLiteStore

    agent = load("langgraph_agent")
    db = tmp_path / "agent.db"
    # The first run in another process: what it remembers is in the file, not in this process.
    code = f"import sys; sys.path.insert(0, {str(EXAMPLES)!r}); import langgraph_agent as a; "
    code += f"print(a.run(__import__('pathlib').Path({str(db)!r}), 'My cat is called Miso.', 'Hello Miso!'))"
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert "('Hello Miso!', [])" in first.stdout  # nothing to recall yet
    reply, recalled = agent.run(db, "What is my cat called?", "Miso.")
    assert reply == "Miso."
    assert recalled == ["My cat is called Miso."]
    with SQLiteStore(str(db)) as engine, LetheStore(engine, memory=agent.MEMORY) as store:
        (entry,) = store.shared(agent.USER).current().top(10)
        assert entry.access_count == 1  # recalled once, so rehearsed once
