"""``Vector``: an entry's embedding, immutable, held at single precision.

An entry's vector is what :meth:`~lethe.Memory.search` compares a query with
(cosine similarity).  It is kept as 32-bit floats, as vector databases keep
them (pgvector's ``vector``, FAISS, usearch's ``f32``): half the memory of
Python floats in an array, a sixth of a tuple's.  Every number read back is the
stored single-precision value; relevance is computed from those in double
precision.
"""

from __future__ import annotations

import math
import struct
import sys
import threading
import warnings
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, cast, overload

from lethe._core.reprs import short_repr

#: The most dimensions a vector may have (the largest embedding models give 4,096 or 8,192).
MAX_DIMENSIONS = 65_536
#: A length not computed yet.
_UNKNOWN = math.nan
#: The lengths of a query used as it is; one shorter or longer is scaled by a power of two first.
_QUERY_SIZES = (2.0**-256, 2.0**256)


class Vector(Sequence[float]):
    """An immutable sequence of single-precision (float32) numbers: an entry's embedding.

    Build one from any sequence of real numbers (a list, a tuple, an
    ``array.array``, a one-dimensional numpy array); the numbers are rounded to
    the nearest float32.  It compares equal to another ``Vector`` with the same
    numbers, hashes, pickles, and reads like a tuple of floats.

    Raises:
        TypeError: ``values`` is not a sequence of real numbers (a mapping, a set or a
            complex number is not one).
        ValueError: it is empty, longer than 65,536, holds NaN or an infinity (or a
            number beyond float32's range), or is all zeros (it has no direction).

    >>> v = Vector([0.5, 0.25, 1.0])
    >>> len(v), v[0], list(v)
    (3, 0.5, [0.5, 0.25, 1.0])
    >>> v == Vector((0.5, 0.25, 1.0))
    True
    """

    # The numbers live in ``_data`` (an array of float32s), or, once a search index holds the
    # vector, in row ``_row`` of its ``_home`` (a :class:`Home`), and ``_data`` is None: one copy
    # of the numbers, not two.  Either way they are the same numbers, never changed.
    __slots__ = ("_data", "_home", "_norm", "_row")

    _data: array[float] | None
    _home: Home | None
    _row: int
    _norm: float

    def __init__(self, values: Sequence[float]) -> None:
        _set_home(self, None)  # (first: __del__ reads it, even when the numbers are refused)
        data, norm = _converted(values, "vector", "f")
        _set_data(self, data)
        _set_norm(self, norm)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Vector is immutable")

    def __del__(self) -> None:
        home = self._home
        if home is not None:
            home.release(self._row)

    def _numbers(self) -> Any:
        """The numbers: an array, or a memoryview of float32s (where they live)."""
        data = self._data
        if data is not None:
            return data
        home = self._home
        assert home is not None
        return home.view(self._row)

    @property
    def norm(self) -> float:
        """The Euclidean length, in double precision (computed once, when first asked for)."""
        norm = self._norm
        if norm != norm:  # (NaN: not computed yet)
            norm = math.hypot(*self._numbers())
            _set_norm(self, norm)
        return norm

    def to_list(self) -> list[float]:
        """The numbers as a list of Python floats."""
        numbers: list[float] = self._numbers().tolist()
        return numbers

    def to_bytes(self) -> bytes:
        """The numbers as little-endian float32 bytes (4 per dimension)."""
        if sys.byteorder == "little":
            raw: bytes = self._numbers().tobytes()
            return raw
        copy = array("f", self._numbers())
        copy.byteswap()
        return copy.tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> Vector:
        """The vector :meth:`to_bytes` wrote.

        Raises:
            ValueError: ``data`` is not a whole number of float32s, or what it holds is
                not a valid vector (see :class:`Vector`).
        """
        if len(data) % 4:
            raise ValueError(f"vector: {len(data)} bytes is not a whole number of float32s")
        values = array("f")
        values.frombytes(data)
        if sys.byteorder != "little":
            values.byteswap()
        return cls(values)

    def __len__(self) -> int:
        return len(self._numbers())

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[float, ...]: ...

    def __getitem__(self, index: int | slice) -> float | tuple[float, ...]:
        numbers = self._numbers()
        if isinstance(index, slice):
            return tuple(numbers[index])
        value: float = numbers[index]
        return value

    def __iter__(self) -> Iterator[float]:
        return iter(self._numbers())

    def __eq__(self, other: object) -> bool:
        if other.__class__ is Vector:
            return bool(self._numbers() == other._numbers())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._numbers().tobytes())

    def __reduce__(self) -> tuple[Any, ...]:
        return (Vector.from_bytes, (self.to_bytes(),))

    def __repr__(self) -> str:
        numbers = self._numbers()
        n = len(numbers)
        shown = ", ".join(map(repr, numbers[:3].tolist()))
        return f"Vector([{shown}])" if n <= 3 else f"Vector([{shown}, ...], dimensions={n})"


