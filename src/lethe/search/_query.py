"""One search, exact: relevance blended with decay, the best ``k`` of every live entry.

A hit's number is ``relevance + decay_weight * score``.  The candidates come
from the index in order of relevance (exact, or approximate within a known
error for numpy's float32 products); the search walks them best first,
computes each one's exact relevance and its score, and stops at the first
candidate that could not beat the ``k``-th hit even with the highest score there
is (1.0) and the largest error: no entry it has not looked at can be in the
answer.  So the answer is the brute-force sort of every live entry by the same
formula, ties in put order, whatever ``decay_weight`` is; a small one looks at
few more than ``k`` entries.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from lethe._core.entry import Entry
from lethe._core.vector import cosine
from lethe.search._index import Index
from lethe.search._text import tokenize

#: The highest score an entry can have: the bound a walk stops on.
_TOP_SCORE = 1.0

Hit = tuple[Entry[Any, Any], float]
_NO_QUERY: array[float] = array("d")


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


def terms_of(text: str) -> list[str]:
    """The distinct terms of a query text, in order."""
    return list(dict.fromkeys(tokenize(text)))


def hits(index: Index, query: Query, score: Callable[[Entry[Any, Any]], float], hidden: frozenset[int]) -> list[Hit]:
    """The best ``query.k`` live entries of the map ``index`` mirrors, with their numbers, best
    first (ties in put order).  ``score(entry)`` is the entry's decay score now; ``hidden``
    are the rows of the entries past their deadline now, which are not there."""
    rows, approx, error = _candidates(index, query, hidden)
    if not rows:
        return []
    entry, lw, vectors, vector = index.entry, query.lexical_weight, index.vectors_by_row, query.vector
    hybrid = query.terms is not None and vector is not None and 0.0 < lw < 1.0
    # Lexical relevance and a vector's from rows that compute it exactly are the candidates' own.
    exact = not hybrid and not error
    lexical = _scaled(index.bm25(query.terms, hidden)) if hybrid and query.terms is not None else {}
    q, q_norm = vector if vector is not None else (_NO_QUERY, 1.0)
    k, w, floor = query.k, query.decay_weight, query.min_relevance
    reach = error + w * _TOP_SCORE
    best: list[tuple[float, int, Entry[Any, Any]]] = []
    for row, a in zip(rows, approx):
        if a + error < floor or (len(best) == k and a + reach < best[0][0]):
            break  # sorted: neither this candidate nor any after it can be a hit
        if row in hidden:
            continue
        e = entry[row]
        assert e is not None
        if exact:
            r = a
        elif hybrid:  # (one formula, whichever rows found the candidate)
            v = vectors[row]
            r = lw * lexical.get(row, 0.0) + (1.0 - lw) * (0.0 if v is None else cosine(q, q_norm, v))
        else:
            v = vectors[row]
            assert v is not None
            r = cosine(q, q_norm, v)
        if r < floor:
            continue
        item = (r + w * score(e), -e.seq, e)
        if len(best) < k:
            heapq.heappush(best, item)
        elif item[:2] > best[0][:2]:
            heapq.heapreplace(best, item)
    best.sort(key=lambda t: (-t[0], -t[1]))
    return [(e, v) for v, _, e in best]


def _scaled(scores: dict[int, float]) -> dict[int, float]:
    """BM25 scores over the best one: 0..1, the best match 1.0."""
    if not scores:
        return scores
    top = max(scores.values())
    return {row: s / top for row, s in scores.items()}


def _candidates(index: Index, query: Query, hidden: frozenset[int]) -> tuple[Sequence[int], Sequence[float], float]:
    """Rows that may be hits, with their relevance (approximate within the error returned),
    best first."""
    lw = query.lexical_weight
    if query.vector is None or (query.terms is not None and lw >= 1.0):  # lexical only
        assert query.terms is not None
        scaled = _scaled(index.bm25(query.terms, hidden))
        ranked = sorted(scaled.items(), key=lambda p: -p[1])
        return [row for row, _ in ranked], [s for _, s in ranked], 0.0
    rows_of = index.vectors
    if rows_of is None or not rows_of.count:
        vector_rows: Sequence[int] = []
        sims: Sequence[float] = []
        error = 0.0
    else:
        vector_rows, sims = rows_of.similarities(*query.vector, index.size)
        error = rows_of.error
    if query.terms is None or lw <= 0.0:  # vectors only
        return vector_rows, sims, error
    scaled = _scaled(index.bm25(query.terms, hidden))
    blend = {row: (1.0 - lw) * s for row, s in zip(vector_rows, sims)}
    for row, s in scaled.items():
        blend[row] = blend.get(row, 0.0) + lw * s
    ranked = sorted(blend.items(), key=lambda p: -p[1])
    return [row for row, _ in ranked], [s for _, s in ranked], (1.0 - lw) * error
