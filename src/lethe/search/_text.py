"""Text as a lexical search sees it: words, case-folded, without the commonest English words.

The tokenizer normalizes a text (Unicode NFKC: a letter and its accent typed
apart are the letter with the accent, a fullwidth or ligature form is the plain
letters), case-folds it (``str.casefold``), keeps every run of letters and
digits, with the combining marks that follow them (Unicode categories Mn, Mc
and Me: the vowel signs of Devanagari or Thai are inside a word, not between
two), and drops the stop words below: for English text these are the
``[a-z0-9]+`` tokens BM25 baselines use (Robertson and Zaragoza 2009, "The
Probabilistic Relevance Framework: BM25 and Beyond"; Lucene's
``StandardAnalyzer`` with its English stop set is the same idea), and any other
script is split at its word boundaries the same way.  A query is tokenized as a
text is.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

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

#: A word of ASCII text: a run of letters and digits.
_ASCII_WORD = re.compile(r"[^\W_]+")
#: The planes that hold combining marks (the Basic and Supplementary Multilingual Planes, and the
#: variation selectors of plane 14): planes 2 to 13 hold ideographs or nothing, 15 and 16 private use.
_MARK_PLANES = (range(0x300, 0x20000), range(0xE0000, 0xE1000))


@functools.cache
def _word() -> re.Pattern[str]:
    """A word of any text: letters and digits, with the combining marks among and after them
    (built when a text first needs it: ``re`` has no class for marks, so it is spelled out)."""
    marks = [c for plane in _MARK_PLANES for c in map(chr, plane) if unicodedata.category(c)[0] == "M"]
    bmp = _spelled(c for c in marks if ord(c) <= 0xFFFF)
    beyond = _spelled(c for c in marks if ord(c) > 0xFFFF)
    # ``re`` tests ranges beyond the BMP one by one: a lookahead keeps other characters from them.
    mark = rf"[{bmp}]|(?=[^\x00-\uffff])[{beyond}]"
    return re.compile(rf"[^\W_]+(?:(?:{mark})+[^\W_]*)*")


def _spelled(chars: Iterable[str]) -> str:
    """``chars`` (in order) as the inside of a character class, runs of them as ranges."""
    spans: list[list[str]] = []
    for c in chars:
        if spans and ord(c) == ord(spans[-1][1]) + 1:
            spans[-1][1] = c
        else:
            spans.append([c, c])
    return "".join(re.escape(a) if a == b else f"{re.escape(a)}-{re.escape(b)}" for a, b in spans)


def tokenize(text: str) -> list[str]:
    """The terms of ``text``, in order: its words normalized (NFKC), case-folded and stemmed,
    stop words left out.

    >>> tokenize("Alice's cats weren't painting in the RAIN")
    ['alic', 'cat', 'weren', 'paint', 'rain']
    >>> tokenize("\uff34\uff45\uff41 at the cafe\u0301")  # (fullwidth "Tea"; "e" and an accent)
    ['tea', 'café']
    """
    if text.isascii():
        words = _ASCII_WORD.findall(text.casefold())
    else:
        words = _word().findall(unicodedata.normalize("NFKC", text).casefold())
    return [stem(w) for w in words if w not in STOP_WORDS]


def term_counts(text: str) -> tuple[dict[str, int], int]:
    """Each term of ``text`` with how often it occurs, and how many terms it has in all."""
    counts: dict[str, int] = {}
    get = counts.get
    words = tokenize(text)
    for w in words:
        counts[w] = get(w, 0) + 1
    return counts, len(words)
