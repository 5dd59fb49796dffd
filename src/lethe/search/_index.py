"""A memory's search index: its texts' postings and its vectors, kept in step with one version.

Versions of a memory share one :class:`Index` (through their configuration).
The index mirrors the entry map of the version searched last; to answer for
another version it first catches up: it finds what differs between the two
maps (``PersistentMap.diff``, which skips the subtrees they share, so the cost is
that of the writes between them, not of the memory's size) and re-indexes only
entries whose text or vector changed (a rehearsal changes neither).  So no write
pays for search: a memory that is never searched never tokenizes a text, and
every version, old or new, answers from the same structures exactly as from its
own.  A lock keeps one catch-up and its query together.

Lexical relevance is BM25 (Robertson and Zaragoza 2009) with Lucene's idf,
``ln(1 + (N - n + 0.5) / (n + 0.5))``, over the postings ``term -> {row: tf}``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

from lethe._core.entry import Entry
from lethe._core.map import EMPTY, PersistentMap
from lethe._core.vector import Vector
from lethe.search._ann import Approximate, rows_and_vectors
from lethe.search._dense import NumpyRows, PythonRows, rows_for
from lethe.search._text import term_counts

#: BM25's term-frequency saturation and length normalization: Anserini's defaults (Lin et
#: al. 2016, "Toward Reproducible Baselines: The Open-Source IR Reproducibility Challenge";
#: Yang, Fang and Lin 2017), suited to short texts such as an agent's memories.
K1 = 0.9
B = 0.4


def searchable_text(e: Entry[Any, Any]) -> str | None:
    """What a lexical search matches in ``e``: its ``text``, else its value when that is a str."""
    text = e.text
    if text is not None:
        return text
    value = e.value
    return value if isinstance(value, str) else None


class Index:
    """The search structures of one memory's entries, mirroring one version's map at a time."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        #: The entry map mirrored.
        self.entries: PersistentMap[Any, Entry[Any, Any]] = EMPTY
        self._rows: dict[Any, int] = {}  # key -> row
        self._free: list[int] = []
        self.entry: list[Entry[Any, Any] | None] = []  # row -> the entry the mirrored map holds
        self._texts: list[str | None] = []  # row -> the text indexed
        self._counts: list[dict[str, int] | None] = []  # row -> its terms' counts
        self.lengths: list[int] = []  # row -> its number of terms
        self.vectors_by_row: list[Vector | None] = []  # row -> the vector indexed
        self.postings: dict[str, dict[int, int]] = {}
        #: How many rows hold a text, and their terms in all.
        self.documents = 0
        self.total_length = 0
        self.vectors: PythonRows | NumpyRows | None = None
        #: The HNSW graph of approximate searches, once one asked for it (the ann extra).
        self.approximate: Approximate | None = None

    @property
    def size(self) -> int:
        """One past the highest row in use."""
        return len(self.entry)

    @property
    def dimensions(self) -> int | None:
        """The dimension of the vectors held, None when none is."""
        rows = self.vectors
        return rows.dimensions if rows is not None and rows.count else None

    def caught_up(self, entries: PersistentMap[Any, Entry[Any, Any]]) -> None:
        """Mirror ``entries`` (call with :attr:`lock` held).  O(m log n) for the m entries that
        differ from the map mirrored, plus their texts' terms and their vectors."""
        if entries is self.entries:
            return
        changed, removed = self.entries.diff(entries)
        for key in removed:
            self._drop(key)
        for key, e in changed.items():
            self._put(key, e)
        self.entries = entries

    def _put(self, key: Any, e: Entry[Any, Any]) -> None:
        text, vector = searchable_text(e), e.vector
        row = self._rows.get(key)
        if row is not None:
            old_text = self._texts[row]
            same_text = old_text is text or (old_text is not None and old_text == text)
            if same_text and self.vectors_by_row[row] is vector:
                self.entry[row] = e  # a rehearsal: what a search reads of it changed, nothing indexed
                return
            self._drop(key)
        if text is None and vector is None:
            return
        row = self._free.pop() if self._free else self._grow()
        self._rows[key] = row
        self.entry[row] = e
        if text is not None:
            counts, length = term_counts(text)
            self._texts[row], self._counts[row], self.lengths[row] = text, counts, length
            postings = self.postings
            for term, n in counts.items():
                posting = postings.get(term)
                if posting is None:
                    postings[term] = {row: n}
                else:
                    posting[row] = n
            self.documents += 1
            self.total_length += length
        if vector is not None:
            rows = self.vectors
            if rows is None or (not rows.count and rows.dimensions != len(vector)):
                rows = self.vectors = rows_for(len(vector), self)
                self.approximate = None  # (a graph of the old dimension: built again when asked for)
            rows.set(row, vector)
            self.vectors_by_row[row] = vector
            if self.approximate is not None:
                self.approximate.add(row, vector)

    def _grow(self) -> int:
        row = len(self.entry)
        self.entry.append(None)
        self._texts.append(None)
        self._counts.append(None)
        self.lengths.append(0)
        self.vectors_by_row.append(None)
        return row

    def _drop(self, key: Any) -> None:
        row = self._rows.pop(key, None)
        if row is None:
            return
        counts = self._counts[row]
        if counts is not None:
            postings = self.postings
            for term in counts:
                posting = postings[term]
                del posting[row]
                if not posting:
                    del postings[term]
            self.documents -= 1
            self.total_length -= self.lengths[row]
        if self.vectors_by_row[row] is not None and self.vectors is not None:
            self.vectors.clear(row)
            if self.approximate is not None:
                self.approximate.remove(row)
        self.entry[row] = self._texts[row] = self._counts[row] = self.vectors_by_row[row] = None
        self.lengths[row] = 0
        self._free.append(row)

    def graph(self) -> Approximate:
        """The HNSW graph over the vectors held, built now if no search asked for it before.

        Raises:
            ImportError: the ``ann`` extra (usearch) is not installed.
        """
        graph = self.approximate
        if graph is None or graph.worn:
            graph = Approximate(self.vectors.dimensions if self.vectors is not None else 1)
            for row, v in rows_and_vectors(self.vectors_by_row):
                graph.add(row, v)
            self.approximate = graph
        return graph

    def row_of(self, key: Any) -> int | None:
        """The row of the entry at ``key``, None when it holds neither text nor vector."""
        return self._rows.get(key)

    def bm25(self, terms: Sequence[str], hidden: frozenset[int] = frozenset()) -> dict[int, float]:
        """Each row holding at least one of ``terms`` (distinct) with its BM25 score, each
        term's part added in the order of ``terms``; the rows ``hidden`` (entries past their
        deadline) are left out, of the answer and of the statistics (N, the lengths, df)."""
        texts = [row for row in hidden if self._counts[row] is not None]
        n_docs = self.documents - len(texts)
        if n_docs <= 0:
            return {}
        lengths = self.lengths
        total = self.total_length - sum(lengths[row] for row in texts)
        avg = total / n_docs
        scores: dict[int, float] = {}
        get = scores.get
        for term in terms:
            posting = self.postings.get(term)
            if not posting:
                continue
            df = len(posting) - sum(1 for row in texts if row in posting)
            if not df:
                continue
            idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            for row, tf in posting.items():
                norm = K1 * (1.0 - B + B * lengths[row] / avg)
                scores[row] = get(row, 0.0) + idf * (tf * (K1 + 1.0)) / (tf + norm)
        for row in texts:
            scores.pop(row, None)
        return scores
