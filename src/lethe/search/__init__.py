"""Search by meaning: lexical (BM25) and vector (cosine) relevance, blended with decay, exact.

:meth:`lethe.Memory.search` and :meth:`lethe.Memory.recall` are the way in
(``docs/search.md`` explains the number they rank by).  This package holds what
they use; its public part is how a text becomes terms: :func:`tokenize` (with
its :data:`STOP_WORDS` and the Porter2 :func:`stem`), and BM25's parameters
:data:`K1` and :data:`B`.

>>> print(*tokenize("The cats were painting"))
cat paint
"""

from lethe.search._index import K1, B
from lethe.search._stem import stem
from lethe.search._text import STOP_WORDS, tokenize

__all__ = ["B", "K1", "STOP_WORDS", "stem", "tokenize"]
