"""The decay-function protocol and the glue that turns any decay function into a scorer."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from lethe._clock import from_us
from lethe._entry import Entry
from lethe._hooks import closed_if_awaitable
from lethe._reprs import short_repr
from lethe._validate import finite_float, is_number

__all__ = ["DecayCallable", "DecayFunction", "is_builtin"]


@runtime_checkable
class DecayFunction(Protocol):
    """What a decay function is: an object with ``score(entry, now) -> float``.

    ``score`` returns the entry's raw relevance at ``now``: 1.0 when fresh,
    falling towards 0.0 as the entry goes unrehearsed.  :class:`~lethe.Memory`
    multiplies it by the entry's importance and clamps the result to 0..1, so
    ``score`` must not apply importance itself (unless it says so, below).  It
    must be pure: same entry and time, same result.

    A decay function may also define these optional members:

    ``includes_importance: bool``
        True when ``score`` already accounts for ``entry.importance``; the
        memory then only clamps.
    ``rehearse(entry, now) -> state``
        Called on every rehearsal (``get``, ``touch``, ``update``) with the
        entry as it was before; the value returned becomes the new entry's
        ``decay_state``.  A fresh entry has ``decay_state`` None, so the
        function derives its initial state from the entry's fields.
    ``decay_rate: float``
        Declares that ``score(entry, now) == exp(-decay_rate * seconds since
        entry.last_accessed_at)`` for every entry: one rate for all entries,
        so the ranking of entries never changes with time.  The memory then
        keeps an index on that ranking (see the performance guide).  A
        subclass that overrides ``score`` must declare ``decay_rate`` again
        to keep the index; an inherited one is not taken as a promise.
    ``to_dict() -> dict``
        JSON-ready name and parameters, for :meth:`~lethe.Memory.to_dict`.
    ``time_until(entry, score) -> float | None``
        Seconds after ``entry.last_accessed_at`` at which the raw score falls
        to ``score`` (closed-form forecasts); None for never.

    Any plain callable ``(entry, now) -> float`` works too; the memory wraps it.

    >>> from lethe.decay import Exponential
    >>> isinstance(Exponential(), DecayFunction)
    True
    """

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        """The entry's raw relevance at ``now``, in 0..1."""
        ...


DecayCallable = Callable[[Entry[Any, Any], datetime], float]


def is_builtin(fn: object) -> bool:
    """Whether ``fn`` is one of lethe's own decay functions.

    Built-ins are trusted: the memory calls their float fast path (``_raw``,
    ``_rehearse``) and does not re-check their results.
    """
    return type(fn).__module__.startswith("lethe.decay.")


def checked_score(value: object, key: object, where: str = "decay_fn") -> float:
    """A custom decay function's result as a finite float.

    Raises:
        TypeError: ``value`` is an awaitable (an ``async def`` score); it is closed first,
            so no "coroutine was never awaited" warning follows.
        ValueError: ``value`` is not a number, is NaN or infinite, or an int beyond
            float range.  Messages name ``where`` and the key, with bounded reprs.
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


def now_of(now_us: float) -> datetime:
    """The datetime for a microsecond count (for calling user code)."""
    return from_us(now_us)
