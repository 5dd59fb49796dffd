"""Measurement functions for the lethe benchmark suite (driven by ``run.py``).

Every benchmark is a :class:`Case`: a callable that performs ``ops``
operations on structures built beforehand and returns the elapsed
nanoseconds of that loop alone (``time.perf_counter_ns``; setup, such as
rewinding the fake clock or copying a dict, is outside the timed region).
:func:`run_suite` builds every case for one size, then runs all of them once
per round, rotating their order each round so that machine noise lands on
every competitor alike, and keeps one per-op sample per round.  The garbage
collector stays on throughout: it is part of the cost a caller pays.

Competitors that are not installed (the ``bench`` extras) are skipped with a
note, so the lethe-only measurements run with nothing but the standard library.
"""

from __future__ import annotations

import copy
import gc
import heapq
import importlib
import importlib.metadata
import os
import platform
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from itertools import islice
from operator import itemgetter
from typing import Any

import lethe
from lethe import Entry, ManualClock, Memory
from lethe._core.map import PersistentMap
from lethe.ranking import SCAN

DECAYS = ("exponential", "actr")
#: Models indexed by group (``rank_key``): each measured against the same function behind a callable (a scan).
GROUPED = ("power_law", "soft_floor", "access_weighted", "stability_exponential")
#: Models indexed by score bounds (``lethe.ranking._bounded``), measured against their scan; their indexed
#: cases are :func:`lethe_cases`' own (the same memory).
BOUNDED = ("actr",)
START = datetime(2026, 1, 1, tzinfo=timezone.utc)
STEP = timedelta(seconds=1)
#: The first clock reading of a benchmark (a reading moves the clock on by STEP after it).
FIRST = START + STEP
# The base memories are built with one clock step per put, so n entries span
# n seconds; the half-life is a sixth of that, so the oldest entries of every
# size have decayed through ~6 half-lives and ``evict()`` has real work to do.
SPAN_HALF_LIVES = 6
VALUE = "value"  # one shared object: memory figures count structure, not payloads

_now_ns = time.perf_counter_ns


def fake_clock() -> ManualClock:
    """A deterministic clock: each reading is ``STEP`` later than the last, the first ``STEP`` after ``START``."""
    return ManualClock(FIRST, step=STEP)


@dataclass
class Case:
    """One benchmark: ``run()`` performs ``ops`` operations and returns elapsed ns."""

    name: str
    group: str
    ops: int
    run: Callable[[], int]
    description: str = ""


@dataclass
class SizeSetup:
    """Everything built for one size: the cases, memory figures, and notes."""

    n: int
    cases: list[Case] = field(default_factory=list)
    memory: dict[str, float] = field(default_factory=dict)
    tracked: dict[str, float] = field(default_factory=dict)  # GC-tracked objects per entry
    notes: list[str] = field(default_factory=list)


def keys_for(n: int, prefix: str = "k") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def importance_of(i: int) -> float:
    return 0.5 + (i % 4) * 0.5


def half_life_for(n: int) -> timedelta:
    return STEP * n / SPAN_HALF_LIVES


def build_memory(n: int, decay: str, clock: ManualClock, max_entries: int, keys: list[str]) -> Memory[Any, Any]:
    clock.set(FIRST)
    mem: Memory[Any, Any] = Memory(max_entries=max_entries, decay_fn=decay, half_life=half_life_for(n), clock_fn=clock)
    put = Memory.put
    for i, k in enumerate(keys):
        mem = put(mem, VALUE, key=k, importance=importance_of(i))
    return mem


def optional(module: str) -> Any | None:
    """Import ``module``, or None when it is not installed or fails to import."""
    try:
        return importlib.import_module(module)
    except Exception:
        return None


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def gc_off(run: Callable[[], int]) -> Callable[[], int]:
    """A variant of ``run`` with the garbage collector off: shows how much of a cost is GC."""

    def wrapped() -> int:
        gc.disable()
        try:
            return run()
        finally:
            gc.enable()

    return wrapped


# -- lethe -------------------------------------------------------------------


