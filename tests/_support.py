"""The one place for shared test helpers.

* :func:`fake_clock`: the hand-driven clock every test uses (:class:`lethe.ManualClock`).
* :func:`entry`: an :class:`~lethe.Entry` built directly, with the test defaults.
* :func:`invariants`: what every memory must satisfy, whatever happened to it
  (capacity, scores in 0..1, ranking equal to a brute-force sort of ``score()``).
* :class:`Collide`: a key type whose hashes all collide.
* :class:`Boom`, :class:`Fault`, :class:`FaultyDecay`: hooks that fail on a chosen call.
* :data:`MODELS`: one factory per decay model (every registered name, several
  parameterisations, every combinator and a plain custom callable) for the
  contract suite in ``tests/contract``; ``test_registry_guard.py`` fails when a
  registered name or an exported decay class is missing from it.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import sqlite3
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

from lethe import Entry, ManualClock, Memory
from lethe.decay import (
    ACTR,
    FSRS,
    FSRS6_DEFAULT_PARAMETERS,
    AccessFrequency,
    AccessWeighted,
    AdaptiveDecay,
    Blend,
    ByMetadata,
    EbbinghausLTP,
    Exponential,
    Importance,
    PowerLaw,
    Product,
    Recency,
    SoftFloor,
    StabilityExponential,
    by_name,
    priority_blend,
)

START = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
US = timedelta(microseconds=1)
SECOND = timedelta(seconds=1)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


# -- the clock ----------------------------------------------------------------------


def fake_clock(start: datetime = START, step: timedelta = timedelta(0)) -> ManualClock:
    """The tests' clock: stands at ``start`` (moving ``step`` per reading) until advanced or set."""
    return ManualClock(start, step=step)


# -- entries --------------------------------------------------------------------------


def entry(
    key: Any = "k",
    value: Any = "v",
    *,
    inserted: datetime = START,
    accessed: datetime | None = None,
    access_count: int = 0,
    **kw: Any,
) -> Entry[Any, Any]:
    """An entry inserted at ``inserted`` and last accessed at ``accessed`` (default: then).

    ``last_accessed_at=`` and ``inserted_at=`` are accepted too, as Entry spells them.
    """
    kw.setdefault("inserted_at", inserted)
    kw.setdefault("last_accessed_at", kw["inserted_at"] if accessed is None else accessed)
    return Entry(key=key, value=value, access_count=access_count, **kw)


def memory_score(fn: Any, e: Entry[Any, Any], now: datetime) -> float:
    """What a memory makes of ``fn``'s raw score: importance applied unless included, clamped to 0..1."""
    score = getattr(fn, "score", None)
    s = (score if callable(score) else fn)(e, now)
    if not getattr(fn, "includes_importance", False):
        s *= e.importance
    return float(min(max(s, 0.0), 1.0))


# -- invariants -----------------------------------------------------------------------


def ranking(mem: Memory[Any, Any]) -> None:
    """Every ranked read equals a brute-force sort of ``score()`` (the clock must stand still)."""
    scored = mem.scored()
    brute = {key: mem.score(key) for key in mem.keys()}  # noqa: SIM118 - iterating a memory gives entries
    assert {e.key: s for e, s in scored} == brute
    assert len(scored) == len(brute) == len(mem)
    scores = [s for _, s in scored]
    assert scores == sorted(brute.values(), reverse=True)
    # Ties as documented: pinned first (most recently put first); unclamped equal scores most recent first.
    pinned = [e for e, _ in scored if e.pinned]
    assert [e for e, _ in scored[: len(pinned)]] == pinned
    assert [e.seq for e in pinned] == sorted((e.seq for e in pinned), reverse=True)
    for (a, sa), (b, sb) in itertools.pairwise(scored):
        if sa == sb < 1.0 and not a.pinned and not b.pinned:
            assert a.seq > b.seq, (a, b)
    entries = [e for e, _ in scored]
    assert list(mem) == entries
    assert mem.score_map() == {e.key: s for e, s in scored}
    assert list(mem.score_map()) == [e.key for e in entries]
    for k in (0, 1, 2, len(entries), len(entries) + 3):
        assert mem.top(k) == entries[:k]
        assert mem.top_scored(k) == scored[:k]
    for t in (0.0, 0.25, 0.5, mem.eviction_threshold, 1.0):
        assert mem.above(t) == [e for e, s in scored if s >= t]
    assert mem.active() == [e for e, s in scored if s >= mem.eviction_threshold]


