"""Measure lethe against agent-memory libraries from PyPI: one process, one workload, interleaved rounds.

Usage (from the repository root)::

    pip install -e '.[bench]'     # fademem, agentic-memory-ai, cognitive-memory, memory-decay (and more)
    pip install --no-deps --target /tmp/peers-lethe-agent lethe-agent     # apart: see below
    python benchmarks/peers.py --lethe-agent-path /tmp/peers-lethe-agent --json benchmarks/peers.json
    python benchmarks/peers.py --sizes 10000 --rounds 3
    python benchmarks/peers.py --quick                 # 1k and 10k, 2 rounds, fewer operations per sample

The peers (their PyPI names): ``fademem``, ``lethe-agent``, ``agentic-memory-ai``, ``cognitive-memory`` and
``memory-decay``.  A peer that is not installed, or fails to import or to run, is skipped with a note;
lethe alone runs with the standard library.

**lethe-agent apart.**  lethe-agent installs a top-level package named ``lethe``, the import name of
lethe-decay (this project): installed side by side, one shadows the other.  Install it into a directory
of its own (``pip install --no-deps --target DIR lethe-agent``; its one dependency, numpy, is not imported
by the parts measured) and pass ``--lethe-agent-path DIR`` (or set ``LETHE_AGENT_PATH``).  The script
loads it there under its own modules and puts lethe-decay's back, so both run in one process.  If
lethe-agent was installed beside lethe-decay anyway, the script finds it by its distribution and loads
lethe-decay from this checkout's ``src``.

**The workload**, the same for every library at each n: n inserts with distinct keys, values and
importances (lethe's 0.5/1.0/1.5/2.0, cycling, or the peer's equivalent on its own scale), one second
apart; then, per sample, the time of: one insert below capacity (new keys, removed again outside the
timed region for the mutable stores), a keyed read, ``top(10)`` by decayed score, a threshold prune that
removes a third of the entries (the threshold chosen per library as the score a third of its entries
fall below; the entries are put back outside the timed region), a bulk insert of n into an empty store,
and a load from a dump.  Each library scores with its default decay model and default parameters,
except lethe (``Exponential`` with a half-life of n/6 seconds, as ``suite.py``) and fademem (which has
no default: the same half-life).  Where a library has no call for an operation it is composed from its
public calls (said so in the output) or reported as "n/a" with the reason.

**Method** (as ``suite.py``): every case is built first; one probe pass (a warm-up, discarded) checks that
each runs; then each round runs every case once, in an order rotated (and reversed on odd rounds) from
round to round, so machine noise lands on every library alike.  Medians and min to max over rounds;
ratios are of medians from the same run.  ``time.perf_counter_ns`` around the operations only; the
garbage collector stays on.  Embeddings, where a peer needs one, are precomputed 8-float vectors handed
over by an embedder that looks them up (as ``suite.py`` feeds memory-decay), so no model runs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import importlib
import importlib.metadata
import json
import os
import pkgutil
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from operator import itemgetter
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(HERE))


def _lethe_decay_first() -> str | None:
    """Make ``import lethe`` give lethe-decay; a note when lethe-agent's package of the same name was found
    first (installed beside it), after which lethe-decay is loaded from this checkout's ``src``."""
    import lethe

    if hasattr(lethe, "Memory"):
        return None
    for name in [m for m in sys.modules if m == "lethe" or m.startswith("lethe.")]:
        del sys.modules[name]
    sys.path.insert(0, str(SRC))
    importlib.invalidate_caches()
    if not hasattr(importlib.import_module("lethe"), "Memory"):
        raise SystemExit("`import lethe` does not give lethe-decay: install it (pip install -e .)")
    return f"`import lethe` gave lethe-agent's package: lethe-decay loaded from {SRC}"


SHADOW_NOTE = _lethe_decay_first()

import run  # noqa: E402
import suite  # noqa: E402

import lethe  # noqa: E402  (after the check above)
from lethe import ManualClock, Memory  # noqa: E402

LIBRARIES = ("lethe", "fademem", "lethe-agent", "agentic-memory-ai", "cognitive-memory", "memory-decay")
#: Operations in table order: (key, label).  ``read`` is lethe's ``get`` (a rehearsal), ``peek`` its plain read.
OPERATIONS = (
    ("insert", "insert one, below capacity"),
    ("insert_scan", "insert one with `add()` (a similarity scan first)"),
    ("read", "keyed read (lethe: `get`, a rehearsal)"),
    ("peek", "keyed read without rehearsal (lethe: `peek`)"),
    ("top10", "top 10 by decayed score"),
    ("prune", "threshold prune of a third"),
    ("bulk", "bulk insert of n (whole operation)"),
    ("load", "load n from an in-memory dump (whole operation)"),
    ("load_file", "load n from a dump file (whole operation)"),
)
START = suite.START
STEP = suite.STEP
FIRST = suite.FIRST
DIM = 8  # embedding size handed to peers that need one: what is measured is the store, not a model
MD_TICKS = 100  # memory-decay's clock: its DecayEngine ticks, spread over the n inserts
_now_ns = time.perf_counter_ns


# -- the workload -------------------------------------------------------------


@dataclass
class Workload:
    """What every library gets at one size: the same keys, values, importances, samples and new items."""

    n: int
    fast: int  # operations per sample of the cheap cases (insert, read)
    linear: int  # operations per sample of the O(n) cases (top 10 of a scan, prune)
    directory: Path
    loop: asyncio.AbstractEventLoop
    keys: list[str] = field(init=False)
    values: list[str] = field(init=False)
    importances: list[float] = field(init=False)
    sample: list[int] = field(init=False)
    new_keys: list[str] = field(init=False)
    new_values: list[str] = field(init=False)
    vectors: dict[str, list[float]] = field(init=False)

    def __post_init__(self) -> None:
        n = self.n
        rng = random.Random(n)
        self.keys = suite.keys_for(n)
        self.values = [f"value {i}" for i in range(n)]
        self.importances = [suite.importance_of(i) for i in range(n)]
        self.sample = [rng.randrange(n) for _ in range(self.fast)]
        self.new_keys = suite.keys_for(self.fast, "new")
        self.new_values = [f"new value {i}" for i in range(self.fast)]
        vec_rng = random.Random(0)
        self.vectors = {v: [vec_rng.gauss(0.0, 1.0) for _ in range(DIM)] for v in self.values + self.new_values}

    @property
    def third(self) -> int:
        """How many entries the prune should remove: those strictly below the (n//3)-th lowest score."""
        return self.n // 3

    @staticmethod
    def unit(i: int) -> float:
        """Importance of item ``i`` on a 0..1 scale (peers that take one): lethe's 0.5..2.0, halved."""
        return suite.importance_of(i) / 2

    def threshold(self, scores: Iterable[float]) -> float:
        """A score a third of the entries fall strictly below: midway between the highest of them and the
        next, so that a clock that moved on a little since (agentic-memory-ai reads the wall clock) does
        not take one more."""
        ranked = sorted(scores)
        k = self.third
        return (ranked[k - 1] + ranked[k]) / 2 if k > 0 else ranked[0]


