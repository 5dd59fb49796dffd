"""The vectors of a search index, and the cosine similarity of a query with them.

Two backends hold them, row by row (a row is one entry's place in the index),
and answer the same two questions: every row's similarity best first
(:meth:`ranked`, in blocks), and the exact similarity of given vectors
(:meth:`cosines`).

* :class:`NumpyRows` (the ``vector`` extra): the rows as unit vectors in one
  float32 matrix, so every row's similarity is one matrix-vector product, each
  within :attr:`NumpyRows.error` of the exact one; the best rows are found by
  ``argpartition`` a block at a time, not by sorting them all.  Exact
  similarities are computed in double precision from the entries' own float32
  numbers (numpy's pairwise sum of the products, row by row).
* :class:`PythonRows` (no dependency): each similarity computed exactly (a
  correctly rounded sum, ``math.fsum``), one row at a time.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence

from lethe._core.vector import Vector, cosine, data_of

try:  # the vector extra: a query over n rows is one matrix-vector product, not n loops
    import numpy as _np
except ImportError:  # pragma: no cover - exercised by the tests' pure-Python mode
    _np = None  # type: ignore[assignment]

#: Whether new indexes use numpy (the tests switch it off to run the pure-Python rows).
use_numpy = _np is not None
#: Rows the first block of a ranking holds (later blocks double).
FIRST_BLOCK = 512


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


class NumpyRows:
    """Vectors by row as unit vectors in one float32 matrix (grown by doubling); similarities
    approximate, within :attr:`error`."""

    def __init__(self, dimensions: int) -> None:
        assert _np is not None
        self.dimensions = dimensions
        self.count = 0
        self._matrix = _np.zeros((16, dimensions), dtype=_np.float32)
        self._held = _np.zeros(16, dtype=bool)
        # Each similarity is within this of the exact one: a float32 dot product of d terms errs
        # by at most about d * 2**-24 of |q||v| (Higham, "Accuracy and Stability of Numerical
        # Algorithms", 3.1), the rounding of the two unit vectors to float32 by 2**-24 each
        # more; twice that, for margin.
        self.error = (dimensions + 8) * 2.0**-23

    def set(self, row: int, v: Vector) -> None:
        matrix = self._matrix
        if row >= len(matrix):
            size = max(row + 1, 2 * len(matrix))
            grown = _np.zeros((size, self.dimensions), dtype=_np.float32)
            grown[: len(matrix)] = matrix
            held = _np.zeros(size, dtype=bool)
            held[: len(matrix)] = self._held
            self._matrix, self._held, matrix = grown, held, grown
        if not self._held[row]:
            self.count += 1
            self._held[row] = True
        # A unit vector: no float32 product overflows, and a similarity is one dot product.
        matrix[row] = _np.frombuffer(data_of(v), dtype=_np.float32).astype(_np.float64) / v.norm

    def clear(self, row: int) -> None:
        if row < len(self._held) and self._held[row]:
            self._held[row] = False
            self.count -= 1

    def cosines(self, vectors: Sequence[Vector | None], query: array[float], norm: float) -> list[float | None]:
        """The exact similarity of ``query`` with each of ``vectors`` (None for None), in double
        precision: each row's products summed pairwise (numpy's sum), over the two lengths."""
        present = [v for v in vectors if v is not None]
        if not present:
            return [None] * len(vectors)
        raw = _np.frombuffer(b"".join([data_of(v).tobytes() for v in present]), dtype=_np.float32)
        dots = (raw.reshape(len(present), self.dimensions).astype(_np.float64) * _np.frombuffer(query)).sum(axis=1)
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
        sims = (self._matrix[:rows] @ q).astype(_np.float64)
        left = _np.flatnonzero(self._held[:rows])
        if hidden:
            left = left[~_np.isin(left, _np.fromiter(hidden, dtype=_np.int64, count=len(hidden)))]
        values = sims[left]
        size = FIRST_BLOCK
        while len(left):
            if len(left) > size:
                cut = _np.argpartition(-values, size)
                first, rest = cut[:size], cut[size:]
            else:
                first, rest = _np.arange(len(left)), _np.arange(0)
            order = first[_np.argsort(-values[first], kind="stable")]
            yield left[order].tolist(), values[order].tolist()
            left, values = left[rest], values[rest]
            size *= 2


def rows_for(dimensions: int) -> PythonRows | NumpyRows:
    """Empty rows of vectors of ``dimensions``, on numpy when it is there."""
    return NumpyRows(dimensions) if use_numpy and _np is not None else PythonRows(dimensions)
