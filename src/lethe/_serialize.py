"""``Memory.to_dict`` / ``Memory.from_dict``: JSON types out, validated data in.

The format is plain data.  Reading it never imports, evaluates or calls
anything named in it: built-in decay functions are looked up in a fixed table,
and every field is checked before any entry is built.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lethe._clock import to_us
from lethe._entry import Entry, check_importance, freeze_metadata, make_entry
from lethe._map import EMPTY, PersistentMap
from lethe.decay import _registry
from lethe.decay._protocol import is_builtin

if TYPE_CHECKING:
    from lethe._memory import Memory

FORMAT = "lethe.memory"
VERSION = 1
_CUSTOM = "custom"
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


def _decay_to_dict(fn: Any) -> dict[str, Any]:
    to_dict = getattr(fn, "to_dict", None)
    if is_builtin(fn) and callable(to_dict):
        data: dict[str, Any] = to_dict()
        return data
    return {"name": _CUSTOM, "repr": repr(fn)[:200]}


def entry_to_dict(e: Entry[Any, Any], decay_fn: Any) -> dict[str, Any]:
    """One entry as JSON types."""
    state = e.decay_state
    dump = getattr(decay_fn, "dump_state", None)
    if state is not None and callable(dump):
        state = dump(state)
    return {
        "key": e.key,
        "value": e.value,
        "inserted_at": e.inserted_at.isoformat(),
        "last_accessed_at": e.last_accessed_at.isoformat(),
        "access_count": e.access_count,
        "pinned": e.pinned,
        "importance": e.importance,
        "metadata": dict(e.metadata),
        "summary": e.summary,
        "summarized": e.summarized,
        "expires_at": None if e.expires_at is None else e.expires_at.isoformat(),
        "seq": e.seq,
        "decay_state": state,
    }


def memory_to_dict(mem: Memory[Any, Any]) -> dict[str, Any]:
    """The whole memory as JSON types; entries in the order they were put."""
    entries = sorted(mem._entries.values(), key=lambda e: e.seq)
    return {
        "format": FORMAT,
        "version": VERSION,
        "max_entries": mem.max_entries,
        "decay_fn": _decay_to_dict(mem.decay_fn),
        "half_life": mem.half_life,
        "eviction_threshold": mem.eviction_threshold,
        "summarize_threshold": mem.summarize_threshold,
        "next_key": mem._next_key,
        "next_seq": mem._next_seq,
        "entries": [entry_to_dict(e, mem.decay_fn) for e in entries],
    }


def _field(data: Mapping[str, Any], name: str, where: str) -> Any:
    try:
        return data[name]
    except KeyError:
        raise ValueError(f"{where}{name}: missing") from None


def _int(value: Any, where: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or value > 2**62:
        raise ValueError(f"{where}: expected an int >= {low}, got {value!r}")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where}: expected true or false, got {value!r}")
    return value


def _time(value: Any, where: str) -> tuple[datetime, float]:
    if not isinstance(value, str) or len(value) > 64:
        raise ValueError(f"{where}: expected an ISO-8601 string, got {value!r:.80}")
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        moment = datetime.fromisoformat(text)
        us = to_us(moment, where)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"{where}: not an aware ISO-8601 time: {exc}") from None
    return moment, us


def _key(value: Any, where: str) -> Any:
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{where}: keys must be ints, strings or finite floats, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: keys must be finite, got {value!r}")
    if not isinstance(value, (int, str, float)):
        raise ValueError(f"{where}: keys must be ints, strings or finite floats, got {type(value).__name__}")
    return value


def _entry(raw: Any, i: int, decay_fn: Any) -> Entry[Any, Any]:
    where = f"entries[{i}]."
    if not isinstance(raw, Mapping):
        raise ValueError(f"entries[{i}]: expected an object, got {type(raw).__name__}")
    unknown = set(raw) - _ENTRY_FIELDS
    if unknown:
        raise ValueError(f"{where}{sorted(map(str, unknown))[0]}: unknown field")
    key = _key(_field(raw, "key", where), where + "key")
    inserted_at, inserted_us = _time(_field(raw, "inserted_at", where), where + "inserted_at")
    accessed_at, accessed_us = _time(_field(raw, "last_accessed_at", where), where + "last_accessed_at")
    if accessed_us < inserted_us:
        raise ValueError(f"{where}last_accessed_at: earlier than inserted_at")
    expires_raw = raw.get("expires_at")
    expires_at, expires_us = (None, None) if expires_raw is None else _time(expires_raw, where + "expires_at")
    try:
        importance = check_importance(raw.get("importance", 1.0))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}importance: {exc}") from None
    try:
        metadata = freeze_metadata(raw.get("metadata") or None)
    except TypeError as exc:
        raise ValueError(f"{where}metadata: {exc}") from None
    state = raw.get("decay_state")
    load = getattr(decay_fn, "load_state", None)
    if callable(load):
        try:
            state = load(state)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}decay_state: {exc}") from None
    elif is_builtin(decay_fn):
        state = None  # a built-in without state: stale state from another function
    # else: a custom function's own state, kept as the data gave it
    return make_entry(
        key,
        _field(raw, "value", where),
        inserted_at,
        accessed_at,
        _int(raw.get("access_count", 0), where + "access_count"),
        _bool(raw.get("pinned", False), where + "pinned"),
        importance,
        metadata,
        raw.get("summary"),
        _bool(raw.get("summarized", raw.get("summary") is not None), where + "summarized"),
        expires_at,
        _int(_field(raw, "seq", where), where + "seq"),
        state,
        inserted_us,
        accessed_us,
        expires_us,
    )


def memory_from_dict(
    data: Any,
    *,
    decay_fn: Any = None,
    summarize_fn: Any = None,
    on_evict: Any = None,
    clock_fn: Any = None,
) -> Memory[Any, Any]:
    """Rebuild a memory from :func:`memory_to_dict` output (see ``Memory.from_dict``)."""
    from lethe._memory import Memory

    if not isinstance(data, Mapping):
        raise ValueError(f"data: expected an object, got {type(data).__name__}")
    if data.get("format", FORMAT) != FORMAT:
        raise ValueError(f"format: expected {FORMAT!r}, got {data.get('format')!r:.80}")
    if data.get("version", VERSION) != VERSION:
        raise ValueError(f"version: this lethe reads version {VERSION}, got {data.get('version')!r:.80}")
    if decay_fn is None:
        saved = _field(data, "decay_fn", "")
        if isinstance(saved, Mapping) and saved.get("name") == _CUSTOM:
            raise ValueError("decay_fn: the memory was saved with a custom decay function; pass decay_fn=")
        decay_fn = _registry.from_dict(dict(saved) if isinstance(saved, Mapping) else saved)
    config: dict[str, Any] = {"decay_fn": decay_fn}
    for name in ("max_entries", "half_life", "eviction_threshold", "summarize_threshold"):
        if name in data:
            config[name] = data[name]
    try:
        mem: Memory[Any, Any] = Memory(
            **config, summarize_fn=summarize_fn, on_evict=on_evict, clock_fn=clock_fn
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"configuration: {exc}") from None
    raw_entries = _field(data, "entries", "")
    if not isinstance(raw_entries, list):
        raise ValueError(f"entries: expected a list, got {type(raw_entries).__name__}")
    if len(raw_entries) > mem.max_entries:
        raise ValueError(f"entries: {len(raw_entries)} entries exceed max_entries={mem.max_entries}")
    entries: PersistentMap[Any, Entry[Any, Any]] = EMPTY
    seqs: set[int] = set()
    latest: datetime | None = None
    latest_us = -math.inf
    next_key = _int(data.get("next_key", 0), "next_key")
    for i, raw in enumerate(raw_entries):
        e = _entry(raw, i, mem.decay_fn)
        if e.key in entries:
            raise ValueError(f"entries[{i}].key: duplicate key {e.key!r}")
        if e.seq in seqs:
            raise ValueError(f"entries[{i}].seq: duplicate seq {e.seq}")
        seqs.add(e.seq)
        entries = entries.add(e.key, e)
        if e.accessed_us > latest_us:
            latest, latest_us = e.last_accessed_at, e.accessed_us
    next_seq = max(_int(data.get("next_seq", 0), "next_seq"), max(seqs, default=-1) + 1)
    return mem._restored(entries, next_key, next_seq, latest, latest_us)
