"""Combining decay functions: products, weighted blends, per-entry choice, and the priority preset."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from datetime import timedelta
from functools import partial
from typing import Any, ClassVar

from lethe._core.entry import Entry
from lethe._core.record import evolve
from lethe._core.reprs import short_repr
from lethe._core.validate import duration, is_int, number, text
from lethe.decay._adapter import Adapter, check_decay_function, moved_state, part_dict
from lethe.decay._base import Load, Model, Param, Stateful
from lethe.decay._classic import Exponential
from lethe.decay._field import StabilityExponential

__all__ = [
    "AccessFrequency",
    "Blend",
    "ByMetadata",
    "Importance",
    "Product",
    "Recency",
    "priority_blend",
]


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


def _part(fn: Any) -> Adapter:
    """How a combinator calls one of its parts (messages name the part)."""
    return Adapter(fn, f"decay_fn (its part {short_repr(fn)})")


def _view(entry: Entry[Any, Any], state: Any) -> Entry[Any, Any]:
    """``entry`` as a part sees it: with the part's own ``decay_state``."""
    return entry if entry.decay_state is state else evolve(entry, decay_state=state)


def _dump(part: Adapter, state: Any) -> Any:
    dump = part.dump_state
    return dump(state) if state is not None and dump is not None else state


def _load(part: Adapter, data: Any) -> Any:
    load = part.load_state
    if load is not None:
        return load(data)
    if data is not None and part.is_builtin:
        raise ValueError(f"{short_repr(part.fn)} keeps no decay_state, got {short_repr(data)}")
    return data


def _rehearsed(part: Adapter, entry: Entry[Any, Any], now_us: float) -> Any:
    rehearse = part.rehearse
    return None if rehearse is None else rehearse(entry, None, now_us)


def _json_list(value: object, where: str, what: str = "a list") -> list[Any]:
    if not isinstance(value, list):
        got = type(value).__name__ if what == "a list" else _short(value)
        raise ValueError(f"{where}: expected {what}, got {got}")
    return value


def _short(value: object) -> str:
    text_ = str(value)
    return text_ if len(text_) <= 60 else text_[:57] + "..."


class _Children(Stateful):
    """Shared state handling for combinators holding a fixed tuple of parts (``_parts``, adapters)."""

    __slots__ = ()
    _parts: tuple[Adapter, ...]

    def _children(self) -> tuple[Any, ...]:
        """The part decay functions, in the order their states are kept."""
        return tuple(part.fn for part in self._parts)

    def _states(self, entry: Entry[Any, Any]) -> tuple[Any, ...]:
        st = entry.decay_state
        n = len(self._parts)
        if type(st) is ChildStates and len(st) == n:
            return st
        return (None,) * n

    def _rehearse(self, entry: Entry[Any, Any], now_us: float) -> ChildStates:
        states = self._states(entry)
        return ChildStates(_rehearsed(part, _view(entry, st), now_us) for part, st in zip(self._parts, states))

    def moved_state(
        self, state: ChildStates, move: Callable[[float], float], custom: Callable[[Any], Any]
    ) -> ChildStates:
        """``decay_state`` moved in time: each part's state moved as that part declares."""
        return ChildStates(moved_state(fn, st, move, custom) for fn, st in zip(self._children(), state))

    def dump_state(self, state: ChildStates) -> list[Any]:
        """``decay_state`` as JSON: a list of the parts' dumped states."""
        return [_dump(part, st) for part, st in zip(self._parts, state)]

    def load_state(self, data: object) -> ChildStates | None:
        """``decay_state`` from :meth:`dump_state` output; ValueError if malformed."""
        if data is None:
            return None
        n = len(self._parts)
        if not isinstance(data, (list, tuple)) or len(data) != n:
            raise ValueError(f"decay_state must be null or a list of {n} child states")
        return ChildStates(_load(part, d) for part, d in zip(self._parts, data))


def _functions(value: tuple[Any, ...], name: str) -> tuple[Any, ...]:
    if not value:
        raise ValueError("Product needs at least one decay function")
    return tuple(check_decay_function(fn, f"{name}[{i}]") for i, fn in enumerate(value))


