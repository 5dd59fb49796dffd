"""``Memory.to_dict`` / ``Memory.from_dict``: JSON types out, validated data in.

The format is plain data.  Reading it never imports, evaluates or calls
anything named in it: built-in decay functions are looked up in a fixed table,
and every field is checked before any entry is built.  A document holds
exactly the fields :func:`memory_to_dict` writes, at every level (version-1
documents, written before the latest clock reading was kept, all of them but
``latest``).
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable, Mapping
from datetime import datetime
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import Any

from lethe._clock import UTC, aware_us, to_us, to_utc, utc_now
from lethe._config import ONE_HOUR, Config, build, name_built_from, unchosen_half_life
from lethe._entry import EMPTY_METADATA, Entry, check_importance, evolve, freeze_metadata, make_entry
from lethe._errors import ClockWarning
from lethe._map import EMPTY, PersistentMap
from lethe._reprs import short_repr as _short
from lethe._snapshot import Snapshot
from lethe._validate import duration, is_int
from lethe.decay import _registry
from lethe.decay._adapter import dumped_state, is_builtin, state_loader
from lethe.decay._adapter import to_dict as decay_to_dict
from lethe.decay._classic import ACTR
from lethe.decay._combinators import Blend, ByMetadata, ChildStates, Picked, Product

FORMAT = "lethe.memory"
VERSION = 2
_CUSTOM = "custom"
#: Rehearsals saturate ``access_count`` here (floats count exactly up to it).
MAX_ACCESS_COUNT = 2**53
#: How deeply tuple keys may nest.
_MAX_DEPTH = 100
_MEMORY_FIELDS = frozenset(
    {
        "format",
        "version",
        "max_entries",
        "decay_fn",
        "half_life",
        "eviction_threshold",
        "summarize_threshold",
        "next_key",
        "next_seq",
        "latest",
        "entries",
    }
)
_KEY = attrgetter("key")
_SEQ = attrgetter("seq")
_STATE = attrgetter("decay_state")
_INSERTED_US = attrgetter("inserted_us")
_ACCESSED_US = attrgetter("accessed_us")
_ENTRY_FIELDS = frozenset(
    {
        "key",
        "value",
        "inserted_at",
        "last_accessed_at",
        "access_count",
        "pinned",
        "importance",
        "metadata",
        "summary",
        "summarized",
        "expires_at",
        "seq",
        "decay_state",
    }
)


def _name(field: str) -> str:
    """A field name from the data, cut short for an error message."""
    return field if len(field) <= 60 else field[:57] + "..."


class _Unwritable(Exception):
    """A key (part) that JSON cannot carry with its type (the message, when there is one, says why)."""


#: Every int smaller than this in magnitude has at most 640 digits, the lowest limit Python may
#: set on converting an int to text (``sys.set_int_max_str_digits``): JSON text can hold it.
_SHORT_INT = 2**2126


def _printable(n: int) -> bool:
    """Whether Python converts ``n`` to text, as JSON needs: at most ``sys.get_int_max_str_digits()``
    digits (Python 3.11+, 3.10.7+: 4300 by default).  Raises :class:`_Unwritable` if not."""
    if -_SHORT_INT < n < _SHORT_INT:
        return True
    try:
        int.__repr__(n)
    except ValueError:
        limit = sys.get_int_max_str_digits()  # (the limit exists, as the conversion refused)
        raise _Unwritable(
            f"int keys may have at most {limit} digits, the most Python converts to text "
            "(sys.get_int_max_str_digits()), as JSON needs"
        ) from None
    return True


def _encode_key(key: Any, depth: int = 0) -> Any:
    """``key`` as JSON: str, int, bool and finite floats as they are, a tuple as a list."""
    t = type(key)
    if t is str or (t is int and _printable(key)) or t is bool or (t is float and math.isfinite(key)):
        return key
    if t is tuple and depth < _MAX_DEPTH:
        return [None if k is None else _encode_key(k, depth + 1) for k in key]
    raise _Unwritable


def _decode_key(value: Any, depth: int = 0) -> Any:
    """The inverse of :func:`_encode_key` (a list is a tuple: no key is a list)."""
    t = type(value)
    if t is str or (t is int and _printable(value)) or t is bool or (t is float and math.isfinite(value)):
        return value
    if t is list and depth < _MAX_DEPTH:
        return tuple(None if v is None else _decode_key(v, depth + 1) for v in value)
    raise _Unwritable


def encode_key(key: Any) -> Any:
    """``key`` as JSON (a tuple as a list).

    Raises:
        ValueError: naming the key, when JSON cannot carry it with its type.
    """
    try:
        return _encode_key(key)
    except _Unwritable as exc:
        why = str(exc) or "keys must be str, int, finite float, bool, or tuples of those and None"
        raise ValueError(f"key {_short(key)}: cannot be saved exactly; {why}") from None


def _decay_to_dict(fn: Any) -> dict[str, Any]:
    return decay_to_dict(fn)


def entry_to_dict(e: Entry[Any, Any], decay_fn: Any, texts: dict[int, str] | None = None) -> dict[str, Any]:
    """One entry as JSON types.

    ``texts`` (optional) remembers the ISO-8601 text of each datetime written so far, by
    object: entries put or rehearsed together share their datetimes, so a whole memory
    written with one ``texts`` formats each instant once.  Its datetimes must outlive it.

    Raises:
        ValueError: the key is not one :func:`memory_from_dict` reads back with
            its type (str, int, finite float, bool, or a tuple of those and None;
            an int of at most ``sys.get_int_max_str_digits()`` digits).
    """
    key = e.key
    if type(key) is not str:
        key = encode_key(key)
    state = e.decay_state
    if state is not None:
        state = dumped_state(decay_fn, state)
    expires = e.expires_at
    metadata = e.metadata
    if texts is None:
        texts = {}
    return {
        "key": key,
        "value": e.value,
        "inserted_at": _iso(e.inserted_at, texts),
        "last_accessed_at": _iso(e.last_accessed_at, texts),
        "access_count": e.access_count,
        "pinned": e.pinned,
        "importance": e.importance,
        "metadata": dict(metadata) if metadata else {},
        "summary": e.summary,
        "summarized": e.summarized,
        "expires_at": None if expires is None else _iso(expires, texts),
        "seq": e.seq,
        "decay_state": state,
    }


def _iso(moment: datetime, texts: dict[int, str]) -> str:
    """``moment.isoformat()``, formatted once per object while ``texts`` lives."""
    text = texts.get(id(moment))
    if text is None:
        text = texts[id(moment)] = moment.isoformat()
    return text


def memory_to_dict(config: Config, snapshot: Snapshot) -> dict[str, Any]:
    """A memory (its configuration and snapshot) as JSON types; entries in the order they were put."""
    entries = sorted(snapshot.entries.values(), key=lambda e: e.seq)
    latest = snapshot.latest
    fn = config.decay_fn
    texts: dict[int, str] = {}
    return {
        "format": FORMAT,
        "version": VERSION,
        "max_entries": config.max_entries,
        "decay_fn": _decay_to_dict(config.decay_fn),
        "half_life": config.half_life,
        "eviction_threshold": config.eviction_threshold,
        "summarize_threshold": config.summarize_threshold,
        "next_key": snapshot.next_key,
        "next_seq": snapshot.next_seq,
        "latest": None if latest is None else latest.isoformat(),
        "entries": [entry_to_dict(e, fn, texts) for e in entries],
    }


_MISSING: Any = object()


def _field(data: Mapping[str, Any], name: str, where: str, default: Any = _MISSING) -> Any:
    """``data[name]``; ``default`` if given and the field is absent, else ValueError naming it."""
    try:
        return data[name]
    except KeyError:
        if default is not _MISSING:
            return default
        raise ValueError(f"{where}{name}: missing") from None


def _exact(data: Mapping[str, Any], fields: frozenset[str], where: str) -> None:
    """ValueError naming the first missing or unknown field of ``data``."""
    if data.keys() == fields:
        return
    for name in sorted(fields):
        _field(data, name, where)
    unknown = sorted(map(str, set(data) - fields))
    if unknown:
        raise ValueError(f"{where}{_name(unknown[0])}: unknown field")


def checked_int(value: Any, where: str, high: int | None = None) -> int:
    """``value`` as an int >= 0 (and <= ``high``), else ValueError naming ``where``."""
    if not is_int(value):
        raise ValueError(f"{where}: expected an int >= 0, got {_short(value)}")
    if value < 0 or (high is not None and value > high):
        bound = "an int >= 0" if high is None else f"an int between 0 and 2**{high.bit_length() - 1}"
        raise ValueError(f"{where}: expected {bound}, got {_short(value)}")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where}: expected true or false, got {_short(value)}")
    return value


def _time(value: Any, where: str) -> tuple[datetime, float]:
    if not isinstance(value, str) or len(value) > 64:
        raise ValueError(f"{where}: expected an ISO-8601 string, got {_short(value)}")
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        moment = datetime.fromisoformat(text)
        us = aware_us(moment) if moment.utcoffset() is not None else to_us(moment, where)  # (naive: raises)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"{where}: not an aware ISO-8601 time: {exc}") from None
    if moment.tzinfo is not UTC:  # held as UTC, as Entry holds it (and checked to have a UTC reading)
        moment = to_utc(moment, where)
    return moment, us


def checked_key(value: Any, where: str) -> Any:
    """``value`` as the key :func:`encode_key` wrote it as, else ValueError naming ``where``."""
    try:
        return _decode_key(value)
    except _Unwritable as exc:
        if str(exc):
            got = _short(value) if type(value) is int else "a list (a tuple key) holding one"
            raise ValueError(f"{where}: {exc}; got {got}") from None
        raise ValueError(
            f"{where}: keys must be strings, ints, finite floats, booleans, or lists (tuple keys) of those "
            f"and null; got {_short(value)}"
        ) from None


def _metadata(value: Any, where: str) -> Any:
    """``value`` as entry metadata: an object whose keys, at every depth, are strings."""
    if type(value) is dict and not value:
        return EMPTY_METADATA
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected an object, got {_short(value)}")
    stack: list[Any] = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        if isinstance(item, Mapping):
            seen.add(id(item))
            for k, v in item.items():
                if not isinstance(k, str):
                    raise ValueError(f"{where}: metadata keys must be strings at every depth, got {_short(k)}")
                stack.append(v)
        elif isinstance(item, (list, tuple)):
            seen.add(id(item))
            stack.extend(item)
    return freeze_metadata(value)


#: An instant as a document holds it once parsed: the datetime and its microseconds.
Moment = tuple[datetime, float]


def checked_entry(
    where: str,
    key: Any,
    value: Any,
    inserted: Moment,
    accessed: Moment,
    access_count: Any,
    pinned: Any,
    importance: Any,
    metadata: Any,
    summary: Any,
    summarized: Any,
    expires: Moment | None,
    seq: Any,
    state: Any,
    decay_fn: Any,
    same_fn: bool,
) -> Entry[Any, Any]:
    """One entry from its stored fields (instants already parsed), each checked; ValueError
    naming ``where`` + the field.  ``same_fn``: whether ``decay_fn`` wrote ``state``.

    Shared by every stored form of an entry (``to_dict``'s objects, ``lethe.store``'s rows).
    """
    # The common entry, tested in one expression (a load checks every entry of a memory);
    # anything else takes the field-by-field path, which names what is wrong.
    kind = type(key)
    if (
        (kind is str or (kind is int and -_SHORT_INT < key < _SHORT_INT))
        and type(access_count) is int
        and 0 <= access_count <= MAX_ACCESS_COUNT
        and (pinned is True or pinned is False)
        and type(importance) is float
        and 0.0 <= importance < math.inf
        and type(metadata) is dict
        and not metadata
        and (summarized is True or summarized is False)
        and type(seq) is int
        and seq >= 0
        and accessed[1] >= inserted[1]
    ):
        if state is not None or not same_fn or not is_builtin(decay_fn):  # built-ins load None as None
            state = _loaded_state(state, decay_fn, same_fn, where)
        expires_at, expires_us = (None, None) if expires is None else expires
        return make_entry(
            key,
            value,
            inserted[0],
            accessed[0],
            access_count,
            pinned,
            importance,
            EMPTY_METADATA,
            summary,
            summarized,
            expires_at,
            seq,
            state,
            inserted[1],
            accessed[1],
            expires_us,
        )
    key = checked_key(key, where + "key")
    inserted_at, inserted_us = inserted
    accessed_at, accessed_us = accessed
    if accessed_us < inserted_us:
        raise ValueError(f"{where}last_accessed_at: earlier than inserted_at")
    expires_at, expires_us = (None, None) if expires is None else expires
    try:
        importance = check_importance(importance)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}importance: {exc}") from None
    state = _loaded_state(state, decay_fn, same_fn, where)
    return make_entry(
        key,
        value,
        inserted_at,
        accessed_at,
        checked_int(access_count, where + "access_count", MAX_ACCESS_COUNT),
        _bool(pinned, where + "pinned"),
        importance,
        _metadata(metadata, where + "metadata"),
        summary,
        _bool(summarized, where + "summarized"),
        expires_at,
        checked_int(seq, where + "seq"),
        state,
        inserted_us,
        accessed_us,
        expires_us,
    )


def _loaded_state(state: Any, decay_fn: Any, same_fn: bool, where: str) -> Any:
    """An entry's stored ``decay_state`` as ``decay_fn`` takes it (``same_fn``: whether it wrote it)."""
    if not same_fn:
        return None  # written by another decay function: never hand it to this one
    load = state_loader(decay_fn)
    if load is not None:
        try:
            return load(state)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}decay_state: {exc}") from None
    if is_builtin(decay_fn):
        return None  # a built-in without state: stale state from another function
    return state  # a custom function's own state, kept as the data gave it


