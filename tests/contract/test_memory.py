"""The memory contract, run over every model in ``tests/_support.MODELS``.

Whatever the decay function: capacity is never exceeded and at capacity the
lowest-scored unpinned entry goes; every ranked read (``scored``, ``top``,
``top_scored``, iteration, ``above``, ``active``) equals a brute-force sort of
``score()``; old versions answer as they did; forecasts (``time_until``,
``next_eviction``) agree with the scores; ``to_dict`` -> JSON -> ``from_dict``
and pickle give the same memory; a hostile document is refused cleanly.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import Entry, ManualClock, Memory, MemoryFullError

from .._support import (
    DAY,
    HOUR,
    METADATA,
    MODEL_IDS,
    MODELS,
    START,
    US,
    Model,
    custom_decay,
    fake_clock,
    invariants,
)

#: The contract runs every property over ~30 models: a third of the profile's examples each.
#: Instants past 2**53 µs since the epoch (year 2255) are coarser than a microsecond in a float.
EXACT = datetime(1970, 1, 1, tzinfo=START.tzinfo) + timedelta(microseconds=2**53)
#: How many units in the last place a score may wobble about a threshold near a forecast crossing.
ULPS = 4
SOME = settings(max_examples=max(10, settings().max_examples // 3))

keys = st.one_of(st.integers(-3, 12), st.sampled_from(["a", "b", "c", "d"]))
importance = st.one_of(st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.floats(0.0, 3.0, allow_nan=False))
meta = st.integers(0, len(METADATA) - 1)
steps = st.one_of(st.floats(0.0, 5 * 3600.0, allow_nan=False), st.sampled_from([0.5, 86_400.0, 20 * 86_400.0]))

ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), keys, importance, st.booleans(), meta),
        st.tuples(st.just("auto"), importance, meta),
        st.tuples(st.just("get"), keys),
        st.tuples(st.just("touch"), keys, importance),
        st.tuples(st.just("update"), keys),
        st.tuples(st.just("pin"), keys),
        st.tuples(st.just("unpin"), keys),
        st.tuples(st.just("delete"), keys),
        st.tuples(st.just("evict")),
        st.tuples(st.just("summarize")),
        st.tuples(st.just("clear")),
        st.tuples(st.just("tick"), steps),
        st.tuples(st.just("tick"), steps),
    ),
    max_size=30,
)


def apply(mem: Memory[Any, Any], op: tuple[Any, ...], clock: ManualClock) -> Memory[Any, Any]:
    name = op[0]
    try:
        if name == "put":
            return mem.put(f"v{op[1]}", key=op[1], importance=op[2], pinned=op[3], metadata=METADATA[op[4]])
        if name == "auto":
            return mem.put("auto", importance=op[1], metadata=METADATA[op[2]])
        if name == "get":
            return mem.get(op[1])[0]
        if name == "touch":
            return mem.touch(op[1], importance=op[2])
        if name == "update":
            return mem.update(op[1], f"u{op[1]}")
        if name in ("pin", "unpin", "delete"):
            return getattr(mem, name)(op[1])  # type: ignore[no-any-return]
        if name == "evict":
            return mem.evict()[0]
        if name == "summarize":
            return mem.summarize()
        if name == "clear":
            return mem.clear()
        clock.advance(op[1])
        return mem
    except (KeyError, MemoryFullError):
        return mem


def snapshot(mem: Memory[Any, Any]) -> Any:
    return mem.to_dict(), mem.score_map()


def built(model: Model, clock: ManualClock, **kwargs: Any) -> Memory[Any, Any]:
    return Memory(decay_fn=model.make(), clock_fn=clock, **kwargs)


def restore_kwargs(model: Model) -> dict[str, Any]:
    """What ``from_dict`` needs besides the document: a custom function must be passed again."""
    return {} if model.builtin else {"decay_fn": custom_decay}


@pytest.mark.parametrize("model", MODELS, ids=MODEL_IDS)
class TestMemoryContract:
    @SOME
    @given(ops=ops, cap=st.integers(1, 6))
    def test_invariants_hold_after_any_sequence(self, model: Model, ops: list[tuple[Any, ...]], cap: int) -> None:
        clock = fake_clock()
        summarized: list[Any] = []

        def summarize(e: Entry[Any, Any]) -> str:
            summarized.append((e.key, e.value, e.seq))
            return f"s:{e.value}"

        mem = built(model, clock, max_entries=cap, summarize_fn=summarize)
        history: list[tuple[Memory[Any, Any], Any, datetime]] = []
        for op in ops:
            history.append((mem, snapshot(mem), clock.now))
            mem = apply(mem, op, clock)
            assert len(mem) <= cap
            invariants(mem)
            scored = mem.scored()
            assert all(s >= mem.eviction_threshold for e in mem.active() for s in [mem.score(e.key)])
            assert all(s == 1.0 for e, s in scored if e.pinned)
        # Old versions answer exactly as they did at their time.
        now = clock.now
        for old, snap, at in history:
            clock.set(at)
            assert snapshot(old) == snap
        clock.set(now)
        # summarize_fn ran at most once per (entry, value).
        assert len(summarized) == len(set(summarized))

    @SOME
    @given(
        imps=st.lists(importance, min_size=2, max_size=8),
        gaps=st.lists(st.sampled_from([0.0, 1.0, 60.0, 3600.0, 3 * 3600.0, 2 * 86_400.0]), min_size=2, max_size=8),
        pins=st.lists(st.booleans(), min_size=2, max_size=8),
        metas=st.lists(meta, min_size=2, max_size=8),
    )
    def test_capacity_evicts_the_lowest_scored_unpinned_entry(
        self, model: Model, imps: list[float], gaps: list[float], pins: list[bool], metas: list[int]
    ) -> None:
        clock = fake_clock()
        n = min(len(imps), len(gaps), len(pins), len(metas))
        reported: list[tuple[Entry[Any, Any], ...]] = []
        mem = built(model, clock, max_entries=n, on_evict=reported.append)
        for i in range(n):
            clock.advance(gaps[i])
            mem = mem.put(i, key=i, importance=imps[i], pinned=pins[i], metadata=METADATA[metas[i]])
        before = mem.scored()
        unpinned = [(e, s) for e, s in before if not e.pinned]
        try:
            after = mem.put("new", key="new")
        except MemoryFullError:
            assert not unpinned
            return
        lowest = min(s for _, s in unpinned)
        (gone,) = reported[0]
        assert mem.score(gone.key) == lowest
        assert gone.key not in after
        assert len(after) == n
        # Of equally scored entries, the one ranked last goes (the earliest put, as documented).
        assert gone.key == unpinned[-1][0].key
        invariants(after)

    @SOME
    @given(
        imps=st.lists(importance, min_size=1, max_size=6),
        metas=st.lists(meta, min_size=1, max_size=6),
        accesses=st.lists(st.floats(1.0, 7200.0), max_size=4),
        waits=st.lists(st.sampled_from([0.0, 1.0, 600.0, 50_000.0, 30 * 86_400.0]), min_size=2, max_size=5),
    )
    def test_scores_never_increase_without_rehearsal(
        self, model: Model, imps: list[float], metas: list[int], accesses: list[float], waits: list[float]
    ) -> None:
        clock = fake_clock()
        mem = built(model, clock)
        for i, (imp, m) in enumerate(zip(imps, metas)):
            mem = mem.put(i, key=i, importance=imp, metadata=METADATA[m])
        for wait in accesses:
            clock.advance(wait)
            mem = mem.touch(0)
        last = mem.score_map()
        for wait in waits:
            clock.advance(wait)
            now = mem.score_map()
            assert all(now[k] <= last[k] + 1e-12 for k in now)
            last = now

    @SOME
    @given(
        puts=st.lists(st.tuples(importance, meta, st.sampled_from([0, 1, 2, 3])), min_size=1, max_size=5),
        gaps=st.lists(st.sampled_from([0, 30, 3600, 86_400, 10 * 86_400]), min_size=1, max_size=4),
        level=st.sampled_from([0.05, 0.3, 0.5, 0.9]),
        evict_at=st.sampled_from([0.05, 0.3]),
    )
    def test_forecasts_agree_with_scores(
        self, model: Model, puts: list[tuple[float, int, int]], gaps: list[int], level: float, evict_at: float
    ) -> None:
        clock = fake_clock()
        mem = built(model, clock, eviction_threshold=evict_at, summarize_threshold=max(evict_at, 0.15))
        for i, (imp, m, kind) in enumerate(puts):
            ttl = 5 * 3600 if kind == 3 else None
            mem = mem.put(i, key=i, importance=imp, metadata=METADATA[m], pinned=kind == 2, ttl=ttl)
            clock.advance(gaps[i % len(gaps)])
            if kind == 1:
                mem = mem.touch(i)
        now = clock.now
        for key in list(mem.keys()):
            for t in (level, evict_at):
                wait = mem.time_until(key, t)
                if wait is None:
                    assert mem.peek(key).pinned or self._never_below(mem, clock, key, t, now)
                elif wait == timedelta(0):
                    assert mem.score(key) < t
                elif now + wait >= EXACT:
                    # Past 2**53 µs (year 2255) float instants are coarser than a microsecond.
                    clock.set(now + wait)
                    assert key not in mem or mem.score(key) == pytest.approx(t, rel=1e-9)
                    clock.set(now)
                else:
                    # Exact to the microsecond, but for a few ulps: where a score changes by less than
                    # its own rounding per microsecond it wobbles about the threshold for a while.
                    clock.set(now + wait - US)
                    assert mem.score(key) >= t - ULPS * math.ulp(t), (key, t, wait)
                    clock.set(now + wait)
                    assert key not in mem or mem.score(key) < t + ULPS * math.ulp(t), (key, t, wait)
                    clock.set(now)
        # next_eviction is the earliest of the entries' own forecasts at the eviction threshold.
        waits = [mem.time_until(k, evict_at) for k in mem.keys()]  # noqa: SIM118 - a memory iterates entries
        forecasts = [now + w for w in waits if w is not None]
        if len(mem.to_dict()["entries"]) > len(mem):
            forecasts.append(now)  # an entry past its deadline, not yet removed, is evictable now
        when = mem.next_eviction()
        assert when == (min(forecasts) if forecasts else None)
        if when is not None and when < EXACT:
            near = [k for k, w in zip(list(mem.keys()), waits) if w is not None and now + w == when]
            if when > now:
                clock.set(when - US)
                assert mem.evict()[1] == () or self._within_ulps(mem, near, evict_at)
            clock.set(when)
            assert mem.evict()[1] != () or self._within_ulps(mem, near, evict_at)
            clock.set(now)

    @staticmethod
    def _within_ulps(mem: Memory[Any, Any], keys: list[Any], t: float) -> bool:
        return any(abs(mem.score(k) - t) <= ULPS * math.ulp(t) for k in keys if k in mem)

    @staticmethod
    def _never_below(
        mem: Memory[Any, Any], clock: ManualClock, key: Any, t: float, now: datetime, at: datetime | None = None
    ) -> bool:
        """Whether the entry is still at or above ``t`` at ``at`` (default: in nine hundred years)."""
        clock.set(at or now + timedelta(days=365 * 900))
        try:
            return key in mem and mem.score(key) >= t
        finally:
            clock.set(now)

    def test_round_trips_through_json_and_pickle(self, model: Model) -> None:
        clock = fake_clock()
        mem = built(model, clock, max_entries=8, summarize_fn=str)
        for i, m in enumerate(METADATA):
            mem = mem.put(f"v{i}", key=i, importance=0.4 + 0.5 * i, metadata=m, ttl=30 * DAY if i == 2 else None)
            clock.advance(HOUR * (i + 1))
        mem = mem.put("p", key=("t", 1), pinned=True).touch(0).get(1)[0]
        clock.advance(3 * DAY)
        mem = mem.touch(1).summarize()
        data = json.loads(json.dumps(mem.to_dict()))
        back = Memory.from_dict(data, clock_fn=clock, summarize_fn=str, **restore_kwargs(model))
        assert back.to_dict() == mem.to_dict()
        assert back.score_map() == mem.score_map()
        assert [e.decay_state for e in back] == [e.decay_state for e in mem]
        if model.builtin:
            assert back.decay_fn == mem.decay_fn
        pickled = pickle.loads(pickle.dumps(mem))
        assert pickled.to_dict() == mem.to_dict()
        assert pickled.score_map() == mem.score_map()
        # They carry on alike (the pickled memory took a copy of its clock along).
        assert isinstance(pickled.clock_fn, ManualClock)
        assert pickled.clock_fn is not clock
        assert pickled.clock_fn.now == clock.now
        clock.advance(DAY)
        pickled.clock_fn.advance(DAY)
        for copy_ in (back, pickled):
            assert copy_.touch(0).score_map() == mem.touch(0).score_map()
            assert copy_.evict()[0].to_dict() == mem.evict()[0].to_dict()
        invariants(back)
        invariants(pickled)

    def test_a_hostile_document_is_refused_cleanly(self, model: Model) -> None:
        clock = fake_clock()
        mem = built(model, clock, max_entries=4)
        mem = mem.put("a", key="a", metadata=METADATA[1]).put("b", key="b", metadata=METADATA[2], importance=0.5)
        clock.advance(2 * DAY)
        mem = mem.touch("a").touch("b")
        valid = mem.to_dict()
        tried = 0
        for mutate in _mutations(valid):
            data = copy.deepcopy(valid)
            mutate(data)
            tried += 1
            try:
                back = Memory.from_dict(data, clock_fn=clock, **restore_kwargs(model))
            except (ValueError, TypeError):
                continue
            invariants(back)
            invariants(back.put("x", key="x").evict()[0])
        assert tried > 20


BAD = ["x", None, -1, 1e308, [], {}, [[1, 2]], [1.0, -5.0], True]


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def mutate(data: Any) -> None:
        target = data
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = copy.deepcopy(value)

    return mutate


def _drop(path: tuple[Any, ...]) -> Any:
    def mutate(data: Any) -> None:
        target = data
        for step in path[:-1]:
            target = target[step]
        del target[path[-1]]

    return mutate


def _fields(node: Any, path: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The paths of every field of a decay_fn description, nested ones included."""
    out: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append((*path, k))
            out += _fields(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append((*path, i))
            out += _fields(v, (*path, i))
    return out


def _mutations(valid: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for path in _fields(valid["decay_fn"], ("decay_fn",)):
        out.append(_drop(path))
        out += [_set(path, bad) for bad in BAD]
    for i in range(len(valid["entries"])):
        for field in ("decay_state", "access_count", "last_accessed_at", "importance"):
            out += [_set(("entries", i, field), bad) for bad in BAD]
        state = valid["entries"][i]["decay_state"]
        if isinstance(state, list):
            out += [_set(("entries", i, "decay_state", *p), bad) for p in _fields(state, ()) for bad in BAD[:4]]
    out += [_set(("decay_fn",), bad) for bad in BAD]
    out.append(_set(("decay_fn", "name"), "exponential"))  # another model's state handed over
    return out
