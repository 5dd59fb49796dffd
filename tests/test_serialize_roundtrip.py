"""Memory documents read back exactly: key types, exact fields, the latest clock reading,
decay state only for the function that wrote it, and counters at their bounds."""

from __future__ import annotations

import copy
import enum
import json
import pickle
import warnings
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

import lethe
from lethe import ClockWarning, Entry, ManualClock, Memory
from lethe._core.record import fields
from lethe.decay import ACTR, BUILTINS, FSRS, AccessFrequency, Blend, ByMetadata, Exponential, Importance, Product
from lethe.decay import from_dict as decay_from_dict

from ._support import HOUR, START, fake_clock


def json_copy(data: Any) -> Any:
    return json.loads(json.dumps(data))


def saved(clock: ManualClock, decay: Any = "actr") -> Memory[Any, Any]:
    half_life = {"half_life": 600} if isinstance(decay, str) else {}  # an object has its own
    mem: Memory[Any, Any] = Memory(max_entries=10, decay_fn=decay, clock_fn=clock, **half_life)
    mem = mem.put("a", key="a", metadata={"src": "user"}).put("b", key="b", importance=0.5)
    clock.advance(300)
    mem, _ = mem.get("a")
    mem, _ = mem.get("a")
    clock.advance(60)
    return mem.put("c", key="c", pinned=True)


# -- keys keep their types (item: to_dict never writes what from_dict cannot read) ------------


KEYS: list[Any] = ["1", 1, 2.5, -0.5, False, (1, "a"), (None, (True, 2.0)), ("x",), (), 10**30]


def test_keys_round_trip_through_json_keeping_their_types(clock: ManualClock) -> None:
    mem: Memory[Any, Any] = Memory(clock_fn=clock)
    for i, key in enumerate(KEYS):
        mem = mem.put(i, key=key)
    back = Memory.from_dict(json_copy(mem.to_dict()), clock_fn=clock)
    assert back == mem

    def shape(k: Any) -> Any:
        return (type(k), tuple(shape(x) for x in k)) if isinstance(k, tuple) else (type(k), k)

    assert sorted(map(repr, map(shape, back.keys()))) == sorted(map(repr, map(shape, KEYS)))
    assert back.peek(False).key is False
    assert back.peek((None, (True, 2.0))).key == (None, (True, 2.0))
    assert back.to_dict() == mem.to_dict()


def test_one_and_the_string_one_stay_two_keys(clock: ManualClock) -> None:
    mem: Memory[Any, Any] = Memory(clock_fn=clock).put("int", key=1).put("str", key="1")
    back = Memory.from_dict(json_copy(mem.to_dict()), clock_fn=clock)
    assert (back.peek(1).value, back.peek("1").value) == ("int", "str")
    mem = Memory(clock_fn=clock).put("bool", key=True)
    back = Memory.from_dict(json_copy(mem.to_dict()), clock_fn=clock)
    assert type(next(iter(back.keys()))) is bool


class Color(enum.IntEnum):
    RED = 1


@pytest.mark.parametrize(
    "key",
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        frozenset({1}),
        b"bytes",
        Color.RED,
        (1, float("nan")),
        (1, frozenset()),
        ("x" * 10_000, object()),
        (10**5000, b""),
    ],
    ids=lambda k: type(k).__name__,
)
def test_to_dict_refuses_keys_it_cannot_write_exactly(clock: ManualClock, key: Any) -> None:
    mem: Memory[Any, Any] = Memory(clock_fn=clock).put("v", key=key)
    with pytest.raises(ValueError, match="key") as info:
        mem.to_dict()
    assert len(str(info.value)) < 400


@pytest.mark.parametrize("bad", [None, [1, [2, {"a": 1}]], {"k": 1}, float("nan"), (1, 2)], ids=repr)
def test_from_dict_refuses_keys_to_dict_never_writes(clock: ManualClock, bad: Any) -> None:
    data = saved(clock).to_dict()
    data["entries"][0]["key"] = bad
    with pytest.raises(ValueError, match=r"entries\[0\]\.key"):
        Memory.from_dict(data)


@pytest.mark.parametrize("metadata", [{1: "x"}, {"a": {2: "y"}}, {"a": [{"b": 1, (1,): 2}]}], ids=repr)
def test_from_dict_refuses_non_str_metadata_keys(clock: ManualClock, metadata: Any) -> None:
    data = saved(clock).to_dict()
    data["entries"][0]["metadata"] = metadata
    with pytest.raises(ValueError, match=r"entries\[0\]\.metadata"):
        Memory.from_dict(data)


# -- exact fields at every level ---------------------------------------------------------------


