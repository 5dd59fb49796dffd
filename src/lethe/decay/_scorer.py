"""Turning a decay function into scores: importance, clamping, pinning, expiry, validation."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import compress, repeat
from math import isfinite
from operator import attrgetter
from typing import Any

from lethe._core.entry import Entry
from lethe._core.expiry import any_deadline
from lethe.decay._adapter import Adapter, check_decay_function, checked_score
from lethe.decay._registry import by_name

_SEQ = attrgetter("seq")
_FLOATS = {float}


class Scorer(Adapter):
    """Everything a memory needs to score entries with one decay function.

    An :class:`~lethe.decay._adapter.Adapter` (built-in functions are called
    through their float fast path; any other function gets the entry and an
    aware datetime, and its result is checked: a NaN, an infinity or a
    non-number raises ValueError naming the key), plus what the memory adds:
    pinned entries score 1.0, expired ones 0.0, others ``raw * importance``
    clamped to 0..1.
    """

    __slots__ = ()

    def one(self, entry: Entry[Any, Any], now: datetime, now_us: float) -> float:
        """The entry's score: 1.0 if pinned, 0.0 if expired, else clamp(raw * importance)."""
        if entry.pinned:
            return 1.0
        return clamp(self.unclamped(entry, now, now_us))

    def unclamped(self, entry: Entry[Any, Any], now: datetime, now_us: float) -> float:
        """An unpinned entry's rank value: raw * importance before clamping (0.0 once expired).

        Scores are this value clamped to 0..1, so it ranks exactly as the score
        does and also orders the entries that clamping ties at 1.0.
        """
        expires = entry.expires_us
        if expires is not None and now_us >= expires:
            return 0.0
        s = self.raw(entry, now, now_us)
        return s * entry.importance if self.multiply else s

    def many(self, entries: list[Entry[Any, Any]], now: datetime, now_us: float, live: bool = False) -> list[float]:
        """Rank values (:meth:`unclamped`) of unpinned ``entries``, in order (``live``: none of
        them has expired, as the caller checked)."""
        values = self.values
        if values is not None:
            return values(entries, now_us)
        raw = self.fast
        if raw is None:
            # Some may have expired: never score those.
            if not live and any_deadline(entries):
                unclamped = self.unclamped
                return [unclamped(e, now, now_us) for e in entries]
            call = self._call
            if not self.multiply:
                # One call per entry and checks over the whole list (in C), as a bare score loop would.
                got = list(map(call, entries, repeat(now)))
                if got and not (set(map(type, got)) == _FLOATS and all(map(isfinite, got))):
                    got = [self._checked(v, e) for v, e in zip(got, entries)]
                return got
            # The product in the same pass as the call, while the entry is at hand (a second pass
            # over n entries scattered in memory costs half as much again as the calls); anything
            # but a finite float goes through the check, which raises or converts it.
            checked = self._checked
            return [
                v * e.importance if type(v := call(e, now)) is float and v - v == 0.0 else checked(v, e) * e.importance
                for e in entries
            ]
        out: list[float] = []
        append = out.append
        multiply = self.multiply
        for e in entries:
            expires = e.expires_us
            if expires is not None and now_us >= expires:
                append(0.0)
            else:
                append(raw(e, now_us) * e.importance if multiply else raw(e, now_us))
        return out

    def _checked(self, value: object, entry: Entry[Any, Any]) -> float:
        """A custom function's ``value`` for ``entry`` as a finite float, or the error naming its key."""
        if type(value) is float and value - value == 0.0:
            return value
        return checked_score(value, entry.key, self.where)

    def lowest(self, entries: list[Entry[Any, Any]], now: datetime, now_us: float) -> Entry[Any, Any] | None:
        """The unpinned entry that ranks last: lowest rank value, then earliest put."""
        unpinned = [e for e in entries if not e.pinned]
        if not unpinned:
            return None
        values = self.many(unpinned, now, now_us)
        least = min(values)
        # The earliest put among the entries of the lowest value (comparisons in C, no key function).
        return min((unpinned[i] for i in compress(range(len(values)), map(least.__eq__, values))), key=_SEQ)


def clamp(value: float) -> float:
    """``value`` limited to 0..1: the score of an entry whose rank value is ``value``."""
    return 1.0 if value >= 1.0 else (value if value > 0.0 else 0.0)


def make_scorer(decay_fn: object, half_life: float | timedelta) -> Scorer:
    """A :class:`Scorer` for ``decay_fn`` (a built-in name, a decay object or a callable).

    Raises:
        TypeError: ``decay_fn`` is a class (not an instance), is not callable, is
            ``async``, or its ``score`` (or the callable) cannot take ``(entry, now)``.
        ValueError: an unknown name.
    """
    if isinstance(decay_fn, str):
        return Scorer(by_name(decay_fn, half_life))
    return Scorer(check_decay_function(decay_fn, "decay_fn", by_name=True))
