"""to_dict / from_dict / pickle round trips, and malformed data."""

from __future__ import annotations

import json
import pickle
import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from lethe import Entry, ManualClock, Memory


def sample(clock: ManualClock, decay: str = "actr") -> Memory[Any, Any]:
    mem: Memory[Any, Any] = Memory(max_entries=10, decay_fn=decay, half_life=600, clock_fn=clock)
    mem = mem.put({"text": "hello"}, key="greeting", importance=1.5, metadata={"src": "user"})
    mem = mem.put([1, 2, 3], pinned=True)
    clock.advance(300)
    mem, _ = mem.get("greeting")
    mem = mem.put("x", key=7)
    return mem


@pytest.mark.parametrize("decay", ["exponential", "access_weighted", "actr"])
def test_round_trip_through_json(clock: ManualClock, decay: str) -> None:
    mem = sample(clock, decay)
    data = json.loads(json.dumps(mem.to_dict()))
    back = Memory.from_dict(data, clock_fn=clock)
    assert back == mem
    assert back.scored() == mem.scored()
    assert back.put("next").peek(1).value == "next"  # auto keys carry on


def test_custom_decay_needs_decay_fn(clock: ManualClock) -> None:
    def fn(e: Entry[Any, Any], now: Any) -> float:
        return 0.5

    mem: Memory[Any, Any] = Memory(decay_fn=fn, clock_fn=clock).put(1, key=1)
    data = mem.to_dict()
    with pytest.raises(ValueError, match="decay_fn"):
        Memory.from_dict(data)
    assert Memory.from_dict(data, decay_fn=fn, clock_fn=clock) == mem


def test_pickle_round_trip(clock: ManualClock) -> None:
    mem = sample(clock)
    back = pickle.loads(pickle.dumps(mem))
    assert back.to_dict() == mem.to_dict()
    assert [e.key for e in back] == [e.key for e in mem]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.update(entries="nope"), "entries"),
        (lambda d: d.update(max_entries=0), "max_entries"),
        (lambda d: d.update(decay_fn={"name": "os.system"}), "decay_fn"),
        (lambda d: d["entries"][0].update(inserted_at="yesterday"), "inserted_at"),
        (lambda d: d["entries"][0].update(inserted_at="2026-01-01T00:00:00"), "inserted_at"),
        (lambda d: d["entries"][0].update(importance=-1), "importance"),
        (lambda d: d["entries"][0].update(key={"k": 1}), "key"),
        (lambda d: d["entries"][0].update(key=None), "key"),
        (lambda d: d["entries"][0].update(access_count=-1), "access_count"),
        (lambda d: d["entries"][0].update(pinned="yes"), "pinned"),
        (lambda d: d["entries"][0].update(metadata=[1]), "metadata"),
        (lambda d: d["entries"][0].update(decay_state=["x"]), "decay_state"),
        (lambda d: d["entries"][0].update(surprise=1), "surprise"),
        (lambda d: d["entries"][0].pop("seq"), "seq"),
        (lambda d: d["entries"][1].update(key=d["entries"][0]["key"]), "key"),
        (lambda d: d["entries"][1].update(seq=d["entries"][0]["seq"]), "seq"),
        (lambda d: d.update(max_entries=1), "entries"),
        (lambda d: d.update(version=99), "version"),
    ],
)
def test_malformed_data_raises_value_error_naming_the_field(clock: ManualClock, mutate: Any, field: str) -> None:
    data = json.loads(json.dumps(sample(clock).to_dict()))
    mutate(data)
    with pytest.raises(ValueError, match=field):
        Memory.from_dict(data)


def test_not_a_mapping() -> None:
    with pytest.raises(ValueError, match="data"):
        Memory.from_dict([])  # type: ignore[arg-type]


def test_z_suffix_is_accepted(clock: ManualClock) -> None:
    data = sample(clock, "exponential").to_dict()
    for e in data["entries"]:
        e["inserted_at"] = e["inserted_at"].replace("+00:00", "Z")
    assert len(Memory.from_dict(data)) == 3


def test_timestamps_are_iso(clock: ManualClock) -> None:
    entry = sample(clock).to_dict()["entries"][0]
    assert entry["inserted_at"] == "2026-01-01T12:00:00+00:00"
    clock.advance(timedelta(hours=1))


