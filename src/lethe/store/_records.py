"""The text a store keeps: entry rows, heads and change records (JSON, compact and positional).

An entry is a **row**, a JSON array in :data:`ROW` order, with its instants as
integer microseconds since the Unix epoch: reading rows back parses no
ISO-8601 string and matches no field name, so opening a stored memory is no
slower than ``Memory.from_dict`` of the same memory (0.9x at 100,000 entries).  A **head** is
``[next_key, next_seq, latest microseconds or null, tip]``, where the *tip* is a
random id of the version it belongs to.  A **record**, one per committed
version, is what that version changed, and the tip of the version it was made
on (``prev``)::

    {"head": HEAD, "prev": TIP, "written": [ROW, ...], "removed": [KEY, ...], "evicted": [ROW, ...]}

The tips chain the versions: a replica that folds a record whose ``prev`` is
not its own tip knows the store's history is no longer the one it saw (a
server restarted without its latest writes).  Heads and records written
before tips existed (three fields, no ``prev``) are read as having none.

Every field read back is checked as ``Memory.from_dict`` checks it (the same
functions do it), so a damaged store gives a ``ValueError`` naming the field,
never a wrong memory; a tip read back must be one :func:`new_tip` makes (it is
written into the next record as it is).  An engine keys each row by its put
order (``seq``): :func:`snapshot` takes the rows with the put orders they are
keyed by and refuses a row whose own ``seq`` says another, since a later
commit removes rows by the put order the replica read.  The counters of a head
are ints from 0 to 2**63 (every put order is below it, as the engines' 64-bit
keys hold), on reading and on writing.  A record is checked against the
memory it is applied to (:func:`check_change`): the counters and the clock
never go back, an entry it writes keeps its put order or takes a new one.  A
row holds only what JSON gives back exactly (:func:`row` refuses the rest), so
every replica reads the entry the writer holds, and nothing is written that
would not be read back.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime
from operator import attrgetter, itemgetter
from typing import Any

from lethe._core.change import Change
from lethe._core.clock import exact_us
from lethe._core.entry import Entry, FrozenDict
from lethe._core.map import EMPTY
from lethe._core.record import METADATA, compiled, fields
from lethe._core.reprs import short_repr
from lethe._core.snapshot import Snapshot
from lethe._memory.codec import ENTRY, checked_int, checked_key, encode_key, reading, row_time
from lethe._memory.document import check_entries
from lethe.decay._adapter import state_loader

#: The fields of a row, in order (its instants by their exact microseconds).
ROW = ENTRY.row_names
_RECORD_FIELDS = frozenset({"head", "written", "removed", "evicted"})
_CHAINED_FIELDS = _RECORD_FIELDS | {"prev", "config", "was"}
#: The counters of a head are at most this, and every put order is below it: the engines key
#: rows by put order in a 64-bit int (SQLite's INTEGER, PostgreSQL's BIGINT).
SEQ_END = 2**63


# Compact JSON (``NaN`` and infinities allowed, as ``to_dict`` values may hold them); one
# encoder for every call, as building one costs more than encoding a row.
_unicode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=True).encode
_ascii = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=True).encode


def utf8(text: str) -> bool:
    """Whether ``text`` can be encoded as UTF-8, as every engine stores text (a lone surrogate cannot)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def dumps(value: Any) -> str:
    """``value`` as compact JSON text that every engine can store as UTF-8.

    Text is written as it is, except in a value holding a lone surrogate (``"\\ud800"``,
    which a ``str`` may hold but UTF-8 cannot encode): that one is written with
    ``\\u`` escapes, which ``json.loads`` reads back to the same string.
    """
    text = _unicode(value)
    return text if text.isascii() or utf8(text) else _ascii(value)


# -- writing ----------------------------------------------------------------


#: What JSON gives back as it was: values of exactly these types (an instance of a subclass,
#: an ``IntEnum`` member say, comes back as its base type), and lists and objects of them.
_SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})
#: The dicts a row may hold: plain ones, and the read-only copy entry metadata is held as
#: (``FrozenDict``, equal to the dict it copies; metadata is frozen again when read back).
_OBJECTS: frozenset[type] = frozenset((dict, FrozenDict))


