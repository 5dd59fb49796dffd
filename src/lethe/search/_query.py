"""One search, exact: relevance blended with decay, the best ``k`` of every live entry.

A hit's number is ``relevance + decay_weight * score``.  The answer is found
as the threshold algorithm of Fagin, Lotem and Naor ("Optimal aggregation
algorithms for middleware", 2003) finds a top k of a sum, walking one of two
sorted lists: the entries by score (the memory's ranking yields them best
first, lazily, when its decay function has an index) or the entries by
relevance (from the index: exact for texts, within a known error for numpy's
float32 products).  The walk computes each entry's exact relevance and score,
and stops as soon as no entry it has not seen could beat the ``k``-th hit:

* by score, when ``decay_weight`` is large enough for decay to decide
  (:data:`DECAY_LEADS`) and the ranking yields entries best score first: an
  unseen entry's number is at most the highest relevance there is plus
  ``decay_weight`` times the score reached;
* else by relevance: at most the relevance reached (plus the error) plus
  ``decay_weight`` times the highest score there is (1.0).

So the answer is the brute-force sort of every live entry by the same number,
ties in put order, whatever ``decay_weight`` is, having scored few entries
beyond ``k`` when one of the two dominates.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, NamedTuple

from lethe._core.entry import Entry
from lethe.search._ann import pool_for, require
from lethe.search._index import Index
from lethe.search._text import tokenize

Hit = tuple[Entry[Any, Any], float]

#: The ``decay_weight`` from which the walk goes by score first: a whole point of score then
#: outweighs any difference of relevance (cosine spans 2, scaled BM25 1).
DECAY_LEADS = 2.0
#: Entries taken from the ranking at a time (their relevance is computed together).
_BATCH = 32


class Query(NamedTuple):
    """A search's question, checked: its terms or its vector (or both: a hybrid), and how
    relevance and decay are weighed."""

    #: The distinct terms of a text query, in order (None: no lexical relevance).
    terms: list[str] | None
    #: A query vector and its length (None: no vector relevance).
    vector: tuple[array[float], float] | None
    #: The share of lexical relevance in a hybrid (1.0: lexical only, 0.0: vectors only).
    lexical_weight: float
    k: int
    decay_weight: float
    min_relevance: float
    #: Whether vector candidates come from the HNSW graph (the ann extra) rather than from
    #: every vector: faster, approximate.
    approximate: bool = False


def terms_of(text: str) -> list[str]:
    """The distinct terms of a query text, in order."""
    return list(dict.fromkeys(tokenize(text)))


class _Relevance:
    """A query's relevance to the rows of an index: exact for any rows, and every candidate
    row best first (approximately, within :attr:`error`)."""

    def __init__(self, index: Index, query: Query, hidden: frozenset[int]) -> None:
        self.index, self.query, self.hidden = index, query, hidden
        lw = query.lexical_weight
        self.uses_vector = query.vector is not None and lw < 1.0 and index.vectors is not None
        self.uses_text = query.terms is not None and lw > 0.0
        self.lexical: dict[int, float] = {}
        if self.uses_text:
            assert query.terms is not None
            self.lexical = _scaled(index.bm25(query.terms, hidden))
        rows = index.vectors
        error = 0.0
        if self.uses_vector and rows is not None:
            # (the graph's similarities are float32 ones, as numpy's are)
            error = (rows.dimensions + 8) * 2.0**-23 if query.approximate else rows.error
        self.error = error * (1.0 - lw)

    def exact(self, rows: Sequence[int]) -> list[float | None]:
        """Each row's relevance (None: not a candidate: no vector, no shared term)."""
        q, lw = self.query, self.query.lexical_weight
        if not self.uses_vector:
            get = self.lexical.get
            return [get(row) for row in rows]  # (row -1: no row, never a candidate)
        assert q.vector is not None
        vectors, by_row = self.index.vectors, self.index.vectors_by_row
        assert vectors is not None
        cos = vectors.cosines([None if row < 0 else by_row[row] for row in rows], *q.vector)
        if not self.uses_text:
            return cos
        lexical = self.lexical
        return [
            None if c is None and row not in lexical else lw * lexical.get(row, 0.0) + (1.0 - lw) * (c or 0.0)
            for row, c in zip(rows, cos)
        ]

    def ranked(self) -> Iterator[tuple[Sequence[int], Sequence[float]]]:
        """Every candidate row not hidden, best first, in blocks ``(rows, approximate relevance)``."""
        q, lw, index = self.query, self.query.lexical_weight, self.index
        if not self.uses_vector:
            yield from _sorted_blocks(self.lexical.items(), self.hidden)
            return
        assert q.vector is not None
        assert index.vectors is not None
        if q.approximate:
            require()  # (asked for whatever the memory's size, so a small one does not hide it)
        # A graph can only lose candidates where a search takes every vector held as one.
        if q.approximate and index.vectors.count > pool_for(q.k):
            similar: Iterable[tuple[Sequence[int], Sequence[float]]] = _widening(index, q, self.hidden)
        else:
            similar = index.vectors.ranked(*q.vector, index.size, self.hidden)
        if not self.uses_text:
            yield from similar
            return
        # A hybrid: the two relevances added row by row (the lexical part exact).
        blend: dict[int, float] = {}
        for rows, sims in similar:
            blend.update(zip(rows, ((1.0 - lw) * s for s in sims)))
        for row, s in self.lexical.items():
            blend[row] = blend.get(row, 0.0) + lw * s
        yield from _sorted_blocks(blend.items(), self.hidden)