class Home(Protocol):
    """Where a search index keeps the numbers of the vectors it holds (one row each)."""

    def view(self, row: int) -> memoryview:
        """Row ``row``'s float32 numbers, one-dimensional."""

    def release(self, row: int) -> None:
        """Row ``row`` is no vector's any more (its vector is gone: it may be reused)."""

    def abandoned(self) -> bool:
        """Whether the index this home belongs to is gone (its vectors may move out)."""


_new = object.__new__
_set_data = Vector.__dict__["_data"].__set__
_set_norm = Vector.__dict__["_norm"].__set__
_set_home = Vector.__dict__["_home"].__set__
_set_row = Vector.__dict__["_row"].__set__
#: Moving a vector's numbers into a home is one step at a time, whatever thread (or index) asks.
_MOVING = threading.Lock()


def numbers(v: Vector) -> Any:
    """``v``'s float32 numbers as a buffer (an array or a memoryview): to copy, never to change."""
    return v._numbers()


def home_of(v: Vector) -> tuple[Home | None, int]:
    """Where ``v``'s numbers live: ``(home, row)``, or ``(None, -1)`` when in ``v`` itself."""
    home = v._home
    return (home, v._row) if home is not None else (None, -1)


def move(v: Vector, place: Callable[[Any], tuple[Home, int]]) -> tuple[Home, int]:
    """Move ``v``'s numbers to where ``place(numbers)`` copies them (returning that home and
    row), out of ``v`` itself or out of a home whose index is gone; the home and row they live
    in once done (another home, when another thread moved them first to one still in use)."""
    with _MOVING:
        old = v._home
        if old is not None and not old.abandoned():
            return old, v._row
        v.norm  # (from its own numbers, while it has them)  # noqa: B018
        home, row = place(v._numbers())
        if old is not None:
            old.release(v._row)
        _set_row(v, row)
        _set_home(v, home)
        _set_data(v, None)
        return home, row


def vector(values: object, name: str = "vector") -> Vector:
    """``values`` as a :class:`Vector` (a Vector as it is), else TypeError/ValueError naming ``name``."""
    if values.__class__ is Vector:
        return values
    data, norm = _converted(values, name, "f")
    out: Vector = _new(Vector)
    _set_data(out, data)
    _set_norm(out, norm)
    _set_home(out, None)
    return out


def query_vector(values: object, name: str = "query") -> tuple[array[float], float]:
    """A query's numbers in double precision (as given: a query is never stored; scaled by a
    power of two when its length is extreme) and their length, checked as a :class:`Vector`
    is (naming ``name``)."""
    if values.__class__ is Vector:
        return array("d", values._numbers()), values.norm
    data, _ = _converted(values, name, "d")
    norm = math.hypot(*data)
    if not _QUERY_SIZES[0] <= norm <= _QUERY_SIZES[1]:
        # Cosine does not see a query's size, and a power of two scales a number without
        # rounding it (but one so much smaller than the largest that it falls below the
        # smallest float, far beneath any cosine's rounding): a query far from length 1 is
        # brought near it, so neither its length nor its products with a vector overflow.
        shift = math.frexp(max(max(data), -min(data)))[1]
        data = _array("d", [math.ldexp(x, -shift) for x in data])
        norm = math.hypot(*data)
    return data, norm


def _converted(values: object, name: str, typecode: str) -> tuple[array[float], float]:
    """``values`` as numbers of ``typecode`` (``"f"``: float32, ``"d"``: float64) and their
    length, checked (naming ``name``)."""
    kind = values.__class__
    if kind is not list and kind is not tuple and not _sequence(values):
        raise TypeError(f"{name} must be a sequence of numbers, got {kind.__name__}")
    try:
        if getattr(values, "ndim", 1) != 1:
            raise TypeError(f"{name} must be one-dimensional, got {values.ndim} dimensions")  # type: ignore[attr-defined]
        data, checked = _floats(values, typecode)
    except TypeError as exc:
        if str(exc).startswith(name):
            raise
        raise TypeError(f"{name} must be a sequence of real numbers: {exc}") from None
    n = len(data)
    if not n:
        raise ValueError(f"{name} is empty")
    if n > MAX_DIMENSIONS:
        raise ValueError(f"{name} has {n} dimensions; at most {MAX_DIMENSIONS}")
    # A float32 sum is finite exactly when every number is: float32s cannot add up past float64's
    # range (a float64 query's can: each is checked).  A packed list was checked as it was packed.
    if not checked and not (math.isfinite(sum(data)) if typecode == "f" else all(map(math.isfinite, data))):
        bad = next(i for i, x in enumerate(data) if not math.isfinite(x))
        raise ValueError(
            f"{name}[{bad}] is {short_repr(values[bad])}: every number must be finite "  # type: ignore[index]
            "(and within float32's range, about 3.4e38)"
        )
    if not any(data):
        raise ValueError(f"{name} is all zeros: a vector without a direction has no cosine similarity")
    return data, _UNKNOWN


