"""Records declared once: a frozen, slotted dataclass's fields, and the builders compiled from them.

A record class (:class:`~lethe.Entry`) lists its fields once, in its class body.
Each stored field's ``metadata`` (made by :func:`declare`) says what it holds,
its *kind* (a key, an instant, a count, ...), and how a fresh record gets it;
that is all the codecs (``lethe._codec``) need to write and read it back, and
all this module needs to compile, once per class and set of fields, the
functions that copy and build records without running ``__init__``'s checks
again (the values are known to be valid).  attrs builds its ``__init__`` the
same way (from its field list, as source compiled once): as fast as setters
written by hand, and never out of step with the class.

>>> from dataclasses import dataclass, field
>>> @dataclass(frozen=True, slots=True, kw_only=True)
... class Point:
...     x: int = field(metadata=declare(ANY, put=GIVEN))
...     y: int = field(default=0, metadata=declare(ANY))
>>> evolve(Point(x=1), y=2)
Point(x=1, y=2)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

T = TypeVar("T")

# What a stored field holds (its kind): the codecs know how to check, write and read each.
#: Any value, stored as it is (an entry's ``value`` and ``summary``).
ANY = "any"
#: A key: str, int, finite float, bool, or tuples of those and None.
KEY = "key"
#: A timezone-aware datetime, held as UTC, beside its exact microseconds since the epoch
#: (the ``exact`` attribute); optional when its default is None.
INSTANT = "instant"
#: A count of rehearsals: an int from 0 to 2**53.
COUNT = "count"
#: A put order: an int >= 0, unique in a memory; a store keys its rows by it.
ORDER = "order"
#: A bool.
FLAG = "flag"
#: A weight: a finite float >= 0.
WEIGHT = "weight"
#: A read-only mapping with str keys at every depth.
METADATA = "metadata"
#: The decay function's own per-record state (written and read through the function).
STATE = "state"
KINDS = frozenset({ANY, KEY, INSTANT, COUNT, ORDER, FLAG, WEIGHT, METADATA, STATE})

# How a fresh record (a put) gets a field.
#: Passed to the builder one by one (an entry's key, value and put order).
GIVEN = "given"
#: The clock reading of the write (an instant).
CLOCK = "clock"
#: One of the write's options, the same for every record it makes (``put``'s keyword arguments).
OPTION = "option"
#: The field's default.
DEFAULT = "default"
_PUTS = frozenset({GIVEN, CLOCK, OPTION, DEFAULT})

_KIND = "lethe.kind"


def declare(kind: str, *, exact: str | None = None, after: str | None = None, put: str = DEFAULT) -> dict[str, Any]:
    """A stored field's declaration, as the ``metadata`` of its ``dataclasses.field``.

    Parameters:
        kind: What it holds (:data:`KEY`, :data:`INSTANT`, ...).
        exact: For an instant, the (derived, undeclared) attribute that holds its exact
            microseconds since the Unix epoch as a float.
        after: For an instant, another instant it may not be earlier than.
        put: How a fresh record gets it (:data:`GIVEN`, :data:`CLOCK`, :data:`OPTION`, :data:`DEFAULT`).

    Raises:
        ValueError: an unknown kind or way, or ``exact``/``after`` on a field that is not an instant.
    """
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {sorted(KINDS)}, got {kind!r}")
    if put not in _PUTS:
        raise ValueError(f"put: expected one of {sorted(_PUTS)}, got {put!r}")
    if (exact is None) != (kind != INSTANT) or (after is not None and kind != INSTANT):
        raise ValueError("exact (required) and after belong to instants only")
    return {_KIND: Field("", kind, exact, after, put, default=None)}


class Field(NamedTuple):
    """One stored field of a record class, as declared."""

    name: str
    kind: str
    exact: str | None
    after: str | None
    put: str
    #: The default (``dataclasses.MISSING`` when it has none); ``default_factory`` fields call it.
    default: Any


def fields(cls: type) -> tuple[Field, ...]:
    """The stored fields of record class ``cls``, in declaration order.

    Raises:
        TypeError: ``cls`` is not a frozen, slotted dataclass, or an attribute a
            field names (``exact``, ``after``) is not one of its fields.
    """
    known = _FIELDS.get(cls)
    if known is not None:
        return known
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a slotted dataclass")
    names = {f.name for f in dataclasses.fields(cls)}
    out = []
    for f in dataclasses.fields(cls):
        declared = f.metadata.get(_KIND)
        if declared is None:
            continue
        default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        field = declared._replace(name=f.name, default=default)
        for other in (field.exact, field.after):
            if other is not None and other not in names:
                raise TypeError(f"{cls.__name__}.{f.name} names {other!r}, which is not a field")
        out.append(field)
    declared = _FIELDS[cls] = tuple(out)
    return declared


_FIELDS: dict[type, tuple[Field, ...]] = {}


def attributes(cls: type) -> tuple[str, ...]:
    """Every attribute of record class ``cls`` (stored and derived), in declaration order."""
    return tuple(f.name for f in dataclasses.fields(cls))


def compiled(source: str, namespace: Mapping[str, Any], name: str) -> Callable[..., Any]:
    """Function ``name`` defined by ``source``, compiled with ``namespace`` as its globals."""
    scope = dict(namespace)
    exec(compile(source, f"<lethe {name}>", "exec"), scope)
    fn: Callable[..., Any] = scope[name]
    return fn


def setters(cls: type) -> dict[str, Any]:
    """The namespace generated builders of ``cls`` run in: ``_new`` and ``_set_<attribute>``."""
    out: dict[str, Any] = {"_cls": cls, "_new": object.__new__}
    for name in attributes(cls):
        out[f"_set_{name}"] = getattr(cls, name).__set__
    return out


def building(cls: type, values: Mapping[str, str], indent: str = "    ") -> str:
    """Source lines that build ``r``, an instance of ``cls``, with every attribute set from
    the expression ``values`` gives for it (the namespace is :func:`setters`')."""
    lines = [f"{indent}r = _new(_cls)"]
    lines += [f"{indent}_set_{name}(r, {values[name]})" for name in attributes(cls)]
    return "\n".join(lines)


def changer(cls: type, names: tuple[str, ...]) -> Callable[..., Any]:
    """A compiled ``change(record, *values)``: a copy of ``record`` (of ``cls``) with the
    attributes ``names`` set to ``values``, in that order, and every other one kept.

    Raises:
        TypeError: a name is not an attribute of ``cls``.
    """
    change = _CHANGERS.get((cls, names))
    if change is not None:
        return change
    known = attributes(cls)
    for name in names:
        if name not in known:
            raise TypeError(f"{cls.__name__} has no field {name!r}")
    params = [f"v{i}" for i in range(len(names))]
    values = {name: f"e.{name}" for name in known} | dict(zip(names, params))
    source = f"def change(e, {', '.join(params)}):\n{building(cls, values)}\n    return r\n"
    change = _CHANGERS[cls, names] = compiled(source, setters(cls), "change")
    return change


#: The changers compiled so far, by class and names (a few per class: each caller changes
#: one fixed set of fields).
_CHANGERS: dict[tuple[type, tuple[str, ...]], Callable[..., Any]] = {}


def evolve(record: T, **changes: Any) -> T:
    """A copy of ``record`` with ``changes`` (already valid: nothing is checked), built
    without ``__init__`` by a :func:`changer` compiled once per set of names.

    Raises:
        TypeError: a name is not one of the record's fields.
    """
    names = tuple(changes)
    change = _CHANGERS.get((type(record), names)) or changer(type(record), names)
    new: T = change(record, *changes.values())
    return new


def fresh_builder(cls: type) -> Callable[..., Any]:
    """A compiled ``fresh(*given, stamp, options)``: a new record of ``cls``.

    ``given`` are the :data:`GIVEN` fields, in declaration order; ``stamp`` is the
    write's clock reading, ``(datetime, microseconds)``, for every :data:`CLOCK` instant;
    ``options`` holds the :data:`OPTION` fields in declaration order, each instant followed
    by its exact microseconds.  Every other field takes its default.
    """
    declared = fields(cls)
    given = [f.name for f in declared if f.put == GIVEN]
    options: list[str] = []
    values = {name: f"_default_{name}" for name in attributes(cls)}
    namespace = setters(cls)
    for name in attributes(cls):
        default = next((f.default for f in dataclasses.fields(cls) if f.name == name), None)
        namespace[f"_default_{name}"] = default if default is not dataclasses.MISSING else None
    for f in declared:
        if f.put == GIVEN:
            values[f.name] = f.name
        elif f.put == CLOCK:
            values[f.name] = "_now"
            if f.exact is not None:
                values[f.exact] = "_now_us"
        elif f.put == OPTION:
            values[f.name] = f.name
            options.append(f.name)
            if f.exact is not None:
                values[f.exact] = f.exact
                options.append(f.exact)
        else:
            namespace[f"_default_{f.name}"] = f.default
    unpack = f"    {', '.join(options)}{',' if len(options) == 1 else ''} = options\n" if options else ""
    source = (
        f"def fresh({''.join(g + ', ' for g in given)}stamp, options):\n"
        f"    _now, _now_us = stamp\n{unpack}{building(cls, values)}\n    return r\n"
    )
    return compiled(source, namespace, "fresh")
