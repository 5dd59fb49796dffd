"""Search and recall against hostile input: extreme vectors, empty texts, Unicode, odd containers.

Each answer is compared with the brute-force twin of ``tests/_twin.py`` (exact arithmetic), on
numpy's float32 rows and on the pure-Python ones.
"""

from __future__ import annotations

import math
import random
import unicodedata
from datetime import timedelta
from typing import Any

import pytest

from lethe import ManualClock, Memory, Vector
from lethe.search import tokenize

from ._twin import answer, brute

# -- a query of any finite size --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "shift"),
    [
        ([1e308, 1e308], -1000),
        ([1.7e308, -1e308, 3.0], -1000),
        ([1e300, 1e300], -990),
        ([1e-310, 2e-310], 1050),  # subnormal: the query's length and products lose digits
        ([5e-324, 1e-323], 1070),
    ],
)
def test_a_query_of_any_finite_size_is_its_direction(
    clock: ManualClock, rows: str, query: list[float], shift: int
) -> None:
    # Cosine is scale-invariant; a query scaled by a power of two has exactly the same answer.
    mem = Memory(clock_fn=clock).put("a", key="a", vector=[1.0, 1.0, 0.5]).put("b", key="b", vector=[1.0, 0.0, 2.0])
    mem = mem.put("c", key="c", vector=[3e38, 3e38, 1.0]).put("d", key="d", vector=[1e-45, 2e-45, 0.0])
    query = [*query, 0.0][:3]
    scaled = [math.ldexp(x, shift) for x in query]
    want = brute(mem, scaled, decay_weight=0, min_relevance=-1)
    assert all(math.isfinite(n) for _, n in want)
    assert answer(mem, query, decay_weight=0, min_relevance=-1) == want
    assert answer(mem, query, 1, decay_weight=0, min_relevance=-1) == want[:1]


# -- float32 subnormal entry vectors ---------------------------------------------------------------


@pytest.mark.parametrize("tiny", [1e-45, 3e-45, 1e-44, 1e-40, 1e-30])
def test_a_vector_of_subnormal_numbers_is_ranked_by_its_direction(clock: ManualClock, rows: str, tiny: float) -> None:
    mem = Memory(clock_fn=clock)
    for i in range(40):  # cosine about 0.83 with the query
        mem = mem.put(f"B{i}", key=f"B{i}", vector=[1.0, 0.8 + i * 1e-4])
    mem = mem.put("A", key="A", vector=[tiny, tiny])  # direction (1, 1): cosine about 0.887
    q = [0.3, 0.95]
    assert answer(mem, q, 1, decay_weight=0) == brute(mem, q, 1, decay_weight=0) == [("A", pytest.approx(0.8873, 1e-4))]
    assert answer(mem, q, 5) == brute(mem, q, 5)


def test_vectors_of_every_float32_size_are_ranked_exactly(clock: ManualClock, rows: str) -> None:
    rng = random.Random(11)
    mem = Memory(clock_fn=clock)
    for i in range(300):  # lengths from float32's smallest subnormal numbers to its largest numbers
        size = 10.0 ** rng.uniform(-45, 37)
        mem = mem.put(i, key=i, vector=[size * rng.uniform(-1, 1) for _ in range(4)] + [size])
    for _ in range(40):
        q = [10.0 ** rng.uniform(-200, 200) * rng.uniform(-1, 1) for _ in range(5)]
        k = rng.choice([1, 3, 10])
        assert answer(mem, q, k, decay_weight=0) == brute(mem, q, k, decay_weight=0)
        assert answer(mem, q, k) == brute(mem, q, k)


# -- an empty text is a text -----------------------------------------------------------------------


def test_an_empty_text_is_the_text_embedded_never_the_value(clock: ManualClock) -> None:
    seen: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:
        seen.append(list(texts))
        return [[1.0, float(len(t))] for t in texts]

    mem = Memory(clock_fn=clock, embed_fn=embed).put(12345, key="n", text="").put("value words", key="s", text="")
    assert seen == [[""], [""]]
    assert mem.peek("s").text == ""
    assert mem.peek("s").vector == mem.peek("n").vector == Vector([1.0, 0.0])
    mem = mem.put_many([("v", "more words"), ("w", 7)], texts=["", ""])
    assert seen[-1] == ["", ""]
    mem = mem.update("s", "other words", text="")
    assert seen[-1] == [""]
    assert mem.peek("s").vector == Vector([1.0, 0.0])
    assert mem.search("value words", lexical_weight=1.0) == []  # the text says nothing: no word matches


# -- Unicode: one word however it is encoded -------------------------------------------------------


def test_text_is_normalized_before_it_is_tokenized(clock: ManualClock) -> None:
    nfd = unicodedata.normalize("NFD", "café naïve")
    assert tokenize(nfd) == tokenize("café naïve") == ["café", "naïv"]
    assert tokenize("\uff34\uff45\uff41 \ufb01ne") == tokenize("tea fine") == ["tea", "fine"]  # compatibility forms
    assert tokenize("\uff34\uff28\uff25") == []  # a stop word, however it is written
    mem = Memory(clock_fn=clock).put("x", key="k", text=nfd).put("\uff34\uff45\uff41 time", key="t")
    assert [e.key for e, _ in mem.search("café")] == ["k"]
    assert [e.key for e, _ in mem.search(unicodedata.normalize("NFD", "naïve"))] == ["k"]
    assert [e.key for e, _ in mem.search("tea")] == ["t"]