def _sequence(values: object) -> bool:
    """Whether ``values`` reads as a sequence: a length and numbers by index (a mapping or a set
    would be read by its keys, in an order of its own; a str is text)."""
    if isinstance(values, (str, bytes, bytearray, memoryview, Mapping)):
        return False
    return hasattr(values, "__len__") and hasattr(values, "__getitem__")


def _complex(x: object) -> bool:
    """Whether ``x`` is a complex number (Python's or numpy's)."""
    return isinstance(x, complex) or getattr(getattr(x, "dtype", None), "kind", None) == "c"


def _array(typecode: str, values: Any = ()) -> array[float]:
    """An array of floats of ``typecode`` (``"f"`` or ``"d"``) holding ``values``."""
    return cast("array[float]", array(typecode, values))


def _packed(values: list[Any] | tuple[Any, ...], total: Any) -> array[float] | None:
    """A list of numbers adding up to ``total`` as float32s, packed at C speed (``struct`` rounds
    to float32 as ``array`` does, three times faster); None when they are not all finite (then
    checked number by number)."""
    n = len(values)
    packer = _PACKERS.get(n)
    if packer is None:
        if not 0 < n <= MAX_DIMENSIONS:
            return None
        packer = _PACKERS[n] = struct.Struct(f"={n}f")  # (standard size: out of float32 range raises)
    try:
        if not math.isfinite(total):  # (packed: each within float32's range)
            return None
        raw = packer.pack(*values)
    except (struct.error, OverflowError, TypeError):
        return None
    out = _array("f")
    out.frombytes(raw)
    return out


_PACKERS: dict[int, struct.Struct] = {}


def _floats(values: Any, typecode: str) -> tuple[array[float], bool]:
    """``values`` as an array of ``typecode`` (a list, a tuple or a buffer of floats, numpy's,
    copied at C speed; anything else number by number), and whether every number is known to
    be finite already."""
    if isinstance(values, (list, tuple)):
        try:
            total = sum(values)  # (complex when any number is, numpy's too: array and struct take its real part)
        except (TypeError, OverflowError):
            total = None
        if total is None or _complex(total):
            return _numbers(values, typecode), False  # the error names the item
        if typecode == "f":
            packed = _packed(values, total)
            if packed is not None:
                return packed, True
        try:
            return _array(typecode, values), False
        except (TypeError, OverflowError):
            return _numbers(values, typecode), False  # numpy scalars, say: else the error names the item
    if isinstance(values, array):
        return (_array(typecode, values) if values.typecode in "fd" else _numbers(values, typecode)), False
    dtype = getattr(values, "dtype", None)
    if typecode == "f" and dtype is not None and getattr(dtype, "kind", None) == "f" and dtype != "float32":
        with warnings.catch_warnings():  # (a number beyond float32's range becomes inf: refused below)
            warnings.simplefilter("ignore", RuntimeWarning)
            values = values.astype("float32")  # (numpy's own conversion: no loop here, no import)
    try:
        view = memoryview(values)
    except TypeError:
        return _numbers(values, typecode), False
    with view:
        if view.ndim == 1 and view.format in ("f", "=f", "d", "=d") and view.c_contiguous:
            raw = _array(view.format[-1])
            raw.frombytes(view.cast("B"))
            return (raw if raw.typecode == typecode else _array(typecode, raw)), False
    return _numbers(values, typecode), False


def _numbers(values: Any, typecode: str) -> array[float]:
    """``values`` number by number (a str, bytes or complex is not a number here; an int beyond
    float range is an infinity, refused as one)."""
    out = _array(typecode)
    for x in values:
        if isinstance(x, (str, bytes)) or _complex(x) or not hasattr(x, "__float__"):
            raise TypeError(f"got {type(x).__name__} {short_repr(x)}")
        try:
            out.append(float(x))
        except OverflowError:
            out.append(-math.inf if x < 0 else math.inf)
    return out


def cosine(query: array[float], query_norm: float, v: Vector) -> float:
    """The cosine similarity of a query (:func:`query_vector`) and ``v``, of one dimension, in
    double precision: the correctly rounded sum (``math.fsum``) of the products, over the
    product of the two lengths, clamped to [-1, 1]."""
    c = math.fsum(map(float.__mul__, query, v._numbers())) / (query_norm * v.norm)
    return 1.0 if c > 1.0 else -1.0 if c < -1.0 else c
