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
import warnings
from collections.abc import Mapping
from datetime import datetime
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import Any

from lethe._core.clock import to_us, utc_now
from lethe._core.entry import Entry
from lethe._core.errors import ClockWarning
from lethe._core.map import EMPTY, PersistentMap
from lethe._core.record import CLOCK, evolve, fields
from lethe._core.reprs import short_repr as _short
from lethe._core.snapshot import Snapshot
from lethe._memory.codec import ENTRY, checked_int, exact_fields, field_of, parsed_time, reading
from lethe._memory.config import STORED, Config
from lethe.decay._adapter import moved_state

FORMAT = "lethe.memory"
#: The format version written: 2 (the latest clock reading kept), or the latest version that
#: added a field to entries (``declare(..., since=N)``); every earlier version is read.
VERSION = max(2, *(f.since or 0 for f in fields(Entry)))
_MEMORY_FIELDS = frozenset({"format", "version", *STORED, "next_key", "next_seq", "latest", "entries"})
_KEY = attrgetter("key")
_SEQ = attrgetter("seq")
_STATE = attrgetter("decay_state")
_VECTOR = attrgetter("vector")
#: Every instant of an entry, as declared: ``shift_to`` moves them all.
_INSTANTS = tuple((f.name, f.exact) for f in fields(Entry) if f.exact is not None)
#: The instants a clock reading gives (a put's, a rehearsal's), by name and exact attribute.
_CLOCKED = tuple((f.name, f.exact) for f in fields(Entry) if f.exact is not None and f.put == CLOCK)
_CLOCKED_US = tuple(attrgetter(exact) for _, exact in _CLOCKED)
#: From here on an instant's float stands for more than one microsecond (the year 2255): an
#: instant whose float equals the latest reading's is compared by the exact datetimes.
_INEXACT_US = float(2**53)


def memory_to_dict(config: Config, snapshot: Snapshot) -> dict[str, Any]:
    """A memory (its configuration and snapshot) as JSON types; entries in the order they were put."""
    entries = sorted(snapshot.entries.values(), key=_SEQ)
    latest = snapshot.latest
    fn = config.decay_fn
    texts: dict[int, str] = {}
    write = ENTRY.to_document
    return {
        "format": FORMAT,
        "version": VERSION,
        **config.to_document(),
        "next_key": snapshot.next_key,
        "next_seq": snapshot.next_seq,
        "latest": None if latest is None else latest.isoformat(),
        "entries": [write(e, fn, texts) for e in entries],
    }


def check_entries(
    built: list[Entry[Any, Any]], next_seq: int | None, latest: datetime | None, latest_us: float, fn: Any
) -> None:
    """Whole-memory checks on entries read back: keys and put orders unique, ``next_seq``
    (None: not checked) past every put order, no instant after the latest clock reading.

    Raises:
        ValueError: naming the entry (``entries[i]``) and the field.
    """
    if len(built) == 1:  # a commit's one write: nothing to be unique among, no dimension to differ
        e = built[0]
        fits = (next_seq is None or e.seq < next_seq) and e.decay_state is None
        last = max([us(e) for us in _CLOCKED_US])
        if fits and (last < latest_us or (last == latest_us and last < _INEXACT_US)):
            return
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
    vectors = list(filter(None, map(_VECTOR, built)))  # (at C speed: most memories hold none)
    if vectors and len(set(map(len, vectors))) > 1:  # one dimension in a memory: name the first that differs
        first = next(len(e.vector) for e in built if e.vector is not None)
        i = next(i for i, e in enumerate(built) if e.vector is not None and len(e.vector) != first)
        raise ValueError(f"entries[{i}].vector: {len(built[i].vector)} dimensions; the memory's vectors have {first}")  # type: ignore[arg-type]
    seen = "none" if latest is None else latest  # (formatted only in a message)
    last = max(max(map(exact, built)) for exact in _CLOCKED_US) if built else -math.inf
    late = last > latest_us or (last == latest_us and last >= _INEXACT_US)
    for i in range(len(built)) if late else compress(range(len(built)), map(is_not, map(_STATE, built), repeat(None))):
        e = built[i]
        for name, exact in _CLOCKED:  # instants a clock reading gave: none after the latest one
            us = getattr(e, exact)
            if us > latest_us or (us == latest_us and us >= _INEXACT_US and getattr(e, name) > latest):
                raise ValueError(f"entries[{i}].{name}: after the latest clock reading ({_iso(seen)})")
        if e.decay_state is None:
            continue

        def after(t: float, i: int = i, inserted_us: float = e.inserted_us) -> float:
            if t > latest_us:
                raise ValueError(
                    f"entries[{i}].decay_state: an access time after the latest clock reading ({_iso(seen)})"
                )
            if t < inserted_us:
                raise ValueError(f"entries[{i}].decay_state: an access time before the entry's inserted_at")
            return t

        moved_state(fn, e.decay_state, after, lambda state: state)