def invariants(mem: Memory[Any, Any], *, ranked: bool = True) -> None:
    """What every memory must satisfy, whatever happened to it."""
    assert len(mem) <= mem.max_entries
    scored = mem.scored()
    assert len(scored) == len(mem)
    assert {e.key for e, _ in scored} == set(mem.keys())
    scores = [s for _, s in scored]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert all(s == 1.0 for e, s in scored if e.pinned)
    for e, _ in scored:
        assert mem.peek(e.key) is e
        assert e.access_count >= 0
        assert 0.0 <= e.importance < math.inf
        assert e.last_accessed_at >= e.inserted_at
    assert 0 <= mem.eviction_threshold <= mem.summarize_threshold <= 1
    data = mem.to_dict()
    assert json.loads(json.dumps(data)) == data
    # The document also holds the entries past their deadline that no write has removed yet.
    keys = [tuple(e["key"]) if isinstance(e["key"], list) else e["key"] for e in data["entries"]]
    assert len(keys) == len(mem) + sum(1 for e, k in zip(data["entries"], keys) if e["expires_at"] and k not in mem)
    if ranked:
        ranking(mem)


# -- keys -----------------------------------------------------------------------------


class Collide:
    """A key whose hash is chosen by the test (equal hashes, distinct keys): full-depth trie leaves."""

    __slots__ = ("h", "name")

    def __init__(self, name: Any, h: int = 7) -> None:
        self.name = name
        self.h = h

    def __hash__(self) -> int:
        return self.h

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Collide) and other.name == self.name

    def __repr__(self) -> str:
        return f"Collide({self.name!r}, {self.h})"


# -- hooks that fail ------------------------------------------------------------------


class Boom(Exception):
    """The injected failure."""


