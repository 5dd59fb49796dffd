"""Turning a decay function into scores: importance, clamping, pinning, expiry, validation."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from lethe._entry import Entry
from lethe._validate import check_call, finite_float
from lethe.decay._protocol import checked_score, is_builtin
from lethe.decay._registry import by_name

_INF = math.inf


class Scorer:
    """Everything a memory needs to score entries with one decay function.

    Built-in functions are called through their float fast path; any other
    function gets the entry and an aware datetime, and its result is checked
    (a NaN, an infinity or a non-number raises ValueError naming the key).
    """

    __slots__ = ("_checked", "_raw", "_rehearse", "_values", "fn", "is_builtin", "multiply", "rate_us")

    fn: Any
    multiply: bool
    is_builtin: bool
    rate_us: float | None
    _raw: Callable[[Entry[Any, Any], float], float] | None
    _checked: Callable[[Entry[Any, Any], datetime], Any] | None
    _rehearse: Callable[[Entry[Any, Any], datetime, float], Any] | None
    _values: Callable[[list[Entry[Any, Any]], float], list[float]] | None

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.multiply = not getattr(fn, "includes_importance", False)
        fast = getattr(fn, "_raw", None)
        score = getattr(fn, "score", None)
        self.is_builtin = is_builtin(fn)
        rate = getattr(fn, "decay_rate", None)
        # One rate for every entry: the ranking never changes, so the memory can index it.
        self.rate_us = None
        declared = self.multiply and _rate_covers_score(fn)
        rate = finite_float(rate)
        if declared and rate is not None and rate > 0.0:
            self.rate_us = rate / 1e6
        if fast is not None and self.is_builtin:
            self._raw = fast
            self._checked = None
        else:
            self._raw = None
            call = score if callable(score) else fn
            self._checked = call
        # A built-in may score a whole list at once (importance and expiry included).
        self._values = getattr(fn, "_values", None) if self._raw is not None and self.multiply else None
        rehearse_us = getattr(fn, "_rehearse", None) if self._raw is not None else None
        rehearse = getattr(fn, "rehearse", None)
        if rehearse_us is not None:
            self._rehearse = lambda e, now, now_us: rehearse_us(e, now_us)
        elif callable(rehearse):
            self._rehearse = lambda e, now, now_us: rehearse(e, now)
        else:
            self._rehearse = None

    @property
    def rehearse(self) -> Callable[[Entry[Any, Any], datetime, float], Any] | None:
        """``(entry, now, now_us) -> new decay_state``, or None when the function keeps none."""
        return self._rehearse

    def raw(self, entry: Entry[Any, Any], now: datetime, now_us: float) -> float:
        """The decay function's raw score, checked when it is not a built-in."""
        if self._raw is not None:
            return self._raw(entry, now_us)
        assert self._checked is not None
        value = self._checked(entry, now)
        if type(value) is float and value - value == 0.0:  # finite: the common case, checked cheaply
            return value
        return checked_score(value, entry.key)

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

    def many(self, entries: list[Entry[Any, Any]], now: datetime, now_us: float) -> list[float]:
        """Rank values (:meth:`unclamped`) of unpinned ``entries``, in order."""
        values = self._values
        if values is not None:
            return values(entries, now_us)
        raw = self._raw
        if raw is None:
            unclamped = self.unclamped
            return [unclamped(e, now, now_us) for e in entries]
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

    def lowest(self, entries: list[Entry[Any, Any]], now: datetime, now_us: float) -> Entry[Any, Any] | None:
        """The unpinned entry that ranks last: lowest rank value, then earliest put."""
        unpinned = [e for e in entries if not e.pinned]
        if not unpinned:
            return None
        values = self.many(unpinned, now, now_us)
        best = min(range(len(unpinned)), key=lambda i: (values[i], unpinned[i].seq))
        return unpinned[best]


def _rate_covers_score(fn: object) -> bool:
    """Whether ``fn``'s ``decay_rate`` was declared for the ``score`` it actually has.

    A subclass that overrides ``score`` but inherits ``decay_rate`` from its
    base has not promised that its scores follow that rate: it is not indexed.
    """
    mro = type(fn).__mro__
    rate_owner = next((c for c in mro if "decay_rate" in vars(c)), None)
    score_owner = next((c for c in mro if "score" in vars(c) or "__call__" in vars(c)), None)
    return rate_owner is None or score_owner is None or issubclass(rate_owner, score_owner)


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
    if isinstance(decay_fn, type):
        raise TypeError(f"decay_fn: pass an instance: {decay_fn.__name__}(), not the class")
    score = getattr(decay_fn, "score", None)
    if not callable(score) and not callable(decay_fn):
        raise TypeError(
            "decay_fn must be a built-in name, an object with score(entry, now), "
            f"or a callable (entry, now) -> float; got {type(decay_fn).__name__}"
        )
    check_call(score if callable(score) else decay_fn, "decay_fn", 2, "(entry, now)")
    rehearse = getattr(decay_fn, "rehearse", None)
    if callable(rehearse):
        check_call(rehearse, "decay_fn.rehearse", 2, "(entry, now)")
    return Scorer(decay_fn)