def _entry(raw: Any, i: int, decay_fn: Any, same_fn: bool, moments: dict[str, Moment]) -> Entry[Any, Any]:
    """Entry ``i`` of a document; ``same_fn``: whether ``decay_fn`` wrote its ``decay_state``;
    ``moments``: the instants parsed so far, by their text (entries put together share one)."""
    where = f"entries[{i}]."
    if type(raw) is not dict and not isinstance(raw, Mapping):  # (a dict, from JSON: no ABC check)
        raise ValueError(f"entries[{i}]: expected an object, got {type(raw).__name__}")
    if raw.keys() != _ENTRY_FIELDS:
        _exact(raw, _ENTRY_FIELDS, where)
    expires = raw["expires_at"]
    inserted, accessed = raw["inserted_at"], raw["last_accessed_at"]
    return checked_entry(
        where,
        raw["key"],
        raw["value"],
        # An instant parsed before, looked up here (most are); else parsed, or reported, by _moment.
        (type(inserted) is str and moments.get(inserted)) or _moment(inserted, moments, where, "inserted_at"),
        (type(accessed) is str and moments.get(accessed)) or _moment(accessed, moments, where, "last_accessed_at"),
        raw["access_count"],
        raw["pinned"],
        raw["importance"],
        raw["metadata"],
        raw["summary"],
        raw["summarized"],
        None if expires is None else _moment(expires, moments, where, "expires_at"),
        raw["seq"],
        raw["decay_state"],
        decay_fn,
        same_fn,
    )


