"""Smoke test for benchmarks/store.py: tiny n, one round, every section; structure only (no timing assertions)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from ._support import load_benchmark

N = 30


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("store")


@pytest.fixture(scope="module")
def result(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict:
    return bench.run_store_bench(
        [N],
        rounds=1,
        ops=5,
        durable_ops=2,
        writers=(1, 2),
        writer_size=20,
        writer_updates=5,
        disk_updates=40,
        disk_size=10,
        directory=str(tmp_path_factory.mktemp("store-bench")),
        warmup=False,
    )


def _check_cases(cases: dict, names: set[str]) -> None:
    assert set(cases) == names
    for name, case in cases.items():
        assert len(case["samples_ns"]) == 1, name
        assert case["min_ns"] <= case["median_ns"] <= case["max_ns"], name
        assert case["ops"] >= 1, name


def test_commit_section(result: dict) -> None:
    at = result["commit"][str(N)]
    names = {"plain.put", "shared.put", "shared.put.durable", "plain.get", "shared.get", "shared.fold"}
    _check_cases(at["cases"], names)
    assert set(at["overhead"]) == {"put", "get", "put.durable", "durable vs default", "fold vs commit"}
    for row in at["overhead"].values():
        assert set(row) >= {"numerator", "denominator", "overhead_ns", "overhead_min_ns", "overhead_max_ns", "ratio"}
        assert row["ratio"] > 0
    assert at["ops"] == {"default": 5, "durable": 2}
    assert all(sizes["db"] > 0 for sizes in at["files"].values())


def test_writers_section_loses_nothing(result: dict) -> None:
    assert set(result["writers"]) == {"locked", "optimistic"}
    for mode, w in result["writers"].items():
        assert w["size"] == 20
        assert w["updates_per_writer"] == 5
        assert set(w["by_writers"]) == {"1", "2"}
        for k, row in w["by_writers"].items():
            assert row["commits"] == int(k) * 5
            assert row["final_versions"] == [row["commits"]]  # every commit of every writer is in the log
            assert row["version_ok"] is True
            if mode == "locked":
                assert row["attempts_per_commit"]["median"] == 1  # fn ran once per commit
            else:
                assert row["attempts_per_commit"]["median"] >= 1
            assert len(row["per_writer_commits_per_s"]["samples"]) == int(k)


def test_open_section(result: dict) -> None:
    at = result["open"][str(N)]
    _check_cases(at["cases"], {"open", "open.tail", "from_dict", "json+from_dict", "to_dict+json"})
    assert at["tail_commits"] == N // 2
    ratios = {"open / from_dict", "open / json+from_dict", "open.tail / from_dict", "open.tail / open"}
    assert set(at["ratios"]) == ratios


def test_disk_section(result: dict) -> None:
    d = result["disk"]
    assert d["updates"] == 40
    assert d["final_version"] == 40
    assert d["snapshot_bytes"] > 0
    assert [t["commits"] for t in d["trace"]] == [4 * i for i in range(1, 11)]
    assert d["closed_bytes"]["db"] > 0


def test_targets_and_json(result: dict, bench: ModuleType) -> None:
    assert len(result["targets"]) == len(bench.TARGETS)
    for row in result["targets"]:
        assert set(row) >= {"label", "n", "op", "target", "value", "met"}
        assert row["value"] is None  # n=30 is none of the target sizes: nothing judged
        assert row["met"] is None
    json.dumps(result)
    assert result["meta"]["rounds"] == 1
    assert result["meta"]["gc"] == "enabled"


def test_target_computation(bench: ModuleType) -> None:
    fake = {
        "commit": {"100000": {"overhead": {"put": {"overhead_ns": 80_000.0}}}},
        "open": {"100000": {"ratios": {"open / from_dict": 1.5}}},
    }
    rows = {row["metric"]: row for row in bench.targets(fake)}
    assert rows["put"]["value"] == 80.0
    assert rows["put"]["met"] is True
    assert rows["open / from_dict"]["met"] is False


def test_report_renders(result: dict, bench: ModuleType) -> None:
    text = bench.report(result)
    for needle in ("shared.put.durable", "json+from_dict", "Writer processes", "Disk:", "cold open vs from_dict"):
        assert needle in text


def test_cli_writes_json(bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "store.json"
    argv = ["--sizes", "20", "--rounds", "1", "--ops", "3", "--sections", "commit", "--dir", str(tmp_path)]
    assert bench.main([*argv, "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(data["commit"]) == {"20"}
    assert data["writers"] is None
    assert data["disk"] is None
    assert "shared.put" in capsys.readouterr().out
