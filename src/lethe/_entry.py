"""``Entry``: one remembered value and the facts its score is computed from."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, NoReturn, TypeVar

from lethe._clock import UTC, to_us, to_utc
from lethe._reprs import short_repr
from lethe._validate import flag, integer, number

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
        inserted_us, accessed_us, expires_us: The same instants as exact counts of
            microseconds since the Unix epoch (floats), derived from the datetimes;
            decay functions use them to score with float arithmetic.

    Raises:
        TypeError, ValueError: a field is of the wrong type or out of range (the
            message names it): a naive or non-datetime instant, ``last_accessed_at``
            before ``inserted_at``, ``importance`` below 0, ``pinned`` or ``summarized``
            not a bool, ``access_count`` or ``seq`` not an int >= 0.

    >>> from datetime import datetime, timezone
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> e = Entry(key="k", value="v", inserted_at=t, last_accessed_at=t)
    >>> (e.access_count, e.pinned, e.importance)
    (0, False, 1.0)
    """

    key: K
    value: V
    inserted_at: datetime
    last_accessed_at: datetime
    access_count: int = 0
    pinned: bool = False
    importance: float = 1.0
    # A factory, not a default: Python 3.10's dataclasses refuse any dict (subclass) default.
    metadata: Mapping[str, Any] = field(default_factory=lambda: EMPTY_METADATA)
    summary: Any = None
    summarized: bool = False
    expires_at: datetime | None = None
    seq: int = 0
    decay_state: Any = None
    # Exact microsecond counts of the three datetimes, so scoring is float math.
    inserted_us: float = field(default=_NAN, repr=False, compare=False)
    accessed_us: float = field(default=_NAN, repr=False, compare=False)
    expires_us: float | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "inserted_us", to_us(self.inserted_at, "inserted_at"))
        setattr_(self, "accessed_us", to_us(self.last_accessed_at, "last_accessed_at"))
        expires = self.expires_at
        setattr_(self, "expires_us", None if expires is None else to_us(expires, "expires_at"))
        # Held as UTC: datetimes of a zone with daylight saving time compare by wall clock.
        for name in ("inserted_at", "last_accessed_at", "expires_at"):
            moment = getattr(self, name)
            if moment is not None and moment.tzinfo is not UTC:
                setattr_(self, name, to_utc(moment, name))
        if not self.accessed_us >= self.inserted_us:
            raise ValueError(
                f"last_accessed_at ({self.last_accessed_at.isoformat()}) is earlier than "
                f"inserted_at ({self.inserted_at.isoformat()})"
            )
        setattr_(self, "metadata", freeze_metadata(self.metadata))
        setattr_(self, "importance", check_importance(self.importance))
        flag(self.pinned, "pinned")
        flag(self.summarized, "summarized")
        integer(self.seq, "seq", low=0)
        within = "an int from 0 to 2**53"
        integer(
            self.access_count,
            "access_count",
            low=0,
            high=MAX_COUNT,
            kind=within,
            low_text=within,
            high_text="2**53",
            wrong_type=ValueError,
        )


# Building entries on the hot path: object.__new__ plus the slots' own setters
# is about four times cheaper than dataclasses.replace (which re-runs __init__).
_new = object.__new__
_d = Entry.__dict__
_set_key = _d["key"].__set__
_set_value = _d["value"].__set__
_set_inserted_at = _d["inserted_at"].__set__
_set_last_accessed_at = _d["last_accessed_at"].__set__
_set_access_count = _d["access_count"].__set__
_set_pinned = _d["pinned"].__set__
_set_importance = _d["importance"].__set__
_set_metadata = _d["metadata"].__set__
_set_summary = _d["summary"].__set__
_set_summarized = _d["summarized"].__set__
_set_expires_at = _d["expires_at"].__set__
_set_seq = _d["seq"].__set__
_set_decay_state = _d["decay_state"].__set__
_set_inserted_us = _d["inserted_us"].__set__
_set_accessed_us = _d["accessed_us"].__set__
_set_expires_us = _d["expires_us"].__set__
del _d


def make_entry(
    key: Any,
    value: Any,
    inserted_at: datetime,
    last_accessed_at: datetime,
    access_count: int,
    pinned: bool,
    importance: float,
    metadata: FrozenDict,
    summary: Any,
    summarized: bool,
    expires_at: datetime | None,
    seq: int,
    decay_state: Any,
    inserted_us: float,
    accessed_us: float,
    expires_us: float | None,
) -> Entry[Any, Any]:
    """Build an entry from already-validated fields, bypassing ``__init__``."""
    e: Entry[Any, Any] = _new(Entry)
    _set_key(e, key)
    _set_value(e, value)
    _set_inserted_at(e, inserted_at)
    _set_last_accessed_at(e, last_accessed_at)
    _set_access_count(e, access_count)
    _set_pinned(e, pinned)
    _set_importance(e, importance)
    _set_metadata(e, metadata)
    _set_summary(e, summary)
    _set_summarized(e, summarized)
    _set_expires_at(e, expires_at)
    _set_seq(e, seq)
    _set_decay_state(e, decay_state)
    _set_inserted_us(e, inserted_us)
    _set_accessed_us(e, accessed_us)
    _set_expires_us(e, expires_us)
    return e


def evolve(e: Entry[Any, Any], **changes: Any) -> Entry[Any, Any]:
    """A copy of ``e`` with ``changes`` (already validated), bypassing ``__init__``."""
    fields = {
        "key": e.key,
        "value": e.value,
        "inserted_at": e.inserted_at,
        "last_accessed_at": e.last_accessed_at,
        "access_count": e.access_count,
        "pinned": e.pinned,
        "importance": e.importance,
        "metadata": e.metadata,
        "summary": e.summary,
        "summarized": e.summarized,
        "expires_at": e.expires_at,
        "seq": e.seq,
        "decay_state": e.decay_state,
        "inserted_us": e.inserted_us,
        "accessed_us": e.accessed_us,
        "expires_us": e.expires_us,
    }
    fields.update(changes)
    return make_entry(**fields)


def rehearsed(e: Entry[Any, Any], now: datetime, now_us: float, state: Any) -> Entry[Any, Any]:
    """``e`` after a rehearsal at ``now``: fresh access time, one more access."""
    r: Entry[Any, Any] = _new(Entry)
    _set_key(r, e.key)
    _set_value(r, e.value)
    _set_inserted_at(r, e.inserted_at)
    _set_last_accessed_at(r, now)
    count = e.access_count
    _set_access_count(r, count + 1 if count < MAX_COUNT else count)
    _set_pinned(r, e.pinned)
    _set_importance(r, e.importance)
    _set_metadata(r, e.metadata)
    _set_summary(r, e.summary)
    _set_summarized(r, e.summarized)
    _set_expires_at(r, e.expires_at)
    _set_seq(r, e.seq)
    _set_decay_state(r, state)
    _set_inserted_us(r, e.inserted_us)
    _set_accessed_us(r, now_us)
    _set_expires_us(r, e.expires_us)
    return r
