"""What a decay function is: the protocol, and its optional members each declared as a Protocol.

The one module that says which members lethe looks for on a decay function.
:mod:`lethe.decay._adapter` is the one place that looks them up.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from lethe._core.entry import Entry

__all__ = [
    "BatchValues",
    "DecayCallable",
    "DecayFunction",
    "DeclaresRate",
    "FastRehearse",
    "FastScore",
    "Forecasts",
    "Grouped",
    "HasHalfLife",
    "IncludesImportance",
    "KeepsState",
    "MergesStates",
    "Rehearses",
    "Serializable",
]


@runtime_checkable
class DecayFunction(Protocol):
    """What a decay function is: an object with ``score(entry, now) -> float``.

    ``score`` returns the entry's raw relevance at ``now``: 1.0 when fresh,
    falling towards 0.0 as the entry goes unrehearsed.  :class:`~lethe.Memory`
    multiplies it by the entry's importance and clamps the result to 0..1, so
    ``score`` must not apply importance itself (unless it says so, below).  It
    must be pure: same entry and time, same result.

    A decay function may also define these optional members:

    ``includes_importance: bool``
        True when ``score`` already accounts for ``entry.importance``; the
        memory then only clamps.
    ``rehearse(entry, now) -> state``
        Called on every rehearsal (``get``, ``touch``, ``update``) with the
        entry as it was before; the value returned becomes the new entry's
        ``decay_state``.  A fresh entry has ``decay_state`` None, so the
        function derives its initial state from the entry's fields.
    ``decay_rate: float``
        Declares that ``score(entry, now) == exp(-decay_rate * seconds since
        entry.last_accessed_at)`` for every entry: one rate for all entries,
        so the ranking of entries never changes with time.  The memory then
        keeps an index on that ranking (see the performance guide).  A
        subclass that overrides ``score`` must declare ``decay_rate`` again
        to keep the index; an inherited one is not taken as a promise.
    ``rank_key(entry) -> (group, key)``
        Declares that the ranking never changes within a group of entries
        (:class:`Grouped`): the memory then keeps one index per group.  The
        same rule as for ``decay_rate`` holds for a subclass.
    ``to_dict() -> dict``
        JSON-ready name and parameters, for :meth:`~lethe.Memory.to_dict`.
    ``time_until(entry, score) -> float | None``
        Seconds after ``entry.last_accessed_at`` at which the raw score falls
        to ``score`` (closed-form forecasts); None for never.
    ``half_life: float | timedelta``
        The half-life the function was built with, which the memory reports
        as its own (``Memory.half_life``).
    ``dump_state(state)``, ``load_state(data)``
        ``decay_state`` to JSON and back, for :meth:`~lethe.Memory.to_dict`.
        lethe's own stateful models also declare ``moved_state(state, move,
        custom)``: how their state moves in time, for
        ``Memory.from_dict(..., shift_to=...)`` and the checks ``from_dict``
        makes.  A custom function's state is opaque: ``shift_to`` refuses it.
    ``merge_states(entries) -> state``
        One ``decay_state`` for entries merged by :meth:`~lethe.Memory.consolidate`.

    Each optional member is declared below as a runtime-checkable Protocol
    (``Rehearses``, ``DeclaresRate``...), for type checkers and ``isinstance``.

    Any plain callable ``(entry, now) -> float`` works too; the memory wraps it.

    >>> from lethe.decay import Exponential
    >>> isinstance(Exponential(), DecayFunction)
    True
    """

    def score(self, entry: Entry[Any, Any], now: datetime) -> float:
        """The entry's raw relevance at ``now``, in 0..1."""
        ...


DecayCallable = Callable[[Entry[Any, Any], datetime], float]


@runtime_checkable
class IncludesImportance(Protocol):
    """A decay function whose ``score`` already accounts for ``entry.importance``."""

    includes_importance: bool


@runtime_checkable
class Rehearses(Protocol):
    """A decay function that keeps a per-entry ``decay_state``, updated on each rehearsal."""

    def rehearse(self, entry: Entry[Any, Any], now: datetime) -> Any:
        """The entry's new ``decay_state`` after a rehearsal at ``now`` (``entry`` as it was before)."""
        ...


@runtime_checkable
class DeclaresRate(Protocol):
    """A decay function with one exponential rate per second for every entry (indexable ranking)."""

    @property
    def decay_rate(self) -> float:
        """``score == exp(-decay_rate * seconds since the last access)`` for every entry."""
        ...


