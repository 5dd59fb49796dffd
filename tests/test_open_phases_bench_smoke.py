"""Smoke test for benchmarks/open_phases.py: a small memory, one round; structure and consistency only,
no timing assertions."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from ._support import load_benchmark


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("open_phases")


def test_every_phase_is_timed_against_from_dict(bench: ModuleType, tmp_path: Path) -> None:
    result = bench.run_open_phases(50, 2, str(tmp_path))
    phases = result["phases"]
    assert {"from_dict", "open", *bench.FLOOR} <= set(phases)
    assert phases["from_dict"]["ratio"] == 1.0
    for name, phase in phases.items():
        assert len(phase["samples_s"]) == 2, name
        assert phase["median_s"] > 0, name
    floor = result["floor"]
    assert floor["median_s"] == pytest.approx(sum(phases[name]["median_s"] for name in bench.FLOOR))
    assert "checked, nothing built" in bench.report(result)
    json.dumps(result)  # JSON-ready


def test_the_phases_work_on_what_the_open_reads(bench: ModuleType, tmp_path: Path) -> None:
    """The phases parse and check the rows the store holds: as many entries as the memory, with
    unique keys and put orders."""
    from suite import build_memory, fake_clock, keys_for

    from lethe.store import Shared, SQLiteStore

    mem = build_memory(40, "exponential", fake_clock(), 40, keys_for(40))
    path = str(tmp_path / "m.db")
    store = SQLiteStore(path)
    try:
        Shared(store, bench.NAME, mem)
    finally:
        store.close()
    cases = bench.phases(path, mem)
    assert len(cases["parse their JSON"]()) == 40
    assert cases["unique keys and put orders"]() == (40, 40)
    assert len(cases["entries, each row checked"]()) == 40
    assert len(cases["the hash-trie map"]()) == 40
    assert cases["open"]().to_dict() == mem.to_dict()
