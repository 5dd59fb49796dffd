"""The ``lethe`` command line: ``python -m lethe [demo | curves | inspect | simulate | mcp]``.

* ``demo`` (the default): a short demonstration with a simulated clock.
* ``curves``: the built-in decay curves as a terminal chart.
* ``inspect FILE``: a saved ``Memory.to_dict()``, or a memory in a lethe store (an SQLite file,
  or a Redis or PostgreSQL URL), as a table (or JSON).
* ``simulate LOG.jsonl``: replay a log of operations through a model and a capacity.
* ``mcp --db PATH``: serve a memory kept in a lethe store to agents, as an MCP server (over
  stdio, or streamable HTTP); needs the ``mcp`` extra.

Bad input is reported in one line on stderr with exit status 2, output that cannot be written
with status 1; a reader that goes away (``| head``) ends a command quietly with status 141, and
Ctrl-C with 130.

This module holds the entry point (:func:`main`) and the argument parser;
each command has a module of its own (``_demo``, ``_curves``, ``_inspect``,
``_simulate``, ``_mcp``), beside the chart renderer (``_chart``), the text helpers
(``_format``), the built-in models by name (``_models``) and the state labels
(``_states``).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import NoReturn, TextIO

from lethe._cli import _inspect, _mcp
from lethe._cli._curves import curve_points, curves
from lethe._cli._demo import demo
from lethe._cli._format import CLIError, Progress, format_duration, parse_duration, parse_time, write_json
from lethe._cli._inspect import Source, crossing, inspect
from lethe._cli._simulate import SIMULATE_LOG_FORMAT, SimulationReport, print_simulation, simulate

__all__ = [
    "SIMULATE_LOG_FORMAT",
    "CLIError",
    "Progress",
    "SimulationReport",
    "build_parser",
    "crossing",
    "curve_points",
    "curves",
    "demo",
    "format_duration",
    "inspect",
    "main",
    "parse_duration",
    "parse_time",
    "simulate",
]


class _ArgumentParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for ``python -m lethe``."""
    parser = _ArgumentParser(prog="lethe", description="Immutable memory with decay.")
    sub = parser.add_subparsers(dest="command", parser_class=_ArgumentParser)
    sub.add_parser("demo", help="a short demonstration with a simulated clock (the default)")
    c = sub.add_parser("curves", help="draw the decay curves of the built-in models")
    c.add_argument("--model", action="append", metavar="NAME", help="a model to draw (repeatable; default: all)")
    c.add_argument("--half-life", default="1h", help="half-life, e.g. 30s, 15m, 1h, 2d, 1w (default 1h)")
    c.add_argument("--span", default="24h", help="time shown on the x axis (default 24h)")
    i = sub.add_parser(
        "inspect", help="show the entries of a saved Memory.to_dict() JSON file or of a memory in a lethe store"
    )
    i.add_argument(
        "file",
        metavar="FILE",
        help="a Memory.to_dict() JSON file, a lethe SQLite store, or the URL of a Redis "
        "(redis://, rediss://, unix://) or PostgreSQL (postgresql://, postgres://) store; read only",
    )
    i.add_argument("--name", metavar="NAME", help="the memory to show, in a store holding several")
    i.add_argument("--prefix", metavar="PREFIX", help="the key prefix of a Redis store (default: RedisStore's, lethe)")
    i.add_argument(
        "--timeout",
        metavar="DURATION",
        help=f"how long to keep trying to reach a store server (default {_inspect.DEFAULT_TIMEOUT:g}s)",
    )
    i.add_argument("--at", metavar="ISO-TIME", help="the moment to score at (default: now)")
    i.add_argument(
        "--search",
        metavar="TEXT",
        help="show only the entries a search for TEXT finds, best first (their texts' BM25 plus decay)",
    )
    i.add_argument("--top", type=int, metavar="N", help="show only the first N entries")
    i.add_argument("--sort", choices=("score", "age", "key"), default="score")
    i.add_argument("--json", action="store_true", help="print machine-readable JSON")
    i.add_argument(
        "--model",
        metavar="NAME",
        help="score with this built-in model (built from the saved half_life) instead of the saved one; "
        "needed for scores of a memory saved with a custom decay function",
    )
    s = sub.add_parser(
        "simulate",
        help="replay a JSON-lines log of operations",
        description="Replay a JSON-lines log of operations through a decay model and a capacity,\n"
        "and report what was kept, summarized and evicted.",
        epilog=SIMULATE_LOG_FORMAT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("log", metavar="LOG.jsonl")
    s.add_argument("--model", default="exponential", metavar="NAME", help="a built-in decay model")
    s.add_argument("--half-life", default="1h")
    s.add_argument("--capacity", type=int, default=100, metavar="N", help="max_entries (default 100)")
    s.add_argument("--json", action="store_true", help="print machine-readable JSON")
    m = sub.add_parser(
        "mcp",
        help="serve a memory kept in a lethe store to agents, as an MCP server",
        description="Serve the memory NAME of a lethe store to agents over the Model Context Protocol, with the\n"
        "tools remember, recall, search, forget, top and stats. A memory the store holds is served with\n"
        "its stored configuration; a new one is made from --capacity, --model and --half-life.\n"
        "Needs the mcp extra: pip install 'lethe-decay[mcp]'.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    m.add_argument(
        "--db",
        required=True,
        metavar="PATH",
        help="the lethe SQLite store file (created, with its directory, if missing), or the URL of a Redis "
        "(redis://, rediss://, unix://) or PostgreSQL (postgresql://, postgres://) store",
    )
    m.add_argument(
        "--name", default=_mcp.DEFAULT_NAME, help=f"the memory's name in the store (default {_mcp.DEFAULT_NAME})"
    )
    m.add_argument(
        "--capacity",
        type=int,
        metavar="N",
        help=f"max_entries of a new memory (default {_mcp.DEFAULT_CAPACITY}): at capacity the weakest is evicted",
    )
    m.add_argument("--model", metavar="NAME", help=f"the decay model of a new memory (default {_mcp.DEFAULT_MODEL})")
    m.add_argument(
        "--half-life",
        metavar="DURATION",
        help=f"the half-life of a new memory, e.g. 12h, 7d, 2w (default {_mcp.DEFAULT_HALF_LIFE})",
    )
    m.add_argument("--transport", choices=_mcp.TRANSPORTS, default="stdio", help="how clients connect (default stdio)")
    m.add_argument("--host", default="127.0.0.1", help="the address to serve HTTP on (default 127.0.0.1)")
    m.add_argument("--port", type=int, default=8000, help="the port to serve HTTP on (default 8000)")
    m.add_argument(
        "--timeout",
        metavar="DURATION",
        help="how long to keep trying to reach a store server, e.g. 5s (default: the store's, 30s)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        # (The MCP server speaks its protocol on a stream of its own over stdout's buffer.)
        with nullcontext() if args.command == "mcp" else _escaping(sys.stdout, sys.stderr):
            status = _run(args)
            sys.stdout.flush()  # (here, where a failure is reported, not at the interpreter's exit)
            return status
    except KeyboardInterrupt:
        return 130  # (128 + SIGINT, as a shell reports a command it interrupted)
    except BrokenPipeError:
        _discard_output()  # the reader went away (``lethe inspect ... | head``): stop quietly
        return 141  # (128 + SIGPIPE)
    except OSError as exc:  # the output cannot be written (a full disk, ...)
        _discard_output()
        sys.stderr.write(f"lethe {args.command or 'demo'}: error: {exc}\n")
        return 1


def _discard_output() -> None:
    """Point stdout at the null device: what is left in its buffer, flushed at exit, would fail
    again (and Python would report that in a traceback of its own)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, sys.stdout.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError):  # (a stdout without a file descriptor: nothing is flushed to one)
        pass


#: The error handlers of a text stream that raise on some text a ``str`` may hold.
_FAILING = frozenset({"strict", "surrogateescape"})


@contextmanager
def _escaping(*streams: TextIO) -> Iterator[None]:
    """Text a stream cannot encode written as backslash escapes while the block runs, not a
    ``UnicodeEncodeError``: a value holding a lone surrogate (which a memory and every store
    keep), or any text beyond ASCII on a terminal that takes only ASCII."""
    # ("surrogateescape", the default under the C locale, takes only the surrogates that stand
    # for undecodable bytes.)
    changed = [(s, s.errors) for s in streams if isinstance(s, io.TextIOWrapper) and s.errors in _FAILING]
    for stream, _ in changed:
        stream.reconfigure(errors="backslashreplace")
    try:
        yield
    finally:
        for stream, errors in changed:
            stream.reconfigure(errors=errors)


def _run(args: argparse.Namespace) -> int:
    """The command ``args`` name, run; returns the exit status."""
    try:
        if args.command in (None, "demo"):
            return demo()
        if args.command == "curves":
            return curves(args.model, args.half_life, args.span)
        if args.command == "inspect":
            return inspect(
                args.file,
                args.at,
                args.top,
                args.sort,
                args.json,
                source=Source(model=args.model, name=args.name, prefix=args.prefix, timeout=args.timeout),
                search=args.search,
            )
        if args.command == "simulate":
            report = simulate(args.log, args.model, args.half_life, args.capacity)
            if args.json:
                write_json(report.to_dict(), sys.stdout)
            else:
                print_simulation(report, sys.stdout)
            return 0
        if args.command == "mcp":
            return _mcp.serve(
                _mcp.Options(
                    db=args.db,
                    name=args.name,
                    capacity=args.capacity,
                    model=args.model,
                    half_life=args.half_life,
                    transport=args.transport,
                    host=args.host,
                    port=args.port,
                    timeout=args.timeout,
                )
            )
    except CLIError as exc:
        sys.stderr.write(f"lethe {args.command}: error: {exc}\n")
        return 2
    return 2  # pragma: no cover - argparse rejects unknown commands first
