"""Reading the clock: aware datetimes in, exact microsecond counts out."""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable

from lethe._core.hooks import closed_if_awaitable
from lethe._core.reprs import short_repr
from lethe._core.validate import is_number

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
    return aware_us(moment)


def aware_us(moment: _dt.datetime) -> float:
    """:func:`to_us` of a datetime already known to be aware (a parsed document's instants)."""
    return float(exact_us(moment))


def exact_us(moment: _dt.datetime) -> int:
    """Microseconds since the Unix epoch of an aware datetime, as an exact int.

    :func:`to_us`'s float is exact only up to 2**53 (the year 2255); what is
    written down for another process to read back must be exact at any date.

    >>> from datetime import datetime, timezone
    >>> exact_us(datetime(9000, 1, 1, 0, 0, 0, 123457, tzinfo=timezone.utc)) % 1_000_000
    123457
    """
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


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


def later(moment: _dt.datetime, delta: _dt.timedelta) -> _dt.datetime:
    """``moment`` moved by ``delta`` of elapsed time, read in ``moment``'s own zone.

    ``moment + delta`` is wall-clock arithmetic: across a daylight-saving change
    in a zone such as ``ZoneInfo("America/New_York")`` it is an hour off the
    time that really passed.  A fixed offset (UTC included) has no such change.

    Raises OverflowError when the result is outside the range of ``datetime``.
    """
    zone = moment.tzinfo
    if type(zone) is _dt.timezone:
        return moment + delta
    try:
        return (moment.astimezone(UTC) + delta).astimezone(zone)
    except ValueError:  # a tzinfo that cannot convert from UTC (no dst()): no change to skip
        return moment + delta


def from_us(us: float) -> _dt.datetime:
    """The aware UTC datetime ``us`` microseconds after the Unix epoch (``us <= MAX_US``)."""
    return _EPOCH + _dt.timedelta(0, 0, us)  # (positional: a third faster than by keyword)


class ManualClock:
    """A clock that moves only when told to: for tests, simulations and demos.

    Pass it as a memory's ``clock_fn``; each call returns the current reading
    (and counts the call). :meth:`advance` moves it by a duration, :meth:`set`
    puts it at an instant; both may go backwards, which a memory answers with
    its high-water mark (time never runs backwards for a memory).

    Parameters:
        start: the first reading, an aware datetime (default: the real time
            now, in UTC).
        step: how far each reading moves the clock after it is taken
            (default zero: the clock stands still between calls to
            :meth:`advance`). A positive step gives every reading its own
            instant, as a busy real clock would.

    Raises:
        TypeError: ``start`` is not a datetime, or ``step`` not a timedelta.
        ValueError: ``start`` is naive.

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import ManualClock, Memory
    >>> clock = ManualClock(datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> mem = Memory(clock_fn=clock, half_life=timedelta(hours=1)).put("x", key="k")
    >>> clock.advance(timedelta(hours=1))
    datetime.datetime(2026, 1, 1, 1, 0, tzinfo=datetime.timezone.utc)
    >>> round(mem.score("k"), 3)
    0.5
    """

    __slots__ = ("calls", "now", "step")

    def __init__(self, start: _dt.datetime | None = None, *, step: _dt.timedelta = _dt.timedelta(0)) -> None:
        if start is None:
            start = utc_now()
        to_us(start, "start")
        if not isinstance(step, _dt.timedelta):
            raise TypeError(f"step must be a timedelta, got {type(step).__name__}")
        #: The reading the next call returns.
        self.now: _dt.datetime = start
        #: How far each call moves the clock after reading it.
        self.step: _dt.timedelta = step
        #: How many times the clock has been read.
        self.calls: int = 0

    def __call__(self) -> _dt.datetime:
        """Return the current reading (then move it on by ``step``)."""
        self.calls += 1
        now = self.now
        if self.step:
            self.now = later(now, self.step)
        return now

    def advance(self, delta: _dt.timedelta | float) -> _dt.datetime:
        """Move the clock by ``delta`` (a timedelta or seconds; negative goes back); return the new reading.

        ``delta`` is time that passes, in any zone: an hour after 01:30 on the
        night a zone's clocks fall back is 01:30 again (the second one, ``fold=1``).

        Raises TypeError for anything else (``bool`` included), and ValueError
        when the new reading would fall outside the range of ``datetime``.
        """
        if is_number(delta):
            try:
                delta = _dt.timedelta(seconds=delta)
            except (OverflowError, ValueError):  # beyond timedelta's range, or NaN
                raise ValueError(f"delta is not a representable duration, got {short_repr(delta)}") from None
        elif not isinstance(delta, _dt.timedelta):
            raise TypeError(f"delta must be a timedelta or a number of seconds, got {type(delta).__name__}")
        try:
            self.now = later(self.now, delta)
        except OverflowError:
            raise ValueError(f"delta moves the clock outside the range of datetime, got {delta!r}") from None
        return self.now

    def set(self, moment: _dt.datetime) -> _dt.datetime:
        """Put the clock at ``moment`` (an aware datetime); return it.

        Raises TypeError for a non-datetime and ValueError for a naive one.
        """
        to_us(moment, "moment")
        self.now = moment
        return moment

    def __repr__(self) -> str:
        step = f", step={self.step!r}" if self.step else ""
        return f"ManualClock({self.now!r}{step})"
