"""Combining decay functions: products, weighted blends, per-entry choice, and the priority preset."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar

from lethe._clock import from_us, to_us
from lethe._entry import Entry, evolve
from lethe._reprs import short_repr
from lethe._validate import duration, is_async, is_int, number, text
from lethe.decay._classic import Exponential
from lethe.decay._field import StabilityExponential
from lethe.decay._protocol import checked_score, is_builtin

__all__ = [
    "AccessFrequency",
    "Blend",
    "ByMetadata",
    "Importance",
    "Product",
    "Recency",
    "priority_blend",
]

_CUSTOM = "custom"


class ChildStates(tuple[Any, ...]):
    """The ``decay_state`` of a :class:`Product` or :class:`Blend`: one state per child.

    A plain tuple, marked so that a combinator never mistakes another
    function's tuple state for its children's.

    >>> ChildStates((None, (2.3, 5.0))) == (None, (2.3, 5.0))
    True
    """

    __slots__ = ()


class Picked(tuple[Any, ...]):
    """The ``decay_state`` of a :class:`ByMetadata`: ``(choice index, chosen child's state)``.

    The index is -1 for the default function.  Keeping it means a state is
    never handed to a function it does not belong to.

    >>> Picked((-1, None))[0]
    -1
    """

    __slots__ = ()


def _check_fn(fn: object, name: str) -> Any:
    if not callable(getattr(fn, "score", None)) and not callable(fn):
        raise TypeError(f"{name} must be a decay function (score(entry, now)) or a callable, got {type(fn).__name__}")
    if is_async(fn):
        raise TypeError(f"{name} is an async def; a decay function must return a number, not an awaitable")
    return fn


def _builtin(fn: object) -> bool:
    return is_builtin(fn) and callable(getattr(fn, "to_dict", None))


def _includes(fn: object) -> bool:
    return bool(getattr(fn, "includes_importance", False))


def _child_raw(fn: Any, entry: Entry[Any, Any], now_us: float) -> float:
    """A child's raw score, through its fast path if it is a built-in."""
    if is_builtin(fn):
        fast = getattr(fn, "_raw", None)
        if fast is not None:
            v: float = fast(entry, now_us)
            return v
    score = getattr(fn, "score", None)
    value = (score if callable(score) else fn)(entry, from_us(now_us))
    if type(value) is float and value - value == 0.0:  # finite: the common case, checked cheaply
        return value
    return checked_score(value, entry.key, f"decay_fn (its part {short_repr(fn)})")


def _child_rehearse(fn: Any, entry: Entry[Any, Any], now_us: float) -> Any:
    if is_builtin(fn):
        fast = getattr(fn, "_rehearse", None)
        if fast is not None:
            return fast(entry, now_us)
    hook = getattr(fn, "rehearse", None)
    return hook(entry, from_us(now_us)) if callable(hook) else None


def _view(entry: Entry[Any, Any], state: Any) -> Entry[Any, Any]:
    """``entry`` as a child sees it: with the child's own ``decay_state``."""
    return entry if entry.decay_state is state else evolve(entry, decay_state=state)


def _effective(fn: Any, entry: Entry[Any, Any], now_us: float) -> float:
    """A child's score as a memory would give it: importance applied, clamped to 0..1."""
    s = _child_raw(fn, entry, now_us)
    if not _includes(fn):
        s *= entry.importance
    return 1.0 if s >= 1.0 else (s if s > 0.0 else 0.0)


def _dump(fn: Any, state: Any) -> Any:
    dump = getattr(fn, "dump_state", None)
    return dump(state) if state is not None and callable(dump) else state


def _load(fn: Any, data: Any) -> Any:
    load = getattr(fn, "load_state", None)
    if callable(load):
        return load(data)
    if data is not None and is_builtin(fn):
        raise ValueError(f"{short_repr(fn)} keeps no decay_state, got {short_repr(data)}")
    return data


class _Children(ABC):
    """Shared state handling for combinators holding a fixed tuple of children."""

    __slots__ = ()

    @abstractmethod
    def _children(self) -> tuple[Any, ...]:
        """The child decay functions, in the order their states are kept."""

    def _states(self, entry: Entry[Any, Any]) -> tuple[Any, ...]:
        st = entry.decay_state
        n = len(self._children())
        if type(st) is ChildStates and len(st) == n:
            return st
        return (None,) * n

    def rehearse(self, entry: Entry[Any, Any], now: datetime) -> ChildStates:
        """The new ``decay_state`` after a rehearsal: each child's own new state."""
        return self._rehearse(entry, to_us(now))

    def _rehearse(self, entry: Entry[Any, Any], now_us: float) -> ChildStates:
        states = self._states(entry)
        return ChildStates(_child_rehearse(fn, _view(entry, st), now_us) for fn, st in zip(self._children(), states))

    def dump_state(self, state: ChildStates) -> list[Any]:
        """``decay_state`` as JSON: a list of the children's dumped states."""
        return [_dump(fn, st) for fn, st in zip(self._children(), state)]

    def load_state(self, data: object) -> ChildStates | None:
        """``decay_state`` from :meth:`dump_state` output; ValueError if malformed."""
        if data is None:
            return None
        n = len(self._children())
        if not isinstance(data, (list, tuple)) or len(data) != n:
            raise ValueError(f"decay_state must be null or a list of {n} child states")
        return ChildStates(_load(fn, d) for fn, d in zip(self._children(), data))


@dataclass(frozen=True, slots=True, init=False)
class Product(_Children):
    """The product of several decay functions' raw scores: ``raw = a * b * ...``.

    Every child must keep the entry: forgetting in any one of them forgets it
    (for example :class:`~lethe.decay.PowerLaw` times a slow
    :class:`~lethe.decay.Exponential` for a power-law head with an
    exponential tail).  Importance is applied once: by the memory when no
    child includes it, else by the children that do (``includes_importance``
    is True when any child's is).  Each child keeps its own ``decay_state``;
    the product's state is a :class:`ChildStates` tuple.

    Args:
        *functions: One or more decay functions.

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> from lethe.decay import Exponential
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t)
    >>> Product(Exponential(3600), Exponential(7200)).score(e, t + timedelta(hours=2))
    0.125
    """

    name: ClassVar[str] = "product"
    functions: tuple[Any, ...]
    includes_importance: bool

    def _children(self) -> tuple[Any, ...]:
        return self.functions

    def __init__(self, *functions: Any) -> None:
        if not functions:
            raise ValueError("Product needs at least one decay function")
        fns = tuple(_check_fn(fn, f"functions[{i}]") for i, fn in enumerate(functions))
        object.__setattr__(self, "functions", fns)
        object.__setattr__(self, "includes_importance", any(_includes(fn) for fn in fns))

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        """The product of the children's raw scores at ``now``."""
        return self._raw(entry, to_us(now))

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        out = 1.0
        for fn, st in zip(self.functions, self._states(entry)):
            out *= _child_raw(fn, _view(entry, st), now_us)
            if out == 0.0:
                break
        return out

    def to_dict(self) -> dict[str, Any]:
        """Name and the children's ``to_dict()``; ``custom`` if a child is not a built-in."""
        if not all(_builtin(fn) for fn in self.functions):
            return {"name": _CUSTOM, "repr": repr(self)[:200]}
        return {"name": self.name, "functions": [fn.to_dict() for fn in self.functions]}

    def __repr__(self) -> str:
        return f"Product({', '.join(repr(fn) for fn in self.functions)})"


@dataclass(frozen=True, slots=True, init=False)
class Blend(_Children):
    """A weighted average of decay functions: ``score = sum(w_i * s_i)`` with ``sum(w_i) = 1``.

    ``s_i`` is child ``i``'s score as a memory would give it: its raw score,
    multiplied by the entry's importance unless the child includes
    importance itself, clamped to 0..1.  So the blend includes importance
    (``includes_importance`` is True) and stays in 0..1, and a blend of one
    function scores exactly like that function.  Weights must be >= 0 with a
    positive sum; they are normalized and stored as ``(function, weight)`` pairs.
    Each child keeps its own ``decay_state`` (a :class:`ChildStates` tuple).

    Args:
        weights: A mapping ``{function: weight}`` or an iterable of ``(function, weight)`` pairs.

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> from lethe.decay import Exponential
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t)
    >>> Blend({Exponential(3600): 3, Exponential(7200): 1}).score(e, t + timedelta(hours=2))
    0.3125
    """

    name: ClassVar[str] = "blend"
    includes_importance: ClassVar[bool] = True
    weights: tuple[tuple[Any, float], ...]

    def __init__(self, weights: Mapping[Any, float] | Iterable[tuple[Any, float]]) -> None:
        items = list(weights.items() if isinstance(weights, Mapping) else weights)
        if not items:
            raise ValueError("Blend needs at least one (function, weight) pair")
        pairs: list[tuple[Any, float]] = []
        for i, pair in enumerate(items):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"weights[{i}] must be a (function, weight) pair, got {short_repr(pair)}")
            fn, w = pair
            weight = number(w, f"weights[{i}] weight", low=0.0, high=1e12)
            pairs.append((_check_fn(fn, f"weights[{i}] function"), weight))
        total = math.fsum(w for _, w in pairs)
        if total <= 0.0:
            raise ValueError("Blend weights must have a positive sum")
        object.__setattr__(self, "weights", tuple((fn, w / total) for fn, w in pairs))

    @property
    def functions(self) -> tuple[Any, ...]:
        """The blended functions, in order."""
        return tuple(fn for fn, _ in self.weights)

    def _children(self) -> tuple[Any, ...]:
        return tuple(fn for fn, _ in self.weights)

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        """The weighted average of the children's scores at ``now`` (importance applied)."""
        return self._raw(entry, to_us(now))

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        total = 0.0
        for (fn, w), st in zip(self.weights, self._states(entry)):
            if w:
                total += w * _effective(fn, _view(entry, st), now_us)
        return total

    def to_dict(self) -> dict[str, Any]:
        """Name and ``[child to_dict(), weight]`` pairs; ``custom`` if a child is not a built-in."""
        if not all(_builtin(fn) for fn, _ in self.weights):
            return {"name": _CUSTOM, "repr": repr(self)[:200]}
        return {"name": self.name, "weights": [[fn.to_dict(), w] for fn, w in self.weights]}

    def __repr__(self) -> str:
        return f"Blend([{', '.join(f'({fn!r}, {w!r})' for fn, w in self.weights)}])"


