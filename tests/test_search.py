"""Search and recall: exact against a brute-force twin, on every version, through every form.

The twin below sorts every live entry by ``relevance + decay_weight * score``
(its own BM25 and cosine, written from the formulas in docs/search.md); the
memory's answer must equal it exactly, whatever was written, and old versions
must answer as they did.
"""

from __future__ import annotations

import copy
import gc
import json
import math
import pickle
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import ManualClock, Memory, MemoryFullError, Vector
from lethe.search import STOP_WORDS, _dense, tokenize

from ._support import fake_clock
from ._twin import WORDS, answer, brute, embed3

# -- examples -------------------------------------------------------------------


def test_lexical_relevance_is_bm25_over_the_best_match(clock: ManualClock) -> None:
    mem = Memory(clock_fn=clock).put("Ada likes green tea", key="tea").put("Ada uses vim", key="vim")
    assert answer(mem, "green tea", decay_weight=0) == [("tea", 1.0)]  # vim shares no term
    assert answer(mem, "ada") == brute(mem, "ada")
    assert mem.search("the of and") == []  # only stop words: nothing to match
    assert mem.search("") == []


def test_text_falls_back_to_a_str_value_and_text_wins(clock: ManualClock) -> None:
    mem = Memory(clock_fn=clock).put({"id": 1}, key="a", text="green tea").put("green tea", key="b", text="vim")
    assert [k for k, _ in answer(mem, "tea")] == ["a"]
    assert [k for k, _ in answer(mem, "vim")] == ["b"]
    assert mem.put(42, key="c").search("42") == []  # neither text nor str value


def test_vector_relevance_is_cosine(clock: ManualClock, rows: str) -> None:
    mem = Memory(clock_fn=clock).put("a", key="x", vector=[1, 0, 0]).put("b", key="y", vector=[1, 1, 0])
    mem = mem.put("c", key="z", vector=[-1, 0, 0])
    got = answer(mem, [2.0, 0.0, 0.0], decay_weight=0, min_relevance=-1)
    assert got == [("x", 1.0), ("y", pytest.approx(1 / math.sqrt(2))), ("z", -1.0)]
    assert got == brute(mem, [2.0, 0.0, 0.0], decay_weight=0, min_relevance=-1)
    assert [k for k, _ in answer(mem, [2.0, 0.0, 0.0])] == ["x", "y"]  # below 0: not relevant by default
    assert answer(mem, [1, 0, 0], min_relevance=0.8) == brute(mem, [1, 0, 0], min_relevance=0.8)


def test_ties_go_to_the_entry_put_first(clock: ManualClock, rows: str) -> None:
    mem = Memory(clock_fn=clock)
    for key in "dcba":
        mem = mem.put("same words", key=key, vector=[1, 2, 3])
    assert [k for k, _ in answer(mem, "words")] == ["d", "c", "b", "a"]
    assert [k for k, _ in answer(mem, [1, 2, 3], k=2)] == ["d", "c"]


def test_decay_blends_in_and_weight_zero_is_pure_relevance(clock: ManualClock) -> None:
    mem = Memory(clock_fn=clock, half_life=3600).put("tea", key="old")
    clock.advance(3 * 3600)
    mem = mem.put("tea tea", key="new")
    assert answer(mem, "tea", decay_weight=0) == brute(mem, "tea", decay_weight=0)
    heavy = answer(mem, "tea", decay_weight=10)
    assert heavy[0][0] == "new"
    assert heavy == brute(mem, "tea", decay_weight=10)


def test_embed_fn_gives_puts_and_text_queries_their_vectors(clock: ManualClock, rows: str) -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return embed3(texts)

    mem = Memory(clock_fn=clock, embed_fn=embed).put("green tea", key="t").put({"x": 1}, key="n")
    assert list(mem.peek("t").vector or []) == [3.0, 1.0, 1.0]
    assert mem.peek("n").vector is None  # no text: nothing to embed
    mem = mem.put_many([("a", "vim vim"), ("b", "rain")], texts=[None, "sun and rain"])
    assert calls[-1] == ["vim vim", "sun and rain"]  # one batch
    assert answer(mem, "coffee") == brute(mem, "coffee", embed=embed3)
    hybrid = answer(mem, "rain", lexical_weight=0.5)
    assert hybrid == brute(mem, "rain", lexical_weight=0.5, embed=embed3)
    assert answer(mem, "rain", lexical_weight=1.0) == brute(mem, "rain", lexical_weight=1.0)
    n = len(calls)
    mem.search("rain", lexical_weight=1.0)
    assert len(calls) == n  # lexical only: no embedding


