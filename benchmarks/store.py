"""Benchmark ``lethe.store``: the cost of a commit, of durability, of several writers, of opening.

Usage (from the repository root)::

    python benchmarks/store.py                             # 1k, 10k, 100k; 5 rounds (a few minutes)
    python benchmarks/store.py --sizes 1000,10000 --rounds 3
    python benchmarks/store.py --quick                     # 1k, 10k; 2 rounds; fewer ops
    python benchmarks/store.py --json benchmarks/store.json
    python benchmarks/store.py --disk --updates 1000000    # also: file size after many commits (minutes)

Sections (each on a fresh ``SQLiteStore`` in a temporary directory, ``--dir``
to choose where; only the public API of ``lethe.store`` is used):

1. **commit**: per-op time of ``shared.update(lambda m: m.put(...))`` (a new
   key into a memory at capacity, so each put evicts one and the size stays n)
   and of ``shared.transact(lambda m: m.get(k))`` (a rehearsal), against the
   same operation chained on a plain ``Memory`` of the same entries,
   interleaved in the same rounds; the overhead is the difference of the
   medians.  ``shared.put.durable`` is the put on ``SQLiteStore(path, durable=True)``;
   ``shared.fold`` is another writer's commit of the same put folded into a
   replica by ``current()`` (per commit; against ``shared.put``, making one).
2. **writers**: 1, 2 and 4 processes (``multiprocessing`` spawn) commit K puts
   each into one memory at capacity, from a barrier to the last commit; the
   final version must equal the number of commits.
3. **open**: ``Shared(SQLiteStore(path), name, empty_template).current()`` in a
   fresh store object, against ``Memory.from_dict`` of the same memory's
   ``to_dict()`` (and of its JSON text); ``open.tail`` opens a memory that took
   n/2 commits after its last checkpoint (it should cost the same: opening
   reads the current entries and replays no log).
4. **disk** (``--disk``): a 1,000-entry memory at capacity after U commits: the
   database file (and its -wal file) against one JSON snapshot of the memory.

Medians and min-max over rounds, GC on, fake clock, as ``run.py``; see
docs/performance.md.  ``engines.py`` runs the writers, a commit and the cold
open on every engine (SQLite, Redis, PostgreSQL) in one run, with the helpers here.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import run
import suite
from suite import STEP, VALUE, Case, SizeSetup, build_memory, fake_clock, half_life_for, keys_for

from lethe import Entry, ManualClock, Memory
from lethe.store import Shared, SQLiteStore, Store

DECAY = "exponential"
NAME = "bench"
WRITERS = (1, 2, 4)

_now_ns = time.perf_counter_ns

# -- helpers ------------------------------------------------------------------


def _put(m: Memory[Any, Any], k: str) -> Memory[Any, Any]:
    """The operation committed: a new key (``partial(_put, k=key)``, as ``lambda m: m.put(VALUE, key=key)``)."""
    return m.put(VALUE, key=k)


def _get(m: Memory[Any, Any], k: str) -> tuple[Memory[Any, Any], Entry[Any, Any]]:
    """A rehearsal: ``partial(_get, k=key)`` for ``transact``."""
    return m.get(k)


def _create(path: Path, mem: Memory[Any, Any], *, durable: bool = False) -> tuple[SQLiteStore, Shared[Any, Any]]:
    """A new store at ``path`` holding ``mem`` (its first open writes the initial checkpoint)."""
    store = SQLiteStore(path, durable=durable)
    return store, Shared(store, NAME, mem)


def _template(n: int, clock: ManualClock) -> Memory[Any, Any]:
    """An empty memory with the configuration the benchmark stores: what a process opening it passes."""
    return Memory(max_entries=n, decay_fn=DECAY, half_life=half_life_for(n), clock_fn=clock)


def _later_clock() -> ManualClock:
    """A clock ahead of every reading a benchmark memory was built or updated with."""
    return ManualClock(suite.START + timedelta(days=3650), step=STEP)


def file_sizes(path: Path) -> dict[str, int]:
    """The database file, its write-ahead log and shared-memory index, in bytes (0 when absent)."""
    out = {}
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(path) + suffix)
        out["db" + suffix.replace("-", "_")] = p.stat().st_size if p.exists() else 0
    return out


def filesystem_of(path: str) -> str | None:
    """The file system type holding ``path`` (Linux /proc/mounts; None elsewhere)."""
    try:
        with open("/proc/mounts", encoding="utf-8") as f:
            mounts = [line.split()[1:3] for line in f if len(line.split()) >= 3]
    except OSError:
        return None
    real = os.path.realpath(path)
    best: tuple[int, str] | None = None
    for point, kind in mounts:
        if (real == point or real.startswith(point.rstrip("/") + "/")) and (best is None or len(point) > best[0]):
            best = (len(point), kind)
    return None if best is None else best[1]


def summary(samples: Sequence[float]) -> dict[str, Any]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "samples": list(samples)}


# -- 1 and 2: the cost of a commit ---------------------------------------------


def put_sampler(sh: Shared[Any, Any], count: int, prefix: str) -> Callable[[], int]:
    """A sample of ``count`` commits ``sh.update(put of a new key)``, fresh keys every call; returns ns."""
    made = [0]

    def run_() -> int:
        start = made[0]
        made[0] = start + count
        batch = [f"{prefix}{i}" for i in range(start, start + count)]  # fresh keys every sample
        update = sh.update
        t0 = _now_ns()
        for k in batch:
            update(partial(_put, k=k))
        return _now_ns() - t0

    return run_


def commit_setup(n: int, workdir: Path, ops: int, durable_ops: int, rng: random.Random) -> tuple[SizeSetup, list[Any]]:
    """The interleaved cases of one size: plain put/get against the same on a Shared memory."""
    keys = keys_for(n)
    clock = fake_clock()
    base = build_memory(n, DECAY, clock, n, keys)  # at capacity: each new key evicts one
    built_at = clock.now
    new_keys = keys_for(ops, "new")
    sample = [keys[rng.randrange(n)] for _ in range(ops)]

    def plain_put() -> int:
        clock.set(built_at)
        m = base
        t0 = _now_ns()
        for k in new_keys:
            m = m.put(VALUE, key=k)
        return _now_ns() - t0

    def plain_get() -> int:
        clock.set(built_at)
        m = base
        t0 = _now_ns()
        for k in sample:
            m, _e = m.get(k)
        return _now_ns() - t0

    opened: list[Any] = []

    def shared(label: str, durable: bool = False) -> Shared[Any, Any]:
        # Its own clock, never rewound: a shared memory moves on from sample to sample.
        clock_s = ManualClock(built_at, step=STEP)
        path = workdir / f"commit-{n}-{label}.db"
        store, _sh = _create(path, base.configure(clock_fn=clock_s))
        # Closed and opened again, as a running process finds it: the first close folds the
        # initial snapshot's write-ahead log into the database, which would otherwise land in round 1.
        store.close()
        store = SQLiteStore(path, durable=durable)
        opened.append(store)
        return Shared(store, NAME, _template(n, clock_s))

    def shared_get(sh: Shared[Any, Any]) -> Callable[[], int]:
        def run_() -> int:
            transact = sh.transact
            t0 = _now_ns()
            for k in sample:
                transact(partial(_get, k=k))
            return _now_ns() - t0

        return run_

    def shared_fold() -> Callable[[], int]:
        # Another writer's commits folded into a replica: the writer commits (untimed), then the
        # follower's current() reads and applies them.  Fewer than a checkpoint interval (256) a
        # sample, so the follower folds the log and never reloads the current entries.
        writer = shared("fold")
        store = SQLiteStore(workdir / f"commit-{n}-fold.db")
        opened.append(store)
        follower = Shared(store, NAME, _template(n, ManualClock(built_at, step=STEP)), max_clock_skew=None)
        made = [0]

        def run_() -> int:
            start = made[0]
            made[0] = start + fold_ops
            for i in range(start, start + fold_ops):
                writer.update(partial(_put, k=f"f{i}"))
            t0 = _now_ns()
            follower.current()
            return _now_ns() - t0

        return run_

    fold_ops = min(ops, 200)
    setup = SizeSetup(n)
    setup.cases = [
        Case("plain.put", "plain", ops, plain_put, "Memory.put of a new key at capacity (chained)"),
        Case("shared.put", "shared", ops, put_sampler(shared("put"), ops, "s"), "update(put), default store"),
        Case(
            "shared.put.durable",
            "shared",
            durable_ops,
            put_sampler(shared("put-durable", durable=True), durable_ops, "d"),
            "update(put), SQLiteStore(durable=True)",
        ),
        Case("plain.get", "plain", ops, plain_get, "Memory.get of a present key (chained)"),
        Case("shared.get", "shared", ops, shared_get(shared("get")), "transact(get), default store"),
        Case("shared.fold", "shared", fold_ops, shared_fold(), "another writer's update(put) folded by current()"),
    ]
    return setup, opened


def overheads(cases: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Shared against plain (and durable against default), same run: differences and ratios of medians."""
    out = {}
    for label, shared, plain in (
        ("put", "shared.put", "plain.put"),
        ("get", "shared.get", "plain.get"),
        ("put.durable", "shared.put.durable", "plain.put"),
        ("durable vs default", "shared.put.durable", "shared.put"),
        ("fold vs commit", "shared.fold", "shared.put"),
    ):
        out[label] = overhead(cases, shared, plain)
    return out


