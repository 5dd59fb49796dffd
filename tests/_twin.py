"""A brute-force twin of ``Memory.search``: every live entry sorted by the formula of docs/search.md.

Its BM25 and cosine are written again from the formulas, not taken from lethe;
the tests compare the memory's answer with it exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from lethe import Entry, Memory
from lethe.search import tokenize

K1, B = 0.9, 0.4
WORDS = ["tea", "coffee", "green", "vim", "emacs", "rain", "sun", "ada", "bob", "the", "likes"]


def _text(e: Entry[Any, Any]) -> str | None:
    return e.text if e.text is not None else e.value if isinstance(e.value, str) else None


def _bm25(live: list[Entry[Any, Any]], query: str) -> dict[Any, float]:
    docs = {e.key: tokenize(t) for e in live if (t := _text(e)) is not None}
    if not docs:
        return {}
    n, avg = len(docs), sum(map(len, docs.values())) / len(docs)
    scores: dict[Any, float] = {}
    for term in dict.fromkeys(tokenize(query)):
        df = sum(1 for words in docs.values() if term in words)
        if not df:
            continue
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for key, words in docs.items():
            tf = words.count(term)
            if tf:
                norm = K1 * (1.0 - B + B * len(words) / avg)
                scores[key] = scores.get(key, 0.0) + idf * (tf * (K1 + 1.0)) / (tf + norm)
    top = max(scores.values(), default=0.0)
    return {key: s / top for key, s in scores.items()}


def _cosine(q: Sequence[float], v: Sequence[float]) -> float:
    qq = [float(x) for x in q]
    c = math.fsum(a * b for a, b in zip(qq, v)) / (math.hypot(*qq) * math.hypot(*v))
    return max(-1.0, min(1.0, c))


def brute(
    mem: Memory[Any, Any],
    query: str | Sequence[float],
    k: int = 10,
    decay_weight: float = 0.25,
    min_relevance: float = 0.0,
    lexical_weight: float | None = None,
    embed: Any = None,
) -> list[tuple[Any, float]]:
    live = list(mem)
    scores = mem.score_map()
    relevance: dict[Any, float] = {}
    if isinstance(query, str) and (lexical_weight is not None or embed is None):
        lw = 1.0 if lexical_weight is None else lexical_weight
        lexical = _bm25(live, query) if lw > 0 else {}
        qv = embed([query])[0] if lw < 1 else None
        for e in live:
            if lw >= 1.0:
                if e.key in lexical:
                    relevance[e.key] = lexical[e.key]
                continue
            if e.key in lexical or e.vector is not None:
                cos = 0.0 if e.vector is None or qv is None else _cosine(qv, e.vector)
                relevance[e.key] = lw * lexical.get(e.key, 0.0) + (1.0 - lw) * cos
    else:
        qv = embed([query])[0] if isinstance(query, str) else query
        relevance = {e.key: _cosine(qv, e.vector) for e in live if e.vector is not None}
    ranked = [
        (e.seq, e.key, r + decay_weight * scores[e.key])
        for e in live
        if (r := relevance.get(e.key)) is not None and r >= min_relevance
    ]
    ranked.sort(key=lambda t: (-t[2], t[0]))
    return [(key, n) for _, key, n in ranked[:k]]


def answer(mem: Memory[Any, Any], *args: Any, **kwargs: Any) -> list[tuple[Any, float]]:
    found = mem.search(*args, **kwargs)
    for e, _ in found:
        assert mem.peek(e.key) is e  # a hit is the entry peek gives
    return [(e.key, n) for e, n in found]


def embed3(texts: list[str]) -> list[list[float]]:
    """A deterministic embedder: how often each of three word groups occurs, plus one."""
    groups = [{"tea", "coffee", "green"}, {"vim", "emacs"}, {"rain", "sun"}]
    out = []
    for text in texts:
        words = tokenize(text)
        out.append([1.0 + sum(w in g for w in words) for g in groups])
    return out
