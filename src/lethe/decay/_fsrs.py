"""FSRS-6: the Free Spaced Repetition Scheduler's memory model as a decay function."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from lethe._core.entry import Entry
from lethe._core.reprs import short_repr
from lethe._core.validate import finite_float, number
from lethe.decay._base import Param, Stateful

__all__ = ["FSRS", "FSRS6_DEFAULT_PARAMETERS", "FSRS6_PARAMETER_BOUNDS"]

#: The published FSRS-6 default weights ``w[0]..w[20]`` (py-fsrs ``DEFAULT_PARAMETERS``).
FSRS6_DEFAULT_PARAMETERS: tuple[float, ...] = (
    0.212,
    1.2931,
    2.3065,
    8.2956,
    6.4133,
    0.8334,
    3.0194,
    0.001,
    1.8722,
    0.1666,
    0.796,
    1.4835,
    0.0614,
    0.2629,
    1.6483,
    0.6014,
    1.8729,
    0.5425,
    0.0912,
    0.0658,
    0.1542,
)

#: The range of each weight: py-fsrs's ``LOWER_BOUNDS_PARAMETERS`` and
#: ``UPPER_BOUNDS_PARAMETERS``, to which its optimizer clamps every weight it fits.
#: Outside them the model's exponentials overflow or its curve stops falling.
FSRS6_PARAMETER_BOUNDS: tuple[tuple[float, float], ...] = (
    (0.001, 100.0),
    (0.001, 100.0),
    (0.001, 100.0),
    (0.001, 100.0),
    (1.0, 10.0),
    (0.001, 4.0),
    (0.001, 4.0),
    (0.001, 0.75),
    (0.0, 4.5),
    (0.0, 0.8),
    (0.001, 3.5),
    (0.001, 5.0),
    (0.001, 0.25),
    (0.001, 0.9),
    (0.0, 4.0),
    (0.0, 1.0),
    (1.0, 6.0),
    (0.0, 2.0),
    (0.0, 2.0),
    (0.0, 0.8),
    (0.1, 0.8),
)

_DAY_US = 86_400e6
_GOOD = 3
_EASY = 4
_S_MIN = 0.001
# Stability never exceeds 100 years (fsrs-rs's S_MAX, 36500 days): it stays finite however often reviewed.
_S_MAX = 36_500.0


def _clamp_d(d: float) -> float:
    return 1.0 if d < 1.0 else (10.0 if d > 10.0 else d)


def _weights(value: object, name: str) -> tuple[float, ...]:
    """The 21 FSRS-6 weights (None: the published defaults), each within its bounds."""
    given = FSRS6_DEFAULT_PARAMETERS if value is None else value
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence) or len(given) != 21:
        raise ValueError(f"{name} must be a sequence of 21 numbers (FSRS-6 weights w[0]..w[20])")
    bounds = FSRS6_PARAMETER_BOUNDS
    return tuple(number(v, f"{name}[{i}]", low=low, high=high) for i, (v, (low, high)) in enumerate(zip(given, bounds)))


class FSRS(Stateful):
    """FSRS-6 retrievability, with every insertion and rehearsal a review rated Good.

    Forgetting curve (FSRS-6): ``R(t, S) = (1 + factor * t / S) ** -decay`` with
    ``t`` in days since the last review, ``decay = w[20]`` and
    ``factor = 0.9 ** (-1 / decay) - 1``, so ``R(S, S) = 0.9``.  Source: the
    open-spaced-repetition FSRS-6 algorithm and py-fsrs, whose default weights
    are :data:`FSRS6_DEFAULT_PARAMETERS`.

    The insertion is the first review, rated Good: ``S0 = w[2]`` days and
    ``D0 = clamp(w[4] - exp(w[5] * (G - 1)) + 1, 1, 10)`` with ``G = 3``.  Each
    rehearsal is a review rated Good at that moment (elapsed days continuous):

    * less than a day after the last review, the short-term update
      ``S' = S * max(1, exp(w[17] * (G - 3 + w[18])) * S ** -w[19])``;
    * otherwise the recall update
      ``S' = S * (1 + exp(w[8]) * (11 - D) * S ** -w[9] * (exp(w[10] * (1 - R)) - 1))``
      (Hard penalty and Easy bonus are 1 for Good);
    * difficulty ``D' = clamp(w[7] * D0(Easy) + (1 - w[7]) * (D + dD * (10 - D) / 9), 1, 10)``
      with ``dD = -w[6] * (G - 3) = 0`` for Good: pure mean reversion.

    ``(S, D)`` is kept in ``decay_state`` (None means the initial state).  The
    score is ``R``; the memory multiplies it by importance.  FSRS has no
    half-life parameter: :attr:`half_life` is the time at which a
    once-inserted entry reaches 0.5 (about 208 days with the defaults).

    Stability is kept within 0.001 .. 36500 days (fsrs-rs's ``S_MIN`` and ``S_MAX``).

    Args:
        parameters: The 21 weights ``w``; the published FSRS-6 defaults if omitted.
            Each must lie in the range py-fsrs's optimizer clamps it to
            (:data:`FSRS6_PARAMETER_BOUNDS`).

    Raises:
        ValueError: not 21 numbers, or a weight out of its range (the message names it).

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t)
    >>> round(FSRS().score(e, t + timedelta(days=2.3065)), 12)  # t = S0: R = 0.9
    0.9
    """

    name: ClassVar[str] = "fsrs"
    params = (Param("parameters", _weights, dump=list, show=lambda w: repr(list(w))),)
    __slots__ = ("_d0", "_d_easy", "_decay", "_factor", "_s0", "parameters")
    parameters: tuple[float, ...]
    _decay: float
    _factor: float
    _s0: float
    _d0: float
    _d_easy: float

    def __init__(self, parameters: Sequence[float] | None = None) -> None:
        self._init(parameters)

    def _derive(self) -> None:
        w = self.parameters
        decay = w[20]
        object.__setattr__(self, "_decay", decay)
        object.__setattr__(self, "_factor", 0.9 ** (-1.0 / decay) - 1.0)
        object.__setattr__(self, "_s0", max(w[2], _S_MIN))
        object.__setattr__(self, "_d0", _clamp_d(w[4] - math.exp(w[5] * (_GOOD - 1)) + 1.0))
        object.__setattr__(self, "_d_easy", w[4] - math.exp(w[5] * (_EASY - 1)) + 1.0)

    @property
    def initial_state(self) -> tuple[float, float]:
        """``(S0, D0)``: stability (days) and difficulty after the first review rated Good."""
        return (self._s0, self._d0)

    @property
    def half_life(self) -> float:
        """Seconds until a once-inserted entry's retrievability falls to 0.5."""
        return self._s0 * (math.pow(2.0, 1.0 / self._decay) - 1.0) / self._factor * 86_400.0

    def retrievability(self, elapsed_days: float, stability: float) -> float:
        """``R(t, S)``, the FSRS-6 forgetting curve."""
        if elapsed_days <= 0.0:
            return 1.0
        r: float = (1.0 + self._factor * elapsed_days / stability) ** -self._decay
        return r

    def state(self, entry: Entry[Any, Any]) -> tuple[float, float]:
        """The entry's ``(S, D)``: its ``decay_state``, or the initial state."""
        st = entry.decay_state
        if type(st) is tuple and len(st) == 2 and st[0] > 0.0 and 1.0 <= st[1] <= 10.0:
            return (st[0], st[1])
        return (self._s0, self._d0)

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        elapsed = now_us - entry.accessed_us
        if elapsed <= 0.0:
            return 1.0
        s: float = self.state(entry)[0]
        return self.retrievability(elapsed / _DAY_US, s)

    def review(self, stability: float, difficulty: float, elapsed_days: float) -> tuple[float, float]:
        """``(S', D')`` after a review rated Good ``elapsed_days`` after the last one."""
        w = self.parameters
        s, d = stability, difficulty
        if elapsed_days < 1.0:
            inc = math.exp(w[17] * (_GOOD - 3 + w[18])) * s ** -w[19]
            s_new = s * (inc if inc > 1.0 else 1.0)
        else:
            r = self.retrievability(elapsed_days, s)
            s_new = s * (1.0 + math.exp(w[8]) * (11.0 - d) * s ** -w[9] * math.expm1(w[10] * (1.0 - r)))
        d_new = _clamp_d(w[7] * self._d_easy + (1.0 - w[7]) * d)
        return (_S_MIN if s_new < _S_MIN else (_S_MAX if s_new > _S_MAX else s_new), d_new)

    def _rehearse(self, entry: Entry[Any, Any], now_us: float) -> tuple[float, float]:
        s, d = self.state(entry)
        elapsed = max(0.0, (now_us - entry.accessed_us) / _DAY_US)
        return self.review(s, d, elapsed)

    def time_until(self, entry: Entry[Any, Any], score: float) -> float | None:
        """Seconds after the last review at which ``R`` falls to ``score`` (``inf`` if it overflows)."""
        if score <= 0.0:
            return None
        if score >= 1.0:
            return 0.0
        s: float = self.state(entry)[0]
        try:
            return s * (math.pow(score, -1.0 / self._decay) - 1.0) / self._factor * 86_400.0
        except OverflowError:  # too far to be a float: beyond any representable time
            return math.inf

    def moved_state(
        self, state: tuple[float, float], move: Callable[[float], float], custom: Callable[[Any], Any]
    ) -> tuple[float, float]:
        """``decay_state`` moved in time: ``(S, D)`` holds no instant, so the state as is."""
        return state

    def dump_state(self, state: tuple[float, float]) -> list[float]:
        """``decay_state`` as JSON: ``[S, D]``."""
        return [state[0], state[1]]

    def load_state(self, data: object) -> tuple[float, float] | None:
        """``decay_state`` from :meth:`dump_state` output; ValueError if malformed."""
        if data is None:
            return None
        if not isinstance(data, (list, tuple)) or len(data) != 2:
            raise ValueError("decay_state must be null or [stability, difficulty]")
        s, d = finite_float(data[0]), finite_float(data[1])
        if s is None or d is None:
            bad = data[0] if s is None else data[1]
            raise ValueError(f"decay_state holds a bad number: {short_repr(bad)}")
        if s <= 0.0 or not 1.0 <= d <= 10.0:
            raise ValueError(f"decay_state needs stability > 0 and difficulty in 1..10, got {short_repr(data)}")
        return (s, d)
