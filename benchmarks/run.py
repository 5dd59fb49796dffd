"""Run the lethe benchmark suite and print per-op times and target ratios.

Usage (from the repository root, with ``pip install -e '.[bench]'``)::

    python benchmarks/run.py                                  # 1k, 10k, 100k; 5 rounds
    python benchmarks/run.py --sizes 1000,10000 --rounds 3
    python benchmarks/run.py --quick                          # 1k, 10k; 2 rounds; fewer ops
    python benchmarks/run.py --json benchmarks/results.json   # also write JSON
    python benchmarks/plot.py benchmarks/results.json         # plots into docs/images/

All competitors run in one process, interleaved within every round; medians
and min-max over rounds are reported.  Missing optional competitors are
skipped with a note.  See docs/performance.md for the method.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import suite


def fmt_ns(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value >= 100:
        return f"{value:,.0f}x"
    if value >= 0.1:
        return f"{value:.2f}x"
    return f"{value:.4f}x"


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def size_table(result: dict[str, Any], section: str, title: str, cell: Callable[[Any], str]) -> str:
    """One row per measured name in ``section``, one column per size."""
    sizes = list(result["sizes"])
    names = list(dict.fromkeys(name for n in sizes for name in result["sizes"][n].get(section, {})))
    rows = []
    for name in names:
        values = [result["sizes"][n].get(section, {}).get(name) for n in sizes]
        rows.append([f"`{name}`"] + ["—" if v is None else cell(v) for v in values])
    return table([title] + [f"n={int(n):,}" for n in sizes], rows)


def times_table(result: dict[str, Any]) -> str:
    """Median (min to max) time per operation."""
    return size_table(
        result,
        "cases",
        "per op: median (min to max)",
        lambda c: f"{fmt_ns(c['median_ns'])} ({fmt_ns(c['min_ns'])} to {fmt_ns(c['max_ns'])})",
    )


def memory_table(result: dict[str, Any]) -> str:
    """Bytes per entry measured with tracemalloc."""
    return size_table(result, "memory_bytes_per_entry", "bytes per entry (tracemalloc)", lambda v: f"{v:,.0f} B")


def tracked_table(result: dict[str, Any]) -> str:
    """GC-tracked objects per entry (after a full collection)."""
    return size_table(result, "gc_objects_per_entry", "GC-tracked objects per entry", lambda v: f"{v:.2f}")


def ratios_table(result: dict[str, Any]) -> str:
    rows = []
    for r in result["ratios"]:
        if r["target"] is None and r["value"] is None:
            continue
        target = "—" if r["target"] is None else f"{r['op']} {fmt_ratio(r['target'])}"
        verdict = {True: "met", False: "NOT met", None: "—" if r["target"] is None else "not measured"}[r["met"]]
        rows.append(
            [
                r["label"],
                f"{r['n']:,}",
                f"`{r['numerator']}` / `{r['denominator']}`",
                fmt_ratio(r["value"]),
                target,
                verdict,
            ]
        )
    return table(["ratio (same run, medians)", "n", "measured", "value", "target", "status"], rows)


def report(result: dict[str, Any]) -> str:
    meta = result["meta"]
    parts = [
        f"Python {meta['python']} ({meta['implementation']}) on {meta['platform']}, {meta['cpu_count']} CPUs; "
        f"{meta['rounds']} rounds, GC {meta['gc']}, {meta['timer']}; elapsed {meta.get('elapsed_s', '?')} s",
        "",
        times_table(result),
        "",
        memory_table(result),
        "",
        tracked_table(result),
        "",
        ratios_table(result),
    ]
    if result["notes"]:
        parts += ["", "Notes:"] + [f"- {note}" for note in result["notes"]]
    return "\n".join(parts)


def git_state() -> dict[str, Any]:
    """The commit measured and whether src/ had uncommitted changes (read-only git calls)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(
            ["git", "--no-optional-locks", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = (
            subprocess.run(
                ["git", "--no-optional-locks", "diff", "--quiet", "HEAD", "--", "src"], cwd=root, check=False
            ).returncode
            != 0
        )
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {"commit": head, "src_uncommitted_changes": dirty}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=None, help="comma-separated sizes (default 1000,10000,100000)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per size (default 5; 2 with --quick)")
    parser.add_argument("--quick", action="store_true", help="1k and 10k, 2 rounds, fewer ops per sample")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the full result as JSON")
    parser.add_argument("--no-refs", action="store_true", help="lethe, the internal map, dict and floors only")
    parser.add_argument("--ops", default=None, help="ops per sample as CHEAP,LINEAR (default: chosen by size)")
    args = parser.parse_args(argv)
    default_sizes = "1000,10000" if args.quick else "1000,10000,100000"
    sizes = [int(s) for s in (args.sizes or default_sizes).split(",") if s.strip()]
    rounds = args.rounds if args.rounds is not None else (2 if args.quick else 5)
    ops = None
    if args.ops:
        cheap, linear = (int(x) for x in args.ops.split(","))
        ops = (cheap, linear)

    def progress(msg: str) -> None:
        print(f"[bench] {msg}", file=sys.stderr, flush=True)

    result = suite.run_suite(
        sizes, rounds=rounds, quick=args.quick, references=not args.no_refs, ops=ops, progress=progress
    )
    result["meta"]["git"] = git_state()
    print(report(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
        progress(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