def overhead(cases: dict[str, Any], numerator: str, denominator: str) -> dict[str, Any]:
    """Case ``numerator`` against ``denominator`` of the same run: difference and ratio of the medians."""
    a, b = cases[numerator], cases[denominator]
    paired = [x - y for x, y in zip(a["samples_ns"], b["samples_ns"])]  # same round
    return {
        "numerator": numerator,
        "denominator": denominator,
        "numerator_ns": a["median_ns"],
        "denominator_ns": b["median_ns"],
        "overhead_ns": a["median_ns"] - b["median_ns"],
        "overhead_min_ns": min(paired),
        "overhead_max_ns": max(paired),
        "ratio": a["median_ns"] / b["median_ns"],
    }


def run_commit(
    n: int, workdir: Path, rounds: int, ops: int, durable_ops: int, warmup: bool, progress: Callable[[str], None]
) -> dict[str, Any]:
    setup, opened = commit_setup(n, workdir, ops, durable_ops, random.Random(n))
    try:
        cases = suite.run_size(setup, rounds, warmup=warmup, progress=progress)
        sizes = {p.name: file_sizes(p) for p in sorted(workdir.glob(f"commit-{n}-*.db"))}
    finally:
        for store in opened:
            store.close()
    return {
        "ops": {"default": ops, "durable": durable_ops},
        "cases": cases,
        "overhead": overheads(cases),
        "files": sizes,
    }


