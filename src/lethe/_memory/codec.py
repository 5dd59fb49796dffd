"""An entry's stored forms, derived from its declaration: the document and the row.

Two forms carry an :class:`~lethe.Entry` out of the process, and both are
compiled here, once, from the fields ``Entry`` declares (``lethe._core.record``):

* the **document** (``Memory.to_dict``): an object keyed by field name, instants
  as ISO-8601 text;
* the **row** (``lethe.store``): a JSON array, the put order first (the engines
  key rows by it), then every other field in declaration order, instants as
  integer microseconds since the Unix epoch (so reading parses no date and
  matches no name).

What each *kind* of field is checked against, and how it is written, is said
once below; a new field is one line in ``Entry`` and every form follows.
Reading checks every field as the documents are checked (a ``ValueError``
naming the field, never a wrong entry), with one fast test of the whole common
entry first: the field-by-field path, which names what is wrong, runs only
when that test fails.
"""

from __future__ import annotations

import binascii
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import MISSING
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from lethe._core.clock import UTC, aware_us, exact_us, from_us, to_us, to_utc
from lethe._core.entry import EMPTY_METADATA, MAX_COUNT, Entry, freeze_metadata
from lethe._core.record import (
    ANY,
    COUNT,
    FLAG,
    INSTANT,
    KEY,
    METADATA,
    ORDER,
    STATE,
    TEXT,
    VECTOR,
    WEIGHT,
    Field,
    building,
    compiled,
    defaults,
    fields,
    setters,
)
from lethe._core.reprs import short_repr
from lethe._core.validate import is_int, number
from lethe._core.vector import Vector
from lethe.decay._adapter import dumped_state, is_builtin, state_loader

#: An instant once read: the datetime and its exact microseconds since the epoch.
Moment = tuple[datetime, float]


class Reading(NamedTuple):
    """What reading entries needs beside their fields (:func:`reading`)."""

    #: The decay function the states are read for.
    decay_fn: Any
    #: Whether it wrote them (another function's state is never handed to it).
    same_fn: bool
    #: Whether a state of None is read as None without asking the function.
    plain: bool
    #: The instants of a document read so far, by their text (entries put together share one).
    moments: dict[str, Moment]


def reading(decay_fn: Any, same_fn: bool = True) -> Reading:
    """A :class:`Reading` of entries whose states ``decay_fn`` reads (``same_fn``: wrote)."""
    return Reading(decay_fn, same_fn, same_fn and is_builtin(decay_fn), {})


# -- keys ---------------------------------------------------------------------

#: How deeply tuple keys may nest.
_MAX_DEPTH = 100
#: Every int smaller than this in magnitude has at most 640 digits, the lowest limit Python may
#: set on converting an int to text (``sys.set_int_max_str_digits``): JSON text can hold it.
SHORT_INT = 2**2126


class _Unwritable(Exception):
    """A key (part) that JSON cannot carry with its type (the message, when there is one, says why)."""


def _printable(n: int) -> bool:
    """Whether Python converts ``n`` to text, as JSON needs: at most ``sys.get_int_max_str_digits()``
    digits (Python 3.11+, 3.10.7+: 4300 by default).  Raises :class:`_Unwritable` if not."""
    if -SHORT_INT < n < SHORT_INT:
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
        raise ValueError(f"key {short_repr(key)}: cannot be saved exactly; {why}") from None


def checked_key(value: Any, where: str) -> Any:
    """``value`` as the key :func:`encode_key` wrote it as, else ValueError naming ``where``."""
    try:
        return _decode_key(value)
    except _Unwritable as exc:
        if str(exc):
            got = short_repr(value) if type(value) is int else "a list (a tuple key) holding one"
            raise ValueError(f"{where}: {exc}; got {got}") from None
        raise ValueError(
            f"{where}: keys must be strings, ints, finite floats, booleans, or lists (tuple keys) of those "
            f"and null; got {short_repr(value)}"
        ) from None


# -- the other kinds, read field by field ---------------------------------------


def checked_int(value: Any, where: str, high: int | None = None) -> int:
    """``value`` as an int >= 0 (and <= ``high``), else ValueError naming ``where``."""
    if not is_int(value):
        raise ValueError(f"{where}: expected an int >= 0, got {short_repr(value)}")
    if value < 0 or (high is not None and value > high):
        bound = "an int >= 0" if high is None else f"an int between 0 and 2**{high.bit_length() - 1}"
        raise ValueError(f"{where}: expected {bound}, got {short_repr(value)}")
    return value


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where}: expected true or false, got {short_repr(value)}")
    return value