@dataclass(frozen=True, slots=True, init=False)
class ByMetadata:
    """Pick a decay function per entry from ``entry.metadata[key]``.

    ``choices`` maps metadata values to functions; entries whose value is
    missing or not listed use ``default`` (an hour-half-life
    :class:`~lethe.decay.Exponential` if omitted).  The score is the chosen
    child's score as a memory would give it (importance applied unless the
    child includes it, clamped to 0..1), so ``includes_importance`` is True
    and each entry scores exactly as under its chosen function.  The state
    is a :class:`Picked` pair ``(choice index, child state)``.

    Args:
        key: The metadata key to read.
        choices: A mapping (or pairs) of metadata value to decay function.
        default: The function for any other entry.

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> from lethe.decay import Exponential
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> fn = ByMetadata("kind", {"fact": Exponential(7200)}, default=Exponential(3600))
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t, metadata={"kind": "fact"})
    >>> fn.score(e, t + timedelta(hours=2))
    0.5
    """

    name: ClassVar[str] = "by_metadata"
    includes_importance: ClassVar[bool] = True
    key: str
    choices: tuple[tuple[Hashable, Any], ...]
    default: Any

    def __init__(
        self,
        key: str,
        choices: Mapping[Any, Any] | Iterable[tuple[Any, Any]],
        default: Any = None,
    ) -> None:
        text(key, "key")
        items = list(choices.items() if isinstance(choices, Mapping) else choices)
        pairs: list[tuple[Hashable, Any]] = []
        for i, pair in enumerate(items):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"choices[{i}] must be a (value, function) pair, got {short_repr(pair)}")
            value, fn = pair
            if not isinstance(value, (str, int, float, bool)) and value is not None:
                raise TypeError(f"choices[{i}] value must be a str, number, bool or None, got {type(value).__name__}")
            if any(v == value and type(v) is type(value) for v, _ in pairs):
                raise ValueError(f"choices lists {short_repr(value)} twice")
            pairs.append((value, _check_fn(fn, f"choices[{value!r}]")))
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "choices", tuple(pairs))
        object.__setattr__(self, "default", Exponential() if default is None else _check_fn(default, "default"))

    def pick(self, entry: Entry[Any, Any]) -> tuple[int, Any]:
        """``(index, function)`` chosen for ``entry``; index -1 is the default."""
        value = entry.metadata.get(self.key, _MISSING)
        for i, (v, fn) in enumerate(self.choices):
            if type(v) is type(value) and v == value:
                return i, fn
        return -1, self.default

    def _child_state(self, entry: Entry[Any, Any], index: int) -> Any:
        st = entry.decay_state
        return st[1] if type(st) is Picked and st[0] == index else None

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        """The chosen function's score at ``now`` (importance applied)."""
        return self._raw(entry, to_us(now))

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        i, fn = self.pick(entry)
        return _effective(fn, _view(entry, self._child_state(entry, i)), now_us)

    def rehearse(self, entry: Entry[Any, Any], now: datetime) -> Picked:
        """The new ``decay_state`` after a rehearsal: the chosen function's new state."""
        return self._rehearse(entry, to_us(now))

    def _rehearse(self, entry: Entry[Any, Any], now_us: float) -> Picked:
        i, fn = self.pick(entry)
        return Picked((i, _child_rehearse(fn, _view(entry, self._child_state(entry, i)), now_us)))

    def _fn_at(self, index: int) -> Any:
        return self.default if index == -1 else self.choices[index][1]

    def dump_state(self, state: Picked) -> list[Any]:
        """``decay_state`` as JSON: ``[choice index, dumped child state]``."""
        return [state[0], _dump(self._fn_at(state[0]), state[1])]

    def load_state(self, data: object) -> Picked | None:
        """``decay_state`` from :meth:`dump_state` output; ValueError if malformed."""
        if data is None:
            return None
        if not isinstance(data, (list, tuple)) or len(data) != 2:
            raise ValueError("decay_state must be null or [choice index, child state]")
        i = data[0]
        if not is_int(i) or not -1 <= i < len(self.choices):
            raise ValueError(f"decay_state has a bad choice index: {short_repr(i)}")
        return Picked((i, _load(self._fn_at(i), data[1])))

    def to_dict(self) -> dict[str, Any]:
        """Name, key, ``[value, child to_dict()]`` pairs and default; ``custom`` if a child is not a built-in."""
        fns = [fn for _, fn in self.choices] + [self.default]
        if not all(_builtin(fn) for fn in fns):
            return {"name": _CUSTOM, "repr": repr(self)[:200]}
        return {
            "name": self.name,
            "key": self.key,
            "choices": [[v, fn.to_dict()] for v, fn in self.choices],
            "default": self.default.to_dict(),
        }

    def __repr__(self) -> str:
        choices = ", ".join(f"{v!r}: {fn!r}" for v, fn in self.choices)
        return f"ByMetadata({self.key!r}, {{{choices}}}, default={self.default!r})"