def _kept(value: Any) -> bool:
    """Whether ``json.loads`` gives back exactly ``value``, which :func:`dumps` wrote (so it
    holds no cycle): built of dicts with str keys, lists, str, int, float, bool and None, each
    of exactly that type.  NaN and the infinities count as kept (``dumps`` writes them).

    A walk over the containers only (a long list of scalars is passed by one check of its
    types at C speed): cheaper than encoding, and than ``json.loads(text) == value``, which
    takes NaN for a change and an ``IntEnum`` member for none.
    """
    scalars = _SCALARS
    if type(value) in scalars:
        return True
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        kind = type(item)
        if kind is list:
            if len(item) < 16 or not set(map(type, item)) <= scalars:
                for v in item:
                    if type(v) not in scalars:
                        push(v)
        elif kind in _OBJECTS:
            for k, v in item.items():
                if type(k) is not str:
                    return False
                if type(v) not in scalars:
                    push(v)
        else:
            return False
    return True


def _a(name: str) -> str:
    return f"an {name}" if name[:1] in ("a", "e", "i", "o", "u", "A", "E", "I", "O", "U") else f"a {name}"


def _becomes(item: Any) -> str:
    """What JSON makes of ``item``, a value of none of the types it gives back as they were."""
    if isinstance(item, tuple):  # (a named tuple too)
        return "reads back as a list: store a list"
    if isinstance(item, (set, frozenset)):
        return "cannot write: store a list"
    for base in (dict, list, str, int, float):  # (bool cannot be subclassed)
        if isinstance(item, base):
            name = base.__name__
            return f"reads back as a plain {name}: store {_a(name)}"
    return "cannot write"


def _key_becomes(key: Any) -> str:
    """What JSON makes of ``key``, an object's key that is not a ``str``."""
    try:
        (back,) = json.loads(_unicode({key: 0}))
    except (TypeError, ValueError):
        return "cannot write"
    return f"reads back as the str {short_repr(back)}"


def _where(path: Any) -> str:
    """The text of a path built by :func:`_unkept` (``(parent, step)`` pairs, innermost last)."""
    steps = []
    while type(path) is tuple:
        path, step = path
        steps.append(step)
    return str(path) + "".join(reversed(steps))


def _unkept(name: str, value: Any) -> str | None:
    """Where in ``value`` (named ``name``) the first thing JSON does not give back as it was is,
    and what JSON makes of it; None when there is none (walked once per container: cycles and
    nesting at any depth are fine, as this runs after ``dumps`` refused, too)."""
    stack: list[tuple[Any, Any]] = [(value, name)]
    seen: set[int] = set()
    while stack:
        item, path = stack.pop()
        kind = type(item)
        if kind in _SCALARS:
            if kind is float and item != item:
                return f"{_where(path)} is NaN, which is not equal to itself: replicas could not compare equal"
            continue
        if kind is list or kind in _OBJECTS:
            if id(item) in seen:
                continue
            seen.add(id(item))
            if kind is list:
                stack += [(v, (path, f"[{i}]")) for i, v in reversed(list(enumerate(item)))]
                continue
            for k in item:
                if type(k) is not str:
                    what = "the key None" if k is None else f"the key {short_repr(k)} ({_a(type(k).__name__)})"
                    return f"{_where(path)} has {what}, which JSON {_key_becomes(k)}: use str keys"
            stack += [(v, (path, f"[{short_repr(k)}]")) for k, v in reversed(item.items())]
            continue
        return f"{_where(path)} is {_a(kind.__name__)}, which JSON {_becomes(item)}"
    return None


