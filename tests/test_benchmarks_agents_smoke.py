"""Smoke test for benchmarks/concurrent_agents.py: two tiny runs, structure and lethe's guarantee (no timings)."""

from __future__ import annotations

from pathlib import Path

from ._support import load_benchmark


def test_the_workload_runs_and_update_loses_nothing(tmp_path: Path) -> None:
    bench = load_benchmark("concurrent_agents")
    ours = bench.trial("lethe-sqlite (update)", str(tmp_path / "lethe.db"), 2, 40)
    theirs = bench.trial("langgraph-sqlite", str(tmp_path / "langgraph.db"), 1, 20)
    for row in (ours, theirs):
        assert set(row) >= {"rehearsals", "lost", "above_capacity", "errors", "ops_per_s"}
        assert row["rehearsals"] > 0
    assert ours["lost"] == 0
    assert ours["errors"] == 0
    assert ours["items"] == bench.HOT + ours["operations"] - ours["rehearsals"]  # every put kept (below capacity)
    assert "| lethe-sqlite (update) | 2 |" in bench.table({"stores": {"lethe-sqlite (update)": [ours]}})