def _moment(value: Any, moments: dict[str, Moment], where: str, name: str) -> Moment:
    """:func:`_time` of ``value``, parsed once per text while ``moments`` lives."""
    if type(value) is not str:
        return _time(value, where + name)  # raises
    moment = moments.get(value)
    if moment is None:
        moment = moments[value] = _time(value, where + name)
    return moment


def check_entries(
    built: list[Entry[Any, Any]], next_seq: int | None, latest: datetime | None, latest_us: float, fn: Any
) -> None:
    """Whole-memory checks on entries read back: keys and put orders unique, ``next_seq``
    (None: not checked) past every put order, no instant after the latest clock reading.

    Raises:
        ValueError: naming the entry (``entries[i]``) and the field.
    """
    # Each check runs over the whole list at C speed; the loop that names the first culprit
    # runs only when there is one.
    seqs = set(map(_SEQ, built))
    if len(seqs) < len(built) or len(set(map(_KEY, built))) < len(built):
        keys: set[Any] = set()
        seen_seqs: set[int] = set()
        for i, e in enumerate(built):
            if e.key in keys:
                raise ValueError(f"entries[{i}].key: duplicate key {_short(e.key)}")
            if e.seq in seen_seqs:
                raise ValueError(f"entries[{i}].seq: duplicate seq {_short(e.seq)}")
            keys.add(e.key)
            seen_seqs.add(e.seq)
    if next_seq is not None and seqs and next_seq <= max(seqs):
        raise ValueError(f"next_seq: must be greater than every entry's seq, got {_short(next_seq)}")
    seen = "none" if latest is None else latest.isoformat()
    late = built and max(max(map(_INSERTED_US, built)), max(map(_ACCESSED_US, built))) > latest_us
    for i in range(len(built)) if late else compress(range(len(built)), map(is_not, map(_STATE, built), repeat(None))):
        e = built[i]
        for name, us in (("inserted_at", e.inserted_us), ("last_accessed_at", e.accessed_us)):
            if us > latest_us:
                raise ValueError(f"entries[{i}].{name}: after the latest clock reading ({seen})")
        if e.decay_state is None:
            continue

        def after(t: float, i: int = i, inserted_us: float = e.inserted_us) -> float:
            if t > latest_us:
                raise ValueError(f"entries[{i}].decay_state: an access time after the latest clock reading ({seen})")
            if t < inserted_us:
                raise ValueError(f"entries[{i}].decay_state: an access time before the entry's inserted_at")
            return t

        _instants(fn, e.decay_state, after, lambda state: state)


