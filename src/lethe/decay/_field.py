"""Decay models from the field: Ebbinghaus + LTP, stability growth, adaptive decay, power law, soft floor."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from datetime import timedelta
from functools import partial
from typing import Any, ClassVar

from lethe._core.entry import Entry
from lethe._core.reprs import short_repr
from lethe._core.validate import duration, finite_float, is_number, number, text
from lethe.decay._base import Model, Param

__all__ = ["AdaptiveDecay", "EbbinghausLTP", "PowerLaw", "SoftFloor", "StabilityExponential"]

_HOUR = timedelta(hours=1)
_DAY_US = 86_400e6
_HOUR_US = 3_600e6
_BIG = 1e6
_LN2 = math.log(2.0)


def _within(low: float, high: float) -> Any:
    """The check of a number parameter between ``low`` and ``high`` (inclusive)."""
    return partial(number, low=low, high=high)


_POSITIVE = partial(number, low=0, low_open=True)


def _unit(value: object) -> float:
    """A metadata number clamped to 0..1 (an int of any size included); 0.0 for NaN or a non-number."""
    if not is_number(value):
        return 0.0
    # Compared before converting: an int too large for a float still compares exactly.
    return 1.0 if value >= 1 else (float(value) if value > 0 else 0.0)


def _count(value: object) -> float:
    """A metadata count: a finite number >= 0, or the size of a collection; 0.0 otherwise
    (an int too large for a float included, like an infinity)."""
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return float(len(value))
    f = finite_float(value)
    return f if f is not None and f >= 0.0 else 0.0


def _sigmoid(x: float) -> float:
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x) if x > -745.0 else 0.0
    return z / (1.0 + z)


class EbbinghausLTP(Model):
    """Ebbinghaus forgetting with long-term potentiation, frequency and emotion boosts.

    ``raw = exp(-t / tau_eff) * (1 + alpha * f) * (1 + beta * E)`` where ``t`` is
    days since the last access, ``tau_eff = base_tau * ltp_multiplier ** n``
    (``n = entry.access_count``, the retrievals), ``f = min(n / max(days_alive, 1), 1)``
    and ``E`` is ``entry.metadata[emotion_key]`` clamped to 0..1 (0 when absent
    or not a number).  Sources: Ebbinghaus's (1885) exponential forgetting
    curve; long-term potentiation (Bliss & Lømo 1973) as a growth of the time
    constant with each retrieval; emotional arousal strengthening memories
    (McGaugh 2004) as the ``E`` boost.  The starting strength is the entry's
    importance: the memory multiplies the raw score by it and clamps to 0..1.

    The boosts can lift the raw score above 1 (for example ``1 + beta`` for a
    fresh, fully emotional entry); the memory's clamp keeps the final score in
    0..1.  Without a rehearsal the score never rises: ``t`` and ``days_alive``
    only grow.  Each retrieval multiplies ``tau_eff`` by ``ltp_multiplier``
    (after 5 retrievals, ``7 * 1.5 ** 5 = 53.2`` days with the defaults).

    Args:
        base_tau: Time constant of a never-retrieved entry (``timedelta`` or seconds, > 0).
        ltp_multiplier: Growth of ``tau_eff`` per retrieval (>= 1).
        alpha: Frequency weight (>= 0).
        beta: Emotion weight (>= 0).
        emotion_key: Metadata key holding the emotional tone ``E``.

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t)
    >>> round(EbbinghausLTP().score(e, t + timedelta(days=7)), 6)  # e ** -1
    0.367879
    """

    name: ClassVar[str] = "ebbinghaus_ltp"
    params = (
        Param("base_tau", duration),
        Param("ltp_multiplier", _within(1.0, _BIG)),
        Param("alpha", _within(0.0, _BIG)),
        Param("beta", _within(0.0, _BIG)),
        Param("emotion_key", text),
    )
    __slots__ = ("_tau_us", "alpha", "base_tau", "beta", "emotion_key", "ltp_multiplier")
    base_tau: float
    ltp_multiplier: float
    alpha: float
    beta: float
    emotion_key: str
    _tau_us: float

    def __init__(
        self,
        base_tau: timedelta | float = timedelta(days=7),
        ltp_multiplier: float = 1.5,
        alpha: float = 0.3,
        beta: float = 0.2,
        emotion_key: str = "emotional_tone",
    ) -> None:
        self._init(base_tau, ltp_multiplier, alpha, beta, emotion_key)

    def _derive(self) -> None:
        object.__setattr__(self, "_tau_us", self.base_tau * 1e6)

    def effective_tau(self, retrievals: int) -> float:
        """``tau_eff`` in seconds after ``retrievals`` retrievals (``inf`` if it overflows)."""
        try:
            return self.base_tau * self.ltp_multiplier**retrievals
        except OverflowError:
            return math.inf

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        n = entry.access_count
        elapsed = now_us - entry.accessed_us
        decay = 1.0
        if elapsed > 0.0:
            # ltp ** -n underflows to 0.0 instead of overflowing.
            decay = math.exp(-elapsed / self._tau_us * self.ltp_multiplier**-n)
        f = 0.0
        if n:
            alive = (now_us - entry.inserted_us) / _DAY_US
            f = min(n / (alive if alive > 1.0 else 1.0), 1.0)
        e = _unit(entry.metadata.get(self.emotion_key)) if self.beta else 0.0
        return decay * (1.0 + self.alpha * f) * (1.0 + self.beta * e)


class StabilityExponential(Model):
    """Ebbinghaus retention with importance-scaled stability that grows with each access.

    ``R = exp(-t / S)`` with ``S = half_life * importance * growth ** access_count``
    and ``t`` the time since the last access: exponential retention with a
    memory stability ``S`` that grows with each review, as in the
    two-component model of memory (Woźniak, Gorzelańczyk & Murakowski 1995).
    Importance enters through the stability, so
    ``includes_importance`` is True: the memory does not multiply again, and
    an entry of importance 0 always scores 0.

    Despite its name, ``half_life`` is the time *constant* of the curve: at
    ``importance * growth ** n == 1`` the score is ``1 / e`` (not 0.5) after
    one ``half_life``.  Worked values at importance 0.8 (``S = 69120`` s):
    ``exp(-1.25) = 0.2865`` after a day and ``exp(-8.75) = 1.58e-4`` after a week.

    Args:
        half_life: Base time constant (``timedelta`` or seconds, > 0).
        growth: Stability factor per access (>= 1).

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t, importance=0.8)
    >>> round(StabilityExponential().score(e, t + timedelta(hours=1)), 4)
    0.9492
    """

    name: ClassVar[str] = "stability_exponential"
    includes_importance: ClassVar[bool] = True
    params = (Param("half_life", duration), Param("growth", _within(1.0, _BIG)))
    __slots__ = ("_half_life_us", "growth", "half_life")
    half_life: float
    growth: float
    _half_life_us: float

    def __init__(self, half_life: timedelta | float = timedelta(days=1), growth: float = 1.5) -> None:
        self._init(half_life, growth)

    def _derive(self) -> None:
        object.__setattr__(self, "_half_life_us", self.half_life * 1e6)

    def stability(self, entry: Entry[Any, Any]) -> float:
        """``S`` in seconds for ``entry`` (``inf`` if it overflows)."""
        try:
            return self.half_life * entry.importance * self.growth**entry.access_count
        except OverflowError:
            return math.inf

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        imp = entry.importance
        if imp <= 0.0:
            return 0.0
        elapsed = now_us - entry.accessed_us
        if elapsed <= 0.0:
            return 1.0
        try:
            r = math.exp(-elapsed / (self._half_life_us * imp) * self.growth**-entry.access_count)
        except ZeroDivisionError:  # half-life times importance underflowed to 0
            return self._extreme(entry, elapsed)
        return r if r == r else self._extreme(entry, elapsed)  # NaN: an infinite quotient times 0

    def _extreme(self, entry: Entry[Any, Any], elapsed: float) -> float:
        """``_raw`` where its factors under- or overflow: the same formula in logarithms."""
        log_x = (
            math.log(elapsed)
            - math.log(self._half_life_us)
            - math.log(entry.importance)
            - entry.access_count * math.log(self.growth)
        )
        return 0.0 if log_x > 709.0 else math.exp(-math.exp(log_x))

    def rank_key(self, entry: Entry[Any, Any]) -> tuple[Hashable, float]:
        """``((importance, access count), last access)``: ``S`` is fixed within a group, so a later
        access never scores lower (:class:`~lethe.decay.Grouped`)."""
        return (entry.importance, entry.access_count), entry.accessed_us

    def time_until(self, entry: Entry[Any, Any], score: float) -> float | None:
        """Seconds after the last access at which ``R`` falls to ``score``."""
        if score <= 0.0 or entry.importance <= 0.0:
            return None if score <= 0.0 else 0.0
        return self.stability(entry) * -math.log(score) if score < 1.0 else 0.0


_TYPE_MULTIPLIERS = {"fact": 0.3, "preference": 0.5, "insight": 0.7, "conversation": 1.0}


def _multipliers(value: object, name: str = "type_multipliers") -> tuple[tuple[str, float], ...]:
    """``type_multipliers`` (None: the defaults) as sorted ``(type, multiplier)`` pairs."""
    items: Iterable[Any]
    if value is None:
        value = _TYPE_MULTIPLIERS
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        raise TypeError(f"type_multipliers must be a mapping of str to number, got {type(value).__name__}")
    out: dict[str, float] = {}
    for pair in items:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"type_multipliers: bad item {short_repr(pair)}")
        key, mult = pair
        text(key, "type_multipliers keys")
        out[key] = number(mult, f"type_multipliers[{key!r}]", low=0.0, high=_BIG)
    return tuple(sorted(out.items()))


class AdaptiveDecay(Model):
    """Adaptive decay: type, access, graph and channel aware, with a retention floor.

    An exponential decay whose rate adapts to the entry: a per-type rate,
    a logarithmic access stability, resistance from knowledge-graph links,
    channel diversity, a recency boost capped at the entry's importance and a
    retention floor.  With ``N = access_count + 1`` (creation counts as an
    access), ``H`` hours since the entry was put and ``L`` hours since
    its last access::

        stability  = 1 + access_stability_k * ln(1 + N)
        resistance = min(1, connections * relation_resistance_k)
        channel    = 1 / (1 + channel_diversity_k * channels)
        rate       = base_rate * type_multiplier * channel / stability * (1 - resistance)
        decayed    = importance * exp(-rate * H)
        if boost applies: decayed = min(decayed * recency_boost, importance)
        score      = max(decayed, min_retention * importance)

    ``type_multiplier`` comes from ``metadata[type_key]`` (``default_multiplier``
    for unknown or missing types); ``connections`` and ``channels`` are
    ``metadata[connections_key]`` and ``metadata[channels_key]``: a number or a
    collection (its length), 0 when absent.  Importance is applied inside, so
    ``includes_importance`` is True.

    The boost condition: a plain ``H > 168 and L < 24`` would switch on by
    itself when an entry accessed less than a day ago
    turns a week old, raising the score without a rehearsal.  Here the boost
    applies when ``L < recency_access_threshold`` and the last access itself
    happened more than ``recency_age_threshold`` hours after the entry was put
    ("an old memory, recently accessed"), so the score never rises with time
    alone.  A fresh entry (``L == H``) scores ``importance``.

    Args:
        type_key: Metadata key read for the memory type.
        connections_key: Metadata key read for the connections.
        channels_key: Metadata key read for the channels.
        base_rate: Decay rate per hour before modifiers (>= 0).
        min_retention: Floor as a fraction of importance (0..1).
        access_stability_k: Access-stability modifier weight (>= 0).
        relation_resistance_k: Relation-resistance modifier weight (>= 0).
        channel_diversity_k: Channel-diversity modifier weight (>= 0).
        recency_boost: Factor for old, recently accessed entries (>= 1).
        recency_age_threshold: Hours between put and last access for the boost (>= 0).
        recency_access_threshold: Hours since the last access for the boost (>= 0).
        type_multipliers: Mapping of type name to rate multiplier (>= 0); stored as sorted pairs.
        default_multiplier: Multiplier for unknown types (>= 0).

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t, importance=0.8,
    ...           metadata={"type": "fact", "channels": 1})
    >>> round(AdaptiveDecay().score(e, t + timedelta(hours=720)), 3)  # a fact, 30 days untouched
    0.689
    """

    name: ClassVar[str] = "adaptive"
    includes_importance: ClassVar[bool] = True
    params = (
        Param("type_key", text),
        Param("connections_key", text),
        Param("channels_key", text),
        Param("base_rate", _within(0.0, _BIG)),
        Param("min_retention", _within(0.0, 1.0)),
        Param("access_stability_k", _within(0.0, _BIG)),
        Param("relation_resistance_k", _within(0.0, _BIG)),
        Param("channel_diversity_k", _within(0.0, _BIG)),
        Param("recency_boost", _within(1.0, _BIG)),
        Param("recency_age_threshold", _within(0.0, 1e12)),
        Param("recency_access_threshold", _within(0.0, 1e12)),
        Param("type_multipliers", _multipliers, dump=dict, show=lambda pairs: repr(dict(pairs))),
        Param("default_multiplier", _within(0.0, _BIG)),
    )
    __slots__ = (
        "access_stability_k",
        "base_rate",
        "channel_diversity_k",
        "channels_key",
        "connections_key",
        "default_multiplier",
        "min_retention",
        "recency_access_threshold",
        "recency_age_threshold",
        "recency_boost",
        "relation_resistance_k",
        "type_key",
        "type_multipliers",
    )
    type_key: str
    connections_key: str
    channels_key: str
    base_rate: float
    min_retention: float
    access_stability_k: float
    relation_resistance_k: float
    channel_diversity_k: float
    recency_boost: float
    recency_age_threshold: float
    recency_access_threshold: float
    type_multipliers: tuple[tuple[str, float], ...]
    default_multiplier: float

    def __init__(
        self,
        type_key: str = "type",
        connections_key: str = "connections",
        channels_key: str = "channels",
        base_rate: float = 0.001,
        min_retention: float = 0.3,
        access_stability_k: float = 0.3,
        relation_resistance_k: float = 0.1,
        channel_diversity_k: float = 0.2,
        recency_boost: float = 1.3,
        recency_age_threshold: float = 168,
        recency_access_threshold: float = 24,
        type_multipliers: Mapping[str, float] | Iterable[tuple[str, float]] | None = None,
        default_multiplier: float = 1.0,
    ) -> None:
        # Thirteen parameters: the model's declared ``params``, one by one, as ``Model`` requires of
        # its constructor (public API).  ``_init`` takes them in declared order: picked here by name.
        given = locals()
        self._init(*[given[param.name] for param in AdaptiveDecay.params])

    def type_multiplier(self, kind: object) -> float:
        """The rate multiplier for a memory type (``default_multiplier`` if unknown)."""
        for name, mult in self.type_multipliers:
            if name == kind:
                return mult
        return self.default_multiplier

    def rate(self, entry: Entry[Any, Any]) -> float:
        """The effective decay rate per hour of ``entry``."""
        meta = entry.metadata
        stability = 1.0 + self.access_stability_k * math.log1p(entry.access_count + 1)
        resistance = min(1.0, _count(meta.get(self.connections_key)) * self.relation_resistance_k)
        channel = 1.0 / (1.0 + self.channel_diversity_k * _count(meta.get(self.channels_key)))
        mult = self.type_multiplier(meta.get(self.type_key))
        return self.base_rate * mult * channel / stability * (1.0 - resistance)

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        imp = entry.importance
        hours = (now_us - entry.inserted_us) / _HOUR_US
        if hours <= 0.0:
            return imp
        x = self.rate(entry) * hours
        decayed = imp * math.exp(-x) if x < 745.0 else 0.0
        since_access = (now_us - entry.accessed_us) / _HOUR_US
        accessed_at_age = (entry.accessed_us - entry.inserted_us) / _HOUR_US
        if accessed_at_age > self.recency_age_threshold and since_access < self.recency_access_threshold:
            decayed = min(decayed * self.recency_boost, imp)
        floor = self.min_retention * imp
        return decayed if decayed > floor else floor


class PowerLaw(Model):
    """Power-law forgetting: ``raw = (1 + t / (k * half_life)) ** -exponent``.

    ``t`` is the time since the last access and ``k = 1 / (2 ** (1 / exponent) - 1)``,
    so the score is exactly 0.5 after one ``half_life`` whatever the exponent.
    Power-law curves (Wixted & Ebbesen 1991; Wixted 2004) fall faster than an
    exponential at first and far slower later: old memories keep a long tail.

    Args:
        half_life: Time at which the score is 0.5 (``timedelta`` or seconds, > 0).
        exponent: The tail exponent, 0.001 .. 1000; smaller means a longer tail.  Below
            about 0.001, ``2 ** (1 / exponent)`` overflows a float and ``k`` is 0.

    Raises:
        ValueError, TypeError: a bad ``half_life`` or ``exponent``, or a pair whose time
            scale ``k * half_life`` underflows to zero (scores would divide by it).

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t)
    >>> round(PowerLaw(half_life=3600).score(e, t + timedelta(hours=1)), 12)
    0.5
    """

    name: ClassVar[str] = "power_law"
    params = (Param("half_life", duration), Param("exponent", partial(number, low=0, high=1e3, low_open=True)))
    __slots__ = ("_scale_us", "exponent", "half_life")
    half_life: float
    exponent: float
    _scale_us: float

    def __init__(self, half_life: timedelta | float = _HOUR, exponent: float = 1.0) -> None:
        self._init(half_life, exponent)

    def _derive(self) -> None:
        secs, p = self.half_life, self.exponent
        try:
            k = 1.0 / math.expm1(_LN2 / p)
        except OverflowError:
            raise ValueError(f"exponent must be at least about 0.001, got {short_repr(p)}") from None
        scale_us = k * secs * 1e6
        if not scale_us > 0.0:
            raise ValueError(
                f"half_life ({short_repr(secs)} s) with exponent {short_repr(p)} gives a time scale "
                "k * half_life that underflows to 0; use a longer half_life or a larger exponent"
            )
        object.__setattr__(self, "_scale_us", scale_us)

    @property
    def k(self) -> float:
        """``1 / (2 ** (1 / exponent) - 1)``: makes one half-life score 0.5."""
        return 1.0 / math.expm1(math.log(2.0) / self.exponent)

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        elapsed = now_us - entry.accessed_us
        if elapsed <= 0.0:
            return 1.0
        raw: float = (1.0 + elapsed / self._scale_us) ** -self.exponent
        return raw

    def rank_key(self, entry: Entry[Any, Any]) -> tuple[Hashable, float]:
        """``(None, last access)``: one curve for every entry, so a later access never scores lower
        (the memory groups by importance itself): see :class:`~lethe.decay.Grouped`."""
        return None, entry.accessed_us

    def time_until(self, entry: Entry[Any, Any], score: float) -> float | None:
        """Seconds after the last access at which the raw score falls to ``score`` (``inf`` if it overflows)."""
        if score <= 0.0:
            return None
        if score >= 1.0:
            return 0.0
        try:
            return (math.pow(score, -1.0 / self.exponent) - 1.0) * self.k * self.half_life
        except OverflowError:  # too far to be a float: beyond any representable time
            return math.inf


class SoftFloor(Model):
    """Exponential decay towards an importance-gated floor: important entries never vanish.

    ``raw = floor + (1 - floor) * 0.5 ** (t / half_life)``, ``t`` since the last
    access: high-impact memories decay to a non-zero floor set by a logistic
    (sigmoid) gate on importance.

    In lethe importance 1 is the neutral level (the memory multiplies by it,
    and the one-half-life rule must hold at importance 1), so the floor is
    gated on importance *above* 1::

        floor = 0                                   if importance <= 1
        floor = floor_max * (g(x) - g(0)) / (1 - g(0))   otherwise, x = importance - 1
        g(x)  = 1 / (1 + exp(-steepness * (x - midpoint)))

    The gate is 0 at importance 1, continuous, increasing, about half open at
    importance ``1 + midpoint`` and tends to 1.  Importance is not applied
    inside (``includes_importance`` is False): the memory multiplies the raw
    score by importance and clamps it, so an entry of importance ``i > 1``
    never falls below ``min(1, i * floor)``.

    Args:
        half_life: Half-life of the part above the floor (``timedelta`` or seconds, > 0).
        floor_max: The floor's limit for very important entries (0..1).
        midpoint: Excess importance at which the gate is about half open (> 0).
        steepness: Gate steepness (> 0).

    >>> from datetime import datetime, timedelta, timezone
    >>> from lethe import Entry
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key=1, value="v", inserted_at=t, last_accessed_at=t)
    >>> SoftFloor(half_life=3600).score(e, t + timedelta(hours=1))
    0.5
    """

    name: ClassVar[str] = "soft_floor"
    params = (
        Param("half_life", duration),
        Param("floor_max", _within(0.0, 1.0)),
        Param("midpoint", _POSITIVE),
        Param("steepness", _POSITIVE),
    )
    __slots__ = ("_half_life_us", "floor_max", "half_life", "midpoint", "steepness")
    half_life: float
    floor_max: float
    midpoint: float
    steepness: float
    _half_life_us: float

    def __init__(
        self,
        half_life: timedelta | float = _HOUR,
        floor_max: float = 0.3,
        midpoint: float = 0.7,
        steepness: float = 10.0,
    ) -> None:
        self._init(half_life, floor_max, midpoint, steepness)

    def _derive(self) -> None:
        object.__setattr__(self, "_half_life_us", self.half_life * 1e6)

    def floor(self, importance: float) -> float:
        """The floor for an entry of this importance (0.0 at importance <= 1)."""
        if importance <= 1.0 or not self.floor_max:
            return 0.0
        g0 = _sigmoid(-self.steepness * self.midpoint)
        g = _sigmoid(self.steepness * (importance - 1.0 - self.midpoint))
        return self.floor_max * max(0.0, (g - g0) / (1.0 - g0))

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float:
        elapsed = now_us - entry.accessed_us
        if elapsed <= 0.0:
            return 1.0
        decay: float = 0.5 ** (elapsed / self._half_life_us)
        imp = entry.importance
        if imp <= 1.0:
            return decay
        floor = self.floor(imp)
        return floor + (1.0 - floor) * decay

    def rank_key(self, entry: Entry[Any, Any]) -> tuple[Hashable, float]:
        """``(None, last access)``: the floor depends on importance only, by which the memory
        groups itself, so within a group a later access never scores lower (:class:`~lethe.decay.Grouped`)."""
        return None, entry.accessed_us

    def time_until(self, entry: Entry[Any, Any], score: float) -> float | None:
        """Seconds after the last access at which the raw score falls to ``score`` (None: never)."""
        floor = self.floor(entry.importance)
        if score <= floor:
            return None
        if score >= 1.0:
            return 0.0
        secs: float = self.half_life * math.log2((1.0 - floor) / (score - floor))
        return secs