def test_every_top_level_field_is_required(clock: ManualClock) -> None:
    data = json_copy(saved(clock).to_dict())
    for name in data:
        broken = copy.deepcopy(data)
        del broken[name]
        with pytest.raises(ValueError, match=rf"^{name}: missing"):
            Memory.from_dict(broken, clock_fn=clock)
    with pytest.raises(ValueError, match=r"^surprise: unknown field"):
        Memory.from_dict({**data, "surprise": 1}, clock_fn=clock)


def test_every_entry_field_is_required(clock: ManualClock) -> None:
    data = json_copy(saved(clock).to_dict())
    later = {f.name for f in fields(Entry) if f.since is not None}  # (absent from older documents)
    assert later == {"text", "vector"}
    for name in set(data["entries"][1]) - later:
        broken = copy.deepcopy(data)
        del broken["entries"][1][name]
        with pytest.raises(ValueError, match=rf"^entries\[1\]\.{name}: missing"):
            Memory.from_dict(broken, clock_fn=clock)


def test_a_missing_pinned_or_max_entries_is_not_a_default(clock: ManualClock) -> None:
    data = json_copy(saved(clock).to_dict())
    del data["max_entries"]
    with pytest.raises(ValueError, match="max_entries: missing"):
        Memory.from_dict(data, clock_fn=clock)
    data = json_copy(saved(clock).to_dict())
    del data["entries"][2]["pinned"]
    with pytest.raises(ValueError, match=r"entries\[2\]\.pinned: missing"):
        Memory.from_dict(data, clock_fn=clock)


def builtins_with_params() -> list[Any]:
    return [BUILTINS[name]() for name in sorted(BUILTINS)] + [AccessFrequency(), Importance()]


@pytest.mark.parametrize("fn", builtins_with_params(), ids=repr)
def test_every_decay_parameter_is_required(fn: Any) -> None:
    doc = json_copy(fn.to_dict())
    assert decay_from_dict(doc) == fn
    for name in doc:
        if name == "name":
            continue
        broken = {k: v for k, v in doc.items() if k != name}
        with pytest.raises(ValueError, match=rf"^decay_fn\.{name}: missing"):
            decay_from_dict(broken)
    with pytest.raises(ValueError, match=r"^decay_fn\.foo: unknown field"):
        decay_from_dict({**doc, "foo": 1})


def test_nested_decay_fields_are_named_by_path(clock: ManualClock) -> None:
    fn = Product(Exponential(60), ACTR(60))
    doc = json_copy(fn.to_dict())
    del doc["functions"][1]["decay"]
    with pytest.raises(ValueError, match=r"^decay_fn\.functions\[1\]\.decay: missing"):
        decay_from_dict(doc)
    data = json_copy(Memory(decay_fn=fn, clock_fn=clock).put(1).to_dict())
    data["decay_fn"]["functions"][0]["foo"] = 1
    with pytest.raises(ValueError, match=r"^decay_fn\.functions\[0\]\.foo: unknown field"):
        Memory.from_dict(data, clock_fn=clock)
    with pytest.raises(ValueError, match=r"^decay_fn\.functions: missing"):
        decay_from_dict({"name": "product"})
    with pytest.raises(ValueError, match=r"^decay_fn\.extra: unknown field"):
        decay_from_dict({"name": "product", "functions": [], "extra": 1})
    blend = json_copy(Blend({Exponential(60): 1, ACTR(60): 1}).to_dict())
    del blend["weights"][0][0]["half_life"]
    with pytest.raises(ValueError, match=r"^decay_fn\.weights\[0\]\.half_life: missing"):
        decay_from_dict(blend)
    picked = json_copy(ByMetadata("kind", {"fact": Exponential(60)}).to_dict())
    del picked["default"]
    with pytest.raises(ValueError, match=r"^decay_fn\.default: missing"):
        decay_from_dict(picked)
    picked = json_copy(ByMetadata("kind", {"fact": Exponential(60)}).to_dict())
    picked["choices"][0][1]["x"] = 1
    with pytest.raises(ValueError, match=r"^decay_fn\.choices\[0\]\.x: unknown field"):
        decay_from_dict(picked)


def version_1(clock: ManualClock) -> dict[str, Any]:
    """A document as lethe wrote it before version 2: every field but ``latest``."""
    mem: Memory[Any, Any] = Memory(max_entries=5, half_life=600, clock_fn=clock)
    mem = mem.put("x", key="a", metadata={"src": "user"}, ttl=7200)
    clock.advance(1800)
    mem, _ = mem.get("a")
    data = json_copy(mem.to_dict())
    del data["latest"]
    data["version"] = 1
    return data