_MISSING = object()


@dataclass(frozen=True, slots=True, init=False)
class Importance:
    """The entry's importance as a score: ``raw = min(importance, 1)``, constant in time.

    The importance component of :func:`priority_blend`.  It
    includes importance (``includes_importance`` is True) and ignores time
    and rehearsals.

    >>> from datetime import datetime, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> Importance().score(Entry(key=1, value="v", inserted_at=t, last_accessed_at=t, importance=0.7), t)
    0.7
    """

    name: ClassVar[str] = "importance"
    includes_importance: ClassVar[bool] = True

    def __init__(self) -> None:
        pass

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        """``min(entry.importance, 1)``."""
        return self._raw(entry, to_us(now))

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        imp = entry.importance
        return imp if imp < 1.0 else 1.0

    def to_dict(self) -> dict[str, Any]:
        """Name (there are no parameters)."""
        return {"name": self.name}

    def __repr__(self) -> str:
        return "Importance()"


@dataclass(frozen=True, slots=True, init=False)
class Recency:
    """Recency of creation: ``raw = 0.5 ** (age / half_life)``, age since the entry was put.

    The recency component of :func:`priority_blend`: time since creation,
    normalized with a half-life.  Rehearsals do not change it.  It ignores importance on
    purpose (``includes_importance`` is True so nothing multiplies it): pair
    it with :class:`Importance` in a :class:`Blend`.

    Args:
        half_life: Age at which the score is 0.5 (``timedelta`` or seconds, > 0).

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t)
    >>> Recency(half_life=timedelta(days=7)).score(e, t + timedelta(days=14))
    0.25
    """

    name: ClassVar[str] = "recency"
    includes_importance: ClassVar[bool] = True
    half_life: float
    _half_life_us: float

    def __init__(self, half_life: timedelta | float = timedelta(days=7)) -> None:
        secs = duration(half_life, "half_life")
        object.__setattr__(self, "half_life", secs)
        object.__setattr__(self, "_half_life_us", secs * 1e6)

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        """``0.5 ** (age / half_life)``."""
        return self._raw(entry, to_us(now))

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        age = now_us - entry.inserted_us
        if age <= 0.0:
            return 1.0
        raw: float = 0.5 ** (age / self._half_life_us)
        return raw

    def to_dict(self) -> dict[str, Any]:
        """Name and parameters, JSON-ready."""
        return {"name": self.name, "half_life": self.half_life}

    def __repr__(self) -> str:
        return f"Recency(half_life={self.half_life!r})"