def plain(clock: ManualClock) -> dict[str, Any]:
    """A document of entries as most memories hold them (str keys, float importance, no metadata)."""
    mem: Memory[Any, Any] = Memory(max_entries=10, half_life=600, clock_fn=clock)
    mem = mem.put_many([("a", {"key": "a"}), ("b", {"key": "b", "importance": 2.0})])
    clock.advance(60)
    return json.loads(json.dumps(mem.touch("a").to_dict()))  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"importance": float("nan")}, "importance"),
        ({"importance": float("inf")}, "importance"),
        ({"importance": True}, "importance"),
        ({"access_count": True}, "access_count"),
        ({"access_count": 2**53 + 1}, "access_count"),
        ({"seq": -1}, "seq"),
        ({"seq": 1.0}, "seq"),
        ({"pinned": 1}, "pinned"),
        ({"summarized": 0}, "summarized"),
        ({"metadata": None}, "metadata"),
        ({"key": True}, None),  # a bool key is a key: read as itself
        ({"last_accessed_at": "2025-12-31T00:00:00+00:00"}, "last_accessed_at"),
    ],
)
def test_each_field_of_a_plain_entry_is_checked(clock: ManualClock, value: dict[str, Any], field: str | None) -> None:
    # Plain entries are read by one combined test; whatever it lets through must still be checked.
    data = plain(clock)
    data["entries"][0].update(value)
    if field is None:
        assert Memory.from_dict(data).peek(value["key"]).key is value["key"]
        return
    with pytest.raises(ValueError, match=rf"entries\[0\]\.{field}"):
        Memory.from_dict(data)


def test_a_custom_load_state_sees_every_null_state(clock: ManualClock) -> None:
    class Loaded:
        def __call__(self, entry: Entry[Any, Any], now: Any) -> float:
            return 0.5

        def dump_state(self, state: Any) -> Any:
            return state

        def load_state(self, data: object) -> Any:
            return "loaded" if data is None else data

    fn = Loaded()
    data: dict[str, Any] = Memory(decay_fn=fn, clock_fn=clock).put("v", key="k").to_dict()
    assert data["entries"][0]["decay_state"] is None
    assert Memory.from_dict(data, decay_fn=fn, clock_fn=clock).peek("k").decay_state == "loaded"


def test_one_instant_in_two_zones_loads_as_one_utc_instant(clock: ManualClock) -> None:
    data = plain(clock)
    first, second = data["entries"]
    assert first["inserted_at"] == second["inserted_at"] == second["last_accessed_at"]  # one put_many
    second["inserted_at"] = second["last_accessed_at"] = "2026-01-01T14:00:00+02:00"  # the same instant
    back = Memory.from_dict(data).to_dict()["entries"]
    # Held as UTC, as Entry holds every instant: written back as the one instant it is.
    assert [e["inserted_at"] for e in back] == ["2026-01-01T12:00:00+00:00", "2026-01-01T12:00:00+00:00"]
    assert back == [first, {**second, "inserted_at": first["inserted_at"], "last_accessed_at": first["inserted_at"]}]


def _actr_document(clock: ManualClock) -> dict[str, Any]:
    """Four entries (ACT-R: each holds its access times), the latest reading one hour in."""
    mem: Memory[Any, Any] = Memory(max_entries=10, decay_fn="actr", half_life=600, clock_fn=clock)
    for k in "abcd":
        mem = mem.put(k, key=k)
        clock.advance(600)
    return json.loads(json.dumps(mem.to_dict()))  # type: ignore[no-any-return]