def test_version_1_documents_load_with_their_latest_access_as_the_latest_reading(clock: ManualClock) -> None:
    data = version_1(clock)
    mem = Memory.from_dict(data, clock_fn=clock)
    assert (mem.max_entries, mem.half_life) == (5, 600.0)
    e = mem.peek("a")
    assert (e.access_count, dict(e.metadata), e.last_accessed_at) == (1, {"src": "user"}, START + timedelta(minutes=30))
    assert mem.to_dict()["version"] == 3
    assert mem.to_dict()["latest"] == e.last_accessed_at.isoformat()
    assert Memory.from_dict(mem.to_dict(), clock_fn=clock) == mem


@pytest.mark.parametrize(
    ("path", "named"),
    [
        (("max_entries",), "max_entries: missing"),
        (("next_seq",), "next_seq: missing"),
        (("entries", 0, "pinned"), r"entries\[0\]\.pinned: missing"),
        (("entries", 0, "metadata"), r"entries\[0\]\.metadata: missing"),
        (("decay_fn", "half_life"), "decay_fn.half_life: missing"),
    ],
)
def test_version_1_documents_are_exact_too(clock: ManualClock, path: tuple[Any, ...], named: str) -> None:
    """A missing field is refused, never read as a default (``max_entries`` is not 1000)."""
    data = version_1(clock)
    *parents, last = path
    target: Any = data
    for step in parents:
        target = target[step]
    del target[last]
    with pytest.raises(ValueError, match=f"^{named}$"):
        Memory.from_dict(data, clock_fn=clock)


# -- the latest clock reading is kept ----------------------------------------------------------


def test_the_latest_reading_survives_to_dict_and_scores_match_after_the_clock_steps_back(clock: ManualClock) -> None:
    mem: Memory[Any, Any] = Memory(half_life=600, clock_fn=clock).put("a", key="a")
    clock.advance(HOUR)
    mem = mem.put("b", key="b").delete("b")  # the memory has now seen START + 1h; no entry says so
    back = Memory.from_dict(json_copy(mem.to_dict()), clock_fn=clock)
    assert back == mem
    clock.advance(-timedelta(minutes=50))
    assert back.score("a") == mem.score("a") == 0.5**6


def test_equal_memories_have_the_same_latest_reading(clock: ManualClock) -> None:
    mem: Memory[Any, Any] = Memory(half_life=600, clock_fn=clock).put("a", key="a")
    data = mem.to_dict()
    later = {**data, "latest": (START + HOUR).isoformat()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClockWarning)
        ahead = Memory.from_dict(later, clock_fn=clock)
    assert ahead != mem
    assert ahead.score("a") != mem.score("a")  # why they must differ: ahead scores an hour later
    assert Memory.from_dict(data, clock_fn=clock) == mem
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClockWarning)
        assert Memory.from_dict(ahead.to_dict(), clock_fn=clock) == ahead
    assert pickle.loads(pickle.dumps(ahead)).to_dict() == ahead.to_dict()


def test_a_document_ahead_of_the_clock_warns(clock: ManualClock) -> None:
    mem = saved(clock)
    data = json_copy(mem.to_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Memory.from_dict(data, clock_fn=clock)  # the clock is at the latest reading: no warning
    behind = fake_clock(clock.now - timedelta(minutes=90))
    with pytest.warns(ClockWarning, match=r"5400(\.0)? s ahead") as record:
        back = Memory.from_dict(data, clock_fn=behind)
    assert issubclass(ClockWarning, UserWarning)
    assert "ClockWarning" in lethe.__all__
    assert record[0].filename == __file__
    assert back.score_map() == mem.score_map()  # it scores at the saved reading, not at the earlier clock


@pytest.mark.parametrize("decay", ["actr", "fsrs", "exponential", "product"])
def test_shift_to_moves_every_instant_by_the_same_delta(clock: ManualClock, decay: str) -> None:
    fn: Any = Product(ACTR(600), FSRS()) if decay == "product" else decay
    mem = saved(clock, fn).put("d", key="d", ttl=HOUR)
    data = json_copy(mem.to_dict())
    delta = timedelta(days=-30, seconds=7)
    target = clock.now + delta
    present = fake_clock(target)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = Memory.from_dict(data, clock_fn=present, shift_to=target)
    for e in mem.peek("a"), mem.peek("b"), mem.peek("c"), mem.peek("d"):
        b = back.peek(e.key)
        assert (b.inserted_at, b.last_accessed_at) == (e.inserted_at + delta, e.last_accessed_at + delta)
        assert b.expires_at == (None if e.expires_at is None else e.expires_at + delta)
        assert (b.access_count, b.seq) == (e.access_count, e.seq)
    assert back.to_dict()["latest"] == target.isoformat()
    for step in (0, 1, 600, 86_400):
        clock.now, present.now = target - delta + timedelta(seconds=step), target + timedelta(seconds=step)
        assert back.score_map() == mem.score_map()
        assert back.get("a")[0].score_map() == mem.get("a")[0].score_map()


def test_shift_to_needs_an_aware_datetime(clock: ManualClock) -> None:
    data = saved(clock).to_dict()
    with pytest.raises(ValueError, match="shift_to"):
        Memory.from_dict(data, shift_to=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="shift_to"):
        Memory.from_dict(data, shift_to=datetime(1, 1, 1, tzinfo=timezone.utc))


def test_shift_to_refuses_state_a_custom_function_keeps(clock: ManualClock) -> None:
    class Counting:
        def score(self, entry: Entry[Any, Any], now: datetime) -> float:
            return 0.5

        def rehearse(self, entry: Entry[Any, Any], now: datetime) -> int:
            return 7

    fn = Counting()
    mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock).put(1, key=1)
    data = mem.get(1)[0].to_dict()
    with pytest.raises(ValueError, match="shift_to"):
        Memory.from_dict(data, decay_fn=fn, shift_to=clock.now)
    assert Memory.from_dict(data, decay_fn=fn, clock_fn=clock).peek(1).decay_state == 7


