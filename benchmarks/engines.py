"""Benchmark the engines of ``lethe.store`` side by side, in one run: SQLite, Redis (AOF), PostgreSQL.

Usage (from the repository root; the server engines need ``redis-server`` and
PostgreSQL installed, and the ``redis`` and ``postgres`` extras)::

    python benchmarks/engines.py                       # every engine, 3 rounds (about 5 minutes)
    python benchmarks/engines.py --engines sqlite,redis-everysec --rounds 5
    python benchmarks/engines.py --quick               # small sizes, 1 round (well under a minute)
    python benchmarks/engines.py --json benchmarks/engines.json

Engines (``--engines``, comma-separated; one not installed is skipped with a note):

* ``sqlite``: ``SQLiteStore(path)`` (WAL, ``synchronous=NORMAL``), a file in a
  temporary directory; ``sqlite-durable``: ``SQLiteStore(path, durable=True)``
  (``synchronous=FULL``: one fsync per commit);
* ``redis-everysec``, ``redis-always``: ``RedisStore`` on a ``redis-server``
  started for the run with ``--appendonly yes --appendfsync everysec|always``
  (no RDB snapshots);
* ``postgres``: ``PostgresStore`` on a cluster made for the run (``initdb``,
  ``pg_ctl``) with the server's defaults (``fsync``, ``synchronous_commit`` on).

Servers listen on 127.0.0.1 (random ports), live in temporary directories
under ``--dir`` beside the SQLite files, and are stopped and removed at the end.

Sections (one run; every round runs every engine, in an order rotated from
round to round; only the public API of ``lethe.store`` is used):

1. **commit**: one writer; per-commit time of ``shared.update(put of a new
   key)`` into a memory of n entries at capacity (so each put evicts one),
   per engine, against the same put chained on a plain ``Memory``, interleaved
   within rounds as in ``store.py``; the overhead is the difference of the medians.
2. **writers**: 1, 2 and 4 processes (spawn), K puts each into one memory of
   1,000 entries at capacity, from a barrier to the last commit: commits/s,
   attempts per commit, and the final version checked against the commits;
   the engines with writer locks (SQLite, PostgreSQL) with them, as their
   writers take them by default, and without (``locking=False``, "optimistic").
3. **catchup**: a follower process holds its own ``Shared`` replica; this
   process commits one put at a time, a gap of P ms after each, and notes when
   each commit returned (``time.monotonic_ns()`` right after the engine's
   append: the clock is system-wide on Linux); the follower notes when each
   version became visible in its replica, by ``shared.wait()`` (``wait``) or by
   ``shared.current()`` in a loop with ``time.sleep(0)`` (``poll``).  Reported:
   p50 and p99 of visible - committed.
4. **open**: cold open of an n-entry memory (default 100,000): a new store
   object, ``Shared(store, name, empty template).current()``, against
   ``Memory.from_dict(mem.to_dict())``; the collector runs before each sample.
   ``top10``: the same until ``top(10)`` of the opened memory is in hand.
   ``later``: the open of the same memory after 1,000 single commits on top of
   the bulk one (no checkpoint falls in between at 10,000 or more entries);
   ``compacted``: after those commits and a checkpoint (``store.compact``).

Medians and min-max over rounds, GC on, fake clock, as ``store.py``; see
docs/store.md ("Engines compared").
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import multiprocessing
import os
import queue
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import run
import servers
import store as sb
import suite
from suite import STEP, VALUE, Case, SizeSetup, build_memory, fake_clock, keys_for

from lethe import ManualClock, Memory
from lethe.store import Shared, SQLiteStore, Store

ENGINES = ("sqlite", "sqlite-durable", "redis-everysec", "redis-always", "postgres")
SECTIONS = ("commit", "writers", "catchup", "open")
#: How a follower learns of commits: Shared.wait where this lethe has it, else polling current().
FOLLOW = ("wait", "poll") if hasattr(Shared, "wait") else ("poll",)

T = TypeVar("T")
_now_ns = time.perf_counter_ns


@dataclass(frozen=True)
class Engine:
    """One engine under test: ``open()`` makes a new store object on it (a ``functools.partial``
    of the engine's class, so it pickles: spawned processes open their own)."""

    label: str
    open: Callable[[], Store]
    info: dict[str, Any]


def unavailable(label: str) -> str | None:
    """Why the engine ``label`` cannot run here, or None."""
    if label.startswith("redis-"):
        return servers.redis_unavailable()
    if label == "postgres":
        return servers.postgres_unavailable()
    return None


@contextmanager
def started(
    labels: Sequence[str], workdir: Path, directory: str | None, notes: list[str]
) -> Iterator[dict[str, Engine]]:
    """The engines ``labels`` (servers started, in ``directory``), stopped when the block ends;
    an engine that cannot run is left out, with a note saying why."""
    engines: dict[str, Engine] = {}
    with ExitStack() as stack:
        for label in labels:
            why = unavailable(label)
            if why is not None:
                notes.append(f"{label}: skipped: {why}")
                continue
            if label in ("sqlite", "sqlite-durable"):
                durable = label == "sqlite-durable"
                path = str(workdir / f"{label}.db")
                info = {"server": f"SQLite {sqlite3.sqlite_version}", "durable": durable}
                engines[label] = Engine(label, partial(SQLiteStore, path, durable=durable), info)
            elif label.startswith("redis-"):
                from lethe.store import RedisStore

                url = stack.enter_context(servers.redis_server(label.removeprefix("redis-"), directory))
                engines[label] = Engine(label, partial(RedisStore, url), servers.redis_info(url))
            else:
                from lethe.store import PostgresStore

                dsn = stack.enter_context(servers.postgres_server(directory))
                engines[label] = Engine(label, partial(PostgresStore, dsn), servers.postgres_info(dsn))
        yield engines


def create(engine: Engine, name: str, mem: Memory[Any, Any]) -> None:
    """Store ``mem`` as ``name`` on ``engine`` (its first open), through a store object closed after."""
    store = engine.open()
    try:
        Shared(store, name, mem)
    finally:
        store.close()


def rotated(items: Sequence[T], r: int) -> list[T]:
    """``items`` rotated by ``r``: round ``r``'s order, so no engine always runs first."""
    shift = r % len(items) if items else 0
    return [*items[shift:], *items[:shift]]


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


# -- 1: one writer's commit ----------------------------------------------------------


def run_commit(
    engines: dict[str, Engine], n: int, rounds: int, ops: int, warmup: bool, progress: Callable[[str], None]
) -> dict[str, Any]:
    """Per-commit time of update(put) on each engine against Memory.put, interleaved in the same rounds."""
    clock = fake_clock()
    base = build_memory(n, sb.DECAY, clock, n, keys_for(n))  # at capacity: each new key evicts one
    built_at = clock.now
    new_keys = keys_for(ops, "new")

    def plain_put() -> int:
        clock.set(built_at)
        m = base
        t0 = _now_ns()
        for k in new_keys:
            m = m.put(VALUE, key=k)
        return _now_ns() - t0

    setup = SizeSetup(n)
    setup.cases = [Case("plain.put", "plain", ops, plain_put, "Memory.put of a new key at capacity (chained)")]
    opened: list[Store] = []
    closing: list[Callable[[], None]] = []
    sent: dict[str, int] = {}
    try:
        for label, engine in engines.items():
            # Its own clock, never rewound: a shared memory moves on from sample to sample.
            clock_s = ManualClock(built_at, step=STEP)
            name = f"commit-{n}"
            create(engine, name, base.configure(clock_fn=clock_s))
            text = commit_text(engine, name, sb._template(n, clock_s))
            sent[label] = len(text.encode())
            store = engine.open()  # opened again, as a running process finds it
            opened.append(store)
            sh: Shared[Any, Any] = Shared(store, name, sb._template(n, clock_s))
            setup.cases.append(
                Case(f"shared.put.{label}", "shared", ops, sb.put_sampler(sh, ops, "s"), f"update(put) on {label}")
            )
            write, close = raw_writer(engine, text)
            closing.append(close)
            setup.cases.append(
                Case(f"raw.write.{label}", "raw", ops, partial(write, ops), f"the same bytes written raw on {label}")
            )
        cases = suite.run_size(setup, rounds, warmup=warmup, progress=progress)
    finally:
        for store in opened:
            store.close()
        for close in closing:
            close()
    return {
        "n": n,
        "ops": ops,
        "cases": cases,
        "bytes_per_commit": sent,
        "overhead": {label: sb.overhead(cases, f"shared.put.{label}", "plain.put") for label in engines},
        "floor": {label: sb.overhead(cases, f"shared.put.{label}", f"raw.write.{label}") for label in engines},
    }


class _Recording:
    """A store that keeps the text its last commit sent: its log record, head and rows."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.sent = ""

    def append(
        self,
        name: str,
        version: int,
        record: str,
        head: str,
        written: Sequence[tuple[int, str]],
        removed: Sequence[int],
        config: str | None = None,
        parent: str | None = None,
    ) -> bool:
        self.sent = record + head + "".join(row for _, row in written)
        return self._store.append(name, version, record, head, written, removed, config, parent)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._store, attr)


def commit_text(engine: Engine, name: str, template: Memory[Any, Any]) -> str:
    """The text one commit of a put sends to ``name`` on ``engine``, made by committing one."""
    store = engine.open()
    try:
        recording = _Recording(store)
        sh: Shared[Any, Any] = Shared(recording, name, template)
        sh.update(partial(sb._put, k="floor-probe"))
        return recording.sent
    finally:
        store.close()


def raw_writer(engine: Engine, text: str) -> tuple[Callable[[int], int], Callable[[], None]]:
    """The floor of a commit on ``engine``: a function timing ``count`` writes of ``text`` as one
    row, each its own transaction (SQLite: an ``INSERT ... ON CONFLICT DO UPDATE`` on a
    connection set as the store sets its own; Redis: one ``EVALSHA`` of a script that sets a key;
    PostgreSQL: one ``INSERT ... ON CONFLICT DO UPDATE``), and one closing what it opened.
    Two versions of ``text`` (its last character changed) take turns: SQLite writes nothing
    for a row updated to the bytes it holds."""
    target = engine.open.args[0]  # type: ignore[attr-defined]
    texts = [text, text[:-1] + ("x" if text[-1:] != "x" else "y")]
    upsert = "INSERT INTO floor (k, v) VALUES (1, {0}) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
    one: Callable[[str], object]  # one write of a text
    close: Callable[[], None]
    if engine.label.startswith("sqlite"):
        conn = sqlite3.connect(str(target) + "-floor", isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={'FULL' if engine.info.get('durable') else 'NORMAL'}")
        conn.execute("CREATE TABLE IF NOT EXISTS floor (k INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        statement = upsert.format("?")
        one, close = (lambda t: conn.execute(statement, (t,))), conn.close
    elif engine.label.startswith("redis"):
        import redis

        client = redis.Redis.from_url(target)
        script = client.register_script("return redis.call('SET', KEYS[1], ARGV[1])")
        script(keys=["lethe-floor"], args=[text])  # loaded once, as the store's scripts are
        one, close = (lambda t: script(keys=["lethe-floor"], args=[t])), client.close
    else:
        import psycopg

        pg = psycopg.connect(target, autocommit=True)
        pg.execute("CREATE TABLE IF NOT EXISTS floor (k INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        statement = upsert.format("%s")
        one, close = (lambda t: pg.execute(statement, (t,))), pg.close

    def write(count: int) -> int:
        t0 = _now_ns()
        for i in range(count):
            one(texts[i & 1])
        return _now_ns() - t0

    return write, close


# -- 2: several writer processes -----------------------------------------------------


#: The floor's tables: a head row each commit reads under the engine's lock and counts up (the
#: memory's version), and a row each commit writes its text to (one per writer).
_FLOOR_HEAD = "CREATE TABLE IF NOT EXISTS floor_head (k INTEGER PRIMARY KEY, n INTEGER NOT NULL)"
_FLOOR_ROWS = "CREATE TABLE IF NOT EXISTS floor_rows (k INTEGER PRIMARY KEY, v TEXT NOT NULL)"


def _floor_tables(engine: Engine, name: str) -> Any:
    """A connection to the floor's tables of trial ``name`` on ``engine`` (SQLite: a file of its
    own beside the store's, set as the store sets its own; PostgreSQL: tables of the store's
    database), the head row at 0."""
    target = engine.open.args[0]  # type: ignore[attr-defined]
    if engine.label.startswith("sqlite"):
        conn: Any = sqlite3.connect(f"{target}-{name}", isolation_level=None, timeout=60)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={'FULL' if engine.info.get('durable') else 'NORMAL'}")
        head, rows = "floor_head", "floor_rows"
    else:
        import psycopg

        conn = psycopg.connect(target, autocommit=True)
        head, rows = f"floor_head_{name}".replace("-", "_"), f"floor_rows_{name}".replace("-", "_")
    conn.execute(_FLOOR_HEAD.replace("floor_head", head))
    conn.execute(_FLOOR_ROWS.replace("floor_rows", rows))
    conn.execute(f"DELETE FROM {head}")
    conn.execute(f"INSERT INTO {head} (k, n) VALUES (0, 0)")
    return conn


def _floor_writer(engine: Engine, name: str, w: int, count: int, text: str, barrier: Any, results: Any) -> None:
    """One raw writer process: ``count`` commits of ``text``, each a transaction that takes the
    engine's own lock on the head, reads it, writes the text as its row and counts the head up:
    SQLite ``BEGIN IMMEDIATE`` (waiting on its busy handler), PostgreSQL ``SELECT ... FOR
    UPDATE`` of the head row, in two round trips as a locked lethe commit on PostgreSQL takes."""
    target = engine.open.args[0]  # type: ignore[attr-defined]
    texts = [text, text[:-1] + ("x" if text[-1:] != "x" else "y")]
    upsert = "INSERT INTO {rows} (k, v) VALUES ({w}, {p}) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
    if engine.label.startswith("sqlite"):
        conn: Any = sqlite3.connect(f"{target}-{name}", isolation_level=None, timeout=60)
        conn.execute(f"PRAGMA synchronous={'FULL' if engine.info.get('durable') else 'NORMAL'}")
        write = upsert.format(rows="floor_rows", w=w + 1, p="?")

        def commit(t: str) -> None:
            conn.execute("BEGIN IMMEDIATE")
            (n,) = conn.execute("SELECT n FROM floor_head WHERE k = 0").fetchone()
            conn.execute(write, (t,))
            conn.execute("UPDATE floor_head SET n = ? WHERE k = 0", (n + 1,))
            conn.execute("COMMIT")

    else:
        import psycopg

        conn = psycopg.connect(target, autocommit=True)
        head, rows = f"floor_head_{name}".replace("-", "_"), f"floor_rows_{name}".replace("-", "_")
        write = upsert.format(rows=rows, w=w + 1, p="%s")
        lock = f"BEGIN; SELECT n FROM {head} WHERE k = 0 FOR UPDATE"  # one round trip (simple query)
        bump = f"UPDATE {head} SET n = %s WHERE k = 0"

        def commit(t: str) -> None:
            cur = conn.execute(lock)
            cur.nextset()  # (the BEGIN's result, then the SELECT's)
            (n,) = cur.fetchone()
            with conn.pipeline():  # the second round trip: the row, the head, COMMIT
                conn.execute(write, (t,))
                conn.execute(bump, (n + 1,))
                conn.execute("COMMIT")

    try:
        barrier.wait(timeout=300)
        t0 = time.perf_counter()
        for i in range(count):
            commit(texts[i & 1])
        elapsed = time.perf_counter() - t0
    finally:
        conn.close()
    results.put({"writer": w, "elapsed_s": elapsed, "commits": count, "attempts": count})


def floor_processes(engine: Engine, name: str, writers: int, count: int, text: str) -> dict[str, Any]:
    """``writers`` raw writer processes (:func:`_floor_writer`) on ``engine``, reported as
    :func:`store.writer_processes` reports lethe's (the head's final count is the version)."""
    conn = _floor_tables(engine, name)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(writers + 1)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_floor_writer, args=(engine, name, w, count, text, barrier, results)) for w in range(writers)
    ]
    try:
        for p in procs:
            p.start()
        barrier.wait(timeout=300)
        t0 = time.perf_counter()
        reports = [results.get(timeout=600) for _ in procs]
        wall = time.perf_counter() - t0
        for p in procs:
            p.join(60)
        failed = [p.exitcode for p in procs if p.exitcode != 0]
        if failed:
            raise RuntimeError(f"floor writer processes failed: exit codes {failed}")
        head = "floor_head" if engine.label.startswith("sqlite") else f"floor_head_{name}".replace("-", "_")
        (version,) = conn.execute(f"SELECT n FROM {head} WHERE k = 0").fetchone()
    finally:
        conn.close()
    return sb.trial_result(reports, wall, version, None)


def run_writers(
    engines: dict[str, Engine],
    size: int,
    writer_counts: Sequence[int],
    count: int,
    rounds: int,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """Each round: every engine, every writer count, each trial on a memory of its own.  An
    engine with writer locks (SQLite, PostgreSQL) runs with them (its writers' default),
    without (``locking=False``, labelled optimistic), and as its floor (labelled raw: the
    bytes of one commit written under the engine's own lock, :func:`floor_processes`),
    interleaved."""
    clock = fake_clock()
    base = build_memory(size, sb.DECAY, clock, size, keys_for(size))
    variants = [(label, "locked") for label in engines]
    variants += [(label, mode) for mode in ("optimistic", "raw") for label in engines if label in LOCKING]
    texts = {label: commit_text(engines[label], "writers-floor-probe", base) for label in engines if label in LOCKING}
    trials: dict[str, dict[int, list[Any]]] = {writers_label(*v): {w: [] for w in writer_counts} for v in variants}
    for r in range(rounds):
        for label, mode in rotated(variants, r):
            for w in rotated(list(writer_counts), r):
                name = f"writers-{w}-{r}-{mode}"
                if mode == "raw":
                    trial = floor_processes(engines[label], name, w, count, texts[label])
                else:
                    create(engines[label], name, base)
                    trial = sb.writer_processes(engines[label].open, name, size, w, count, clock.now, mode == "locked")
                trials[writers_label(label, mode)][w].append(trial)
        progress(f"writers: round {r + 1}/{rounds} done")
    return {label: sb.writers_summary(by_count, size, count) for label, by_count in trials.items()}


#: The engines with writer locks (see Shared's ``locking``).
LOCKING = ("sqlite", "sqlite-durable", "postgres")


def writers_label(label: str, mode: str) -> str:
    """A row of the writers table: the engine, and ", optimistic" for writers without the lock,
    ", raw" for the engine's floor."""
    return label if mode == "locked" else f"{label}, {mode}"


# -- 3: catch-up latency -----------------------------------------------------------------


class _Stamped:
    """A store that notes when each of its commits was asked for and when it returned
    (``time.monotonic_ns``, by version)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.called: dict[int, int] = {}
        self.committed: dict[int, int] = {}

    def append(
        self,
        name: str,
        version: int,
        record: str,
        head: str,
        written: Sequence[tuple[int, str]],
        removed: Sequence[int],
        config: str | None = None,
        parent: str | None = None,
    ) -> bool:
        called = time.monotonic_ns()
        done = self._store.append(name, version, record, head, written, removed, config, parent)
        if done:
            self.committed[version] = time.monotonic_ns()
            self.called[version] = called
        return done

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._store, attr)


def _follower(
    open_store: Callable[[], Store],
    name: str,
    size: int,
    start: datetime,
    target: int,
    method: str,
    barrier: Any,
    results: Any,
    limit_s: float,
) -> None:
    """The follower process: a replica of ``name``; notes when each version up to ``target`` became visible."""
    visible: dict[int, int] = {}
    try:
        store = open_store()
        try:
            sh: Shared[Any, Any] = Shared(store, name, sb._template(size, ManualClock(start, step=STEP)))
            if method == "wait":
                sh.wait(0)  # type: ignore[attr-defined]  # opens what the engine waits on (a LISTEN connection)
            seen = sh.version
            barrier.wait(timeout=300)
            deadline = time.monotonic() + limit_s
            if method == "wait":
                wait = sh.wait  # type: ignore[attr-defined]  # on a lethe that has it (see FOLLOW)
                while seen < target and time.monotonic() < deadline:
                    if wait(1.0):
                        now, version = time.monotonic_ns(), sh.version
                        visible.update(dict.fromkeys(range(seen + 1, version + 1), now))
                        seen = version
            else:
                current = sh.current
                while seen < target and time.monotonic() < deadline:
                    current()
                    version = sh.version
                    if version != seen:
                        now = time.monotonic_ns()
                        visible.update(dict.fromkeys(range(seen + 1, version + 1), now))
                        seen = version
                    else:
                        time.sleep(0)  # yield the CPU, on a machine with few cores
        finally:
            store.close()
    except BaseException as exc:
        barrier.abort()  # the writer stops waiting for this process
        results.put({"error": f"{type(exc).__name__}: {exc}"})
        raise
    results.put({"visible": visible, "final": seen})


def _report(results: Any, timeout: float = 30) -> dict[str, Any]:
    """What the follower sent, or an error saying it sent nothing."""
    try:
        got: dict[str, Any] = results.get(timeout=timeout)
    except queue.Empty:
        return {"error": "it sent nothing"}
    return got


def catchup_trial(
    engine: Engine,
    name: str,
    base: Memory[Any, Any],
    size: int,
    start: datetime,
    commits: int,
    gap_s: float,
    method: str,
) -> dict[str, Any]:
    """One follower (spawned) and ``commits`` paced commits from this process; latencies in µs."""
    create(engine, name, base)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    results = ctx.Queue()
    limit_s = 60 + commits * gap_s * 4
    follower = ctx.Process(
        target=_follower, args=(engine.open, name, size, start, commits, method, barrier, results, limit_s)
    )
    follower.start()
    stamped = _Stamped(engine.open())
    try:
        # Shared takes any object with the store's methods: the stamped one passes the rest through.
        sh: Shared[Any, Any] = Shared(stamped, name, sb._template(size, ManualClock(start, step=STEP)))  # type: ignore[arg-type]
        try:
            barrier.wait(timeout=300)
        except threading.BrokenBarrierError:
            raise RuntimeError(f"the follower failed: {_report(results).get('error')}") from None
        for i in range(commits):
            time.sleep(gap_s)  # an idle gap before each commit: the follower waits for a fresh one
            sh.update(partial(sb._put, k=f"c{i}"))
        got = _report(results, limit_s + 60)
        if "error" in got:
            raise RuntimeError(f"the follower failed: {got['error']}")
    finally:
        follower.join(60)
        stamped.close()
    visible: dict[int, int] = got["visible"]
    # From the writer's append returning: negative when the follower saw a commit before the
    # writer's process was told (its reply, or the process itself, waited for a CPU).
    latencies = [(visible[v] - t) / 1e3 for v, t in sorted(stamped.committed.items()) if v in visible]
    # From the writer's append being called: includes the commit's own round trips and fsync.
    from_call = [(visible[v] - t) / 1e3 for v, t in sorted(stamped.called.items()) if v in visible]
    return {
        "commits": len(stamped.committed),
        "seen": len(latencies),
        "final_version": got["final"],
        "version_ok": got["final"] == commits and len(latencies) == commits,
        "p50_us": percentile(latencies, 0.5),
        "p99_us": percentile(latencies, 0.99),
        "max_us": max(latencies),
        "min_us": min(latencies),
        "from_call_p50_us": percentile(from_call, 0.5),
        "from_call_p99_us": percentile(from_call, 0.99),
        "latencies_us": latencies,
    }


def run_catchup(
    engines: dict[str, Engine],
    size: int,
    commits: int,
    gap_s: float,
    methods: Sequence[str],
    rounds: int,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """Each round: every engine, every follow method, each trial on a memory of its own."""
    clock = fake_clock()
    base = build_memory(size, sb.DECAY, clock, size, keys_for(size))
    trials: dict[str, dict[str, list[dict[str, Any]]]] = {label: {m: [] for m in methods} for label in engines}
    for r in range(rounds):
        for label in rotated(list(engines), r):
            for method in rotated(list(methods), r):
                trial = catchup_trial(
                    engines[label], f"catchup-{method}-{r}", base, size, clock.now, commits, gap_s, method
                )
                trials[label][method].append(trial)
        progress(f"catchup: round {r + 1}/{rounds} done")
    out: dict[str, Any] = {"size": size, "commits": commits, "gap_ms": gap_s * 1e3, "methods": list(methods)}
    out["by_engine"] = {
        label: {
            method: {
                "p50_us": sb.summary([t["p50_us"] for t in runs]),
                "p99_us": sb.summary([t["p99_us"] for t in runs]),
                "max_us": sb.summary([t["max_us"] for t in runs]),
                "min_us": sb.summary([t["min_us"] for t in runs]),
                "from_call_p50_us": sb.summary([t["from_call_p50_us"] for t in runs]),
                "from_call_p99_us": sb.summary([t["from_call_p99_us"] for t in runs]),
                "pooled_p50_us": percentile([x for t in runs for x in t["latencies_us"]], 0.5),
                "pooled_p99_us": percentile([x for t in runs for x in t["latencies_us"]], 0.99),
                "final_versions": [t["final_version"] for t in runs],
                "version_ok": all(t["version_ok"] for t in runs),
            }
            for method, runs in by_method.items()
        }
        for label, by_method in trials.items()
    }
    return out


# -- 4: cold open --------------------------------------------------------------------------


#: The states a memory is opened in (see run_open), and the single commits made on top of the
#: bulk-stored memory for the later ones.
STATES = ("open", "top10", "later", "compacted")
LATER_COMMITS = 1000


def _put_key(m: Memory[Any, Any], key: str) -> Memory[Any, Any]:
    return m.put(VALUE, key=key)


def run_open(
    engines: dict[str, Engine], n: int, rounds: int, warmup: bool, progress: Callable[[str], None]
) -> dict[str, Any]:
    """Cold open of an n-entry memory on each engine against from_dict of its to_dict(), interleaved.

    The memory is opened in three states: right after the one bulk commit that stored it
    (``open``; ``top10`` until its top ten is in hand too), after ``LATER_COMMITS`` single
    commits on top of it (``later``: no checkpoint falls in between at 10,000 entries or
    more), and after those commits and a checkpoint (``compacted``)."""
    clock = fake_clock()
    mem = build_memory(n, sb.DECAY, clock, n, keys_for(n))
    name = f"open-{n}"
    stored_s = {}
    for label, engine in engines.items():
        t0 = time.perf_counter()
        create(engine, name, mem)
        stored_s[label] = time.perf_counter() - t0
        for state in ("later", "compacted"):
            create(engine, f"{name}-{state}", mem)
            store = engine.open()
            try:
                template = sb._template(n, ManualClock(clock.now, step=STEP))
                writer: Shared[Any, Any] = Shared(store, f"{name}-{state}", template, max_clock_skew=None)
                for i in range(LATER_COMMITS):
                    writer.update(partial(_put_key, key=f"later-{i}"))
                if state == "compacted":
                    store.compact(f"{name}-{state}", 1)  # (False: the last commit made one)
            finally:
                store.close()
    # The kernel writes what was just stored back to disk for a while; flushed now, the opens measure opening.
    os.sync()
    reader = sb._template(n, sb._later_clock())
    # Asked for its top ten as an agent asks it, while the memory is in use: ten years on, every
    # score has decayed to 0.0 and the ten are the latest puts, found by reading them all.
    in_use = sb._template(n, ManualClock(clock.now, step=STEP))
    data = mem.to_dict()
    ops = max(1, min(20, 20_000 // n))  # opens per sample: 20 up to 1k, 2 at 10k, 1 at 100k

    def opener(open_store: Callable[[], Store], top: bool = False, state: str | None = None) -> Callable[[], int]:
        # top: until the memory's ten highest-scored entries are in hand, as a request asks them
        opened, version = (name, 0) if state is None else (f"{name}-{state}", LATER_COMMITS)

        def run_() -> int:
            elapsed = 0
            for _ in range(ops):
                gc.collect()  # the last sample's garbage is not this one's cost
                t0 = _now_ns()
                store = open_store()
                got = Shared(store, opened, in_use if top else reader)
                m = got.current()
                if top and len(m.top(10)) != 10:
                    raise RuntimeError("top(10) of the opened memory did not give 10 entries")
                elapsed += _now_ns() - t0
                store.close()
                if len(m) != n or got.version != version:
                    raise RuntimeError(f"opened {len(m)} entries at version {got.version}, expected {n} at {version}")
                del got, m  # freed outside the timed region
            return elapsed

        return run_

    later = sb._later_clock()

    def from_dict() -> int:
        elapsed = 0
        for _ in range(ops):
            gc.collect()
            t0 = _now_ns()
            out = Memory.from_dict(data, clock_fn=later)
            elapsed += _now_ns() - t0
            del out  # freed outside the timed region
        return elapsed

    setup = SizeSetup(n)
    setup.cases = [
        Case(f"open.{label}", "shared", ops, opener(engine.open), f"Shared(...).current() on {label}")
        for label, engine in engines.items()
    ]
    setup.cases += [
        Case(f"top10.{label}", "shared", ops, opener(engine.open, top=True), f"the same, then top(10), on {label}")
        for label, engine in engines.items()
    ]
    setup.cases += [
        Case(
            f"{state}.{label}",
            "shared",
            ops,
            opener(engine.open, state=state),
            f"the open on {label} after {LATER_COMMITS:,} single commits{' and a checkpoint' * (state == 'compacted')}",
        )
        for state in ("later", "compacted")
        for label, engine in engines.items()
    ]
    setup.cases.append(Case("from_dict", "plain", ops, from_dict, "Memory.from_dict(mem.to_dict())"))
    cases = suite.run_size(setup, rounds, warmup=warmup, progress=progress)
    base = cases["from_dict"]["median_ns"]
    ratios = {state: {label: cases[f"{state}.{label}"]["median_ns"] / base for label in engines} for state in STATES}
    return {
        "n": n,
        "ops": ops,
        "later_commits": LATER_COMMITS,
        "stored_s": stored_s,
        "cases": cases,
        "ratios": ratios.pop("open"),
        **ratios,
    }


# -- driving ------------------------------------------------------------------------------


def run_engines_bench(
    engines: Iterable[str] = ENGINES,
    *,
    sections: Iterable[str] = SECTIONS,
    rounds: int = 3,
    quick: bool = False,
    commit_size: int = 1000,
    ops: int | None = None,
    writers: Sequence[int] = sb.WRITERS,
    writer_size: int = 1000,
    writer_updates: int | None = None,
    catchup_commits: int | None = None,
    gap_ms: float = 3.0,
    follow: Sequence[str] = FOLLOW,
    open_size: int | None = None,
    directory: str | None = None,
    warmup: bool = True,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Start the engines, run the chosen sections, stop them; returns the JSON-ready result."""
    say = progress or (lambda msg: None)
    labels, sections = list(engines), set(sections)
    ops = ops if ops is not None else (50 if quick else 200)
    writer_updates = writer_updates if writer_updates is not None else (100 if quick else 1000)
    catchup_commits = catchup_commits if catchup_commits is not None else (50 if quick else 300)
    open_size = open_size if open_size is not None else (10_000 if quick else 100_000)
    result: dict[str, Any] = {
        "meta": {
            **suite.machine_info(),
            "rounds": rounds,
            "warmup": warmup,
            "gc": "enabled",
            "decay": sb.DECAY,
            "started": datetime.now().astimezone().isoformat(timespec="seconds"),
            "loadavg_before": list(os.getloadavg()),
        },
        "engines": {},
        "commit": None,
        "writers": None,
        "catchup": None,
        "open": None,
        "notes": [],
    }
    notes: list[str] = result["notes"]
    if "wait" not in FOLLOW:
        notes.append("this lethe's Shared has no wait(): the follower polls current()")
    result["meta"]["versions"].update({d: suite._version(d) for d in ("psycopg", "redis")})  # the clients
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lethe-engines-bench-", dir=directory) as tmp:
        workdir = Path(tmp)
        result["meta"].update(directory=str(workdir.parent), filesystem=sb.filesystem_of(tmp))
        say(f"starting {', '.join(labels)}")
        with started(labels, workdir, directory, notes) as running:
            result["engines"] = {label: e.info for label, e in running.items()}
            if "commit" in sections:
                say(f"commit: n={commit_size}, {ops} commits per sample")
                result["commit"] = run_commit(running, commit_size, rounds, ops, warmup, say)
            if "writers" in sections and writers:
                say(f"writers {list(writers)}: {writer_updates} commits each into {writer_size} entries")
                result["writers"] = run_writers(running, writer_size, writers, writer_updates, rounds, say)
            if "catchup" in sections and follow:
                say(f"catchup: {catchup_commits} commits, {gap_ms} ms apart, followers by {', '.join(follow)}")
                result["catchup"] = run_catchup(
                    running, writer_size, catchup_commits, gap_ms / 1e3, follow, rounds, say
                )
            if "open" in sections:
                say(f"open: n={open_size}")
                result["open"] = run_open(running, open_size, rounds, warmup, say)
                gc.collect()
    result["meta"]["loadavg_after"] = list(os.getloadavg())
    result["meta"]["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    return result


# -- report ---------------------------------------------------------------------------------

fmt_ns = run.fmt_ns
table = run.table


def fmt_us(us: float) -> str:
    return ("-" if us < 0 else "") + fmt_ns(abs(us) * 1e3)


def spread(s: dict[str, Any], fmt: Callable[[float], str]) -> str:
    """A summary as ``median (min to max)``."""
    return f"{fmt(s['median'])} ({fmt(s['min'])} to {fmt(s['max'])})"


def engines_table(result: dict[str, Any]) -> str:
    rows = []
    for label, info in result["engines"].items():
        settings = ", ".join(f"{k}={v}" for k, v in info.items() if k != "server")
        rows.append([label, info["server"], settings])
    return table(["engine", "server", "settings"], rows)


def commit_table(c: dict[str, Any]) -> str:
    rows = [["plain `Memory.put`", spread_ns(c["cases"]["plain.put"]), "—", "—", "—"]]
    for label, o in c["overhead"].items():
        overhead = f"{fmt_ns(o['overhead_ns'])} ({fmt_ns(o['overhead_min_ns'])} to {fmt_ns(o['overhead_max_ns'])})"
        floor = c.get("floor", {}).get(label)
        raw = c["cases"].get(f"raw.write.{label}")
        rows.append(
            [
                label,
                spread_ns(c["cases"][f"shared.put.{label}"]),
                overhead,
                "—" if raw is None else spread_ns(raw),
                "—" if floor is None else f"{floor['ratio']:.2f}x",
            ]
        )
    headers = [
        "one writer",
        "per commit: median (min to max)",
        "overhead over plain (paired min to max)",
        "the same bytes written raw",
        "commit / raw",
    ]
    return table(headers, rows)


def spread_ns(case: dict[str, Any]) -> str:
    return f"{fmt_ns(case['median_ns'])} ({fmt_ns(case['min_ns'])} to {fmt_ns(case['max_ns'])})"


def writers_table(w: dict[str, Any]) -> str:
    counts = list(next(iter(w.values()))["by_writers"]) if w else []
    rows = []
    for label, at in w.items():
        by = at["by_writers"]
        cells = [spread(by[k]["commits_per_s"], sb.fmt_rate) for k in counts]
        attempts = " / ".join(f"{by[k]['attempts_per_commit']['median']:.2f}" for k in counts)
        ok = all(by[k]["version_ok"] for k in counts)
        scaling = (
            "-"
            if "1" not in by
            else f"{by[counts[-1]]['commits_per_s']['median'] / by['1']['commits_per_s']['median']:.2f}x"
        )
        rows.append([label, *cells, scaling, attempts, "ok" if ok else "LOST"])
    headers = [f"{k} writer{'s' if k != '1' else ''}: commits/s" for k in counts]
    most = f"{counts[-1] if counts else '?'} / 1 writer"
    return table(["engine", *headers, most, "attempts per commit", "final version = commits"], rows)


def catchup_table(c: dict[str, Any]) -> str:
    rows = []
    for label, by_method in c["by_engine"].items():
        for method, s in by_method.items():
            rows.append(
                [
                    label,
                    method,
                    spread(s["p50_us"], fmt_us),
                    spread(s["p99_us"], fmt_us),
                    f"{fmt_us(s['from_call_p50_us']['median'])} / {fmt_us(s['from_call_p99_us']['median'])}",
                    "ok" if s["version_ok"] else f"MISSED: {s['final_versions']}",
                ]
            )
    headers = ["engine", "follower", "p50", "p99", "p50 / p99 from the append's call", "every version seen"]
    return table(headers, rows)


def open_table(o: dict[str, Any]) -> str:
    rows = [
        [f"`{state}.{label}`", spread_ns(o["cases"][f"{state}.{label}"]), run.fmt_ratio(r)]
        for state in STATES
        for label, r in o.get("ratios" if state == "open" else state, {}).items()
    ]
    rows.append(["`from_dict`", spread_ns(o["cases"]["from_dict"]), "1x"])
    return table([f"n={o['n']:,}", "median (min to max)", "/ from_dict"], rows)


def report(result: dict[str, Any]) -> str:
    meta = result["meta"]
    load = " / ".join(f"{x:.2f}" for x in meta["loadavg_before"][:1] + meta.get("loadavg_after", [])[:1])
    parts = [
        f"Python {meta['python']} ({meta['implementation']}) on {meta['platform']}, {meta['cpu_count']} CPUs; "
        f"{meta['rounds']} rounds, GC {meta['gc']}; stores in {meta.get('directory')} "
        f"({meta.get('filesystem') or 'file system unknown'}); load average before / after {load}; "
        f"elapsed {meta.get('elapsed_s', '?')} s",
        "",
        engines_table(result),
    ]
    if result["commit"]:
        c = result["commit"]
        parts += ["", f"One writer, n={c['n']:,} at capacity, {c['ops']} commits per sample:", "", commit_table(c)]
    if result["writers"]:
        any_w = next(iter(result["writers"].values()))
        parts += [
            "",
            f"Writer processes (spawn), {any_w['updates_per_writer']:,} puts each into {any_w['size']:,} entries:",
            "",
            writers_table(result["writers"]),
        ]
    if result["catchup"]:
        c = result["catchup"]
        parts += [
            "",
            f"Catch-up of a follower's replica, {c['commits']} commits {c['gap_ms']:g} ms apart "
            f"(visible - committed; median over rounds of each round's percentile, min to max):",
            "",
            catchup_table(c),
        ]
    if result["open"]:
        parts += ["", "Cold open (a new store object, Shared(...).current()):", "", open_table(result["open"])]
    if result["notes"]:
        parts += ["", "Notes:"] + [f"- {note}" for note in result["notes"]]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"any of {','.join(ENGINES)} (default: all)")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"any of {','.join(SECTIONS)}")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 3; 1 with --quick)")
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 round, fewer commits")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the full result as JSON")
    parser.add_argument("--commit-size", type=int, default=1000, help="entries for the commit section (1000)")
    parser.add_argument("--ops", type=int, default=None, help="commits per commit sample (default 200; 50 quick)")
    parser.add_argument("--writers", default="1,2,4", help="writer process counts (default 1,2,4)")
    parser.add_argument("--writer-size", type=int, default=1000, help="entries of the writers' memory (1000)")
    parser.add_argument("--writer-updates", type=int, default=None, help="commits per writer (1000; 100 quick)")
    parser.add_argument("--catchup-commits", type=int, default=None, help="paced commits (default 300; 50 quick)")
    parser.add_argument("--gap-ms", type=float, default=3.0, help="idle gap before each paced commit (default 3)")
    parser.add_argument("--follow", default=",".join(FOLLOW), help="how the follower follows: wait,poll")
    parser.add_argument("--open-size", type=int, default=None, help="entries to open (default 100000; 10000 quick)")
    parser.add_argument("--dir", default=None, help="where the stores and servers go (default: the system's temp dir)")
    args = parser.parse_args(argv)

    def listed(text: str, known: Sequence[str], what: str) -> list[str]:
        items = [s.strip() for s in text.split(",") if s.strip()]
        unknown = set(items) - set(known)
        if unknown:
            parser.error(f"unknown {what}: {', '.join(sorted(unknown))} (known: {', '.join(known)})")
        return items

    def progress(msg: str) -> None:
        print(f"[engines-bench] {msg}", file=sys.stderr, flush=True)

    result = run_engines_bench(
        listed(args.engines, ENGINES, "engines"),
        sections=listed(args.sections, SECTIONS, "sections"),
        rounds=args.rounds if args.rounds is not None else (1 if args.quick else 3),
        quick=args.quick,
        commit_size=args.commit_size,
        ops=args.ops,
        writers=[int(w) for w in args.writers.split(",") if w.strip()],
        writer_size=args.writer_size,
        writer_updates=args.writer_updates,
        catchup_commits=args.catchup_commits,
        gap_ms=args.gap_ms,
        follow=listed(args.follow, FOLLOW, "follow methods"),
        open_size=args.open_size,
        directory=args.dir,
        progress=progress,
    )
    result["meta"]["git"] = run.git_state()
    print(report(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
        progress(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