def _instants(fn: Any, state: Any, move: Callable[[float], float], custom: Callable[[Any], Any]) -> Any:
    """``state`` with ``move`` applied to every instant (microseconds) it holds.

    Only built-ins are known: ACT-R keeps access times, combinators keep their
    children's states, FSRS's ``(stability, difficulty)`` and the stateless
    functions hold no instants.  A custom function's state goes to ``custom``.
    """
    if state is None:
        return None
    if not is_builtin(fn):
        return custom(state)
    if isinstance(fn, ACTR):
        return tuple(move(t) for t in state)
    if isinstance(fn, (Product, Blend)):
        return ChildStates(_instants(c, st, move, custom) for c, st in zip(fn._children(), state))
    if isinstance(fn, ByMetadata):
        return Picked((state[0], _instants(fn._fn_at(state[0]), state[1], move, custom)))
    return state


def _shifted(e: Entry[Any, Any], where: str, delta: Any, delta_us: float, decay_fn: Any) -> Entry[Any, Any]:
    """``e`` with every instant it holds moved by ``delta`` (``shift_to``)."""

    def opaque(state: Any) -> Any:
        raise ValueError(
            f"shift_to: {where}decay_state belongs to a custom decay function, whose instants lethe "
            "cannot move; load without shift_to"
        )

    try:
        inserted_at = e.inserted_at + delta
        accessed_at = e.last_accessed_at + delta
        expires_at = None if e.expires_at is None else e.expires_at + delta
    except OverflowError:
        raise ValueError(f"shift_to: moves {where[:-1]} out of the datetime range") from None
    return evolve(
        e,
        inserted_at=inserted_at,
        last_accessed_at=accessed_at,
        expires_at=expires_at,
        inserted_us=to_us(inserted_at),
        accessed_us=to_us(accessed_at),
        expires_us=None if expires_at is None else to_us(expires_at),
        decay_state=_instants(decay_fn, e.decay_state, lambda t: t + delta_us, opaque),
    )


