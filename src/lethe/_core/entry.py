"""``Entry``: one remembered value and the facts its score is computed from."""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, NoReturn, TypeVar

from lethe._core.clock import UTC, to_us, to_utc
from lethe._core.record import (
    ANY,
    CLOCK,
    CONTENT,
    COUNT,
    FLAG,
    GIVEN,
    INSTANT,
    KEY,
    METADATA,
    OPTION,
    ORDER,
    STATE,
    TEXT,
    VECTOR,
    WEIGHT,
    changer,
    declare,
    fields,
    fresh_builder,
)
from lethe._core.reprs import short_repr
from lethe._core.validate import flag, integer, number
from lethe._core.vector import Vector, vector

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_NAN = float("nan")
# Rehearsals counted beyond this (2**53, the largest count a float holds exactly)
# saturate, so every count a memory holds can be written and read back.
MAX_COUNT = 2**53


class FrozenDict(dict[str, Any]):
    """A ``dict`` that refuses every change: the read-only copy of entry metadata.

    It compares, hashes (when its values do), pickles and serializes like the
    plain dict it copies; the dict the caller passed is never shared.

    >>> meta = FrozenDict({"source": "user"})
    >>> meta["source"]
    'user'
    >>> meta["source"] = "x"
    Traceback (most recent call last):
    ...
    TypeError: entry metadata is read-only; put the entry again with new metadata
    """

    __slots__ = ()

    def _readonly(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("entry metadata is read-only; put the entry again with new metadata")

    __setitem__ = __delitem__ = _readonly
    clear = pop = popitem = setdefault = update = __ior__ = _readonly

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __repr__(self) -> str:
        return dict.__repr__(self)


EMPTY_METADATA = FrozenDict()


def freeze_metadata(metadata: Mapping[str, Any] | Iterable[tuple[str, Any]] | None) -> FrozenDict:
    """A read-only, deep copy of ``metadata``.

    Dicts, lists and sets inside it are copied too, so a caller who later changes
    what it passed in changes no entry (and no score computed from it).  Keys
    must be strings at every depth: they are what JSON can keep (``to_dict``).

    Raises:
        TypeError: ``metadata`` is not a mapping, or a key is not a string (naming it).
    """
    if metadata is None:
        return EMPTY_METADATA
    if type(metadata) is FrozenDict:
        return metadata
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping or None, got {type(metadata).__name__}")
    if not metadata:
        return EMPTY_METADATA
    try:
        return FrozenDict(_copied_items(metadata, "metadata"))
    except RecursionError:
        raise ValueError("metadata is nested too deeply, or contains itself") from None


def metadata_copies(metadata: FrozenDict) -> Callable[[], FrozenDict] | None:
    """What gives each entry of a batch its own copy of frozen ``metadata``, as a put of each
    would: each call, a fresh copy of its inner dicts, lists and sets.  None when it holds none
    (each put's copy would hold the very objects it holds: the entries may share it)."""
    again = _copied_items(metadata, "metadata")
    if all(map(operator.is_, again.values(), metadata.values())):
        return None
    return lambda: FrozenDict(_copied_items(metadata, "metadata"))


def _copied_items(mapping: Mapping[Any, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        if type(key) is not str:
            raise TypeError(f"{where} keys must be strings, got {type(key).__name__} key {short_repr(key)}")
        out[key] = _copied(value, f"{where}[{short_repr(key)}]")
    return out


def _copied(value: Any, where: str) -> Any:
    """``value`` with its dicts, lists and sets copied (at every depth); anything else as is."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, Mapping):
        return _copied_items(value, where)
    if isinstance(value, list):
        return [_copied(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return tuple(_copied(v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, (set, frozenset)):
        return kind(value) if kind in (set, frozenset) else set(value)
    return value


def check_importance(importance: object) -> float:
    """``importance`` as a float, or ValueError/TypeError naming ``importance``."""
    return number(importance, "importance", low=0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry(Generic[K, V]):
    """One value in a :class:`~lethe.Memory`, with the facts its score is computed from.

    Entries are immutable: a rehearsal or an update gives the memory a new
    entry and leaves the old one (and every memory holding it) unchanged.
    That immutability is shallow: ``value`` and ``summary`` are the objects
    you passed, not copies, and ``metadata`` is a read-only copy (its dicts,
    lists and sets copied at any depth) whose inner containers are plain
    ones; keep them immutable (or never mutate them) for snapshots to stay
    what they were.

    Attributes:
        key: The entry's unique key.
        value: The remembered value.
        inserted_at: When the entry was put (timezone-aware; held as UTC).
        last_accessed_at: When it was put or last rehearsed (``get``, ``touch``, ``update``).
        access_count: Rehearsals since it was put (0 for a fresh entry).
        pinned: Pinned entries score exactly 1.0 and are never evicted automatically.
        importance: Multiplier on the decay score (>= 0; above 1 decays slower, clamped at 1.0).
        metadata: A read-only copy of the caller's metadata.
        summary: What ``summarize_fn`` returned for the current value, else None.
        summarized: Whether ``summarize_fn`` has run for the current value (versions made
            from this one do not run it again for that value).
            A rehearsal (``get``, ``touch``) keeps it; ``update`` (a new value) resets it.
        expires_at: Time-to-live deadline: from then on the entry is gone for every read of a
            memory (see :meth:`Memory.put`).  None for no deadline.
        seq: Position in the memory's history of puts; breaks ties between equal scores.
        decay_state: Per-entry state kept by the decay function (for example ACT-R's
            recent access times); None until the first rehearsal.
        text: The text a search matches (None: ``value`` when it is a str, else nothing).
        vector: The embedding a search compares (a :class:`~lethe.Vector`, float32), or None.
        inserted_us, accessed_us, expires_us: The same instants as exact counts of
            microseconds since the Unix epoch (floats), derived from the datetimes;
            decay functions use them to score with float arithmetic.

    Raises:
        TypeError, ValueError: a field is of the wrong type or out of range (the
            message names it): a naive or non-datetime instant, ``last_accessed_at``
            before ``inserted_at``, ``importance`` below 0, ``pinned`` or ``summarized``
            not a bool, ``access_count`` or ``seq`` not an int >= 0, ``text`` not a str,
            ``vector`` not a sequence of finite numbers with a direction.

    >>> from datetime import datetime, timezone
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key="k", value="v", inserted_at=t, last_accessed_at=t)
    >>> (e.access_count, e.pinned, e.importance)
    (0, False, 1.0)
    """

    key: K = field(metadata=declare(KEY, put=GIVEN))
    value: V = field(metadata=declare(ANY, put=GIVEN))
    inserted_at: datetime = field(metadata=declare(INSTANT, exact="inserted_us", put=CLOCK))
    last_accessed_at: datetime = field(metadata=declare(INSTANT, exact="accessed_us", after="inserted_at", put=CLOCK))
    access_count: int = field(default=0, metadata=declare(COUNT))
    pinned: bool = field(default=False, metadata=declare(FLAG, put=OPTION))
    importance: float = field(default=1.0, metadata=declare(WEIGHT, put=OPTION))
    # A factory, not a default: Python 3.10's dataclasses refuse any dict (subclass) default.
    metadata: Mapping[str, Any] = field(default_factory=lambda: EMPTY_METADATA, metadata=declare(METADATA, put=OPTION))
    summary: Any = field(default=None, metadata=declare(ANY))
    summarized: bool = field(default=False, metadata=declare(FLAG))
    expires_at: datetime | None = field(default=None, metadata=declare(INSTANT, exact="expires_us", put=OPTION))
    seq: int = field(default=0, metadata=declare(ORDER, put=GIVEN))
    decay_state: Any = field(default=None, metadata=declare(STATE))
    text: str | None = field(default=None, metadata=declare(TEXT, put=CONTENT, since=3))
    vector: Vector | None = field(default=None, metadata=declare(VECTOR, put=CONTENT, since=3))
    # Exact microsecond counts of the three datetimes, so scoring is float math (derived).
    inserted_us: float = field(default=_NAN, repr=False, compare=False)
    accessed_us: float = field(default=_NAN, repr=False, compare=False)
    expires_us: float | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        for f in fields(type(self)):
            value = getattr(self, f.name)
            if f.exact is not None:  # an instant
                if value is None and f.default is None:
                    setattr_(self, f.exact, None)
                    continue
                setattr_(self, f.exact, to_us(value, f.name))
                # Held as UTC: datetimes of a zone with daylight saving time compare by wall clock.
                if value.tzinfo is not UTC:
                    setattr_(self, f.name, to_utc(value, f.name))
            else:
                accept = _ACCEPT.get(f.kind)
                if accept is not None:
                    setattr_(self, f.name, accept(value, f.name))
        for f in fields(type(self)):
            if f.after is not None and f.exact is not None:
                # The UTC datetimes, exact (their floats are not past 2**53 microseconds, the year 2255).
                after, moment = getattr(self, f.after), getattr(self, f.name)
                if not moment >= after:
                    raise ValueError(f"{f.name} ({moment.isoformat()}) is earlier than {f.after} ({after.isoformat()})")


_WITHIN = "an int from 0 to 2**53"
#: How the constructor checks (and normalizes) a field of each kind; kinds not here are taken as given.
_ACCEPT: dict[str, Callable[[Any, str], Any]] = {
    COUNT: lambda value, name: integer(
        value, name, low=0, high=MAX_COUNT, kind=_WITHIN, low_text=_WITHIN, high_text="2**53", wrong_type=ValueError
    ),
    ORDER: lambda value, name: integer(value, name, low=0),
    FLAG: flag,
    WEIGHT: lambda value, name: number(value, name, low=0),
    METADATA: lambda value, name: freeze_metadata(value),
    TEXT: lambda value, name: checked_text(value, name),
    VECTOR: lambda value, name: None if value is None else vector(value, name),
}


def checked_text(text: object, name: str = "text") -> str | None:
    """``text`` if it is a str or None, else TypeError naming ``name``."""
    if text is None or type(text) is str:
        return text
    if isinstance(text, str):
        return str(text)
    raise TypeError(f"{name} must be a str or None, got {type(text).__name__}")


#: ``new_entry(key, value, seq, (now, now_us), (pinned, importance, metadata, expires_at, expires_us),
#: content=(text, vector) or None)``: a new entry, as a put makes it (compiled from the declaration; nothing checked).
new_entry = fresh_builder(Entry)
_rehearsed = changer(Entry, ("last_accessed_at", "accessed_us", "access_count", "decay_state"))


def rehearsed(e: Entry[Any, Any], now: datetime, now_us: float, state: Any) -> Entry[Any, Any]:
    """``e`` after a rehearsal at ``now``: fresh access time, one more access."""
    count = e.access_count
    r: Entry[Any, Any] = _rehearsed(e, now, now_us, count + 1 if count < MAX_COUNT else count, state)
    return r
