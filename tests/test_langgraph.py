"""LetheStore, lethe's LangGraph store: what LangGraph's own tests (tests/langgraph/) do not cover.

It answers as LangGraph's InMemoryStore does (a property test over random batches); a memory
template makes its namespaces bounded and decaying; TTLs, bad input, and writes from
several processes (nothing lost through ``update``; each ``put`` is one commit).
"""

from __future__ import annotations

import gc
import multiprocessing
import threading
import weakref
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from lethe import Entry, Memory
from lethe.integrations.langgraph import NAME_PREFIX, LetheStore
from lethe.store import Shared, SQLiteStore
from tests.langgraph.embed_test_utils import CharacterEmbeddings

EMBED = CharacterEmbeddings(dims=16)
WORDS = ["red", "apple", "car", "blue", "dog", "bird", "tea", "xx"]


# -- the same answers as LangGraph's InMemoryStore -----------------------------------------

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
# A note never repeats its item's text: InMemoryStore embeds one text once per batch and then
# miscounts its vectors (LangGraph's bug, not a case to compare).
notes = texts.map("note: {}".format)
values = st.fixed_dictionaries(
    {"text": texts, "color": st.sampled_from(["red", "blue"]), "n": st.integers(0, 3), "note": notes}
)
puts = st.tuples(
    st.just("put"),
    st.sampled_from([("a",), ("a", "b"), ("c",)]),
    st.sampled_from(["k1", "k2", "k3", "k4", "k5"]),
    st.one_of(st.none(), values),
    st.sampled_from([None, False, ["text"], ["text", "note"], ["note"]]),
)
searches = st.tuples(
    st.just("search"),
    st.sampled_from([("a",), ("a", "b"), ()]),
    st.one_of(st.none(), texts, notes),
    st.sampled_from([None, {"color": "red"}, {"n": {"$gte": 2}}, {"color": "blue", "n": {"$ne": 1}}]),
    st.sampled_from([1, 2, 3, 10]),
    st.integers(0, 2),
)


def _answer(items: list[Any]) -> list[tuple[str, str, float | None]]:
    return [(".".join(i.namespace), i.key, None if i.score is None else round(i.score, 5)) for i in items]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(puts, searches), min_size=2, max_size=30))
@example(  # an item found by its second text, ranked above one found by its only text
    [
        ("put", ("a",), "k1", {"text": "red", "color": "red", "n": 1, "note": "note: blue dog"}, ["text", "note"]),
        ("put", ("a",), "k2", {"text": "blue dog", "color": "red", "n": 1, "note": "note: tea"}, None),
        ("search", ("a",), "note: blue dog", None, 1, 0),
    ]
)
@example(  # the filter drops the best match: the search reaches further
    [
        ("put", ("a",), "k1", {"text": "red", "color": "blue", "n": 1, "note": "note: xx"}, None),
        ("put", ("a",), "k2", {"text": "blue dog", "color": "red", "n": 1, "note": "note: tea"}, None),
        ("search", ("a",), "red", {"color": "red"}, 1, 0),
    ]
)
@example(  # put again unindexed: found by no vector, listed after the ranked ones
    [
        ("put", ("a", "b"), "k1", {"text": "red", "color": "red", "n": 0, "note": "note: red"}, None),
        ("put", ("a", "b"), "k1", {"text": "red", "color": "red", "n": 0, "note": "note: red"}, False),
        ("search", ("a",), "red", None, 1, 0),
    ]
)
def test_it_answers_as_langgraphs_in_memory_store(steps: list[tuple[Any, ...]]) -> None:
    config: Any = {"dims": EMBED.dims, "embed": EMBED, "fields": ["text"]}
    ours, theirs = LetheStore(index=config), InMemoryStore(index=config)
    for step in steps:
        if step[0] == "put":
            _, namespace, key, value, index = step
            ours.batch([PutOp(namespace, key, value, index=index)])
            # InMemoryStore keeps the vectors of an item's earlier value for the fields a put does
            # not embed again (index=False included), so a search finds it by what it said before
            # (LangGraph's bug): here each put replaces the item, vectors and all.
            theirs.batch([PutOp(namespace, key, None)])  # (one batch would keep only its last put of a key)
            theirs.batch([PutOp(namespace, key, value, index=index)])
            continue
        _, prefix, query, where, limit, offset = step
        op = SearchOp(prefix, where, limit, offset, query)
        mine, reference = ours.batch([op])[0], theirs.batch([op])[0]
        assert isinstance(mine, list)
        assert isinstance(reference, list)
        if query is None:  # no ranking: the same items (LangGraph's order is its dict's)
            everything = SearchOp(prefix, where, 1000, 0, None)
            assert sorted(_answer(ours.batch([everything])[0])) == sorted(_answer(theirs.batch([everything])[0]))  # type: ignore[arg-type]
            assert len(mine) == len(reference)
            continue
        # Ranked: the same numbers in the same order; equal numbers may come in another order.
        assert [s for *_, s in _answer(mine) if s is not None] == [s for *_, s in _answer(reference) if s is not None]
        by_key = {(ns, k): s for ns, k, s in _answer(ours.batch([SearchOp(prefix, where, 1000, 0, query)])[0])}  # type: ignore[arg-type]
        for ns, k, s in _answer(reference):
            if s is not None:
                assert by_key[ns, k] == s


