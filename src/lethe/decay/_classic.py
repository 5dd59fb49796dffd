"""The classic decay functions: exponential (Ebbinghaus 1885), access-weighted and ACT-R (Anderson & Lebiere 1998)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any, ClassVar

from lethe._core.clock import to_us
from lethe._core.entry import Entry
from lethe._core.reprs import short_repr
from lethe._core.validate import duration, finite_float, integer, number
from lethe.decay._base import Model, Param, Stateful

__all__ = ["ACTR", "AccessWeighted", "Exponential"]

_LN2 = math.log(2.0)
_HOUR = timedelta(hours=1)
_HISTORY = "an int between 1 and 10000"


def _threshold(value: object, name: str) -> float | None:
    return None if value is None else number(value, name, low=-1e300, high=1e300)


class Exponential(Model):
    """Exponential decay since the last access: ``raw = 0.5 ** (elapsed / half_life)``.

    The classic forgetting curve (Ebbinghaus 1885): the score halves every
    ``half_life`` without a rehearsal.  Every entry decays at the same rate,
    so the ranking of entries never changes with time and the memory keeps an
    index on it (``decay_rate``): eviction, ``top`` and ``active`` do not scan.

    Args:
        half_life: A ``timedelta`` or seconds (> 0).  Stored as seconds.

    Raises:
        ValueError, TypeError: ``half_life`` is not a positive finite duration.

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t)
    >>> Exponential(half_life=timedelta(hours=1)).score(e, t + timedelta(hours=2))
    0.25
    """

    name: ClassVar[str] = "exponential"
    params = (Param("half_life", duration),)
    __slots__ = ("_half_life_us", "half_life")
    half_life: float
    _half_life_us: float

    def __init__(self, half_life: timedelta | float = _HOUR) -> None:
        self._init(half_life)

    def _derive(self) -> None:
        object.__setattr__(self, "_half_life_us", self.half_life * 1e6)

    @property
    def decay_rate(self) -> float:
        """The rate per second, ``ln 2 / half_life``, shared by every entry."""
        return _LN2 / self.half_life

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        elapsed = now_us - entry.accessed_us
        if elapsed <= 0.0:
            return 1.0
        raw: float = 0.5 ** (elapsed / self._half_life_us)
        return raw

    def _values(self, entries: list[Entry[Any, Any]], now_us: float) -> list[float]:
        # The memory's rank values (raw * importance, 0.0 once expired) in one comprehension:
        # no call per entry, which is most of the cost of scoring everything.
        h = self._half_life_us
        return [
            0.0
            if (deadline := e.expires_us) is not None and now_us >= deadline
            else (e.importance * 0.5 ** ((now_us - e.accessed_us) / h) if now_us > e.accessed_us else e.importance)
            for e in entries
        ]

    def time_until(self, entry: Entry[Any, Any], score: float) -> float | None:
        """Seconds after the last access at which the raw score falls to ``score``."""
        return self.half_life * -math.log2(score) if score > 0.0 else None


class AccessWeighted(Model):
    """Exponential decay whose half-life grows with every rehearsal.

    ``raw = 0.5 ** (elapsed / h)`` with ``h = half_life * (1 + boost * ln(1 + access_count))``,
    elapsed since the last access.  A fresh entry decays exactly like
    :class:`Exponential`; each rehearsal stretches its half-life, with
    diminishing returns (the spacing effect).  Raw scores stay in 0..1 and never
    fall as ``access_count`` grows.

    Args:
        half_life: Half-life of a never-rehearsed entry (``timedelta`` or seconds, > 0).
        boost: How much each order of magnitude of rehearsals stretches it (>= 0).

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t, access_count=0)
    >>> AccessWeighted(half_life=3600).score(e, t + timedelta(hours=1))
    0.5
    """

    name: ClassVar[str] = "access_weighted"
    params = (Param("half_life", duration), Param("boost", partial(number, low=0.0, high=1e6)))
    __slots__ = ("_half_life_us", "boost", "half_life")
    half_life: float
    boost: float
    _half_life_us: float

    def __init__(self, half_life: timedelta | float = _HOUR, boost: float = 1.0) -> None:
        self._init(half_life, boost)

    def _derive(self) -> None:
        object.__setattr__(self, "_half_life_us", self.half_life * 1e6)

    def effective_half_life(self, access_count: int) -> float:
        """The half-life in seconds of an entry rehearsed ``access_count`` times."""
        return self.half_life * (1.0 + self.boost * math.log1p(access_count))

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        elapsed = now_us - entry.accessed_us
        if elapsed <= 0.0:
            return 1.0
        h = self._half_life_us * (1.0 + self.boost * math.log1p(entry.access_count))
        raw: float = 0.5 ** (elapsed / h)
        return raw

    def rank_key(self, entry: Entry[Any, Any]) -> tuple[Hashable, float]:
        """``(access count, last access)`` (``None`` for the count when ``boost`` is 0): the half-life
        is fixed within a group, so a later access never scores lower (:class:`~lethe.decay.Grouped`)."""
        return (entry.access_count if self.boost else None), entry.accessed_us

    def time_until(self, entry: Entry[Any, Any], score: float) -> float | None:
        """Seconds after the last access at which the raw score falls to ``score``."""
        if score <= 0.0:
            return None
        return self.effective_half_life(entry.access_count) * -math.log2(score)


class ACTR(Stateful):
    """ACT-R base-level activation mapped to a recall probability.

    ``B = ln(sum_j t_j ** -d)`` over the entry's accesses (the insertion is the
    first; ``t_j`` in seconds since access ``j``), and
    ``raw = 1 / (1 + exp(-(B - tau) / s))`` (Anderson & Lebiere 1998).  Recent
    and frequent accesses both raise activation, and the score of an entry
    that is never rehearsed falls as a power law, ``1 / (1 + (t / half_life) ** (d / s))``.

    By default ``tau = -d * ln(half_life)``, so a once-inserted entry scores
    exactly 0.5 after one half-life.  Per-entry state stays bounded: the entry
    keeps its ``history`` most recent access times in ``decay_state`` and older
    accesses enter through Petrov's (2006) approximation of the remaining sum,
    ``(n - k) * (t_n ** (1 - d) - t_k ** (1 - d)) / ((1 - d) * (t_n - t_k))``,
    which assumes they were spread evenly between the insertion and the
    oldest remembered access.  With at most ``history`` accesses the result is
    the exact equation.

    Args:
        half_life: Time at which a once-inserted entry scores 0.5 (``timedelta`` or seconds).
        decay: ACT-R's ``d``, in (0, 1); 0.5 is the standard value.
        noise: ACT-R's activation-noise parameter ``s`` (``:ans``, > 0), used only as the
            scale of the logistic above: smaller is steeper.  Nothing random is
            added; scores are deterministic (the expected recall probability
            under logistic activation noise of scale ``s``).
        threshold: ``tau``; None (the default) derives it from ``half_life``.
        history: How many recent access times each entry keeps (>= 1).

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t)
    >>> round(ACTR(half_life=3600).score(e, t + timedelta(hours=1)), 12)
    0.5
    """

    name: ClassVar[str] = "actr"
    params = (
        Param("half_life", duration),
        Param("decay", partial(number, low=0, high=1, low_open=True, high_open=True)),
        Param("noise", partial(number, low=0, low_open=True)),
        Param("threshold", _threshold),
        Param("history", partial(integer, low=1, high=10_000, kind=_HISTORY, low_text=_HISTORY, wrong_type=ValueError)),
    )
    __slots__ = ("_tau", "decay", "half_life", "history", "noise", "threshold")
    half_life: float
    decay: float
    noise: float
    threshold: float | None
    history: int
    _tau: float

    def __init__(
        self,
        half_life: timedelta | float = _HOUR,
        decay: float = 0.5,
        noise: float = 0.25,
        threshold: float | None = None,
        history: int = 10,
    ) -> None:
        self._init(half_life, decay, noise, threshold, history)

    def _derive(self) -> None:
        tau = -self.decay * math.log(self.half_life) if self.threshold is None else self.threshold
        object.__setattr__(self, "_tau", tau)

    def activation(self, entry: Entry[Any, Any], now: datetime) -> float:
        """The base-level activation ``B`` of ``entry`` at ``now`` (``inf`` at an access instant)."""
        total = self._sum(entry, to_us(now))
        return math.inf if total == math.inf else (math.log(total) if total > 0.0 else -math.inf)

    def _times(self, entry: Entry[Any, Any]) -> tuple[float, ...]:
        state = entry.decay_state
        if state:
            return tuple(state)
        # No state yet: a fresh entry, or one scored by another function before.
        return (entry.accessed_us,) if entry.access_count else (entry.inserted_us,)

    def _sum(self, entry: Entry[Any, Any], now_us: float) -> float:
        d = self.decay
        times = self._times(entry)
        total = 0.0
        for t in times:
            age = (now_us - t) * 1e-6
            if age <= 0.0:
                return math.inf
            total += age**-d
        n = max(entry.access_count + 1, len(times))
        k = len(times)
        if n > k:
            t_n = (now_us - min(entry.inserted_us, times[0])) * 1e-6
            t_k = (now_us - times[0]) * 1e-6
            if t_n > t_k:
                total += (n - k) * (t_n ** (1.0 - d) - t_k ** (1.0 - d)) / ((1.0 - d) * (t_n - t_k))
            else:
                total += (n - k) * t_k**-d
        return total

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        if entry.access_count or entry.decay_state:
            total = self._sum(entry, now_us)
            if total == math.inf:
                return 1.0
            if total <= 0.0:
                return 0.0
            x = (self._tau - math.log(total)) / self.noise
        else:
            # Never rehearsed: one access, so ln(age ** -d) = -d ln(age), without the history walk.
            age = (now_us - entry.inserted_us) * 1e-6
            if age <= 0.0:
                return 1.0
            x = (self._tau + self.decay * math.log(age)) / self.noise
        if x > 700.0:
            return 0.0
        return 1.0 / (1.0 + math.exp(x))

    def _rank_bounds(self, entry: Entry[Any, Any]) -> tuple[int, float, float]:
        """``(group, newest access, oldest access)``: with ``n`` accesses, every term of the sum
        (Petrov's remainder included, a mean of terms from the insertion on) lies between the
        term of the oldest and that of the newest; the group is ``n`` rounded to a power of two
        (its bit length), so in group 1 (one access) the score is a function of that access."""
        times = self._times(entry)
        n = max(entry.access_count + 1, len(times))
        # The insertion enters the sum only through the remainder of accesses no longer listed.
        oldest = min(times) if n == len(times) else min(entry.inserted_us, *times)
        return n.bit_length(), max(times), oldest

    def _bound(self, group: int, key_us: float, now_us: float, upper: bool) -> float:
        """The raw score of ``n`` accesses all at ``key_us`` (``n`` the largest of the group when
        ``upper``, else the smallest), widened by a relative 1e-9 against float rounding."""
        age = (now_us - key_us) * 1e-6
        if age <= 0.0:
            return 1.0 + 1e-9 if upper else 1.0  # every access is at or after now: the raw score is 1.0
        n = (1 << group) - 1 if upper else 1 << (group - 1)
        x = (self._tau - math.log(n) + self.decay * math.log(age)) / self.noise
        raw = 0.0 if x > 700.0 else 1.0 / (1.0 + math.exp(x))
        return raw * (1.0 + 1e-9) + 1e-300 if upper else raw * (1.0 - 1e-9)

    @staticmethod
    def _exact(group: int) -> bool:
        """Whether the score of the group's entries is a function of the key: one access only."""
        return group == 1

    def _rehearse(self, entry: Entry[Any, Any], now_us: float) -> tuple[float, ...]:
        return (*self._times(entry), now_us)[-self.history :]

    def merge_states(self, entries: Sequence[Entry[Any, Any]]) -> tuple[float, ...]:
        """One access history for entries merged by consolidation: the most recent times of all."""
        return tuple(sorted(t for e in entries for t in self._times(e)))[-self.history :]

    def moved_state(
        self, state: tuple[float, ...], move: Callable[[float], float], custom: Callable[[Any], Any]
    ) -> tuple[float, ...]:
        """``decay_state`` moved in time: every recent access time moved by ``move``."""
        return tuple(move(t) for t in state)

    def dump_state(self, state: tuple[float, ...]) -> list[float]:
        """``decay_state`` as JSON: the recent access times in microseconds."""
        return list(state)

    def load_state(self, data: object) -> tuple[float, ...] | None:
        """``decay_state`` from :meth:`dump_state` output; ValueError if malformed."""
        if data is None:
            return None
        if not isinstance(data, list) or not 1 <= len(data) <= self.history:
            raise ValueError(f"decay_state must be null or a list of 1..{self.history} access times")
        times: list[float] = []
        for t in data:
            f = finite_float(t)
            if f is None or not -1e18 < f < 1e18:
                raise ValueError(f"decay_state holds a bad access time: {short_repr(t)}")
            times.append(f)
        return tuple(sorted(times))
