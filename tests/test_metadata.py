"""Metadata is a deep, read-only copy with string keys: what JSON keeps, and no caller can change."""

from __future__ import annotations

from typing import Any

import pytest

from lethe import ManualClock, Memory
from lethe.decay import AdaptiveDecay


class TestDeepCopy:
    def test_a_caller_changing_what_it_passed_changes_no_entry(self, make: Any) -> None:
        tags = ["a"]
        nested = {"inner": [1, 2], "set": {1}}
        mem = make().put("v", key="k", metadata={"tags": tags, "nested": nested})
        tags.append("b")
        nested["inner"].append(3)  # type: ignore[attr-defined]
        nested["set"].add(2)  # type: ignore[attr-defined]
        nested["new"] = True
        assert mem.peek("k").metadata == {"tags": ["a"], "nested": {"inner": [1, 2], "set": {1}}}

    def test_old_versions_keep_their_scores(self, clock: ManualClock) -> None:
        """AdaptiveDecay counts list lengths in metadata: a caller's later append must not count."""
        connections = ["x"]
        mem: Memory[Any, Any] = Memory(decay_fn=AdaptiveDecay(), clock_fn=clock)
        mem = mem.put("v", key="k", metadata={"connections": connections})
        clock.advance(7200)
        before = mem.score("k")
        connections.extend(["y"] * 50)
        assert mem.score("k") == before

    def test_tuples_and_plain_values_are_kept(self, make: Any) -> None:
        meta = {"pair": (1, ["x"]), "n": 1, "f": 1.5, "s": "t", "b": True, "none": None}
        got = make().put("v", key="k", metadata=meta).peek("k").metadata
        assert got == meta
        meta["pair"][1].append("y")
        assert got["pair"] == (1, ["x"])


class TestStringKeys:
    @pytest.mark.parametrize(
        ("metadata", "named"),
        [({1: "x"}, "int key 1"), ({"ok": {2: "x"}}, "int key 2"), ({"ok": [{True: 1}]}, "bool key True")],
    )
    def test_a_key_json_would_turn_into_a_string_is_refused_at_put(self, make: Any, metadata: Any, named: str) -> None:
        mem = make().put("v", key="k")
        with pytest.raises(TypeError, match=f"metadata.* keys must be strings, got {named}"):
            mem.put("w", key="w", metadata=metadata)
        assert list(mem.keys()) == ["k"]

    def test_every_metadata_round_trips_through_json(self, make: Any) -> None:
        import json

        mem = make().put("v", key="k", metadata={"a": {"b": [1, {"c": None}]}})
        back = Memory.from_dict(json.loads(json.dumps(mem.to_dict())), clock_fn=mem.clock_fn)
        assert back.peek("k").metadata == mem.peek("k").metadata


def test_metadata_that_contains_itself_is_refused(make: Any) -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match=r"^metadata is nested too deeply, or contains itself$"):
        make().put("v", key="k", metadata={"loop": loop})