def _weight(value: Any, where: str) -> float:
    try:
        return number(value, where.rpartition(".")[2], low=0)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _metadata(value: Any, where: str) -> Any:
    """``value`` as entry metadata: an object whose keys, at every depth, are strings."""
    if type(value) is dict and not value:
        return EMPTY_METADATA
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected an object, got {short_repr(value)}")
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
                    raise ValueError(f"{where}: metadata keys must be strings at every depth, got {short_repr(k)}")
                stack.append(v)
        elif isinstance(item, (list, tuple)):
            seen.add(id(item))
            stack.extend(item)
    return freeze_metadata(value)


def _text(value: Any, where: str) -> str | None:
    if value is not None and type(value) is not str:
        raise ValueError(f"{where}: expected a string or null, got {short_repr(value)}")
    return value


def _document_vector(value: Any, where: str) -> Vector | None:
    """A vector as a document holds it: a list of numbers (null: none)."""
    if value is None:
        return None
    if type(value) is not list:
        raise ValueError(f"{where}: expected a list of numbers or null, got {short_repr(value)}")
    try:
        return Vector(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {str(exc).removeprefix('vector')}") from None


def _row_vector(value: Any, where: str) -> Vector | None:
    """A vector as a row holds it: its float32 bytes, little-endian, in base64 (null: none)."""
    if value is None:
        return None
    if type(value) is not str:
        raise ValueError(f"{where}: expected base64 text or null, got {short_repr(value)}")
    try:
        return Vector.from_bytes(_b64(value))
    except (binascii.Error, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {str(exc).removeprefix('vector')}") from None


def _b64(value: str) -> bytes:
    """Base64 ``value`` decoded, refusing anything but the canonical text of its bytes (Python
    3.10's ``a2b_base64`` has no ``strict_mode``, and skips what is not base64)."""
    data = binascii.a2b_base64(value)
    if binascii.b2a_base64(data, newline=False).decode("ascii") != value:
        raise binascii.Error("not base64 (as a row writes a vector)")
    return data


def _vector_text(v: Vector) -> str:
    """``v`` as a row holds it."""
    return binascii.b2a_base64(v.to_bytes(), newline=False).decode("ascii")


def loaded_state(state: Any, where: str, reading: Reading) -> Any:
    """An entry's stored decay state as ``reading.decay_fn`` takes it."""
    if not reading.same_fn:
        return None  # written by another decay function: never hand it to this one
    load = state_loader(reading.decay_fn)
    if load is not None:
        try:
            return load(state)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from None
    if is_builtin(reading.decay_fn):
        return None  # a built-in without state: stale state from another function
    return state  # a custom function's own state, kept as the data gave it


def parsed_time(value: Any, where: str) -> Moment:
    """An ISO-8601 instant with a UTC offset (``Z`` too), else ValueError naming ``where``."""
    if not isinstance(value, str) or len(value) > 64:
        raise ValueError(f"{where}: expected an ISO-8601 string, got {short_repr(value)}")
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        moment = datetime.fromisoformat(text)
        us = aware_us(moment) if moment.utcoffset() is not None else to_us(moment, where)  # (naive: raises)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"{where}: not an aware ISO-8601 time: {exc}") from None
    if moment.tzinfo is not UTC:  # held as UTC, as Entry holds it (and checked to have a UTC reading)
        moment = to_utc(moment, where)
    return moment, us


def _document_time(value: Any, moments: dict[str, Moment], where: str) -> Moment:
    """:func:`parsed_time` of ``value``, parsed once per text while ``moments`` lives."""
    if type(value) is not str:
        return parsed_time(value, where)  # raises
    moment = moments.get(value)
    if moment is None:
        moment = moments[value] = parsed_time(value, where)
    return moment


_LOW_US = exact_us(datetime.min.replace(tzinfo=UTC))
_HIGH_US = exact_us(datetime.max.replace(tzinfo=UTC))  # (exact: as a float, one past it)


def row_time(value: Any, where: str) -> Moment:
    """An instant as a row holds it (int microseconds since the epoch), else ValueError naming ``where``."""
    if type(value) is not int or not _LOW_US <= value <= _HIGH_US:
        raise ValueError(f"{where}: expected microseconds since 1970 within the datetime range, got {value!r}")
    return from_us(value), float(value)


def _iso(moment: datetime, texts: dict[int, str]) -> str:
    """``moment.isoformat()``, formatted once per object while ``texts`` lives."""
    text = texts.get(id(moment))
    if text is None:
        text = texts[id(moment)] = moment.isoformat()
    return text


def _objected(value: Any, where: str) -> None:
    raise ValueError(f"{where}: expected an object, got {type(value).__name__}")


def _listed(value: Any, size: int) -> None:
    raise ValueError(f": expected a list of {size} fields, got {str(value)[:80]}")


# -- generated from the declaration ---------------------------------------------------

# Each kind, as source over a field's value ``{v}`` (and the name of the field, ``{w}``,
# an expression of the text naming it): the fast test of a common value (None: any value
# passes) with the value it then has, and the field-by-field check, which names what is wrong.
_FAST: dict[str, tuple[str | None, str]] = {
    ANY: (None, "{v}"),
    KEY: ("(type({v}) is str or (type({v}) is int and -_SHORT_INT < {v} < _SHORT_INT))", "{v}"),
    COUNT: ("(type({v}) is int and 0 <= {v} <= _MAX_COUNT)", "{v}"),
    ORDER: ("(type({v}) is int and {v} >= 0)", "{v}"),
    FLAG: ("({v} is True or {v} is False)", "{v}"),
    WEIGHT: ("(type({v}) is float and 0.0 <= {v} < _inf)", "{v}"),
    METADATA: ("(type({v}) is dict and not {v})", "_EMPTY_METADATA"),
    STATE: (None, "{v} if {v} is None and plain else _loaded_state({v}, {w}, reading)"),
    TEXT: ("({v} is None or type({v}) is str)", "{v}"),
    VECTOR: ("({v} is None or type({v}) is list)", "None if {v} is None else _document_vector({v}, {w})"),
}
#: A row holds a vector as base64 text.
_FAST_ROW = {**_FAST, VECTOR: ("({v} is None or type({v}) is str)", "None if {v} is None else _row_vector({v}, {w})")}
_SLOW: dict[str, str] = {
    ANY: "{v}",
    KEY: "_checked_key({v}, {w})",
    COUNT: "_checked_int({v}, {w}, _MAX_COUNT)",
    ORDER: "_checked_int({v}, {w})",
    FLAG: "_flag({v}, {w})",
    WEIGHT: "_weight({v}, {w})",
    METADATA: "_metadata({v}, {w})",
    STATE: "_loaded_state({v}, {w}, reading)",
    TEXT: "_text({v}, {w})",
    VECTOR: "_document_vector({v}, {w})",
}
_SLOW_ROW = {**_SLOW, VECTOR: "_row_vector({v}, {w})"}
# How each kind is written, as source over the attribute ``{a}`` (``e.name``).
_OUT: dict[str, str] = {
    ANY: "{a}",
    KEY: "{a} if type({a}) is str else _encode_key({a})",
    COUNT: "{a}",
    ORDER: "{a}",
    FLAG: "{a}",
    WEIGHT: "{a}",
    STATE: "None if {a} is None else _dumped_state(fn, {a})",
    TEXT: "{a}",
    VECTOR: "None if {a} is None else {a}.to_list()",
}
_OUT_ROW = {**_OUT, VECTOR: "None if {a} is None else _vector_text({a})"}
_NAMESPACE: dict[str, Any] = {
    "_SHORT_INT": SHORT_INT,
    "_MAX_COUNT": MAX_COUNT,
    "_inf": math.inf,
    "_EMPTY_METADATA": EMPTY_METADATA,
    "_Mapping": Mapping,
    "_checked_key": checked_key,
    "_checked_int": checked_int,
    "_flag": _flag,
    "_weight": _weight,
    "_metadata": _metadata,
    "_loaded_state": loaded_state,
    "_document_time": _document_time,
    "row_time": row_time,
    "_LOW_US": _LOW_US,
    "_HIGH_US": _HIGH_US,
    "_EPOCH": from_us(0),
    "_timedelta": timedelta,
    "_objected": _objected,
    "_listed": _listed,
    "_encode_key": encode_key,
    "_dumped_state": dumped_state,
    "_exact_us": exact_us,
    "_iso": _iso,
    "_text": _text,
    "_document_vector": _document_vector,
    "_row_vector": _row_vector,
    "_vector_text": _vector_text,
}


def _reader(cls: type, declared: tuple[Field, ...], row: bool) -> Callable[..., Any]:
    """``read(raw, where, reading)``: the entry the stored form ``raw`` holds (a row: a parsed
    JSON array; a document: an object), each field checked, else ValueError naming
    ``where`` and the field (a row's instants by their stored names, ``inserted_us``).
    Fields declared ``since`` a later version may be absent (data written before): they
    read as their default."""
    namespace = {**_NAMESPACE, **setters(cls)}
    values = defaults(cls, namespace)  # (derived attributes not set below keep their defaults)
    later = [f for f in declared if f.since is not None]
    for f in later:
        namespace[f"_stored_{f.name}"] = f.default if f.factory is MISSING else f.factory()
    lines = ["def read(raw, where, reading):"]
    if row:
        order = _row_order(declared)
        size, least = len(order), len(order) - len(later)
        namespace["_PAD"] = tuple(namespace[f"_stored_{f.name}"] for f in later)
        lines += [
            f"    if type(raw) is not list or len(raw) != {size}:",
            f"        raw = _padded(raw, {least}, _PAD)  # written before the later fields (or refused)",
            f"    {', '.join(f'_v_{f.name}' for f in order)}, = raw",
        ]
    else:
        namespace["_NAMES"] = frozenset(f.name for f in declared)
        namespace["_LATER"] = frozenset(f.name for f in later)
        lines += [
            "    if type(raw) is not dict and not isinstance(raw, _Mapping):  # (from JSON: a dict)",
            "        _objected(raw, where[:-1])",
            "    if raw.keys() != _NAMES:",
            "        _exact(raw, _NAMES, where, _LATER)",
            "    moments = reading.moments",
        ]
        for f in declared:
            if f.kind != INSTANT:
                got = f"raw.get({f.name!r}, _stored_{f.name})" if f.since is not None else f"raw[{f.name!r}]"
                lines.append(f"    _v_{f.name} = {got}")
    for f in declared:
        values[f.name] = f"_v_{f.name}"
        if f.kind != INSTANT:
            continue
        assert f.exact is not None
        values[f.exact] = f"_v_{f.exact}"
        if row:
            raw_value = f"_v_{f.name}"
            parse = f"row_time({raw_value}, where + {f.exact!r})"
            if f.required:  # the common case at once: an int in range, often the instant before
                lines += _row_instant(f, declared)
                continue
        else:
            raw_value = "_t"
            got = f"raw.get({f.name!r}, _stored_{f.name})" if f.since is not None else f"raw[{f.name!r}]"
            lines.append(f"    _t = {got}")
            parse = f"_document_time(_t, moments, where + {f.name!r})"
            if f.required:  # most are shared by entries put together: found here at once
                parse = f"(type(_t) is str and moments.get(_t)) or {parse}"
        if not f.required:
            parse = f"(None, None) if {raw_value} is None else {parse}"
        lines.append(f"    _v_{f.name}, _v_{f.exact} = {parse}")
    tests, fast, slow = [], [], []
    fast_forms, slow_forms = (_FAST_ROW, _SLOW_ROW) if row else (_FAST, _SLOW)
    for f in declared:
        if f.kind == INSTANT:
            if f.after is not None:
                after = next(a for a in declared if a.name == f.after)
                # (the datetimes, exact: the floats past 2**53 microseconds, the year 2255, are not)
                tests.append(f"_v_{f.name} >= _v_{after.name}")
                slow += [
                    f"    if _v_{f.name} < _v_{after.name}:",
                    f"        raise ValueError(where + {f'{f.name}: earlier than {f.after}'!r})",
                ]
            continue
        v, where = f"_v_{f.name}", f"where + {f.name!r}"
        test, fast_value = fast_forms[f.kind]
        if test is not None:
            tests.append(test.format(v=v))
        if fast_value != "{v}":
            fast.append(f"        {v} = {fast_value.format(v=v, w=where)}")
        if slow_forms[f.kind] != "{v}":
            slow.append(f"    {v} = {slow_forms[f.kind].format(v=v, w=where)}")
    lines += [
        "    plain = reading.plain",
        f"    if {' and '.join(tests) or 'True'}:",
        *fast,
        building(cls, values, "        "),
        "        return _r",
        *slow,
        building(cls, values),
        "    return _r",
    ]
    namespace["_exact"], namespace["_padded"] = exact_fields, _padded
    return compiled("\n".join(lines) + "\n", namespace, "read")


def _row_instant(f: Field, declared: tuple[Field, ...]) -> list[str]:
    """Source reading a row's required instant ``f``: microseconds in range are turned into a
    datetime here (the one of the instant ``f`` is after, when they are equal: an entry never
    rehearsed), anything else by :func:`row_time`, which names what is wrong."""
    v, us = f"_v_{f.name}", f"_v_{f.exact}"
    names = [a.name for a in declared]
    if f.after is not None and names.index(f.after) > names.index(f.name):
        raise TypeError(f"{f.name} is declared after={f.after!r}, which must be declared before it")
    lines = [f"    _raw_{f.name} = {v}"] if any(a.after == f.name for a in declared) else []
    lines += [f"    if type({v}) is int and _LOW_US <= {v} <= _HIGH_US:", f"        {us} = float({v})"]
    if f.after is not None:
        lines += [
            f"        {v} = _v_{f.after} if {v} == _raw_{f.after} else _EPOCH + _timedelta(0, 0, {v})",
        ]
    else:
        lines.append(f"        {v} = _EPOCH + _timedelta(0, 0, {v})")
    lines += ["    else:", f"        {v}, {us} = row_time({v}, where + {f.exact!r})"]
    return lines


def _padded(raw: Any, least: int, pad: tuple[Any, ...]) -> list[Any]:
    """``raw``, a row written before the last ``len(pad)`` fields were added (it holds at least
    ``least``), with their stored defaults; else ValueError saying what a row holds."""
    size = least + len(pad)
    if type(raw) is not list or not least <= len(raw) <= size:
        _listed(raw, size)
    return [*raw, *pad[len(raw) - least :]]


def _row_order(declared: tuple[Field, ...]) -> list[Field]:
    """A row's fields: the put order first (the engines key rows by it), then the rest as declared."""
    return [f for f in declared if f.kind == ORDER] + [f for f in declared if f.kind != ORDER]


def _writer(declared: tuple[Field, ...], row: bool) -> Callable[..., Any]:
    """``write(e, fn, texts)``: the stored form of entry ``e`` (a list, or a dict), whose decay
    state ``fn`` dumps; ``texts`` remembers the ISO text of each datetime written (documents)."""
    parts = []
    for f in _row_order(declared) if row else declared:
        a = f"e.{f.name}"
        if f.kind == INSTANT:
            out = f"_exact_us({a})" if row else f"_iso({a}, texts)"
            out = out if f.required else f"None if {a} is None else {out}"
        elif f.kind == METADATA:
            out = a if row else f"dict({a}) if {a} else {{}}"
        elif f.kind == KEY and row:
            out = f"_encode_key({a})"
        else:
            out = (_OUT_ROW if row else _OUT)[f.kind].format(a=a)
        parts.append(out if row else f"{f.name!r}: {out}")
    body = f"[{', '.join(parts)}]" if row else f"{{{', '.join(parts)}}}"
    return compiled(f"def write(e, fn, texts):\n    return {body}\n", _NAMESPACE, "write")


_MISSING: Any = object()


def field_of(data: Mapping[str, Any], name: str, where: str, default: Any = _MISSING) -> Any:
    """``data[name]``; ``default`` if given and the field is absent, else ValueError naming it."""
    try:
        return data[name]
    except KeyError:
        if default is not _MISSING:
            return default
        raise ValueError(f"{where}{name}: missing") from None


def exact_fields(
    data: Mapping[str, Any], names: frozenset[str], where: str, optional: frozenset[str] = frozenset()
) -> None:
    """ValueError naming the first missing (and not ``optional``) or unknown field of ``data``."""
    if data.keys() == names:
        return
    for name in sorted(names - optional):
        field_of(data, name, where)
    unknown = sorted(map(str, set(data) - names))
    if unknown:
        name = unknown[0] if len(unknown[0]) <= 60 else unknown[0][:57] + "..."
        raise ValueError(f"{where}{name}: unknown field")


class Codec(NamedTuple):
    """The stored forms of one record class, compiled from its declaration (:func:`codec`)."""

    #: The names of a document's fields.
    names: frozenset[str]
    #: The names of a row's fields, in order (an instant by its exact attribute's name).
    row_names: tuple[str, ...]
    #: The fields that hold what the caller gave, stored as JSON has them (a row must keep them exactly).
    free: tuple[str, ...]
    #: ``to_document(e, fn, texts) -> dict``.
    to_document: Callable[[Any, Any, dict[int, str]], dict[str, Any]]
    #: ``from_document(raw, where, reading) -> entry``.
    from_document: Callable[[Any, str, Reading], Any]
    #: ``to_row(e, fn, texts) -> list``.
    to_row: Callable[[Any, Any, Any], list[Any]]
    #: ``from_row(raw, where, reading) -> entry``.
    from_row: Callable[[Any, str, Reading], Any]


def codec(cls: type) -> Codec:
    """The document and row forms of record class ``cls``, compiled from its declared fields."""
    declared = fields(cls)
    return Codec(
        names=frozenset(f.name for f in declared),
        row_names=tuple(f.exact or f.name for f in _row_order(declared)),
        free=tuple(f.name for f in declared if f.kind in (ANY, METADATA)),
        to_document=_writer(declared, row=False),
        from_document=_reader(cls, declared, row=False),
        to_row=_writer(declared, row=True),
        from_row=_reader(cls, declared, row=True),
    )


#: :class:`~lethe.Entry`'s stored forms.
ENTRY = codec(Entry)