class Fault:
    """Wraps a hook; raises ``Boom`` on call number ``fail_at`` (1-based) once armed."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.calls = 0
        self.fail_at: int | None = None

    def arm(self, fail_at: int | None) -> None:
        self.calls = 0
        self.fail_at = fail_at

    def hit(self) -> None:
        self.calls += 1
        if self.fail_at is not None and self.calls == self.fail_at:
            raise Boom(f"injected failure on call {self.calls}")

    def __call__(self, *args: Any) -> Any:
        self.hit()
        return self.fn(*args)


class FaultyDecay(Fault):
    """A decay model behind a custom (non built-in) object whose ``score`` and ``rehearse`` can fail.

    It scores, rehearses and forecasts exactly as the model it wraps.
    """

    def __init__(self, fn: Any) -> None:
        super().__init__(fn)
        self.includes_importance = bool(getattr(fn, "includes_importance", False))

    def score(self, e: Entry[Any, Any], now: datetime) -> float:
        self.hit()
        score = getattr(self.fn, "score", None)
        return float((score if callable(score) else self.fn)(e, now))

    def rehearse(self, e: Entry[Any, Any], now: datetime) -> Any:
        hook = getattr(self.fn, "rehearse", None)
        if not callable(hook):
            return None
        self.hit()
        return hook(e, now)

    def __repr__(self) -> str:
        return f"FaultyDecay({self.fn!r})"


def custom_decay(e: Entry[Any, Any], now: datetime) -> float:
    """A plain callable decay function (exponential, one-hour half-life)."""
    elapsed = (now - e.last_accessed_at).total_seconds()
    return 1.0 if elapsed <= 0 else float(0.5 ** (elapsed / 3600.0))


def summary(e: Entry[Any, Any]) -> str:
    return f"summary of {e.value}"


# -- every decay model ----------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """One decay model under test.

    Attributes:
        id: the test id.
        make: builds the decay function (a new object each call).
        covers: the registry name it was built by, or the combinator / component it tests.
        fresh: the score a memory gives a fresh entry of importance 1 at zero elapsed.
        half_life: seconds after which a fresh, untouched entry of importance 1 scores 0.5.
        fades: whether every entry's score falls below 1e-3 within a hundred years.
        builtin: whether it serializes through the registry (``lethe.decay.from_dict``).
    """

    id: str
    make: Callable[[], Any]
    covers: str
    fresh: float = 1.0
    half_life: float | None = None
    fades: bool = False
    builtin: bool = True


def _named(name: str, half_life: float | None = 3600.0, fades: bool = True) -> Model:
    return Model(name, lambda: by_name(name, HOUR), name, half_life=half_life, fades=fades)


MODELS: list[Model] = [
    # Every name in the registry, built by name with a one-hour half-life.
    _named("exponential"),
    _named("access_weighted"),
    _named("actr"),
    _named("combined"),
    _named("power_law"),
    _named("soft_floor"),
    _named("ebbinghaus_ltp"),
    _named("stability_exponential"),
    _named("adaptive", fades=False),
    _named("fsrs", half_life=None, fades=False),
    _named("recency"),
    # Other parameterisations.
    Model("exponential/day", lambda: Exponential(half_life=DAY), "exponential", half_life=86400.0, fades=True),
    Model(
        "access_weighted/boost=3",
        lambda: AccessWeighted(half_life=600, boost=3.0),
        "access_weighted",
        half_life=600.0,
        fades=True,
    ),
    Model("actr/history=3", lambda: ACTR(half_life=600, history=3), "actr", half_life=600.0, fades=True),
    Model(
        "actr/sharp",
        lambda: ACTR(half_life=HOUR, decay=0.8, noise=0.1, history=50),
        "actr",
        half_life=3600.0,
        fades=True,
    ),
    Model("power_law/exponent=0.5", lambda: PowerLaw(half_life=600, exponent=0.5), "power_law", half_life=600.0),
    Model(
        "soft_floor/high", lambda: SoftFloor(half_life=60, floor_max=0.9, midpoint=0.5), "soft_floor", half_life=None
    ),
    Model("ebbinghaus_ltp/fast", lambda: EbbinghausLTP(base_tau=HOUR, ltp_multiplier=3.0), "ebbinghaus_ltp"),
    Model(
        "stability_exponential/growth=3",
        lambda: StabilityExponential(half_life=HOUR, growth=3.0),
        "stability_exponential",
    ),
    Model("adaptive/fast", lambda: AdaptiveDecay(base_rate=0.5, min_retention=0.1), "adaptive"),
    Model("fsrs/defaults", FSRS, "fsrs"),
    Model("fsrs/parameters", lambda: FSRS([*FSRS6_DEFAULT_PARAMETERS[:20], 0.3]), "fsrs"),
    Model("recency/day", lambda: Recency(half_life=DAY), "recency", half_life=86400.0, fades=True),
    # Components, combinators and the priority preset.
    Model("importance", Importance, "importance"),
    Model("access_frequency", lambda: AccessFrequency(saturation=3), "access_frequency", fresh=0.0),
    Model("product", lambda: Product(PowerLaw(), Exponential(half_life=DAY)), "product", fades=True),
    Model("product/includes_importance", lambda: Product(FSRS(), ACTR(), StabilityExponential()), "product"),
    Model("blend", lambda: Blend({Exponential(): 1, FSRS(): 2, StabilityExponential(): 1}), "blend"),
    Model("priority_blend", lambda: priority_blend(recency_half_life=HOUR, saturation=4), "priority_blend", fresh=0.8),
    Model(
        "by_metadata", lambda: ByMetadata("kind", {"a": FSRS(), "b": ACTR()}, default=AdaptiveDecay()), "by_metadata"
    ),
    Model(
        "by_metadata/nested",
        lambda: ByMetadata(
            "kind", {"a": Product(ACTR(), Exponential())}, default=Blend({ACTR(): 1, EbbinghausLTP(): 1})
        ),
        "by_metadata",
    ),
    # A plain callable (entry, now) -> float: the memory wraps it.
    Model("custom", lambda: custom_decay, "custom", half_life=3600.0, fades=True, builtin=False),
]

MODEL_IDS = [m.id for m in MODELS]
BY_ID = {m.id: m for m in MODELS}


def parts(fn: Any) -> Iterator[Any]:
    """``fn`` and every decay function inside it, depth first."""
    yield fn
    for child in getattr(fn, "functions", ()) or ():
        yield from parts(child)
    for _, child in getattr(fn, "choices", ()) or ():
        yield from parts(child)
    default = getattr(fn, "default", None)
    if default is not None and hasattr(fn, "choices"):
        yield from parts(default)


#: Metadata that makes every model's own keys matter: ByMetadata's ``kind``, AdaptiveDecay's
#: ``type``/``connections``/``channels``, EbbinghausLTP's ``emotional_tone``.
METADATA = [
    {},
    {"kind": "a", "type": "fact", "connections": 3, "channels": 2, "emotional_tone": 0.9},
    {"kind": "b", "type": "conversation", "emotional_tone": 0.1},
    {"kind": "fact", "channels": 1},
]


def sqlite_integrity(path: Path) -> str:
    """What ``PRAGMA integrity_check`` says of the SQLite file at ``path`` ("ok" when sound)."""
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """The module ``benchmarks/<name>.py``, loaded once; ``benchmarks/`` goes on ``sys.path`` too,
    since the benchmarks import each other (and spawned workers import them by name)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
