"""``lethe inspect --search``: what a saved memory (a file or a store) knows about something."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from lethe import Memory
from lethe.store import Shared, SQLiteStore

from .test_cli import AT, T0, build_memory, run, saved


def test_search_shows_the_hits_best_first_with_their_match(tmp_path: Path) -> None:
    mem = build_memory()
    path = saved(tmp_path, mem.to_dict())
    result = run("inspect", path, "--at", AT, "--search", "deploy failed disk")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "search: 'deploy failed disk', best first" in lines
    header = next(line for line in lines if line.startswith("match"))
    rows = lines[lines.index(header) + 1 :]
    assert [row.split()[1] for row in rows] == ["deploy"]  # nothing else shares a term
    at_moment = mem.configure(clock_fn=lambda: T0 + timedelta(hours=2))
    ((_, number),) = at_moment.search("deploy failed disk")
    assert rows[0].split()[0] == f"{number:.3f}"


def test_search_as_json_and_with_no_match(tmp_path: Path) -> None:
    path = saved(tmp_path, build_memory().to_dict())
    doc = json.loads(run("inspect", path, "--at", AT, "--search", "node CEO", "--json").stdout)
    assert doc["search"] == "node CEO"
    assert [e["key"] for e in doc["entries"]] == ["rule", "deploy"]  # pinned: 1.0 of score
    assert doc["entries"][0]["match"] > doc["entries"][1]["match"]
    empty = run("inspect", path, "--at", AT, "--search", "nothing here")
    assert empty.returncode == 0
    assert "(no entry matches)" in empty.stdout


def test_search_reads_a_store(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    store = SQLiteStore(db)
    shared = Shared(store, "bot", Memory[str, str](clock_fn=lambda: T0))
    shared.update(lambda m: m.put("green tea", key="tea").put("vim", key="vim", text="the editor, vim"))
    shared.close()
    store.close()
    result = run("inspect", str(db), "--name", "bot", "--at", AT, "--search", "editor", "--json")
    assert result.returncode == 0, result.stderr
    assert [e["key"] for e in json.loads(result.stdout)["entries"]] == ["vim"]


def test_search_shows_at_most_top_hits_zero_included(tmp_path: Path) -> None:
    path = saved(tmp_path, build_memory().to_dict())
    for top, keys in (("0", []), ("1", ["rule"]), ("5", ["rule", "deploy"])):
        doc = json.loads(run("inspect", path, "--at", AT, "--search", "node CEO", "--top", top, "--json").stdout)
        assert [e["key"] for e in doc["entries"]] == keys