# -- texts that embed to all zeros: similarity 0.0, as in InMemoryStore ---------------------


def _directions(texts: list[str]) -> list[list[float]]:
    """An embedder by a text's first word: ``zero`` none, ``pos`` along the query, ``neg`` against it."""
    made = {"zero": [0.0, 0.0, 0.0], "pos": [1.0, 0.5, 0.0], "neg": [-1.0, 0.25, 0.0], "q": [1.0, 0.0, 0.0]}
    return [made[t.split()[0]] for t in texts]


@pytest.mark.parametrize("store", [LetheStore, InMemoryStore])
def test_a_text_embedded_to_zeros_ranks_at_similarity_zero(store: Any) -> None:
    ours = store(index={"dims": 3, "embed": _directions, "fields": ["text", "note"]})
    ours.put(("a",), "neg", {"text": "neg a"})
    ours.put(("a",), "zero", {"text": "zero a"})
    ours.put(("a",), "neg+zero", {"text": "neg b", "note": "zero b"})  # the best of its texts: 0.0
    ours.put(("a",), "zero+pos", {"note": "pos b", "text": "zero c"})
    ours.put(("a",), "unindexed", {"text": "zero d"}, index=False)
    ours.put(("a",), "textless", {"other": 1})
    ours.put(("a",), "pos", {"text": "pos a"}, index=["text"])
    hits = [(h.key, None if h.score is None else round(h.score, 5)) for h in ours.search(("a",), query="q", limit=10)]
    assert hits[:5] == [("zero+pos", 0.89443), ("pos", 0.89443), ("zero", 0.0), ("neg+zero", 0.0), ("neg", -0.97014)]
    assert sorted(hits[5:]) == [("textless", None), ("unindexed", None)]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["k1", "k2", "k3", "k4"]),
            st.sampled_from(["zero a", "pos a", "neg a", "neg b", "pos b"]),
            st.one_of(st.none(), st.sampled_from(["zero n", "neg n", "pos n"])),
            st.sampled_from([None, False, ["text"], ["note", "text"]]),
        ),
        min_size=1,
        max_size=8,
    ),
    st.integers(1, 5),
    st.integers(0, 2),
)
def test_zero_embeddings_answer_as_langgraphs_in_memory_store(
    puts: list[tuple[str, str, str | None, Any]], limit: int, offset: int
) -> None:
    config: Any = {"dims": 3, "embed": _directions, "fields": ["text", "note"]}
    ours, theirs = LetheStore(index=config), InMemoryStore(index=config)
    for key, text, note, index in puts:
        value = {"text": text} if note is None else {"text": text, "note": note}
        ours.put(("a",), key, value, index=index)
        theirs.delete(("a",), key)  # (InMemoryStore keeps the vectors of a put's earlier value)
        theirs.put(("a",), key, value, index=index)
    for lim, off in ((limit, offset), (10, 0)):
        mine = _answer(ours.search(("a",), query="q", limit=lim, offset=off))
        reference = _answer(theirs.search(("a",), query="q", limit=lim, offset=off))
        # Equal numbers may come in another order (InMemoryStore keeps a re-put key's first place),
        # and InMemoryStore fills a page with unscored items past any offset (as the test above).
        assert [s for *_, s in mine if s is not None] == [s for *_, s in reference if s is not None]
    everything = _answer(theirs.search(("a",), query="q", limit=10))
    assert sorted(_answer(ours.search(("a",), query="q", limit=10)), key=str) == sorted(everything, key=str)


def test_a_zero_embedding_stays_out_of_the_value_and_a_real_vector_clears_it() -> None:
    store = LetheStore(index={"dims": 3, "embed": _directions, "fields": ["text"]})
    store.put(("a",), "k", {"text": "zero a"})
    assert store.get(("a",), "k").value == {"text": "zero a"}  # type: ignore[union-attr]
    (hit,) = store.search(("a",), query="q")
    assert (hit.value, hit.score) == ({"text": "zero a"}, 0.0)
    store.update(("a",), "k", lambda v: {"text": "neg a"})
    assert store.shared(("a",)).current().peek("k").metadata.keys() == {"created_at", "updated_at"}
    assert [h.score for h in store.search(("a",), query="q")] == [pytest.approx(-0.97014, abs=1e-5)]
    store.put(("a",), "k", {"text": "zero a"}, index=False)  # unindexed: scoreless again, not 0.0
    assert [h.score for h in store.search(("a",), query="q")] == [None]


