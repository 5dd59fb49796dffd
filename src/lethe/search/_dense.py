"""The vectors of a search index, and the cosine similarity of a query with them.

Two backends hold them, row by row (a row is one entry's place in the index),
and answer the same two questions: every row's similarity best first
(:meth:`ranked`, in blocks), and the exact similarity of given vectors
(:meth:`cosines`).

* :class:`NumpyRows` (the ``vector`` extra): the vectors' float32 numbers in
  fixed-size chunks, where each vector's own numbers move when the index first
  holds it (one copy of them, not two), so every row's similarity is one
  matrix-vector product per chunk, each within :attr:`NumpyRows.error` of the
  exact one (a vector too short for float32 products, :data:`SHORT`, or so
  long that they overflow, comes first, to be compared exactly); the best rows
  are found by ``argpartition`` a block at a time, not by sorting them all.
  Exact similarities are computed in double precision from the same float32
  numbers (numpy's pairwise sum of the products, row by row).
* :class:`PythonRows` (no dependency): each similarity computed exactly (a
  correctly rounded sum, ``math.fsum``), one row at a time.
"""

from __future__ import annotations

import weakref
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

from lethe._core.vector import Vector, cosine, home_of, move
from lethe._core.vector import numbers as numbers_of

try:  # the vector extra: a query over n rows is one matrix-vector product, not n loops
    import numpy as _np
except ImportError:  # pragma: no cover - exercised by the tests' pure-Python mode
    _np = None  # type: ignore[assignment]

#: Whether new indexes use numpy (the tests switch it off to run the pure-Python rows).
use_numpy = _np is not None
#: Rows the first block of a ranking holds (later blocks double).
FIRST_BLOCK = 512
#: Vectors a chunk of :class:`NumpyRows` holds (2,048 of 384 dimensions: 3 MiB).
CHUNK = 2048
#: The shortest vector whose float32 similarity is within :attr:`NumpyRows.error` of the exact
#: one.  A product or partial sum below float32's smallest normal number (2**-126) loses digits,
#: or all of them where the processor flushes it to zero: at most 2**-126 each, so the 2d of them
#: (d <= 2**16) move the similarity of a vector of length 2**-64 by 2**-45 at most, far inside
#: the error allowed.  A shorter one (of subnormal numbers, say) is compared exactly instead.
SHORT = 2.0**-64


class PythonRows:
    """Vectors by row, compared one at a time, exactly."""

    error = 0.0

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions
        self.count = 0
        self._rows: list[Vector | None] = []

    def set(self, row: int, v: Vector) -> None:
        rows = self._rows
        if row >= len(rows):
            rows.extend([None] * (row + 1 - len(rows)))
        if rows[row] is None:
            self.count += 1
        rows[row] = v

    def clear(self, row: int) -> None:
        if row < len(self._rows) and self._rows[row] is not None:
            self._rows[row] = None
            self.count -= 1

    def cosines(self, vectors: Sequence[Vector | None], query: array[float], norm: float) -> list[float | None]:
        """The exact similarity of ``query`` with each of ``vectors`` (None for None)."""
        return [None if v is None else cosine(query, norm, v) for v in vectors]

    def ranked(
        self, query: array[float], norm: float, rows: int, hidden: frozenset[int]
    ) -> Iterator[tuple[list[int], list[float]]]:
        """Every row holding a vector, but ``hidden``, with its similarity to ``query``, best first."""
        found = [
            (cosine(query, norm, v), row)
            for row, v in enumerate(self._rows[:rows])
            if v is not None and row not in hidden
        ]
        found.sort(key=lambda p: -p[0])
        yield [row for _, row in found], [s for s, _ in found]


class _Chunk:
    """A fixed block of float32 rows (a :class:`~lethe._core.vector.Home`): where the vectors of
    :class:`NumpyRows` live, one row each.  A vector holds its chunk, not the whole index: one
    kept after its memory is gone keeps one chunk alive, not all of them."""

    __slots__ = ("__weakref__", "base", "data", "free", "owner")

    def __init__(self, base: int, data: Any, free: list[int], owner: weakref.ref[Any] | None) -> None:
        self.base, self.data, self.free, self.owner = base, data, free, owner

    def view(self, row: int) -> memoryview:
        return memoryview(self.data[row])

    def release(self, row: int) -> None:
        # (called as a vector is collected, in any thread: list.append is atomic)
        self.free.append(self.base + row)

    def abandoned(self) -> bool:
        return self.owner is not None and self.owner() is None


