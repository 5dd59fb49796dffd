"""Reading the clock: aware datetimes in, exact microsecond counts out."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable

Clock = Callable[[], _dt.datetime]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


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
        raise TypeError(f"{name} must be a datetime, got {type(moment).__name__}")
    if moment.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got naive {moment!r}")
    delta = moment - _EPOCH
    return float((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)


def from_us(us: float) -> _dt.datetime:
    """The aware UTC datetime ``us`` microseconds after the Unix epoch."""
    return _EPOCH + _dt.timedelta(microseconds=us)


def seconds(value: object, name: str) -> float:
    """A positive, finite duration in seconds from a ``timedelta`` or a number."""
    if isinstance(value, _dt.timedelta):
        secs = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            secs = float(value)
        except OverflowError:
            raise ValueError(f"{name} must be a positive, finite duration, got a huge int") from None
    else:
        raise TypeError(f"{name} must be a timedelta or a number of seconds, got {type(value).__name__}")
    if not secs > 0 or secs == float("inf"):
        raise ValueError(f"{name} must be a positive, finite duration, got {value!r}")
    return secs
