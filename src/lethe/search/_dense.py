"""The vectors of a search index, and the cosine similarity of a query with each of them.

Two backends hold them, row by row (a row is one entry's place in the index):

* :class:`NumpyRows` (the ``vector`` extra): one float32 matrix; a query costs one
  matrix-vector product.  Its similarities are approximate (float32 arithmetic), each
  within :attr:`NumpyRows.error` of the exact one, which the search computes again for
  every entry it ranks.
* :class:`PythonRows` (no dependency): each similarity computed exactly, one row at a time.

Either answers :meth:`similarities` with rows and their similarities, best first.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from lethe._core.vector import Vector, cosine, data_of

try:  # the vector extra: a query over n rows is one matrix-vector product, not n loops
    import numpy as _np
except ImportError:  # pragma: no cover - exercised by the tests' pure-Python mode
    _np = None  # type: ignore[assignment]

#: Whether numpy is used (the tests switch it off to run the pure-Python rows).
use_numpy = _np is not None


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

    def similarities(self, query: array[float], norm: float, rows: int) -> tuple[Sequence[int], Sequence[float]]:
        """Every row holding a vector with its cosine similarity to ``query``, best first."""
        found = [(cosine(query, norm, v), row) for row, v in enumerate(self._rows[:rows]) if v is not None]
        found.sort(key=lambda p: (-p[0], p[1]))
        return [row for _, row in found], [s for s, _ in found]


class NumpyRows:
    """Vectors by row in one float32 matrix (grown by doubling); similarities approximate."""

    def __init__(self, dimensions: int) -> None:
        assert _np is not None
        self.dimensions = dimensions
        self.count = 0
        self._matrix = _np.zeros((16, dimensions), dtype=_np.float32)
        self._norms = _np.zeros(16, dtype=_np.float64)  # 0: no vector in the row
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
            norms = _np.zeros(size, dtype=_np.float64)
            norms[: len(matrix)] = self._norms
            self._matrix, self._norms, matrix = grown, norms, grown
        if self._norms[row] == 0.0:
            self.count += 1
        # Held as a unit vector: no float32 product overflows, and a similarity is one dot product.
        matrix[row] = _np.frombuffer(data_of(v), dtype=_np.float32).astype(_np.float64) / v.norm
        self._norms[row] = v.norm

    def clear(self, row: int) -> None:
        if row < len(self._norms) and self._norms[row] != 0.0:
            self._norms[row] = 0.0
            self.count -= 1

    def similarities(self, query: array[float], norm: float, rows: int) -> tuple[Sequence[int], Sequence[float]]:
        """Every row holding a vector with its approximate similarity to ``query``, best first."""
        norms = self._norms[:rows]
        # The query as a unit vector before it is rounded to float32: no float64 query overflows.
        q = (_np.frombuffer(query, dtype=_np.float64) / norm).astype(_np.float32)
        sims = (self._matrix[:rows] @ q).astype(_np.float64)
        held = _np.flatnonzero(norms)
        sims = sims[held]
        order = _np.argsort(-sims, kind="stable")
        return held[order].tolist(), sims[order].tolist()


def rows_for(dimensions: int) -> PythonRows | NumpyRows:
    """Empty rows of vectors of ``dimensions``, on numpy when it is there."""
    return NumpyRows(dimensions) if use_numpy and _np is not None else PythonRows(dimensions)