def lethe_cases(n: int, decay: str, ops_fast: int, ops_slow: int, rng: random.Random) -> list[Case]:
    keys = keys_for(n)
    clock = fake_clock()
    # Room for every put of a sample: "below capacity" must never evict.
    below = build_memory(n, decay, clock, max(2 * n, n + ops_fast + ops_slow + 1), keys)
    built_at = clock.now  # the next reading
    full = below.__replace__(max_entries=n)
    new_keys = keys_for(max(ops_fast, ops_slow), "new")
    fast_new = new_keys[:ops_fast]
    sample = [keys[rng.randrange(n)] for _ in range(ops_fast)]
    slow_range = range(ops_slow)
    prefix = f"lethe.{decay}"
    # A sample of a few thousand puts rarely holds a full collection (one per ~n/4 new tracked
    # objects): n/2 puts take in their share, so the GC-on/off ratio is an amortized one.
    run_new = keys_for(max(n // 2, 1), "run")

    def put_below() -> int:
        clock.set(built_at)
        m = below
        t0 = _now_ns()
        for k in fast_new:
            m = m.put(VALUE, key=k)
        return _now_ns() - t0

    def put_run() -> int:
        clock.set(built_at)
        m = below
        t0 = _now_ns()
        for k in run_new:
            m = m.put(VALUE, key=k)
        return _now_ns() - t0

    def put_full() -> int:
        clock.set(built_at)
        m = full
        t0 = _now_ns()
        for k in fast_new:
            m = m.put(VALUE, key=k)
        return _now_ns() - t0

    def get() -> int:
        clock.set(built_at)
        m = below
        t0 = _now_ns()
        for k in sample:
            m, _e = m.get(k)
        return _now_ns() - t0

    def touch() -> int:
        clock.set(built_at)
        m = below
        t0 = _now_ns()
        for k in sample:
            m = m.touch(k)
        return _now_ns() - t0

    def peek() -> int:
        m = below
        t0 = _now_ns()
        for k in sample:
            m.peek(k)
        return _now_ns() - t0

    pairs = [(k, VALUE) for k in keys]
    empty: Memory[Any, Any] = Memory(max_entries=n, decay_fn=decay, half_life=half_life_for(n), clock_fn=clock)

    def put_many() -> int:
        clock.set(FIRST)
        t0 = _now_ns()
        empty.put_many(pairs)
        return _now_ns() - t0

    def put_chain() -> int:
        # One clock reading for the whole chain, as put_many makes: the same memory results.
        clock.step = timedelta(0)
        clock.set(START)
        m = empty
        t0 = _now_ns()
        for k in keys:
            m = m.put(VALUE, key=k)
        elapsed = _now_ns() - t0
        clock.step = STEP
        return elapsed

    def reader(method: Callable[[Memory[Any, Any]], object]) -> Callable[[], int]:
        def run() -> int:
            clock.set(built_at)
            m = below
            t0 = _now_ns()
            for _ in slow_range:
                method(m)
            return _now_ns() - t0

        return run

    return [
        Case(f"{prefix}.put_below", "lethe", ops_fast, put_below, "put a new key, below capacity"),
        Case(f"{prefix}.put_below.nogc", "lethe", ops_fast, gc_off(put_below), "put below capacity, GC off"),
        Case(f"{prefix}.put_run", "lethe", len(run_new), put_run, "n/2 chained puts below capacity"),
        Case(f"{prefix}.put_run.nogc", "lethe", len(run_new), gc_off(put_run), "n/2 chained puts, GC off"),
        # O(log n) with both models' indexes: as many puts per sample as the other writes.
        Case(f"{prefix}.put_full", "lethe", ops_fast, put_full, "put a new key at capacity (evicts one)"),
        Case(f"{prefix}.get", "lethe", ops_fast, get, "get (rehearses; returns new memory)"),
        Case(f"{prefix}.touch", "lethe", ops_fast, touch, "touch (rehearse)"),
        Case(f"{prefix}.peek", "lethe", ops_fast, peek, "peek (read only)"),
        Case(f"{prefix}.scored", "lethe", ops_slow, reader(Memory.scored), "scored(): all entries ranked"),
        Case(f"{prefix}.top10", "lethe", ops_slow, reader(lambda m: m.top(10)), "top(10)"),
        Case(f"{prefix}.active", "lethe", ops_slow, reader(Memory.active), "active()"),
        Case(f"{prefix}.evict", "lethe", ops_slow, reader(Memory.evict), "evict() (from the same base each time)"),
        Case(f"{prefix}.next_eviction", "lethe", ops_slow, reader(Memory.next_eviction), "next_eviction()"),
        Case(f"{prefix}.put_many", "lethe", n, put_many, "put_many of n pairs into an empty memory (per entry)"),
        Case(f"{prefix}.put_chain", "lethe", n, put_chain, "n chained puts into an empty memory (per entry)"),
    ]


def grouped_cases(n: int, decay: str, ops_slow: int, *, indexed_too: bool = True) -> list[Case]:
    """``put`` at capacity and ``top(10)`` of a model indexed by group (4 groups: the importances of
    :func:`build_memory`) or by bounds, and of a twin that scans: the same memory, its ranking
    swapped for the scan (so both score through the model's fast path), at n entries
    (``indexed_too=False``: the twin only)."""
    keys = keys_for(n)
    clock = fake_clock()
    indexed = build_memory(n, decay, clock, n, keys)
    built_at = clock.now
    scanned = copy.copy(indexed)
    Memory._ranking.__set__(scanned, SCAN)  # type: ignore[attr-defined]
    new_keys = keys_for(ops_slow, "new")
    slow_range = range(ops_slow)
    cases = []
    twins = ((f"lethe.{decay}", indexed), (f"scan.{decay}", scanned))
    for prefix, full in twins if indexed_too else twins[1:]:

        def put_full(full: Memory[Any, Any] = full) -> int:
            clock.set(built_at)
            m = full
            t0 = _now_ns()
            for k in new_keys:
                m = m.put(VALUE, key=k)
            return _now_ns() - t0

        def top10(full: Memory[Any, Any] = full) -> int:
            clock.set(built_at)
            t0 = _now_ns()
            for _ in slow_range:
                full.top(10)
            return _now_ns() - t0

        how = "indexed" if prefix.startswith("lethe") else "scanned (the same model, no index)"
        cases += [
            Case(f"{prefix}.put_full", "lethe", ops_slow, put_full, f"put a new key at capacity, {how}"),
            Case(f"{prefix}.top10", "lethe", ops_slow, top10, f"top(10), {how}"),
        ]
    return cases


TIED_HALF_LIFE = timedelta(hours=1)


def tied_cases(n: int, decay: str, ops_slow: int) -> list[Case]:
    """A memory of one tie group: n entries loaded with ``put_many`` at one clock reading, read under a frozen
    clock two half-lives later, when every entry scores exactly the eviction threshold (0.25)."""
    clock = ManualClock(START)  # frozen: every reading is the same instant until set
    loaded = Memory(
        max_entries=n,
        decay_fn=decay,
        half_life=TIED_HALF_LIFE,
        eviction_threshold=0.25,
        summarize_threshold=0.25,
        clock_fn=clock,
    ).put_many((k, VALUE) for k in keys_for(n))
    later = START + 2 * TIED_HALF_LIFE
    new_keys = keys_for(ops_slow, "new")
    slow_range = range(ops_slow)
    prefix = f"lethe.{decay}.tied"

    def put_full() -> int:
        clock.set(START)  # the frozen clock of the load: every put joins the tie group
        m = loaded
        t0 = _now_ns()
        for k in new_keys:
            m = m.put(VALUE, key=k)
        return _now_ns() - t0

    def reader(method: Callable[[Memory[Any, Any]], object]) -> Callable[[], int]:
        def run() -> int:
            clock.set(later)
            t0 = _now_ns()
            for _ in slow_range:
                method(loaded)
            return _now_ns() - t0

        return run

    return [
        Case(f"{prefix}.put_full", "lethe", ops_slow, put_full, "tie group: put at capacity, frozen clock"),
        Case(f"{prefix}.top10", "lethe", ops_slow, reader(lambda m: m.top(10)), "tie group: top(10)"),
        Case(f"{prefix}.iter10", "lethe", ops_slow, reader(lambda m: list(islice(m, 10))), "tie group: first 10"),
        Case(f"{prefix}.evict", "lethe", ops_slow, reader(Memory.evict), "tie group at the threshold: evict()"),
        Case(f"{prefix}.next_eviction", "lethe", ops_slow, reader(Memory.next_eviction), "tie group: next_eviction()"),
    ]


def lethe_memory_per_entry(n: int, decay: str) -> float:
    """Bytes per entry held by a memory of ``n`` entries (tracemalloc, keys excluded)."""
    keys = keys_for(n)
    clock = fake_clock()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        mem = build_memory(n, decay, clock, n, keys)
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    del mem
    return used / n


def tracked_per_entry(n: int, build: Callable[[], object]) -> float:
    """GC-tracked objects that ``build()``'s result adds, per entry (after a full collection,
    so tuples and dicts the collector untracks are not counted)."""
    gc.collect()
    before = len(gc.get_objects())
    built = build()
    gc.collect()
    added = len(gc.get_objects()) - before
    del built
    return added / n


def _map_memory_per_entry(n: int, build: Callable[[list[str]], object]) -> float:
    keys = keys_for(n)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        obj = build(keys)
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    del obj
    return used / n


def _bare_entries(keys: list[str]) -> object:
    """The entries alone, in a list: what a memory of them holds at the least."""
    out = []
    for i, k in enumerate(keys):
        t = START + STEP * i
        out.append(Entry(key=k, value=VALUE, inserted_at=t, last_accessed_at=t, seq=i))
    return out


def _build_persistent(keys: list[str]) -> object:
    m: PersistentMap[str, str] = PersistentMap()
    for k in keys:
        m = m.set(k, VALUE)
    return m


# -- maps --------------------------------------------------------------------


def _persistent_map_cases(
    label: str, group: str, base: Any, n: int, keys: list[str], ops_fast: int, rng: random.Random
) -> list[Case]:
    new_keys = keys_for(ops_fast, "new")
    sample = [keys[rng.randrange(n)] for _ in range(ops_fast)]

    def set_() -> int:
        m = base
        t0 = _now_ns()
        for k in new_keys:
            m = m.set(k, VALUE)
        return _now_ns() - t0

    def get() -> int:
        m = base
        t0 = _now_ns()
        for k in sample:
            m.get(k)
        return _now_ns() - t0

    return [
        Case(f"{label}.set", group, ops_fast, set_, f"{label}: set a new key (returns a new map)"),
        Case(f"{label}.get", group, ops_fast, get, f"{label}: get a present key"),
        Case(f"{label}.set.nogc", group, ops_fast, gc_off(set_), f"{label}: set a new key, GC off"),
    ]


def map_cases(n: int, ops_fast: int, rng: random.Random) -> list[Case]:
    keys = keys_for(n)
    return _persistent_map_cases("map", "map", _build_persistent(keys), n, keys, ops_fast, rng)


def dict_cases(n: int, ops_fast: int, ops_slow: int, rng: random.Random) -> list[Case]:
    keys = keys_for(n)
    base = dict.fromkeys(keys, VALUE)
    new_keys = keys_for(ops_fast, "new")
    cow_keys = new_keys[:ops_slow]
    sample = [keys[rng.randrange(n)] for _ in range(ops_fast)]

    def set_() -> int:
        d = base.copy()
        t0 = _now_ns()
        for k in new_keys:
            d[k] = VALUE
        return _now_ns() - t0

    def get() -> int:
        d = base
        t0 = _now_ns()
        for k in sample:
            d.get(k)
        return _now_ns() - t0

    def cow_set() -> int:
        d = base
        t0 = _now_ns()
        for k in cow_keys:
            d = d.copy()
            d[k] = VALUE
        return _now_ns() - t0

    return [
        Case("dict.set", "reference", ops_fast, set_, "dict: set a new key in place"),
        Case("dict.get", "reference", ops_fast, get, "dict: get a present key"),
        Case("dict.cow_set", "reference", ops_slow, cow_set, "dict: copy, then set (copy-on-write)"),
    ]


def pmap_cases(n: int, ops_fast: int, rng: random.Random) -> tuple[list[Case], str | None]:
    mod = optional("pyrsistent")
    if mod is None:
        return [], "pyrsistent not installed: pmap skipped"
    keys = keys_for(n)
    base = mod.pmap(dict.fromkeys(keys, VALUE))
    return _persistent_map_cases("pmap", "reference", base, n, keys, ops_fast, rng), None


def immutables_cases(n: int, ops_fast: int, rng: random.Random) -> tuple[list[Case], str | None]:
    mod = optional("immutables")
    if mod is None:
        return [], "immutables not installed or failed to import: immutables.Map skipped"
    keys = keys_for(n)
    base = mod.Map(dict.fromkeys(keys, VALUE))
    return _persistent_map_cases("immutables", "reference", base, n, keys, ops_fast, rng), None


def cachetools_cases(n: int, ops_fast: int) -> tuple[list[Case], str | None]:
    mod = optional("cachetools")
    if mod is None:
        return [], "cachetools not installed: LRUCache/TTLCache/LFUCache skipped"
    keys = keys_for(n)
    cases = []
    for cls_name in ("LRUCache", "TTLCache", "LFUCache"):
        cls = getattr(mod, cls_name)
        cache = cls(maxsize=n, ttl=1e9) if cls_name == "TTLCache" else cls(maxsize=n)
        for k in keys:
            cache[k] = VALUE
        counter = [0]

        def put_full(cache: Any = cache, counter: list[int] = counter) -> int:
            # Fresh keys every sample, so every set evicts one entry.
            start = counter[0]
            counter[0] = start + ops_fast
            batch = [f"new{i}" for i in range(start, start + ops_fast)]
            for k in batch:
                hash(k)  # str hashes are cached: keep hashing out of the timed loop, as for the others
            t0 = _now_ns()
            for k in batch:
                cache[k] = VALUE
            return _now_ns() - t0

        cases.append(
            Case(f"cachetools.{cls_name}.put_full", "reference", ops_fast, put_full, f"{cls_name}: set at capacity")
        )
    return cases, None


def memory_decay_cases(n: int, ops_fast: int, ops_slow: int) -> tuple[list[Case], str | None]:
    """memory-decay's MemoryGraph + DecayEngine, fed precomputed vectors (runs offline)."""
    graph_mod = optional("memory_decay.graph")
    decay_mod = optional("memory_decay.decay")
    np = optional("numpy")
    if graph_mod is None or decay_mod is None or np is None:
        return [], "memory-decay not installed or failed to import: MemoryGraph skipped"
    try:
        dim = 8
        add_ops = min(ops_fast, 500)
        vec_rng = np.random.default_rng(0)
        texts = keys_for(n) + keys_for(add_ops, "new")
        table = dict(zip(texts, vec_rng.standard_normal((len(texts), dim), dtype=np.float32)))
        graph = graph_mod.MemoryGraph(embedder=table.__getitem__)
        for i, text in enumerate(texts[:n]):
            graph.add_memory(text, "fact", text, importance_of(i) / 2, created_tick=i)
        engine = decay_mod.DecayEngine(graph=graph)
        engine.tick()  # builds the engine's arrays once
        new_ids = texts[n:]
        tick_ops = max(1, ops_slow // 5)
        slow_range = range(ops_slow)
        tick_range = range(tick_ops)
        top = heapq.nlargest
        by_score = itemgetter(1)

        def add() -> int:
            t0 = _now_ns()
            for i, text in enumerate(new_ids):
                graph.add_memory(text, "fact", text, 0.5, created_tick=n + i)
            elapsed = _now_ns() - t0
            graph._graph.remove_nodes_from(new_ids)
            return elapsed

        def tick() -> int:
            t0 = _now_ns()
            for _ in tick_range:
                engine.tick()
            return _now_ns() - t0

        def top10() -> int:
            t0 = _now_ns()
            for _ in slow_range:
                top(10, graph.get_all_activations().items(), key=by_score)
            return _now_ns() - t0

        add()  # probe: fail here, not mid-run
    except Exception as exc:
        return [], f"memory-decay MemoryGraph could not run ({exc!r}): skipped"
    return [
        Case("memory_decay.add", "reference", add_ops, add, "MemoryGraph.add_memory (precomputed vectors)"),
        Case("memory_decay.tick", "reference", tick_ops, tick, "DecayEngine.tick() over the whole graph"),
        Case("memory_decay.top10", "reference", ops_slow, top10, "get_all_activations() + heapq.nlargest(10)"),
    ], None


# -- floors ------------------------------------------------------------------


class CustomDecay:
    """A user's decay function the memory cannot index (no ``decay_rate``, ``rank_key`` or
    bounds): exponential in the time since the last access, written as users write one."""

    def __init__(self, half_life: timedelta) -> None:
        self.half_life = half_life
        self._seconds = half_life.total_seconds()

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        return float(0.5 ** ((now - entry.last_accessed_at).total_seconds() / self._seconds))


def custom_cases(n: int, ops_slow: int) -> list[Case]:
    """The scan of a model with no index: ``top(10)`` and ``scored()`` of a memory whose decay
    function is :class:`CustomDecay`, against the same function in a bare score loop over a list
    of the same entries (+ ``heapq.nlargest`` / ``sorted``): the least any scan can cost."""
    clock = fake_clock()
    clock.set(FIRST)
    fn = CustomDecay(half_life_for(n))
    mem: Memory[Any, Any] = Memory(max_entries=n, decay_fn=fn, clock_fn=clock)
    for i, k in enumerate(keys_for(n)):
        mem = mem.put(VALUE, key=k, importance=importance_of(i))
    built_at = clock.now
    entries = list(mem._entries.values())
    score, nlargest = fn.score, heapq.nlargest
    slow_range = range(ops_slow)

    def top10() -> int:
        clock.set(built_at)
        t0 = _now_ns()
        for _ in slow_range:
            mem.top(10)
        return _now_ns() - t0

    def scored() -> int:
        clock.set(built_at)
        t0 = _now_ns()
        for _ in slow_range:
            mem.scored()
        return _now_ns() - t0

    def floor_top10() -> int:
        t0 = _now_ns()
        for _ in slow_range:
            s = [score(e, built_at) * e.importance for e in entries]
            nlargest(10, range(len(s)), key=s.__getitem__)
        return _now_ns() - t0

    def floor_sorted() -> int:
        t0 = _now_ns()
        for _ in slow_range:
            s = [score(e, built_at) * e.importance for e in entries]
            order = sorted(range(len(s)), key=s.__getitem__, reverse=True)
            [(entries[i], s[i]) for i in order]
        return _now_ns() - t0

    return [
        Case("lethe.custom.top10", "lethe", ops_slow, top10, "top(10) of a custom (unindexed) decay function: a scan"),
        Case("lethe.custom.scored", "lethe", ops_slow, scored, "scored() of a custom decay function"),
        Case("floor.custom_nlargest10", "floor", ops_slow, floor_top10, "the same function's score loop + nlargest"),
        Case("floor.custom_sorted", "floor", ops_slow, floor_sorted, "the same function's score loop + sorted"),
    ]


def floor_cases(n: int, ops_slow: int) -> list[Case]:
    """The least a pure-Python ranking can cost: plain tuples, one list comprehension."""
    rng = random.Random(1)
    half_life = float(n) / SPAN_HALF_LIVES
    now = float(n)
    items = [(f"k{i}", float(i), importance_of(i)) for i in range(n)]
    rng.shuffle(items)
    scores = [imp * 0.5 ** ((now - t) / half_life) for _, t, imp in items]
    slow_range = range(ops_slow)
    nlargest = heapq.nlargest

    def score_sorted() -> int:
        t0 = _now_ns()
        for _ in slow_range:
            s = [imp * 0.5 ** ((now - t) / half_life) for _, t, imp in items]
            order = sorted(range(len(s)), key=s.__getitem__, reverse=True)
            [(items[i], s[i]) for i in order]
        return _now_ns() - t0

    def top10() -> int:
        t0 = _now_ns()
        for _ in slow_range:
            nlargest(10, scores)
        return _now_ns() - t0

    def score_nlargest() -> int:
        t0 = _now_ns()
        for _ in slow_range:
            s = [imp * 0.5 ** ((now - t) / half_life) for _, t, imp in items]
            nlargest(10, range(len(s)), key=s.__getitem__)
        return _now_ns() - t0

    def scan_min() -> int:
        t0 = _now_ns()
        for _ in slow_range:
            s = [imp * 0.5 ** ((now - t) / half_life) for _, t, imp in items]
            min(range(len(s)), key=s.__getitem__)
        return _now_ns() - t0

    return [
        Case("floor.score_sorted", "floor", ops_slow, score_sorted, "score loop + sorted (all ranked)"),
        Case("floor.nlargest10", "floor", ops_slow, top10, "precomputed float scores + heapq.nlargest(10)"),
        Case("floor.score_nlargest10", "floor", ops_slow, score_nlargest, "score loop + heapq.nlargest(10)"),
        Case("floor.scan_min", "floor", ops_slow, scan_min, "O(n) scan: score loop + min (index-free eviction)"),
    ]


# -- driving -----------------------------------------------------------------


def setup_size(
    n: int,
    *,
    ops_fast: int,
    ops_slow: int,
    references: bool = True,
    decays: Iterable[str] = DECAYS,
    measure_memory: bool = True,
    grouped: bool = True,
) -> SizeSetup:
    """Build every case for size ``n`` (and measure memory per entry)."""
    rng = random.Random(n)
    setup = SizeSetup(n)
    for decay in decays:
        setup.cases += lethe_cases(n, decay, ops_fast, ops_slow, rng)
        if decay == DECAYS[0]:  # indexed: the tie group is its worst layout (a scan does not care)
            setup.cases += tied_cases(n, decay, ops_slow)
        if measure_memory:
            setup.memory[f"lethe.{decay}"] = lethe_memory_per_entry(n, decay)
        if measure_memory and decay == DECAYS[0]:
            setup.memory["entries"] = _map_memory_per_entry(n, _bare_entries)
        if measure_memory:
            keys = keys_for(n)
            setup.tracked[f"lethe.{decay}"] = tracked_per_entry(
                n, lambda: build_memory(n, decay, fake_clock(), n, keys)  # noqa: B023 (called at once)
            )
    if measure_memory:
        keys = keys_for(n)
        setup.tracked["entries"] = tracked_per_entry(n, lambda: _bare_entries(keys))
    if grouped:
        for decay in GROUPED:
            setup.cases += grouped_cases(n, decay, ops_slow)
        for decay in BOUNDED:
            if decay in decays:
                setup.cases += grouped_cases(n, decay, ops_slow, indexed_too=False)
    setup.cases += map_cases(n, ops_fast, rng)
    setup.cases += dict_cases(n, ops_fast, ops_slow, rng)
    setup.cases += floor_cases(n, ops_slow)
    setup.cases += custom_cases(n, ops_slow)
    if measure_memory:
        setup.memory["map"] = _map_memory_per_entry(n, _build_persistent)
        setup.memory["dict"] = _map_memory_per_entry(n, lambda ks: dict.fromkeys(ks, VALUE))
    if not references:
        return setup
    for built, note in (
        pmap_cases(n, ops_fast, rng),
        immutables_cases(n, ops_fast, rng),
        cachetools_cases(n, ops_fast),
        memory_decay_cases(n, ops_fast, ops_slow),
    ):
        setup.cases += built
        if note:
            setup.notes.append(note)
    if measure_memory:
        pyr = optional("pyrsistent")
        if pyr is not None:
            setup.memory["pmap"] = _map_memory_per_entry(n, lambda ks: pyr.pmap(dict.fromkeys(ks, VALUE)))
        imm = optional("immutables")
        if imm is not None:
            setup.memory["immutables"] = _map_memory_per_entry(n, lambda ks: imm.Map(dict.fromkeys(ks, VALUE)))
    return setup


def default_ops(n: int, quick: bool = False) -> tuple[int, int]:
    """Operations per sample: (cheap O(log n) ops, O(n) ops)."""
    fast = 500 if quick else 2000
    slow = max(2 if quick else 5, min(50 if quick else 100, (100_000 if quick else 500_000) // n))
    return fast, slow


def summarize(samples: list[float]) -> dict[str, float]:
    return {"median_ns": statistics.median(samples), "min_ns": min(samples), "max_ns": max(samples)}


def run_size(
    setup: SizeSetup, rounds: int, warmup: bool = True, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run every case of ``setup`` once per round, in a rotated order each round."""
    cases = setup.cases
    samples: dict[str, list[float]] = {c.name: [] for c in cases}
    gc.enable()
    if warmup:
        for case in cases:
            case.run()
    for r in range(rounds):
        shift = r % len(cases) if cases else 0
        order = cases[shift:] + cases[:shift]
        if r % 2:
            order.reverse()
        for case in order:
            samples[case.name].append(case.run() / case.ops)
        if progress:
            progress(f"n={setup.n}: round {r + 1}/{rounds} done")
    out: dict[str, Any] = {}
    for case in cases:
        out[case.name] = {
            **summarize(samples[case.name]),
            "samples_ns": samples[case.name],
            "ops": case.ops,
            "group": case.group,
            "description": case.description,
        }
    return out


def machine_info() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        # The lethe measured is the one imported (its distribution is lethe-decay; `lethe` on PyPI is another project).
        "versions": {
            "lethe": lethe.__version__,
            **{d: _version(d) for d in ("pyrsistent", "immutables", "cachetools", "memory-decay", "numpy")},
        },
    }


def run_suite(
    sizes: Iterable[int],
    *,
    rounds: int = 5,
    quick: bool = False,
    references: bool = True,
    decays: Iterable[str] = DECAYS,
    ops: tuple[int, int] | None = None,
    warmup: bool = True,
    measure_memory: bool = True,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the whole suite; returns the JSON-ready result (see ``run.py``)."""
    decays = tuple(decays)
    result: dict[str, Any] = {
        "meta": {
            **machine_info(),
            "rounds": rounds,
            "warmup": warmup,
            "gc": "enabled",
            "timer": "time.perf_counter_ns",
            "clock": f"fake: +{STEP.total_seconds():g} s per reading; half-life = n s / {SPAN_HALF_LIVES}",
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        },
        "sizes": {},
        "notes": [],
    }
    t_start = time.perf_counter()
    for n in sizes:
        fast, slow = ops if ops is not None else default_ops(n, quick)
        if progress:
            progress(f"n={n}: building (ops/sample: {fast} cheap, {slow} O(n))")
        setup = setup_size(
            n, ops_fast=fast, ops_slow=slow, references=references, decays=decays, measure_memory=measure_memory
        )
        for note in setup.notes:
            if note not in result["notes"]:
                result["notes"].append(note)
        cases = run_size(setup, rounds, warmup=warmup, progress=progress)
        result["sizes"][str(n)] = {
            "ops": {"cheap": fast, "linear": slow},
            "cases": cases,
            "memory_bytes_per_entry": setup.memory,
            "gc_objects_per_entry": setup.tracked,
        }
        del setup
        gc.collect()
    result["meta"]["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    result["ratios"] = ratios(result)
    return result


# -- ratios against the targets ---------------------------------------------

_CUSTOM_ROWS = (("top(10)", "top10", "nlargest", "nlargest10"), ("scored()", "scored", "sorted", "sorted"))

# (label, numerator, denominator, size, op, target); the ratio is num/den,
# except for "x faster" rows (op ">="), where it is den/num.
TARGETS: list[tuple[str, str, str, int, str, float]] = [
    ("internal map set vs pmap.set", "map.set", "pmap.set", 10_000, "<=", 0.5),
    ("internal map set vs pmap.set", "map.set", "pmap.set", 100_000, "<=", 0.5),
    ("internal map get vs pmap.get", "map.get", "pmap.get", 10_000, "<=", 0.5),
    ("internal map get vs pmap.get", "map.get", "pmap.get", 100_000, "<=", 0.5),
    ("put (below capacity) vs pmap.set", "lethe.exponential.put_below", "pmap.set", 10_000, "<=", 1.5),
    ("put (below capacity) vs pmap.set", "lethe.exponential.put_below", "pmap.set", 100_000, "<=", 0.7),
    ("get vs pmap.set", "lethe.exponential.get", "pmap.set", 10_000, "<=", 2.0),
    ("get vs pmap.set", "lethe.exponential.get", "pmap.set", 100_000, "<=", 1.0),
    ("touch vs pmap.set", "lethe.exponential.touch", "pmap.set", 10_000, "<=", 2.0),
    ("touch vs pmap.set", "lethe.exponential.touch", "pmap.set", 100_000, "<=", 1.0),
    ("n/2 puts: GC on vs off", "lethe.exponential.put_run", "lethe.exponential.put_run.nogc", 100_000, "<=", 1.3),
    ("put at capacity vs pmap.set", "lethe.exponential.put_full", "pmap.set", 100_000, "<=", 2.0),
    ("put at capacity: x faster than O(n) scan", "lethe.exponential.put_full", "floor.scan_min", 100_000, ">=", 500.0),
    ("put at capacity vs TTLCache", "lethe.exponential.put_full", "cachetools.TTLCache.put_full", 10_000, "<=", 3.0),
    ("top(10) vs nlargest floor", "lethe.exponential.top10", "floor.nlargest10", 100_000, "<=", 0.02),
    *(
        (f"{op} {decay}: x faster than its scan", f"lethe.{decay}.{op}", f"scan.{decay}.{op}", 100_000, ">=", 100.0)
        for decay in GROUPED
        for op in ("put_full", "top10")
    ),
    *(
        (f"{op} {decay}: x faster than its scan", f"lethe.{decay}.{op}", f"scan.{decay}.{op}", 100_000, ">=", 20.0)
        for decay in BOUNDED
        for op in ("put_full", "top10")
    ),
    ("scored() vs score loop + sorted", "lethe.exponential.scored", "floor.score_sorted", 10_000, "<=", 1.5),
    *(
        (f"{what} custom function vs its loop + {floor}", f"lethe.custom.{op}", f"floor.custom_{den}", n, "<=", 1.5)
        for what, op, floor, den in _CUSTOM_ROWS
        for n in (10_000, 100_000)
    ),
    ("top(10) ACTR vs score loop + nlargest", "lethe.actr.top10", "floor.score_nlargest10", 10_000, "<=", 1.5),
    ("top(10) ACTR vs score loop + nlargest", "lethe.actr.top10", "floor.score_nlargest10", 100_000, "<=", 1.5),
    ("active() ACTR vs score loop + sorted", "lethe.actr.active", "floor.score_sorted", 10_000, "<=", 1.5),
    ("active() ACTR vs score loop + sorted", "lethe.actr.active", "floor.score_sorted", 100_000, "<=", 1.5),
    ("put_many(n) vs n chained put", "lethe.exponential.put_many", "lethe.exponential.put_chain", 10_000, "<=", 0.33),
    ("put_many(n) vs n chained put", "lethe.exponential.put_many", "lethe.exponential.put_chain", 100_000, "<=", 0.33),
    ("building n entries vs memory-decay add", "lethe.exponential.put_many", "memory_decay.add", 10_000, "<=", 0.3),
    ("top(10) vs one memory-decay tick", "lethe.exponential.top10", "memory_decay.tick", 10_000, "<=", 0.02),
]


def ratios(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Same-run ratios of medians for every target, plus the actr variants (no target)."""
    rows = []
    specs = list(TARGETS)
    for label, num, den, size, op, _target in TARGETS:
        if num.startswith("lethe.exponential."):
            actr_den = den.replace(".exponential.", ".actr.")
            specs.append((label + " [actr]", num.replace(".exponential.", ".actr."), actr_den, size, op, float("nan")))
    for label, num, den, size, op, target in specs:
        cases = result["sizes"].get(str(size), {}).get("cases", {})
        value = None
        if num in cases and den in cases:
            a, b = cases[num]["median_ns"], cases[den]["median_ns"]
            value = b / a if op == ">=" else a / b
        has_target = target == target
        met = None
        if value is not None and has_target:
            met = value >= target if op == ">=" else value <= target
        rows.append(
            {
                "label": label,
                "numerator": num,
                "denominator": den,
                "n": size,
                "op": op,
                "target": target if has_target else None,
                "value": value,
                "met": met,
            }
        )
    memory = result["sizes"].get("100000", {}).get("memory_bytes_per_entry", {})
    for decay in DECAYS:
        value = None
        if f"lethe.{decay}" in memory and "entries" in memory:
            value = memory[f"lethe.{decay}"] / memory["entries"]
        target = 2.0 if decay == "exponential" else None
        rows.append(
            {
                "label": "bytes per entry vs bare Entry objects" + ("" if target else f" [{decay}]"),
                "numerator": f"memory: lethe.{decay}",
                "denominator": "memory: entries",
                "n": 100_000,
                "op": "<=",
                "target": target,
                "value": value,
                "met": None if value is None or target is None else value <= target,
            }
        )
    return rows
