"""lethe.store across processes: fork and spawn workers lose nothing; a SIGKILLed writer loses nothing acknowledged.

Every fork happens in a process spawned for it (:func:`in_fresh_process`), where no thread runs.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest

from lethe import Entry, Memory
from lethe.store import Shared, SQLiteStore, Store

from ._support import sqlite_integrity
from .conftest import DURABLE_ENGINES

PUTS = 15
WORKERS = 3
T = TypeVar("T")


def _reporting(fn: Callable[..., Any], args: tuple[Any, ...], out: Connection) -> None:
    """Send ``(True, fn(*args))``, or ``(False, its traceback)`` when it raises."""
    try:
        answer = (True, fn(*args))
    except BaseException:
        answer = (False, traceback.format_exc())
    out.send(answer)
    out.close()


def in_fresh_process(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a process spawned for it, in which no thread runs: there ``fn`` may fork.

    Forking a process that runs threads (the test process may: other tests leave daemon threads
    behind) can deadlock the child, and Python 3.12+ warns at every such fork (DeprecationWarning).
    ``fn`` and ``args`` must pickle; what ``fn`` raises fails the test, with its traceback.
    """
    ctx = multiprocessing.get_context("spawn")
    back, out = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_reporting, args=(fn, args, out))
    proc.start()
    out.close()
    with back:
        answer: tuple[bool, Any] = back.recv() if back.poll(300) else (False, "no answer within 300 s")
    proc.join(60)
    if proc.is_alive():
        proc.kill()
        proc.join()
    ok, result = answer
    if not ok:
        pytest.fail(f"in a fresh process:\n{result}")
    return cast(T, result)


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


def _parent(engine: str, where: str, method: str) -> tuple[list[list[str]], list[str], list[int | None]]:
    """The parent's part: start the workers while it holds the store open and writes to it.

    Returns what each worker's ``on_evict`` heard, what the parent's heard, and the workers' exit codes.
    """
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
    first.update(lambda m: m.put("parent-2"))  # the parent's own connection still works after the forks
    parent.close()
    return reports, parent_heard, [p.exitcode for p in procs]


@pytest.mark.parametrize("engine", DURABLE_ENGINES)  # the engines whose store processes share
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
    if method == "fork":  # forked from a process where no thread runs
        reports, parent_heard, exitcodes = in_fresh_process(_parent, engine, where, method)
    else:
        reports, parent_heard, exitcodes = _parent(engine, where, method)
    assert exitcodes == [0] * WORKERS
    with _open(engine, where) as store:
        final: Shared[Any, Any] = Shared(store, "bot", Memory(max_entries=5))
        assert final.version == WORKERS * PUTS + 3
        kept = [e.value for e in final.current()]
        fed = [e.value for _, gone in final.evictions() for e in gone]
        put = [f"{w}-{i}" for w in range(WORKERS) for i in range(PUTS)] + ["parent-0", "parent-1", "parent-2"]
        assert sorted(kept + fed) == sorted(put)  # each exactly once
        # Each eviction was heard once, by the on_evict of the process whose commit made it.
        assert sorted([v for r in reports for v in r] + parent_heard) == sorted(fed)
        assert [v for v, _ in final.evictions()] == sorted({v for v, _ in final.evictions()})
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
