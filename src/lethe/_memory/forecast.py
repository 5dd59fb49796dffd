"""Forecasts: the first microsecond at which an entry's score is strictly below a threshold.

``Memory.time_until`` and ``Memory.next_eviction`` promise a moment at which
the memory sees the entry below the threshold, and one microsecond before
which it does not: an ``evict()`` scheduled for the forecast removes the
entry, one scheduled a microsecond earlier keeps it.  That is a statement
about the scores the memory computes (in floats, from the clock reading), not
about the mathematical curve, so every answer here is checked against
:meth:`Scorer.one`, called exactly as the memory would call it at that moment.

A built-in decay function with a closed form (``time_until``) gives an
estimate.  It can be a few microseconds off: the inverse and the score round
differently, and on a flat curve one rounding step of the score spans many
microseconds (past the year 2255 a clock reading is itself a float coarser
than a microsecond).  The estimate is confirmed by scoring it and the
microsecond before it (two scores in the common case) and, when it is off,
corrected by a galloping search and a bisection around it.  Without a closed
form the same search starts one second from now.  Scores never rise without a
rehearsal, so "below" is false up to the crossing and true from it on, which
is what makes the search valid.

Every search is bounded: it looks no later than ``datetime.max`` (a thousand
years ahead without a closed form), and each phase takes O(log distance)
scores: about a hundred at most.  Moments are whole microseconds since the
Unix epoch, as Python ints, so that they stay exact past 2**53.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

from lethe._core.clock import MAX_US
from lethe._core.entry import Entry
from lethe.decay._scorer import Scorer

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = timedelta(microseconds=1)
#: The last moment a forecast may name: ``datetime.max`` as a float clock reading.
LAST_US = int(MAX_US)
#: How far ahead a search without a closed form looks: a thousand years, in µs.
HORIZON_US = 1_000_000 * 86_400 * 365 * 1000
#: Where a search without a closed form looks first: one second after now.
_FIRST_STEP_US = 1_000_000
#: How fast a search widens its steps while it brackets the crossing.
_GROWTH = 4
_EXACT = 2**53  # every whole microsecond up to here is a float


def time_until(
    scorer: Scorer, entry: Entry[Any, Any], threshold: float, now: datetime, now_us: float
) -> timedelta | None:
    """How long from ``now`` until ``entry`` scores below ``threshold`` (``Memory.time_until``).

    A deadline counts unless ``threshold`` is 0 (nothing drops below 0).
    None: never, or not by ``datetime.max``.
    """
    crossing = crossing_us(scorer, entry, threshold, now, now_us, expiry=threshold > 0.0)
    if crossing is None:
        return None
    wait = moment(crossing) - now
    return wait if wait > timedelta(0) else timedelta(0)


def next_eviction(
    scorer: Scorer, entries: Iterable[Entry[Any, Any]], threshold: float, now: datetime, now_us: float
) -> datetime | None:
    """The earliest moment one of ``entries`` scores below ``threshold`` or expires (``Memory.next_eviction``).

    ``now`` if one already does; None if none ever will before ``datetime.max``.
    """
    start = whole_us(now)
    best: int | None = None
    for entry in entries:
        crossing = crossing_us(scorer, entry, threshold, now, now_us, expiry=True)
        if crossing is not None and (best is None or crossing < best):
            best = crossing
            if best <= start:
                return now
    return None if best is None else moment(best)


def crossing_us(
    scorer: Scorer, entry: Entry[Any, Any], threshold: float, now: datetime, now_us: float, *, expiry: bool
) -> int | None:
    """The first whole microsecond, from ``now`` on, at which the memory scores ``entry`` below ``threshold``.

    ``now`` itself (as a microsecond count) if it already does; None if it
    never does (pinned, a threshold of 0, a score that levels off above the
    threshold) or not by ``datetime.max`` (by the horizon, without a closed form).

    From its deadline on an entry scores 0.0, so a deadline is a crossing of
    any positive threshold; with ``expiry`` it is one at threshold 0 too (an
    expired entry is evicted whatever the threshold).
    """
    if entry.pinned:
        return None
    start = whole_us(now)
    if scorer.one(entry, now, now_us) < threshold:
        return start
    deadline = entry.expires_us
    due = None if deadline is None else first_us(deadline)  # the first moment the memory sees it expired
    if threshold <= 0.0:  # no score is below 0.0: only a deadline ends it
        return max(start, due) if expiry and due is not None else None

    def below(us: int) -> bool:
        return scorer.one(entry, moment(us), float(us)) < threshold

    closed = scorer.time_until
    if closed is not None and scorer.is_builtin:
        limit = LAST_US if due is None else min(due, LAST_US)
        guess = _estimate(closed, entry, threshold, limit, scorer.multiply)
        step = 1
    else:
        limit = min(start + HORIZON_US, LAST_US)
        if due is not None:
            limit = min(limit, due)
        guess = start + _FIRST_STEP_US
        step = _FIRST_STEP_US
    if not limit > start:
        return due
    crossing = first_below(below, start, min(max(guess, start + 1), limit), limit, step)
    # Not below by the limit (the horizon, or datetime.max): only a later deadline is left.
    return due if crossing is None else crossing


def _estimate(
    closed: Callable[[Entry[Any, Any], float], float | None],
    entry: Entry[Any, Any],
    threshold: float,
    limit: int,
    multiply: bool,
) -> int:
    """Where the closed form puts the crossing: the first whole microsecond past it (``limit`` for never).

    The closed form inverts the raw score: the threshold is divided by the
    importance first, unless the function applies importance itself.
    """
    importance = entry.importance
    if multiply and not importance > 0.0:  # it scores 0.0, below any positive threshold (the caller has seen that)
        return int(entry.accessed_us)
    secs = closed(entry, threshold / importance if multiply else threshold)
    if secs is None:
        return limit
    offset = max(secs, 0.0) * 1e6
    # Counted from the last access, a whole microsecond, so that the fraction survives:
    # added to a clock reading near 2**50 it would be rounded to a quarter microsecond.
    if not offset < limit - entry.accessed_us:  # also inf and NaN
        return limit
    return int(entry.accessed_us) + math.floor(offset) + 1


def first_below(below: Callable[[int], bool], low: int, guess: int, limit: int, step: int) -> int | None:
    """The first microsecond in ``(low, limit]`` at which ``below`` holds; None if it does not at ``limit``.

    ``below`` must be false at ``low`` and, once true, stay true (scores never
    rise without a rehearsal).  The search scores ``guess`` (in ``(low,
    limit]``), steps away from it by ``step``, widening the step, until it
    brackets the crossing, then bisects.  A right guess costs two calls
    (``guess`` and the microsecond before it), or one if that is ``low``.
    """
    if below(guess):
        high = guess
        while high - step > low:
            probe = high - step
            if not below(probe):
                low = probe
                break
            high = probe
            step *= _GROWTH
    else:
        low = guess
        while True:
            if low >= limit:
                return None
            probe = min(low + step, limit)
            if below(probe):
                high = probe
                break
            low = probe
            step *= _GROWTH
    while high - low > 1:
        mid = (low + high) // 2
        if below(mid):
            high = mid
        else:
            low = mid
    return high


def whole_us(moment: datetime) -> int:
    """``moment`` (aware) in whole microseconds since the Unix epoch, exactly."""
    return (moment - _EPOCH) // _US


def moment(us: int) -> datetime:
    """The UTC datetime ``us`` whole microseconds after the Unix epoch (``us <= LAST_US``)."""
    return _EPOCH + timedelta(microseconds=us)


def first_us(reading: float) -> int:
    """The first whole microsecond whose float clock reading is at least ``reading`` (a whole number).

    Past 2**53 floats are coarser than a microsecond: a clock reading rounds to
    the nearest one (ties to even), so a moment up to half a step before
    ``reading`` already reads as ``reading``.
    """
    if reading <= _EXACT:
        return int(reading)
    previous = math.nextafter(reading, -math.inf)
    middle = (int(previous) + int(reading)) // 2
    return middle if float(middle) >= reading else middle + 1