def test_recall_rehearses_the_hits_in_one_version(clock: ManualClock) -> None:
    mem = Memory(clock_fn=clock).put("green tea", key="t").put("black tea", key="b").put("vim", key="v")
    clock.advance(60)
    found = mem.search("tea")
    new, hits = mem.recall("tea")
    assert [(e.key, n) for e, n in hits] == [(e.key, n) for e, n in found]
    for e, _ in hits:
        assert e.access_count == 1
        assert new.peek(e.key) == e
    assert new.peek("v").access_count == 0
    assert mem.peek("t").access_count == 0  # the old version is as it was
    same, none = mem.recall("nothing matches")
    assert none == []
    assert same == mem


def test_update_keeps_or_replaces_text_and_vector(clock: ManualClock) -> None:
    mem = Memory(clock_fn=clock).put("a", key="k", text="green tea", vector=[1, 0])
    kept = mem.update("k", "a")
    assert kept.peek("k").text == "green tea"
    assert kept.peek("k").vector == mem.peek("k").vector
    moved = mem.update("k", "b", text="vim", vector=[0, 1])
    assert [k for k, _ in answer(moved, "vim")] == ["k"]
    assert answer(moved, "tea") == []
    assert answer(mem, "tea") == [("k", 1.25)]  # the old version still answers as it did
    plain = mem.update("k", "rain now")
    assert plain.peek("k").text is None
    assert plain.peek("k").vector is None
    assert [k for k, _ in answer(plain, "rain")] == ["k"]


def test_expired_deleted_evicted_and_replaced_entries_are_never_hits(clock: ManualClock) -> None:
    mem = Memory(clock_fn=clock, max_entries=3).put("tea one", key="a", ttl=10).put("tea two", key="b")
    mem = mem.put("tea three", key="c")
    clock.advance(11)
    assert [k for k, _ in answer(mem, "tea")] == ["b", "c"]  # a: past its deadline
    assert answer(mem, "tea") == brute(mem, "tea")
    mem = mem.delete("b").put("coffee", key="c")
    assert answer(mem, "tea") == []
    full = Memory(clock_fn=clock, max_entries=1).put("tea", key="x").put("coffee", key="y")
    assert answer(full, "tea") == []
    assert [k for k, _ in answer(full, "coffee")] == ["y"]


# -- bad input -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"k": 0}, ValueError, "k"),
        ({"k": 1.5}, TypeError, "k"),
        ({"decay_weight": -1}, ValueError, "decay_weight"),
        ({"decay_weight": math.nan}, ValueError, "decay_weight"),
        ({"min_relevance": "x"}, TypeError, "min_relevance"),
        ({"lexical_weight": 2}, ValueError, "lexical_weight"),
        ({"lexical_weight": 0.5}, ValueError, "lexical_weight"),  # no embed_fn
    ],
)
def test_bad_search_arguments_are_named(clock: ManualClock, kwargs: dict[str, Any], error: type, name: str) -> None:
    mem = Memory(clock_fn=clock).put("tea", key="t")
    with pytest.raises(error, match=name):
        mem.search("tea", **kwargs)
    with pytest.raises(error, match=name):
        mem.recall("tea", **kwargs)


@pytest.mark.parametrize(
    ("vector", "error"),
    [
        ([1.0, 2.0], ValueError),
        ([math.nan, 1, 1], ValueError),
        ([math.inf, 1, 1], ValueError),
        ([], ValueError),
        ([0, 0, 0], ValueError),
        (["a", 1, 1], TypeError),
        ("abc", TypeError),
        (3, TypeError),
        ([1e39, 1, 1], ValueError),
    ],
)
def test_bad_vectors_are_refused_and_change_nothing(clock: ManualClock, vector: Any, error: type) -> None:
    mem = Memory(clock_fn=clock).put("a", key="a", vector=[1, 2, 3])
    with pytest.raises(error, match="vector"):
        mem.put("b", key="b", vector=vector)
    with pytest.raises(error, match="vectors"):
        mem.put_many([("b", "b")], vectors=[vector])
    with pytest.raises(error, match="vector"):
        mem.update("a", "x", vector=vector)
    if not isinstance(vector, str) and vector != [1e39, 1, 1]:  # (a text query; a query is float64)
        with pytest.raises(error, match="query"):
            mem.search(vector)
    assert len(mem) == 1
    assert answer(mem, [1, 2, 3]) == [("a", 1.25)]