def _load_functions(value: object, where: str, load: Load) -> list[Any]:
    return [load(f, f"{where}[{i}]") for i, f in enumerate(_json_list(value, where))]


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
    params = (Param("functions", _functions, dump=lambda fns: [part_dict(fn) for fn in fns], load=_load_functions),)
    __slots__ = ("_parts", "functions", "includes_importance")
    functions: tuple[Any, ...]
    includes_importance: bool

    def __init__(self, *functions: Any) -> None:
        self._init(functions)

    def _derive(self) -> None:
        parts = tuple(_part(fn) for fn in self.functions)
        object.__setattr__(self, "_parts", parts)
        object.__setattr__(self, "includes_importance", any(not part.multiply for part in parts))

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        out = 1.0
        for part, st in zip(self._parts, self._states(entry)):
            out *= part.raw_us(_view(entry, st), now_us)
            if out == 0.0:
                break
        return out


def _weights(value: Mapping[Any, float] | Iterable[tuple[Any, float]], name: str) -> tuple[tuple[Any, float], ...]:
    items = list(value.items() if isinstance(value, Mapping) else value)
    if not items:
        raise ValueError("Blend needs at least one (function, weight) pair")
    pairs: list[tuple[Any, float]] = []
    for i, pair in enumerate(items):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"{name}[{i}] must be a (function, weight) pair, got {short_repr(pair)}")
        fn, w = pair
        weight = number(w, f"{name}[{i}] weight", low=0.0, high=1e12)
        pairs.append((check_decay_function(fn, f"{name}[{i}] function"), weight))
    total = math.fsum(w for _, w in pairs)
    if total <= 0.0:
        raise ValueError("Blend weights must have a positive sum")
    if abs(total - 1.0) <= len(pairs) * 2.0**-52:
        # Weights that sum to 1 but for rounding (as this division leaves them) are kept as they
        # are: dividing again would move some by a bit, and a saved or printed Blend would not
        # read back equal to itself.
        return tuple(pairs)
    return tuple((fn, w / total) for fn, w in pairs)


def _load_weights(value: object, where: str, load: Load) -> list[tuple[Any, Any]]:
    pairs = []
    for i, pair in enumerate(_json_list(value, where, "a list of [function, weight] pairs")):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f"{where}[{i}] must be a [function, weight] pair")
        pairs.append((load(pair[0], f"{where}[{i}]"), pair[1]))
    return pairs


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
    params = (
        Param(
            "weights",
            _weights,
            dump=lambda pairs: [[part_dict(fn), w] for fn, w in pairs],
            show=lambda pairs: repr(list(pairs)),
            load=_load_weights,
        ),
    )
    __slots__ = ("_parts", "_shares", "weights")
    weights: tuple[tuple[Any, float], ...]
    _shares: tuple[float, ...]

    def __init__(self, weights: Mapping[Any, float] | Iterable[tuple[Any, float]]) -> None:
        self._init(weights)

    def _derive(self) -> None:
        object.__setattr__(self, "_parts", tuple(_part(fn) for fn, _ in self.weights))
        object.__setattr__(self, "_shares", tuple(w for _, w in self.weights))

    @property
    def functions(self) -> tuple[Any, ...]:
        """The blended functions, in order."""
        return tuple(fn for fn, _ in self.weights)

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        total = 0.0
        for part, w, st in zip(self._parts, self._shares, self._states(entry)):
            if w:
                total += w * part.effective(_view(entry, st), now_us)
        return total


def _choices(value: Mapping[Any, Any] | Iterable[tuple[Any, Any]], name: str) -> tuple[tuple[Hashable, Any], ...]:
    items = list(value.items() if isinstance(value, Mapping) else value)
    pairs: list[tuple[Hashable, Any]] = []
    for i, pair in enumerate(items):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"{name}[{i}] must be a (value, function) pair, got {short_repr(pair)}")
        v, fn = pair
        if not isinstance(v, (str, int, float, bool)) and v is not None:
            raise TypeError(f"{name}[{i}] value must be a str, number, bool or None, got {type(v).__name__}")
        if any(u == v and type(u) is type(v) for u, _ in pairs):
            raise ValueError(f"{name} lists {short_repr(v)} twice")
        pairs.append((v, check_decay_function(fn, f"{name}[{v!r}]")))
    return tuple(pairs)


def _default(value: Any, name: str) -> Any:
    return Exponential() if value is None else check_decay_function(value, name)


def _load_choices(value: object, where: str, load: Load) -> list[tuple[Any, Any]]:
    picked = []
    for i, pair in enumerate(_json_list(value, where, "a list of [value, function] pairs")):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f"{where}[{i}] must be a [value, function] pair")
        picked.append((pair[0], load(pair[1], f"{where}[{i}]")))
    return picked