# -- 3: several writer processes ---------------------------------------------------


def _writer(
    open_store: Callable[[], Store],
    name: str,
    size: int,
    w: int,
    count: int,
    start: datetime,
    barrier: Any,
    results: Any,
    locking: bool = True,
) -> None:
    """One writer process: open the memory, wait for the others, commit ``count`` puts, report."""
    clock = ManualClock(start, step=STEP)
    attempts = [0]
    store = open_store()
    try:
        # Each writer's fake clock steps at its own reads only, so the memory's latest reading (the
        # others') runs ahead of it by design: no ClockWarning for that.
        sh: Shared[Any, Any] = Shared(store, name, _template(size, clock), locking=locking, max_clock_skew=None)
        keys = [f"w{w}-{i}" for i in range(count)]

        def put(m: Memory[Any, Any], k: str) -> Memory[Any, Any]:
            attempts[0] += 1  # counts the attempts, retries included
            return m.put(VALUE, key=k)

        barrier.wait(timeout=300)
        t0 = time.perf_counter()
        for k in keys:
            sh.update(partial(put, k=k))
        elapsed = time.perf_counter() - t0
    finally:
        store.close()
    results.put({"writer": w, "elapsed_s": elapsed, "commits": count, "attempts": attempts[0]})


def writer_processes(
    open_store: Callable[[], Store],
    name: str,
    size: int,
    writers: int,
    count: int,
    start: datetime,
    locking: bool = True,
) -> dict[str, Any]:
    """``writers`` spawned processes, each ``open_store()`` (picklable: a ``functools.partial`` of an
    engine class) and ``count`` puts into the existing memory ``name``; wall time from the barrier
    to the last commit, and the final version read back.  ``locking``: the writers' ``Shared``
    take the engine's writer lock (False: they race optimistically)."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(writers + 1)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(open_store, name, size, w, count, start, barrier, results, locking))
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    try:
        barrier.wait(timeout=300)
        t0 = time.perf_counter()
        reports = [results.get(timeout=600) for _ in procs]
        wall = time.perf_counter() - t0
    finally:
        for p in procs:
            p.join(60)
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    if failed:
        raise RuntimeError(f"writer processes failed: exit codes {failed}")
    check = open_store()
    try:
        final = Shared(check, name, _template(size, _later_clock()))
        version, kept = final.version, len(final.current())
    finally:
        check.close()
    return trial_result(reports, wall, version, kept)


def trial_result(reports: list[dict[str, Any]], wall: float, version: int, kept: int | None) -> dict[str, Any]:
    """One writers trial from its writers' ``reports`` (``commits``, ``elapsed_s``, ``attempts``
    each), its wall time and the final version read back (and the entries kept, where read)."""
    total = sum(r["commits"] for r in reports)
    return {
        "wall_s": wall,
        "commits": total,
        "commits_per_s": total / wall,
        "per_writer_commits_per_s": [r["commits"] / r["elapsed_s"] for r in reports],
        "attempts_per_commit": sum(r["attempts"] for r in reports) / total,
        "final_version": version,
        "kept": kept,
        "version_ok": version == total,
    }


def writers_trial(
    workdir: Path, size: int, writers: int, count: int, trial: int, locking: bool = True
) -> dict[str, Any]:
    """One trial on a fresh SQLite file: ``writers`` spawned processes (see :func:`writer_processes`)."""
    path = workdir / f"writers-{writers}-{trial}-{'locked' if locking else 'optimistic'}.db"
    clock = fake_clock()
    store, _sh = _create(path, build_memory(size, DECAY, clock, size, keys_for(size)))
    store.close()
    return writer_processes(partial(SQLiteStore, str(path)), NAME, size, writers, count, clock.now, locking)


def writers_summary(trials: dict[int, list[dict[str, Any]]], size: int, count: int) -> dict[str, Any]:
    """The trials of each writer count (from :func:`writer_processes`): medians, min-max, checks."""
    out: dict[str, Any] = {"size": size, "updates_per_writer": count, "by_writers": {}}
    for w, runs in trials.items():
        out["by_writers"][str(w)] = {
            "writers": w,
            "commits": w * count,
            "wall_s": summary([t["wall_s"] for t in runs]),
            "commits_per_s": summary([t["commits_per_s"] for t in runs]),
            "per_writer_commits_per_s": summary([x for t in runs for x in t["per_writer_commits_per_s"]]),
            "attempts_per_commit": summary([t["attempts_per_commit"] for t in runs]),
            "final_versions": [t["final_version"] for t in runs],
            "version_ok": all(t["version_ok"] for t in runs),
        }
    return out


def run_writers(
    workdir: Path, size: int, writer_counts: Sequence[int], count: int, rounds: int, progress: Callable[[str], None]
) -> dict[str, Any]:
    """The writers with the engine's lock and without it (optimistic), interleaved round by round:
    ``{"locked": summary, "optimistic": summary}``."""
    modes = {"locked": True, "optimistic": False}
    trials: dict[str, dict[int, list[dict[str, Any]]]] = {m: {w: [] for w in writer_counts} for m in modes}
    order = [(m, w) for w in writer_counts for m in modes]
    for r in range(rounds):
        shift = r % len(order)
        for mode, w in order[shift:] + order[:shift]:
            trials[mode][w].append(writers_trial(workdir, size, w, count, r, modes[mode]))
        progress(f"writers: round {r + 1}/{rounds} done")
    return {mode: writers_summary(trials[mode], size, count) for mode in modes}


# -- 4: opening ----------------------------------------------------------------------


def open_setup(n: int, workdir: Path, ops: int, tail: int) -> SizeSetup:
    """Cold open of an n-entry memory (just checkpointed, and after ``tail`` commits) against from_dict."""
    clock = fake_clock()
    mem = build_memory(n, DECAY, clock, n, keys_for(n))
    fresh, tailed = workdir / f"open-{n}.db", workdir / f"open-{n}-tail.db"
    store, _sh = _create(fresh, mem)
    store.close()
    store, sh = _create(tailed, mem.configure(clock_fn=ManualClock(clock.now, step=STEP)))
    for i in range(tail):
        sh.update(partial(_put, k=f"t{i}"))
    store.close()
    del sh
    # The kernel writes the builder's tens of megabytes back to disk for a while after; a read
    # of a page under writeback waits for it. Flushed now, the opens measure opening.
    os.sync()
    reader = _template(n, _later_clock())
    data = mem.to_dict()
    text = json.dumps(data)

    def opener(path: Path, version: int) -> Callable[[], int]:
        def run_() -> int:
            elapsed = 0
            for _ in range(ops):
                t0 = _now_ns()
                store = SQLiteStore(path)
                got = Shared(store, NAME, reader)
                m = got.current()
                elapsed += _now_ns() - t0
                store.close()
                if len(m) != n or got.version != version:
                    raise AssertionError(f"opened {len(m)} entries at version {got.version}")
                del got, m  # freed outside the timed region
            return elapsed

        return run_

    def timed(fn: Callable[[], object]) -> Callable[[], int]:
        def run_() -> int:
            elapsed = 0
            for _ in range(ops):
                t0 = _now_ns()
                out = fn()
                elapsed += _now_ns() - t0
                del out
            return elapsed

        return run_

    later = _later_clock()
    setup = SizeSetup(n)
    setup.cases = [
        Case("open", "store", ops, opener(fresh, 0), "SQLiteStore(path) + Shared(...) + current(), just checkpointed"),
        Case("open.tail", "store", ops, opener(tailed, tail), f"the same after {tail} commits since the checkpoint"),
        Case("from_dict", "plain", ops, timed(lambda: Memory.from_dict(data, clock_fn=later)), "Memory.from_dict(d)"),
        Case(
            "json+from_dict",
            "plain",
            ops,
            timed(lambda: Memory.from_dict(json.loads(text), clock_fn=later)),
            "Memory.from_dict(json.loads(text))",
        ),
        Case("to_dict+json", "plain", ops, timed(lambda: json.dumps(mem.to_dict())), "json.dumps(mem.to_dict())"),
    ]
    return setup


def open_ratios(cases: dict[str, Any]) -> dict[str, float]:
    med = {name: c["median_ns"] for name, c in cases.items()}
    return {
        "open / from_dict": med["open"] / med["from_dict"],
        "open / json+from_dict": med["open"] / med["json+from_dict"],
        "open.tail / from_dict": med["open.tail"] / med["from_dict"],
        "open.tail / open": med["open.tail"] / med["open"],
    }


def run_open(
    n: int, workdir: Path, rounds: int, warmup: bool, tail: int, progress: Callable[[str], None]
) -> dict[str, Any]:
    ops = max(1, min(20, 20_000 // n))  # opens per sample: 20 up to 1k, 2 at 10k, 1 at 100k
    setup = open_setup(n, workdir, ops, tail)
    cases = suite.run_size(setup, rounds, warmup=warmup, progress=progress)
    return {
        "ops": ops,
        "tail_commits": tail,
        "cases": cases,
        "ratios": open_ratios(cases),
        "files": {"open": file_sizes(workdir / f"open-{n}.db"), "open.tail": file_sizes(workdir / f"open-{n}-tail.db")},
    }


# -- 5: disk use -----------------------------------------------------------------------


def run_disk(workdir: Path, size: int, updates: int, progress: Callable[[str], None]) -> dict[str, Any]:
    """``updates`` commits of new keys into a memory at capacity; file sizes along the way."""
    path = workdir / "disk.db"
    clock = fake_clock()
    base = build_memory(size, DECAY, clock, size, keys_for(size))
    store, sh = _create(path, base.configure(clock_fn=ManualClock(clock.now, step=STEP)))
    marks = sorted({max(1, updates * i // 10) for i in range(1, 11)} | {updates})
    trace = []
    t0 = time.perf_counter()
    done = 0
    try:
        for mark in marks:
            for i in range(done, mark):
                sh.update(partial(_put, k=f"u{i}"))
            done = mark
            trace.append({"commits": done, "elapsed_s": time.perf_counter() - t0, **file_sizes(path)})
            progress(f"disk: {done:,} of {updates:,} commits")
        elapsed = time.perf_counter() - t0
        mem = sh.current()
        open_sizes = file_sizes(path)
    finally:
        store.close()
    snapshot = len(json.dumps(mem.to_dict()).encode())
    closed = file_sizes(path)
    return {
        "size": size,
        "updates": updates,
        "elapsed_s": elapsed,
        "commits_per_s": updates / elapsed if elapsed else None,
        "final_version": sh.version,
        "snapshot_bytes": snapshot,
        "open_bytes": open_sizes,
        "closed_bytes": closed,
        "db_and_wal_vs_snapshot": (open_sizes["db"] + open_sizes["db_wal"]) / snapshot,
        "trace": trace,
    }


# -- driving ------------------------------------------------------------------------------

# (label, section, n, metric, op, target): metric is read from the result by targets().
TARGETS: list[tuple[str, str, int, str, str, float]] = [
    ("commit overhead of update(put), µs", "commit", 100_000, "put", "<=", 100.0),
    ("cold open vs from_dict", "open", 100_000, "open / from_dict", "<=", 1.0),
]


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for label, section, n, metric, op, target in TARGETS:
        at = result.get(section, {}).get(str(n))
        value = None
        if at is not None and section == "commit":
            value = at["overhead"][metric]["overhead_ns"] / 1e3
        elif at is not None:
            value = at["ratios"][metric]
        met = None if value is None else (value <= target if op == "<=" else value >= target)
        rows.append({"label": label, "n": n, "metric": metric, "op": op, "target": target, "value": value, "met": met})
    return rows


def run_store_bench(
    sizes: Iterable[int],
    *,
    rounds: int = 5,
    quick: bool = False,
    sections: Iterable[str] = ("commit", "writers", "open"),
    ops: int | None = None,
    durable_ops: int | None = None,
    writers: Sequence[int] = WRITERS,
    writer_size: int = 1000,
    writer_updates: int | None = None,
    tail_fraction: float = 0.5,
    disk_updates: int | None = None,
    disk_size: int = 1000,
    directory: str | None = None,
    warmup: bool = True,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the chosen sections (``disk`` only when ``disk_updates`` is given); returns the JSON-ready result."""
    say = progress or (lambda msg: None)
    sizes = list(sizes)
    sections = set(sections)
    ops = ops if ops is not None else (100 if quick else 500)
    durable_ops = durable_ops if durable_ops is not None else max(1, ops // 5)
    writer_updates = writer_updates if writer_updates is not None else (200 if quick else 1000)
    result: dict[str, Any] = {
        "meta": {
            **suite.machine_info(),
            "rounds": rounds,
            "warmup": warmup,
            "gc": "enabled",
            "timer": "time.perf_counter_ns",
            "decay": DECAY,
            "started": datetime.now().astimezone().isoformat(timespec="seconds"),
        },
        "commit": {},
        "writers": None,
        "open": {},
        "disk": None,
        "notes": [],
    }
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lethe-store-bench-", dir=directory) as tmp:
        workdir = Path(tmp)
        fs = filesystem_of(tmp)
        result["meta"].update(directory=str(Path(tmp).parent), filesystem=fs)
        if fs in {"tmpfs", "ramfs"}:
            result["notes"].append(f"the store is on {fs}: fsync costs nothing there, durable=True is not measured")
        for n in sizes:
            if "commit" in sections:
                say(f"commit n={n}: building ({ops} ops/sample, {durable_ops} durable)")
                result["commit"][str(n)] = run_commit(n, workdir, rounds, ops, durable_ops, warmup, say)
                gc.collect()
            if "open" in sections:
                tail = int(n * tail_fraction)
                say(f"open n={n}: building (and {tail} commits for the tail)")
                result["open"][str(n)] = run_open(n, workdir, rounds, warmup, tail, say)
                gc.collect()
        if "writers" in sections and writers:
            say(f"writers {list(writers)}: {writer_updates} commits each into {writer_size} entries")
            result["writers"] = run_writers(workdir, writer_size, writers, writer_updates, rounds, say)
        if disk_updates:
            say(f"disk: {disk_updates:,} commits into {disk_size} entries")
            result["disk"] = run_disk(workdir, disk_size, disk_updates, say)
    result["meta"]["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    result["targets"] = targets(result)
    return result


# -- report ---------------------------------------------------------------------------------

fmt_ns = run.fmt_ns
table = run.table


def fmt_rate(x: float) -> str:
    return f"{x:,.0f}/s"


def fmt_bytes(b: float) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:,.1f} {unit}"
    return f"{b:,.0f} B"


def cases_table(section: dict[str, Any], title: str) -> str:
    sizes = list(section)
    names = list(dict.fromkeys(name for n in sizes for name in section[n]["cases"]))
    rows = []
    for name in names:
        cells = []
        for n in sizes:
            c = section[n]["cases"].get(name)
            cells.append(
                "—" if c is None else f"{fmt_ns(c['median_ns'])} ({fmt_ns(c['min_ns'])} to {fmt_ns(c['max_ns'])})"
            )
        rows.append([f"`{name}`", *cells])
    return table([title] + [f"n={int(n):,}" for n in sizes], rows)


def overhead_table(commit: dict[str, Any]) -> str:
    rows = []
    for n, at in commit.items():
        for label, o in at["overhead"].items():
            rows.append(
                [
                    label,
                    f"{int(n):,}",
                    f"`{o['numerator']}` - `{o['denominator']}`",
                    f"{fmt_ns(o['overhead_ns'])} ({fmt_ns(o['overhead_min_ns'])} to {fmt_ns(o['overhead_max_ns'])})",
                    run.fmt_ratio(o["ratio"]),
                ]
            )
    return table(["per commit (same run)", "n", "measured", "difference of medians (paired min to max)", "ratio"], rows)


def writers_table(w: dict[str, Any]) -> str:
    rows = []
    for k, r in w["by_writers"].items():
        c, p = r["commits_per_s"], r["per_writer_commits_per_s"]
        rows.append(
            [
                k,
                f"{r['commits']:,}",
                f"{r['wall_s']['median']:.3f} s",
                f"{fmt_rate(c['median'])} ({fmt_rate(c['min'])} to {fmt_rate(c['max'])})",
                f"{fmt_rate(p['median'])} ({fmt_rate(p['min'])} to {fmt_rate(p['max'])})",
                f"{r['attempts_per_commit']['median']:.2f}",
                "ok" if r["version_ok"] else f"LOST: {r['final_versions']}",
            ]
        )
    return table(
        [
            "writers",
            "commits",
            "wall (median)",
            "commits/s, all (min to max)",
            "commits/s, each writer (min to max)",
            "attempts per commit",
            "final version = commits",
        ],
        rows,
    )


def open_ratio_table(opened: dict[str, Any]) -> str:
    names = list(dict.fromkeys(k for at in opened.values() for k in at["ratios"]))
    rows = [[name] + [run.fmt_ratio(at["ratios"].get(name)) for at in opened.values()] for name in names]
    return table(["same run, medians"] + [f"n={int(n):,}" for n in opened], rows)


def targets_table(rows: list[dict[str, Any]]) -> str:
    out = []
    for r in rows:
        value = (
            "n/a" if r["value"] is None else (f"{r['value']:.1f}" if "µs" in r["label"] else run.fmt_ratio(r["value"]))
        )
        verdict = {True: "met", False: "NOT met", None: "not measured"}[r["met"]]
        out.append([r["label"], f"{r['n']:,}", value, f"{r['op']} {r['target']:g}", verdict])
    return table(["target", "n", "value", "target", "status"], out)


def disk_table(d: dict[str, Any]) -> str:
    rows = [
        [
            f"{t['commits']:,}",
            f"{t['elapsed_s']:.1f} s",
            fmt_bytes(t["db"]),
            fmt_bytes(t["db_wal"]),
            f"{(t['db'] + t['db_wal']) / d['snapshot_bytes']:.1f}x",
        ]
        for t in d["trace"]
    ]
    return table(["commits", "elapsed", "database", "-wal", "(database + -wal) / snapshot"], rows)


def report(result: dict[str, Any]) -> str:
    meta = result["meta"]
    parts = [
        f"Python {meta['python']} ({meta['implementation']}) on {meta['platform']}, {meta['cpu_count']} CPUs; "
        f"{meta['rounds']} rounds, GC {meta['gc']}, {meta['timer']}; store in {meta.get('directory')} "
        f"({meta.get('filesystem') or 'file system unknown'}); elapsed {meta.get('elapsed_s', '?')} s",
    ]
    if result["commit"]:
        parts += ["", cases_table(result["commit"], "per commit: median (min to max)"), ""]
        parts += [overhead_table(result["commit"])]
    if result["writers"]:
        for mode, w in result["writers"].items():
            how = "with the writer lock" if mode == "locked" else "optimistic (locking=False)"
            head = f"Writer processes (spawn), {how}, {w['updates_per_writer']:,} puts each into {w['size']:,} entries:"
            parts += ["", head, "", writers_table(w)]
    if result["open"]:
        parts += ["", cases_table(result["open"], "open / load: median (min to max)"), ""]
        parts += [open_ratio_table(result["open"])]
    if result["disk"]:
        d = result["disk"]
        parts += [
            "",
            f"Disk: {d['updates']:,} commits into {d['size']:,} entries at capacity in {d['elapsed_s']:.1f} s "
            f"({fmt_rate(d['commits_per_s'])}); one JSON snapshot is {fmt_bytes(d['snapshot_bytes'])}; "
            f"after close the database is {fmt_bytes(d['closed_bytes']['db'])} "
            f"(-wal {fmt_bytes(d['closed_bytes']['db_wal'])})",
            "",
            disk_table(d),
        ]
    parts += ["", targets_table(result["targets"])]
    if result["notes"]:
        parts += ["", "Notes:"] + [f"- {note}" for note in result["notes"]]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=None, help="comma-separated sizes (default 1000,10000,100000)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 5; 2 with --quick)")
    parser.add_argument("--quick", action="store_true", help="1k and 10k, 2 rounds, fewer ops per sample")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the full result as JSON")
    parser.add_argument("--sections", default="commit,writers,open", help="any of commit,writers,open")
    parser.add_argument("--ops", type=int, default=None, help="commits per sample (default 500; 100 with --quick)")
    parser.add_argument("--writers", default="1,2,4", help="writer process counts (default 1,2,4)")
    parser.add_argument("--writer-size", type=int, default=1000, help="entries of the writers' memory (default 1000)")
    parser.add_argument("--writer-updates", type=int, default=None, help="commits per writer (default 1000; 200 quick)")
    parser.add_argument("--disk", action="store_true", help="also measure the file size after --updates commits")
    parser.add_argument("--updates", type=int, default=1_000_000, help="commits for --disk (default 1,000,000)")
    parser.add_argument("--dir", default=None, help="where the temporary stores go (default: the system's temp dir)")
    args = parser.parse_args(argv)
    default_sizes = "1000,10000" if args.quick else "1000,10000,100000"
    sizes = [int(s) for s in (args.sizes or default_sizes).split(",") if s.strip()]
    rounds = args.rounds if args.rounds is not None else (2 if args.quick else 5)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = set(sections) - {"commit", "writers", "open"}
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")

    def progress(msg: str) -> None:
        print(f"[store-bench] {msg}", file=sys.stderr, flush=True)

    result = run_store_bench(
        sizes,
        rounds=rounds,
        quick=args.quick,
        sections=sections,
        ops=args.ops,
        writers=[int(w) for w in args.writers.split(",") if w.strip()],
        writer_size=args.writer_size,
        writer_updates=args.writer_updates,
        disk_updates=args.updates if args.disk else None,
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