def test_bad_embed_fn_results_are_named_and_its_errors_pass_through(clock: ManualClock) -> None:
    results: list[Any] = [[[1.0, 2.0]], [[1.0]], [], "xy", [[0.0, 0.0]], [[1.0, math.nan]]]

    def embed(texts: list[str]) -> Any:
        return results.pop(0) if results else [[1.0, 2.0]] * len(texts)

    mem = Memory(clock_fn=clock, embed_fn=embed).put("first", key="a")
    for _ in range(5):
        with pytest.raises((TypeError, ValueError), match=r"embed_fn|vector"):
            mem.put("second", key="b")
    assert list(mem.keys()) == ["a"]

    async def later(texts: list[str]) -> list[list[float]]:
        return [[1.0, 2.0]]

    with pytest.raises(TypeError, match="embed_fn"):
        Memory(clock_fn=clock, embed_fn=later).put("x")  # type: ignore[arg-type]

    def failing(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("the embedding service is down")

    with pytest.raises(RuntimeError, match="down"):
        Memory(clock_fn=clock, embed_fn=failing).put("x")


def test_texts_and_vectors_of_put_many_are_one_per_pair(clock: ManualClock) -> None:
    mem = Memory(clock_fn=clock)
    with pytest.raises(ValueError, match="texts"):
        mem.put_many([("a", 1), ("b", 2)], texts=["x"])
    with pytest.raises(TypeError, match="texts\\[1\\]"):
        mem.put_many([("a", 1), ("b", 2)], texts=["x", 3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="vectors\\[1\\]"):
        mem.put_many([("a", 1), ("b", 2)], vectors=[[1, 0], [1, 0, 0]])


# -- persistence -------------------------------------------------------------------


def _searched(mem: Memory[Any, Any]) -> list[Any]:
    return [answer(mem, q) for q in ("tea", "vim rain", [1.0, 0.5, 0.0], [0.0, 0.0, 1.0])]


def _filled(clock: ManualClock) -> Memory[Any, Any]:
    mem = Memory(clock_fn=clock, max_entries=50)
    for i in range(30):
        text = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(i % 5 + 1))
        mem = mem.put(text, key=i, vector=[(i % 3) + 1.0, (i % 5) * 0.5, (i % 7) - 3.0], importance=1 + i % 3)
        clock.advance(600)
    return mem.delete(3).update(4, "coffee now")


def test_documents_pickles_and_copies_answer_the_same(clock: ManualClock, rows: str) -> None:
    mem = _filled(clock)
    want = _searched(mem)
    again = Memory.from_dict(json.loads(json.dumps(mem.to_dict())), clock_fn=clock)
    assert _searched(again) == want
    assert _searched(pickle.loads(pickle.dumps(mem))) == want
    assert _searched(copy.replace(mem) if hasattr(copy, "replace") else mem.configure()) == want
    assert _searched(mem.configure(max_entries=60)) == want


def test_documents_refuse_bad_vectors_by_field(clock: ManualClock) -> None:
    data = Memory(clock_fn=clock).put("a", key="a", vector=[1, 2]).put("b", key="b", vector=[2, 1]).to_dict()
    for bad, words in [(["x", 1], "entries\\[1\\].vector"), ([0, 0], "entries\\[1\\].vector"), ("AAAA", "vector")]:
        data["entries"][1]["vector"] = bad
        with pytest.raises(ValueError, match=words):
            Memory.from_dict(data)
    data["entries"][1]["vector"] = [1, 2, 3]
    with pytest.raises(ValueError, match=r"entries\[1\].vector: 3 dimensions"):
        Memory.from_dict(data)
    data["entries"][1]["vector"] = [1, 2]
    data["entries"][1]["text"] = 5
    with pytest.raises(ValueError, match=r"entries\[1\].text"):
        Memory.from_dict(data)


def test_version_2_documents_read_without_text_or_vector(clock: ManualClock) -> None:
    data = Memory(clock_fn=clock).put("green tea", key="a").to_dict()
    data["version"] = 2
    for entry in data["entries"]:
        del entry["text"], entry["vector"]
    mem = Memory.from_dict(data, clock_fn=clock)
    assert mem.peek("a").text is None
    assert [k for k, _ in answer(mem, "tea")] == ["a"]


# -- the property: exact on every version ------------------------------------------------

texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=5).map(" ".join)
vectors = st.one_of(
    st.none(), st.lists(st.integers(-3, 3), min_size=3, max_size=3).filter(any).map(lambda v: [float(x) for x in v])
)
keys = st.integers(0, 8)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), keys, texts, vectors, st.sampled_from([0.5, 1.0, 2.0])),
        st.tuples(st.just("ttl"), keys, texts, vectors, st.sampled_from([30.0, 4000.0])),
        st.tuples(st.just("update"), keys, texts),
        st.tuples(st.just("get"), keys),
        st.tuples(st.just("delete"), keys),
        st.tuples(st.just("pin"), keys),
        st.tuples(st.just("evict")),
        st.tuples(st.just("recall"), texts),
        st.tuples(st.just("tick"), st.sampled_from([1.0, 600.0, 7200.0])),
    ),
    max_size=25,
)
queries = st.tuples(
    st.one_of(
        texts, st.lists(st.integers(-3, 3), min_size=3, max_size=3).filter(any).map(lambda v: [x / 2 for x in v])
    ),
    st.integers(1, 6),
    st.sampled_from([0.0, 0.25, 1.0, 5.0, 100.0]),
    st.sampled_from([-1.0, 0.0, 0.3]),
)


