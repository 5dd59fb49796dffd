"""Where a cold open's time goes: the phases of opening an n-entry memory from SQLite, each
timed on its own, against ``Memory.from_dict`` in the same run.

Usage (from the repository root)::

    python benchmarks/open_phases.py                 # 100,000 entries, 5 rounds (about a minute)
    python benchmarks/open_phases.py --size 10000 --rounds 3 --json open_phases.json

Unlike the other benchmarks this one reaches into lethe's private modules: it times the steps
``Shared(...).current()`` takes one by one (``lethe.store._records``, the memory's ranking),
and the cheapest form each step could take (a column check at C speed, a plain ``dict``).
Each sample runs with the collector paused, after a collection: the phases are measured
apart, and the collector would charge one phase for another's garbage.

Phases:

* **read the rows**: a new ``SQLiteStore`` and ``load(name)`` (the head and every row, as text);
* **parse their JSON**: 256 rows a ``json.loads`` call, as an open parses them;
* **rows to columns**: ``zip(*rows)``, what any check of a whole column at C speed starts from;
* **the type of every field, by column**: ``set(map(type, column))`` for each column;
* **unique keys and put orders**: two ``set`` builds;
* **entries, each row checked**: lethe's reader, one ``Entry`` per row;
* **the hash-trie map** of those entries, and a **plain dict** of the parsed rows instead;
* **the ranking**: the memory's ranking rebuilt from the entries;
* **from_dict**: ``Memory.from_dict`` of the memory's ``to_dict()`` already parsed from JSON;
* **open**: a new ``SQLiteStore``, ``Shared(store, name, template).current()``.

The report adds up the phases an open that checks every row but builds nothing would need
(read, parse, columns, types, uniqueness): the floor under any open that refuses a damaged
row before it returns, whatever it builds.  See docs/performance.md ("Round three").
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from operator import itemgetter
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import run
import store as sb
import suite
from suite import build_memory, fake_clock, keys_for

from lethe import Memory
from lethe._core.map import EMPTY
from lethe.store import Shared, SQLiteStore, _records

NAME = "open-phases"
#: The phases whose sum is an open that checks every row and builds nothing.
FLOOR = ("read the rows", "parse their JSON", "rows to columns", "types by column", "unique keys and put orders")


def timed(fn: Callable[[], object]) -> tuple[float, Any]:
    """Seconds ``fn()`` took with the collector paused (after a collection), and its result."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out
    finally:
        gc.enable()


def phases(path: str, mem: Memory[Any, Any]) -> dict[str, Callable[[], object]]:
    """The phases of opening ``mem``, stored at ``path``, each a function of prepared inputs."""
    template = Memory(max_entries=mem.max_entries, decay_fn=mem.decay_fn, half_life=mem.half_life)
    doc = json.loads(json.dumps(mem.to_dict()))
    config = mem._config  # (private: the decay function and ranking the open builds with)

    def read() -> tuple[int, str, list[tuple[int, str]]]:
        store = SQLiteStore(path)
        try:
            return store.load(NAME)
        finally:
            store.close()

    def parse(rows: list[tuple[int, str]]) -> list[Any]:
        parsed: list[Any] = []
        for start in range(0, len(rows), _records._CHUNK):
            parsed += _records._parsed_rows(rows, start)
        return parsed

    def opened() -> Memory[Any, Any]:
        store = SQLiteStore(path)
        try:
            return Shared(store, NAME, template).current()
        finally:
            store.close()

    *_, rows = read()
    parsed = parse(rows)
    columns = list(zip(*parsed))
    built = _records._entries(parsed, "entries", config.decay_fn)
    first = itemgetter(0)
    latest_us = mem._latest_us  # (private: the latest clock reading, as the ranking takes it)
    return {
        "from_dict": lambda: Memory.from_dict(doc),
        "open": opened,
        "read the rows": read,
        "parse their JSON": lambda: parse(rows),
        "rows to columns": lambda: list(zip(*parsed)),
        "types by column": lambda: [set(map(type, column)) for column in columns],
        "unique keys and put orders": lambda: (len(set(columns[0])), len(set(map(first, rows)))),
        "entries, each row checked": lambda: _records._entries(parsed, "entries", config.decay_fn),
        "the hash-trie map": lambda: EMPTY.update({e.key: e for e in built}),
        "a plain dict instead": lambda: dict(zip(columns[0], parsed)),
        "the ranking": lambda: config.ranking.rebuilt(built, latest_us),
    }


def run_open_phases(size: int, rounds: int, directory: str | None = None) -> dict[str, Any]:
    """Store a ``size``-entry memory in SQLite, time every phase ``rounds`` times (interleaved);
    returns the JSON-ready result."""
    clock = fake_clock()
    mem = build_memory(size, sb.DECAY, clock, size, keys_for(size))
    result: dict[str, Any] = {"meta": {**suite.machine_info(), "size": size, "rounds": rounds, "gc": "paused"}}
    with tempfile.TemporaryDirectory(prefix="lethe-open-phases-", dir=directory) as tmp:
        path = str(Path(tmp) / "open.db")
        store = SQLiteStore(path)
        try:
            Shared(store, NAME, mem)
        finally:
            store.close()
        cases = phases(path, mem)
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, fn in cases.items():
                samples[name].append(timed(fn)[0])
    medians = {name: statistics.median(s) for name, s in samples.items()}
    base = medians["from_dict"]
    result["phases"] = {
        name: {"median_s": medians[name], "samples_s": samples[name], "ratio": medians[name] / base} for name in cases
    }
    floor = sum(medians[name] for name in FLOOR)
    result["floor"] = {"phases": list(FLOOR), "median_s": floor, "ratio": floor / base}
    return result


def report(result: dict[str, Any]) -> str:
    meta = result["meta"]
    rows = [[name, f"{p['median_s'] * 1e3:.1f} ms", f"{p['ratio']:.2f}x"] for name, p in result["phases"].items()]
    floor = result["floor"]
    rows.append(["checked, nothing built (the sum of: " + ", ".join(floor["phases"]) + ")",
                 f"{floor['median_s'] * 1e3:.1f} ms", f"{floor['ratio']:.2f}x"])  # fmt: skip
    return "\n".join(
        [
            f"Python {meta['python']} on {meta['platform']}, {meta['cpu_count']} CPUs; n={meta['size']:,}, "
            f"{meta['rounds']} rounds, medians, collector paused in each sample",
            "",
            run.table(["phase", "time", "/ from_dict"], rows),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="entries (default 100000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the full result as JSON")
    parser.add_argument("--dir", default=None, help="where the SQLite file goes (default: the system's temp dir)")
    args = parser.parse_args(argv)
    result = run_open_phases(args.size, args.rounds, args.dir)
    result["meta"]["git"] = run.git_state()
    print(report(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
