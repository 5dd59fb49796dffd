"""Text as a lexical search sees it: words, case-folded, without the commonest English words.

The tokenizer keeps every run of letters and digits (Unicode: ``[^\\W_]+``),
case-folded (``str.casefold``), and drops the stop words below: for English
text these are the ``[a-z0-9]+`` tokens BM25 baselines use (Robertson and
Zaragoza 2009, "The Probabilistic Relevance Framework: BM25 and Beyond";
Lucene's ``StandardAnalyzer`` with its English stop set is the same idea), and
any other script is split at its word boundaries the same way.  A query is
tokenized as a text is.
"""

from __future__ import annotations

import re

from lethe.search._stem import stem

#: Common English words a lexical search ignores (in a text and in a query): the stop list
#: of Lucene's ``EnglishAnalyzer`` and of scikit-learn's ``ENGLISH_STOP_WORDS`` share these
#: function words; none of them says what a text is about.
STOP_WORDS: frozenset[str] = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
    ]
)

_WORD = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """The terms of ``text``, in order: its words case-folded and stemmed, stop words left out.

    >>> tokenize("Alice's cats weren't painting in the RAIN")
    ['alic', 'cat', 'weren', 'paint', 'rain']
    """
    return [stem(w) for w in _WORD.findall(text.casefold()) if w not in STOP_WORDS]


def term_counts(text: str) -> tuple[dict[str, int], int]:
    """Each term of ``text`` with how often it occurs, and how many terms it has in all."""
    counts: dict[str, int] = {}
    get = counts.get
    words = tokenize(text)
    for w in words:
        counts[w] = get(w, 0) + 1
    return counts, len(words)
