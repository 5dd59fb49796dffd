"""English stemming: Martin Porter's "Porter2" (the Snowball English stemmer), in pure Python.

A lexical search matches words by their stem, so "painting" finds "paints" and
"adopted" finds "adoption".  The algorithm is the one published at
snowballstem.org (algorithms/english), step by step; the tests compare it with
the reference implementation (the ``snowballstemmer`` package) word for word.
"""

from __future__ import annotations

from functools import lru_cache

_VOWELS = frozenset("aeiouy")
_DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_LI_ENDINGS = frozenset("cdeghkmnrt")
#: Prefixes after which R1 starts, whatever follows (so "general" and "generous" differ from "gene").
_R1_PREFIXES = ("gener", "commun", "arsen", "inter", "past", "univers", "later", "emerg", "organ")
_EXCEPTIONS = {
    "skis": "ski",
    "skies": "sky",
    "idly": "idl",
    "gently": "gentl",
    "ugly": "ugli",
    "early": "earli",
    "only": "onli",
    "singly": "singl",
    "sky": "sky",
    "news": "news",
    "howe": "howe",
    "atlas": "atlas",
    "cosmos": "cosmos",
    "bias": "bias",
    "andes": "andes",
}
#: Left as they are after step 1a.
_KEPT_AFTER_1A = frozenset(
    {"inning", "outing", "canning", "herring", "earring", "evening", "proceed", "exceed", "succeed"}
)

_STEP2 = (
    ("ization", "ize"),
    ("ational", "ate"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("iveness", "ive"),
    ("tional", "tion"),
    ("biliti", "ble"),
    ("lessli", "less"),
    ("entli", "ent"),
    ("ation", "ate"),
    ("alism", "al"),
    ("aliti", "al"),
    ("ousli", "ous"),
    ("iviti", "ive"),
    ("fulli", "ful"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("abli", "able"),
    ("izer", "ize"),
    ("ator", "ate"),
    ("alli", "al"),
    ("bli", "ble"),
    ("ogi", "og"),
    ("li", ""),
)
_STEP3 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("alize", "al"),
    ("icate", "ic"),
    ("iciti", "ic"),
    ("ative", ""),
    ("ical", "ic"),
    ("ness", ""),
    ("ful", ""),
)
_STEP4 = (
    "ement",
    "ance",
    "ence",
    "able",
    "ible",
    "ment",
    "ant",
    "ent",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
    "ion",
    "al",
    "er",
    "ic",
)


def _region_after(word: str, start: int) -> int:
    """The start of the region after the first non-vowel following a vowel, from ``start``."""
    for i in range(start + 1, len(word)):
        if word[i] not in _VOWELS and word[i - 1] in _VOWELS:
            return i + 1
    return len(word)


def _short_syllable_ends(word: str, end: int) -> bool:
    """Whether ``word[:end]`` ends in a short syllable (or is "past", which counts as one)."""
    if word[:end].endswith("past"):
        return True
    if end == 2:
        return word[0] in _VOWELS and word[1] not in _VOWELS
    if end < 3:
        return False
    a, b, c = word[end - 3], word[end - 2], word[end - 1]
    return a not in _VOWELS and b in _VOWELS and c not in _VOWELS and c not in "wxY"


def _has_vowel(part: str) -> bool:
    return any(ch in _VOWELS for ch in part)


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """The Porter2 stem of ``word`` (lower case, as the tokenizer gives it).

    >>> print(*(stem(w) for w in ("painting", "paints", "adoption", "adopted", "generously", "skies")))
    paint paint adopt adopt generous sky
    """
    if len(word) <= 2:
        return word
    if word in _EXCEPTIONS:
        return _EXCEPTIONS[word]
    if word[0] == "'":
        word = word[1:]
    if word.startswith("y"):
        word = "Y" + word[1:]
    chars = list(word)
    for i in range(1, len(chars)):
        if chars[i] == "y" and chars[i - 1] in _VOWELS:
            chars[i] = "Y"
    word = "".join(chars)
    prefix = next((p for p in _R1_PREFIXES if word.startswith(p)), None)
    r1 = len(prefix) if prefix is not None else _region_after(word, 0)
    r2 = _region_after(word, r1)

    # Step 0: possessives.
    for suffix in ("'s'", "'s", "'"):
        if word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    # Step 1a: plurals.
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith(("ied", "ies")):
        word = word[:-2] if len(word) > 4 else word[:-1]
    elif word.endswith(("us", "ss")):
        pass
    elif word.endswith("s") and _has_vowel(word[:-2]):
        word = word[:-1]
    if word in _KEPT_AFTER_1A:
        return word
    # Step 1b: -ed, -ing.
    if word.endswith(("eedly", "eed")):
        suffix = "eedly" if word.endswith("eedly") else "eed"
        if len(word) - len(suffix) >= r1:
            word = word[: -len(suffix)] + "ee"
    else:
        ending = next((s for s in ("ingly", "edly", "ing", "ed") if word.endswith(s)), None)
        rest = word if ending is None else word[: -len(ending)]
        if ending in ("ing", "ingly") and len(rest) == 2 and rest[1] == "y" and rest[0] not in _VOWELS:
            word = rest[0] + "ie"  # dying, lying, tying
        elif ending is not None and _has_vowel(rest):
            word = rest
            if word.endswith(("at", "bl", "iz")):
                word += "e"
            elif word.endswith(_DOUBLES):
                if not (len(word) == 3 and word[0] in "aeo"):  # add, egg, odd stay whole
                    word = word[:-1]
            elif r1 >= len(word) and _short_syllable_ends(word, len(word)):
                word += "e"
    # Step 1c: a final y after a consonant (not the first letter) becomes i.
    if len(word) > 2 and word[-1] in "yY" and word[-2] not in _VOWELS:
        word = word[:-1] + "i"
    # Step 2.
    for suffix, replacement in _STEP2:
        if word.endswith(suffix):
            if len(word) - len(suffix) >= r1:
                if suffix == "ogi":
                    if word[-4:-3] == "l":
                        word = word[:-1]
                elif suffix == "li":
                    if word[-3:-2] in _LI_ENDINGS and len(word) > 2:
                        word = word[:-2]
                else:
                    word = word[: -len(suffix)] + replacement
            break
    # Step 3.
    for suffix, replacement in _STEP3:
        if word.endswith(suffix):
            if len(word) - len(suffix) >= r1 and (suffix != "ative" or len(word) - len(suffix) >= r2):
                word = word[: -len(suffix)] + replacement
            break
    # Step 4.
    for suffix in _STEP4:
        if word.endswith(suffix):
            if len(word) - len(suffix) >= r2 and (suffix != "ion" or word[-4:-3] in ("s", "t")):
                word = word[: -len(suffix)]
            break
    # Step 5.
    if word.endswith("e"):
        end = len(word) - 1
        if end >= r2 or (end >= r1 and not _short_syllable_ends(word, end)):
            word = word[:-1]
    elif word.endswith("l") and len(word) - 1 >= r2 and word[-2:-1] == "l":
        word = word[:-1]
    return word.replace("Y", "y")
