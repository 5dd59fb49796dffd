"""The search contract, run over every model in ``tests/_support.MODELS``.

Whatever the decay function, ``search`` equals the brute-force sort of every
live entry by ``relevance + decay_weight * score`` (``tests/_twin.py``) after
any writes, for lexical, vector and hybrid queries and any ``decay_weight``;
old versions answer as they did; ``recall`` rehearses exactly the hits, as
``get`` would; and the document, pickle and ``configure`` keep every answer.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lethe import ManualClock, Memory, MemoryFullError

from .._support import MODEL_IDS, MODELS, Model, custom_decay, fake_clock
from .._twin import WORDS, answer, brute, embed3

SOME = settings(max_examples=max(8, settings().max_examples // 4), deadline=None)

texts = st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join)
keys = st.integers(0, 6)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), keys, texts, st.sampled_from([0.5, 1.0, 2.0])),
        st.tuples(st.just("ttl"), keys, texts),
        st.tuples(st.just("get"), keys),
        st.tuples(st.just("update"), keys, texts),
        st.tuples(st.just("delete"), keys),
        st.tuples(st.just("pin"), keys),
        st.tuples(st.just("evict")),
        st.tuples(st.just("recall"), texts),
        st.tuples(st.just("tick"), st.sampled_from([1.0, 900.0, 86_400.0])),
    ),
    max_size=20,
)
queries = st.tuples(
    texts,
    st.integers(1, 5),
    st.sampled_from([0.0, 0.25, 3.0]),
    st.sampled_from([None, 1.0, 0.4, 0.0]),
)


def built(model: Model, clock: ManualClock, cap: int) -> Memory[Any, Any]:
    return Memory(decay_fn=model.make(), clock_fn=clock, max_entries=cap, embed_fn=embed3)


def apply(mem: Memory[Any, Any], op: tuple[Any, ...], clock: ManualClock) -> Memory[Any, Any]:
    name = op[0]
    try:
        if name == "put":
            return mem.put(op[2], key=op[1], importance=op[3])
        if name == "ttl":
            return mem.put(op[2], key=op[1], ttl=1000)
        if name == "get":
            return mem.get(op[1])[0]
        if name == "update":
            return mem.update(op[1], op[2])
        if name in ("delete", "pin"):
            return getattr(mem, name)(op[1])  # type: ignore[no-any-return]
        if name == "evict":
            return mem.evict()[0]
        if name == "recall":
            new, hits = mem.recall(op[1], k=2)
            want = [key for key, _ in brute(mem, op[1], 2, embed=embed3)]
            assert [e.key for e, _ in hits] == want
            for e, _ in hits:
                assert e.access_count == mem.peek(e.key).access_count + 1
                assert e.last_accessed_at == clock.now
                assert new.peek(e.key) == e
            return new
        clock.advance(op[1])
        return mem
    except (KeyError, MemoryFullError):
        return mem


def check(mem: Memory[Any, Any], asked: list[tuple[Any, ...]]) -> list[Any]:
    out = []
    for q, k, w, lw in asked:
        got = answer(mem, q, k, decay_weight=w, lexical_weight=lw)
        assert got == brute(mem, q, k, decay_weight=w, lexical_weight=lw, embed=embed3)
        out.append(got)
    return out


@pytest.mark.parametrize("model", MODELS, ids=MODEL_IDS)
class TestSearchContract:
    @SOME
    @given(ops=ops, asked=st.lists(queries, min_size=1, max_size=3), cap=st.integers(2, 5))
    def test_search_is_exact_on_every_version(
        self, model: Model, ops: list[tuple[Any, ...]], asked: list[tuple[Any, ...]], cap: int
    ) -> None:
        clock = fake_clock()
        mem = built(model, clock, cap)
        history = []
        for op in ops:
            mem = apply(mem, op, clock)
            history.append((mem, clock.now, check(mem, asked)))
        for old, at, answers in reversed(history):
            clock.set(at)
            assert [answer(old, q, k, decay_weight=w, lexical_weight=lw) for q, k, w, lw in asked] == answers

    def test_saved_and_copied_memories_answer_the_same(self, model: Model) -> None:
        clock = fake_clock()
        mem = built(model, clock, 12)
        for i in range(10):
            mem = mem.put(" ".join(WORDS[i : i + 3]), key=i, importance=1 + i % 2)
            clock.advance(1800)
            if i % 3 == 0:
                mem = mem.get(i // 2)[0]
        asked = [("tea green", 3, 0.25, None), ("vim rain", 5, 1.0, 1.0), ("sun", 4, 0.0, 0.5)]
        want = check(mem, asked)
        extra = {} if model.builtin else {"decay_fn": custom_decay}
        data = json.loads(json.dumps(mem.to_dict()))
        for other in (
            Memory.from_dict(data, clock_fn=clock, embed_fn=embed3, **extra),
            pickle.loads(pickle.dumps(mem)) if model.builtin else mem,
            mem.configure(max_entries=20),
        ):
            assert check(other, asked) == want