def _iso(moment: datetime | str) -> str:
    return moment if isinstance(moment, str) else moment.isoformat()


def _shifted(e: Entry[Any, Any], where: str, delta: Any, delta_us: float, decay_fn: Any) -> Entry[Any, Any]:
    """``e`` with every instant it holds moved by ``delta`` (``shift_to``)."""

    def opaque(state: Any) -> Any:
        raise ValueError(
            f"shift_to: {where}decay_state belongs to a custom decay function, whose instants lethe "
            "cannot move; load without shift_to"
        )

    moved: dict[str, Any] = {}
    try:
        for name, exact in _INSTANTS:
            moment = getattr(e, name)
            if moment is not None:
                moment = moved[name] = moment + delta
                moved[exact] = to_us(moment)
    except OverflowError:
        raise ValueError(f"shift_to: moves {where[:-1]} out of the datetime range") from None
    state = moved_state(decay_fn, e.decay_state, lambda t: t + delta_us, opaque)
    return evolve(e, decay_state=state, **moved)


def _keeps_latest(data: Mapping[str, Any]) -> bool:
    """Whether ``data``, a document of a version this lethe reads, keeps the latest clock
    reading (version 2 on) or not (version 1).

    Raises:
        ValueError: not a lethe document, or one of a version this lethe does not read.
    """
    fmt = field_of(data, "format", "")
    if fmt != FORMAT:
        raise ValueError(f"format: expected {FORMAT!r}, got {_short(fmt)}")
    version = field_of(data, "version", "")
    if type(version) is not int or not 1 <= version <= VERSION:
        raise ValueError(f"version: this lethe reads versions 1 to {VERSION}, got {_short(version)}")
    return version >= 2


def memory_from_dict(
    data: Any,
    *,
    decay_fn: Any = None,
    summarize_fn: Any = None,
    on_evict: Any = None,
    clock_fn: Any = None,
    embed_fn: Any = None,
    shift_to: datetime | None = None,
) -> tuple[Config, Snapshot]:
    """The configuration and snapshot :func:`memory_to_dict` wrote (see ``Memory.from_dict``)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"data: expected an object, got {type(data).__name__}")
    current = _keeps_latest(data)
    # Every field to_dict() writes must be there; version 1 did not write ``latest`` yet.
    exact_fields(data, _MEMORY_FIELDS if current else _MEMORY_FIELDS - {"latest"}, "")
    shift_us = None if shift_to is None else to_us(shift_to, "shift_to")
    cfg, same_fn = Config.from_document(
        data, decay_fn=decay_fn, summarize_fn=summarize_fn, on_evict=on_evict, clock_fn=clock_fn, embed_fn=embed_fn
    )
    fn = cfg.decay_fn
    raw_entries = field_of(data, "entries", "")
    if not isinstance(raw_entries, list):
        raise ValueError(f"entries: expected a list, got {type(raw_entries).__name__}")
    if len(raw_entries) > cfg.max_entries:
        raise ValueError(f"entries: {len(raw_entries)} entries exceed max_entries={cfg.max_entries}")
    read, how = ENTRY.from_document, reading(fn, same_fn)
    built = [read(raw, f"entries[{i}].", how) for i, raw in enumerate(raw_entries)]
    next_key = checked_int(data["next_key"], "next_key")
    next_seq = checked_int(data["next_seq"], "next_seq")
    if current:
        raw_latest = field_of(data, "latest", "")
        latest, latest_us = (None, -math.inf) if raw_latest is None else parsed_time(raw_latest, "latest")
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
    return cfg, Snapshot(entries, next_key, next_seq, latest=latest, latest_us=latest_us, built=built)