def _widening(index: Index, query: Query, hidden: frozenset[int]) -> Iterator[tuple[list[int], list[float]]]:
    """The graph's nearest rows, best first, in blocks: each time the walk needs more, a search
    for twice as many, of which the rows not given before (so the walk's stopping test, not a
    fixed count, decides how far the graph is searched; the graph's order is itself approximate)."""
    assert query.vector is not None
    graph, count = index.graph(), pool_for(query.k)
    given: set[int] = set()
    while True:
        rows, sims = graph.nearest(*query.vector, count, hidden)
        fresh = [(r, s) for r, s in zip(rows, sims) if r not in given]
        if not fresh:
            return
        given.update(r for r, _ in fresh)
        fresh.sort(key=lambda p: -p[1])
        yield [r for r, _ in fresh], [s for _, s in fresh]
        if len(rows) < count:
            return  # the graph holds no more
        count *= 2


def _sorted_blocks(
    items: Iterable[tuple[int, float]], hidden: frozenset[int]
) -> Iterator[tuple[list[int], list[float]]]:
    """``(row, relevance)`` pairs best first, in blocks: the first few hundred found without a sort of all."""
    pairs = [p for p in items if p[0] not in hidden] if hidden else list(items)
    first = heapq.nlargest(256, pairs, key=lambda p: p[1])
    yield [row for row, _ in first], [s for _, s in first]
    if len(pairs) > len(first):
        taken = {row for row, _ in first}
        rest = sorted((p for p in pairs if p[0] not in taken), key=lambda p: -p[1])
        yield [row for row, _ in rest], [s for _, s in rest]


def _scaled(scores: dict[int, float]) -> dict[int, float]:
    """BM25 scores over the best one: 0..1, the best match 1.0."""
    if not scores:
        return scores
    top = max(scores.values())
    return {row: s / top for row, s in scores.items()}


class _Best:
    """The best ``k`` hits so far: a heap of ``(number, -seq, entry)``, its worst first."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.heap: list[tuple[float, int, Entry[Any, Any]]] = []

    def beaten_by_none_up_to(self, bound: float) -> bool:
        """Whether no entry of number ``bound`` or less could join (strictly: an equal one put
        earlier would win its tie)."""
        return len(self.heap) == self.k and bound < self.heap[0][0]

    def offer(self, e: Entry[Any, Any], number: float) -> None:
        item = (number, -e.seq, e)
        heap = self.heap
        if len(heap) < self.k:
            heapq.heappush(heap, item)
        elif item[:2] > heap[0][:2]:
            heapq.heapreplace(heap, item)

    def hits(self) -> list[Hit]:
        ordered = sorted(self.heap, key=lambda t: (-t[0], -t[1]))
        return [(e, v) for v, _, e in ordered]


def hits(
    index: Index,
    query: Query,
    score: Callable[[Entry[Any, Any]], float],
    hidden: frozenset[int],
    by_score: Callable[[], Iterator[Entry[Any, Any]]] | None = None,
) -> list[Hit]:
    """The best ``query.k`` live entries of the map ``index`` mirrors, with their numbers, best
    first (ties in put order).  ``score(entry)`` is an entry's decay score now; ``hidden`` are
    the rows of the entries past their deadline now; ``by_score()``, when the ranking yields
    them lazily, the live entries best score first."""
    relevance = _Relevance(index, query, hidden)
    w, floor = query.decay_weight, query.min_relevance
    best = _Best(query.k)
    if by_score is not None and w >= DECAY_LEADS:
        top_relevance = 1.0 + relevance.error
        row_of, leading = index.row_of, by_score()
        while True:
            batch = list(islice(leading, _BATCH))
            if not batch:
                return best.hits()  # every live entry seen
            scores = [score(e) for e in batch]
            places = [row_of(e.key) for e in batch]
            exact = relevance.exact([-1 if place is None else place for place in places])
            for held, s, place, r in zip(batch, scores, places, exact):
                if best.beaten_by_none_up_to(top_relevance + w * s):
                    return best.hits()  # best score first: no entry not yet seen can be a hit
                if place is not None and r is not None and r >= floor:
                    best.offer(held, r + w * s)
    # By relevance: an entry not yet seen scores at most 1.0.
    error, entry = relevance.error, index.entry
    reach = error + w
    for rows, approx in relevance.ranked():
        i, n, done = 0, len(rows), False
        while i < n and not done:
            chunk: list[int] = []
            while i < n and len(chunk) < _BATCH:
                a = approx[i]
                if a + error < floor or best.beaten_by_none_up_to(a + reach):
                    done = True  # best first: neither this candidate nor any after it can be a hit
                    break
                chunk.append(rows[i])
                i += 1
            for row, r in zip(chunk, relevance.exact(chunk)):
                if r is None or r < floor or best.beaten_by_none_up_to(r + w):
                    continue
                found = entry[row]
                assert found is not None
                best.offer(found, r + w * score(found))
        if done:
            break
    return best.hits()