_to_row = ENTRY.to_row
_from_row = ENTRY.from_row
_STATE_AT = ROW.index("decay_state")
#: ``_free_kept(e)``: whether JSON gives back exactly what the caller gave in ``e`` (its value,
#: summary, metadata: the fields the declaration stores as they are), tested field by field.
_free_kept = compiled(
    "def kept(e):\n    return "
    + " and ".join(
        f"(not e.{f.name} or _kept(e.{f.name}))" if f.kind == METADATA else f"_kept(e.{f.name})"
        for f in fields(Entry)
        if f.name in ENTRY.free
    )
    + "\n",
    {"_kept": _kept},
    "kept",
)


def row(e: Entry[Any, Any], decay_fn: Any) -> str:
    """``e`` as a row.

    Its value, summary and metadata (and the decay state of a decay function without
    ``load_state``, which keeps it as stored) must be what JSON gives back exactly, or every
    other replica would hold something else: dicts with str keys, lists, str, int, float, bool
    and None, of exactly those types.

    Raises:
        ValueError: the key, or something in the entry, that JSON cannot write or would give
            back as something else (naming the key and the place, ``value[2]['a']``).
    """
    data = _to_row(e, decay_fn, None)
    state = data[_STATE_AT]
    try:
        text = dumps(data)
    except (TypeError, ValueError, RecursionError) as exc:  # (nested deeper than json can go)
        raise ValueError(_culprit(e, state, decay_fn) or _unwritable(e, exc)) from None
    if (
        _free_kept(e)
        and (state is None or state_loader(decay_fn) is not None or _kept(state))
        # A NaN reads back as a NaN, which equals no other: the text shows one at C speed.
        and ("NaN" not in text or _culprit(e, state, decay_fn) is None)
    ):
        return text
    raise ValueError(_culprit(e, state, decay_fn) or _unwritable(e, None))


def _culprit(e: Entry[Any, Any], state: Any, decay_fn: Any) -> str | None:
    """Why ``e`` cannot be a row, naming its key and the place; None when nothing in it is refused."""
    parts = [(name, getattr(e, name)) for name in ENTRY.free]
    if state_loader(decay_fn) is None:
        parts.append(("decay_state", state))
    for name, part in parts:
        why = _unkept(name, part)
        if why is not None:
            return f"key {short_repr(e.key)}: {why}"
    return None


def _unwritable(e: Entry[Any, Any], failed: BaseException | None) -> str:
    """Why ``e`` cannot be a row when no one place in it says: what ``dumps`` raised."""
    return f"key {short_repr(e.key)}: its value or summary cannot be saved as JSON: {failed}"


def new_tip() -> str:
    """A fresh random id for a version (64 bits, as hex)."""
    return secrets.token_hex(8)


def head(snapshot: Snapshot, tip: str) -> str:
    """The counters and the latest clock reading of ``snapshot``, and the ``tip`` of its version.

    Raises:
        ValueError: a counter is past 2**63 (:data:`SEQ_END`), which no head read back holds.
    """
    for name, count in (("next_key", snapshot.next_key), ("next_seq", snapshot.next_seq)):
        if count > SEQ_END:
            raise ValueError(f"head.{name}: {short_repr(count)} is past 2**63, the most a store keeps")
    latest = "null" if snapshot.latest is None else exact_us(snapshot.latest)
    return f'[{snapshot.next_key},{snapshot.next_seq},{latest},"{tip}"]'


def record(
    head_text: str,
    prev: str | None,
    written: Iterable[str],
    removed: Iterable[Any],
    evicted: Iterable[str],
    config: str | None = None,
    was: str | None = None,
) -> str:
    """A change record from its parts, already written as text; ``prev`` is the tip of the
    version it was made on (None: not known); ``config`` and ``was``, configuration
    documents, when the version changed the configuration from ``was`` to ``config`` (its
    record then writes every entry).  The configurations go last, so that
    :func:`configured` tells a record without one by its last two characters."""
    keys = dumps([encode_key(k) for k in removed])
    chained = "" if prev is None else f'"prev":"{prev}",'
    configured = "" if config is None else f',"config":{config},"was":{was}'
    return (
        f'{{"head":{head_text},{chained}"written":[{",".join(written)}],"removed":{keys},'
        f'"evicted":[{",".join(evicted)}]{configured}}}'
    )


