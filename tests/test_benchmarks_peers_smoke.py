"""Smoke test for benchmarks/peers.py: its --quick mode at a tiny n, one round, with whatever peers import
(lethe alone when none does).  Structure and what each prune removed; never times."""

from __future__ import annotations

import json
import sys
from types import ModuleType

import pytest

from ._support import load_benchmark

N = 45
LETHE_OPS = {"insert", "read", "peek", "top10", "prune", "bulk", "load", "load_file"}
#: What every peer either measures or reports as n/a, with a reason.
PEER_OPS = {"insert", "read", "top10", "prune", "bulk", "load", "load_file"}


@pytest.fixture(scope="module")
def peers() -> ModuleType:
    return load_benchmark("peers")


@pytest.fixture(scope="module")
def run(peers: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("peers-bench") / "peers.json"
    out = tmp_path_factory.mktemp("peers-out") / "stdout.txt"
    stdout = sys.stdout
    with out.open("w", encoding="utf-8") as sys.stdout:
        try:
            code = peers.main(["--quick", "--sizes", str(N), "--rounds", "1", "--ops", "20,2", "--json", str(path)])
        finally:
            sys.stdout = stdout
    assert code == 0
    return json.loads(path.read_text(encoding="utf-8")), out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def libraries(run: tuple[dict, str]) -> dict:
    result, _ = run
    assert list(result["sizes"]) == [str(N)]
    return result["sizes"][str(N)]["libraries"]


def test_lethe_measures_every_operation(libraries: dict) -> None:
    assert set(libraries["lethe"]["cases"]) == LETHE_OPS
    assert libraries["lethe"]["na"] == {}


def test_every_peer_runs_or_is_skipped_with_a_note(run: tuple[dict, str], peers: ModuleType, libraries: dict) -> None:
    result, _ = run
    for name in peers.LIBRARIES[1:]:
        if name not in libraries:
            assert any(name in note for note in result["notes"]), name
    for name, lib in libraries.items():
        if name == "lethe":
            continue
        for op in PEER_OPS:
            assert (op in lib["cases"]) != (op in lib["na"]), (name, op)  # measured, or n/a: not both
        for op, why in lib["na"].items():
            assert why.strip(), (name, op)


def test_case_structure(libraries: dict) -> None:
    for name, lib in libraries.items():
        assert lib["version"], name
        for op, case in lib["cases"].items():
            assert len(case["samples_ns"]) == 1, (name, op)
            assert case["min_ns"] <= case["median_ns"] <= case["max_ns"], (name, op)
            assert case["median_ns"] > 0, (name, op)
            assert case["ops"] >= 1, (name, op)
            assert case["api"], (name, op)


def test_every_prune_removed_what_it_says(libraries: dict) -> None:
    third = N // 3
    for name, lib in libraries.items():
        if "prune" not in lib["cases"]:
            assert "prune" not in lib, name
            continue
        prune = lib["prune"]
        assert prune["size"] == N
        assert prune["expected"] == third
        # One probe call, then one call per sample: each records what the library said and what it did.
        assert len(prune["actual"]) == 2 * lib["cases"]["prune"]["ops"], name
        assert prune["reported"] == prune["actual"], name
        assert all(abs(removed - third) <= 2 for removed in prune["actual"]), (name, prune["actual"])
        assert prune["as_reported"] is True
        assert prune["about_a_third"] is True
        assert prune["threshold"] >= 0.0, name


def test_ratios_are_to_lethe(run: tuple[dict, str], libraries: dict) -> None:
    result, _ = run
    ratios = result["sizes"][str(N)]["ratios"]
    assert ratios["lethe"] == dict.fromkeys(LETHE_OPS, 1.0)
    for name, lib in libraries.items():
        for op in lib["cases"]:
            if op in LETHE_OPS or op == "insert_scan":
                assert ratios[name][op] > 0, (name, op)


def test_targets_and_report(run: tuple[dict, str], peers: ModuleType, libraries: dict) -> None:
    result, stdout = run
    assert len(result["targets"]) == len(peers.TARGETS)
    for row in result["targets"]:
        assert set(row) >= {"label", "n", "lethe", "peer", "peer_op", "value", "target", "met"}
        assert row["n"] == N
        assert (row["value"] is None) == (row["peer"] is None) == (row["met"] is None)
    assert result["meta"]["versions"]["lethe"] == libraries["lethe"]["version"]
    assert f"n={N}" in stdout
    assert "Prune: lethe:" in stdout
