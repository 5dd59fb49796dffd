"""Reading the clock: aware datetimes in, exact microsecond counts out."""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable

from lethe._hooks import closed_if_awaitable
from lethe._reprs import short_repr

Clock = Callable[[], _dt.datetime]

UTC = _dt.timezone.utc
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)
#: The latest microsecond count :func:`from_us` turns into a datetime: ``datetime.max``
#: in UTC, rounded down to a float (past 2**53 floats step by more than a microsecond).
MAX_US = math.nextafter(float((_dt.datetime.max.replace(tzinfo=UTC) - _EPOCH) // _dt.timedelta(microseconds=1)), 0.0)


def utc_now() -> _dt.datetime:
    """The default clock: ``datetime.now(timezone.utc)``, looked up at each call.

    Looking it up at call time (rather than binding it at import) is what lets
    ``freezegun.freeze_time`` control a memory built without a clock.
    """
    return _dt.datetime.now(_dt.timezone.utc)


def to_us(moment: _dt.datetime, name: str = "now") -> float:
    """Microseconds since the Unix epoch, as an exactly integral float.

    Floats hold integers exactly up to 2**53 (year 2255 in microseconds), so
    differences of these values are exact: scoring does float arithmetic
    without the rounding of ``datetime.timestamp()``.

    Raises ValueError (naming ``name``) for a naive datetime and TypeError for
    anything that is not a datetime.
    """
    if not isinstance(moment, _dt.datetime):
        if closed_if_awaitable(moment):  # an async clock
            kind = type(moment).__name__
            raise TypeError(f"{name} must be a datetime, got an awaitable ({kind}): the clock must be a plain function")
        raise TypeError(f"{name} must be a datetime, got {type(moment).__name__}")
    if moment.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got naive {moment!r}")
    delta = moment - _EPOCH
    return float((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)


def to_utc(moment: _dt.datetime, name: str) -> _dt.datetime:
    """``moment`` (aware) as a UTC datetime: the same instant, read on UTC's clock.

    Arithmetic on aware datetimes of one zone is wall-clock arithmetic (an hour
    off across a daylight-saving change), and their comparisons ignore ``fold``;
    on UTC datetimes both are absolute.

    Raises ValueError (naming ``name``) when the instant is outside UTC's
    calendar (for example ``datetime.max`` in a zone west of Greenwich).
    """
    if moment.tzinfo is UTC:
        return moment
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{name} is outside the range of datetime in UTC, got {moment!r}") from None


def from_us(us: float) -> _dt.datetime:
    """The aware UTC datetime ``us`` microseconds after the Unix epoch (``us <= MAX_US``)."""
    return _EPOCH + _dt.timedelta(microseconds=us)


def seconds(value: object, name: str) -> float:
    """A positive, finite duration in seconds from a ``timedelta`` or a number."""
    if isinstance(value, _dt.timedelta):
        secs = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            secs = float(value)
        except OverflowError:
            raise ValueError(f"{name} must be a positive, finite duration, got {short_repr(value)}") from None
    else:
        raise TypeError(f"{name} must be a timedelta or a number of seconds, got {type(value).__name__}")
    if not secs > 0 or secs == float("inf"):
        raise ValueError(f"{name} must be a positive, finite duration, got {short_repr(value)}")
    return secs
