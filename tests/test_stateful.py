"""Stateful model test: ``Memory`` against a deliberately naive reference model.

A Hypothesis ``RuleBasedStateMachine`` drives random sequences of every write
(put, get, touch, update, pin, unpin, delete, evict, summarize, clear), reads,
clock moves and ``to_dict`` -> JSON -> ``from_dict`` round trips on a small
memory (capacity 1..4, so eviction happens all the time), for every decay model
in ``tests/_support.MODELS``: every registered name, the combinators and a
plain callable.  The model is a plain dict of records.  For exponential,
access-weighted and ACT-R it scores with the decay formulas written out again
here, independently of ``lethe.decay``; for every other model it keeps each
record's ``decay_state`` through the function's public ``rehearse`` and scores
with its public ``score`` (whose formulas ``tests/test_decay_*.py`` check), so
what is checked there is the memory's bookkeeping: its fast paths, the states
it threads through rehearsals, eviction, summaries and versions.

After every step the machine checks that the memory and the model agree
(keys, values, access counts, pins, importances, summaries, scores within
1e-9), that every older version still answers exactly as it did when it was
current, and that no entry was lost: every entry ever put is still present,
or was removed by an explicit call (delete, clear, a put on its key), or was
reported evicted (returned by ``evict()`` and passed to ``on_evict``).

Step counts come from the environment so that the long run is the same test:

    python -m pytest -q tests/test_stateful.py                    # CI: 60 runs x 40 steps
    HYPOTHESIS_PROFILE=long LETHE_STATEFUL_STEPS=100 \\
        LETHE_STATEFUL_REPORT=stateful.json python -m pytest -q tests/test_stateful.py
                                                                  # 2000 runs x <=100 steps

``LETHE_STATEFUL_EXAMPLES`` overrides the number of runs; the report file gets
the measured totals (steps, evictions, losses, ...).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from lethe import Entry, ManualClock, Memory, MemoryFullError
from lethe.decay import ACTR, BUILTINS

from ._support import BY_ID, METADATA, MODEL_IDS, START, custom_decay, fake_clock, memory_score
from ._twin import WORDS, answer, brute

TOL = 1e-9
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
STEPS = int(os.environ.get("LETHE_STATEFUL_STEPS", "100" if PROFILE == "long" else "40"))
EXAMPLES = int(os.environ.get("LETHE_STATEFUL_EXAMPLES", "0")) or settings().max_examples
#: Older versions re-checked after each step (all of them are re-checked at teardown).
RECENT = 6

#: Totals over every run of the machine, for docs/reliability.md.
TOTALS: Counter[str] = Counter()

#: Models scored by the formulas written out below; every other one by its own public score().
FORMULAS = ["exponential", "access_weighted", "actr"]
DECAYS = [*FORMULAS, *(f"model:{m}" for m in MODEL_IDS)]
META = st.integers(0, len(METADATA) - 1)
KEYS = st.sampled_from(["a", "b", "c", "d", "e", 0, 1, 2])
IMPORTANCE = st.one_of(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0, 1e6]), st.floats(0.0, 4.0))
ACTR_D = 0.5
#: One put in five pins (a fair coin would fill every small memory with pins).
TICKS = st.sampled_from([1.0, 3.0, 10.0, 0.25, 60.0, 0, 1, 1_000_000])
PINNED = st.integers(0, 4).map(lambda n: n == 4)
TEXTS = st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join)
VECTORS = st.lists(st.integers(-2, 2), min_size=3, max_size=3).filter(any).map(lambda v: [float(x) for x in v])
#: What a put gives for search: ``(text, vector)``, each often absent.
CONTENT = st.tuples(st.one_of(st.none(), TEXTS), st.one_of(st.none(), VECTORS))
QUERIES = st.one_of(TEXTS, VECTORS)
ACTR_S = 0.25


def us(clock: ManualClock) -> int:
    """The clock's time in integer microseconds since START (exact)."""
    delta = clock.now - START
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@dataclass
class Rec:
    """The model of one entry: plain numbers, times in integer microseconds."""

    key: Any
    value: Any
    inserted: int
    last: int
    count: int
    pinned: bool
    importance: float
    seq: int
    summary: Any = None
    summarized: bool = False
    times: list[int] = field(default_factory=list)  # every access, the insertion first (ACT-R)
    meta: dict[str, Any] = field(default_factory=dict)
    state: Any = None  # the decay_state, for the models scored by their own function


