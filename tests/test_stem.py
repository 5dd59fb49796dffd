"""The Porter2 stemmer agrees with the Snowball reference implementation word for word."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lethe.search._stem import stem

ROOT = Path(__file__).resolve().parent.parent
#: Words the algorithm treats specially, and a few of each suffix it strips.
SPECIAL = """
skis skies dying lying tying idly gently ugly early only singly sky news howe atlas cosmos bias andes
inning innings outing canning herring earring evening evenings proceed exceed succeed proceeding
generous generously communism arsenal international past pasting universal later emergency organize
added adding egg odd ebbing hopping hoping luxuriating conditional rational rationally happy say by cry
cries ties gas gaps kiwis this us caress caresses ponies feed agreed plastered motoring sing conflated
troubled sized hopped tanned falling hissing fizzed failing filing controlling fluently possibly logical
geology analogies relational conditional valenci hesitanci digitizer conformabli radicalli differentli
vileli analogousli vietnamization predication operator feudalism decisiveness hopefulness callousness
formaliti sensitiviti sensibiliti triplicate formative formalize electriciti electrical hopeful goodness
revival allowance inference airliner gyroscopic adjustable defensible irritant replacement adjustment
dependent adoption homologou communism activate angulariti homologous effective bowdlerize probate rate
cease controll roll yelling yesterday youth ayes coy boy employed playing
"""


def _words() -> list[str]:
    found = set(SPECIAL.split())
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        found |= set(re.findall(r"[a-z]+", page.read_text(encoding="utf-8").lower()))
    return sorted(found)


def test_the_stems_are_the_reference_stems() -> None:
    snowball = pytest.importorskip("snowballstemmer").stemmer("english")
    words = _words()
    assert len(words) > 2000
    assert [w for w in words if stem(w) != snowball.stemWord(w)] == []


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz'", min_size=1, max_size=14))
def test_any_word_stems_as_the_reference_does(word: str) -> None:
    snowball = pytest.importorskip("snowballstemmer").stemmer("english")
    assert stem(word) == snowball.stemWord(word)


def test_stems_of_common_forms() -> None:
    assert {stem(w) for w in ("paint", "paints", "painted", "painting")} == {"paint"}
    assert stem("generously") == "generous"
    assert stem("dying") == "die"
