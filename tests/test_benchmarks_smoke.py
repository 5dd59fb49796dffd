"""Smoke test for the benchmark suite: tiny n, one round, structure only (no timing assertions)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType

import pytest

from lethe import ManualClock

from ._support import load_benchmark


@pytest.fixture(scope="module")
def suite() -> ModuleType:
    return load_benchmark("suite")


@pytest.fixture(scope="module")
def result(suite: ModuleType) -> dict:
    return suite.run_suite([50], rounds=1, references=False, ops=(20, 2), warmup=False)


LETHE_OPS = ("put_below", "put_full", "get", "touch", "peek", "scored", "top10", "active", "evict")


def test_lethe_cases_present(result: dict) -> None:
    cases = result["sizes"]["50"]["cases"]
    for decay in ("exponential", "actr"):
        for op in LETHE_OPS:
            assert f"lethe.{decay}.{op}" in cases
    for op in ("put_full", "top10", "iter10", "evict", "next_eviction"):
        assert f"lethe.exponential.tied.{op}" in cases  # the tie group: one layout, indexed decay only
    assert "lethe.exponential.next_eviction" in cases
    for name in ("map.set", "map.get", "dict.get", "dict.set", "dict.cow_set"):
        assert name in cases
    for name in ("floor.score_sorted", "floor.nlargest10", "floor.scan_min"):
        assert name in cases


def test_case_structure(result: dict) -> None:
    for name, case in result["sizes"]["50"]["cases"].items():
        assert len(case["samples_ns"]) == 1, name
        assert case["min_ns"] <= case["median_ns"] <= case["max_ns"], name
        assert case["median_ns"] > 0, name
        assert case["ops"] >= 1, name
        assert case["group"] in {"lethe", "map", "reference", "floor"}, name


def test_memory_per_entry(result: dict) -> None:
    memory = result["sizes"]["50"]["memory_bytes_per_entry"]
    assert memory["lethe.exponential"] > 0
    assert memory["lethe.actr"] > 0
    assert memory["map"] > 0


def test_ratios_and_json(result: dict, suite: ModuleType) -> None:
    assert len(result["ratios"]) >= len(suite.TARGETS)
    for row in result["ratios"]:
        assert set(row) >= {"label", "numerator", "denominator", "n", "op", "target", "value", "met"}
        # n=50 measures none of the target sizes, so nothing is judged.
        assert row["value"] is None
        assert row["met"] is None
    json.dumps(result)
    assert result["meta"]["rounds"] == 1
    assert result["meta"]["gc"] == "enabled"


def test_ratio_computation(suite: ModuleType) -> None:
    cases = {"lethe.exponential.scored": {"median_ns": 3.0}, "floor.score_sorted": {"median_ns": 2.0}}
    fake = {"sizes": {"10000": {"cases": cases}}}
    rows = {(r["numerator"], r["n"]): r for r in suite.ratios(fake)}
    row = rows[("lethe.exponential.scored", 10_000)]
    assert math.isclose(row["value"], 1.5)
    assert row["met"] is True


def test_report_renders(result: dict) -> None:
    run = load_benchmark("run")
    text = run.report(result)
    assert "lethe.exponential.put_below" in text
    assert "lethe.exponential.put_many" in text
    assert "put_many(n) vs n chained put" in text


def test_fake_clock_advances(suite: ModuleType) -> None:
    clock = suite.fake_clock()
    first, second = clock(), clock()
    assert isinstance(clock, ManualClock)
    assert first == suite.START + suite.STEP  # as the benchmark's figures were measured: a step after START
    assert second - first == suite.STEP


def test_collector_figures(result: dict) -> None:
    cases = result["sizes"]["50"]["cases"]
    for decay in ("exponential", "actr"):
        assert f"lethe.{decay}.put_run" in cases
        assert f"lethe.{decay}.put_run.nogc" in cases
    tracked = result["sizes"]["50"]["gc_objects_per_entry"]
    assert tracked["entries"] == pytest.approx(1.0, abs=0.1)  # an Entry is one tracked object
    assert tracked["lethe.exponential"] > 1.0  # and a memory holds it in more


@pytest.fixture(scope="module")
def scale() -> ModuleType:
    return load_benchmark("scale")


def test_scale_one_size(scale: ModuleType) -> None:
    out = scale.lethe_at(60, 1)
    assert set(out["median_ns"]) == set(scale.LETHE_OPS)
    assert all(v > 0 for v in out["median_ns"].values())
    assert out["evicted"] == 20  # the third below the threshold
    assert out["gc_objects_per_entry"] > 1.0
    assert json.loads(json.dumps(out)) == out


@pytest.fixture(scope="module")
def scaled(scale: ModuleType) -> dict:
    return scale.measure([40, 80], 1, False, 1, None, lambda msg: None)


def test_scale_sizes_growth_and_report(scale: ModuleType, scaled: dict) -> None:
    assert list(scaled["lethe"]) == ["40", "80"]  # each size measured in a process of its own
    assert len(scaled["growth"]["lethe put_many"]) == 1
    assert all(math.isfinite(g) for gs in scaled["growth"].values() for g in gs)
    text = scale.report(scaled)
    assert "growth exponents" in text
    assert "resident bytes per entry" in text


def test_scale_plot(scale: ModuleType, scaled: dict, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")  # the bench extra's; the test extra does without it
    scale.plot(scaled, str(tmp_path / "scale.png"))
    assert (tmp_path / "scale.png").stat().st_size > 0


def test_scale_growth_exponent(scale: ModuleType) -> None:
    assert scale.growth([(1_000, 1.0), (10_000, 10.0), (100_000, 10.0)]) == pytest.approx([1.0, 0.0])
