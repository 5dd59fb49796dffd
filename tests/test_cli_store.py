"""``python -m lethe inspect`` on a lethe store (``SQLiteStore``): by name, read only, one-line errors."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lethe import ManualClock, Memory
from lethe.store import Shared, SQLiteStore

from .test_cli import AT, T0, expect_error, run, saved


def template(clock: ManualClock, **kwargs: Any) -> Memory[Any, Any]:
    kwargs.setdefault("half_life", timedelta(hours=1))
    return Memory(max_entries=10, clock_fn=clock, summarize_fn=str, **kwargs)


def fill(shared: Shared[Any, Any], clock: ManualClock) -> None:
    """The entries of ``test_cli.build_memory``, one commit each: version 5."""
    clock.set(T0)
    shared.update(lambda m: m.put("deploy failed on node 7, disk full", key="deploy"))
    shared.update(lambda m: m.put({"client": "X", "pays": "late"}, key="client", importance=1.5))
    shared.update(lambda m: m.put("never email the CEO", key="rule", pinned=True))
    shared.update(lambda m: m.put("old note", key="old"))
    clock.set(T0 + timedelta(minutes=30))
    shared.transact(lambda m: m.get("deploy"))


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A closed store holding 'support-bot' (version 5) and 'billing' (version 1)."""
    path = tmp_path / "agent-memory.db"
    clock = ManualClock(T0)
    with SQLiteStore(path) as store:
        fill(Shared(store, "support-bot", template(clock)), clock)
        Shared(store, "billing", template(clock)).update(lambda m: m.put("invoice 4471 paid", key="invoice"))
    return path


def rows(stdout: str) -> dict[str, str]:
    lines = stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("key"))
    return {line.split()[0]: line for line in lines[header + 1 :]}


def test_inspect_a_store_by_name(store_path: Path) -> None:
    result = run("inspect", str(store_path), "--name", "support-bot", "--at", AT)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"{store_path}: support-bot @ version 5, 4/10 entries, ")
    table = rows(result.stdout)
    assert set(table) == {"deploy", "client", "rule", "old"}
    assert "0.354" in table["deploy"]  # rehearsed 90 minutes before AT: 0.5 ** 1.5
    assert "pinned" in table["rule"]
    billing = run("inspect", str(store_path), "--name", "billing", "--at", AT)
    assert billing.stdout.splitlines()[0].startswith(f"{store_path}: billing @ version 1, 1/10 entries, ")
    assert set(rows(billing.stdout)) == {"invoice"}


def test_inspect_a_store_as_json_is_inspect_of_the_saved_memory(store_path: Path, tmp_path: Path) -> None:
    result = run("inspect", str(store_path), "--name", "support-bot", "--at", AT, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["file"], doc["name"], doc["version"]) == (str(store_path), "support-bot", 5)
    with SQLiteStore(store_path) as store:
        data = Shared(store, "support-bot", template(ManualClock(T0)), max_clock_skew=None).current().to_dict()
    from_file = json.loads(run("inspect", saved(tmp_path, data), "--at", AT, "--json").stdout)
    # The same document but for where the memory came from.
    assert {k: v for k, v in doc.items() if k not in ("file", "name", "version")} == {
        k: v for k, v in from_file.items() if k != "file"
    }
    args = ("--name", "support-bot", "--at", AT, "--json", "--sort", "key", "--top", "2")
    top = json.loads(run("inspect", str(store_path), *args).stdout)
    assert [e["key"] for e in top["entries"]] == ["client", "deploy"]


def test_a_store_holding_one_memory_needs_no_name(tmp_path: Path) -> None:
    path = tmp_path / "one.db"
    clock = ManualClock(T0)
    with SQLiteStore(path) as store:
        fill(Shared(store, "support-bot", template(clock)), clock)
    result = run("inspect", str(path), "--at", AT)
    assert result.returncode == 0, result.stderr
    assert "support-bot @ version 5" in result.stdout.splitlines()[0]
    empty = tmp_path / "empty.db"
    SQLiteStore(empty).close()
    expect_error(run("inspect", str(empty)), "holds no memories")


def test_a_missing_or_unknown_name_lists_the_names_held(store_path: Path) -> None:
    expect_error(run("inspect", str(store_path)), "2 memories", "'billing', 'support-bot'", "--name")
    expect_error(run("inspect", str(store_path), "--name", "nope"), "'nope'", "'billing', 'support-bot'")


def test_name_with_a_json_file_is_an_error(tmp_path: Path) -> None:
    expect_error(run("inspect", saved(tmp_path, Memory().to_dict()), "--name", "x"), "--name", "not a lethe store")


def test_a_store_is_told_by_its_content_not_its_name(store_path: Path, tmp_path: Path) -> None:
    disguised = tmp_path / "memory.json"
    disguised.write_bytes(store_path.read_bytes())
    result = run("inspect", str(disguised), "--name", "billing", "--at", AT)
    assert result.returncode == 0, result.stderr
    assert "billing @ version 1" in result.stdout
    as_db = saved(tmp_path, Memory().to_dict(), "memory.db")
    assert "(no entries)" in run("inspect", as_db).stdout


