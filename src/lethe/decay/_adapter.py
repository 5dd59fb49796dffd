"""Calling a decay function: the one place lethe looks up a decay function's members.

:class:`Adapter` looks a function's members up once, when a memory or a
combinator is built: lethe's own models (:func:`is_builtin`) are called
through their float fast paths (``_raw``, ``_rehearse``, ``_values``) and
trusted; any other function gets the entry and an aware datetime, and its
result is checked (:func:`checked_score`: a NaN, an infinity, a non-number or
an awaitable raises, naming the key).  ``Memory``'s scorer is an adapter, and
so is each child of :class:`~lethe.decay.Product`, :class:`~lethe.decay.Blend`
and :class:`~lethe.decay.ByMetadata`.  The members it looks for are declared
as Protocols in :mod:`lethe.decay._protocol`.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
from collections.abc import Callable, Hashable
from datetime import datetime
from typing import Any

from lethe._core.clock import from_us
from lethe._core.entry import Entry
from lethe._core.hooks import closed_if_awaitable
from lethe._core.reprs import short_repr
from lethe._core.validate import check_call, finite_float, is_number

__all__ = [
    "CUSTOM",
    "Adapter",
    "Custom",
    "check_decay_function",
    "check_state",
    "checked_score",
    "dumped_state",
    "identity",
    "is_builtin",
    "moved_state",
    "name_of",
    "part_dict",
    "state_loader",
    "to_dict",
]

#: The ``name`` ``to_dict`` writes for a decay function lethe cannot rebuild.
CUSTOM = "custom"

_FORMS = "an object with score(entry, now), or a callable (entry, now) -> float"


def is_builtin(fn: object) -> bool:
    """Whether ``fn`` is one of lethe's own decay functions (not a subclass defined elsewhere).

    Built-ins are trusted: lethe calls their float fast paths and does not re-check their results.

    >>> from lethe.decay import Exponential
    >>> is_builtin(Exponential()), is_builtin(lambda entry, now: 1.0)
    (True, False)
    """
    return type(fn).__module__.startswith("lethe.decay.")


def check_decay_function(fn: object, name: str, *, by_name: bool = False) -> Any:
    """``fn`` if lethe can call it as a decay function; TypeError naming ``name`` otherwise.

    Refuses a class (not an instance), anything without ``score`` that is not
    callable, an ``async`` one, and a ``score`` (or callable, or ``rehearse``)
    that cannot take ``(entry, now)``.  ``by_name``: the message also offers a
    built-in name (``Memory(decay_fn=...)``).

    Raises:
        TypeError: as above.

    >>> check_decay_function(3, "functions[0]")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: functions[0] must be a decay function: an object with score(entry, now), ...; got int
    """
    if isinstance(fn, type):
        raise TypeError(f"{name}: pass an instance: {fn.__name__}(), not the class")
    score = getattr(fn, "score", None)
    if not callable(score) and not callable(fn):
        forms = f"a built-in name, {_FORMS}" if by_name else f"a decay function: {_FORMS}"
        raise TypeError(f"{name} must be {forms}; got {type(fn).__name__}")
    check_call(score if callable(score) else fn, name, 2, "(entry, now)")
    rehearse = getattr(fn, "rehearse", None)
    if callable(rehearse):
        check_call(rehearse, f"{name}.rehearse", 2, "(entry, now)")
    return fn


def checked_score(value: object, key: object, where: str = "decay_fn") -> float:
    """A custom decay function's result as a finite float.

    Raises:
        TypeError: ``value`` is an awaitable (an ``async def`` score); it is closed first,
            so no "coroutine was never awaited" warning follows.
        ValueError: ``value`` is not a number, is NaN or infinite, or an int beyond
            float range.  Messages name ``where`` and the key, with bounded reprs.

    >>> checked_score(float("nan"), "k")
    Traceback (most recent call last):
    ...
    ValueError: decay_fn returned nan for key 'k'; it must be finite
    """
    if not is_number(value):
        if closed_if_awaitable(value):
            raise TypeError(
                f"{where} returned an awaitable for key {short_repr(key)}; "
                "it must return a number (an async def cannot be a decay function)"
            )
        raise ValueError(f"{where} returned {short_repr(value)} for key {short_repr(key)}; it must return a number")
    f = finite_float(value)
    if f is None and isinstance(value, int):
        raise ValueError(f"{where} returned {short_repr(value)} for key {short_repr(key)}; it must fit in a float")
    if f is None:
        raise ValueError(f"{where} returned {short_repr(value)} for key {short_repr(key)}; it must be finite")
    return f


def to_dict(fn: object) -> dict[str, Any]:
    """``fn.to_dict()`` for a built-in; ``{"name": "custom", "repr": ...}`` for anything else.

    >>> to_dict(lambda entry, now: 1.0)["name"]
    'custom'
    """
    dump = getattr(fn, "to_dict", None)
    if is_builtin(fn) and callable(dump):
        data: dict[str, Any] = dump()
        return data
    return {"name": CUSTOM, "repr": repr(fn)[:200]}


#: What Python prints for where an object lives (``<function f at 0x7f...>``): another in every process.
_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+")


def identity(fn: object) -> str:
    """What a decay function lethe cannot rebuild is known by, the same in every process.

    A name the function's own code declares (a ``str`` attribute ``name`` of
    the object, or of a class defined outside lethe), else a description of
    it that Python prints the same in every process: ``module.qualname`` for
    a function or class; for an object, its class and its parameters (a
    dataclass's fields, else its attributes, or its own ``repr`` when it
    defines one), with sets and dicts in a sorted order and the addresses
    Python prints for objects left out; a bound method is its function and
    its object, a ``functools.partial`` its function and arguments.  Two
    lambdas of one module share an identity: give a decay function a name.

    >>> def hourly(entry, now):
    ...     return 1.0
    >>> identity(hourly)
    'lethe.decay._adapter.hourly'
    """
    declared = _declared_name(fn)
    return declared if declared is not None else _described(fn, 0)


def _declared_name(fn: object) -> str | None:
    """The ``name`` ``fn``'s own code declares, or None (lethe's models declare theirs: not counted)."""
    if type(fn).__module__.startswith("lethe."):
        return None
    held = getattr(fn, "__dict__", {}).get("name")
    if isinstance(held, str):
        return held
    owner = next((c for c in type(fn).__mro__ if "name" in vars(c)), None)
    if owner is None or owner.__module__.startswith("lethe.") or not isinstance(vars(owner)["name"], str):
        return None
    name: str = vars(owner)["name"]
    return name


#: How deep :func:`_described` looks into parameters holding parameters.
_DEPTH = 8


def _described(value: object, depth: int) -> str:
    """``value`` described as :func:`identity` says, the same in every process."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return repr(value)
    if depth > _DEPTH:
        return "..."
    inner = depth + 1
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, types.MethodType):
        return f"{_described(value.__func__, inner)} of {_described(value.__self__, inner)}"
    if isinstance(value, functools.partial):
        args = [_described(value.func, inner), *(_described(a, inner) for a in value.args)]
        args += [f"{k}={_described(v, inner)}" for k, v in sorted(value.keywords.items())]
        return f"functools.partial({', '.join(args)})"
    # Exactly these types (a subclass may print itself another way: its repr, below).
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        items = ", ".join(_described(v, inner) for v in value)
        return f"[{items}]" if type(value) is list else f"({items})"
    if isinstance(value, (set, frozenset)) and type(value) in (set, frozenset):
        return "{" + ", ".join(sorted(_described(v, inner) for v in value)) + "}"
    if isinstance(value, dict) and type(value) is dict:
        pairs = sorted(f"{_described(k, inner)}: {_described(v, inner)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    cls = type(value)
    kind = f"{cls.__module__}.{cls.__qualname__}"
    if dataclasses.is_dataclass(value):
        fields = (f"{f.name}={_described(getattr(value, f.name), inner)}" for f in dataclasses.fields(value))
        return f"{kind}({', '.join(fields)})"
    if cls.__repr__ is not object.__repr__:
        return f"{cls.__module__}.{_ADDRESS.sub('', repr(value))}"
    attrs = getattr(value, "__dict__", None) or {}
    return f"{kind}({', '.join(f'{k}={_described(v, inner)}' for k, v in sorted(attrs.items()))})"


class Custom(Exception):
    """Raised by :func:`part_dict` for a part lethe cannot rebuild: the whole model is then custom."""


def part_dict(fn: object) -> dict[str, Any]:
    """A combinator part's :func:`to_dict`; :class:`Custom` if it is not one lethe can rebuild."""
    data = to_dict(fn)
    if data.get("name") == CUSTOM:
        raise Custom
    return data


def dumped_state(fn: object, state: Any) -> Any:
    """``state`` as JSON through ``fn.dump_state`` when ``fn`` has one (None stays None)."""
    dump = getattr(fn, "dump_state", None)
    return dump(state) if state is not None and callable(dump) else state


def state_loader(fn: object) -> Callable[[object], Any] | None:
    """``fn.load_state``, or None when ``fn`` has none."""
    load = getattr(fn, "load_state", None)
    return load if callable(load) else None


def check_state(fn: object, state: Any) -> None:
    """ValueError saying why, unless ``fn`` keeps ``state`` as an entry's ``decay_state``.

    A state of lethe's own models is kept when ``fn.load_state`` reads it back, of its type
    and equal, from what ``fn.dump_state`` writes (``to_dict`` and ``from_dict`` carry it
    unchanged); a built-in without such a pair keeps none.  A custom function's state is
    its own: any is kept.  Instants in the state are not checked here.

    >>> from lethe.decay import ACTR
    >>> check_state(ACTR(), (1e6, 2e6))
    >>> check_state(ACTR(), (2e6, 1e6))
    Traceback (most recent call last):
    ...
    ValueError: it would read back as (1000000.0, 2000000.0)
    """
    if state is None or not is_builtin(fn):
        return
    load = state_loader(fn)
    if load is None:
        raise ValueError("it keeps none")
    try:
        back = load(dumped_state(fn, state))
    except (TypeError, ValueError, LookupError) as exc:  # (a state of the wrong shape, dumped as it can be)
        raise ValueError(str(exc)) from None
    if type(back) is not type(state) or back != state:
        raise ValueError(f"it would read back as {short_repr(back)}")


def moved_state(fn: Any, state: Any, move: Callable[[float], float], custom: Callable[[Any], Any]) -> Any:
    """``state`` (``fn``'s ``decay_state``) with ``move`` applied to every instant it holds.

    Each of lethe's stateful models declares which instants its state holds
    (``moved_state``: ACT-R its access times, a combinator its parts' states,
    FSRS none); a stateless built-in holds none.  A function that is not
    lethe's own keeps a state lethe cannot look into: it goes to ``custom``.

    Args:
        fn: The decay function that wrote ``state``.
        state: Its ``decay_state``; None stays None.
        move: An instant (microseconds since the epoch) to its new value; it may raise.
        custom: A custom function's state to its new value; it may raise.

    Returns:
        The moved state.

    >>> from lethe.decay import ACTR
    >>> moved_state(ACTR(), (1e6,), lambda t: t + 5.0, lambda state: state)
    (1000005.0,)
    >>> moved_state(lambda entry, now: 1.0, 7, lambda t: t, lambda state: -state)
    -7
    """
    if state is None:
        return None
    if not is_builtin(fn):
        return custom(state)
    declared = getattr(fn, "moved_state", None)
    return state if declared is None else declared(state, move, custom)


def name_of(fn: object) -> str | None:
    """A built-in's registry name (``fn.name``), or None."""
    name = getattr(fn, "name", None) if is_builtin(fn) else None
    return name if isinstance(name, str) else None


def _rate_covers_score(fn: object, member: str = "decay_rate") -> bool:
    """Whether ``fn``'s ``decay_rate`` (or ``member``) was declared for the ``score`` it actually has.

    A subclass that overrides ``score`` but inherits ``decay_rate`` from its
    base has not promised that its scores follow that rate: it is not indexed.
    """
    mro = type(fn).__mro__
    rate_owner = next((c for c in mro if member in vars(c)), None)
    score_owner = next((c for c in mro if "score" in vars(c) or "__call__" in vars(c)), None)
    return rate_owner is None or score_owner is None or issubclass(rate_owner, score_owner)


class Adapter:
    """How lethe calls one decay function: every member looked up once.

    Attributes:
        fn: The decay function.
        where: How messages name it (``"decay_fn"``, or a combinator's part).
        is_builtin: Whether it is one of lethe's own (trusted, fast path).
        multiply: Whether the memory multiplies its score by importance
            (``includes_importance`` is not true).
        fast: ``_raw(entry, now_us)`` of a built-in, else None.
        values: A built-in's ``_values(entries, now_us)`` (rank values of many), else None.
        rate_us: The one decay rate per microsecond of every entry (``decay_rate``), else None.
        rank_key: ``(entry) -> (group, key)`` when the function declares ``rank_key``, the
            importance added to the group when the memory multiplies by it (a custom function's
            results checked); else None.
        bounds: ``(rank_bounds, bound, exact)`` of a built-in whose scores lie between
            time-invariant bounds (``_rank_bounds``, ``_bound``, ``_exact``; see
            ``lethe.ranking._bounded``), the importance added to the group and to the bound when
            the memory multiplies by it; else None.
        rehearse: ``(entry, now, now_us) -> new decay_state`` (``now`` may be
            None), or None when the function keeps no state.
        time_until, dump_state, load_state, merge_states: The optional members, or None.
        half_life: What the function declares as ``half_life`` (unchecked), or None.

    >>> from lethe.decay import Exponential
    >>> Adapter(Exponential(60)).rate_us == Exponential(60).decay_rate / 1e6
    True
    """

    __slots__ = (
        "_call",
        "bounds",
        "dump_state",
        "fast",
        "fn",
        "half_life",
        "is_builtin",
        "load_state",
        "merge_states",
        "multiply",
        "rank_key",
        "rate_us",
        "raw_us",
        "rehearse",
        "time_until",
        "values",
        "where",
    )

    fn: Any
    where: str
    is_builtin: bool
    multiply: bool
    fast: Callable[[Entry[Any, Any], float], float] | None
    raw_us: Callable[[Entry[Any, Any], float], float]
    values: Callable[[list[Entry[Any, Any]], float], list[float]] | None
    rate_us: float | None
    rank_key: Callable[[Entry[Any, Any]], tuple[Hashable, float]] | None
    bounds: (
        tuple[Callable[[Entry[Any, Any]], tuple[Hashable, float, float]], Callable[..., float], Callable[[Any], bool]]
        | None
    )
    rehearse: Callable[[Entry[Any, Any], datetime | None, float], Any] | None
    time_until: Callable[[Entry[Any, Any], float], float | None] | None
    dump_state: Callable[[Any], Any] | None
    load_state: Callable[[object], Any] | None
    merge_states: Callable[..., Any] | None
    half_life: object
    _call: Callable[[Entry[Any, Any], datetime], Any]

    def __init__(self, fn: Any, where: str = "decay_fn") -> None:
        self.fn = fn
        self.where = where
        self.is_builtin = builtin = is_builtin(fn)
        self.multiply = not getattr(fn, "includes_importance", False)
        score = getattr(fn, "score", None)
        self._call = score if callable(score) else fn
        fast = getattr(fn, "_raw", None) if builtin else None
        self.fast = fast
        self.raw_us = self._checked_us if fast is None else fast
        # A built-in may score a whole list at once (importance and expiry included).
        self.values = getattr(fn, "_values", None) if fast is not None and self.multiply else None
        # What the function allows a memory to index, each found on its own: which ranking it
        # gets when it allows several is lethe.ranking's choice (CHOICES), written there alone.
        # One rate for every entry: the ranking never changes.
        rate = finite_float(getattr(fn, "decay_rate", None))
        declared = self.multiply and _rate_covers_score(fn)
        self.rate_us = rate / 1e6 if declared and rate is not None and rate > 0.0 else None
        # A ranking fixed within groups of entries.
        rank_key = getattr(fn, "rank_key", None)
        if callable(rank_key) and _rate_covers_score(fn, "rank_key"):
            self.rank_key = _grouped(rank_key, builtin, self.multiply, where)
        else:
            self.rank_key = None
        # Scores between time-invariant bounds.
        rank_bounds, bound, exact = (getattr(fn, name, None) for name in ("_rank_bounds", "_bound", "_exact"))
        if fast is not None and rank_bounds and bound and exact:
            self.bounds = _bounded(rank_bounds, bound, exact) if self.multiply else (rank_bounds, bound, exact)
        else:
            self.bounds = None
        rehearse_us = getattr(fn, "_rehearse", None) if fast is not None else None
        rehearse = getattr(fn, "rehearse", None)
        if rehearse_us is not None:
            self.rehearse = lambda e, now, now_us: rehearse_us(e, now_us)
        elif callable(rehearse):
            self.rehearse = lambda e, now, now_us: rehearse(e, from_us(now_us) if now is None else now)
        else:
            self.rehearse = None
        self.time_until = _callable(fn, "time_until")
        self.dump_state = _callable(fn, "dump_state")
        self.load_state = _callable(fn, "load_state")
        self.merge_states = _callable(fn, "merge_states")
        self.half_life = getattr(fn, "half_life", None)

    def raw(self, entry: Entry[Any, Any], now: datetime, now_us: float) -> float:
        """The raw score at ``now`` (``now_us`` microseconds): fast for a built-in, checked otherwise."""
        fast = self.fast
        if fast is not None:
            return fast(entry, now_us)
        return self.checked(entry, now)

    def checked(self, entry: Entry[Any, Any], now: datetime) -> float:
        """The function called with a datetime, its result checked (:func:`checked_score`)."""
        value = self._call(entry, now)
        if type(value) is float and value - value == 0.0:  # finite: the common case, checked cheaply
            return value
        return checked_score(value, entry.key, self.where)

    def _checked_us(self, entry: Entry[Any, Any], now_us: float) -> float:
        return self.checked(entry, from_us(now_us))

    def effective(self, entry: Entry[Any, Any], now_us: float) -> float:
        """The score a memory would give: importance applied (unless included), clamped to 0..1."""
        s = self.raw_us(entry, now_us)
        if self.multiply:
            s *= entry.importance
        return 1.0 if s >= 1.0 else (s if s > 0.0 else 0.0)

    def __repr__(self) -> str:
        return f"Adapter({self.fn!r:.80})"


def _grouped(
    rank_key: Callable[[Entry[Any, Any]], Any], builtin: bool, multiply: bool, where: str
) -> Callable[[Entry[Any, Any]], tuple[Hashable, float]]:
    """``rank_key`` as the memory's index calls it: checked unless built in, and with the
    entry's importance in the group when the memory multiplies the raw score by it."""
    if builtin:
        trusted: Callable[[Entry[Any, Any]], tuple[Hashable, float]] = rank_key
        if not multiply:
            return trusted

        def with_importance(entry: Entry[Any, Any]) -> tuple[Hashable, float]:
            group, key = trusted(entry)
            return (entry.importance, group), key

        return with_importance

    def checked(entry: Entry[Any, Any]) -> tuple[Hashable, float]:
        result = rank_key(entry)
        name = f"{where}.rank_key"
        if not isinstance(result, tuple) or len(result) != 2:
            raise TypeError(
                f"{name} returned {short_repr(result)} for key {short_repr(entry.key)}; it must return (group, key)"
            )
        group, key = result
        if not is_number(key) or key != key:
            raise ValueError(
                f"{name} returned the key {short_repr(key)} for key {short_repr(entry.key)}; it must be a number"
            )
        try:
            hash(group)
        except TypeError:
            raise TypeError(
                f"{name} returned the group {short_repr(group)} for key {short_repr(entry.key)}; it must be hashable"
            ) from None
        return ((entry.importance, group) if multiply else group), key

    return checked


def _bounded(
    rank_bounds: Callable[[Entry[Any, Any]], tuple[Hashable, float, float]],
    bound: Callable[..., float],
    exact: Callable[[Any], bool],
) -> tuple[Callable[[Entry[Any, Any]], tuple[Hashable, float, float]], Callable[..., float], Callable[[Any], bool]]:
    """A built-in's bounds on its raw score as bounds on the rank value ``raw * importance``:
    the importance joins the group, and multiplies the bound."""

    def with_importance(entry: Entry[Any, Any]) -> tuple[Hashable, float, float]:
        group, high, low = rank_bounds(entry)
        return (entry.importance, group), high, low

    def scaled(group: tuple[float, Hashable], key: float, now_us: float, upper: bool) -> float:
        return bound(group[1], key, now_us, upper) * group[0]

    def exact_within(group: tuple[float, Hashable]) -> bool:
        return exact(group[1])

    return with_importance, scaled, exact_within


def _callable(fn: object, name: str) -> Any:
    member = getattr(fn, name, None)
    return member if callable(member) else None
