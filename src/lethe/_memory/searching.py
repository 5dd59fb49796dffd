"""A memory's searches: the questions checked, texts embedded, and the entries a write gives
a text or a vector checked against the memory's.

``Memory.search`` and ``Memory.recall`` call :func:`search` and :func:`recall`;
every write that takes ``text`` and ``vector`` (``put``, ``put_many``,
``update``) calls :func:`content` first, so an ``embed_fn`` that fails, or a vector
of another dimension, changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lethe._core import expiry as _expiry
from lethe._core.entry import checked_text, rehearsed
from lethe._core.validate import flag, integer, number
from lethe._core.vector import Vector, query_vector, vector
from lethe._memory.reads import Moment, clock
from lethe._memory.version import M, Version, closed, no_awaitable, opened
from lethe.ranking import Scan
from lethe.search._index import Index
from lethe.search._query import Hit, Query, hits, terms_of

#: What a write stores beside a value for search: ``(text, vector)``; None when neither.
Content = tuple[str | None, Vector | None] | None


def index_of(mem: Version[Any, Any]) -> Index:
    """The search index ``mem`` shares with the versions of its configuration, mirroring
    ``mem`` (call with its lock held)."""
    index: Index = mem._config.index
    index.caught_up(mem._entries)
    return index


def dimensions(mem: Version[Any, Any]) -> int | None:
    """The dimension of ``mem``'s vectors; None when it holds none.  O(1)."""
    held, count = mem._vectors
    return held if count else None


def embedded(mem: Version[Any, Any], texts: list[str]) -> list[Vector]:
    """``embed_fn(texts)``, one vector per text, checked (naming ``embed_fn``).

    Raises:
        TypeError, ValueError: it returned an awaitable, not one vector per text, or a
            vector that is not one (empty, zero, NaN, of mixed dimensions).
        Exception: whatever ``embed_fn`` raised, as it is.
    """
    fn = mem._config.embed_fn
    out = fn(texts)
    no_awaitable(out, "embed_fn")
    if isinstance(out, (str, bytes)) or not hasattr(out, "__len__") or not hasattr(out, "__getitem__"):
        raise TypeError(f"embed_fn must return a sequence of vectors, got {type(out).__name__}")
    if len(out) != len(texts):
        raise ValueError(f"embed_fn returned {len(out)} vectors for {len(texts)} texts; one per text")
    got = [vector(out[i], f"embed_fn(...)[{i}]") for i in range(len(texts))]
    for i, v in enumerate(got[1:], 1):
        if len(v) != len(got[0]):
            raise ValueError(f"embed_fn returned vectors of {len(got[0])} and {len(v)} dimensions (item {i})")
    return got


def content(
    mem: Version[Any, Any], values: Sequence[Any], texts: Sequence[Any], vectors: Sequence[Any], many: bool = False
) -> list[Content]:
    """What entries with ``values``, given ``texts`` and ``vectors`` (one each, None for none),
    store for search: each vector checked, or made by ``embed_fn`` from the entry's
    searchable text (its ``text``, else its value when a str), one call for all.

    Raises:
        TypeError, ValueError: a text that is not a str, a vector that is not one, vectors of
            another dimension than each other's or the memory's (naming ``text`` and ``vector``,
            or, ``many``, ``texts[i]`` and ``vectors[i]``), or a bad ``embed_fn`` result.
    """

    def at(i: int) -> str:
        return f"s[{i}]" if many else ""

    checked_texts = [checked_text(t, f"text{at(i)}") for i, t in enumerate(texts)]
    checked: list[Vector | None] = [None if v is None else vector(v, f"vector{at(i)}") for i, v in enumerate(vectors)]
    if mem._config.embed_fn is not None:
        wanted = [
            i
            for i, (v, t, value) in enumerate(zip(checked, checked_texts, values))
            if v is None and (t is not None or isinstance(value, str))
        ]
        if wanted:
            made = embedded(mem, [values[i] if (t := checked_texts[i]) is None else t for i in wanted])
            for i, made_vector in zip(wanted, made):
                checked[i] = made_vector
    given = [v for v in checked if v is not None]
    if given:
        dims = dimensions(mem) or len(given[0])
        for i, one in enumerate(checked):
            if one is not None and len(one) != dims:
                raise ValueError(
                    f"vector{at(i)} has {len(one)} dimensions; this memory's vectors have {dims}"
                    + ("" if vectors[i] is not None else " (made by embed_fn)")
                )
    return [None if t is None and v is None else (t, v) for t, v in zip(checked_texts, checked)]


