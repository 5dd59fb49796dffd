"""The command line, run as ``python -m lethe`` on real saved memories and logs."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from lethe import Memory
from lethe.decay import BUILTINS

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
AT = "2026-01-01T14:00:00Z"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lethe", *args], capture_output=True, text=True, timeout=60)


def saved(tmp_path: Path, data: Any, name: str = "mem.json") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def build_memory(**kwargs: Any) -> Memory[Any, Any]:
    clock = {"now": T0}
    mem: Memory[Any, Any] = Memory(
        max_entries=10, half_life=timedelta(hours=1), clock_fn=lambda: clock["now"], summarize_fn=str, **kwargs
    )
    mem = mem.put("deploy failed on node 7, disk full", key="deploy")
    mem = mem.put({"client": "X", "pays": "late"}, key="client", importance=1.5)
    mem = mem.put("never email the CEO", key="rule", pinned=True)
    mem = mem.put("old note", key="old")
    clock["now"] = T0 + timedelta(minutes=30)
    mem, _ = mem.get("deploy")
    return mem


def expect_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0]


# -- inspect -------------------------------------------------------------------


def test_inspect_table(tmp_path: Path) -> None:
    path = saved(tmp_path, build_memory().to_dict())
    result = run("inspect", path, "--at", AT)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("key"))
    for column in ("score", "state", "age", "accessed", "summarize", "evict", "value"):
        assert column in header
    rows = {line.split()[0]: line for line in lines[lines.index(header) + 1 :]}
    assert set(rows) == {"deploy", "client", "rule", "old"}
    assert "pinned" in rows["rule"]
    assert "never" in rows["rule"]
    assert "1.000" in rows["rule"]
    # 'deploy' was rehearsed 90 minutes before AT: 0.5 ** 1.5 = 0.354.
    assert "0.354" in rows["deploy"]
    assert "active" in rows["deploy"]
    assert "deploy failed on node 7" in rows["deploy"]
    assert "0.250" in rows["old"]


def test_inspect_json_scores_states_and_crossings(tmp_path: Path) -> None:
    path = saved(tmp_path, build_memory().to_dict())
    result = run("inspect", path, "--at", AT, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["size"] == 4
    assert doc["at"] == "2026-01-01T14:00:00+00:00"
    entries = {e["key"]: e for e in doc["entries"]}
    assert doc["entries"][0]["key"] == "rule"
    old = entries["old"]
    assert old["score"] == pytest.approx(0.25)
    assert old["state"] == "active"
    assert old["age_seconds"] == 7200.0
    assert old["access_count"] == 0
    # 0.5 ** (h / 1h) = threshold  ->  h = log2(1 / threshold) hours after the put, 2h before AT.
    assert old["summarize_in_seconds"] == pytest.approx(3600 * 2.7369655941662063 - 7200, abs=1.0)
    assert old["evict_in_seconds"] == pytest.approx(3600 * 4.321928094887363 - 7200, abs=1.0)
    assert old["evict_at"].startswith("2026-01-01T16:19")
    deploy = entries["deploy"]
    assert deploy["access_count"] == 1
    assert deploy["last_access_seconds_ago"] == 5400.0
    assert entries["client"]["importance"] == 1.5
    assert entries["client"]["evict_in_seconds"] > old["evict_in_seconds"]
    rule = entries["rule"]
    assert rule["state"] == "pinned"
    assert rule["summarize_in_seconds"] is None
    assert rule["evict_at"] is None


def test_inspect_states_later(tmp_path: Path) -> None:
    mem = build_memory()
    clock_now = T0 + timedelta(minutes=30)
    mem = Memory.from_dict(mem.to_dict(), clock_fn=lambda: clock_now)
    data = mem.to_dict()
    data["entries"][0]["expires_at"] = "2026-01-01T13:00:00+00:00"  # 'deploy'
    path = saved(tmp_path, data)
    doc = json.loads(run("inspect", path, "--at", "2026-01-01T15:30:00+00:00", "--json").stdout)
    states = {e["key"]: e["state"] for e in doc["entries"]}
    # At 15:30 'old' scores 0.5 ** 3.5 = 0.088 (between the thresholds); 'client' 1.5 * that = 0.133.
    assert states == {"deploy": "expired", "client": "summarized", "rule": "pinned", "old": "summarized"}
    entries = {e["key"]: e for e in doc["entries"]}
    assert entries["deploy"]["score"] == 0.0
    assert entries["deploy"]["evict_in_seconds"] == 0.0
    assert entries["old"]["summarize_in_seconds"] == 0.0
    doc = json.loads(run("inspect", path, "--at", "2026-01-01T18:00:00+00:00", "--json").stdout)
    assert {e["key"]: e["state"] for e in doc["entries"]}["old"] == "below eviction"


def test_inspect_sort_and_top(tmp_path: Path) -> None:
    path = saved(tmp_path, build_memory().to_dict())
    by_key = json.loads(run("inspect", path, "--at", AT, "--json", "--sort", "key").stdout)
    assert [e["key"] for e in by_key["entries"]] == ["client", "deploy", "old", "rule"]
    by_age = json.loads(run("inspect", path, "--at", AT, "--json", "--sort", "age", "--top", "2").stdout)
    assert [e["key"] for e in by_age["entries"]] == ["deploy", "client"]


def test_inspect_other_models(tmp_path: Path) -> None:
    for name in BUILTINS:
        path = saved(tmp_path, build_memory(decay_fn=name).to_dict(), f"{name}.json")
        result = run("inspect", path, "--at", AT, "--json")
        assert result.returncode == 0, (name, result.stderr)
        assert len(json.loads(result.stdout)["entries"]) == 4


def test_inspect_empty_memory(tmp_path: Path) -> None:
    path = saved(tmp_path, Memory().to_dict())
    result = run("inspect", path)
    assert result.returncode == 0
    assert "(no entries)" in result.stdout


def test_inspect_missing_file(tmp_path: Path) -> None:
    expect_error(run("inspect", str(tmp_path / "nope.json")), "no such file")


def test_inspect_invalid_json(tmp_path: Path) -> None:
    expect_error(run("inspect", saved(tmp_path, "{not json")), "not valid JSON")


def test_inspect_json_list(tmp_path: Path) -> None:
    expect_error(run("inspect", saved(tmp_path, [1, 2])), "JSON list")


def test_inspect_wrong_shape(tmp_path: Path) -> None:
    expect_error(run("inspect", saved(tmp_path, {"hello": "world"})), "not a saved memory")
    data = build_memory().to_dict()
    data["entries"] = {"a": 1}
    expect_error(run("inspect", saved(tmp_path, data)), "entries")


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("inserted_at", "yesterday"),
        ("access_count", -1),
        ("importance", "high"),
        ("pinned", "yes"),
        ("key", {"k": 1}),
    ],
)
def test_inspect_malformed_entry(tmp_path: Path, field: str, bad: Any) -> None:
    data = build_memory().to_dict()
    data["entries"][1][field] = bad
    expect_error(run("inspect", saved(tmp_path, data)), f"entries[1].{field}")


def test_inspect_entry_not_an_object(tmp_path: Path) -> None:
    data = build_memory().to_dict()
    data["entries"][0] = "oops"
    expect_error(run("inspect", saved(tmp_path, data)), "entries[0]")


def test_inspect_custom_decay(tmp_path: Path) -> None:
    mem = build_memory(decay_fn=lambda entry, now: 0.5)
    assert mem.to_dict()["decay_fn"]["name"] == "custom"
    expect_error(run("inspect", saved(tmp_path, mem.to_dict())), "custom decay function")


def test_inspect_bad_options(tmp_path: Path) -> None:
    path = saved(tmp_path, build_memory().to_dict())
    expect_error(run("inspect", path, "--at", "noon"), "--at")
    expect_error(run("inspect", path, "--top", "-1"), "--top")
    expect_error(run("inspect", path, "--sort", "size"), "--sort")


# -- curves ------------------------------------------------------------------


def distinct_models() -> list[str]:
    seen: set[int] = set()
    names = []
    for name, cls in BUILTINS.items():
        if id(cls) not in seen:
            seen.add(id(cls))
            names.append(name)
    return names


def test_curves_default_draws_every_distinct_model() -> None:
    result = run("curves")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any(0x2800 <= ord(ch) <= 0x28FF for ch in result.stdout)
    assert any(line.startswith("1.00 ┤") for line in lines)
    assert any(line.startswith("0.00 ┤") for line in lines)
    assert any(line.lstrip().startswith("└") for line in lines)
    legend = [line.split()[1] for line in lines if line.startswith("  ") and line[2:3] in set("●■▲◆★✚✖◉")]
    assert legend == distinct_models()
    assert "\x1b[" not in result.stdout  # no colors when piped


def test_curves_chosen_models_and_durations() -> None:
    result = run("curves", "--model", "actr", "--model", "exponential", "--half-life", "30m", "--span", "2d")
    assert result.returncode == 0, result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "half-life 30m" in result.stdout
    assert "2d00h" in result.stdout
    assert "  ● actr" in result.stdout
    assert "  ■ exponential" in result.stdout
    assert "access_weighted" not in result.stdout
    assert run("curves", "--half-life", "90", "--span", "1w").returncode == 0


@pytest.mark.parametrize(
    "args",
    [
        ("--half-life", "5x"),
        ("--half-life", "0"),
        ("--span", "-3h"),
        ("--span", "forever"),
        ("--model", "nonesuch"),
    ],
)
def test_curves_bad_values(args: tuple[str, str]) -> None:
    expect_error(run("curves", *args), args[0].lstrip("-") if args[0] != "--model" else "nonesuch")


# -- simulate -------------------------------------------------------------------


def write_log(tmp_path: Path, events: list[Any], name: str = "log.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events))
    return str(path)


def generated_log() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"t": 0, "op": "put", "key": "rule", "value": "be terse", "pinned": True}]
    for i in range(40):
        t = 60 * (i + 1)
        events.append({"t": t, "op": "put", "key": f"obs{i}", "value": f"observation {i}"})
        if i % 5 == 0:
            events.append({"t": t + 1, "op": "get", "key": "obs0"})
    events.append({"t": 3000, "op": "update", "key": "obs0", "value": "observation 0, revised"})
    events.append({"t": 3001, "op": "touch", "key": "obs39", "importance": 2.0})
    events.append({"t": 3002, "op": "delete", "key": "obs38"})
    events.append({"t": 3003, "op": "get", "key": "gone"})
    events.append({"t": "2026-01-01T07:00:00Z", "op": "evict"})
    return events


def test_simulate_json(tmp_path: Path) -> None:
    result = run("simulate", write_log(tmp_path, generated_log()), "--capacity", "10", "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["events"] == len(generated_log())
    assert doc["ops"] == {"put": 41, "get": 9, "update": 1, "touch": 1, "delete": 1, "evict": 1}
    assert doc["misses"] == 1
    kept = [k["key"] for k in doc["kept"]]
    # Seven hours in, only the pinned rule survives the threshold eviction.
    assert kept == ["rule"]
    evicted = doc["evicted"]
    by_reason = {r: [e["key"] for e in evicted if e["reason"] == r] for r in ("capacity", "threshold")}
    # 41 puts into 10 slots: obs1..obs31 evicted for room (obs0 is rehearsed and outlives them).
    assert by_reason["capacity"] == [f"obs{i}" for i in range(1, 32)]
    assert set(by_reason["threshold"]) == {"obs0", "obs32", "obs33", "obs34", "obs35", "obs36", "obs37", "obs39"}
    assert doc["counts"] == {"kept": 1, "summarized": len(doc["summarized"]), "evicted": 39}
    assert set(doc["summarized"]) == {e["key"] for e in evicted}
    assert all(e["summary"].startswith("summary: observation") for e in evicted)


def test_simulate_text(tmp_path: Path) -> None:
    result = run("simulate", write_log(tmp_path, generated_log()), "--capacity", "50", "--model", "actr")
    assert result.returncode == 0, result.stderr
    assert "replayed 54 events with actr" in result.stdout
    assert "kept " in result.stdout
    assert "evicted (" in result.stdout
    assert "summarized (" in result.stdout


def test_simulate_large_log_is_quiet_when_piped(tmp_path: Path) -> None:
    events = [{"t": i, "op": "put", "key": i % 500, "value": i} for i in range(5000)]
    result = run("simulate", write_log(tmp_path, events), "--capacity", "100", "--json")
    assert result.returncode == 0
    assert result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["counts"]["kept"] == 100
    assert doc["counts"]["evicted"] == 4900


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("{oops", ("not valid JSON",)),
        ("[1, 2]", ("JSON list",)),
        ('{"t": 5, "op": "fly"}', ("op",)),
        ('{"op": "put", "value": 1}', ("t: missing",)),
        ('{"t": "noon", "op": "put", "value": 1}', ("t:",)),
        ('{"t": 5, "op": "get"}', ("key: required",)),
        ('{"t": 5, "op": "put"}', ("value: required",)),
        ('{"t": 5, "op": "put", "value": 1, "importance": "big"}', ("importance",)),
        ('{"t": 5, "op": "put", "value": 1, "key": [1]}', ("key",)),
        ('{"t": 5, "op": "put", "value": 1, "colour": "red"}', ("colour",)),
        ('{"t": 0, "op": "put", "value": 1}', ("earlier",)),
    ],
)
def test_simulate_bad_line(tmp_path: Path, line: str, words: tuple[str, ...]) -> None:
    path = write_log(tmp_path, [{"t": 1, "op": "put", "value": "ok"}, "", line])
    expect_error(run("simulate", path), f"{path}:3:", *words)


def test_simulate_bad_file_and_options(tmp_path: Path) -> None:
    expect_error(run("simulate", str(tmp_path / "none.jsonl")), "no such file")
    path = write_log(tmp_path, generated_log())
    expect_error(run("simulate", path, "--capacity", "0"), "--capacity")
    expect_error(run("simulate", path, "--model", "nonesuch"), "nonesuch")
    expect_error(run("simulate", path, "--half-life", "1y"), "--half-life")


# -- the demo stays the default -------------------------------------------------


def test_demo_is_still_the_default() -> None:
    assert run().stdout == run("demo").stdout
    assert "evicted 'spike'" in run().stdout


def test_progress_shows_only_on_a_terminal() -> None:
    import io

    from lethe._cli import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, pipe = Terminal(), io.StringIO()
    for stream in (tty, pipe):
        progress = Progress("inspect", 10, stream)
        progress.update(5)
        progress.done()
    assert "inspect: 5/10 ( 50%)" in tty.getvalue()
    assert tty.getvalue().endswith("\r\x1b[K")
    assert pipe.getvalue() == ""