# -- a decay function is handed only state it wrote --------------------------------------------


def test_state_saved_by_another_function_is_reset(clock: ManualClock) -> None:
    mem = saved(clock, "fsrs")
    assert mem.peek("a").decay_state is not None
    back = Memory.from_dict(json_copy(mem.to_dict()), decay_fn=ACTR(600), clock_fn=clock)
    a = back.peek("a")
    assert a.decay_state is None
    assert (a.access_count, a.last_accessed_at) == (2, mem.peek("a").last_accessed_at)
    assert back.score("a") > 0.5  # last access a minute ago: not FSRS's (S, D) read as access times


def test_state_saved_by_the_same_function_is_kept(clock: ManualClock) -> None:
    mem = saved(clock, "actr")
    back = Memory.from_dict(json_copy(mem.to_dict()), decay_fn=ACTR(600), clock_fn=clock)
    assert back.peek("a").decay_state == mem.peek("a").decay_state
    back = Memory.from_dict(json_copy(mem.to_dict()), decay_fn="actr", clock_fn=clock)
    assert back == mem
    other = Memory.from_dict(json_copy(mem.to_dict()), decay_fn=ACTR(600, history=3), clock_fn=clock)
    assert other.peek("a").decay_state is None


def test_custom_state_goes_back_only_to_a_custom_function(clock: ManualClock) -> None:
    class Keeps:
        def score(self, entry: Entry[Any, Any], now: datetime) -> float:
            return 0.5

        def rehearse(self, entry: Entry[Any, Any], now: datetime) -> list[int]:
            return [1, 2]

    fn = Keeps()
    data = json_copy(Memory(decay_fn=fn, clock_fn=clock).put(1, key=1).get(1)[0].to_dict())
    assert Memory.from_dict(data, decay_fn=fn, clock_fn=clock).peek(1).decay_state == [1, 2]
    assert Memory.from_dict(data, decay_fn=ACTR(), clock_fn=clock).peek(1).decay_state is None
    built_in = json_copy(saved(clock, "actr").to_dict())
    assert Memory.from_dict(built_in, decay_fn=fn, clock_fn=clock).peek("a").decay_state is None


@pytest.mark.parametrize("field", ["last_accessed_at", "inserted_at"])
def test_access_times_after_the_latest_reading_are_refused(clock: ManualClock, field: str) -> None:
    data = json_copy(saved(clock).to_dict())
    later = (clock.now + timedelta(seconds=1)).isoformat()
    data["entries"][0]["last_accessed_at"] = later
    if field == "inserted_at":
        data["entries"][0]["inserted_at"] = later
    with pytest.raises(ValueError, match=rf"entries\[0\]\.{field}: .*latest"):
        Memory.from_dict(data, clock_fn=clock)


def test_actr_history_after_the_latest_reading_is_refused(clock: ManualClock) -> None:
    data = json_copy(saved(clock, "actr").to_dict())
    state = data["entries"][0]["decay_state"]
    state[-1] += 3_600e6
    with pytest.raises(ValueError, match=r"entries\[0\]\.decay_state: .*latest"):
        Memory.from_dict(data, clock_fn=clock)