def model_raw(decay: str, half_life: float, rec: Rec, now: int) -> float:
    """The decay formulas, written out from their published definitions, not from lethe.decay."""
    if decay == "actr":
        ages = [(now - t) / 1e6 for t in rec.times]
        if any(a <= 0 for a in ages):
            return 1.0
        b = math.log(sum(a**-ACTR_D for a in ages))
        tau = -ACTR_D * math.log(half_life)
        x = -(b - tau) / ACTR_S
        return 0.0 if x > 700 else 1.0 / (1.0 + math.exp(x))
    elapsed = (now - rec.last) / 1e6
    if elapsed <= 0:
        return 1.0
    h = half_life if decay == "exponential" else half_life * (1.0 + math.log(1.0 + rec.count))
    return float(0.5 ** (elapsed / h))


def model_score(decay: str, half_life: float, rec: Rec, now: int) -> float:
    if rec.pinned:
        return 1.0
    return min(1.0, max(0.0, model_raw(decay, half_life, rec, now) * rec.importance))


def summary_of(e: Entry[Any, Any]) -> str:
    return f"S({e.key!r}={e.value!r})"


class MemoryMachine(RuleBasedStateMachine):
    #: Run every example on this decay model (one of DECAYS) instead of drawing one.
    ONLY: str | None = None

    def __init__(self) -> None:
        super().__init__()
        self.clock = fake_clock()
        self.model: dict[Any, Rec] = {}
        self.history: list[tuple[Memory[Any, Any], dict[Any, Any], dict[Any, float], Any]] = []
        self.evict_calls: list[tuple[Entry[Any, Any], ...]] = []
        self.summarize_calls: list[Entry[Any, Any]] = []
        # Conservation ledger: (key, seq) of every put -> "live" | "deleted" | "replaced" | "cleared" | "evicted".
        self.ledger: dict[tuple[Any, int], str] = {}
        self.next_seq = 0
        self.next_key = 0
        self.value_counter = 0

    # -- set-up -------------------------------------------------------------

    @initialize(
        decay=st.sampled_from(DECAYS),
        cap=st.integers(1, 4),
        half_life=st.sampled_from([60.0, 3600.0]),
        thresholds=st.sampled_from([(0.3, 0.6), (0.05, 0.15), (0.5, 0.5), (0.0, 0.9), (0.0, 0.0)]),
        with_summarize=st.booleans().map(lambda b: not b),
        with_on_evict=st.booleans().map(lambda b: not b),
    )
    def setup(
        self,
        decay: str,
        cap: int,
        half_life: float,
        thresholds: tuple[float, float],
        with_summarize: bool,
        with_on_evict: bool,
    ) -> None:
        decay = self.ONLY or decay
        self.decay = decay
        self.half_life = half_life
        self.cap = cap
        self.evict_t, self.summ_t = thresholds
        self.with_summarize = with_summarize
        self.with_on_evict = with_on_evict
        # ACT-R with a history longer than any run keeps every access: the exact equation.
        fn: Any = ACTR(half_life=half_life, history=10_000) if decay == "actr" else decay
        self.fn: Any = None
        config: dict[str, Any] = {"decay_fn": fn, "half_life": half_life}
        if decay.startswith("model:"):
            # The model's own time scale: ticks are multiples of the half-life its factory used (or an hour).
            self.fn = config["decay_fn"] = BY_ID[decay.removeprefix("model:")].make()
            del config["half_life"]
            self.half_life = BY_ID[decay.removeprefix("model:")].half_life or 3600.0
        self.mem: Memory[Any, Any] = Memory(
            max_entries=cap,
            **config,
            eviction_threshold=self.evict_t,
            summarize_threshold=self.summ_t,
            summarize_fn=self._summarize if with_summarize else None,
            on_evict=self.evict_calls.append if with_on_evict else None,
            clock_fn=self.clock,
        )
        TOTALS["runs"] += 1
        TOTALS[f"runs_{decay}"] += 1

    def _summarize(self, e: Entry[Any, Any]) -> str:
        assert not e.summarized, f"summarize_fn ran twice for {e.key!r}={e.value!r}"
        self.summarize_calls.append(e)
        return summary_of(e)

    # -- helpers --------------------------------------------------------------

    def now(self) -> int:
        return us(self.clock)

    def entry_of(self, rec: Rec) -> Entry[Any, Any]:
        """The entry the model expects the memory to hold for ``rec`` (unpinned: the function sees no pin)."""
        return Entry(
            key=rec.key,
            value=rec.value,
            inserted_at=START + timedelta(microseconds=rec.inserted),
            last_accessed_at=START + timedelta(microseconds=rec.last),
            access_count=rec.count,
            importance=rec.importance,
            metadata=rec.meta,
            decay_state=rec.state,
        )

    def score(self, rec: Rec) -> float:
        if self.fn is None:
            return model_score(self.decay, self.half_life, rec, self.now())
        if rec.pinned:
            return 1.0
        return memory_score(self.fn, self.entry_of(rec), self.clock.now)

    def advance(self, new: Memory[Any, Any]) -> None:
        """Make ``new`` current; remember the old version with its snapshot."""
        old = self.mem
        self.history.append((old, old.to_dict(), old.score_map(), self.clock.now))
        self.mem = new

    def fresh_value(self) -> str:
        self.value_counter += 1
        return f"v{self.value_counter}"

    def take_calls(self) -> tuple[list[Entry[Any, Any]], list[tuple[Entry[Any, Any], ...]]]:
        """The hook calls since the last take (both lists are emptied in place: the memory holds them)."""
        s, e = list(self.summarize_calls), list(self.evict_calls)
        self.summarize_calls.clear()
        self.evict_calls.clear()
        return s, e

    def pick(self, data: st.DataObject) -> Any:
        """A key: usually a present one, sometimes any (so missing keys are tried too)."""
        present = sorted(self.model, key=repr)
        if present and data.draw(st.integers(0, 4)) < 4:
            return data.draw(st.sampled_from(present))
        return data.draw(KEYS)

    def rehearse_model(self, rec: Rec) -> None:
        now = self.now()
        hook = getattr(self.fn, "rehearse", None)
        if callable(hook):
            rec.state = hook(self.entry_of(rec), self.clock.now)
        rec.last = now
        rec.count += 1
        rec.times.append(now)

    # -- rules ----------------------------------------------------------------

    @rule(key=st.one_of(st.none(), KEYS), importance=IMPORTANCE, pinned=PINNED, meta=META, content=CONTENT)
    def put_again(self, key: Any, importance: float, pinned: bool, meta: int, content: Any) -> None:
        """A second put rule: puts are the interesting step, so they come twice as often."""
        TOTALS["op_put_again"] += 1
        self.put(key, importance, pinned, meta, content)

    @rule(key=st.one_of(st.none(), KEYS), importance=IMPORTANCE, pinned=PINNED, meta=META)
    def put(self, key: Any, importance: float, pinned: bool, meta: int, content: Any = (None, None)) -> None:
        TOTALS["op_put"] += 1
        value = self.fresh_value()
        if key is None:
            auto = self.next_key
            while auto in self.model:
                auto += 1
            target = auto
        else:
            target = key
        now = self.now()
        before = dict(self.model)
        try:
            text, vector = content
            new = self.mem.put(
                value, key=key, importance=importance, pinned=pinned, metadata=METADATA[meta], text=text, vector=vector
            )
        except MemoryFullError:
            assert target not in self.model
            assert len(self.model) >= self.cap
            assert all(r.pinned for r in self.model.values())
            assert self.take_calls() == ([], [])
            TOTALS["memory_full"] += 1
            return
        if key is None:
            self.next_key = target + 1
        summ_calls, evict_calls = self.take_calls()
        if target in before:
            # Replacement: no eviction, the old entry is explicitly replaced.
            assert evict_calls == []
            assert summ_calls == []
            self.ledger[(target, before[target].seq)] = "replaced"
        elif len(before) >= self.cap:
            unpinned = [r for r in before.values() if not r.pinned]
            assert unpinned, "evicted from an all-pinned memory"
            expected = min(unpinned, key=lambda r: (self.score(r), r.seq))
            gone = set(before) - set(new.keys())
            assert len(gone) == 1
            (victim_key,) = gone
            victim = before[victim_key]
            assert not victim.pinned
            if victim is not expected:
                # Only a float near-tie may pick another victim, and then only the earlier-put of equals.
                assert abs(self.score(victim) - self.score(expected)) <= TOL, (victim, expected)
            if self.with_summarize and not victim.summarized:
                assert [e.key for e in summ_calls] == [victim_key]
                victim.summarized = True
                victim.summary = summary_of(summ_calls[0])
            else:
                assert summ_calls == []
            if self.with_on_evict:
                assert len(evict_calls) == 1
                (batch,) = evict_calls
                assert len(batch) == 1
                assert batch[0].key == victim_key
                assert batch[0].seq == victim.seq
                assert batch[0].summary == victim.summary
                self.ledger[(victim_key, victim.seq)] = "evicted"
            else:
                assert evict_calls == []
                # Nobody to report to: the memory was built without on_evict, so the caller chose this.
                self.ledger[(victim_key, victim.seq)] = "evicted"
            del self.model[victim_key]
            TOTALS["capacity_evictions"] += 1
        else:
            assert summ_calls == []
            assert evict_calls == []
        self.model[target] = Rec(
            key=target,
            value=value,
            inserted=now,
            last=now,
            count=0,
            pinned=pinned,
            importance=float(importance),
            seq=self.next_seq,
            times=[now],
            meta=METADATA[meta],
        )
        self.ledger[(target, self.next_seq)] = "live"
        self.next_seq += 1
        TOTALS["puts"] += 1
        self.advance(new)

    def _missing(self, key: Any, call: Any) -> None:
        before = self.mem
        try:
            call()
        except KeyError:
            assert self.mem is before
            TOTALS["key_errors"] += 1
            return
        raise AssertionError(f"no KeyError for missing key {key!r}")

    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        TOTALS["op_get"] += 1
        key = self.pick(data)
        if key not in self.model:
            self._missing(key, lambda: self.mem.get(key))
            return
        new, entry = self.mem.get(key)
        rec = self.model[key]
        self.rehearse_model(rec)
        assert entry.access_count == rec.count
        assert entry.value == rec.value
        assert new.peek(key) == entry
        self.advance(new)

    @rule(query=QUERIES, k=st.integers(1, 4), weight=st.sampled_from([0.0, 0.25, 2.0]))
    def search(self, query: Any, k: int, weight: float) -> None:
        """Observes: the answer is the brute-force sort, and nothing changes."""
        TOTALS["op_search"] += 1
        before = self.mem.to_dict()
        assert answer(self.mem, query, k, decay_weight=weight) == brute(self.mem, query, k, decay_weight=weight)
        assert self.mem.to_dict() == before

    @rule(query=QUERIES, k=st.integers(1, 3))
    def recall(self, query: Any, k: int) -> None:
        """The hits of the search, each rehearsed as get rehearses it."""
        TOTALS["op_recall"] += 1
        want = brute(self.mem, query, k)
        new, hits = self.mem.recall(query, k)
        assert [(e.key, n) for e, n in hits] == want
        assert self.take_calls() == ([], [])
        for e, _ in hits:
            rec = self.model[e.key]
            self.rehearse_model(rec)
            assert e.access_count == rec.count
            assert new.peek(e.key) == e
        self.advance(new)

    @rule(data=st.data())
    def peek(self, data: st.DataObject) -> None:
        TOTALS["op_peek"] += 1
        key = self.pick(data)
        if key not in self.model:
            self._missing(key, lambda: self.mem.peek(key))
            return
        entry = self.mem.peek(key)
        rec = self.model[key]
        assert entry.access_count == rec.count
        assert entry.value == rec.value

    @rule(data=st.data(), importance=st.one_of(st.none(), IMPORTANCE))
    def touch(self, data: st.DataObject, importance: float | None) -> None:
        TOTALS["op_touch"] += 1
        key = self.pick(data)
        if key not in self.model:
            self._missing(key, lambda: self.mem.touch(key, importance=importance))
            return
        new = self.mem.touch(key, importance=importance)
        rec = self.model[key]
        self.rehearse_model(rec)
        if importance is not None:
            rec.importance = float(importance)
        self.advance(new)

    @rule(data=st.data())
    def update(self, data: st.DataObject) -> None:
        TOTALS["op_update"] += 1
        key = self.pick(data)
        value = self.fresh_value()
        if key not in self.model:
            self._missing(key, lambda: self.mem.update(key, value))
            return
        new = self.mem.update(key, value)
        rec = self.model[key]
        self.rehearse_model(rec)
        rec.value = value
        rec.summary = None
        rec.summarized = False
        self.advance(new)

    @rule(data=st.data(), pinned=st.booleans())
    def pin_or_unpin(self, data: st.DataObject, pinned: bool) -> None:
        TOTALS["op_pin_or_unpin"] += 1
        key = self.pick(data)
        op = self.mem.pin if pinned else self.mem.unpin
        if key not in self.model:
            self._missing(key, lambda: op(key))
            return
        new = op(key)
        self.model[key].pinned = pinned
        self.advance(new)

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        TOTALS["op_delete"] += 1
        key = self.pick(data)
        new = self.mem.delete(key)
        rec = self.model.pop(key, None)
        if rec is not None:
            self.ledger[(key, rec.seq)] = "deleted"
        else:
            assert new == self.mem
            assert new.evicted == ()  # never the receiver's report again
            if not self.mem.evicted:
                assert new is self.mem  # nothing to report: the receiver itself
        self.advance(new)

    @precondition(lambda self: hasattr(self, "mem") and len(self.mem) == self.cap)
    @rule()
    def clear(self) -> None:
        TOTALS["op_clear"] += 1
        new = self.mem.clear()
        for rec in self.model.values():
            self.ledger[(rec.key, rec.seq)] = "cleared"
        self.model.clear()
        assert len(new) == 0
        self.advance(new)

    def _check_summaries(self, new: Memory[Any, Any], summ_calls: list[Entry[Any, Any]], gone: set[Any]) -> None:
        """Who got summarized: exactly the fading unsummarized entries (ties at the threshold go either way)."""
        called = [e.key for e in summ_calls]
        assert len(called) == len(set(called))
        for key, rec in self.model.items():
            s = self.score(rec)
            eligible = self.with_summarize and not rec.pinned and not rec.summarized
            if key in called:
                assert eligible
                assert s < self.summ_t + TOL
                rec.summarized = True
                rec.summary = summary_of(next(e for e in summ_calls if e.key == key))
            else:
                assert not (eligible and s < self.summ_t - TOL), (key, s)
        for key in called:
            assert key in self.model
            if key not in gone:
                assert new.peek(key).summarized

    @rule()
    def summarize(self) -> None:
        TOTALS["op_summarize"] += 1
        new = self.mem.summarize()
        summ_calls, evict_calls = self.take_calls()
        assert evict_calls == []
        assert set(new.keys()) == set(self.model)
        self._check_summaries(new, summ_calls, set())
        TOTALS["summaries"] += len(summ_calls)
        self.advance(new)

    @rule()
    def evict(self) -> None:
        TOTALS["op_evict"] += 1
        new, out = self.mem.evict()
        summ_calls, evict_calls = self.take_calls()
        gone = set(self.model) - set(new.keys())
        assert {e.key for e in out} == gone
        assert len(out) == len(gone)
        if self.with_on_evict and out:
            assert evict_calls == [out]
        else:
            assert evict_calls == []
        self._check_summaries(new, summ_calls, gone)
        for key, rec in self.model.items():
            s = self.score(rec)
            if rec.pinned:
                assert key not in gone
            elif s < self.evict_t - TOL:
                assert key in gone, (key, s)
            elif s >= self.evict_t + TOL:
                assert key not in gone, (key, s)
        scores = [self.score(self.model[e.key]) for e in out]
        assert all(a >= b - TOL for a, b in itertools.pairwise(scores)), "evicted entries not highest score first"
        for e in out:
            rec = self.model.pop(e.key)
            assert e.seq == rec.seq
            assert e.value == rec.value
            if self.with_summarize:
                assert e.summarized
                assert e.summary == rec.summary
            self.ledger[(e.key, rec.seq)] = "evicted"
        TOTALS["evict_calls"] += 1
        TOTALS["evicted_by_evict"] += len(out)
        TOTALS["summaries"] += len(summ_calls)
        self.advance(new)

    @rule(step=TICKS)
    def tick_again(self, step: float) -> None:
        """A second clock rule, so time moves about as often as entries are put."""
        self.tick(step)

    @rule(step=TICKS)
    def tick(self, step: float) -> None:
        TOTALS["op_tick"] += 1
        # Ints are microseconds; floats are multiples of the half-life.
        micro = step if isinstance(step, int) else round(step * self.half_life * 1e6)
        self.clock.advance(timedelta(microseconds=micro))

    @rule()
    def round_trip(self) -> None:
        TOTALS["op_round_trip"] += 1
        data = json.loads(json.dumps(self.mem.to_dict()))
        new: Memory[Any, Any] = Memory.from_dict(
            data,
            decay_fn=custom_decay if self.decay == "model:custom" else None,
            summarize_fn=self.mem.summarize_fn,
            on_evict=self.mem.on_evict,
            clock_fn=self.clock,
        )
        assert new.to_dict() == self.mem.to_dict()
        assert new.score_map() == self.mem.score_map()
        TOTALS["round_trips"] += 1
        self.advance(new)

    @precondition(lambda self: len(self.history) > 0)
    @rule(data=st.data())
    def revisit_old_version(self, data: st.DataObject) -> None:
        """Write to an old version: the current one must not notice."""
        TOTALS["op_revisit_old_version"] += 1
        old, *_ = data.draw(st.sampled_from(self.history))
        snapshot = (self.mem.to_dict(), self.mem.score_map())
        with contextlib.suppress(MemoryFullError):
            old.put("ghost", key="ghost-key")
        old.clear()
        self.take_calls()  # the old version's own hook calls are not the current one's business
        assert (self.mem.to_dict(), self.mem.score_map()) == snapshot

    # -- invariants -----------------------------------------------------------

    @invariant()
    def agrees_with_model(self) -> None:
        if not hasattr(self, "mem"):
            return
        TOTALS["steps"] += 1  # runs after every step (and once after set-up)
        mem = self.mem
        assert len(mem) <= self.cap
        assert set(mem.keys()) == set(self.model)
        scores = mem.score_map()
        for key, rec in self.model.items():
            e = mem.peek(key)
            assert e.value == rec.value
            assert e.access_count == rec.count
            assert e.pinned == rec.pinned
            assert e.importance == rec.importance
            assert e.summary == rec.summary
            assert e.summarized == rec.summarized
            assert e.seq == rec.seq
            if self.fn is not None:
                assert e.decay_state == rec.state
                assert e.metadata == rec.meta
            expected = self.score(rec)
            assert abs(scores[key] - expected) <= TOL, (key, scores[key], expected, rec)
            assert 0.0 <= scores[key] <= 1.0
        ranked = list(scores.values())
        assert ranked == sorted(ranked, reverse=True)

    @invariant()
    def nothing_lost(self) -> None:
        if not hasattr(self, "mem"):
            return
        live = {k for k, status in self.ledger.items() if status == "live"}
        present = {(e.key, e.seq) for e, _ in self.mem.scored()}
        assert present == live, f"unexplained losses: {live - present}, unexpected entries: {present - live}"

    @invariant()
    def recent_versions_unchanged(self) -> None:
        for version in self.history[-RECENT:]:
            self.check_version(*version)

    def check_version(self, old: Memory[Any, Any], data: dict[str, Any], scores: dict[Any, float], at: Any) -> None:
        assert old.to_dict() == data
        now = self.clock.now
        self.clock.now = at
        try:
            assert old.score_map() == scores
        finally:
            self.clock.now = now

    def teardown(self) -> None:
        for version in self.history:
            self.check_version(*version)
        TOTALS["versions_rechecked"] += len(self.history)
        if hasattr(self, "mem"):
            present = {(e.key, e.seq) for e, _ in self.mem.scored()}
            TOTALS["losses"] += sum(1 for ks, s in self.ledger.items() if s == "live" and ks not in present)
        TOTALS["entries_ledgered"] += len(self.ledger)