def run(mem: Memory[Any, Any], op: tuple[Any, ...], clock: ManualClock) -> Memory[Any, Any]:
    name = op[0]
    try:
        if name == "put":
            return mem.put(op[2], key=op[1], vector=op[3], importance=op[4])
        if name == "ttl":
            return mem.put(op[2], key=op[1], vector=op[3], ttl=op[4])
        if name == "update":
            return mem.update(op[1], op[2])
        if name == "get":
            return mem.get(op[1])[0]
        if name in ("delete", "pin"):
            return getattr(mem, name)(op[1])  # type: ignore[no-any-return]
        if name == "evict":
            return mem.evict()[0]
        if name == "recall":
            return mem.recall(op[1], k=2)[0]
        clock.advance(op[1])
        return mem
    except (KeyError, MemoryFullError):
        return mem


@pytest.mark.parametrize("numpy_rows", [True, False], ids=["numpy", "python"])
@settings(max_examples=60, deadline=None)
@given(ops=operations, asked=st.lists(queries, min_size=1, max_size=4), cap=st.integers(2, 6))
def test_search_equals_the_brute_force_sort_on_every_version(
    numpy_rows: bool, ops: list[tuple[Any, ...]], asked: list[tuple[Any, ...]], cap: int
) -> None:
    saved, _dense.use_numpy = _dense.use_numpy, numpy_rows and _dense._np is not None
    try:
        _exact_on_every_version(ops, asked, cap)
    finally:
        _dense.use_numpy = saved


def _exact_on_every_version(ops: list[tuple[Any, ...]], asked: list[tuple[Any, ...]], cap: int) -> None:
    clock = fake_clock()
    mem: Memory[Any, Any] = Memory(clock_fn=clock, max_entries=cap, half_life=3600)
    history = []
    for op in ops:
        mem = run(mem, op, clock)
        answers = [answer(mem, q, k, decay_weight=w, min_relevance=floor) for q, k, w, floor in asked]
        for (q, k, w, floor), got in zip(asked, answers):
            assert got == brute(mem, q, k, decay_weight=w, min_relevance=floor)
        history.append((mem, clock.now, answers))
    now = clock.now
    for old, at, answers in reversed(history):  # old versions, searched again after everything
        clock.set(at)
        assert [answer(old, q, k, decay_weight=w, min_relevance=floor) for q, k, w, floor in asked] == answers
    clock.set(now)


def test_stop_words_and_tokens() -> None:
    assert "the" in STOP_WORDS
    assert tokenize("The TEA, the tea!") == ["tea", "tea"]
    assert tokenize("naïve café 42x_y") == ["naïv", "café", "42x", "y"]  # (stemmed as English)


# -- every replica ---------------------------------------------------------------------