@dataclass(frozen=True, slots=True, init=False)
class AccessFrequency:
    """How often the entry was used: ``raw = min(access_count / saturation, 1)``.

    The access component of :func:`priority_blend`: the number of accesses,
    normalized to ``saturation`` (100 by default).  Constant in time, raised by each
    rehearsal, importance-free (``includes_importance`` is True so nothing
    multiplies it).

    Args:
        saturation: Access count at which the score reaches 1 (> 0).

    >>> from datetime import datetime, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> AccessFrequency().score(Entry(key=1, value="v", inserted_at=t, last_accessed_at=t, access_count=25), t)
    0.25
    """

    name: ClassVar[str] = "access_frequency"
    includes_importance: ClassVar[bool] = True
    saturation: float

    def __init__(self, saturation: float = 100.0) -> None:
        s = number(saturation, "saturation", low=0, high=1e12, low_open=True)
        object.__setattr__(self, "saturation", s)

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        """``min(access_count / saturation, 1)``."""
        return self._raw(entry, to_us(now))

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        return min(entry.access_count / self.saturation, 1.0)

    def to_dict(self) -> dict[str, Any]:
        """Name and parameters, JSON-ready."""
        return {"name": self.name, "saturation": self.saturation}

    def __repr__(self) -> str:
        return f"AccessFrequency(saturation={self.saturation!r})"