LATER = "2027-01-01T00:00:00+00:00"  # after the document's latest reading


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({2: {"key": "a"}}, r"^entries\[2\]\.key: duplicate key 'a'$"),
        ({1: {"seq": 3}}, r"^entries\[3\]\.seq: duplicate seq 3$"),
        ({1: {"seq": 3}, 3: {"key": "a"}}, r"^entries\[3\]\.key: duplicate key 'a'$"),
        ({1: {"key": "c", "seq": 0}}, r"^entries\[1\]\.seq: duplicate seq 0$"),
        ({3: {"inserted_at": LATER, "last_accessed_at": LATER}, 1: {"last_accessed_at": LATER}},
         r"^entries\[1\]\.last_accessed_at: after the latest clock reading"),
        ({2: {"inserted_at": LATER, "last_accessed_at": LATER}}, r"^entries\[2\]\.inserted_at: after the latest"),
        ({3: {"last_accessed_at": LATER}, 1: {"decay_state": [4e15]}},
         r"^entries\[1\]\.decay_state: an access time after"),
        ({2: {"decay_state": [0.0]}, 3: {"decay_state": [4e15]}}, r"^entries\[2\]\.decay_state: an access time before"),
    ],
    ids=["key", "seq", "key before seq", "key and seq", "instants", "inserted_at", "state after", "state before"],
)
def test_whole_document_checks_name_the_first_entry_at_fault(
    clock: ManualClock, changes: dict[int, dict[str, Any]], message: str
) -> None:
    data = _actr_document(clock)
    for i, fields in changes.items():
        data["entries"][i].update(fields)
    with pytest.raises(ValueError, match=message):
        Memory.from_dict(data, clock_fn=clock)


@pytest.mark.parametrize("entries", [1, 2], ids=["one entry", "several"])
def test_an_instant_a_microsecond_after_the_latest_reading_past_2255_is_refused(entries: int) -> None:
    # Past 2**53 microseconds the two instants' floats are one: the datetimes tell.
    late = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=2**54)
    mem: Memory[str, str] = Memory(clock_fn=ManualClock(late))
    for i in range(entries):
        mem = mem.put("v", key=f"k{i}")
    data = json.loads(json.dumps(mem.to_dict()))
    Memory.from_dict(data, clock_fn=ManualClock(late))  # at the latest reading itself: fine
    data["entries"][-1]["last_accessed_at"] = (late + timedelta(microseconds=1)).isoformat()
    with pytest.raises(ValueError, match=rf"^entries\[{entries - 1}\]\.last_accessed_at: after the latest clock"):
        Memory.from_dict(data, clock_fn=ManualClock(late))


def test_a_loaded_memory_ranks_as_the_one_it_was_saved_from(clock: ManualClock) -> None:
    mem: Memory[Any, Any] = Memory(max_entries=50, half_life=600, clock_fn=clock)
    for i in range(40):
        mem = mem.put(i, key=f"k{i}", importance=(0.5, 1.0, 2.0, 0.0)[i % 4], pinned=i % 7 == 0)
        clock.advance(30)
        if i % 3 == 0:
            mem = mem.touch(f"k{i // 2}")
    back = Memory.from_dict(json.loads(json.dumps(mem.to_dict())), clock_fn=clock)
    assert back.scored() == mem.scored()
    assert back.top(7) == mem.top(7)
    assert back.put("new", key="new").top(50) == mem.put("new", key="new").top(50)
    assert pickle.loads(pickle.dumps(mem)).scored() == mem.scored()


def test_instants_in_other_zones_load_as_utc(clock: ManualClock) -> None:
    data = sample(clock).to_dict()
    entry = data["entries"][0]
    at = Memory.from_dict(data, clock_fn=clock).peek(entry["key"])
    assert at is not None
    entry["inserted_at"] = at.inserted_at.astimezone(timezone(timedelta(hours=5))).isoformat()
    loaded = Memory.from_dict(data, clock_fn=clock).peek(entry["key"])
    assert loaded is not None
    assert loaded.inserted_at.tzinfo is timezone.utc
    assert loaded.inserted_at == at.inserted_at


@pytest.mark.parametrize("field", ["latest", "entries[0].inserted_at", "entries[0].expires_at"])
def test_an_instant_past_datetime_max_in_utc_is_refused_by_name(clock: ManualClock, field: str) -> None:
    # 9999-12-31T23:59 five hours west of Greenwich is in the year 10000 in UTC: it was loaded, and
    # the first forecast raised OverflowError.
    data = sample(clock).to_dict()
    past_max = "9999-12-31T23:59:59.999999-05:00"
    if field == "latest":
        data["latest"] = past_max
    else:
        data["entries"][0][field.split(".")[1]] = past_max
    with pytest.raises(ValueError, match=re.escape(field) + " is outside the range of datetime in UTC"):
        Memory.from_dict(data, clock_fn=clock)