def test_inspect_leaves_the_store_as_it_was(store_path: Path) -> None:
    before, mtime = store_path.read_bytes(), os.stat(store_path).st_mtime_ns
    for args in (("--name", "support-bot"), ("--name", "billing", "--json"), ("--name", "nope"), ()):
        run("inspect", str(store_path), "--at", AT, *args)
    # SQLite may create and remove its -wal and -shm files beside the store; the store itself is untouched.
    assert store_path.read_bytes() == before
    assert os.stat(store_path).st_mtime_ns == mtime
    with SQLiteStore(store_path) as store:
        assert store.names() == ["billing", "support-bot"]
        shared = Shared(store, "support-bot", template(ManualClock(T0)), max_clock_skew=None)
        assert shared.version == 5
        assert shared.current().peek("deploy").access_count == 1


WRITER_WITHOUT_CLOSE = """
import os, sys
from lethe import Memory
from lethe.store import Shared, SQLiteStore
shared = Shared(SQLiteStore(sys.argv[1]), "support-bot", Memory())
for i in range(3):
    shared.update(lambda m: m.put(i, key=i))
os._exit(0)
"""


def test_a_write_ahead_log_left_behind_stays_out_of_the_file(tmp_path: Path) -> None:
    # A writer that never closed (killed, say) leaves its commits in the -wal file; the last
    # connection to close would fold them into the store: inspect's is never that one.
    path = tmp_path / "agent-memory.db"
    subprocess.run([sys.executable, "-c", WRITER_WITHOUT_CLOSE, str(path)], check=True, timeout=60)
    wal = Path(f"{path}-wal")
    assert wal.stat().st_size > 0
    before, log = path.read_bytes(), wal.read_bytes()
    doc = json.loads(run("inspect", str(path), "--json").stdout)
    assert (doc["version"], doc["size"]) == (3, 3)
    assert path.read_bytes() == before
    assert wal.read_bytes() == log


def test_a_missing_file_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "agent-memory.db"
    expect_error(run("inspect", str(path)), "no such file")
    expect_error(run("inspect", str(path), "--name", "support-bot"), "no such file")
    assert list(tmp_path.iterdir()) == []


def test_sqlite_files_that_are_not_lethe_stores(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE users (id INTEGER)")
    conn.commit()
    conn.close()
    # An SQLite database with no tables: SQLiteStore would create its own in it.
    bare = tmp_path / "bare.db"
    conn = sqlite3.connect(bare)
    conn.execute("PRAGMA user_version = 7")
    conn.commit()
    conn.close()
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"SQLite format 3\x00" + b"not a page" * 100)
    for path, words in ((other, "other tables"), (bare, "no tables"), (damaged, "not a lethe store")):
        before = path.read_bytes()
        expect_error(run("inspect", str(path)), str(path), words)
        assert path.read_bytes() == before


def test_a_store_of_a_newer_format(store_path: Path) -> None:
    conn = sqlite3.connect(store_path)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'version'")
    conn.commit()
    conn.close()
    before = store_path.read_bytes()
    expect_error(run("inspect", str(store_path), "--name", "billing"), "newer lethe")
    assert store_path.read_bytes() == before


def test_a_store_kept_with_a_custom_decay_function(tmp_path: Path) -> None:
    path = tmp_path / "custom.db"
    clock = ManualClock(T0)
    with SQLiteStore(path) as store:
        fill(Shared(store, "support-bot", template(clock, decay_fn=lambda entry, now: 0.5)), clock)
    result = run("inspect", str(path), "--at", AT)
    assert result.returncode == 0, result.stderr
    assert "custom decay function" in result.stdout
    assert "--model" in result.stdout
    assert "n/a" in rows(result.stdout)["deploy"]
    doc = json.loads(run("inspect", str(path), "--at", AT, "--json").stdout)
    here = f"{__name__}.{test_a_store_kept_with_a_custom_decay_function.__qualname__}"
    assert doc["decay_fn"] == {"name": "custom", "function": f"{here}.<locals>.<lambda>"}
    assert all(e["score"] is None for e in doc["entries"])
    scored = json.loads(run("inspect", str(path), "--at", AT, "--json", "--model", "exponential").stdout)
    assert {e["key"]: e["score"] for e in scored["entries"]}["deploy"] == pytest.approx(0.5**1.5)
    assert "exponential" in scored["scores"]


def test_a_clock_behind_the_store_is_one_note(store_path: Path) -> None:
    result = run("inspect", str(store_path), "--name", "support-bot", "--at", "2026-01-01T12:00:00Z")
    assert result.returncode == 0, result.stderr
    notes = result.stderr.splitlines()
    assert len(notes) == 1
    assert notes[0].startswith(f"note: {store_path}: ")
    assert "ahead of" in notes[0]