def test_memory_matches_the_reference_model() -> None:
    before = Counter(TOTALS)
    run_state_machine_as_test(
        MemoryMachine,
        settings=settings(settings.default, max_examples=EXAMPLES, stateful_step_count=STEPS),
    )
    run = Counter(TOTALS)
    run.subtract(before)
    assert run["runs"] > 0
    assert run["steps"] > 0
    assert run["losses"] == 0
    report = os.environ.get("LETHE_STATEFUL_REPORT")
    if report:
        with open(report, "w") as f:
            json.dump({"profile": PROFILE, "max_examples": EXAMPLES, "step_count": STEPS, **run}, f, indent=2)


#: Runs per model in the sweep below (every model in every CI run, a tenth of the profile's examples each).
PER_MODEL = max(3, EXAMPLES // 10)


@pytest.mark.parametrize("decay", DECAYS)
def test_every_model_matches_the_reference_model(decay: str) -> None:
    machine = type(f"MemoryMachine_{decay}", (MemoryMachine,), {"ONLY": decay})
    before = Counter(TOTALS)
    run_state_machine_as_test(
        machine,
        settings=settings(settings.default, max_examples=PER_MODEL, stateful_step_count=STEPS),
    )
    run = Counter(TOTALS)
    run.subtract(before)
    assert run["runs"] == run[f"runs_{decay}"] > 0
    assert run["losses"] == 0


def test_every_model_is_sampled() -> None:
    """The machine draws its decay function from every model: every registered name among them."""
    sampled = {BY_ID[d.removeprefix("model:")] for d in DECAYS if d.startswith("model:")}
    assert {m.id for m in sampled} == set(MODEL_IDS)
    assert {m.covers for m in sampled} >= set(BUILTINS) | {"product", "blend", "by_metadata", "custom"}


def test_model_formulas_match_the_spec_numbers() -> None:
    """The reference formulas themselves, on hand-checked points."""
    rec = Rec(key="k", value="v", inserted=0, last=0, count=0, pinned=False, importance=1.0, seq=0, times=[0])
    hour = 3_600_000_000
    assert model_raw("exponential", 3600.0, rec, hour) == 0.5
    assert model_raw("access_weighted", 3600.0, rec, hour) == 0.5
    assert abs(model_raw("actr", 3600.0, rec, hour) - 0.5) < 1e-12
    twice = replace(rec, count=1, times=[0, 0])
    assert model_raw("access_weighted", 3600.0, twice, hour) == 0.5 ** (1 / (1 + math.log(2)))
    assert model_score("exponential", 3600.0, replace(rec, importance=3.0), hour) == 1.0
    assert model_score("exponential", 3600.0, replace(rec, pinned=True), 10 * hour) == 1.0