def _version(data: Mapping[str, Any]) -> bool:
    """Whether ``data`` is a version-2 document (True) or a version-1 one (False)."""
    fmt = _field(data, "format", "")
    if fmt != FORMAT:
        raise ValueError(f"format: expected {FORMAT!r}, got {_short(fmt)}")
    version = _field(data, "version", "")
    if type(version) is not int or version not in (1, VERSION):
        raise ValueError(f"version: this lethe reads versions 1 and {VERSION}, got {_short(version)}")
    return version == VERSION


def memory_from_dict(
    data: Any,
    *,
    decay_fn: Any = None,
    summarize_fn: Any = None,
    on_evict: Any = None,
    clock_fn: Any = None,
    shift_to: datetime | None = None,
) -> tuple[Config, Snapshot]:
    """The configuration and snapshot :func:`memory_to_dict` wrote (see ``Memory.from_dict``)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"data: expected an object, got {type(data).__name__}")
    current = _version(data)
    # Every field to_dict() writes must be there; version 1 did not write ``latest`` yet.
    _exact(data, _MEMORY_FIELDS if current else _MEMORY_FIELDS - {"latest"}, "")
    shift_us = None if shift_to is None else to_us(shift_to, "shift_to")
    saved = data.get("decay_fn", _MISSING)
    saved_custom = isinstance(saved, Mapping) and saved.get("name") == _CUSTOM
    loaded = decay_fn is None  # rebuilt from the document, not passed in
    if decay_fn is None:
        if saved is _MISSING:
            raise ValueError("decay_fn: missing")
        if saved_custom:
            raise ValueError("decay_fn: the memory was saved with a custom decay function; pass decay_fn=")
        decay_fn = _registry.from_dict(dict(saved) if isinstance(saved, Mapping) else saved)
        same_fn = True
    else:
        same_fn = False  # decided below, once the memory has resolved decay_fn
    config: dict[str, Any] = {"decay_fn": decay_fn}
    for name in ("max_entries", "half_life", "eviction_threshold", "summarize_threshold"):
        if name in data:
            config[name] = data[name]
    # A decay function's own half-life is the one in use; the saved one is checked but not
    # imposed on it (older documents saved 1 h beside FSRS, say): for a custom function it
    # stays the half-life names are built with later.
    try:
        saved_half_life = duration(config.pop("half_life"), "half_life")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"configuration: {exc}") from None
    config["half_life"] = ONE_HOUR if is_builtin(decay_fn) else unchosen_half_life(saved_half_life)
    named_as = name_built_from(decay_fn, saved_half_life) if loaded else None
    if named_as is not None:
        # The document does not say how the function was given: one its name builds from
        # the saved half-life counts as built by name (an equal one), and follows a new half-life.
        config["decay_fn"], config["half_life"] = named_as, saved_half_life
    try:
        cfg = build({**config, "summarize_fn": summarize_fn, "on_evict": on_evict, "clock_fn": clock_fn})
    except (TypeError, ValueError) as exc:
        raise ValueError(f"configuration: {exc}") from None
    fn = cfg.decay_fn
    if not same_fn and isinstance(saved, Mapping):
        # The saved state belongs to the saved function: a custom one only to a custom one
        # passed back in, a built-in only to an equal built-in.
        new = _decay_to_dict(fn)
        same_fn = saved_custom if new["name"] == _CUSTOM else (not saved_custom and dict(saved) == new)
    raw_entries = _field(data, "entries", "")
    if not isinstance(raw_entries, list):
        raise ValueError(f"entries: expected a list, got {type(raw_entries).__name__}")
    if len(raw_entries) > cfg.max_entries:
        raise ValueError(f"entries: {len(raw_entries)} entries exceed max_entries={cfg.max_entries}")
    moments: dict[str, Moment] = {}
    built = [_entry(raw, i, fn, same_fn, moments) for i, raw in enumerate(raw_entries)]
    next_key = checked_int(data["next_key"], "next_key")
    next_seq = checked_int(data["next_seq"], "next_seq")
    if current:
        raw_latest = _field(data, "latest", "")
        latest, latest_us = (None, -math.inf) if raw_latest is None else _time(raw_latest, "latest")
        check_entries(built, next_seq, latest, latest_us, fn)
    else:
        # Version 1 did not keep the latest reading: the latest access is the best it knows.
        latest, latest_us = None, -math.inf
        for e in built:
            if e.accessed_us > latest_us:
                latest, latest_us = e.last_accessed_at, e.accessed_us
        check_entries(built, None, latest, latest_us, fn)
        next_seq = max(next_seq, max((e.seq for e in built), default=-1) + 1)
    if shift_to is not None and latest is not None:
        assert shift_us is not None
        delta, delta_us = shift_to - latest, shift_us - latest_us
        built = [_shifted(e, f"entries[{i}].", delta, delta_us, fn) for i, e in enumerate(built)]
        latest, latest_us = shift_to, shift_us
    entries: PersistentMap[Any, Entry[Any, Any]] = EMPTY.update({e.key: e for e in built})
    if latest is not None:
        clock = utc_now if clock_fn is None else clock_fn
        now = clock()
        ahead = latest_us - to_us(now, "clock_fn()")
        if ahead > 0:
            warnings.warn(
                ClockWarning(
                    f"the memory's latest clock reading ({latest.isoformat()}) is {ahead / 1e6} s ahead of "
                    f"clock_fn() ({now.isoformat()}); it scores as of that reading until the clock catches up "
                    "(pass shift_to= to move the memory to the present)"
                ),
                stacklevel=3,
            )
    return cfg, Snapshot(entries, next_key, next_seq, latest, latest_us, built)
