"""Measure lethe from 1,000 to 1,000,000 entries, with the agent-memory peers beside it, and how each cost grows.

Usage (from the repository root)::

    pip install -e '.[bench]'
    python benchmarks/scale.py --json benchmarks/scale.json --plot docs/images/bench_scale.png \\
        --lethe-agent-path /tmp/peers-lethe-agent         # 1k to 1M; ~15 min here
    python benchmarks/scale.py --sizes 1000,10000 --no-peers    # lethe alone, quickly

**lethe** is measured at each size in a process of its own (so that its resident memory is its own):
an n-entry memory is built with one put per clock reading (``suite.build_memory``: the exponential
decay, a half-life of n/6 seconds, importances cycling), then, per round, ``put_many`` of n pairs
into an empty memory, 2,000 chained puts of new keys below capacity and at capacity (each evicts
one), 2,000 chained rehearsals (``get``), ``top(10)``, ``evict()`` of the third below a threshold,
``to_dict()`` and ``Memory.from_dict()`` of the whole memory.  Memory: the process's resident set
(``/proc/self/statm``) before and after the build, and the objects the garbage collector tracks,
each divided by n, and the time of one full collection of the process.  Medians over rounds, the
collector on; every sample starts after a full collection, so that the one a bulk operation defers
(it holds the collector back while it builds) lands on no other operation's figure.

**The peers** (fademem, lethe-agent, agentic-memory-ai, cognitive-memory, memory-decay) run through
``peers.py``'s workload at the same sizes: one insert, a keyed read, a top 10 by decayed score, a
threshold prune of a third, a bulk insert of n, a load from a dump.  A peer that is not installed is
skipped with a note (``peers.py`` explains how lethe-agent is installed apart).

Each series also gets its **growth exponent** between successive sizes, ``log(t2 / t1) / log(n2 /
n1)``: about 0 for a cost that does not grow with n, 1 for a cost linear in n.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from itertools import pairwise
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import peers  # noqa: E402
import run  # noqa: E402
import suite  # noqa: E402

from lethe import Memory  # noqa: E402

SIZES = (1_000, 10_000, 100_000, 1_000_000)
#: lethe's operations and what is timed: one operation, or the whole memory's.
LETHE_OPS: dict[str, str] = {
    "put_many": "`put_many` of n pairs into an empty memory (whole)",
    "put": "`put` of a new key below capacity (one)",
    "put_full": "`put` of a new key at capacity, evicting one (one)",
    "get": "`get`: a rehearsal (one)",
    "top10": "`top(10)` (one)",
    "evict": "`evict()` of the third below a threshold (whole)",
    "to_dict": "`to_dict()` of the whole memory (whole)",
    "from_dict": "`Memory.from_dict()` of that (whole)",
}
CHEAP = 2_000  # operations per sample of the O(log n) ones
#: The peers' operations plotted beside lethe's, from peers.py.
PEER_OPS = ("top10", "prune", "bulk")


def _resident_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def lethe_at(n: int, rounds: int) -> dict[str, Any]:
    """lethe alone at ``n`` entries: per-op samples (ns) of every operation, resident bytes and
    GC-tracked objects per entry.  Meant to run in a process of its own."""
    keys = suite.keys_for(n)
    new_keys = suite.keys_for(CHEAP, "new")
    clock = suite.fake_clock()
    gc.collect()
    objects_before, resident_before = len(gc.get_objects()), _resident_bytes()
    base = suite.build_memory(n, "exponential", clock, 2 * n + CHEAP, keys)
    gc.collect()
    resident = (_resident_bytes() - resident_before) / n
    tracked = (len(gc.get_objects()) - objects_before) / n
    t0 = time.perf_counter_ns()
    gc.collect()  # the memory settled: what one full collection of this process costs
    full_collection = time.perf_counter_ns() - t0
    built_at = clock.now
    full = base.configure(max_entries=n)
    clock.set(built_at)  # every timed operation runs at this reading: the threshold is chosen at it too
    scores = sorted(base.score_map().values())
    threshold = (scores[n // 3 - 1] + scores[n // 3]) / 2 if n >= 3 else scores[0]
    prunable = base.configure(eviction_threshold=threshold, summarize_threshold=threshold)
    pairs = [(k, suite.VALUE) for k in keys]
    empty: Memory[Any, Any] = Memory(max_entries=n, half_life=suite.half_life_for(n), clock_fn=clock)
    sample = [keys[(i * 7919) % n] for i in range(CHEAP)]
    data = base.to_dict()
    now = time.perf_counter_ns

    def chained(start: Memory[Any, Any], step: Any, items: list[str]) -> float:
        clock.set(built_at)
        m, t0 = start, now()
        for k in items:
            m = step(m, k)
        return (now() - t0) / len(items)

    def whole(fn: Any) -> float:
        clock.set(built_at)
        t0 = now()
        fn()
        return float(now() - t0)

    cases = {
        "put_many": lambda: whole(lambda: empty.put_many(pairs)),
        "put": lambda: chained(base, lambda m, k: m.put(suite.VALUE, key=k), new_keys),
        "put_full": lambda: chained(full, lambda m, k: m.put(suite.VALUE, key=k), new_keys),
        "get": lambda: chained(base, lambda m, k: m.get(k)[0], sample),
        "top10": lambda: whole(lambda: [base.top(10) for _ in range(100)]) / 100,
        "evict": lambda: whole(prunable.evict),
        "to_dict": lambda: whole(base.to_dict),
        "from_dict": lambda: whole(lambda: Memory.from_dict(data, clock_fn=clock)),
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    clock.set(built_at)
    evicted = len(prunable.evict()[1])
    for case in cases.values():  # a warm-up pass, discarded
        case()
    for r in range(rounds):
        names = list(cases)
        names = names[r % len(names) :] + names[: r % len(names)]  # rotated, as the suite's rounds
        for name in names:
            # Bulk work holds the collector back, and the full collection it defers (seconds at
            # 1M) would land on whichever sample comes next: every sample starts collected.
            gc.collect()
            samples[name].append(cases[name]())
    return {
        "n": n,
        "samples_ns": samples,
        "median_ns": {name: statistics.median(s) for name, s in samples.items()},
        "resident_bytes_per_entry": resident,
        "gc_objects_per_entry": tracked,
        "full_collection_ns": full_collection,
        "evicted": evicted,
    }


def lethe_sizes(sizes: list[int], rounds: int, progress: Any) -> dict[str, Any]:
    """:func:`lethe_at` for each size, each in a fresh interpreter (its resident memory its own)."""
    out: dict[str, Any] = {}
    for n in sizes:
        progress(f"lethe at n={n:,}")
        done = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", str(n), "--rounds", str(rounds)],
            capture_output=True,
            text=True,
            check=True,
        )
        out[str(n)] = json.loads(done.stdout)
    return out


def growth(points: list[tuple[int, float]]) -> list[float]:
    """The exponent of n between successive sizes: ``log(t2 / t1) / log(n2 / n1)``."""
    return [math.log(t2 / t1) / math.log(n2 / n1) for (n1, t1), (n2, t2) in pairwise(points) if t1 > 0]


def series(result: dict[str, Any]) -> dict[str, list[tuple[int, float]]]:
    """Every measured series as ``(n, ns)`` points: lethe's operations, then each peer's."""
    out: dict[str, list[tuple[int, float]]] = {}
    for n, data in result["lethe"].items():
        for op, ns in data["median_ns"].items():
            out.setdefault(f"lethe {op}", []).append((int(n), ns))
    for n, data in result.get("peers", {}).get("sizes", {}).items():
        for lib, info in data["libraries"].items():
            if lib == "lethe":
                continue
            for op in PEER_OPS:
                if op in info["cases"]:
                    out.setdefault(f"{lib} {op}", []).append((int(n), info["cases"][op]["median_ns"]))
    return out


def measure(
    sizes: list[int], rounds: int, with_peers: bool, peer_rounds: int, agent_path: str | None, progress: Any
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "meta": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "rounds": rounds,
            "gc": "enabled",
            "timer": "time.perf_counter_ns",
            "git": run.git_state(),
        },
        "lethe": {},
        "notes": [],
    }
    t0 = time.perf_counter()
    result["lethe"] = lethe_sizes(sizes, rounds, progress)
    if with_peers:
        result["peers"] = peers.run_peers(sizes, rounds=peer_rounds, lethe_agent_path=agent_path, progress=progress)
        result["notes"] += result["peers"]["notes"]
    result["growth"] = {name: growth(points) for name, points in series(result).items()}
    result["meta"]["elapsed_s"] = round(time.perf_counter() - t0, 1)
    return result


# -- report -----------------------------------------------------------------------------


def report(result: dict[str, Any]) -> str:
    sizes = list(result["lethe"])
    head = ["lethe (median)"] + [f"n={int(n):,}" for n in sizes] + ["growth exponents"]
    rows = []
    for op, what in LETHE_OPS.items():
        points = [(int(n), result["lethe"][n]["median_ns"][op]) for n in sizes]
        rows.append([what] + [run.fmt_ns(ns) for _, ns in points] + [", ".join(f"{g:.2f}" for g in growth(points))])
    for key, label, cell in (
        ("resident_bytes_per_entry", "resident bytes per entry", lambda v: f"{v:,.0f} B"),
        ("gc_objects_per_entry", "GC-tracked objects per entry", lambda v: f"{v:.2f}"),
        ("full_collection_ns", "a full collection of the process", run.fmt_ns),
    ):
        rows.append([label] + [cell(result["lethe"][n][key]) for n in sizes] + [""])
    parts = [run.table(head, rows)]
    peer_sizes = result.get("peers", {}).get("sizes", {})
    if peer_sizes:
        names = list(dict.fromkeys(lib for data in peer_sizes.values() for lib in data["libraries"]))
        for op in ("insert", "read", *PEER_OPS, "load"):
            prow = []
            for lib in names:
                points = [
                    (int(n), d["libraries"][lib]["cases"][op]["median_ns"])
                    for n, d in peer_sizes.items()
                    if lib in d["libraries"] and op in d["libraries"][lib]["cases"]
                ]
                if not points:
                    continue
                cells = {str(n): run.fmt_ns(ns) for n, ns in points}
                prow.append(
                    [lib] + [cells.get(n, "—") for n in peer_sizes] + [", ".join(f"{g:.2f}" for g in growth(points))]
                )
            if prow:
                head = [f"peers.py `{op}` (median)"] + [f"n={int(n):,}" for n in peer_sizes] + ["growth exponents"]
                parts += ["", run.table(head, prow)]
    if result["notes"]:
        parts += ["", "Notes:"] + [f"- {note}" for note in result["notes"]]
    return "\n".join(parts)


def plot(result: dict[str, Any], path: str) -> None:
    """A log-log figure: lethe's operations, top 10 / prune / bulk insert by library, memory per entry."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(17, 9))
    sizes = [int(n) for n in result["lethe"]]
    ax = axes[0][0]
    for op in ("put", "put_full", "get", "top10"):
        ax.plot(sizes, [result["lethe"][str(n)]["median_ns"][op] / 1e3 for n in sizes], marker="o", label=op)
    ax.set(xscale="log", yscale="log", xlabel="entries", ylabel="µs per operation", title="lethe: one operation")
    ax.legend()
    ax = axes[0][1]
    for op in ("put_many", "evict", "to_dict", "from_dict"):
        ax.plot(sizes, [result["lethe"][str(n)]["median_ns"][op] / 1e6 for n in sizes], marker="o", label=op)
    ax.set(xscale="log", yscale="log", xlabel="entries", ylabel="ms", title="lethe: the whole memory")
    ax.legend()
    peer_sizes = result.get("peers", {}).get("sizes", {})
    ax = axes[0][2]
    ax.plot(sizes, [result["lethe"][str(n)]["resident_bytes_per_entry"] for n in sizes], marker="o", label="resident")
    ax.set(xscale="log", xlabel="entries", ylabel="bytes per entry", title="lethe: resident memory per entry")
    ax.set_ylim(bottom=0)
    panels = (
        (axes[1][0], "top10", "top 10 by decayed score"),
        (axes[1][1], "prune", "prune a third"),
        (axes[1][2], "bulk", "bulk insert of n"),
    )
    for ax, op, title in panels:
        libs = list(dict.fromkeys(lib for d in peer_sizes.values() for lib in d["libraries"]))
        for lib in libs:
            points = [
                (int(n), d["libraries"][lib]["cases"][op]["median_ns"] / 1e6)
                for n, d in peer_sizes.items()
                if lib in d["libraries"] and op in d["libraries"][lib]["cases"]
            ]
            if points:
                ax.plot(*zip(*points), marker="o", label=lib)
        ax.set(xscale="log", yscale="log", xlabel="entries", ylabel="ms", title=f"{title}, by library")
        if libs:
            ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated sizes (1k to 1M)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of lethe's operations per size (default 3)")
    parser.add_argument("--peer-rounds", type=int, default=3, help="rounds of peers.py per size (default 3)")
    parser.add_argument("--no-peers", action="store_true", help="lethe alone")
    parser.add_argument("--lethe-agent-path", default=os.environ.get("LETHE_AGENT_PATH"), help="see peers.py")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the result as JSON")
    parser.add_argument("--plot", default=None, metavar="PATH", help="write the log-log figure (matplotlib)")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:  # one size, in this process: JSON on stdout for the parent
        print(json.dumps(lethe_at(args.child, args.rounds)))
        return 0

    def progress(msg: str) -> None:
        print(f"[scale] {msg}", file=sys.stderr, flush=True)

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    result = measure(sizes, args.rounds, not args.no_peers, args.peer_rounds, args.lethe_agent_path, progress)
    print(report(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
        progress(f"wrote {args.json}")
    if args.plot:
        plot(result, args.plot)
        progress(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