def test_a_zero_embedding_ranks_by_its_decay_with_a_template() -> None:
    with freeze_time("2026-01-01 12:00:00") as clock:
        store = LetheStore(
            index={"dims": 3, "embed": _directions, "fields": ["text"]},
            memory=Memory(max_entries=10, half_life=3600),
            decay_weight=1.0,
        )
        store.put(("m",), "old", {"text": "zero a"})
        clock.tick(3600)
        store.put(("m",), "new", {"text": "neg a"})
        hits = store.search(("m",), query="q", refresh_ttl=False)
        assert [(h.key, h.score) for h in hits] == [
            ("old", pytest.approx(0.0 + 0.5)),
            ("new", pytest.approx(-0.97014 + 1.0, abs=1e-5)),
        ]


# -- a memory template: bounded, decaying namespaces ---------------------------------------


def test_a_template_bounds_each_namespace_and_reports_what_it_evicts() -> None:
    evicted: list[Entry[Any, Any]] = []
    store = LetheStore(memory=Memory(max_entries=3, on_evict=evicted.extend))
    with freeze_time("2026-01-01 12:00:00") as clock:
        for i in range(5):
            store.put(("user",), f"k{i}", {"text": f"fact {i}"})
            store.put(("other",), f"k{i}", {"text": f"fact {i}"})
            clock.tick(60)
    assert sorted(i.key for i in store.search(("user",), limit=10)) == ["k2", "k3", "k4"]
    assert sorted(i.key for i in store.search(("other",), limit=10)) == ["k2", "k3", "k4"]
    assert sorted(e.key for e in evicted) == ["k0", "k0", "k1", "k1"]
    feed = [e.key for _, entries in store.shared(("user",)).evictions() for e in entries]
    assert sorted(feed) == ["k0", "k1"]


def test_a_template_ranks_by_similarity_plus_decay_and_reads_rehearse() -> None:
    index: Any = {"dims": EMBED.dims, "embed": EMBED, "fields": ["text"]}
    with freeze_time("2026-01-01 12:00:00") as clock:
        store = LetheStore(index=index, memory=Memory(max_entries=100, half_life=3600), decay_weight=1.0)
        store.put(("m",), "old", {"text": "red apple"})
        clock.tick(7200)
        store.put(("m",), "new", {"text": "red apple"})
        hits = store.search(("m",), query="red apple", refresh_ttl=False)
        assert [h.key for h in hits] == ["new", "old"]
        assert hits[0].score == pytest.approx(1.0 + 1.0)
        assert hits[1].score == pytest.approx(1.0 + 0.25)
        shared = store.shared(("m",))
        assert shared.current().peek("old").access_count == 0  # refresh_ttl=False only observes
        store.get(("m",), "old")  # a read that refreshes rehearses
        assert shared.current().peek("old").access_count == 1
        store.search(("m",), query="apple")
        assert shared.current().peek("old").access_count == 2
        assert shared.current().peek("new").access_count == 1


def test_a_put_keeps_the_importance_and_the_pin_set_through_lethe() -> None:
    store = LetheStore(memory=Memory(max_entries=2))
    store.put(("p",), "kept", {"v": 1})
    store.shared(("p",)).update(lambda m: m.pin("kept").touch("kept", importance=3.0))
    store.put(("p",), "kept", {"v": 2})
    store.update(("p",), "kept", lambda v: {"v": 3})
    for key in ("a", "b", "c"):
        store.put(("p",), key, {"v": 0})
    entry = store.shared(("p",)).current().peek("kept")
    assert (entry.value, entry.pinned, entry.importance) == ({"v": 3}, True, 3.0)
    store.put(("p",), "kept", {"v": 4}, ttl=5)  # a deadline unpins
    assert not store.shared(("p",)).current().peek("kept").pinned


def test_without_a_template_reads_write_nothing() -> None:
    store = LetheStore()
    store.put(("m",), "a", {"text": "x"})
    version = store.shared(("m",)).version
    store.get(("m",), "a")
    store.search(("m",))
    assert store.shared(("m",)).version == version


# -- TTL -------------------------------------------------------------------------------------


def test_ttl_items_vanish_and_refreshing_reads_move_the_deadline() -> None:
    with freeze_time("2026-01-01 12:00:00") as clock:
        store = LetheStore(ttl={"default_ttl": 10})
        store.put(("t",), "kept", {"v": 1})
        store.put(("t",), "short", {"v": 2}, ttl=1)
        store.put(("t",), "forever", {"v": 3}, ttl=None)
        created = store.get(("t",), "kept", refresh_ttl=False)
        assert created is not None
        clock.tick(timedelta(minutes=2))
        assert store.get(("t",), "short") is None
        clock.tick(timedelta(minutes=7))
        refreshed = store.get(("t",), "kept")  # moves its deadline to 12:19
        assert refreshed is not None
        assert refreshed.created_at == created.created_at
        clock.tick(timedelta(minutes=9))
        assert store.get(("t",), "kept", refresh_ttl=False) is not None
        clock.tick(timedelta(minutes=2))
        assert store.get(("t",), "kept") is None
        assert store.get(("t",), "forever") is not None
        assert [i.key for i in store.search(("t",))] == ["forever"]