def configured(text: str) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
    """The configuration a record sets and the one it replaced (None: not recorded), or None
    when it does not change the configuration.

    Raises:
        ValueError: the record is not JSON, or its ``config`` or ``was`` is not an object.
    """
    if type(text) is not str or text.endswith("]}"):  # every record ends so but one with a configuration
        return None  # (see record); not text: change() names what is wrong
    data = _parsed(text, "record")
    if type(data) is not dict or "config" not in data:
        return None  # not a record as written: change() names what is wrong
    new, was = data["config"], data.get("was")
    if type(new) is not dict:
        raise ValueError(f"record.config: expected an object, got {short_repr(new)}")
    if was is not None and type(was) is not dict:
        raise ValueError(f"record.was: expected an object, got {short_repr(was)}")
    return new, was


# -- reading ----------------------------------------------------------------


def entry(raw: Any, decay_fn: Any) -> Entry[Any, Any]:
    """The entry a row (parsed) holds.

    Raises:
        ValueError: a field is malformed (the message starts with "." and the field's name).
    """
    read: Entry[Any, Any] = _from_row(raw, ".", reading(decay_fn))
    return read


def _entries(raws: Sequence[Any], where: str, decay_fn: Any, first: int = 0) -> list[Entry[Any, Any]]:
    """The entries of parsed rows, the i-th named ``where[first + i]`` in an error (built only then)."""
    out = []
    read, how = _from_row, reading(decay_fn)
    try:
        for raw in raws:
            out.append(read(raw, ".", how))
    except ValueError as exc:  # its message starts with "." and the field, or ":"
        raise ValueError(f"{where}[{first + len(out)}]{exc}") from None
    return out


#: Rows parsed per ``json.loads`` call when opening: few enough that the parsed lists
#: are dropped before the collector sees them pile up, enough to spread the call's cost.
_CHUNK = 256


_TEXT = itemgetter(1)
_KEYED = itemgetter(0)
_KEY = attrgetter("key")
_SEQ = attrgetter("seq")


def _parsed_rows(rows: Sequence[tuple[int, str]], start: int) -> list[Any]:
    chunk = rows[start : start + _CHUNK]
    try:
        parsed = json.loads(f"[{','.join(map(_TEXT, chunk))}]")
    except (ValueError, TypeError, RecursionError):  # (TypeError: a row that is not text)
        parsed = None
    if type(parsed) is list and len(parsed) == len(chunk):
        return parsed
    # Some row is not one JSON value: parse them one by one, which names it.
    return [_parsed(text, f"entries[{start + i}]") for i, (_, text) in enumerate(chunk)]


def _check_keyed(rows: Sequence[tuple[int, str]], built: list[Entry[Any, Any]]) -> None:
    """ValueError naming the first row whose entry's put order is not the one the store keys it
    by: a commit removes a row by the put order read, and would leave that one behind."""
    keyed = list(map(_KEYED, rows))
    if keyed == list(map(_SEQ, built)):
        return
    for i, (seq, e) in enumerate(zip(keyed, built)):
        if type(seq) is not int or seq != e.seq:
            raise ValueError(
                f"entries[{i}].seq: the row says {e.seq}, but the store keys it by {short_repr(seq)} "
                "(a row written there by something else)"
            )


#: A version id as :func:`new_tip` makes it, the only kind there has been (stores written
#: before version ids existed have none): it is written back into the next record unescaped.
_TIP = re.compile("[0-9a-f]{16}")


def tip_of(text: str) -> str | None:
    """The tip of the version a record made, read from the start of its text without parsing
    the rest (None: a record without one, or not one :func:`record` wrote, or not a tip
    :func:`new_tip` made)."""
    if type(text) is not str or not text.startswith('{"head":['):
        return None
    head = text[: text.find("]")]
    if not head.endswith('"'):
        return None
    tip = head[head.rfind('"', 0, len(head) - 1) + 1 : -1]
    return tip if _TIP.fullmatch(tip) else None


