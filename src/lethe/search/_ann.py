"""An approximate nearest-neighbour graph over an index's vectors: the ``ann`` extra (usearch).

``Memory.search(..., approximate=True)`` takes its vector candidates from an
HNSW graph (Malkov and Yashunin, "Efficient and robust approximate nearest
neighbor search using Hierarchical Navigable Small World graphs", 2018) kept by
usearch, instead of comparing the query with every vector: at a million
entries that is the difference between a full matrix-vector product and a few
thousand distance computations.  Every hit's number is still computed exactly;
what is approximate is the candidates: an entry the graph does not return is
never a hit.  The graph is built the first time an approximate search asks for
it and kept in step with the index after that (entries added, removed, replaced);
it is built anew once it has lost more nodes than it holds (usearch marks a removed
node, and a graph worn by many removals leaves some of its nodes unreachable), and
not used for a memory whose vectors a search takes all of as candidates anyway.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

from lethe._core.vector import Vector
from lethe._core.vector import numbers as numbers_of

#: Candidates an approximate search takes from the graph, at least (more for a larger k).
POOL = 128
#: How many candidates the graph's search keeps in view per candidate asked for (usearch's
#: ``expansion_search`` is set to this many times the pool).
_EXPANSION = 4


def _modules() -> tuple[Any, Any]:
    try:
        import numpy
        from usearch.index import Index as Graph
    except ImportError:
        raise ImportError("approximate=True needs usearch and numpy: pip install 'lethe-decay[ann]'") from None
    return numpy, Graph


def require() -> None:
    """Raise ImportError, saying what to install, unless the ``ann`` extra is installed."""
    _modules()


class Approximate:
    """An HNSW graph (usearch, cosine) over the vectors of an index's rows, keyed by row."""

    def __init__(self, dimensions: int) -> None:
        np, graph = _modules()
        self._np = np
        self.graph = graph(ndim=dimensions, metric="cos", dtype="f32", connectivity=16, expansion_add=128)
        self._pending: dict[int, Vector] = {}
        self._held = self._removed = 0  # nodes in the graph, and removed from it

    @property
    def worn(self) -> bool:
        """Whether more nodes were removed from the graph than it holds: time to build it anew."""
        return self._removed > max(self._held, POOL)

    def add(self, row: int, v: Vector) -> None:
        """Hold ``v`` at ``row`` (added to the graph at the next search, with the others)."""
        self._pending[row] = v

    def remove(self, row: int) -> None:
        """Hold nothing at ``row``."""
        if self._pending.pop(row, None) is None and row in self.graph:
            self.graph.remove(row)
            self._held -= 1
            self._removed += 1

    def _flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        np = self._np
        rows = np.fromiter(pending, dtype=np.uint64, count=len(pending))
        data = np.array([np.frombuffer(numbers_of(v), dtype=np.float32) for v in pending.values()])
        self.graph.add(rows, data)
        self._held += len(pending)
        pending.clear()

    def nearest(
        self, query: array[float], norm: float, count: int, hidden: frozenset[int]
    ) -> tuple[list[int], list[float]]:
        """About the ``count`` rows nearest ``query`` (but ``hidden``), best first, with their
        cosine similarity as the graph computes it (float32)."""
        self._flush()
        np = self._np
        size = len(self.graph)
        if not size:
            return [], []
        want = min(count + len(hidden), size)
        self.graph.expansion_search = max(64, _EXPANSION * want)
        q = (np.frombuffer(query, dtype=np.float64) / norm).astype(np.float32)
        found = self.graph.search(q, want)
        rows = [int(row) for row in found.keys]
        sims = [1.0 - float(d) for d in found.distances]
        pairs = [(r, s) for r, s in zip(rows, sims) if r not in hidden]
        return [r for r, _ in pairs], [s for _, s in pairs]


def pool_for(k: int) -> int:
    """How many candidates an approximate search of ``k`` hits takes."""
    return max(POOL, 32 * k)


def rows_and_vectors(by_row: Sequence[Vector | None]) -> list[tuple[int, Vector]]:
    """Every row holding a vector, with it."""
    return [(row, v) for row, v in enumerate(by_row) if v is not None]