def test_replicas_and_cold_opens_answer_as_the_writer(store: Any) -> None:
    from lethe.store import Shared

    clock = fake_clock()
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return embed3(texts)

    template: Memory[Any, Any] = Memory(clock_fn=clock, max_entries=20, embed_fn=embed)
    writer = Shared(store, "search", template)
    reader = Shared(store, "search", template)
    writer.update(lambda m: m.put("green tea and coffee", key="t").put("vim", key="v", vector=[0.0, 5.0, 1.0]))
    writer.update(lambda m: m.put_many([(i, f"rain {WORDS[i]}") for i in range(6)]).delete(2))
    recalled = writer.transact(lambda m: m.recall("rain sun", k=2))
    assert [e.access_count for e, _ in recalled] == [1, 1]
    made = len(calls)
    want = [answer(writer.current(), q) for q in ("rain", "coffee", [1.0, 2.0, 3.0])]
    want.append(answer(writer.current(), "rain", lexical_weight=1.0))
    assert want[0]
    assert want[1]
    assert want[3]
    for other in (reader, Shared(store, "search", template)):
        mem = other.current()
        got = [answer(mem, q) for q in ("rain", "coffee", [1.0, 2.0, 3.0])]
        got.append(answer(mem, "rain", lexical_weight=1.0))
        assert got == want
        assert mem.peek("v").vector == writer.current().peek("v").vector
    assert all(len(c) == 1 for c in calls[made:])  # the replicas embedded only the queries
    writer.close()
    reader.close()


# -- one copy of each vector's numbers ----------------------------------------------------------


def test_a_vector_reads_the_same_wherever_its_numbers_live(clock: ManualClock) -> None:
    pytest.importorskip("numpy")
    numbers = [[float(i), 1.5, -2.25, i / 8] for i in range(1, 40)]  # (each exact in float32)
    mem = Memory(clock_fn=clock).put_many([(i, i) for i in range(1, 40)], vectors=numbers)
    before = [mem.peek(i).vector for i in range(1, 40)]
    assert [list(v or ()) for v in before] == numbers
    mem.search([1.0, 1.0, 1.0, 1.0], 3)  # the index now holds the numbers
    for i, v in enumerate(before, 1):
        assert v is not None
        assert list(v) == numbers[i - 1]
        assert v == Vector(numbers[i - 1])
        assert hash(v) == hash(Vector(numbers[i - 1]))
        assert pickle.loads(pickle.dumps(v)) == v
        assert v.to_bytes() == Vector(numbers[i - 1]).to_bytes()
    kept = mem.peek(7)
    del mem, before
    gc.collect()
    assert list(kept.vector or ()) == numbers[6]  # its memory and index gone, it still reads right


def test_a_memory_configured_anew_keeps_one_copy_and_answers_the_same(clock: ManualClock) -> None:
    pytest.importorskip("numpy")
    mem = Memory(clock_fn=clock).put_many([(i, i) for i in range(50)], vectors=[[1.0, i, 2.0] for i in range(50)])
    want = answer(mem, [1.0, 20.0, 2.0], 5)
    moved = mem.configure(max_entries=500)
    del mem
    gc.collect()
    assert answer(moved, [1.0, 20.0, 2.0], 5) == want
    assert answer(moved, [1.0, 20.0, 2.0], 5) == brute(moved, [1.0, 20.0, 2.0], 5)


def test_replaced_vectors_free_their_rows(clock: ManualClock) -> None:
    pytest.importorskip("numpy")
    mem = Memory(clock_fn=clock)
    for round_ in range(30):
        mem = mem.put_many([(i, i) for i in range(100)], vectors=[[1.0, float(i + round_), 3.0] for i in range(100)])
        assert answer(mem, [1.0, 5.0, 3.0], 3) == brute(mem, [1.0, 5.0, 3.0], 3)
        gc.collect()
    rows = mem._config.index.vectors  # (white box: the rows a hundred vectors take, after 3,000 puts)
    assert rows is not None
    assert len(rows._chunks) == 1


# -- approximate: the ann extra ------------------------------------------------------------------


