"""Search by meaning: lexical (BM25) and vector (cosine) relevance, blended with decay, exact.

:meth:`lethe.Memory.search` and :meth:`lethe.Memory.recall` are the way in;
this package holds what they use: the tokenizer (:func:`tokenize`, with its
:data:`STOP_WORDS`), the index every version of a memory shares, and the exact
walk that ranks a query's candidates (``docs/search.md`` explains the formula).
"""

from lethe.search._index import K1, B, Index, searchable_text
from lethe.search._query import Hit, Query, hits, terms_of
from lethe.search._text import STOP_WORDS, tokenize

__all__ = ["B", "K1", "STOP_WORDS", "Hit", "Index", "Query", "hits", "searchable_text", "terms_of", "tokenize"]