def priority_blend(
    importance: float = 0.4,
    recency: float = 0.3,
    access: float = 0.2,
    retention: float = 0.1,
    recency_half_life: timedelta | float = timedelta(days=7),
    saturation: float = 100.0,
    retention_fn: Any = None,
) -> Blend:
    """A priority score as a :class:`Blend`: a weighted sum of importance, recency, use and retention.

    A retrieval score in the spirit of Park et al. (2023), "Generative Agents",
    which ranks memories by a weighted sum of recency, importance and relevance.

    ``priority = 0.4 * importance + 0.3 * recency + 0.2 * access + 0.1 * retention``
    with ``importance = min(importance, 1)`` (:class:`Importance`), ``recency``
    the age since creation on a ``recency_half_life`` half-life
    (:class:`Recency`), ``access = min(access_count / saturation, 1)``
    (:class:`AccessFrequency`) and ``retention`` :class:`StabilityExponential`
    by default.  Weights are normalized.  A fresh entry of importance 1 scores
    ``0.4 + 0.3 + 0 + 0.1 = 0.8``, the most an unrehearsed entry can reach.

    Args:
        importance: Weight of the importance component (>= 0).
        recency: Weight of the recency component (>= 0).
        access: Weight of the access component (>= 0).
        retention: Weight of the retention component (>= 0).
        recency_half_life: Half-life of the recency component.
        saturation: Access count at which the access component is 1.
        retention_fn: The retention model (``StabilityExponential()`` if None).

    Raises:
        ValueError, TypeError: a bad weight, half-life, saturation or retention model
            (the message names the parameter), or weights that sum to 0.

    >>> from datetime import datetime, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> round(priority_blend().score(Entry(key=1, value="v", inserted_at=t, last_accessed_at=t), t), 12)
    0.8
    """
    weights = [number(w, n, low=0.0, high=1e12) for w, n in _named(importance, recency, access, retention)]
    ret = StabilityExponential() if retention_fn is None else _check_fn(retention_fn, "retention_fn")
    return Blend(
        [
            (Importance(), weights[0]),
            (Recency(half_life=duration(recency_half_life, "recency_half_life")), weights[1]),
            (AccessFrequency(saturation=saturation), weights[2]),
            (ret, weights[3]),
        ]
    )


def _named(*weights: object) -> zip[tuple[object, str]]:
    return zip(weights, ("importance", "recency", "access", "retention"))