def test_approximate_search_finds_what_exact_search_finds_on_a_small_memory(clock: ManualClock) -> None:
    pytest.importorskip("usearch")
    mem = Memory(clock_fn=clock, max_entries=3000)
    rows = [[math.sin(i * 0.37 + j) for j in range(16)] for i in range(2000)]
    mem = mem.put_many([(i, i) for i in range(2000)], vectors=rows)
    for q in rows[:20:3]:
        exact = answer(mem, q, 10)
        approximate = [(e.key, n) for e, n in mem.search(q, 10, approximate=True)]
        assert len({key for key, _ in exact} & {key for key, _ in approximate}) >= 9
        for key, number in approximate:  # each hit's number is exact, whatever found it
            assert number == pytest.approx(dict(brute(mem, q, 2000, min_relevance=-1)).get(key))
    # Kept in step with writes: a deleted entry is never a hit, a new one is found.
    mem = mem.delete(0).put(-1, key="new", vector=rows[0])
    found = [e.key for e, _ in mem.search(rows[0], 3, approximate=True)]
    assert 0 not in found
    assert "new" in found
    with pytest.raises(TypeError, match="approximate"):
        mem.search(rows[0], approximate="yes")  # type: ignore[arg-type]


def test_approximate_search_still_finds_entries_after_many_vectors_were_replaced(clock: ManualClock) -> None:
    # usearch keeps a removed node, marked: the graph is built anew once it lost more nodes than
    # it holds, so a memory whose vectors keep changing neither grows it for ever nor wears it out.
    pytest.importorskip("usearch")
    rng = random.Random(5)
    mem: Memory[int, str] = Memory(clock_fn=clock, max_entries=1000)
    for i in range(300):
        mem = mem.put("v", key=i, vector=[rng.uniform(-1, 1) for _ in range(6)])
    for _ in range(1500):
        mem = mem.update(rng.randrange(300), "u", vector=[rng.uniform(-1, 1) for _ in range(6)])
        mem.search([rng.uniform(-1, 1) for _ in range(6)], 5, approximate=True)  # the graph kept in step
    found = 0
    for e in mem:
        assert e.vector is not None
        hits = mem.search(list(e.vector), 1, decay_weight=0.0, approximate=True)
        found += [h.key for h, _ in hits] == [e.key]
    assert found >= 285  # approximate: a fresh graph misses one or two of 300 as well


def test_a_memory_no_larger_than_the_candidates_is_searched_exactly(clock: ManualClock) -> None:
    pytest.importorskip("usearch")
    rng = random.Random(7)
    mem: Memory[int, str] = Memory(clock_fn=clock)
    for i in range(30):
        mem = mem.put("v", key=i, vector=[rng.uniform(-1, 1) for _ in range(4)])
    for _ in range(120):  # (vectors replaced, while a graph would be kept in step)
        mem = mem.update(rng.randrange(30), "u", vector=[rng.uniform(-1, 1) for _ in range(4)])
        q = [rng.uniform(-1, 1) for _ in range(4)]
        assert mem.search(q, 30, approximate=True) == mem.search(q, 30)


def test_approximate_search_needs_the_ann_extra(clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "usearch", None)
    monkeypatch.setitem(sys.modules, "usearch.index", None)
    mem = Memory(clock_fn=clock).put("x", key="x", vector=[1.0, 0.0])
    with pytest.raises(ImportError, match=r"lethe-decay\[ann\]"):
        mem.search([1.0, 0.0], approximate=True)
    assert answer(mem, [1.0, 0.0]) == [("x", 1.25)]  # exact search needs nothing


@pytest.mark.parametrize("numpy_rows", [True, False], ids=["numpy", "python"])
def test_one_vector_under_several_keys_is_found_under_each(clock: ManualClock, numpy_rows: bool) -> None:
    saved, _dense.use_numpy = _dense.use_numpy, numpy_rows and _dense._np is not None
    try:
        shared = Vector([1.0, 2.0, 3.0])
        mem = Memory(clock_fn=clock).put("a", key="a", vector=shared).put("b", key="b", vector=shared)
        mem = mem.put("c", key="c", vector=[3.0, 2.0, 1.0])
        assert [k for k, _ in answer(mem, [1.0, 2.0, 3.0], 2)] == ["a", "b"]
        less = mem.delete("a")
        assert [k for k, _ in answer(less, [1.0, 2.0, 3.0], 2)] == ["b", "c"]
        assert [k for k, _ in answer(mem, [1.0, 2.0, 3.0], 2)] == ["a", "b"]  # the old version, as it was
    finally:
        _dense.use_numpy = saved
