"""Records declared once: a frozen, slotted dataclass's fields, and the builders compiled from them.

A record class (:class:`~lethe.Entry`) lists its fields once, in its class body.
Each stored field's ``metadata`` (made by :func:`declare`) says what it holds,
its *kind* (a key, an instant, a count, ...), and how a fresh record gets it;
that is all the codecs (``lethe._memory.codec``) need to write and read it back, and
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

from lethe._core.clock import aware_us

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
#: A searchable text: a str, or None.
TEXT = "text"
#: An embedding: a :class:`~lethe._core.vector.Vector`, or None.
VECTOR = "vector"
KINDS = frozenset({ANY, KEY, INSTANT, COUNT, ORDER, FLAG, WEIGHT, METADATA, STATE, TEXT, VECTOR})

# How a fresh record (a put) gets a field.
#: Passed to the builder one by one (an entry's key, value and put order).
GIVEN = "given"
#: The clock reading of the write (an instant).
CLOCK = "clock"
#: One of the write's options, the same for every record it makes (``put``'s keyword arguments).
OPTION = "option"
#: What the caller gave for this record alone, beside its value (an entry's text and vector):
#: passed to the builder together, as one tuple, or not at all (every one its default).
CONTENT = "content"
#: The field's default.
DEFAULT = "default"
_PUTS = frozenset({GIVEN, CLOCK, OPTION, CONTENT, DEFAULT})

_KIND = "lethe.kind"


def declare(
    kind: str, *, exact: str | None = None, after: str | None = None, put: str = DEFAULT, since: int | None = None
) -> dict[str, Any]:
    """A stored field's declaration, as the ``metadata`` of its ``dataclasses.field``.

    Parameters:
        kind: What it holds (:data:`KEY`, :data:`INSTANT`, ...).
        exact: For an instant, the (derived, undeclared) attribute that holds its exact
            microseconds since the Unix epoch as a float.
        after: For a required instant, another required instant it may not be earlier than.
        put: How a fresh record gets it (:data:`GIVEN`, :data:`CLOCK`, :data:`OPTION`,
            :data:`CONTENT`, :data:`DEFAULT`).
        since: The document format version that first wrote the field: data written before
            lacks it and reads it as its default (it must have one, and be declared after
            every field without ``since``).  None: written since the first version.

    Raises:
        ValueError: an unknown kind or way, ``exact``/``after``/``put=CLOCK`` on a field
            that is not an instant, or ``since`` not an int above 1.
    """
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {sorted(KINDS)}, got {kind!r}")
    if put not in _PUTS:
        raise ValueError(f"put: expected one of {sorted(_PUTS)}, got {put!r}")
    if (exact is None) != (kind != INSTANT) or (kind != INSTANT and (after is not None or put == CLOCK)):
        raise ValueError("exact (required), after and put=CLOCK belong to instants only")
    if since is not None and (type(since) is not int or since < 2):
        raise ValueError(f"since: expected a format version above 1, got {since!r}")
    return {_KIND: Field("", kind, exact, after, put, since=since)}


class Field(NamedTuple):
    """One stored field of a record class, as declared."""

    name: str
    kind: str
    exact: str | None
    after: str | None
    put: str
    #: The format version that first wrote it (None: the first).
    since: int | None = None
    #: The default (``dataclasses.MISSING`` when it has none).
    default: Any = dataclasses.MISSING
    #: The default's factory (``dataclasses.MISSING`` when it has none).
    factory: Any = dataclasses.MISSING

    @property
    def required(self) -> bool:
        """Whether the field has no default."""
        return self.default is dataclasses.MISSING and self.factory is dataclasses.MISSING


def fields(cls: type) -> tuple[Field, ...]:
    """The stored fields of record class ``cls`` (a dataclass), in declaration order.

    Raises:
        TypeError: ``cls`` is not a dataclass, or a declaration does not hold together
            (naming the field): ``exact`` or ``after`` naming no field, ``after`` naming
            an optional instant or another kind, a ``since`` field without a default or
            declared before a field without ``since``.
    """
    known = _FIELDS.get(cls)
    if known is not None:
        return known
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    names = {f.name for f in dataclasses.fields(cls)}
    out: list[Field] = []
    for f in dataclasses.fields(cls):
        declared = f.metadata.get(_KIND)
        if declared is None:
            continue
        field = declared._replace(name=f.name, default=f.default, factory=f.default_factory)
        where = f"{cls.__name__}.{f.name}"
        if field.exact is not None and field.exact not in names:
            raise TypeError(f"{where} names {field.exact!r}, which is not a field")
        if field.since is not None and field.required:
            raise TypeError(f"{where}: a field added in a later version (since=) needs a default")
        if field.since is None and any(o.since is not None for o in out):
            raise TypeError(f"{where}: declared after a field with since=; fields added later come last")
        out.append(field)
    for field in out:
        if field.after is not None:
            other = next((o for o in out if o.name == field.after), None)
            if other is None or other.kind != INSTANT or not other.required or not field.required:
                raise TypeError(
                    f"{cls.__name__}.{field.name}: after= names {field.after!r}; both must be required instants"
                )
    declared = _FIELDS[cls] = tuple(out)
    return declared


_FIELDS: dict[type, tuple[Field, ...]] = {}


def attributes(cls: type) -> tuple[str, ...]:
    """Every attribute of record class ``cls`` (stored and derived), in declaration order."""
    return tuple(f.name for f in dataclasses.fields(cls))


def compiled(source: str, namespace: Mapping[str, Any], name: str) -> Callable[..., Any]:
    """Function ``name`` defined by ``source``, compiled with ``namespace`` bound as closure
    variables (read as fast as locals, faster than globals)."""
    bound = "".join(f"    {key} = _names[{key!r}]\n" for key in sorted(namespace))
    body = "\n".join("    " + line if line else line for line in source.splitlines())
    factory = f"def _make(_names):\n{bound}{body}\n    return {name}\n"
    scope: dict[str, Any] = {}
    exec(compile(factory, f"<lethe {name}>", "exec"), scope)  # (our own source, built from a declaration)
    fn: Callable[..., Any] = scope["_make"](namespace)
    return fn


def setters(cls: type) -> dict[str, Any]:
    """The names generated builders of ``cls`` use: ``_cls``, ``_new`` and ``_set_<attribute>``
    (a slot's setter).

    Raises:
        TypeError: an attribute of ``cls`` is not a slot (``cls`` is not slotted).
    """
    out: dict[str, Any] = {"_cls": cls, "_new": object.__new__}
    for name in attributes(cls):
        setter = getattr(getattr(cls, name, None), "__set__", None)
        if setter is None:
            raise TypeError(f"{cls.__name__}.{name} is not a slot: builders need a slotted dataclass")
        out[f"_set_{name}"] = setter
    return out


def building(cls: type, values: Mapping[str, str], indent: str = "    ") -> str:
    """Source lines that build ``_r``, an instance of ``cls``, with every attribute set from
    the expression ``values`` gives for it (the names are :func:`setters`')."""
    lines = [f"{indent}_r = _new(_cls)"]
    lines += [f"{indent}_set_{name}(_r, {values[name]})" for name in attributes(cls)]
    return "\n".join(lines)


def changer(cls: type, names: tuple[str, ...]) -> Callable[..., Any]:
    """A compiled ``change(record, *values)``: a copy of ``record`` (of ``cls``) with the
    attributes ``names`` set to ``values``, in that order, and every other one kept.

    Raises:
        TypeError: a name is not an attribute of ``cls``, or ``cls`` is not slotted.
    """
    change = _CHANGERS.get((cls, names))
    if change is not None:
        return change
    known = attributes(cls)
    for name in names:
        if name not in known:
            raise TypeError(f"{cls.__name__} has no field {name!r}")
    params = [f"_v{i}" for i in range(len(names))]
    values = {name: f"_e.{name}" for name in known} | dict(zip(names, params))
    source = f"def change(_e, {', '.join(params)}):\n{building(cls, values)}\n    return _r\n"
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


def defaults(cls: type, namespace: dict[str, Any]) -> dict[str, str]:
    """The expression of each attribute's default, for generated source; the values go into
    ``namespace`` (a factory is called each time; a declared instant's exact microseconds
    follow its default)."""
    out: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            out[f.name] = f"_factory_{f.name}()"
        else:
            namespace[f"_default_{f.name}"] = None if f.default is dataclasses.MISSING else f.default
            out[f.name] = f"_default_{f.name}"
    for declared in fields(cls):
        if declared.exact is not None and declared.put == DEFAULT:
            default = None if declared.default is dataclasses.MISSING else declared.default
            namespace[f"_default_{declared.exact}"] = None if default is None else aware_us(default)
            out[declared.exact] = f"_default_{declared.exact}"
    return out


def put_options(cls: type) -> tuple[str, ...]:
    """The attributes a put's ``options`` give a fresh record of ``cls`` (:func:`fresh_builder`),
    in order: the :data:`OPTION` fields as declared, each instant followed by its exact microseconds."""
    out: list[str] = []
    for f in fields(cls):
        if f.put == OPTION:
            out += (f.name, f.exact) if f.exact is not None else (f.name,)
    return tuple(out)


def put_content(cls: type) -> tuple[str, ...]:
    """The :data:`CONTENT` fields of ``cls``, in declaration order: what a fresh record's
    ``content`` holds (:func:`fresh_builder`)."""
    return tuple(f.name for f in fields(cls) if f.put == CONTENT)


def fresh_builder(cls: type) -> Callable[..., Any]:
    """A compiled ``fresh(*given, stamp, options, content=None)``: a new record of ``cls``
    (``content`` by keyword).

    ``given`` are the :data:`GIVEN` fields, in declaration order; ``stamp`` is the
    write's clock reading, ``(datetime, microseconds)``, for every :data:`CLOCK` instant;
    ``options`` holds the :data:`OPTION` fields in declaration order, each instant followed
    by its exact microseconds; ``content``, the :data:`CONTENT` fields in declaration order
    (None: their defaults).  Every other field takes its default.

    Raises:
        TypeError: ``cls`` is not slotted.
    """
    namespace = setters(cls)
    values = defaults(cls, namespace)
    given: list[str] = []
    options: list[str] = []
    for f in fields(cls):
        if f.put == GIVEN:
            given.append(f"_v_{f.name}")
            values[f.name] = f"_v_{f.name}"
        elif f.put == CLOCK:
            values[f.name] = "_now"
            if f.exact is not None:
                values[f.exact] = "_now_us"
    for name in put_options(cls):
        options.append(f"_v_{name}")
        values[name] = f"_v_{name}"
    unpack = f"    {', '.join(options)}, = _options\n" if options else ""
    content = [f"_v_{name}" for name in put_content(cls)]
    if content:
        defaults_ = ", ".join(values[name] for name in put_content(cls))
        unpack += f"    {', '.join(content)}, = ({defaults_},) if content is None else content\n"
        values.update({name: f"_v_{name}" for name in put_content(cls)})
    source = (
        f"def fresh({''.join(g + ', ' for g in given)}_stamp, _options, content=None):\n"
        f"    _now, _now_us = _stamp\n{unpack}{building(cls, values)}\n    return _r\n"
    )
    return compiled(source, namespace, "fresh")
