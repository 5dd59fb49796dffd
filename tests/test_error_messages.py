"""Every rejected argument is reported by name, with what was received.

The messages are part of the interface: callers see them in tracebacks and the
docs promise each one names the offending parameter.  They are matched whole
(anchored), so a message naming the wrong parameter or the wrong type fails.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory, SummarizeError
from lethe.decay import Exponential

from ._support import START

NAIVE = datetime(2026, 1, 1)


def exactly(text: str) -> str:
    return "^" + re.escape(text) + "$"


class TestConfiguration:
    @pytest.mark.parametrize(
        ("kwargs", "exc", "message"),
        [
            ({"max_entries": "3"}, TypeError, "max_entries must be a positive int, got str"),
            ({"max_entries": 0}, ValueError, "max_entries must be a positive int, got 0"),
            (
                {"half_life": "1h"},
                TypeError,
                "half_life must be a timedelta or a number of seconds, got str",
            ),
            ({"half_life": -1}, ValueError, "half_life must be a positive, finite duration, got -1"),
            (
                {"eviction_threshold": "x"},
                TypeError,
                "eviction_threshold must be a number between 0 and 1, got str",
            ),
            ({"eviction_threshold": 1.5}, ValueError, "eviction_threshold must be between 0 and 1, got 1.5"),
            ({"summarize_threshold": 2}, ValueError, "summarize_threshold must be between 0 and 1, got 2"),
            ({"summarize_fn": "x"}, TypeError, "summarize_fn must be callable or None, got str"),
            ({"on_evict": 1}, TypeError, "on_evict must be callable or None, got int"),
            ({"clock_fn": object()}, TypeError, "clock_fn must be callable or None, got object"),
            (
                {"decay_fn": 42},
                TypeError,
                "decay_fn must be a built-in name, an object with score(entry, now), "
                "or a callable (entry, now) -> float; got int",
            ),
        ],
    )
    def test_bad_configuration(self, kwargs: dict[str, Any], exc: type[Exception], message: str) -> None:
        with pytest.raises(exc, match=exactly(message)):
            Memory(**kwargs)

    @pytest.mark.parametrize("half_life", [0.001, timedelta(microseconds=1)])
    def test_a_half_life_too_short_for_a_name_is_named(self, half_life: float | timedelta) -> None:
        # "adaptive" turns half_life into a rate per hour, which has a bound: the message names
        # what the caller passed, not the parameter it was turned into.
        with pytest.raises(ValueError, match=r"^half_life: .* s is too short for 'adaptive'.*the shortest is "):
            Memory(decay_fn="adaptive", half_life=half_life)
        mem: Memory[Any, Any] = Memory(decay_fn="adaptive")
        with pytest.raises(ValueError, match=r"^half_life: "):
            mem.configure(half_life=half_life)

    def test_both_thresholds_may_be_one(self) -> None:
        mem: Memory[Any, Any] = Memory(eviction_threshold=1, summarize_threshold=1.0)
        assert (mem.eviction_threshold, mem.summarize_threshold) == (1.0, 1.0)

    def test_a_clock_that_returns_a_bad_time(self) -> None:
        with pytest.raises(ValueError, match=r"^clock_fn\(\) must be timezone-aware, got naive "):
            Memory(clock_fn=lambda: NAIVE).put(1)
        with pytest.raises(TypeError, match=exactly("clock_fn() must be a datetime, got str")):
            Memory(clock_fn=lambda: "now").put(1)  # type: ignore[arg-type,return-value]


class TestPut:
    @pytest.mark.parametrize(
        ("kwargs", "exc", "message"),
        [
            ({"pinned": "yes"}, TypeError, "pinned must be a bool, got str"),
            ({"importance": "1"}, TypeError, "importance must be a number, got str"),
            ({"importance": -1}, ValueError, "importance must be finite and >= 0, got -1"),
            ({"metadata": [("a", 1)]}, TypeError, "metadata must be a mapping or None, got list"),
            ({"key": [1]}, TypeError, "key must be hashable, got list"),
            ({"ttl": "x"}, TypeError, "ttl must be a timedelta or a number of seconds, got str"),
            ({"ttl": 0}, ValueError, "ttl must be a positive, finite duration, got 0"),
            ({"ttl": 1, "expires_at": START}, ValueError, "pass ttl or expires_at, not both"),
            (
                {"pinned": True, "ttl": 1},
                ValueError,
                "ttl/expires_at: a pinned entry cannot expire; pin it after putting it instead",
            ),
            (
                {"pinned": True, "expires_at": START},
                ValueError,
                "ttl/expires_at: a pinned entry cannot expire; pin it after putting it instead",
            ),
            ({"expires_at": "tomorrow"}, TypeError, "expires_at must be a datetime, got str"),
        ],
    )
    def test_bad_put(self, make: Any, kwargs: dict[str, Any], exc: type[Exception], message: str) -> None:
        mem = make()
        with pytest.raises(exc, match=exactly(message)):
            mem.put("v", **kwargs)
        assert len(mem) == 0

    def test_naive_deadline(self, make: Any) -> None:
        with pytest.raises(ValueError, match=r"^expires_at must be timezone-aware, got naive "):
            make().put("v", expires_at=NAIVE)

    def test_summarize_failure_names_the_key_and_the_error(self, make: Any, clock: ManualClock) -> None:
        def boom(entry: Entry[Any, Any]) -> str:
            raise ValueError("boom")

        mem = make(max_entries=1, summarize_fn=boom).put("v", key="old")
        with pytest.raises(SummarizeError, match=exactly("summarize_fn failed for key 'old': ValueError('boom')")):
            mem.put("w", key="new")


class TestReads:
    def test_unhashable_keys(self, make: Any) -> None:
        mem = make().put("v", key="k")
        for read in (mem.__contains__, mem.peek, mem.delete):
            with pytest.raises(TypeError, match=exactly("key must be hashable, got dict")):
                read({})

    def test_numbers_and_predicates(self, make: Any) -> None:
        mem = make().put("v", key="k")
        with pytest.raises(TypeError, match=exactly("threshold must be a number, got str")):
            mem.above("0.5")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=exactly("threshold must be a finite number, got a huge int")):
            mem.above(10**400)
        with pytest.raises(TypeError, match=exactly("predicate must be callable, got int")):
            mem.filter(3)  # type: ignore[arg-type]


class TestEntry:
    def make(self, **kw: Any) -> Entry[Any, Any]:
        fields: dict[str, Any] = {"key": "k", "value": "v", "inserted_at": START, "last_accessed_at": START}
        fields.update(kw)
        return Entry(**fields)

    @pytest.mark.parametrize("field", ["inserted_at", "last_accessed_at", "expires_at"])
    def test_each_instant_is_named(self, field: str) -> None:
        with pytest.raises(ValueError, match=rf"^{field} must be timezone-aware, got naive "):
            self.make(**{field: NAIVE})
        with pytest.raises(TypeError, match=exactly(f"{field} must be a datetime, got float")):
            self.make(**{field: 12.5})

    def test_access_count(self) -> None:
        with pytest.raises(ValueError, match=exactly("access_count must be an int from 0 to 2**53, got -1")):
            self.make(access_count=-1)

    def test_metadata_is_read_only(self) -> None:
        meta = self.make(metadata={"a": 1}).metadata
        with pytest.raises(
            TypeError, match=exactly("entry metadata is read-only; put the entry again with new metadata")
        ):
            meta["a"] = 2  # type: ignore[index]

    def test_metadata_hashes_only_when_its_values_do(self) -> None:
        hashable = self.make(metadata={"a": 1, "b": (2, 3)}).metadata
        assert hash(hashable) == hash(self.make(metadata={"b": (2, 3), "a": 1}).metadata)
        assert len({hashable, self.make(metadata={"a": 1, "b": (2, 3)}).metadata}) == 1
        with pytest.raises(TypeError):
            hash(self.make(metadata={"a": [1]}).metadata)


class TestDecayFunctions:
    def test_a_builtin_names_the_time_it_was_given(self) -> None:
        entry = Entry(key="k", value="v", inserted_at=START, last_accessed_at=START)
        with pytest.raises(ValueError, match=r"^now must be timezone-aware, got naive "):
            Exponential().score(entry, NAIVE)
        with pytest.raises(TypeError, match=exactly("now must be a datetime, got str")):
            Exponential().score(entry, "noon")  # type: ignore[arg-type]
        later = START + timedelta(hours=1)
        assert Exponential().score(entry, later.astimezone(timezone(timedelta(hours=5)))) == 0.5