def test_created_at_stays_and_updated_at_moves() -> None:
    store = LetheStore()
    with freeze_time("2026-01-01 12:00:00") as clock:
        store.put(("n",), "k", {"v": 1})
        clock.tick(60)
        store.put(("n",), "k", {"v": 2})
    item = store.get(("n",), "k")
    assert item is not None
    assert item.created_at == datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
    assert item.updated_at == datetime(2026, 1, 1, 12, 1, tzinfo=timezone.utc)


def test_entries_another_client_put_read_as_items(tmp_path: Path) -> None:
    # A namespace is a lethe memory any Shared may write: what such a writer put in place of the
    # item's times, or a value that is not a JSON object, reads as an item still.
    engine = SQLiteStore(tmp_path / "m.db")
    store = LetheStore(engine)
    store.put(("users", "ada"), "tea", {"text": "likes genmaicha"})
    template = store.shared(("users", "ada")).current().configure(on_evict=None).clear()
    other: Shared[str, Any] = Shared(engine, NAME_PREFIX + '["users","ada"]', template)
    odd = {"created_at": "yesterday", "updated_at": 5}
    naive = {"created_at": "2026-01-01T12:00:00", "updated_at": "2026-01-02T12:00:00+00:00"}
    other.update(lambda m: m.put({"text": "x"}, key="odd", metadata=odd).put("a text", key="plain", metadata=naive))
    odd_item, plain = store.get(("users", "ada"), "odd"), store.get(("users", "ada"), "plain")
    assert odd_item is not None
    assert plain is not None
    held = other.current()
    assert (odd_item.created_at, odd_item.updated_at) == (held.peek("odd").inserted_at,) * 2
    assert (plain.created_at, plain.updated_at) == (
        held.peek("plain").inserted_at,
        datetime(2026, 1, 2, 12, tzinfo=timezone.utc),
    )
    assert plain.value == {"value": "a text"}
    assert sorted(item.key for item in store.search(("users", "ada"))) == ["odd", "plain", "tea"]
    engine.close()


def test_a_namespace_dropped_by_another_client_reads_empty_and_takes_writes(tmp_path: Path) -> None:
    # The memory of a namespace this store holds a replica of is dropped behind its back (an
    # operator's drop, a server restarted without its data): the namespace is as if never
    # written, not an error on every later call until the process restarts.
    engine = SQLiteStore(tmp_path / "m.db")
    store = LetheStore(engine)
    ada, bob = ("users", "ada"), ("users", "bob")
    for namespace in (ada, bob):
        store.put(namespace, "tea", {"text": "likes genmaicha"})
        store.put(namespace, "pet", {"text": "has a cat"})
    other = SQLiteStore(tmp_path / "m.db")
    assert other.drop(store.shared(ada).name)
    assert store.get(ada, "tea") is None
    assert store.search(ada) == []
    assert store.list_namespaces() == [bob]
    assert sorted(item.key for item in store.search(bob)) == ["pet", "tea"]
    assert store.update(ada, "tea", lambda value: None) is None  # (deletes what is not there: nothing)
    store.put(ada, "tea", {"text": "likes sencha"})
    item = store.get(ada, "tea")
    assert item is not None
    assert item.value == {"text": "likes sencha"}
    assert other.drop(store.shared(ada).name)
    updated = store.update(ada, "pet", lambda value: {"text": "has a dog", "was": value})
    assert updated is not None
    assert updated.value == {"text": "has a dog", "was": None}
    assert sorted(item.key for item in store.search(ada)) == ["pet"]
    other.close()
    engine.close()


def test_a_namespace_dropped_under_threads_or_made_again_by_another_client_loses_no_call(tmp_path: Path) -> None:
    # After the drop, every thread's call goes through: one replaces the replica, the others use
    # it (or are told by theirs that the memory's history went back, and go on).
    engine = SQLiteStore(tmp_path / "m.db")
    store = LetheStore(engine)
    ada = ("users", "ada")
    store.put(ada, "seed", {"text": "x"})
    other = SQLiteStore(tmp_path / "m.db")
    assert other.drop(store.shared(ada).name)
    failures: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(10):
                store.put(ada, f"t{t}-{i}", {"text": f"{t} {i}"})
        except BaseException as exc:  # (counted: none may escape)
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(store.search(ada, limit=100)) == 60
    # Dropped and made again by another client: the replica here is told once, the store goes on.
    name = store.shared(ada).name
    assert other.drop(name)
    Shared(other, name, Memory()).update(lambda m: m.put({"text": "from elsewhere"}, key="other"))
    assert [item.key for item in store.search(ada)] == ["other"]
    assert other.drop(name)
    assert len(store.shared(ada).current()) == 0  # (the public replica too: made afresh)
    other.close()
    engine.close()


