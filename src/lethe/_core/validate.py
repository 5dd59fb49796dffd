"""Checking arguments: the one place every public parameter's type and range is checked.

Every check returns the value in the form lethe keeps it (a float, an int, a
bool...) or raises TypeError for a value of the wrong type and ValueError for
one out of range, with a message that names the parameter and shows what was
received (bounded: a 400-digit int is described, not printed).  None of them
lets an OverflowError through: an int too large for a float is out of range.

The messages follow one pattern per failure:

* wrong type: ``"{name} must be {kind}, got {type}"``;
* an int beyond float range: ``"{name} must be a finite number, got a huge int"``;
* NaN: ``"{name} must not be NaN"``;
* out of range: ``"{name} must be {expected}, got {value}"``, ``expected``
  spelled from the bounds (``"between 0 and 1"``, ``"positive and finite"``...)
  unless the caller words it.

>>> number(0.5, "alpha", low=0, high=1)
0.5
>>> number(2, "alpha", low=0, high=1)
Traceback (most recent call last):
...
ValueError: alpha must be between 0 and 1, got 2
>>> duration(10**400, "ttl")
Traceback (most recent call last):
...
ValueError: ttl must be a positive, finite duration, got an int of 401 digits
"""

from __future__ import annotations

import inspect
import math
import sys
from datetime import timedelta
from typing import Any, TypeGuard

from lethe._core.reprs import short_repr

__all__ = [
    "check_call",
    "duration",
    "finite_float",
    "flag",
    "hook",
    "integer",
    "is_async",
    "is_int",
    "is_number",
    "number",
    "text",
    "unit",
]

_INF = math.inf
_FLOAT_MAX = sys.float_info.max


def is_number(value: object) -> TypeGuard[int | float]:
    """Whether ``value`` is an int or a float, and not a bool (``True`` is not a number here).

    >>> is_number(1), is_number(1.5), is_number(True), is_number("1")
    (True, True, False, False)
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_int(value: object) -> TypeGuard[int]:
    """Whether ``value`` is an int, and not a bool.

    >>> is_int(3), is_int(3.0), is_int(False)
    (True, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool)


def finite_float(value: object) -> float | None:
    """``value`` as a finite float; None for a non-number, a bool, NaN, an infinity or an int beyond float range.

    For reading numbers from data (metadata, saved state) where a bad one is
    skipped or reported by the caller in its own words.

    >>> finite_float(3), finite_float(10**400), finite_float(float("nan")), finite_float("3")
    (3.0, None, None, None)
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if -_FLOAT_MAX <= value <= _FLOAT_MAX else None
    f = float(value)
    return f if f - f == 0.0 else None


def _bound(value: float) -> str:
    return str(value)


def _expected(low: float, high: float, low_open: bool, high_open: bool) -> str:
    """The range ``low..high`` in words, as the end of ``"... must be "``."""
    has_low, has_high = low > -_INF, high < _INF
    if has_low and has_high:
        if low_open and high_open:
            return f"strictly between {_bound(low)} and {_bound(high)}"
        if low_open:
            return f"greater than {_bound(low)} and at most {_bound(high)}"
        if high_open:
            return f"at least {_bound(low)} and less than {_bound(high)}"
        return f"between {_bound(low)} and {_bound(high)}"
    if has_low:
        if low == 0:
            return "positive and finite" if low_open else "finite and >= 0"
        return f"finite and {'>' if low_open else '>='} {_bound(low)}"
    if has_high:
        return f"finite and {'<' if high_open else '<='} {_bound(high)}"
    return "finite"


def number(
    value: object,
    name: str,
    *,
    low: float = -_INF,
    high: float = _INF,
    low_open: bool = False,
    high_open: bool = False,
    kind: str = "a number",
    expected: str | None = None,
) -> float:
    """``value`` as a finite float within ``low..high``.

    Args:
        value: What the caller passed.
        name: The parameter's name, for messages.
        low, high: The bounds (inclusive unless ``low_open``/``high_open``);
            infinite bounds leave that side open, but the value is always finite.
        kind: What the TypeError says the value must be (``"a number"``).
        expected: What the range ValueError says it must be; spelled from the
            bounds if None.

    Returns:
        The value as a float.

    Raises:
        TypeError: ``value`` is not an int or a float (a bool is not a number).
        ValueError: NaN, infinite, an int beyond float range, or out of range.

    >>> number(3, "x", low=0, low_open=True)
    3.0
    >>> number(0, "x", low=0, low_open=True)
    Traceback (most recent call last):
    ...
    ValueError: x must be positive and finite, got 0
    >>> number(float("nan"), "x")
    Traceback (most recent call last):
    ...
    ValueError: x must not be NaN
    """
    if type(value) is float:  # the common case (importance on every put), without the checks below
        f = value
    else:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"{name} must be {kind}, got {type(value).__name__}")
        if isinstance(value, int) and not -_FLOAT_MAX <= value <= _FLOAT_MAX:
            sign = "" if value > 0 else " negative"
            raise ValueError(f"{name} must be a finite number, got a huge{sign} int")
        f = float(value)
    if f != f:
        raise ValueError(f"{name} must not be NaN")
    if (
        f - f != 0.0  # infinite
        or (f <= low if low_open else f < low)
        or (f >= high if high_open else f > high)
    ):
        words = _expected(low, high, low_open, high_open) if expected is None else expected
        raise ValueError(f"{name} must be {words}, got {short_repr(value)}")
    return f


def unit(value: object, name: str, *, kind: str = "a number", expected: str = "between 0 and 1") -> float:
    """``value`` as a float between 0 and 1 inclusive (a threshold): :func:`number` with those bounds.

    >>> unit(1, "eviction_threshold")
    1.0
    >>> unit(1.5, "eviction_threshold")
    Traceback (most recent call last):
    ...
    ValueError: eviction_threshold must be between 0 and 1, got 1.5
    """
    return number(value, name, low=0, high=1, kind=kind, expected=expected)


def integer(
    value: object,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
    kind: str = "an int",
    low_text: str | None = None,
    high_text: str | None = None,
    wrong_type: type[Exception] = TypeError,
) -> int:
    """``value`` as an int within ``low..high`` (inclusive; None leaves that side open).

    Messages: ``"{name} must be {kind}, got {type}"`` (TypeError),
    ``"{name} must be {low_text}, got {value}"`` below ``low`` (``low_text``
    defaults to ``">= {low}"``) and ``"{name} must be at most {high_text}, got
    {value}"`` above ``high``.

    Raises:
        TypeError: ``value`` is not an int (a bool is not one); ``wrong_type``
            instead when given (parameters documented to raise ValueError for
            anything but an int in range).
        ValueError: out of range.

    >>> integer(3, "n", low=0)
    3
    >>> integer(-1, "n", low=0)
    Traceback (most recent call last):
    ...
    ValueError: n must be >= 0, got -1
    >>> integer(2.0, "n")
    Traceback (most recent call last):
    ...
    TypeError: n must be an int, got float
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise wrong_type(f"{name} must be {kind}, got {type(value).__name__}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be {low_text or f'>= {low}'}, got {short_repr(value)}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be at most {high_text or high}, got {short_repr(value)}")
    return value