@runtime_checkable
class Grouped(Protocol):
    """A decay function whose ranking never changes within a group of entries (indexable ranking).

    ``rank_key(entry)`` returns ``(group, key)``: ``group`` (hashable) holds
    whatever enters ``score`` besides one number, ``key`` (a real number, not
    NaN), that number.  The promise, for any two entries ``a`` and ``b`` of one
    group and every moment ``now`` after their last access:

    * ``key(a) < key(b)`` implies ``score(a, now) <= score(b, now)``, as
      computed in floats;
    * ``key(a) == key(b)`` implies ``score(a, now) == score(b, now)``.

    ``rank_key`` must be pure (same entry, same answer) and cheap; it is called
    on every write.  Leave importance out: when the memory multiplies the score
    by the importance it adds the importance to the group itself.  Equal
    scores need not come from equal keys: the memory breaks ties as a full
    scan does, whatever the keys.

    A memory whose decay function declares it keeps one sorted index per group
    and merges the groups by score at query time: ``top(k)`` and the victim of
    a put at capacity cost O(G log n) for G groups instead of scoring every
    entry.  Past 64 live groups the memory scans instead.  A function that
    declares ``decay_rate`` is indexed by that instead.

    Built in: :class:`~lethe.decay.PowerLaw` and :class:`~lethe.decay.SoftFloor`
    (key: the last access; group: importance), :class:`~lethe.decay.AccessWeighted`
    and :class:`~lethe.decay.StabilityExponential` (key: the last access; group: the
    access count, and importance), :class:`~lethe.decay.Recency` (key: when the
    entry was put; one group), :class:`~lethe.decay.Importance` and
    :class:`~lethe.decay.AccessFrequency` (constant in time; one group).

    >>> from datetime import datetime, timezone
    >>> from lethe import Entry, Memory
    >>> class Halving:
    ...     "0.5 per hour since the last access, halved again for each 'stale' tag."
    ...     def score(self, entry, now):
    ...         hours = (now - entry.last_accessed_at).total_seconds() / 3600
    ...         return 0.5 ** (max(hours, 0.0) + entry.metadata.get("stale", 0))
    ...     def rank_key(self, entry):
    ...         return entry.metadata.get("stale", 0), entry.last_accessed_at.timestamp()
    >>> isinstance(Halving(), Grouped)
    True
    >>> mem = Memory(decay_fn=Halving(), clock_fn=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> [e.key for e in mem.put("a", key="a", metadata={"stale": 1}).put("b", key="b").top(2)] == ["b", "a"]
    True
    """

    def rank_key(self, entry: Entry[Any, Any]) -> tuple[Hashable, float]:
        """``(group, key)``: within a group, scores never fall as ``key`` grows (see the class)."""
        ...


@runtime_checkable
class Serializable(Protocol):
    """A decay function that describes itself as JSON (built-ins only are read back)."""

    def to_dict(self) -> dict[str, Any]:
        """Name and parameters, JSON-ready."""
        ...


@runtime_checkable
class Forecasts(Protocol):
    """A decay function with a closed-form inverse: when the raw score falls to a value."""

    def time_until(self, entry: Entry[Any, Any], score: float) -> float | None:
        """Seconds after the last access at which the raw score falls to ``score``; None for never."""
        ...


@runtime_checkable
class HasHalfLife(Protocol):
    """A decay function that declares the half-life it was built with."""

    @property
    def half_life(self) -> float | timedelta:
        """Seconds (or a ``timedelta``)."""
        ...


@runtime_checkable
class KeepsState(Protocol):
    """A decay function whose ``decay_state`` has its own JSON form."""

    def dump_state(self, state: Any) -> Any:
        """``decay_state`` as JSON."""
        ...

    def load_state(self, data: object) -> Any:
        """``decay_state`` from :meth:`dump_state` output; ValueError if malformed."""
        ...


@runtime_checkable
class MergesStates(Protocol):
    """A decay function that merges the states of entries consolidated into one."""

    def merge_states(self, entries: Sequence[Entry[Any, Any]]) -> Any:
        """One ``decay_state`` for the merged entry."""
        ...


# The fast paths of lethe's own models (trusted: called only on built-ins).


@runtime_checkable
class FastScore(Protocol):
    """``_raw(entry, now_us)``: the raw score at a microsecond count, without a datetime."""

    def _raw(self, entry: Entry[Any, Any], now_us: float) -> float: ...


@runtime_checkable
class FastRehearse(Protocol):
    """``_rehearse(entry, now_us)``: :meth:`Rehearses.rehearse` at a microsecond count."""

    def _rehearse(self, entry: Entry[Any, Any], now_us: float) -> Any: ...


@runtime_checkable
class BatchValues(Protocol):
    """``_values(entries, now_us)``: rank values (``raw * importance``, 0.0 once expired) of many entries."""

    def _values(self, entries: list[Entry[Any, Any]], now_us: float) -> list[float]: ...