def head_of(text: str) -> str | None:
    """The head a record carries, exactly as :func:`record` wrote it (the head text the
    engine keeps for its version), read without parsing the rest (None: a record without a
    tip, or not one :func:`record` wrote)."""
    if tip_of(text) is None:
        return None
    return text[8 : text.find("]") + 1]


def is_tip(text: str) -> bool:
    """Whether ``text`` is a version id as :func:`new_tip` makes one."""
    return _TIP.fullmatch(text) is not None


def _tip(raw: Any, field: str) -> str:
    """``raw`` as a version id; ValueError naming ``field`` unless :func:`new_tip` could have made it."""
    if type(raw) is not str or not _TIP.fullmatch(raw):
        raise ValueError(f"{field}: expected a version id (16 lowercase hex digits), got {short_repr(raw)}")
    return raw


def _head(raw: Any) -> tuple[int, int, datetime | None, float, str | None]:
    if type(raw) is not list or len(raw) not in (3, 4):
        raise ValueError(f"head: expected [next_key, next_seq, latest, tip], got {str(raw)[:80]}")
    next_key, next_seq, latest = raw[:3]
    tip = _tip(raw[3], "head.tip") if len(raw) == 4 else None
    if not (type(next_key) is int and type(next_seq) is int and 0 <= next_key <= SEQ_END and 0 <= next_seq <= SEQ_END):
        next_key = checked_int(next_key, "head.next_key", SEQ_END)
        next_seq = checked_int(next_seq, "head.next_seq", SEQ_END)
    if latest is None:
        return next_key, next_seq, None, -math.inf, tip
    moment, us = row_time(latest, "head.latest")
    return next_key, next_seq, moment, us, tip


#: The scanner ``json.loads`` runs, called without the wrapper that skips whitespace around the
#: value (none in what :func:`record` and :func:`row` write): a third of a small record's parse.
_scan: Any = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # (set by its __init__)


def _parsed(text: str, where: str) -> Any:
    """``text`` parsed; ValueError naming ``where`` when it is not JSON text (or not text: an
    engine gives back what another client wrote, a BLOB say)."""
    if type(text) is not str:
        raise ValueError(f"{where}: expected JSON text, got {type(text).__name__}")
    try:
        value, end = _scan(text, 0)
        if end == len(text):
            return value
    except (StopIteration, ValueError, RecursionError):
        pass  # json.loads names what is wrong
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{where}: not JSON ({exc})") from None
    except RecursionError:
        raise ValueError(f"{where}: nested deeper than JSON can be read") from None


def snapshot(
    head_text: str, rows: Sequence[tuple[int, str]], decay_fn: Any, max_entries: int
) -> tuple[Snapshot, str | None]:
    """The snapshot a head and its rows (``(seq, row)`` pairs: each row with the put order
    the store keys it by) hold, checked as ``Memory.from_dict`` checks a document, and the
    tip of its version (None: not recorded).

    Runtime complexity: O(n log n) for n rows (parsed 256 at a time).

    Raises:
        ValueError: malformed (naming ``entries[i]`` and the field, or ``head``), or a row
            keyed by another put order than its own.
    """
    next_key, next_seq, latest, latest_us, tip = _head(_parsed(head_text, "head"))
    if len(rows) > max_entries:
        raise ValueError(f"entries: {len(rows)} entries exceed max_entries={max_entries}")
    if rows and type(rows[0]) not in (tuple, list):  # an engine of an older Store interface: rows alone
        raise ValueError(f"entries: expected (seq, row) pairs from the engine, got {type(rows[0]).__name__}")
    built: list[Entry[Any, Any]] = []
    for start in range(0, len(rows), _CHUNK):
        built += _entries(_parsed_rows(rows, start), "entries", decay_fn, start)
    check_entries(built, next_seq, latest, latest_us, decay_fn)  # (every seq below next_seq <= SEQ_END)
    _check_keyed(rows, built)
    entries = EMPTY.update(dict(zip(map(_KEY, built), built)))
    return Snapshot(entries, next_key, next_seq, latest=latest, latest_us=latest_us, built=built), tip