def duration(value: object, name: str) -> float:
    """A positive, finite duration in seconds, from a ``timedelta`` or a number of seconds.

    Raises:
        TypeError: ``value`` is neither a ``timedelta`` nor a number (a bool is not one).
        ValueError: zero, negative, NaN, infinite, or an int beyond float range.

    >>> duration(timedelta(minutes=1), "half_life")
    60.0
    >>> duration(True, "half_life")
    Traceback (most recent call last):
    ...
    TypeError: half_life must be a timedelta or a number of seconds, got bool
    """
    if isinstance(value, timedelta):
        secs = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        secs = finite_float(value) or 0.0  # beyond float range, NaN or infinite: refused below
    else:
        raise TypeError(f"{name} must be a timedelta or a number of seconds, got {type(value).__name__}")
    if not 0.0 < secs < _INF:
        raise ValueError(f"{name} must be a positive, finite duration, got {short_repr(value)}")
    return secs


def flag(value: object, name: str) -> bool:
    """``value`` if it is a bool, else TypeError naming ``name``.

    >>> flag(1, "pinned")
    Traceback (most recent call last):
    ...
    TypeError: pinned must be a bool, got int
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def text(value: object, name: str) -> str:
    """``value`` if it is a str, else TypeError naming ``name``.

    >>> text(None, "emotion_key")
    Traceback (most recent call last):
    ...
    TypeError: emotion_key must be a str, got NoneType
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def is_async(fn: object) -> bool:
    """Whether calling ``fn`` (or, for a decay object, its ``score``) returns an awaitable by
    construction: an ``async def``, also as ``__call__``, or an async generator.

    >>> async def f() -> None: ...
    >>> is_async(f), is_async(len)
    (True, False)
    """
    score = getattr(fn, "score", None)
    target = score if callable(score) else fn
    if inspect.iscoroutinefunction(target) or inspect.isasyncgenfunction(target):
        return True
    if inspect.isfunction(target) or inspect.ismethod(target):
        return False
    call = next((vars(c)["__call__"] for c in type(target).__mro__ if "__call__" in vars(c)), None)
    return inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call)


def check_call(fn: object, name: str, args: int | None, shape: str) -> None:
    """Refuse a callable lethe could not call: ``async``, or unable to take ``args`` positional arguments.

    Callables without an introspectable signature (some built-ins) are accepted;
    ``args=None`` checks only that ``fn`` is not ``async``.

    Raises:
        TypeError: naming ``name`` and the expected ``shape``, e.g. ``"(entry, now)"``.

    >>> check_call(lambda: 1, "clock_fn", 0, "()")
    >>> check_call(lambda: 1, "on_evict", 1, "(entries)")
    Traceback (most recent call last):
    ...
    TypeError: on_evict must accept (entries); its signature is ()
    """
    if is_async(fn):
        raise TypeError(f"{name} must be a plain callable {shape}, not async: the memory uses its result directly")
    if args is None:
        return
    try:
        signature = inspect.signature(fn)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*range(args))
    except TypeError:
        raise TypeError(f"{name} must accept {shape}; its signature is {str(signature)[:80]}") from None


def hook(value: object, name: str, args: int | None = None, shape: str = "", *, optional: bool = True) -> Any:
    """``value`` if lethe can call it as the hook ``name``; None passes when ``optional``.

    Refuses a non-callable (``"{name} must be callable or None, got {type}"``,
    or ``"{name} must be callable, got {type}"`` when not ``optional``), an
    ``async`` callable, and, with ``args``, one that cannot take that many
    positional arguments (``shape`` shows them, e.g. ``"(entry)"``).

    Raises:
        TypeError: as above.

    >>> hook(None, "on_evict") is None
    True
    >>> hook(3, "predicate", optional=False)
    Traceback (most recent call last):
    ...
    TypeError: predicate must be callable, got int
    """
    if value is None and optional:
        return None
    if not callable(value):
        what = "callable or None" if optional else "callable"
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    check_call(value, name, args, shape)
    return value