class ByMetadata(Stateful):
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
    params = (
        Param("key", text),
        Param(
            "choices",
            _choices,
            dump=lambda pairs: [[v, part_dict(fn)] for v, fn in pairs],
            show=lambda pairs: repr(list(pairs)),
            load=_load_choices,
        ),
        Param("default", _default, dump=part_dict, load=lambda value, where, load: load(value, where)),
    )
    __slots__ = ("_default_part", "_parts", "choices", "default", "key")
    key: str
    choices: tuple[tuple[Hashable, Any], ...]
    default: Any
    _parts: tuple[Adapter, ...]
    _default_part: Adapter

    def __init__(
        self,
        key: str,
        choices: Mapping[Any, Any] | Iterable[tuple[Any, Any]],
        default: Any = None,
    ) -> None:
        self._init(key, choices, default)

    def _derive(self) -> None:
        object.__setattr__(self, "_parts", tuple(_part(fn) for _, fn in self.choices))
        object.__setattr__(self, "_default_part", _part(self.default))

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

    def _picked(self, entry: Entry[Any, Any]) -> tuple[int, Adapter]:
        value = entry.metadata.get(self.key, _MISSING)
        for i, (v, _) in enumerate(self.choices):
            if type(v) is type(value) and v == value:
                return i, self._parts[i]
        return -1, self._default_part

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        i, part = self._picked(entry)
        return part.effective(_view(entry, self._child_state(entry, i)), now_us)

    def _rehearse(self, entry: Entry[Any, Any], now_us: float) -> Picked:
        i, part = self._picked(entry)
        return Picked((i, _rehearsed(part, _view(entry, self._child_state(entry, i)), now_us)))

    def _part_at(self, index: int) -> Adapter:
        return self._default_part if index == -1 else self._parts[index]

    def _fn_at(self, index: int) -> Any:
        return self._part_at(index).fn

    def moved_state(self, state: Picked, move: Callable[[float], float], custom: Callable[[Any], Any]) -> Picked:
        """``decay_state`` moved in time: the chosen part's state moved as that part declares."""
        return Picked((state[0], moved_state(self._fn_at(state[0]), state[1], move, custom)))

    def dump_state(self, state: Picked) -> list[Any]:
        """``decay_state`` as JSON: ``[choice index, dumped child state]``."""
        return [state[0], _dump(self._part_at(state[0]), state[1])]

    def load_state(self, data: object) -> Picked | None:
        """``decay_state`` from :meth:`dump_state` output; ValueError if malformed."""
        if data is None:
            return None
        if not isinstance(data, (list, tuple)) or len(data) != 2:
            raise ValueError("decay_state must be null or [choice index, child state]")
        i = data[0]
        if not is_int(i) or not -1 <= i < len(self.choices):
            raise ValueError(f"decay_state has a bad choice index: {short_repr(i)}")
        return Picked((i, _load(self._part_at(i), data[1])))


_MISSING = object()


class Importance(Model):
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
    params = ()
    __slots__ = ()

    def __init__(self) -> None:
        self._init()

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        imp = entry.importance
        return imp if imp < 1.0 else 1.0

    def rank_key(self, entry: Entry[Any, Any]) -> tuple[Hashable, float]:
        """``(None, score)``: constant in time, one group (:class:`~lethe.decay.Grouped`)."""
        return None, self._raw(entry, 0.0)


class Recency(Model):
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
    params = (Param("half_life", duration),)
    __slots__ = ("_half_life_us", "half_life")
    half_life: float
    _half_life_us: float

    def __init__(self, half_life: timedelta | float = timedelta(days=7)) -> None:
        self._init(half_life)

    def _derive(self) -> None:
        object.__setattr__(self, "_half_life_us", self.half_life * 1e6)

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        age = now_us - entry.inserted_us
        if age <= 0.0:
            return 1.0
        raw: float = 0.5 ** (age / self._half_life_us)
        return raw

    def rank_key(self, entry: Entry[Any, Any]) -> tuple[Hashable, float]:
        """``(None, when put)``: one curve for every entry, so a later put never scores lower
        (:class:`~lethe.decay.Grouped`)."""
        return None, entry.inserted_us


class AccessFrequency(Model):
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
    params = (Param("saturation", partial(number, low=0, high=1e12, low_open=True)),)
    __slots__ = ("saturation",)
    saturation: float

    def __init__(self, saturation: float = 100.0) -> None:
        self._init(saturation)

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        return min(entry.access_count / self.saturation, 1.0)

    def rank_key(self, entry: Entry[Any, Any]) -> tuple[Hashable, float]:
        """``(None, score)``: constant in time, one group (:class:`~lethe.decay.Grouped`)."""
        return None, self._raw(entry, 0.0)


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
    ret = StabilityExponential() if retention_fn is None else check_decay_function(retention_fn, "retention_fn")
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