def test_an_update_that_deletes_where_nothing_was_makes_no_memory(tmp_path: Path) -> None:
    engine = SQLiteStore(tmp_path / "m.db")
    store = LetheStore(engine)
    assert store.update(("users", "ada"), "tea", lambda value: None) is None
    assert engine.names() == []
    store.put(("users", "ada"), "tea", {"text": "likes genmaicha"})
    name = store.shared(("users", "ada")).name
    assert engine.drop(name)
    assert store.update(("users", "ada"), "tea", lambda value: None) is None
    assert engine.names() == []
    engine.close()


def test_a_store_keeps_the_replicas_of_the_namespaces_it_used_last_only() -> None:
    # A server with a namespace per user must not keep every one it ever saw in memory.
    store = LetheStore()
    store.put(("first",), "k", {"v": 0})
    first = weakref.ref(store.shared(("first",)))
    for i in range(1100):
        store.put((f"user-{i}",), "k", {"v": i})
    gc.collect()
    assert first() is None
    item = store.get(("first",), "k")  # read from the engine again
    assert item is not None
    assert item.value == {"v": 0}
    assert len(store.list_namespaces(limit=2000)) == 1101
    store.close()


# -- bad input: a clear error, nothing written -----------------------------------------------


class Failing(CharacterEmbeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("the embedding service is down")


class Short(CharacterEmbeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [v[:-1] for v in super().embed_documents(texts)]


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"memory": {"max_entries": 3}}, TypeError, "memory"),
        ({"decay_weight": -1.0, "memory": Memory()}, ValueError, "decay_weight"),
        ({"decay_weight": float("nan"), "memory": Memory()}, ValueError, "decay_weight"),
        ({"decay_weight": 1.0}, ValueError, "needs a memory template"),
        ({"ttl": {"default_ttl": 0}}, ValueError, "default_ttl"),
        ({"ttl": {"default_ttl": 1e12}}, ValueError, "default_ttl"),  # longer than datetime's range
        ({"index": {"dims": 0, "embed": EMBED}}, ValueError, "dims"),
        ({"store": object()}, TypeError, "store"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        LetheStore(**options)


def test_bad_operations_name_what_is_wrong_and_write_nothing() -> None:
    store = LetheStore(index={"dims": EMBED.dims, "embed": EMBED})
    store.put(("n",), "k", {"text": "kept"})
    before = store.shared(("n",)).version
    with pytest.raises(ValueError, match="Invalid filter key"):
        store.search(("n",), filter={"a b": 1})
    with pytest.raises(ValueError, match=r"\$like"):
        store.search(("n",), filter={"a": {"$like": 1}})
    with pytest.raises(TypeError, match="value must be a dict"):
        store.batch([PutOp(("n",), "k", ["not", "a", "dict"])])  # type: ignore[arg-type]
    for ttl in (-5, 1e13, float("inf")):  # (1e13 minutes: no timedelta holds it)
        with pytest.raises(ValueError, match="ttl"):
            store.put(("n",), "k", {"text": "x"}, ttl=ttl)
    with pytest.raises(ValueError, match="ttl"):  # a deadline past datetime.max from now
        store.put(("n",), "k", {"text": "x"}, ttl=5e9)
    with pytest.raises(InvalidNamespaceError, match="langgraph"):  # as put refuses it
        store.update(("langgraph", "n"), "k", lambda v: {"text": "x"})
    assert store.list_namespaces() == [("n",)]  # nothing was made for it
    with pytest.raises(InvalidNamespaceError):
        store.put(("n", "a.b"), "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("n", ""), "k")])
    with pytest.raises(TypeError, match="fn must return a dict"):
        store.update(("n",), "k", lambda v: 3)  # type: ignore[arg-type,return-value]
    for embedder, error, match in [(Failing(16), RuntimeError, "down"), (Short(16), ValueError, "dimensions")]:
        other = LetheStore(index={"dims": 16, "embed": embedder})
        with pytest.raises(error, match=match):
            other.batch([PutOp(("n",), "a", {"text": "one"}), PutOp(("n",), "b", {"text": "two"})])
        assert other.search(("n",)) == []
        with pytest.raises(error, match=match):
            other.update(("n",), "a", lambda v: {"text": "one"})
        assert other.get(("n",), "a") is None
    assert store.shared(("n",)).version == before
    assert store.get(("n",), "k").value == {"text": "kept"}  # type: ignore[union-attr]


def test_values_are_copied_in_and_out_and_a_failed_batch_writes_nothing() -> None:
    store = LetheStore()
    value: dict[str, Any] = {"deep": {"n": 1}, "pair": (1, 2)}
    store.put(("v",), "k", value)
    value["deep"]["n"] = 2  # the caller's dict changes after the put
    got = store.get(("v",), "k")
    assert got is not None
    assert got.value == {"deep": {"n": 1}, "pair": [1, 2]}  # a tuple is kept as JSON keeps it
    got.value["deep"]["n"] = 3  # and a reader changes what it got
    assert store.get(("v",), "k").value["deep"] == {"n": 1}  # type: ignore[union-attr]
    assert store.search(("v",))[0].value["deep"] == {"n": 1}
    with pytest.raises(TypeError, match="JSON"):
        store.batch([PutOp(("a",), "k", {"v": 1}), PutOp(("b",), "k", {"when": datetime.now(timezone.utc)})])
    with pytest.raises(ValueError, match="JSON"):
        store.put(("a",), "k", {"v": float("nan")})
    assert store.list_namespaces() == [("v",)]  # neither namespace of the failed batch was written


async def test_aupdate_is_update_for_asyncio() -> None:
    store = LetheStore()
    for _ in range(3):
        await store.aupdate(("s",), "n", lambda v: {"n": (v or {"n": 0})["n"] + 1})
    assert (await store.aget(("s",), "n")).value == {"n": 3}  # type: ignore[union-attr]


def test_filters_are_json_comparisons() -> None:
    store = LetheStore()
    store.put(("f",), "one", {"n": 1, "flag": True, "tag": "b", "deep": {"x": [1, 2]}})
    store.put(("f",), "yes", {"n": 2, "flag": 1, "tag": "a"})

    def keys(where: dict[str, Any]) -> list[str]:
        return sorted(i.key for i in store.search(("f",), filter=where))

    assert keys({"flag": True}) == ["one"]  # true is not 1
    assert keys({"flag": 1}) == ["yes"]
    assert keys({"tag": {"$lt": "b"}}) == ["yes"]
    assert keys({"n": {"$gt": "0"}}) == []  # a number and a string do not order
    assert keys({"deep.x": [1, 2]}) == ["one"]
    assert keys({"deep": {"x": [1, 2]}}) == ["one"]
    assert keys({"n": {"$gte": 1, "$lt": 2}}) == ["one"]
    # A plain key beside operators is no operator (it was taken for "$lte"), at any depth.
    for where in ({"n": {"$gt": 1, "x": 2}}, {"deep": {"x": {"$eq": [1, 2], "y": 1}}}, {"n": {"$in": [1]}}):
        with pytest.raises(ValueError, match="unsupported operator"):
            keys(where)


def test_a_store_lists_only_its_own_namespaces(tmp_path: Path) -> None:
    with SQLiteStore(str(tmp_path / "s.db")) as engine:
        Shared(engine, "plain lethe memory", Memory())
        store = LetheStore(engine)
        store.put(("a", "b"), "k", {"v": 1})
        store.put(("c",), "k", {"v": 1})
        store.delete(("c",), "k")  # an emptied namespace is not listed
        assert store.list_namespaces() == [("a", "b")]
        ours = [NAME_PREFIX + '["a","b"]', NAME_PREFIX + '["c"]']
        assert sorted(engine.names()) == sorted(["plain lethe memory", *ours])
        store.close()


# -- several processes -----------------------------------------------------------------------


def _count(path: str, times: int) -> None:
    with SQLiteStore(path) as engine, LetheStore(engine) as store:
        for _ in range(times):
            store.update(("stats",), "visits", lambda v: {"n": (v or {"n": 0})["n"] + 1})


def _put_keys(path: str, worker: int, times: int) -> None:
    with SQLiteStore(path) as engine, LetheStore(engine) as store:
        for i in range(times):
            store.put(("notes",), f"w{worker}-{i}", {"text": f"note {i} of {worker}"})


@pytest.fixture
def spawn() -> Iterator[Any]:
    context = multiprocessing.get_context("spawn")
    started: list[Any] = []

    def run(target: Any, *args: Any) -> None:
        process = context.Process(target=target, args=args)
        process.start()
        started.append(process)

    yield run
    for process in started:
        process.join(timeout=120)
        assert process.exitcode == 0


def test_update_loses_nothing_across_processes(tmp_path: Path, spawn: Any) -> None:
    path = str(tmp_path / "shared.db")
    for _ in range(4):
        spawn(_count, path, 25)
    for process in multiprocessing.active_children():
        process.join(timeout=120)
    with SQLiteStore(path) as engine, LetheStore(engine) as store:
        assert store.get(("stats",), "visits").value == {"n": 100}  # type: ignore[union-attr]


def test_each_put_is_one_commit_across_processes(tmp_path: Path, spawn: Any) -> None:
    path = str(tmp_path / "shared.db")
    for worker in range(4):
        spawn(_put_keys, path, worker, 25)
    for process in multiprocessing.active_children():
        process.join(timeout=120)
    with SQLiteStore(path) as engine, LetheStore(engine) as store:
        assert len(store.search(("notes",), limit=1000)) == 100
        assert store.shared(("notes",)).version == 100  # 100 puts, 100 commits: none merged, none lost


# -- every engine ----------------------------------------------------------------------------


def test_every_engine_serves_it_and_a_second_process_sees_the_same(store: Any) -> None:
    index: Any = {"dims": EMBED.dims, "embed": EMBED, "fields": ["text", "note"]}
    writer, reader = LetheStore(store, index=index), LetheStore(store, index=index)
    writer.put(("u", "m"), "tea", {"text": "green tea", "note": "note: every morning"})
    writer.put(("u", "m"), "car", {"text": "blue car"})
    writer.put(("u", "x"), "dog", {"text": "red dog"}, index=False)
    writer.update(("u", "m"), "car", lambda v: {**(v or {}), "seen": 2})
    mine = _answer(writer.search(("u",), query="note: every morning"))
    assert mine == _answer(reader.search(("u",), query="note: every morning"))
    assert [key for _, key, _ in mine] == ["tea", "car", "dog"]
    assert mine[2][2] is None  # not indexed: listed after the ranked ones, without a score
    assert reader.get(("u", "m"), "car").value == {"text": "blue car", "seen": 2}  # type: ignore[union-attr]
    assert reader.list_namespaces(prefix=("u",)) == [("u", "m"), ("u", "x")]


# -- abatch: concurrent callers batched together ---------------------------------


async def test_concurrent_async_writes_to_a_namespace_commit_together(tmp_path: Path) -> None:
    # (LangGraph's async stores batch their callers so; 60,000 such calls took 94 s on PostgreSQL)
    import asyncio

    with LetheStore(SQLiteStore(tmp_path / "m.db")) as store:
        await asyncio.gather(*(store.aput(("n",), f"k{i}", {"i": i}) for i in range(50)))
        got = await asyncio.gather(*(store.aget(("n",), f"k{i}") for i in range(50)))
        assert [item.value for item in got] == [{"i": i} for i in range(50)]  # type: ignore[union-attr]
        assert store.shared(("n",)).version < 10  # far fewer commits than puts


def _failing_summaries() -> LetheStore:
    """A store whose namespace ("a",) holds one item that cannot be summarized: a put there evicts it and fails."""

    def summarize(entry: Entry[str, Any]) -> str:
        if entry.value.get("boom"):
            raise RuntimeError("boom")
        return "summary"

    return LetheStore(memory=Memory(max_entries=1, summarize_fn=summarize))


async def test_a_batched_caller_that_fails_before_anything_is_written_fails_alone() -> None:
    import asyncio

    store = _failing_summaries()
    await store.aput(("a",), "x", {"boom": True})
    outcomes = await asyncio.gather(
        store.aput(("a",), "z", {"v": 2}),  # evicts x, whose summary fails: nothing of it is written
        store.aput(("b",), "y", {"v": 1}),
        store.aput(("c",), "w", {"v": 3}),
        return_exceptions=True,
    )
    assert "boom" in repr(outcomes[0])
    assert outcomes[1:] == [None, None]
    assert [await store.aget(ns, key) is not None for ns, key in ((("b",), "y"), (("c",), "w"), (("a",), "x"))] == [
        True,
        True,
        True,
    ]
    assert await store.aget(("a",), "z") is None


async def test_a_batched_run_that_fails_after_a_commit_fails_every_caller_in_it() -> None:
    # (run again, each batch alone, the namespace written already would be written twice)
    import asyncio

    store = _failing_summaries()
    await store.aput(("a",), "x", {"boom": True})
    version = store.shared(("b",)).version
    outcomes = await asyncio.gather(
        store.aput(("b",), "y", {"v": 1}),
        store.aput(("a",), "z", {"v": 2}),
        return_exceptions=True,
    )
    assert all("boom" in repr(outcome) for outcome in outcomes)
    assert store.shared(("b",)).version == version + 1  # written once, as one batch of both would
    assert await store.aget(("a",), "z") is None


async def test_a_cancelled_batched_caller_leaves_the_others_be() -> None:
    import asyncio

    store = LetheStore()
    tasks = [asyncio.ensure_future(store.aput(("n",), f"k{i}", {"i": i})) for i in range(20)]
    await asyncio.sleep(0)  # (every caller queued)
    tasks[3].cancel()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    assert [o for i, o in enumerate(outcomes) if i != 3] == [None] * 19
    assert sorted(item.key for item in await store.asearch(("n",), limit=100)) == sorted(
        f"k{i}" for i in range(20) if i != 3
    )  # (cancelled while its batch waited: not written)


def test_async_callers_on_several_event_loops_at_once() -> None:
    import asyncio

    store = LetheStore()
    errors: list[BaseException] = []

    async def write(loop_number: int) -> None:
        await asyncio.gather(*(store.aput(("n", str(loop_number)), f"k{i}", {"i": i}) for i in range(30)))

    def run(loop_number: int) -> None:
        try:
            asyncio.run(write(loop_number))
        except BaseException as exc:  # (reported by the test, not lost in the thread)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(store.list_namespaces()) == [("n", str(n)) for n in range(4)]
    assert all(len(store.search(("n", str(n)), limit=100)) == 30 for n in range(4))


# -- a batch that fails writes nothing (found by a hostile run) --------------------


@pytest.mark.parametrize(
    "bad",
    [
        PutOp(("other",), "k", {"v": 1}, ttl=5e9),  # (within ttl's bound, past datetime.max from now)
        PutOp(("bad\ud800",), "k", {"v": 1}),  # (a label no store can name)
    ],
)
def test_a_batch_refused_while_it_would_write_writes_nothing(bad: PutOp, tmp_path: Path) -> None:
    with LetheStore(SQLiteStore(tmp_path / "m.db")) as store:
        with pytest.raises((ValueError, InvalidNamespaceError)):
            store.batch([PutOp(("good",), "k", {"v": 1}), bad])
        assert store.get(("good",), "k") is None
        assert store.list_namespaces() == []


def test_a_value_nested_too_deeply_to_copy_out_is_refused_at_put() -> None:
    store = LetheStore()
    deep: Any = 1
    for _ in range(500):
        deep = {"a": deep}
    with pytest.raises(ValueError, match="nested at most 200 levels"):
        store.put(("p",), "deep", deep)
    assert store.search(("p",)) == []
    kept: Any = 1
    for level in range(199):  # (with the top one, 200 levels, lists among them)
        kept = {"a": kept} if level % 2 else [kept]
    kept = {"top": kept}
    store.put(("p",), "kept", kept)
    assert store.get(("p",), "kept").value == kept  # type: ignore[union-attr]


def test_an_empty_indexed_text_is_embedded_as_langgraphs_in_memory_store_has_it() -> None:
    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, float(len(t)), 0.5] for t in texts]

    answers = []
    for make in (InMemoryStore, LetheStore):
        store = make(index={"dims": 3, "embed": embed, "fields": ["text"]})
        store.put(("a",), "empty", {"text": ""})
        store.put(("a",), "word", {"text": "normal"})
        answers.append(_answer(store.search(("a",), query="abc")))
    assert answers[0] == answers[1]
    assert answers[1][1][2] is not None  # ranked, not listed after the ranked ones


