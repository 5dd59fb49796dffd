"""Regenerate the log-log plots of per-op cost vs n from a ``run.py --json`` result.

Usage::

    python benchmarks/plot.py [benchmarks/results.json] [--out docs/images]

Writes ``bench_writes.png``, ``bench_reads.png``, ``bench_ranking.png``,
``bench_actr.png`` and ``bench_memory.png``: medians as points and lines,
min-max over rounds as error bars.  Needs matplotlib (the ``bench`` extras).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

FIGURES: dict[str, tuple[str, list[str]]] = {
    "bench_writes.png": (
        "Writes: per-op cost vs n (exponential decay)",
        [
            "lethe.exponential.put_below",
            "lethe.exponential.touch",
            "lethe.exponential.get",
            "lethe.exponential.put_full",
            "map.set",
            "pmap.set",
            "immutables.set",
            "dict.set",
            "dict.cow_set",
            "cachetools.LRUCache.put_full",
            "cachetools.TTLCache.put_full",
            "cachetools.LFUCache.put_full",
            "memory_decay.add",
        ],
    ),
    "bench_reads.png": (
        "Point reads: per-op cost vs n",
        ["lethe.exponential.peek", "map.get", "pmap.get", "immutables.get", "dict.get"],
    ),
    "bench_ranking.png": (
        "Ranking and eviction: per-op cost vs n (exponential decay)",
        [
            "lethe.exponential.scored",
            "lethe.exponential.top10",
            "lethe.exponential.active",
            "lethe.exponential.evict",
            "lethe.exponential.put_full",
            "floor.score_sorted",
            "floor.scan_min",
            "floor.nlargest10",
            "memory_decay.tick",
            "memory_decay.top10",
        ],
    ),
    "bench_actr.png": (
        "ACT-R decay: per-op cost vs n",
        [
            "lethe.actr.put_below",
            "lethe.actr.get",
            "lethe.actr.touch",
            "lethe.actr.peek",
            "lethe.actr.put_full",
            "lethe.actr.scored",
            "lethe.actr.top10",
            "lethe.actr.active",
            "lethe.actr.evict",
        ],
    ),
}


def series(result: dict[str, Any], name: str) -> tuple[list[int], list[float], list[float], list[float]]:
    xs, med, lo, hi = [], [], [], []
    for n, data in sorted(result["sizes"].items(), key=lambda kv: int(kv[0])):
        case = data["cases"].get(name)
        if case is None:
            continue
        xs.append(int(n))
        med.append(case["median_ns"] / 1e3)
        lo.append((case["median_ns"] - case["min_ns"]) / 1e3)
        hi.append((case["max_ns"] - case["median_ns"]) / 1e3)
    return xs, med, lo, hi


def _save_loglog(fig: Any, ax: Any, ylabel: str, title: str, legend_size: int, path: str) -> str:
    """Finish a cost-vs-n figure on log-log axes, write it to ``path`` and return the path."""
    import matplotlib.pyplot as plt  # the caller has chosen the backend already
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (entries)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend_size, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def subtitle(result: dict[str, Any]) -> str:
    meta = result["meta"]
    return f"Python {meta['python']}, {meta['cpu_count']} CPUs, {meta['rounds']} rounds, GC on; median, bars min-max"


def plot_all(result: dict[str, Any], out_dir: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    written = []
    for filename, (title, names) in FIGURES.items():
        fig, ax = plt.subplots(figsize=(8, 5.5))
        for name in names:
            xs, med, lo, hi = series(result, name)
            if not xs:
                continue
            style = "--" if not name.startswith("lethe.") and not name.startswith("map.") else "-"
            ax.errorbar(xs, med, yerr=[lo, hi], fmt="o" + style, capsize=3, markersize=4, label=name)
        written.append(
            _save_loglog(
                fig, ax, "time per operation (µs)", f"{title}\n{subtitle(result)}", 7, os.path.join(out_dir, filename)
            )
        )

    fig, ax = plt.subplots(figsize=(8, 5))
    names: list[str] = []
    for data in result["sizes"].values():
        names += [k for k in data["memory_bytes_per_entry"] if k not in names]
    for name in names:
        pts = [
            (int(n), d["memory_bytes_per_entry"][name])
            for n, d in sorted(result["sizes"].items(), key=lambda kv: int(kv[0]))
            if name in d["memory_bytes_per_entry"]
        ]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=name)
    path = _save_loglog(
        fig,
        ax,
        "bytes per entry (tracemalloc; keys and values excluded)",
        f"Memory per entry\n{subtitle(result)}",
        8,
        os.path.join(out_dir, "bench_memory.png"),
    )
    written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", nargs="?", default=os.path.join(HERE, "results.json"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "images"))
    args = parser.parse_args(argv)
    with open(args.json, encoding="utf-8") as f:
        result = json.load(f)
    for path in plot_all(result, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