def test_combining_marks_belong_to_their_word() -> None:
    assert tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]  # Devanagari vowel signs and virama: Mc, Mn
    assert tokenize("สวัสดี") == ["สวัสดี"]  # Thai vowel marks (Mn)
    assert tokenize("a\u20dd b") == ["a\u20dd", "b"]  # an enclosing mark (Me)
    assert tokenize("x \u0301 y") == ["x", "y"]  # a mark without a letter before it is no word
    assert tokenize("Alice's cats weren't painting") == ["alic", "cat", "weren", "paint"]


# -- a recall without hits is still a write --------------------------------------------------------


def test_a_recall_without_hits_removes_and_reports_entries_past_their_deadline(clock: ManualClock) -> None:
    told: list[Any] = []
    mem = Memory(clock_fn=clock, on_evict=lambda es: told.extend(e.key for e in es))
    mem = mem.put("green tea", key="t", ttl=10).put("coffee", key="c")
    assert mem.recall("nothing")[0] is mem  # nothing past its deadline: nothing changed
    clock.advance(timedelta(seconds=11))
    after, hits = mem.recall("nothing")
    assert hits == []
    assert [e.key for e in after.evicted] == ["t"]
    assert told == ["t"]
    assert list(after.keys()) == ["c"]
    assert after.peek("c") is mem.peek("c")  # nothing rehearsed
    again, _ = after.recall("nothing")
    assert again.evicted == ()
    assert told == ["t"]


# -- what is not a vector, or not a number ---------------------------------------------------------


def _containers() -> list[Any]:
    return [{1.0: "a", 2.0: "b"}, {1.0, 2.0}, frozenset({1.0, 2.0}), {1.0: 0}.keys(), {0: 1.0, 1: 2.0}.values()]


@pytest.mark.parametrize("values", _containers(), ids=["dict", "set", "frozenset", "keys", "values"])
def test_a_mapping_or_a_set_is_not_a_vector(clock: ManualClock, values: Any) -> None:
    mem = Memory(clock_fn=clock).put("a", key="a", vector=[1.0, 2.0])
    with pytest.raises(TypeError, match="vector must be a sequence"):
        Vector(values)
    with pytest.raises(TypeError, match=r"^vector must be a sequence"):
        mem.put("b", key="b", vector=values)
    with pytest.raises(TypeError, match=r"^vectors\[0\] must be a sequence"):
        mem.put_many([("b", "b")], vectors=[values])
    with pytest.raises(TypeError, match=r"^query must be"):
        mem.search(values)
    assert list(mem.keys()) == ["a"]


def test_texts_and_vectors_of_put_many_in_no_order_are_refused(clock: ManualClock) -> None:
    mem = Memory(clock_fn=clock)
    with pytest.raises(TypeError, match=r"^texts must be a sequence"):
        mem.put_many([("a", 1), ("b", 2)], texts={"x", "y"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^vectors must be a sequence"):
        mem.put_many([("a", 1), ("b", 2)], vectors={0: [1.0], 1: [2.0]})  # type: ignore[arg-type]


@pytest.mark.parametrize("values", [[10**400, 1.0], (1.0, -(10**400)), [1, 10**400]])
def test_an_int_beyond_float_range_is_out_of_range_by_name(clock: ManualClock, values: Any) -> None:
    mem = Memory(clock_fn=clock).put("a", key="a", vector=[1.0, 2.0])
    with pytest.raises(
        ValueError, match=r"^vector\[\d\] is an? (negative )?int of 401 digits: every number must be finite"
    ):
        mem.put("b", key="b", vector=values)
    with pytest.raises(
        ValueError, match=r"^query\[\d\] is an? (negative )?int of 401 digits: every number must be finite"
    ):
        mem.search(values)


def test_complex_numbers_are_refused_as_numpy_gives_them(clock: ManualClock) -> None:
    np = pytest.importorskip("numpy")
    mem = Memory(clock_fn=clock).put("a", key="a", vector=[1.0, 2.0])
    for dtype in (np.complex64, np.complex128):
        values = np.array([1.0 + 2.0j, 3.0], dtype=dtype)
        for given_ in (values, list(values), [1.0, dtype(3.0)]):
            with pytest.raises(TypeError, match=r"^vector must be a sequence of real numbers: got complex"):
                mem.put("b", key="b", vector=given_)
            with pytest.raises(TypeError, match=r"^query must be a sequence of real numbers: got complex"):
                mem.search(given_)
    assert list(mem.keys()) == ["a"]


def test_a_query_embedded_to_another_dimension_names_embed_fn(clock: ManualClock) -> None:
    mem = Memory(clock_fn=clock, embed_fn=lambda texts: [[1.0, 0.0, 0.0] for _ in texts])
    mem = mem.put(1, key="a", vector=[1.0, 0.0])
    for method in (mem.search, mem.recall):
        with pytest.raises(
            ValueError, match=r"^query has 3 dimensions; this memory's vectors have 2 \(made by embed_fn\)"
        ):
            method("tea")
    with pytest.raises(ValueError, match=r"^query has 3 dimensions; this memory's vectors have 2$"):
        mem.search([1.0, 0.0, 0.0])