class NumpyRows:
    """Vectors by row, their numbers kept once: in fixed-size float32 chunks, where each
    vector's own numbers move when it is first held (a vector another live index holds is
    copied).  Similarities come from one matrix-vector product per chunk, approximate within
    :attr:`error`."""

    def __init__(self, dimensions: int, owner: object = None) -> None:
        assert _np is not None
        self.dimensions = dimensions
        self.count = 0
        # The index these rows belong to: once it is gone, the vectors living here move to the
        # next index that holds them (so a memory's vectors are not kept twice after configure).
        self._owner = None if owner is None else weakref.ref(owner)
        self._chunks: list[_Chunk] = []  # CHUNK rows each, never moved (vectors view them)
        self._norms: list[Any] = []  # each slot's length (float64)
        self._rows: list[Any] = []  # the row holding each slot, or -1 (int64)
        self._free: list[int] = []  # slots no vector lives in
        self._end = 0  # slots ever handed out
        self._slot: list[int] = []  # row -> slot (-1: none)
        self._copies: set[int] = set()  # slots holding copies (their vector lives elsewhere)
        # Per chunk, what a query needs of it, kept until a row of it changes: the slots held
        # by a row, their rows, and one over their lengths (None: to compute again).
        self._held: list[tuple[Any, Any, Any] | None] = []
        # Each similarity is within this of the exact one: a float32 dot product of d terms errs
        # by at most about d * 2**-24 of |q||v| (Higham, "Accuracy and Stability of Numerical
        # Algorithms", 3.1), the rounding of the unit query to float32 by 2**-24 more; twice
        # that, for margin.
        self.error = (dimensions + 8) * 2.0**-23

    def _holds(self, home: object) -> bool:
        """Whether ``home`` is one of these rows' chunks."""
        return isinstance(home, _Chunk) and home.free is self._free

    def _place(self, numbers: Any, norm: float) -> tuple[_Chunk, int]:
        """A free slot holding ``numbers`` (of length ``norm``): its chunk and row there."""
        slot = self._free.pop() if self._free else self._grow()
        chunk, at = divmod(slot, CHUNK)
        self._chunks[chunk].data[at] = _np.frombuffer(numbers, dtype=_np.float32)
        self._norms[chunk][at] = norm
        return self._chunks[chunk], at

    def _grow(self) -> int:
        slot = self._end
        if slot == len(self._chunks) * CHUNK:
            data = _np.zeros((CHUNK, self.dimensions), dtype=_np.float32)
            self._chunks.append(_Chunk(slot, data, self._free, self._owner))
            self._norms.append(_np.zeros(CHUNK, dtype=_np.float64))
            self._rows.append(_np.full(CHUNK, -1, dtype=_np.int64))
            self._held.append(None)
        self._end += 1
        return slot

    def set(self, row: int, v: Vector) -> None:
        home, at = home_of(v)
        if not self._holds(home) and (home is None or home.abandoned()):
            home, at = move(v, lambda numbers: self._place(numbers, v.norm))
        slot = home.base + at if isinstance(home, _Chunk) and self._holds(home) else -1
        if slot < 0 or self._rows[slot // CHUNK][slot % CHUNK] >= 0:
            # Its numbers live in another index still in use, or another row here holds the
            # same vector (one Vector put under two keys): a copy of its own for this row.
            chunk, at = self._place(numbers_of(v), v.norm)
            slot = chunk.base + at
            self._copies.add(slot)
        if row >= len(self._slot):
            self._slot.extend([-1] * (row + 1 - len(self._slot)))
        self._slot[row] = slot
        self._rows[slot // CHUNK][slot % CHUNK] = row
        self._held[slot // CHUNK] = None
        self.count += 1

    def clear(self, row: int) -> None:
        slot = self._slot[row] if row < len(self._slot) else -1
        if slot < 0:
            return
        self._slot[row] = -1
        self._rows[slot // CHUNK][slot % CHUNK] = -1
        self._held[slot // CHUNK] = None
        self.count -= 1
        if slot in self._copies:  # (a vector living here frees its slot when it is collected)
            self._copies.discard(slot)
            self._free.append(slot)

    def _held_in(self, i: int) -> tuple[Any, Any, Any]:
        """Chunk ``i``'s slots held by a row, their rows, and one over their lengths (kept); an
        infinity for a vector shorter than :data:`SHORT`."""
        rows = self._rows[i]
        mine = _np.flatnonzero(rows >= 0)
        norms = self._norms[i][mine]
        inverse = _np.divide(1.0, norms, out=_np.full(len(mine), _np.inf), where=norms >= SHORT)
        held = self._held[i] = (mine, rows[mine], inverse)
        return held

    def cosines(self, vectors: Sequence[Vector | None], query: array[float], norm: float) -> list[float | None]:
        """The exact similarity of ``query`` with each of ``vectors`` (None for None), in double
        precision: each row's products summed pairwise (numpy's sum), over the two lengths."""
        present = [v for v in vectors if v is not None]
        if not present:
            return [None] * len(vectors)
        raw = _np.array([_np.frombuffer(numbers_of(v), dtype=_np.float32) for v in present], dtype=_np.float64)
        dots = (raw * _np.frombuffer(query)).sum(axis=1)
        norms = _np.fromiter((v.norm for v in present), dtype=_np.float64, count=len(present))
        cos = _np.clip(dots / (norms * norm), -1.0, 1.0).tolist()
        it = iter(cos)
        return [None if v is None else next(it) for v in vectors]

    def ranked(
        self, query: array[float], norm: float, rows: int, hidden: frozenset[int]
    ) -> Iterator[tuple[list[int], list[float]]]:
        """Every row holding a vector, but ``hidden``, with its approximate similarity to
        ``query``, best first, in blocks (the first :data:`FIRST_BLOCK` rows, then twice as
        many each time), each block found by ``argpartition`` of what is left."""
        # The query as a unit vector before it is rounded to float32: no float64 query overflows.
        q = (_np.frombuffer(query, dtype=_np.float64) / norm).astype(_np.float32)
        found, values = [], []
        with _np.errstate(over="ignore", invalid="ignore"):
            for i, chunk in enumerate(self._chunks):
                held = self._held[i] or self._held_in(i)
                mine, rows_there, inverse = held
                if not len(mine):
                    continue
                end = int(mine[-1]) + 1
                # Every slot's product up to the last held (a contiguous block: no copy), then
                # those of this index's rows, over their lengths.
                values.append((chunk.data[:end] @ q)[mine] * inverse)
                found.append(rows_there)
        if not found:
            return
        left = _np.concatenate(found)
        sims = _np.concatenate(values)
        # A vector so long that its float32 products overflow, or so short that they underflow
        # (its inverse length infinite): first, to be computed exactly.
        sims[~_np.isfinite(sims)] = _np.inf
        if hidden:
            keep = ~_np.isin(left, _np.fromiter(hidden, dtype=_np.int64, count=len(hidden)))
            left, sims = left[keep], sims[keep]
        size = FIRST_BLOCK
        while len(left):
            if len(left) > size:
                cut = _np.argpartition(-sims, size)
                first, rest = cut[:size], cut[size:]
            else:
                first, rest = _np.arange(len(left)), _np.arange(0)
            order = first[_np.argsort(-sims[first], kind="stable")]
            yield left[order].tolist(), sims[order].tolist()
            left, sims = left[rest], sims[rest]
            size *= 2


def rows_for(dimensions: int, owner: object = None) -> PythonRows | NumpyRows:
    """Empty rows of vectors of ``dimensions`` for the index ``owner``, on numpy when it is there."""
    return NumpyRows(dimensions, owner) if use_numpy and _np is not None else PythonRows(dimensions)