def test_a_namespace_given_as_a_str_is_refused_not_split_into_letters() -> None:
    store = LetheStore()
    store.put(("f",), "k", {"v": 1})
    with pytest.raises(TypeError, match="namespace_prefix must be a tuple"):
        store.search("f")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="namespace must be a tuple"):
        store.put("ab", "k", {"v": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="namespace must be a tuple"):
        store.get("f", "k")  # type: ignore[arg-type]
    assert store.list_namespaces() == [("f",)]


def test_a_namespace_given_as_a_str_is_refused_by_update_shared_and_list_namespaces() -> None:
    store = LetheStore()
    with pytest.raises(TypeError, match="namespace must be a tuple"):
        store.update("users", "k", lambda v: {"n": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="namespace must be a tuple"):
        store.shared("notes")  # type: ignore[arg-type]
    store.put(("u", "s"), "k", {"v": 1})
    store.put(("us", "x"), "k", {"v": 1})
    store.put(("x", "public"), "k", {"v": 1})
    # (a path given as a str is one label, as LangGraph's own tests pass it: never one per letter)
    assert store.list_namespaces(prefix="us") == [("us", "x")]  # type: ignore[arg-type]
    assert store.list_namespaces(suffix="public") == [("x", "public")]  # type: ignore[arg-type]


def test_a_value_nested_in_tuples_is_measured_as_it_is_kept() -> None:
    store = LetheStore()
    deep: Any = 1
    for _ in range(500):
        deep = (deep,)
    with pytest.raises(ValueError, match="nested at most 200 levels"):
        store.put(("p",), "deep", {"x": deep})
    assert store.search(("p",)) == []


def test_a_ttl_whose_deadline_cannot_move_further_leaves_reads_be() -> None:
    now = datetime.now(timezone.utc)
    longest = (datetime.max.replace(tzinfo=timezone.utc) - now) / timedelta(minutes=1) - 1
    with freeze_time(now) as frozen:
        store = LetheStore()
        store.put(("t",), "k", {"v": 1}, ttl=longest)
        frozen.tick(timedelta(minutes=5))
        assert store.get(("t",), "k").value == {"v": 1}  # type: ignore[union-attr]
        assert [item.key for item in store.search(("t",))] == ["k"]


def test_a_loop_run_until_an_async_call_is_answered_leaves_nothing_behind() -> None:
    # (a drain still waiting for its thread when such a loop closed kept the loop for good, and
    # Python warned of a task destroyed while pending)
    import asyncio

    store = LetheStore()
    loops = []
    for i in range(3):
        loop = asyncio.new_event_loop()
        loop.run_until_complete(store.aput(("n",), f"k{i}", {"i": i}))
        loop.close()
        loops.append(weakref.ref(loop))
        del loop
    gc.collect()
    assert [made() for made in loops] == [None, None, None]
    assert len(store.search(("n",))) == 3


def test_a_namespace_given_as_a_list_has_its_labels_checked_too() -> None:
    store = LetheStore()
    with pytest.raises(InvalidNamespaceError, match="UTF-8"):
        store.shared(["bad\ud800"])  # type: ignore[arg-type]
    assert store.list_namespaces() == []