def per_pair(given: Sequence[Any] | None, n: int, name: str) -> Sequence[Any]:
    """``given`` (``texts`` or ``vectors`` of ``put_many``), one per pair; None: None for each.

    Raises:
        TypeError, ValueError: not a sequence of ``n`` items (naming ``name``).
    """
    if given is None:
        return [None] * n
    # (a mapping or a set has no order of pairs: it would be read by its keys, in its own order)
    if isinstance(given, (str, bytes, Mapping)) or not hasattr(given, "__len__") or not hasattr(given, "__getitem__"):
        raise TypeError(f"{name} must be a sequence with one item per pair, got {type(given).__name__}")
    if len(given) != n:
        raise ValueError(f"{name} has {len(given)} items for {n} pairs; one per pair (None for none)")
    return list(given)


def query_of(mem: Version[Any, Any], query: object, k: object, options: tuple[object, ...]) -> Query:
    """:meth:`Memory.search`'s arguments (``options``: ``decay_weight``, ``min_relevance``,
    ``lexical_weight`` and ``approximate``), checked, the query embedded when it must be.

    Raises:
        TypeError, ValueError: a bad argument (named).
    """
    decay_weight, min_relevance, lexical_weight, approximate = options
    k = integer(k, "k", low=1)
    ann = flag(approximate, "approximate")
    w = number(decay_weight, "decay_weight", low=0)
    floor = number(min_relevance, "min_relevance")
    lw = None if lexical_weight is None else number(lexical_weight, "lexical_weight", low=0, high=1)
    embed = mem._config.embed_fn
    if isinstance(query, str):
        lexical = 1.0 if lw is None and embed is None else lw if lw is not None else 0.0
        if lexical < 1.0 and embed is None:
            raise ValueError(
                "lexical_weight: below 1 a text query needs embed_fn (Memory(embed_fn=...)) to compare vectors"
            )
        terms = terms_of(query) if lexical > 0.0 else None
        vec = None
        if lexical < 1.0:
            made = embedded(mem, [query])[0]
            dims = dimensions(mem)
            if dims is not None and len(made) != dims:
                raise ValueError(
                    f"query has {len(made)} dimensions; this memory's vectors have {dims} (made by embed_fn)"
                )
            vec = query_vector(made)
        return Query(terms, vec, lexical, k=k, decay_weight=w, min_relevance=floor, approximate=ann)
    if isinstance(query, (bytes, bytearray)) or not hasattr(query, "__len__"):
        raise TypeError(f"query must be a str or a sequence of numbers, got {type(query).__name__}")
    if lw not in (None, 0.0):
        raise ValueError("lexical_weight: a vector query has no text to match; pass a str query for a hybrid")
    return Query(None, query_vector(query, "query"), 0.0, k=k, decay_weight=w, min_relevance=floor, approximate=ann)


def search(mem: Version[Any, Any], query: Query, at: Moment | None = None) -> list[Hit]:
    """``query``'s hits in ``mem`` at the clock reading ``at`` (None: read now), best first.

    Raises:
        ValueError: the query vector's dimension is not the memory's.
    """
    index: Index = mem._config.index
    scorer = mem._config.scorer
    now, now_us = clock(mem) if at is None else at
    with index.lock:
        index = index_of(mem)
        dims = index.dimensions
        if query.vector is not None and dims is not None and len(query.vector[0]) != dims:
            raise ValueError(f"query has {len(query.vector[0])} dimensions; this memory's vectors have {dims}")
        due = _expiry.due(mem._deadlines, now_us) if mem._deadlines else ()
        rows = (index.row_of(key) for _, _, key in due if not mem._entries[key].pinned)
        hidden = frozenset(row for row in rows if row is not None)
        ranking = mem._ranking
        # The entries best score first, when the ranking yields them lazily (it has an index).
        by_score = None if isinstance(ranking, Scan) else lambda: ranking.ranked(mem._entries, scorer, now, now_us)
        return hits(index, query, lambda e: scorer.one(e, now, now_us), hidden, by_score)


def recall(mem: M, query: Query) -> tuple[M, list[Hit]]:
    """``mem`` with ``query``'s hits rehearsed (as ``get`` rehearses), in one version, and the
    hits as rehearsed, with the numbers that ranked them.  A write, hits or none: entries past
    their deadline are removed and reported."""
    at = clock(mem)
    found = search(mem, query, at)
    now, now_us = at
    hook = mem._config.scorer.rehearse
    edit, gone = opened(mem, at)
    out: list[Hit] = []
    for e, value in found:
        new = rehearsed(e, now, now_us, e.decay_state if hook is None else hook(e, now, now_us))
        edit.replace(e, new)
        out.append((new, value))
    return closed(mem, edit, gone, None), out