@dataclass
class Case:
    """One measured operation of one library: ``run()`` performs ``ops`` of them and returns elapsed ns."""

    library: str
    op: str
    ops: int
    run: Callable[[], int]
    api: str


@dataclass
class PruneCount:
    """What a library's prune said it removed and what it did remove (size before minus after), per call."""

    threshold: float
    expected: int
    reported: list[int] = field(default_factory=list)
    actual: list[int] = field(default_factory=list)

    def record(self, reported: int, before: int, after: int) -> None:
        self.reported.append(reported)
        self.actual.append(before - after)


@dataclass
class Library:
    """Everything built for one library at one size."""

    name: str
    version: str | None
    cases: list[Case] = field(default_factory=list)
    na: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    prune: PruneCount | None = None

    def add(self, op: str, ops: int, fn: Callable[[], int], api: str) -> None:
        self.cases.append(Case(self.name, op, ops, fn, api))


class Ticker:
    """A clock for the peers that take one: each call returns a time ``STEP`` later than the last."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        now = self.now
        self.now = now + STEP
        return now


def _async(loop: asyncio.AbstractEventLoop, timed: Callable[[], Awaitable[int]]) -> Callable[[], int]:
    """A sync case around a coroutine that times itself: the event loop's start-up stays outside the timing."""

    def run_case() -> int:
        return loop.run_until_complete(timed())

    return run_case


def _version(dist: str, path: str | None = None) -> str | None:
    try:
        if path is None:
            return importlib.metadata.version(dist)
        found = list(importlib.metadata.distributions(name=dist, path=[path]))
        return found[0].version if found else None
    except importlib.metadata.PackageNotFoundError:
        return None


# -- lethe ----------------------------------------------------------------------


