"""Defects a hostile run found in the core: each test failed before its fix."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory
from lethe._memory.document import VERSION

from ._support import START

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


# --- put_many copies metadata per entry, as chained puts do ------------------------------


@pytest.mark.parametrize("cap", [10, 3], ids=["in bulk", "chain at capacity"])
def test_put_many_gives_each_entry_its_own_metadata(clock: ManualClock, cap: int) -> None:
    md: dict[str, Any] = {"l": [1], "d": {"x": [2]}, "t": ([3],), "s": "kept"}
    empty: Memory[str, int] = Memory(max_entries=cap, clock_fn=clock)
    start = empty.put(0, key="z")
    chain = start.put(1, key="a", metadata=md).put(2, key="b", metadata=md).put(3, key="c", metadata=md)
    batch = start.put_many({"a": 1, "b": 2, "c": 3}, metadata=md)
    assert batch == chain
    a, b = batch.peek("a").metadata, batch.peek("b").metadata
    assert a["l"] is not b["l"]
    assert a["d"]["x"] is not b["d"]["x"]
    assert a["t"][0] is not b["t"][0]
    for mem in (chain, batch):  # what a caller can do through an entry it was given
        mem.peek("a").metadata["l"].append(9)
        mem.peek("a").metadata["d"]["x"].append(9)
    assert batch == chain
    assert batch.peek("b").metadata == batch.peek("c").metadata == md


def test_put_many_shares_metadata_without_containers(clock: ManualClock) -> None:
    empty: Memory[str, int] = Memory(clock_fn=clock)
    batch = empty.put_many({"a": 1, "b": 2}, metadata={"source": "user"})
    assert batch.peek("a").metadata is batch.peek("b").metadata  # nothing in it a caller could change


# --- put_many names its items -------------------------------------------------------------


@pytest.mark.parametrize("items", [None, 5, 1.5, object()])
def test_put_many_names_items_that_are_not_iterable(clock: ManualClock, items: Any) -> None:
    mem: Memory[Any, Any] = Memory(clock_fn=clock)
    with pytest.raises(TypeError, match=r"^items must be a mapping or an iterable of \(key, value\) pairs, got "):
        mem.put_many(items)


def test_put_many_keeps_an_iterators_own_type_error(clock: ManualClock) -> None:
    def pairs() -> Any:
        yield ("a", 1)
        raise TypeError("from the caller's generator")

    with pytest.raises(TypeError, match=r"^from the caller's generator$"):
        Memory(clock_fn=clock).put_many(pairs())


# --- consolidate checks a merged entry's decay_state -------------------------------------


def _duplicates(clock: ManualClock, decay: Any) -> Memory[str, str]:
    mem: Memory[str, str] = Memory(decay_fn=decay, clock_fn=clock)
    mem = mem.put("deploy failed on node 7", key="a").put("deploy failed on node 7!", key="b")
    clock.advance(timedelta(seconds=5))
    return mem.get("b")[0]


@pytest.mark.parametrize(
    ("decay", "state", "why"),
    [
        ("actr", "garbage", "bad access time"),
        ("actr", (float("nan"), 1.0), "bad access time"),
        ("actr", "a list", "would read back as"),  # not the tuple ACT-R keeps
        ("actr", (-5.0, 3.0), "before the entry's inserted_at"),
        ("actr", "later", "after the memory's clock reading"),
        ("fsrs", "garbage", "bad number"),
        ("fsrs", (1.0, 2.0, 3.0), "would read back as (1.0, 2.0)"),
        ("fsrs", (-5.0, 3.0), "stability > 0"),
        ("exponential", "garbage", "keeps none"),
        ("exponential", (1.0, 2.0), "keeps none"),
    ],
)
def test_consolidate_refuses_a_merged_decay_state_its_model_cannot_keep(
    clock: ManualClock, decay: str, state: Any, why: str
) -> None:
    mem = _duplicates(clock, decay)
    last = mem.peek("b").accessed_us
    state = {"later": (last + 1.0,), "a list": [last]}.get(state, state) if isinstance(state, str) else state
    before = mem.to_dict()
    with pytest.raises(ValueError, match=r"^merge returned decay_state .*" + re.escape(why)):
        mem.consolidate(merge=lambda g: replace(g[0], decay_state=state))
    assert mem.to_dict() == before


@pytest.mark.parametrize("decay", ["actr", "fsrs", "exponential"])
def test_consolidate_keeps_a_merged_decay_state_its_model_keeps(clock: ManualClock, decay: str) -> None:
    mem = _duplicates(clock, decay)
    merged, groups = mem.consolidate(merge=lambda g: next(e for e in g if e.key == "b"))
    assert [sorted(e.key for e in g) for g in groups] == [["a", "b"]]
    assert merged.peek("b").decay_state == mem.peek("b").decay_state
    assert merged.score("b") == mem.score("b")
    assert Memory.from_dict(json.loads(json.dumps(merged.to_dict())), clock_fn=clock) == merged


def test_consolidate_keeps_a_custom_functions_state_as_given(clock: ManualClock) -> None:
    def flat(entry: Entry[Any, Any], now: Any) -> float:
        return 1.0

    mem = _duplicates(clock, flat)
    merged, _ = mem.consolidate(merge=lambda g: replace(g[0], decay_state="its own"))
    assert [e.decay_state for e in merged] == ["its own"]


# --- from_dict names only what a document may name ----------------------------------------


def _listed(message: str) -> list[str]:
    listed = ast.literal_eval(message.partition("choose one of ")[2])
    assert isinstance(listed, list)
    return listed


def test_from_dict_lists_only_names_a_document_can_hold(clock: ManualClock) -> None:
    doc = Memory(decay_fn="actr", clock_fn=clock).to_dict()
    with pytest.raises(ValueError, match="unknown decay function 'nope'") as caught:
        Memory.from_dict({**doc, "decay_fn": {**doc["decay_fn"], "name": "nope"}}, clock_fn=clock)
    refused: list[str] = []
    for name in _listed(str(caught.value)):
        try:
            Memory.from_dict({**doc, "decay_fn": {"name": name}}, clock_fn=clock)
        except ValueError as exc:  # (its fields are missing: the name itself was read)
            refused += [name] if "unknown decay function" in str(exc) else []
    assert refused == []


def test_from_dict_says_combined_is_named_actr_in_a_document(clock: ManualClock) -> None:
    doc = Memory(decay_fn="combined", clock_fn=clock).to_dict()
    assert doc["decay_fn"]["name"] == "actr"
    with pytest.raises(ValueError, match=r"^decay_fn\.name: 'combined' is another name for 'actr'.*names it 'actr'"):
        Memory.from_dict({**doc, "decay_fn": {**doc["decay_fn"], "name": "combined"}}, clock_fn=clock)


# --- docs/serialization.md states the version to_dict() writes ----------------------------


def test_serialization_page_states_the_written_version(clock: ManualClock) -> None:
    assert Memory(clock_fn=clock).to_dict()["version"] == VERSION
    page = (DOCS / "serialization.md").read_text()
    stated = {int(v) for v in re.findall(r"version is (\d+)", page)} | {
        int(v) for v in re.findall(r"writes version (\d+)", page)
    }
    assert stated == {VERSION}