def change(text: str, decay_fn: Any, *, evicted: bool = True) -> tuple[Change, str | None, str | None]:
    """The :class:`~lethe._core.change.Change` a record holds, the tip of the version it was
    made on and the tip of the version it made (each None: not recorded);
    ``evicted=False`` skips the evicted entries (a replica applying the change does not
    need them).

    Raises:
        ValueError: malformed (the message names the field).
    """
    data = _parsed(text, "record")
    if type(data) is not dict or not _RECORD_FIELDS <= set(data) <= _CHAINED_FIELDS:
        raise ValueError(f"record: expected an object with fields {sorted(_RECORD_FIELDS)}, got {text[:80]}")
    for name in ("written", "removed", "evicted"):
        if type(data[name]) is not list:
            raise ValueError(f"record.{name}: expected a list, got {type(data[name]).__name__}")
    next_key, next_seq, latest, latest_us, tip = _head(data["head"])
    prev = _tip(data["prev"], "record.prev") if "prev" in data else None
    written = _entries(data["written"], "written", decay_fn)
    try:
        check_entries(written, next_seq, latest, latest_us, decay_fn)
    except ValueError as exc:
        raise ValueError(f"record.{str(exc).replace('entries[', 'written[', 1)}") from None
    removed = tuple(checked_key(raw, f"removed[{i}]") for i, raw in enumerate(data["removed"]))
    gone = data["evicted"] if evicted else ()
    dropped = tuple(_entries(gone, "evicted", decay_fn)) if gone else ()
    change = Change(tuple(written), removed, next_key, next_seq, latest=latest, latest_us=latest_us, evicted=dropped)
    return change, prev, tip


def check_change(change: Change, held: Snapshot, max_entries: int, *, whole: bool = False) -> None:
    """Check that ``change``, read from a record, was made on ``held``, the memory it is
    applied to: its counters and latest clock reading are not behind ``held``'s; each entry it
    writes is either held under its key with its put order, or new, with a put order from
    ``held``'s ``next_seq`` on; each key it removes is held, once, and not written too; and no
    more than ``max_entries`` entries come of it.  ``whole``: the record of a configuration
    change, which writes every entry held, as held (keys and put orders).

    A replica that applied a record made on another memory would remove rows by put orders
    the store does not key them by (and leave them behind).

    Runtime complexity: O(m) for m entries written and keys removed.

    Raises:
        ValueError: naming the field of the record.
    """
    if change.next_key < held.next_key or change.next_seq < held.next_seq:
        raise ValueError(
            f"head: the counters go back, from ({held.next_key}, {held.next_seq}) to ({change.next_key}, "
            f"{change.next_seq})"
        )
    if change.latest_us < held.latest_us:
        raise ValueError("head.latest: before the latest clock reading of the version it was made on")
    entries = held.entries
    removed = change.removed
    if len(set(removed)) < len(removed):
        raise ValueError("removed: a key removed twice")
    for i, key in enumerate(removed):
        if key not in entries:
            raise ValueError(f"removed[{i}]: the key {short_repr(key)} is not held")
    gone = set(removed)
    added = 0
    for i, e in enumerate(change.written):
        old = entries.get(e.key)
        if e.key in gone:
            raise ValueError(f"written[{i}].key: {short_repr(e.key)} is removed by the same record")
        if old is None:
            added += 1
        if (old is None or old.seq != e.seq) and (whole or not held.next_seq <= e.seq < change.next_seq):
            raise ValueError(
                f"written[{i}].seq: {e.seq} is neither the put order held for the key {short_repr(e.key)} "
                f"nor a new one (from {held.next_seq})"
            )
    if whole and (added or len(change.written) != len(entries) or removed):
        raise ValueError("written: a configuration's record writes every entry held, and only those")
    if len(entries) - len(removed) + added > max_entries:
        raise ValueError(f"written: {len(entries) - len(removed) + added} entries exceed max_entries={max_entries}")