def test_actr_history_before_the_entry_was_put_is_refused(clock: ManualClock) -> None:
    """An access before the entry existed is no history ACT-R wrote (it would score ~1e-9)."""
    data = json_copy(saved(clock, "actr").to_dict())
    data["entries"][0]["decay_state"] = [1.0] * len(data["entries"][0]["decay_state"])
    with pytest.raises(ValueError, match=r"entries\[0\]\.decay_state: .*before the entry's inserted_at"):
        Memory.from_dict(data, clock_fn=clock)


# -- metadata and counters -------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, "", [], False, None])
def test_falsy_metadata_is_refused_not_emptied(clock: ManualClock, bad: Any) -> None:
    data = json_copy(saved(clock).to_dict())
    data["entries"][0]["metadata"] = bad
    with pytest.raises(ValueError, match=r"entries\[0\]\.metadata"):
        Memory.from_dict(data, clock_fn=clock)


def round_trip_after_a_write(data: dict[str, Any], clock: ManualClock, write: str) -> None:
    mem = Memory.from_dict(data, clock_fn=clock)
    mem = mem.put("new") if write == "put" else mem.get("a")[0]
    again = Memory.from_dict(json_copy(mem.to_dict()), clock_fn=clock)
    assert again == mem


@pytest.mark.parametrize("bound", [2**62, 2**62 + 1, 2**64, 10**30])
def test_counters_have_no_bound_a_write_can_cross(clock: ManualClock, bound: int) -> None:
    data = json_copy(saved(clock).to_dict())
    data["entries"][0]["seq"] = bound
    data["next_seq"] = bound + 1
    data["next_key"] = bound
    round_trip_after_a_write(data, clock, "put")
    round_trip_after_a_write(data, clock, "get")
    assert Memory.from_dict(data, clock_fn=clock).put("new").peek(bound).value == "new"


def test_access_count_is_read_up_to_2_to_the_53(clock: ManualClock) -> None:
    data = json_copy(saved(clock).to_dict())
    data["entries"][0]["access_count"] = 2**53 - 1
    round_trip_after_a_write(data, clock, "get")  # the get reaches 2**53
    data["entries"][0]["access_count"] = 2**53
    round_trip_after_a_write(data, clock, "put")
    round_trip_after_a_write(data, clock, "get")  # rehearsals saturate at 2**53
    assert Memory.from_dict(data, clock_fn=clock).get("a")[1].access_count == 2**53
    data["entries"][0]["access_count"] = 2**53 + 1
    with pytest.raises(ValueError, match=r"entries\[0\]\.access_count"):
        Memory.from_dict(data, clock_fn=clock)


@pytest.mark.parametrize("field", ["seq", "access_count"])
def test_messages_about_huge_ints_stay_short(clock: ManualClock, field: str) -> None:
    data = json_copy(saved(clock).to_dict())
    data["entries"][0][field] = -(10**5000)
    with pytest.raises(ValueError, match=rf"entries\[0\]\.{field}") as info:
        Memory.from_dict(data, clock_fn=clock)
    assert len(str(info.value)) < 200
    data = json_copy(saved(clock).to_dict())
    data["next_key"] = -(10**5000)
    with pytest.raises(ValueError, match="next_key") as info:
        Memory.from_dict(data, clock_fn=clock)
    assert len(str(info.value)) < 200


def test_next_seq_must_follow_every_seq(clock: ManualClock) -> None:
    data = json_copy(saved(clock).to_dict())
    data["next_seq"] = data["entries"][-1]["seq"]
    with pytest.raises(ValueError, match="next_seq"):
        Memory.from_dict(data, clock_fn=clock)


def test_from_dict_result_assigns_to_a_typed_memory(clock: ManualClock) -> None:
    typed: Memory[str, str] = Memory.from_dict(saved(clock).to_dict(), clock_fn=clock)
    assert typed.peek("a").value == "a"


@pytest.mark.parametrize("bulk", [False, True])
def test_an_equal_key_of_another_type_replaces_the_key_too(clock: ManualClock, bulk: bool) -> None:
    """``True == 1``: putting ``1`` after ``True`` replaces the entry, and the key is now ``1``."""
    mem: Memory[Any, Any] = Memory(clock_fn=clock).put("a", key=True).put("z", key="z")
    mem = mem.put_many([(1, "b")]) if bulk else mem.put("b", key=1)
    assert [type(k) for k in list(mem.keys()) if k == 1] == [int]
    assert type(mem.peek(1).key) is int
    back = Memory.from_dict(json_copy(mem.to_dict()), clock_fn=clock)
    assert sorted(map(repr, back.keys())) == ["'z'", "1"]
