"""Persisting a memory to a JSON file and to SQLite, and restoring it on start.

``Memory.to_dict()`` gives plain JSON types and ``Memory.from_dict()`` rebuilds
the memory (hooks such as ``summarize_fn`` and ``clock_fn`` are passed again).
Both stores below live in a temporary directory unless you pass one.

Run it: ``python examples/persistence.py`` (call ``run(directory)`` to keep the files).
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from lethe import Memory

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)


def fixed_clock(now: datetime = NOW) -> Callable[[], datetime]:
    """A clock that always reads ``now`` (pass ``None`` to ``Memory`` for real time)."""
    return lambda: now


# -- JSON file -------------------------------------------------------------


def save_json(mem: Memory[Any, Any], path: Path) -> None:
    """Write ``mem`` to ``path`` atomically (write a temporary file, then rename)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(mem.to_dict(), indent=2))
    tmp.replace(path)


def load_json(path: Path, clock: Callable[[], datetime] | None = None) -> Memory[Any, Any]:
    """The memory saved at ``path``, or a fresh one when there is no file yet."""
    if not path.exists():
        return Memory(max_entries=100, half_life=timedelta(hours=2), clock_fn=clock)
    return Memory.from_dict(json.loads(path.read_text()), clock_fn=clock)


# -- SQLite ------------------------------------------------------------------


def save_sqlite(mem: Memory[Any, Any], db: Path, name: str = "default") -> None:
    """Store ``mem`` under ``name`` in the SQLite database ``db`` (one row per memory)."""
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS memories (name TEXT PRIMARY KEY, data TEXT NOT NULL)")
        conn.execute(
            "INSERT INTO memories (name, data) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET data = excluded.data",
            (name, json.dumps(mem.to_dict())),
        )
    conn.close()


def load_sqlite(db: Path, name: str = "default", clock: Callable[[], datetime] | None = None) -> Memory[Any, Any]:
    """The memory stored under ``name`` in ``db``, or a fresh one when there is none."""
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS memories (name TEXT PRIMARY KEY, data TEXT NOT NULL)")
        row = conn.execute("SELECT data FROM memories WHERE name = ?", (name,)).fetchone()
    conn.close()
    if row is None:
        return Memory(max_entries=100, half_life=timedelta(hours=2), clock_fn=clock)
    return Memory.from_dict(json.loads(row[0]), clock_fn=clock)


def session(mem: Memory[Any, Any], n: int) -> Memory[Any, Any]:
    """One run of the program: remember something and rehearse the first note."""
    mem = mem.put(f"note from session {n}", key=f"session-{n}")
    if "session-1" in mem:
        mem, _ = mem.get("session-1")
    return mem


def run(directory: Path) -> dict[str, Any]:
    """Three 'program starts' against each store; returns what each restored."""
    json_path = directory / "memory.json"
    db_path = directory / "memory.sqlite3"
    clock = fixed_clock()
    for n in (1, 2, 3):
        save_json(session(load_json(json_path, clock), n), json_path)
        save_sqlite(session(load_sqlite(db_path, clock=clock), n), db_path)
    from_json = load_json(json_path, clock)
    from_sqlite = load_sqlite(db_path, clock=clock)
    return {
        "json_keys": sorted(from_json.keys()),
        "sqlite_keys": sorted(from_sqlite.keys()),
        "same": from_json.to_dict() == from_sqlite.to_dict(),
        "rehearsals": from_json.peek("session-1").access_count,
        "files": sorted(p.name for p in directory.iterdir()),
    }


def main() -> None:
    """Run three sessions against a JSON file and a SQLite database, then show what was restored."""
    with tempfile.TemporaryDirectory(prefix="lethe-") as tmp:
        result = run(Path(tmp))
    print(f"restored from JSON:   {result['json_keys']}")
    print(f"restored from SQLite: {result['sqlite_keys']}")
    print(f"both stores agree:    {result['same']}")
    print(f"'session-1' rehearsed {result['rehearsals']} times across restarts")
    print(f"files: {', '.join(result['files'])}")


if __name__ == "__main__":
    main()
