"""Smoke test for benchmarks/engines.py: tiny sizes, one round, every section on each engine that can
run here (the others skip with the reason); structure and consistency checks only, no timing assertions."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from ._servers import postgres_unavailable, redis_unavailable
from ._support import load_benchmark

ENGINES = ["sqlite", "sqlite-durable", "redis-everysec", "redis-always", "postgres"]
_WHY: dict[str, Callable[[], str | None]] = {
    "redis-everysec": redis_unavailable,
    "redis-always": redis_unavailable,
    "postgres": postgres_unavailable,
}
COMMITS = 6  # paced commits the follower must see


def _why(label: str) -> str | None:
    check = _WHY.get(label)
    return None if check is None else check()


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("engines")


@pytest.fixture(scope="module")
def result(bench: ModuleType) -> dict:
    return bench.run_engines_bench(
        [label for label in ENGINES if _why(label) is None],
        rounds=1,
        commit_size=20,
        ops=3,
        writers=(1, 2),
        writer_size=20,
        writer_updates=5,
        catchup_commits=COMMITS,
        gap_ms=1.0,
        open_size=30,
        warmup=False,
    )


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    why = _why(request.param)
    if why is not None:
        pytest.skip(why)
    return str(request.param)


def test_every_engine_is_smoke_tested(bench: ModuleType) -> None:
    assert list(bench.ENGINES) == ENGINES


def test_engine_recorded(result: dict, engine: str) -> None:
    info = result["engines"][engine]
    assert info["server"]
    if engine.startswith("redis-"):
        assert info["appendonly"] == "yes"
        assert info["appendfsync"] == engine.removeprefix("redis-")
    if engine == "postgres":
        assert info["fsync"] == "on"
        assert info["synchronous_commit"] == "on"


def test_commit_section(result: dict, engine: str) -> None:
    c = result["commit"]
    case = c["cases"][f"shared.put.{engine}"]
    assert case["ops"] == 3
    assert len(case["samples_ns"]) == 1
    assert "plain.put" in c["cases"]
    row = c["overhead"][engine]
    assert (row["numerator"], row["denominator"]) == (f"shared.put.{engine}", "plain.put")
    assert row["ratio"] > 0
    floor = c["floor"][engine]  # the same bytes written raw, in the same rounds
    assert (floor["numerator"], floor["denominator"]) == (f"shared.put.{engine}", f"raw.write.{engine}")
    assert c["cases"][f"raw.write.{engine}"]["ops"] == 3
    assert c["bytes_per_commit"][engine] > 100


def test_writers_section_loses_nothing(result: dict, engine: str, bench: ModuleType) -> None:
    rows = [engine, f"{engine}, optimistic", f"{engine}, raw"] if engine in bench.LOCKING else [engine]
    assert f"{engine}, optimistic" in result["writers"] or engine not in bench.LOCKING
    for label in rows:
        _writers_lose_nothing(result["writers"][label])


def test_the_writers_floor_is_the_engines_own_lock(result: dict, engine: str, bench: ModuleType) -> None:
    """The raw rows (an engine with a writer lock): one transaction per commit under the engine's
    own lock, counted on the head row, so their final version is every commit too."""
    if engine not in bench.LOCKING:
        assert f"{engine}, raw" not in result["writers"]
        return
    floor = result["writers"][f"{engine}, raw"]["by_writers"]
    for k, row in floor.items():
        assert row["final_versions"] == [int(k) * 5]
        assert row["attempts_per_commit"]["median"] == 1.0
    assert "/ 1 writer" in bench.report(result)


def _writers_lose_nothing(w: dict) -> None:
    assert (w["size"], w["updates_per_writer"]) == (20, 5)
    assert set(w["by_writers"]) == {"1", "2"}
    for k, row in w["by_writers"].items():
        assert row["commits"] == int(k) * 5
        assert row["final_versions"] == [row["commits"]]  # every commit of every writer is in the log
        assert row["version_ok"] is True
        assert row["attempts_per_commit"]["median"] >= 1
        assert len(row["per_writer_commits_per_s"]["samples"]) == int(k)


def test_catchup_section_sees_every_version(result: dict, engine: str, bench: ModuleType) -> None:
    c = result["catchup"]
    assert c["commits"] == COMMITS
    assert c["methods"] == list(bench.FOLLOW)
    assert set(c["by_engine"][engine]) == set(bench.FOLLOW)
    for s in c["by_engine"][engine].values():
        assert s["final_versions"] == [COMMITS]
        assert s["version_ok"] is True
        assert s["p50_us"]["median"] <= s["p99_us"]["median"] <= s["max_us"]["median"]
        assert s["from_call_p50_us"]["median"] >= s["p50_us"]["median"]  # the call came before its return


def test_open_section(result: dict, engine: str) -> None:
    o = result["open"]
    assert o["n"] == 30
    assert len(o["cases"][f"open.{engine}"]["samples_ns"]) == 1
    assert o["ratios"][engine] > 0
    assert o["stored_s"][engine] > 0


def test_report_and_json(result: dict, bench: ModuleType) -> None:
    json.dumps(result)
    assert result["meta"]["rounds"] == 1
    assert len(result["meta"]["loadavg_after"]) == 3
    text = bench.report(result)
    for needle in ("One writer", "Writer processes", "Catch-up", "Cold open", "`from_dict`"):
        assert needle in text
    for label in result["engines"]:
        assert f"| {label} |" in text


def test_missing_engine_is_noted(bench: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "unavailable", lambda label: "no server here" if label == "postgres" else None)
    got = bench.run_engines_bench(["sqlite", "postgres"], sections=(), rounds=1, warmup=False)
    assert list(got["engines"]) == ["sqlite"]
    assert "postgres: skipped: no server here" in got["notes"]


def test_cli(bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "engines.json"
    argv = ["--engines", "sqlite", "--sections", "open", "--open-size", "20", "--rounds", "1", "--json", str(out)]
    assert bench.main(argv) == 0
    data = json.loads(out.read_text())
    assert set(data["open"]["ratios"]) == {"sqlite"}
    assert data["writers"] is None
    assert "open.sqlite" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bench.main(["--engines", "sqlite,mysql"])