def lethe_library(w: Workload) -> Library:
    """lethe: ``Memory`` with the default ``Exponential`` (half-life n/6 s), a fake clock stepping 1 s per put."""
    n = w.n
    lib = Library("lethe", lethe.__version__)
    clock = ManualClock(FIRST, step=STEP)
    half_life = suite.half_life_for(n)
    mem: Memory[str, str] = Memory(
        max_entries=max(2 * n, n + w.fast + 1), half_life=half_life, clock_fn=clock
    )  # room for every insert of a sample: below capacity
    for k, v, imp in zip(w.keys, w.values, w.importances):
        mem = mem.put(v, key=k, importance=imp)
    built_at = clock.now
    clock.set(built_at)
    threshold = w.threshold(s for _, s in mem.scored())
    mem = mem.configure(eviction_threshold=threshold, summarize_threshold=max(threshold, 0.15))
    prune = lib.prune = PruneCount(threshold, w.third)
    new_items = [(k, v, suite.importance_of(i)) for i, (k, v) in enumerate(zip(w.new_keys, w.new_values))]
    sample = [w.keys[i] for i in w.sample]
    top_ops = max(1, w.fast // 10)  # top(10) is indexed: microseconds, so more of them per sample
    linear = range(w.linear)

    def insert() -> int:
        clock.set(built_at)
        m = mem
        t0 = _now_ns()
        for k, v, imp in new_items:
            m = m.put(v, key=k, importance=imp)
        return _now_ns() - t0

    def read() -> int:
        clock.set(built_at)
        m = mem
        t0 = _now_ns()
        for k in sample:
            m, _ = m.get(k)
        return _now_ns() - t0

    def peek() -> int:
        t0 = _now_ns()
        for k in sample:
            mem.peek(k)
        return _now_ns() - t0

    def top10() -> int:
        clock.set(built_at)
        t0 = _now_ns()
        for _ in range(top_ops):
            mem.top(10)
        return _now_ns() - t0

    def evict() -> int:
        elapsed = 0
        for _ in linear:
            clock.set(built_at)
            t0 = _now_ns()
            after, gone = mem.evict()
            elapsed += _now_ns() - t0
            prune.record(len(gone), len(mem), len(after))
        return elapsed

    pairs = list(zip(w.keys, w.values))
    empty: Memory[str, str] = Memory(max_entries=n, half_life=half_life, clock_fn=clock)

    def bulk() -> int:
        clock.set(FIRST)
        t0 = _now_ns()
        empty.put_many(pairs)
        return _now_ns() - t0

    dump = mem.to_dict()
    path = w.directory / "lethe.json"
    path.write_text(json.dumps(dump), encoding="utf-8")

    def load() -> int:
        clock.set(built_at)  # the dump's latest reading: a clock behind it would be warned of
        t0 = _now_ns()
        Memory.from_dict(dump, clock_fn=clock)
        return _now_ns() - t0

    def load_file() -> int:
        clock.set(built_at)
        t0 = _now_ns()
        with path.open(encoding="utf-8") as f:
            Memory.from_dict(json.load(f), clock_fn=clock)
        return _now_ns() - t0

    lib.add("insert", w.fast, insert, "Memory.put(value, key=, importance=) (returns a new memory)")
    lib.add("read", w.fast, read, "Memory.get(key): a rehearsal, returns (new memory, entry)")
    lib.add("peek", w.fast, peek, "Memory.peek(key)")
    lib.add("top10", top_ops, top10, "Memory.top(10) (the order index)")
    lib.add("prune", w.linear, evict, "Memory.evict() with eviction_threshold at the third-lowest score")
    lib.add("bulk", 1, bulk, "Memory.put_many(n pairs) into an empty memory (one importance per call)")
    lib.add("load", 1, load, "Memory.from_dict(mem.to_dict())")
    lib.add("load_file", 1, load_file, "Memory.from_dict(json.load(file))")
    return lib


# -- fademem --------------------------------------------------------------------


class DictStore:
    """The least adapter fademem's ``MemoryStore`` protocol asks for: a dict of records by id."""

    def __init__(self, records: Iterable[Any]) -> None:
        self.records: dict[str, Any] = {r.id: r for r in records}
        self.archived: dict[str, Any] = {}

    def get_memories(self) -> list[Any]:
        return list(self.records.values())

    def archive_memories(self, memory_ids: Iterable[str]) -> None:
        for i in memory_ids:
            self.archived[i] = self.records.pop(i)

    def delete_memories(self, memory_ids: Iterable[str]) -> None:
        pop = self.records.pop
        for i in memory_ids:
            pop(i)


def fademem_library(w: Workload) -> Library:
    """fademem: decay scoring and pruning of records in a store the caller adapts (no store of its own)."""
    fm = importlib.import_module("fademem")
    lib = Library("fademem", _version("fademem"))
    n = w.n
    start_ms = int(START.timestamp() * 1000)
    # Entry i was put i seconds after the start; the prune and top 10 run when the last one has been put.
    records = [
        fm.MemoryRecord(id=k, last_accessed_ms=start_ms + 1000 * (i + 1), importance=w.unit(i))
        for i, k in enumerate(w.keys)
    ]
    now_ms = start_ms + 1000 * (n + 1)
    half_life_ms = int(suite.half_life_for(n).total_seconds() * 1000)
    store = DictStore(records)
    decisions = fm.score_memories(
        store.get_memories(), model="exponential", now=now_ms, threshold=0.0, half_life_millis=half_life_ms
    )
    threshold = w.threshold(d.score for d in decisions)
    prune = lib.prune = PruneCount(threshold, w.third)
    by_id = {r.id: r for r in records}
    by_score = itemgetter(1)
    linear = range(w.linear)
    score_memories, prune_memories, nlargest = fm.score_memories, fm.prune_memories, heapq.nlargest

    def top10() -> int:
        t0 = _now_ns()
        for _ in linear:
            scored = score_memories(
                store.get_memories(), model="exponential", now=now_ms, threshold=0.0, half_life_millis=half_life_ms
            )
            nlargest(10, ((d.id, d.score) for d in scored), key=by_score)
        return _now_ns() - t0

    def prune_case() -> int:
        elapsed = 0
        for _ in linear:
            before = len(store.records)
            t0 = _now_ns()
            out = prune_memories(
                store,
                model="exponential",
                now=now_ms,
                threshold=threshold,
                half_life_millis=half_life_ms,
                action="delete",
            )
            elapsed += _now_ns() - t0
            removed = [d.id for d in out if d.prune]
            prune.record(len(removed), before, len(store.records))
            for i in removed:  # put back, outside the timing
                store.records[i] = by_id[i]
        return elapsed

    no_store = (
        "keeps no memories: it scores and prunes the records of a store you adapt to its MemoryStore protocol "
        "(get_memories, archive_memories, delete_memories)"
    )
    for op in ("insert", "read", "bulk", "load", "load_file"):
        lib.na[op] = no_store
    lib.add(
        "top10",
        w.linear,
        top10,
        "score_memories(get_memories(), model='exponential') + heapq.nlargest(10) (composed: no top-k call)",
    )
    lib.add(
        "prune",
        w.linear,
        prune_case,
        "prune_memories(store, model='exponential', threshold=t, action='delete') on a dict-backed adapter",
    )
    lib.notes.append(
        "fademem: the `exponential` model (no default model; half-life n/6 s as lethe's) ignores importance, "
        "so its prune removes the oldest third; its pure-Python scorer (`fademem.reference`) does the scoring "
        "in `score_memories`, the native library only behind the top-level `exponential_score`"
    )
    return lib


# -- lethe-agent ----------------------------------------------------------------

# Tags that give lethe-agent's initial score four levels (0.30, 0.45, 0.55, 0.575: w_recency + w_source * signal),
# in the order of lethe's importances; all below its promotion threshold (0.6), see lethe_agent_library.
AGENT_TAGS: tuple[list[str], ...] = (["remark"], [], ["definition"], ["tool_result"])


def _lethe_agent_root(path: str | None) -> str | None:
    """The directory holding lethe-agent's ``lethe`` package: ``path``, ``LETHE_AGENT_PATH``, or its distribution."""
    root = path or os.environ.get("LETHE_AGENT_PATH")
    if root:
        return root
    try:
        dist = importlib.metadata.distribution("lethe-agent")
    except importlib.metadata.PackageNotFoundError:
        return None
    return str(Path(str(dist.locate_file(""))).resolve())


def load_lethe_agent(path: str | None) -> tuple[dict[str, ModuleType] | None, str | None, str | None]:
    """lethe-agent's modules by name, its version, and a note (why it is skipped, when it is).

    Its package is named ``lethe``, like lethe-decay's: lethe-decay's modules are set aside while
    lethe-agent's are imported from their own directory, then put back.  lethe-agent imports a few of its
    modules inside functions (``lethe.retention.score_decay`` in ``MemoryStore.consolidate``): those whose
    names lethe-decay does not use stay registered under their names so that the imports find them.
    """
    root = _lethe_agent_root(path)
    if root is None:
        return None, None, "lethe-agent not installed (pip install --no-deps --target DIR lethe-agent): skipped"
    if not (Path(root) / "lethe" / "__init__.py").is_file():
        return None, None, f"lethe-agent: no `lethe` package in {root}: skipped"
    ours = {m: sys.modules.pop(m) for m in list(sys.modules) if m == "lethe" or m.startswith("lethe.")}
    agent: dict[str, ModuleType] = {}
    sys.path.insert(0, root)
    importlib.invalidate_caches()
    try:
        top = importlib.import_module("lethe")
        if not hasattr(top, "MemoryStore"):
            return None, None, f"lethe-agent: the `lethe` package in {root} is not lethe-agent's: skipped"
        for late in ("lethe.retention.score_decay", "lethe.retention.ttl", "lethe.backends.sqlite_backend"):
            importlib.import_module(late)
    except Exception as exc:
        return None, None, f"lethe-agent failed to import from {root} ({exc!r}): skipped"
    finally:
        sys.path.remove(root)
        agent.update({m: sys.modules.pop(m) for m in list(sys.modules) if m == "lethe" or m.startswith("lethe.")})
        sys.modules.update(ours)
        importlib.invalidate_caches()
    decay_names = {m.name for m in pkgutil.iter_modules(ours["lethe"].__path__)}
    for name, module in agent.items():
        if name != "lethe" and name.split(".")[1] not in decay_names:
            sys.modules.setdefault(name, module)
    return agent, _version("lethe-agent", root), None


class TableEmbedder:
    """An embedder that looks up precomputed vectors (lethe-agent's ``Embedder`` protocol)."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed(self, text: str) -> list[float]:
        return self.vectors[text]


def lethe_agent_library(w: Workload, agent: dict[str, ModuleType], version: str | None) -> Library:
    """lethe-agent: ``MemoryStore`` with its defaults (in-memory backend, ``ScoreDecayPolicy``, 7-day half-life)."""
    top, decay_mod = agent["lethe"], agent["lethe.decay"]
    lib = Library("lethe-agent", version)
    embedder = TableEmbedder(w.vectors)
    clock = Ticker(FIRST)
    store = top.MemoryStore(embedder=embedder, clock=clock)
    backend, config = store.backend, store.config
    ids = [store.remember(v, session_id="s", tags=AGENT_TAGS[i % 4]).id for i, v in enumerate(w.values)]
    built_at = clock.now
    policy_score = store.retention_policy.score
    # Its prune: consolidate() deletes cold-tier items whose grace period has passed (after promoting
    # short-term items scoring >= 0.6, demoting long-term ones below 0.1 and merging near-duplicate
    # long-term items pairwise).  Items reach the cold tier through those earlier passes; the store is
    # put in the state they leave: its lowest-scored third cold since a grace period ago, the rest short-term.
    # Initial scores stay below 0.6, so no promotion happens and the merge pass (quadratic in long-term
    # items) has nothing to do: the call measured is the prune.
    items = backend.list_all()
    scores = [decay_mod.decay_score(it, now=built_at, config=config) for it in items]
    threshold = w.threshold(scores)
    cold_since = built_at - timedelta(seconds=config.cold_grace_period_seconds)
    cold = [it.with_updates(tier="cold", cold_since=cold_since) for it, s in zip(items, scores) if s < threshold]
    for it in cold:
        backend.put(it)
    prune = lib.prune = PruneCount(threshold, w.third)
    sample = [ids[i] for i in w.sample]
    new_items = [(v, AGENT_TAGS[i % 4]) for i, v in enumerate(w.new_values)]

    def by_score(item: Any) -> float:
        return float(policy_score(item, built_at))

    linear = range(w.linear)

    def insert() -> int:
        clock.now = built_at
        remember = store.remember
        made = []
        t0 = _now_ns()
        for v, tags in new_items:
            made.append(remember(v, session_id="s", tags=tags))
        elapsed = _now_ns() - t0
        for it in made:
            backend.delete(it.id)
        return elapsed

    def read() -> int:
        get = backend.get
        t0 = _now_ns()
        for i in sample:
            get(i)
        return _now_ns() - t0

    def top10() -> int:
        t0 = _now_ns()
        for _ in linear:
            heapq.nlargest(10, backend.list_all(), key=by_score)
        return _now_ns() - t0

    def prune_case() -> int:
        elapsed = 0
        for _ in linear:
            # A store of its own per call (the same backend): its forget log starts empty each time.
            pruner = top.MemoryStore(backend=backend, embedder=embedder, clock=lambda: built_at)
            before = backend.count()
            t0 = _now_ns()
            out = pruner.consolidate()
            elapsed += _now_ns() - t0
            prune.record(out["expired"], before, backend.count())
            for it in cold:  # put back, outside the timing
                backend.put(it)
        return elapsed

    def bulk() -> int:
        fresh = top.MemoryStore(embedder=embedder, clock=Ticker(FIRST))
        remember = fresh.remember
        t0 = _now_ns()
        for i, v in enumerate(w.values):
            remember(v, session_id="s", tags=AGENT_TAGS[i % 4])
        return _now_ns() - t0

    lib.add("insert", w.fast, insert, "MemoryStore.remember(content, session_id=, tags=)")
    lib.add("read", w.fast, read, "store.backend.get(id) (InMemoryBackend: the store has no keyed read)")
    lib.add(
        "top10",
        w.linear,
        top10,
        "heapq.nlargest(10, backend.list_all(), key=ScoreDecayPolicy.score) (composed: recall() ranks by similarity)",
    )
    lib.add(
        "prune",
        w.linear,
        prune_case,
        "MemoryStore.consolidate(): deletes the cold-tier items past their grace period (the lowest third)",
    )
    lib.add("bulk", 1, bulk, "n x remember() into a new MemoryStore (no bulk insert)")
    lib.na["load"] = lib.na["load_file"] = "no export or import: its durable store is the SQLite backend"
    lib.notes.append(
        "lethe-agent: importance comes from tags (initial score 0.30/0.45/0.55/0.575); ids are uuid4 strings it "
        "makes; keyed reads go to the backend, since MemoryStore has none; consolidate() also logs every deletion "
        "to its forget log"
    )
    return lib


# -- agentic-memory-ai ----------------------------------------------------------


class AsyncTableEmbedder:
    """agentic-memory's ``Embedder`` protocol over precomputed vectors (so its ``BuiltinEmbedder``, which
    retrains its IDF table over every document on each store, is not what is measured)."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    async def embed(self, text: str) -> list[float]:
        return self.vectors[text]

    async def embed_batch(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def dimensions(self) -> int:
        return DIM


def agentic_memory_library(w: Workload) -> Library:
    """agentic-memory-ai (``import agentic_memory``): ``AgentMemory`` with its ``LocalStore`` and default decay."""
    am = importlib.import_module("agentic_memory")
    file_store_mod = importlib.import_module("agentic_memory.store.file")
    lib = Library("agentic-memory-ai", _version("agentic-memory-ai"))
    n, loop = w.n, w.loop
    embedder = AsyncTableEmbedder(w.vectors)
    backend = am.LocalStore()
    mem = am.AgentMemory(store=backend, embedder=embedder)
    # Its timestamps are wall-clock ISO strings (store() stamps now(), decay reads datetime.now()): entries are
    # made with the timestamps n one-second-apart puts ending now would have, and stored through the backend.
    wall = datetime.now(timezone.utc)
    entries = [
        am.MemoryEntry(
            id=k,
            content=v,
            type=am.MemoryType.FACT,
            scope="default",
            importance=am.ImportanceLevel.SOFT,
            confidence=w.unit(i),
            metadata={},
            created_at=(stamp := (wall - (n - i) * STEP).isoformat()),
            updated_at=stamp,
            version=1,
            embedding=w.vectors[v],
        )
        for i, (k, v) in enumerate(zip(w.keys, w.values))
    ]
    by_id = {e.id: e for e in entries}

    async def fill() -> None:
        for e in entries:
            await backend.set(e)

    loop.run_until_complete(fill())
    decayed = mem.get_decayed_confidence
    prune = lib.prune = PruneCount(w.threshold(map(decayed, entries)), w.third)
    sample = [w.keys[i] for i in w.sample]
    new_items = [(v, w.unit(i)) for i, v in enumerate(w.new_values)]
    linear = range(w.linear)

    async def insert() -> int:
        made = []
        t0 = _now_ns()
        for v, c in new_items:
            made.append(await mem.store(v, confidence=c))
        elapsed = _now_ns() - t0
        for e in made:
            await mem.delete(e.id)
        return elapsed

    async def read() -> int:
        t0 = _now_ns()
        for k in sample:
            await mem.get(k)
        return _now_ns() - t0

    async def top10() -> int:
        t0 = _now_ns()
        for _ in linear:
            heapq.nlargest(10, await mem.get_all(), key=decayed)
        return _now_ns() - t0

    async def prune_case() -> int:
        elapsed = 0
        for _ in linear:
            # Its decay reads the wall clock: the threshold is chosen again (outside the timing) just before.
            threshold = prune.threshold = w.threshold(map(decayed, await mem.get_all()))
            before = {e.id for e in await mem.get_all()}
            t0 = _now_ns()
            count = await mem.cleanup(threshold=threshold)
            elapsed += _now_ns() - t0
            after = {e.id for e in await mem.get_all()}
            prune.record(count, len(before), len(after))
            for i in before - after:  # put back, outside the timing
                await backend.set(by_id[i])
        return elapsed

    async def bulk() -> int:
        fresh = am.AgentMemory(store=am.LocalStore(), embedder=embedder)
        store = fresh.store
        t0 = _now_ns()
        for i, v in enumerate(w.values):
            await store(v, confidence=w.unit(i))
        return _now_ns() - t0

    # Its export and import: a FileStore writes the JSON file on every set, and reads it when opened.
    # The file is written once with the FileStore's own writer (a set per entry would rewrite it n times).
    path = w.directory / "agentic.json"
    writer = file_store_mod.FileStore(str(path))
    writer._entries = dict(by_id)
    writer._dirty = True
    writer._persist()

    def load_file() -> int:
        t0 = _now_ns()
        file_store_mod.FileStore(str(path))
        return _now_ns() - t0

    lib.add("insert", w.fast, _async(loop, insert), "await AgentMemory.store(content, confidence=)")
    lib.add("read", w.fast, _async(loop, read), "await AgentMemory.get(id) (a copy of the entry)")
    lib.add(
        "top10",
        w.linear,
        _async(loop, top10),
        "heapq.nlargest(10, await get_all(), key=get_decayed_confidence) (composed: retrieve() needs a query)",
    )
    lib.add("prune", w.linear, _async(loop, prune_case), "await AgentMemory.cleanup(threshold=t)")
    lib.add("bulk", 1, _async(loop, bulk), "n x await store() into a new AgentMemory (no bulk insert)")
    lib.add("load_file", 1, load_file, "FileStore(path): its JSON file, read when opened")
    lib.na["load"] = "no in-memory export; its file import (FileStore) is measured as a load from a file"
    lib.notes.append(
        "agentic-memory-ai: async API; confidence is the score that decays (type FACT: exponential, 90-day "
        "half-life, on the wall clock); entries made by store() get random ids and now() timestamps"
    )
    return lib


# -- cognitive-memory -----------------------------------------------------------


def cognitive_memory_library(w: Workload) -> Library:
    """cognitive-memory: ``CognitiveMemory`` with its ``InMemoryAdapter`` and default config."""
    cm_mod = importlib.import_module("cognitive_memory")
    CMemory, EmbeddingProvider = cm_mod.Memory, cm_mod.EmbeddingProvider
    lib = Library("cognitive-memory", _version("cognitive-memory"))
    loop, vectors = w.loop, w.vectors

    class TableProvider(EmbeddingProvider):  # type: ignore[misc,valid-type]
        """Precomputed vectors behind its ``EmbeddingProvider`` interface."""

        def embed(self, text: str) -> list[float]:
            return vectors[text]

        def embed_batch(self, texts: list[str]) -> list[list[float]]:
            return [vectors[t] for t in texts]

        @property
        def dimensions(self) -> int:
            return DIM

    embedder = TableProvider()
    adapter = cm_mod.InMemoryAdapter()
    cm = cm_mod.CognitiveMemory(embedder=embedder, adapter=adapter)
    engine = cm.engine
    retention = engine.compute_retention

    def made(i: int, key: str | None, value: str, at: datetime) -> Any:
        # What add() builds (importance, stability from it, timestamps, the embedding), without add()'s search.
        imp = w.unit(i)
        fields: dict[str, Any] = {"id": key} if key is not None else {}
        return CMemory(
            content=value,
            importance=imp,
            stability=0.1 + imp * 0.3,
            created_at=at,
            last_accessed_at=at,
            embedding=vectors[value],
            **fields,
        )

    base = [made(i, k, v, FIRST + i * STEP) for i, (k, v) in enumerate(zip(w.keys, w.values))]

    async def fill() -> None:
        for m in base:
            await cm.add_memory_object(m)

    loop.run_until_complete(fill())
    now = FIRST + w.n * STEP
    threshold = w.threshold(retention(m, now) for m in base)
    prune = lib.prune = PruneCount(threshold, w.third)
    by_id = {m.id: m for m in base}
    sample = [w.keys[i] for i in w.sample]
    linear = range(w.linear)

    async def insert() -> int:
        add = cm.add_memory_object
        made_ids = []
        t0 = _now_ns()
        for i, (k, v) in enumerate(zip(w.new_keys, w.new_values)):
            made_ids.append((await add(made(i, k, v, now))).id)
        elapsed = _now_ns() - t0
        await cm.delete_many(made_ids)
        return elapsed

    async def insert_scan() -> int:
        # A CognitiveMemory of its own per sample (the same adapter): add() queues conflict candidates.
        adder = cm_mod.CognitiveMemory(embedder=embedder, adapter=adapter)
        made_ids = []
        t0 = _now_ns()
        for i, v in zip(linear, w.new_values):
            made_ids.append((await adder.add(v, importance=w.unit(i), timestamp=now)).id)
        elapsed = _now_ns() - t0
        await cm.delete_many(made_ids)
        return elapsed

    async def read() -> int:
        get = cm.get
        t0 = _now_ns()
        for k in sample:
            await get(k)
        return _now_ns() - t0

    async def top10() -> int:
        t0 = _now_ns()
        for _ in linear:
            heapq.nlargest(10, await cm.list(), key=lambda m: retention(m, now))
        return _now_ns() - t0

    async def prune_case() -> int:
        elapsed = 0
        for _ in linear:
            before = (await cm.counts())["hot"]
            t0 = _now_ns()
            fading = await cm.find_fading(threshold)
            gone = [m.id for m in fading if retention(m, now) < threshold]
            await cm.delete_many(gone)
            elapsed += _now_ns() - t0
            prune.record(len(gone), before, (await cm.counts())["hot"])
            for i in gone:  # put back, outside the timing
                await adapter.create(by_id[i])
        return elapsed

    async def bulk() -> int:
        fresh = cm_mod.CognitiveMemory(embedder=embedder, adapter=cm_mod.InMemoryAdapter())
        add = fresh.add_memory_object
        t0 = _now_ns()
        for i, v in enumerate(w.values):
            await add(made(i, None, v, FIRST + i * STEP))
        return _now_ns() - t0

    # Its durable adapter: an append-only JSONL event log, replayed when opened.
    path = w.directory / "cognitive.jsonl"

    async def write_log() -> None:
        log = cm_mod.JsonlFileAdapter(str(path))
        for m in base:
            await log.create(m)

    loop.run_until_complete(write_log())

    def load_file() -> int:
        t0 = _now_ns()
        cm_mod.JsonlFileAdapter(str(path))
        return _now_ns() - t0

    lib.add("insert", w.fast, _async(loop, insert), "await add_memory_object(Memory(...)) (a pre-built memory)")
    lib.add(
        "insert_scan",
        w.linear,
        _async(loop, insert_scan),
        "await CognitiveMemory.add(content, importance=, timestamp=): cosine search of every hot memory first",
    )
    lib.add("read", w.fast, _async(loop, read), "await CognitiveMemory.get(id)")
    lib.add(
        "top10",
        w.linear,
        _async(loop, top10),
        "heapq.nlargest(10, await list(), key=engine.compute_retention) (composed: search() needs a query)",
    )
    lib.add(
        "prune",
        w.linear,
        _async(loop, prune_case),
        "find_fading(t) + compute_retention(m) < t + delete_many (composed: tick() moves to cold, never deletes)",
    )
    lib.add("bulk", 1, _async(loop, bulk), "n x add_memory_object() into a new CognitiveMemory")
    lib.add("load_file", 1, load_file, "JsonlFileAdapter(path): replays its JSONL event log")
    lib.na["load"] = "no in-memory export; its file adapter (JsonlFileAdapter) is measured as a load from a file"
    lib.notes.append(
        "cognitive-memory: retention max(floor, exp(-days / (stability * (1 + 2 importance) * 45))) for its "
        "default (episodic) category; store_batch() links every pair it stores (quadratic), so the bulk insert "
        "is a loop of add_memory_object(); its in-memory find_fading() returns every hot memory, leaving the "
        "retention test to the caller"
    )
    return lib


# -- memory-decay ---------------------------------------------------------------


def memory_decay_library(w: Workload) -> Library:
    """memory-decay: ``MemoryGraph`` (its in-memory backend) and ``DecayEngine`` with default parameters."""
    graph_mod = importlib.import_module("memory_decay.graph")
    decay_mod = importlib.import_module("memory_decay.decay")
    lib = Library("memory-decay", _version("memory-decay"))
    n = w.n
    table = {v: list(vec) for v, vec in w.vectors.items()}
    graph = graph_mod.MemoryGraph(embedder=table.__getitem__)
    # Its time is the engine's ticks, each decaying every memory once (O(n)): the n inserts are spread
    # over MD_TICKS ticks, and the engine ticks that many times, so activations spread as ages do.
    for i, (k, v) in enumerate(zip(w.keys, w.values)):
        graph.add_memory(k, "fact", v, w.unit(i), created_tick=i * MD_TICKS // n)
    engine = decay_mod.DecayEngine(graph=graph)
    for _ in range(MD_TICKS):
        engine.tick()
    sample = [w.keys[i] for i in w.sample]
    new_items = [(k, v, w.unit(i)) for i, (k, v) in enumerate(zip(w.new_keys, w.new_values))]
    by_score = itemgetter(1)
    linear = range(w.linear)

    def insert() -> int:
        add = graph.add_memory
        t0 = _now_ns()
        for k, v, imp in new_items:
            add(k, "fact", v, imp, created_tick=MD_TICKS)
        elapsed = _now_ns() - t0
        graph._graph.remove_nodes_from(w.new_keys)  # it has no delete: the networkx graph's own
        return elapsed

    def read() -> int:
        get = graph.get_node
        t0 = _now_ns()
        for k in sample:
            get(k)
        return _now_ns() - t0

    def top10() -> int:
        t0 = _now_ns()
        for _ in linear:
            heapq.nlargest(10, graph.get_all_activations().items(), key=by_score)
        return _now_ns() - t0

    def bulk() -> int:
        fresh = graph_mod.MemoryGraph(embedder=table.__getitem__)
        add = fresh.add_memory
        t0 = _now_ns()
        for i, (k, v) in enumerate(zip(w.keys, w.values)):
            add(k, "fact", v, w.unit(i), created_tick=i * MD_TICKS // n)
        return _now_ns() - t0

    lib.add("insert", w.fast, insert, "MemoryGraph.add_memory(id, 'fact', content, impact, created_tick)")
    lib.add("read", w.fast, read, "MemoryGraph.get_node(id) (a copy of its attributes)")
    lib.add(
        "top10",
        w.linear,
        top10,
        "heapq.nlargest(10, get_all_activations().items()) (composed: no top-k call)",
    )
    lib.add("bulk", 1, bulk, "n x add_memory() into a new MemoryGraph (no bulk insert in it)")
    lib.na["prune"] = (
        "MemoryGraph has no delete or prune: faded memories stay, with a low activation "
        "(its SQLite MemoryStore deletes one id at a time)"
    )
    lib.na["load"] = lib.na["load_file"] = "no export or import for MemoryGraph; its SQLite MemoryStore is durable"
    lib.notes.append(
        f"memory-decay: activations decay eagerly, one DecayEngine.tick() at a time; the workload's n inserts "
        f"span {MD_TICKS} ticks"
    )
    return lib


# -- driving ----------------------------------------------------------------------


def default_ops(n: int, quick: bool = False) -> tuple[int, int]:
    """Operations per sample: (cheap operations, O(n) operations)."""
    fast = 500 if quick else 2000
    linear = max(1, min(5 if quick else 20, (50_000 if quick else 200_000) // n))
    return fast, linear


def build(
    w: Workload, only: set[str], agent: tuple[dict[str, ModuleType] | None, str | None, str | None]
) -> tuple[list[Library], list[str]]:
    """Every library that runs at this size, and notes on those skipped."""
    libraries = [lethe_library(w)]
    notes: list[str] = []
    modules, agent_version, agent_note = agent
    builders: list[tuple[str, str, Callable[[], Library]]] = [
        ("fademem", "fademem", lambda: fademem_library(w)),
        ("lethe-agent", "", lambda: lethe_agent_library(w, modules or {}, agent_version)),
        ("agentic-memory-ai", "agentic_memory", lambda: agentic_memory_library(w)),
        ("cognitive-memory", "cognitive_memory", lambda: cognitive_memory_library(w)),
        ("memory-decay", "memory_decay.graph", lambda: memory_decay_library(w)),
    ]
    for name, module, make in builders:
        if name not in only:
            continue
        if name == "lethe-agent" and modules is None:
            notes.append(agent_note or "lethe-agent: skipped")
            continue
        if module and suite.optional(module) is None:
            notes.append(f"{name} not installed or failed to import: skipped")
            continue
        try:
            lib = make()
            for case in lib.cases:  # the probe: fail here, not mid-run (it is the warm-up too)
                case.run()
        except Exception as exc:
            notes.append(f"{name} could not run ({exc!r}): skipped")
            continue
        libraries.append(lib)
    for case in libraries[0].cases:
        case.run()
    return libraries, notes


def run_size(
    n: int,
    *,
    rounds: int,
    ops: tuple[int, int],
    only: set[str],
    agent: Any,
    progress: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Build every library at size ``n``, then run all their cases interleaved, ``rounds`` times."""
    fast, linear = ops
    directory = Path(tempfile.mkdtemp(prefix="lethe-peers-"))
    loop = asyncio.new_event_loop()
    try:
        w = Workload(n, fast, linear, directory, loop)
        if progress:
            progress(f"n={n}: building (ops/sample: {fast} cheap, {linear} O(n))")
        libraries, notes = build(w, only, agent)
        gc.collect()
        cases = [c for lib in libraries for c in lib.cases]
        setup = suite.SizeSetup(n, cases=[suite.Case(f"{c.library}.{c.op}", c.library, c.ops, c.run) for c in cases])
        measured = suite.run_size(setup, rounds, warmup=False, progress=progress)
    finally:
        loop.close()
        shutil.rmtree(directory, ignore_errors=True)
    out: dict[str, Any] = {"ops": {"cheap": fast, "linear": linear}, "libraries": {}}
    for lib in libraries:
        entry: dict[str, Any] = {"version": lib.version, "cases": {}, "na": dict(lib.na), "notes": lib.notes}
        for c in lib.cases:
            m = measured[f"{c.library}.{c.op}"]
            entry["cases"][c.op] = {k: m[k] for k in ("median_ns", "min_ns", "max_ns", "samples_ns", "ops")}
            entry["cases"][c.op]["api"] = c.api
        if lib.prune is not None:
            p = lib.prune
            entry["prune"] = {
                "threshold": p.threshold,
                "expected": p.expected,
                "size": n,
                "reported": p.reported,
                "actual": p.actual,
                "about_a_third": all(abs(a - p.expected) <= max(2, n // 50) for a in p.actual),
                "as_reported": p.reported == p.actual,
            }
        out["libraries"][lib.name] = entry
    out["ratios"] = size_ratios(out)
    return out, notes


def size_ratios(size: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each library's median over lethe's, per operation (above 1: slower than lethe)."""
    libs = size["libraries"]
    lethe_cases = libs["lethe"]["cases"]
    ratios: dict[str, dict[str, float]] = {}
    for name, lib in libs.items():
        for op, case in lib["cases"].items():
            ref = "insert" if op == "insert_scan" else op
            if ref in lethe_cases:
                ratios.setdefault(name, {})[op] = case["median_ns"] / lethe_cases[ref]["median_ns"]
    return ratios


#: The targets this comparison checks: (label, lethe case, peers' operation, which peers, bound on lethe / peer).
TARGETS: list[tuple[str, str, str, tuple[str, ...] | None, float]] = [
    ("evict() vs the fastest peer's threshold prune", "prune", "prune", None, 1.0),
    ("put_many vs the fastest peer's bulk insert", "bulk", "bulk", None, 1.0),
    ("from_dict vs the fastest peer's bulk insert", "load", "bulk", None, 1.0),
    ("put vs lethe-agent's remember", "insert", "insert", ("lethe-agent",), 1.5),
    ("get vs lethe-agent's keyed read", "read", "read", ("lethe-agent",), 1.5),
]


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """lethe's median over the fastest peer's (or the named peer's), per target and size."""
    rows = []
    for size, data in result["sizes"].items():
        libs = data["libraries"]
        for label, ours, theirs, among, bound in TARGETS:
            peers = [
                (lib["cases"][theirs]["median_ns"], name)
                for name, lib in libs.items()
                if name != "lethe" and theirs in lib["cases"] and (among is None or name in among)
            ]
            value = peer = None
            if peers and ours in libs["lethe"]["cases"]:
                fastest, peer = min(peers)
                value = libs["lethe"]["cases"][ours]["median_ns"] / fastest
            rows.append(
                {
                    "label": label,
                    "n": int(size),
                    "lethe": ours,
                    "peer": peer,
                    "peer_op": theirs,
                    "value": value,
                    "target": bound,
                    "met": None if value is None else value <= bound,
                }
            )
    return rows


def run_peers(
    sizes: Iterable[int],
    *,
    rounds: int = 5,
    quick: bool = False,
    ops: tuple[int, int] | None = None,
    only: Iterable[str] = LIBRARIES,
    lethe_agent_path: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the comparison; returns the JSON-ready result (see :func:`report`)."""
    chosen = set(only)
    unknown = chosen - set(LIBRARIES)
    if unknown:
        raise ValueError(f"unknown libraries: {sorted(unknown)} (known: {', '.join(LIBRARIES)})")
    agent = load_lethe_agent(lethe_agent_path) if "lethe-agent" in chosen else (None, None, None)
    result: dict[str, Any] = {
        "meta": {
            "python": sys.version.split()[0],
            "implementation": platform.python_implementation(),
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "rounds": rounds,
            "gc": "enabled",
            "timer": "time.perf_counter_ns",
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "lethe": lethe.__version__,
            "git": run.git_state(),
        },
        "sizes": {},
        "notes": [SHADOW_NOTE] if SHADOW_NOTE else [],
    }
    t_start = time.perf_counter()
    for n in sizes:
        size_ops = ops if ops is not None else default_ops(n, quick)
        data, notes = run_size(n, rounds=rounds, ops=size_ops, only=chosen, agent=agent, progress=progress)
        result["sizes"][str(n)] = data
        result["notes"] += [note for note in notes if note not in result["notes"]]
        gc.collect()
    result["meta"]["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    result["meta"]["versions"] = {
        name: lib["version"] for data in result["sizes"].values() for name, lib in data["libraries"].items()
    }
    result["targets"] = targets(result)
    return result


# -- report ---------------------------------------------------------------------------


def _columns(data: dict[str, Any]) -> list[str]:
    return [name for name in LIBRARIES if name in data["libraries"]]


def size_tables(n: str, data: dict[str, Any]) -> str:
    """Two tables for one size: median per op with the ratio to lethe, then min to max."""
    names = _columns(data)
    libs = data["libraries"]
    medians, spreads = [], []
    for op, label in OPERATIONS:
        if not any(op in libs[name]["cases"] for name in names):
            continue
        cells, ranges = [], []
        for name in names:
            case = libs[name]["cases"].get(op)
            if case is None:
                mark = "n/a" if op in libs[name]["na"] else "—"
                cells.append(mark)
                ranges.append(mark)
                continue
            ratio = data["ratios"].get(name, {}).get(op)
            extra = f" ({run.fmt_ratio(ratio)})" if ratio is not None and name != "lethe" else ""
            cells.append(run.fmt_ns(case["median_ns"]) + extra)
            ranges.append(f"{run.fmt_ns(case['min_ns'])} to {run.fmt_ns(case['max_ns'])}")
        medians.append([label, *cells])
        spreads.append([label, *ranges])
    head = [f"n={int(n):,}", *names]
    prunes = [
        f"{name}: {'/'.join(f'{a:,}' for a in sorted(set(lib['prune']['actual'])))} of {int(n):,} removed"
        + ("" if lib["prune"]["about_a_third"] and lib["prune"]["as_reported"] else " (NOT as expected)")
        for name, lib in libs.items()
        if "prune" in lib
    ]
    return "\n".join(
        [
            f"Median per operation (ratio: the library's median over lethe's), n={int(n):,}:",
            "",
            run.table(head, medians),
            "",
            "Min to max over rounds:",
            "",
            run.table(head, spreads),
            "",
            "Prune: " + "; ".join(prunes) + ".",
        ]
    )


def report(result: dict[str, Any]) -> str:
    meta = result["meta"]
    parts = [
        f"Python {meta['python']} ({meta['implementation']}) on {meta['platform']}, {meta['cpu_count']} CPUs; "
        f"{meta['rounds']} rounds, GC {meta['gc']}, {meta['timer']}; elapsed {meta.get('elapsed_s', '?')} s",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()),
    ]
    for n, data in result["sizes"].items():
        parts += ["", size_tables(n, data)]
    rows = [
        [
            r["label"],
            f"{r['n']:,}",
            r["peer"] or "—",
            run.fmt_ratio(r["value"]),
            f"<= {r['target']:g}x",
            {True: "met", False: "NOT met", None: "not measured"}[r["met"]],
        ]
        for r in result["targets"]
    ]
    parts += [
        "",
        "Targets (lethe's median over the peer's):",
        "",
        run.table(["target", "n", "peer", "value", "bound", "status"], rows),
    ]
    last = list(result["sizes"].values())[-1] if result["sizes"] else {"libraries": {}}
    parts += ["", "What was measured:"]
    for name, lib in last["libraries"].items():
        for op, case in lib["cases"].items():
            parts.append(f"- {name} {op}: {case['api']}")
        reasons: dict[str, list[str]] = {}
        for op, why in lib["na"].items():
            reasons.setdefault(why, []).append(op)
        parts += [f"- {name} {', '.join(ops)}: n/a, {why}" for why, ops in reasons.items()]
        parts += [f"- {note}" for note in lib["notes"]]
    if result["notes"]:
        parts += ["", "Notes:"] + [f"- {note}" for note in result["notes"]]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=None, help="comma-separated sizes (default 10000,100000)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per size (default 5; 2 with --quick)")
    parser.add_argument("--quick", action="store_true", help="1k and 10k, 2 rounds, fewer operations per sample")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the full result as JSON")
    parser.add_argument("--ops", default=None, help="operations per sample as CHEAP,LINEAR (default: by size)")
    parser.add_argument("--only", default=None, help=f"comma-separated libraries (default all: {','.join(LIBRARIES)})")
    parser.add_argument(
        "--lethe-agent-path",
        default=None,
        metavar="DIR",
        help="where lethe-agent was installed apart (pip install --no-deps --target DIR lethe-agent)",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ("1000,10000" if args.quick else "10000,100000")).split(",") if s.strip()]
    rounds = args.rounds if args.rounds is not None else (2 if args.quick else 5)
    ops = None
    if args.ops:
        cheap, linear = (int(x) for x in args.ops.split(","))
        ops = (cheap, linear)
    only = [s.strip() for s in args.only.split(",")] if args.only else list(LIBRARIES)
    if "lethe" not in only:
        only.insert(0, "lethe")  # the reference of every ratio

    def progress(msg: str) -> None:
        print(f"[peers] {msg}", file=sys.stderr, flush=True)

    result = run_peers(
        sizes,
        rounds=rounds,
        quick=args.quick,
        ops=ops,
        only=only,
        lethe_agent_path=args.lethe_agent_path,
        progress=progress,
    )
    print(report(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
        progress(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
