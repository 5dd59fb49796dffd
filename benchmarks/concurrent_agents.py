"""Several agent processes on one LangGraph store: what is lost, what overflows, how fast.

The workload (docs/comparison.md#langgraph-stores-under-concurrent-agents): ``W`` worker
processes (1, 2 and 4) share one namespace, a memory of capacity 1,000.  Each runs ``ops``
operations, 70% *remember* (a put of a new item) and 30% *recall and rehearse* (one of 20
hot items, read and written back with its ``rehearsals`` count plus one).  The stores:

* ``lethe-sqlite (update)``, ``lethe-postgres (update)``: :class:`LetheStore` with a memory
  template of capacity 1,000 over lethe's SQLite and PostgreSQL engines; a rehearsal is
  ``LetheStore.update(namespace, key, fn)``, the atomic read-modify-write.
* ``lethe-sqlite (get-then-put)``: the same store used as LangGraph documents any store
  (``get``, then ``put``): it shows the loss is the pattern's, whatever the store.
* ``langgraph-sqlite``, ``langgraph-postgres``: LangGraph's ``SqliteStore`` and
  ``PostgresStore`` (no capacity), rehearsing by get-then-put.

Reported per store and ``W``: rehearsals made and *lost* (made minus the counts found after),
items *above capacity* at the end, errors raised to the workers (counted, the worker goes
on), and throughput (operations per second, all workers together, from a common start).
The 20 hot items are pinned in the lethe memories, so a lost count is a lost write, never
an eviction.

Run from the repository root: ``python benchmarks/concurrent_agents.py [--ops 300] [--json out.json]``.
It starts a throwaway PostgreSQL server (``benchmarks/servers.py``; skipped without one).
Needs the ``bench`` extra (``langgraph-checkpoint-sqlite``, ``langgraph-checkpoint-postgres``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from langgraph.store.base import BaseStore

from lethe import Memory
from lethe.integrations.langgraph import LetheStore

NAMESPACE = ("agent", "memories")
CAPACITY = 1000
HOT = 20
REMEMBER = 0.7
WRITERS = (1, 2, 4)
STORES = (
    "lethe-sqlite (update)",
    "lethe-postgres (update)",
    "lethe-sqlite (get-then-put)",
    "langgraph-sqlite",
    "langgraph-postgres",
)


def _template() -> Memory[str, dict[str, Any]]:
    return Memory(max_entries=CAPACITY)


@contextmanager
def opened(kind: str, where: str) -> Iterator[BaseStore]:
    """The store ``kind`` on ``where`` (an SQLite path or a PostgreSQL connection string)."""
    with ExitStack() as stack:
        if kind.startswith("lethe-"):
            if kind.startswith("lethe-sqlite"):
                from lethe.store import SQLiteStore

                engine: Any = stack.enter_context(SQLiteStore(where))
            else:
                from lethe.store import PostgresStore

                engine = stack.enter_context(PostgresStore(where))
            yield stack.enter_context(LetheStore(engine, memory=_template()))
        elif kind == "langgraph-sqlite":
            from langgraph.store.sqlite import SqliteStore

            yield stack.enter_context(SqliteStore.from_conn_string(where))
        else:
            from langgraph.store.postgres import PostgresStore as LangGraphPostgres

            yield stack.enter_context(LangGraphPostgres.from_conn_string(where))


def _rehearse(store: BaseStore, kind: str, key: str) -> None:
    if kind.endswith("(update)"):
        assert isinstance(store, LetheStore)
        store.update(NAMESPACE, key, lambda v: {**(v or {}), "rehearsals": (v or {}).get("rehearsals", 0) + 1})
        return
    item = store.get(NAMESPACE, key)  # LangGraph's documented read-modify-write: get, then put
    assert item is not None
    store.put(NAMESPACE, key, {**item.value, "rehearsals": item.value["rehearsals"] + 1})


def worker(kind: str, where: str, index: int, ops: int, start: Any, out: Any) -> None:
    """One agent process: ``ops`` operations after the common start; reports what it did."""
    rng = random.Random(index)
    made = errors = 0
    with opened(kind, where) as store:
        start.wait()
        began = time.time()
        for i in range(ops):
            try:
                if rng.random() < REMEMBER:
                    store.put(NAMESPACE, f"w{index}-{i}", {"text": f"memory {i} of agent {index}", "rehearsals": 0})
                else:
                    _rehearse(store, kind, f"hot-{rng.randrange(HOT)}")
                    made += 1
            except Exception:  # a store that raises under contention: counted, and the agent goes on
                errors += 1
        out.put({"began": began, "ended": time.time(), "rehearsals": made, "errors": errors})


def _seed(kind: str, where: str) -> None:
    with opened(kind, where) as store:
        if hasattr(store, "setup"):
            store.setup()
        for h in range(HOT):
            store.put(NAMESPACE, f"hot-{h}", {"text": f"hot memory {h}", "rehearsals": 0})
        if isinstance(store, LetheStore):  # pinned: a lost count is a lost write, never an eviction
            store.shared(NAMESPACE).update(lambda m: _pinned(m))


def _pinned(mem: Memory[str, dict[str, Any]]) -> Memory[str, dict[str, Any]]:
    for h in range(HOT):
        mem = mem.pin(f"hot-{h}")
    return mem


def trial(kind: str, where: str, writers: int, ops: int) -> dict[str, Any]:
    """One run of the workload; ``where`` is fresh (an empty file or database)."""
    _seed(kind, where)
    context = multiprocessing.get_context("spawn")
    start, out = context.Event(), context.Queue()
    procs = [context.Process(target=worker, args=(kind, where, w, ops, start, out)) for w in range(writers)]
    for p in procs:
        p.start()
    time.sleep(1.0 + 0.5 * writers)  # every worker opened its store
    start.set()
    reports = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    with opened(kind, where) as store:
        items = store.search(NAMESPACE, limit=100_000)
    found = sum(i.value.get("rehearsals", 0) for i in items if i.key.startswith("hot-"))
    made = sum(r["rehearsals"] for r in reports)
    elapsed = max(r["ended"] for r in reports) - min(r["began"] for r in reports)
    return {
        "writers": writers,
        "operations": writers * ops,
        "rehearsals": made,
        "lost": made - found,
        "lost_share": (made - found) / made if made else 0.0,
        "items": len(items),
        "above_capacity": max(0, len(items) - CAPACITY),
        "errors": sum(r["errors"] for r in reports),
        "ops_per_s": writers * ops / elapsed,
    }


@contextmanager
def places(kind: str, dsn: str | None, tmp: Path, count: Iterator[int]) -> Iterator[str]:
    """A fresh SQLite file, or a fresh database on the PostgreSQL server."""
    n = next(count)
    if "sqlite" in kind:
        yield str(tmp / f"{n}.db")
        return
    import psycopg

    assert dsn is not None
    name = f"bench_{n}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield psycopg.conninfo.make_conninfo(dsn, dbname=name)


def versions() -> dict[str, str]:
    """The versions of the packages measured."""
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    here = os.path.dirname(os.path.abspath(__file__))
    commit = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"], capture_output=True)
    found = {"lethe commit": (commit.stdout.strip() or "unknown") + (" (modified)" if dirty.stdout.strip() else "")}
    for name in ("lethe-decay", "langgraph", "langgraph-checkpoint-sqlite", "langgraph-checkpoint-postgres", "psycopg"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def run(ops: int, writers: tuple[int, ...] = WRITERS, stores: tuple[str, ...] = STORES) -> dict[str, Any]:
    """Every store at every number of writers, in one run; PostgreSQL ones skipped without a server."""
    from benchmarks.servers import postgres_info, postgres_server, postgres_unavailable

    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "versions": versions(),
        "workload": {"capacity": CAPACITY, "hot": HOT, "remember": REMEMBER, "ops_per_writer": ops},
        "stores": {},
    }
    counter = iter(range(10**6))
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        dsn = None
        if postgres_unavailable() is None:
            dsn = stack.enter_context(postgres_server())
            result["machine"]["postgres"] = postgres_info(dsn)
        for kind in stores:
            if "postgres" in kind and dsn is None:
                continue
            rows = []
            for w in writers:
                with places(kind, dsn, Path(tmp), counter) as where:
                    rows.append(trial(kind, where, w, ops))
                print(f"{kind:28} W={w}: {rows[-1]}", file=sys.stderr)
            result["stores"][kind] = rows
    return result


def table(result: dict[str, Any]) -> str:
    lines = [
        "| store | W | rehearsals lost | items above capacity | errors | operations/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for kind, rows in result["stores"].items():
        for r in rows:
            lost = f"{r['lost']} of {r['rehearsals']} ({100 * r['lost_share']:.1f}%)"
            lines.append(
                f"| {kind} | {r['writers']} | {lost} | {r['above_capacity']} | {r['errors']} | {r['ops_per_s']:,.0f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=300, help="operations per worker (default 300)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    result = run(args.ops)
    print(table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
