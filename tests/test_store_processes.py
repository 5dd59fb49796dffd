"""lethe.store across processes: fork and spawn workers lose nothing; a SIGKILLed writer loses nothing acknowledged."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lethe import Entry, Memory
from lethe.store import Shared, SQLiteStore, Store

from ._support import sqlite_integrity

PUTS = 15
WORKERS = 3


def _open(engine: str, where: str) -> Store:
    if engine == "postgres":
        from lethe.store import PostgresStore

        return PostgresStore(where)
    if engine == "redis":
        from lethe.store import RedisStore

        url, prefix = where.split(" ")
        return RedisStore(url, prefix=prefix)
    return SQLiteStore(where)


def _worker(engine: str, where: str, w: int, heard: Any) -> None:
    """Put PUTS values into the shared memory; report what this process's on_evict heard."""
    mine: list[str] = []

    def on_evict(gone: tuple[Entry[Any, Any], ...]) -> None:
        mine.extend(e.value for e in gone)

    with _open(engine, where) as store:
        shared = Shared(store, "bot", Memory(max_entries=5, on_evict=on_evict))
        for i in range(PUTS):
            shared.update(lambda m, i=i: m.put(f"{w}-{i}"))
    heard.put(mine)


@pytest.mark.parametrize("engine", ["sqlite", "postgres", "redis"])
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_processes_lose_nothing_and_double_nothing(
    tmp_path: Path, method: str, engine: str, request: pytest.FixtureRequest
) -> None:
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    path = tmp_path / "store.db"
    where = {
        "sqlite": lambda: str(path),
        "postgres": lambda: request.getfixturevalue("postgres_dsn"),
        "redis": lambda: f"{request.getfixturevalue('redis_url')} {request.getfixturevalue('redis_prefix')}",
    }[engine]()
    # The parent has the store open while it forks: the child must not use the inherited connection.
    parent = _open(engine, where)
    parent_heard: list[str] = []
    template = Memory(max_entries=5, on_evict=lambda gone: parent_heard.extend(e.value for e in gone))
    first = Shared(parent, "bot", template)
    first.update(lambda m: m.put("parent-0"))
    ctx = multiprocessing.get_context(method)
    heard = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(engine, where, w, heard)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    first.update(lambda m: m.put("parent-1"))  # the parent keeps writing while they run
    reports = [heard.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    final = Shared(parent, "bot", Memory(max_entries=5))
    assert final.version == WORKERS * PUTS + 2
    kept = [e.value for e in final.current()]
    fed = [e.value for _, gone in final.evictions() for e in gone]
    put = [f"{w}-{i}" for w in range(WORKERS) for i in range(PUTS)] + ["parent-0", "parent-1"]
    assert sorted(kept + fed) == sorted(put)  # each exactly once
    # Each eviction was heard once, by the on_evict of the process whose commit made it.
    assert sorted([v for r in reports for v in r] + parent_heard) == sorted(fed)
    assert [v for v, _ in final.evictions()] == sorted({v for v, _ in final.evictions()})
    first.update(lambda m: m.put("parent-2"))  # the parent's own connection still works after the forks
    parent.close()
    if engine == "sqlite":
        assert sqlite_integrity(path) == "ok"


_KILLED_WRITER = """
import sys
from lethe import Memory
from lethe.store import Shared, SQLiteStore
store = SQLiteStore(sys.argv[1])
shared = Shared(store, "bot", Memory(max_entries=50), checkpoint_every=7)
i = 0
while True:
    shared.update(lambda m: m.put(i, key=i % 80))
    print(shared.version, flush=True)  # acknowledged
    i += 1
"""


def test_a_sigkilled_writer_leaves_the_store_consistent(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    acknowledged = 0
    for round_ in range(4):
        proc = subprocess.Popen(
            [sys.executable, "-c", _KILLED_WRITER, str(path)], stdout=subprocess.PIPE, text=True, env=env
        )
        assert proc.stdout is not None
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 20 + 13 * round_ and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen = int(line)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        assert seen > acknowledged
        acknowledged = seen
        assert sqlite_integrity(path) == "ok"
        with SQLiteStore(path) as store:
            shared = Shared(store, "bot", Memory(max_entries=50))
            assert shared.version >= acknowledged  # every acknowledged commit is there
            for v in range(max(0, shared.version - 5), shared.version + 1):
                shared.at(v)
    assert sqlite_integrity(path) == "ok"
