"""What lethe.store writes comes back exactly: values, summaries, metadata and version ids.

* Every replica reads an entry from its JSON row, so a row holds only what JSON gives back as it was: dicts
  with str keys, lists, str, int, float (NaN and the infinities too), bool and None, of exactly those types.
  Anything else (a tuple, which comes back a list; a dict with an int or bool key, which comes back with a
  str one; a set; an ``IntEnum`` member, which comes back a plain int) is refused before anything is
  committed, naming the key and the place (``value[2]['a']``), rather than leave replicas at one version
  holding different memories.
* A version id read from the store is pasted into the next record: one that is not what lethe makes (16
  lowercase hex digits) is a damaged store, reported as ``StoreError`` before anything is written.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import json
import math
import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lethe import Entry, ManualClock, Memory
from lethe.decay import Exponential
from lethe.store import Shared, SQLiteStore, Store, StoreError, _records

from ._support import entry, fake_clock
from .conftest import LOCAL_ENGINES, make_store

# -- exactly the same -------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """``a == b`` with the same types at every depth, NaN equal to NaN and -0.0 told from 0.0."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1.0, a) == math.copysign(1.0, b))
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    return bool(a == b)


_TEXT = st.text(st.characters(exclude_categories=()), max_size=8)  # lone surrogates too


def json_values() -> st.SearchStrategy[Any]:
    """Values built only of what JSON gives back as it was, and equal to it (no NaN)."""
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT
    return st.recursive(
        scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4), max_leaves=16
    )


_FN = Exponential()
_MICROSECOND = timedelta(microseconds=1)


def _read_back(e: Entry[Any, Any]) -> Entry[Any, Any]:
    """``e`` as a replica reads it from its row."""
    return _records.entry(json.loads(_records.row(e, _FN)), _FN)


_LOW_US, _HIGH_US = -62135596800000000, 253402300799999999  # datetime.min and datetime.max, UTC


@given(
    inserted=st.integers(_LOW_US, _HIGH_US),
    later=st.integers(0, 2**70) | st.just(0),
    expires=st.none() | st.integers(_LOW_US, _HIGH_US),
)
def test_a_row_s_instants_read_back_to_the_microsecond(inserted: int, later: int, expires: int | None) -> None:
    accessed = min(inserted + later, _HIGH_US)
    raw = json.loads(_records.row(entry(), _FN))
    raw[3:5], raw[11] = [inserted, accessed], expires
    e = _records.entry(raw, _FN)
    # The datetimes are exact; the float microseconds scoring reads, as exact as a float holds.
    assert (e.inserted_us, e.accessed_us) == (float(inserted), float(accessed))
    assert e.expires_us == (None if expires is None else float(expires))
    epoch = datetime(1970, 1, 1, tzinfo=e.inserted_at.tzinfo)
    assert [(t - epoch) // _MICROSECOND for t in (e.inserted_at, e.last_accessed_at)] == [inserted, accessed]
    assert e.expires_at is None if expires is None else (e.expires_at - epoch) // _MICROSECOND == expires


@pytest.mark.parametrize(
    ("at", "value", "refused"),
    [
        (3, _HIGH_US + 1, r"^\.inserted_us: expected microseconds"),
        (3, True, r"^\.inserted_us: expected microseconds"),
        (4, 1.5, r"^\.accessed_us: expected microseconds"),
        (4, _LOW_US - 1, r"^\.accessed_us: expected microseconds"),
        (4, -1, r"^\.last_accessed_at: earlier than inserted_at"),
        (4, 2**54, r"^\.last_accessed_at: earlier than inserted_at"),  # (inserted 2**54 + 1: one float)
        (11, "2026-01-01T00:00:00Z", r"^\.expires_us: expected microseconds"),
    ],
)
def test_a_row_s_instant_out_of_range_or_not_an_int_is_refused_by_name(at: int, value: Any, refused: str) -> None:
    raw = json.loads(_records.row(entry(), _FN))
    raw[3:5] = [2**54 + 1, 2**54 + 1] if value == 2**54 else [0, 0]
    raw[at] = value
    with pytest.raises(ValueError, match=refused):
        _records.entry(raw, _FN)


@given(value=json_values(), summary=json_values(), metadata=st.dictionaries(_TEXT, json_values(), max_size=4))
def test_a_row_of_json_values_reads_back_exactly(value: Any, summary: Any, metadata: dict[str, Any]) -> None:
    e = entry(value=value, summary=summary, summarized=True, metadata=metadata)
    back = _read_back(e)
    assert same(back.value, e.value)
    assert same(back.summary, e.summary)
    assert same(dict(back.metadata), dict(e.metadata))


# -- refused, naming the key and the place ---------------------------------------------------


class Color(enum.IntEnum):
    RED = 1


class Shade(str, enum.Enum):
    DARK = "dark"


Point = collections.namedtuple("Point", "x y")


#: (a value JSON does not give back as it was, what the message says of it, whether metadata may hold it)
BAD: list[tuple[Any, str, bool]] = [
    ((1, 2), "is a tuple, which JSON reads back as a list: store a list", True),
    ((), "is a tuple, which JSON reads back as a list: store a list", True),
    (Point(1, 2), "is a Point, which JSON reads back as a list: store a list", False),  # (metadata: a tuple)
    ({1: "x"}, "has the key 1 (an int), which JSON reads back as the str '1': use str keys", False),
    ({True: "x"}, "has the key True (a bool), which JSON reads back as the str 'true': use str keys", False),
    ({None: "x"}, "has the key None, which JSON reads back as the str 'null': use str keys", False),
    ({2.5: "x"}, "has the key 2.5 (a float), which JSON reads back as the str '2.5': use str keys", False),
    ({(1,): "x"}, "has the key (1,) (a tuple), which JSON cannot write: use str keys", False),
    ({"ok": 1, Shade.DARK: 2}, "has the key <Shade.DARK: 'dark'> (a Shade), which JSON reads back as the str", False),
    ({1, 2}, "is a set, which JSON cannot write: store a list", True),
    (frozenset(), "is a frozenset, which JSON cannot write: store a list", True),
    (Color.RED, "is a Color, which JSON reads back as a plain int: store an int", True),
    (Shade.DARK, "is a Shade, which JSON reads back as a plain str: store a str", True),
    (collections.OrderedDict(a=1), "is an OrderedDict, which JSON reads back as a plain dict: store a dict", False),
    (datetime(2026, 1, 1), "is a datetime, which JSON cannot write", True),
    (b"bytes", "is a bytes, which JSON cannot write", True),
]


@st.composite
def placed(draw: st.DrawFn, in_metadata: bool) -> tuple[Any, str, str]:
    """A JSON value with one thing from :data:`BAD` somewhere inside: (value, its place, what is said of it)."""
    bad, said, _ = draw(st.sampled_from([b for b in BAD if b[2] or not in_metadata]))
    value, place = bad, ""
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            items = draw(st.lists(json_values(), max_size=3))
            i = draw(st.integers(0, len(items)))
            items.insert(i, value)
            value, place = items, f"[{i}]{place}"
        else:
            fields = draw(st.dictionaries(st.text(max_size=4), json_values(), max_size=3))
            name = draw(st.text(max_size=4))
            fields[name] = value  # (in place of the value drawn for it, if any)
            value, place = fields, f"[{name!r}]{place}"
    return value, place, said


@given(placed(in_metadata=False))
def test_a_value_json_changes_is_refused_naming_the_key_and_the_place(bad: tuple[Any, str, str]) -> None:
    value, place, said = bad
    with pytest.raises(ValueError, match="^" + re.escape(f"key ('user', 7): value{place} {said}")):
        _records.row(entry(key=("user", 7), value=value), _FN)


@given(placed(in_metadata=False))
def test_a_summary_json_changes_is_refused_naming_the_key_and_the_place(bad: tuple[Any, str, str]) -> None:
    value, place, said = bad
    with pytest.raises(ValueError, match="^" + re.escape(f"key 'k': summary{place} {said}")):
        _records.row(entry(key="k", summary=value, summarized=True), _FN)


@given(placed(in_metadata=True))
def test_metadata_json_changes_is_refused_naming_the_key_and_the_place(bad: tuple[Any, str, str]) -> None:
    value, place, said = bad
    with pytest.raises(ValueError, match="^" + re.escape(f"key 3: metadata['m']{place} {said}")):
        _records.row(entry(key=3, metadata={"m": value}), _FN)


def test_what_json_cannot_write_at_all_is_still_named() -> None:
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(ValueError, match=r"^key 'k': its value or summary cannot be saved as JSON: Circular"):
        _records.row(entry(value=looped), _FN)
    with pytest.raises(ValueError, match=r"^key 'k': value\[0\]\['x'\] is an object, which JSON cannot write$"):
        _records.row(entry(value=[{"x": object()}, looped]), _FN)


def test_the_infinities_are_kept_and_nan_refused() -> None:
    """NaN reads back as a NaN, which is equal to no other: replicas could not compare equal."""
    back = _read_back(entry(value=[math.inf, -math.inf, -0.0, "NaN"], summary="NaN", summarized=True))
    assert same(back.value, [math.inf, -math.inf, -0.0, "NaN"])
    with pytest.raises(ValueError, match=r"^key 'k': value\[1\]\['x'\] is NaN, which is not equal to itself"):
        _records.row(entry(value=[1, {"x": math.nan}]), _FN)
    with pytest.raises(ValueError, match=r"^key 'k': summary is NaN"):
        _records.row(entry(summary=math.nan, summarized=True), _FN)
    with pytest.raises(ValueError, match=r"^key 'k': metadata\['score'\] is NaN"):
        _records.row(entry(metadata={"score": math.nan}), _FN)


# -- through Shared: nothing committed, replicas equal ----------------------------------------


@pytest.fixture(params=LOCAL_ENGINES)  # the engines needing no server (many values: cheap ones)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made = make_store(request.param, request, tmp_path)
    yield made
    made.close()


def _log(store: Store) -> list[tuple[int, str]]:
    return list(store.read("n", 0))


@pytest.mark.parametrize(
    "put",
    [
        lambda m: m.put([1, {"a": (1, 2)}], key="k"),
        lambda m: m.put({1: "one"}, key="k"),
        lambda m: m.put("v", key="k", metadata={"where": ("eu", 1)}),
        lambda m: m.put("fine", key="j").put({"tags": {"a", "b"}}, key="k"),
    ],
    ids=["tuple", "int key", "metadata tuple", "set, after a fine put"],
)
def test_a_refused_write_commits_nothing(store: Store, put: Callable[[Memory[Any, Any]], Memory[Any, Any]]) -> None:
    clock = fake_clock()
    shared: Shared[Any, Any] = Shared(store, "n", Memory(clock_fn=clock))
    shared.update(lambda m: m.put("first", key="a"))
    before, log = shared.current(), _log(store)
    with pytest.raises(ValueError, match=r"^key 'k': (value|metadata)"):
        shared.update(put)
    assert shared.version == 1
    assert shared.current() is before
    assert _log(store) == log
    assert Shared(store, "n", Memory(clock_fn=clock)).current() == before
    shared.update(lambda m: m.put([1, {"a": [1, 2]}], key="k"))  # the same as JSON keeps it goes in
    assert Shared(store, "n", Memory(clock_fn=clock)).current() == shared.current()


def test_a_template_holding_what_json_changes_is_refused_before_the_name_is_stored(store: Store) -> None:
    with pytest.raises(ValueError, match=r"^key 'k': value is a tuple"):
        Shared(store, "n", Memory(clock_fn=fake_clock()).put((1, 2), key="k"))
    assert store.names() == []


def test_a_summary_json_changes_commits_nothing(store: Store) -> None:
    clock = fake_clock()
    template = Memory(max_entries=1, clock_fn=clock, summarize_fn=lambda e: ("summary of", e.value))
    shared: Shared[Any, Any] = Shared(store, "n", template)
    shared.update(lambda m: m.put("a", key="a"))
    with pytest.raises(ValueError, match=r"^key 'a': summary is a tuple, which JSON reads back as a list"):
        shared.update(lambda m: m.put("b", key="b"))  # evicts a, summarized
    assert shared.version == 1
    assert list(shared.evictions(since=0)) == []


class _Kept:
    """A custom decay function whose state is its access count, kept as ``rehearse`` returns it."""

    def __init__(self, state: Callable[[int], Any]) -> None:
        self.state = state

    def score(self, e: Entry[Any, Any], now: datetime) -> float:
        return 0.5

    def rehearse(self, e: Entry[Any, Any], now: datetime) -> Any:
        return self.state(e.access_count + 1)


class _Dumped(_Kept):
    def dump_state(self, state: tuple[int]) -> list[int]:
        return list(state)

    def load_state(self, data: object) -> tuple[int, ...]:
        assert isinstance(data, list)
        return tuple(data)


def test_a_decay_state_kept_as_stored_must_be_what_json_gives_back(store: Store) -> None:
    clock = fake_clock()
    shared: Shared[Any, Any] = Shared(store, "n", Memory(decay_fn=_Kept(lambda n: (n,)), clock_fn=clock))
    shared.update(lambda m: m.put("v", key="k"))
    with pytest.raises(ValueError, match=r"^key 'k': decay_state is a tuple, which JSON reads back as a list"):
        shared.update(lambda m: m.get("k")[0])
    assert shared.version == 1
    # A state the function dumps and loads itself is its own business; a list needs neither.
    for name, fn in (("dumped", _Dumped(lambda n: (n,))), ("listed", _Kept(lambda n: [n]))):
        mine: Shared[Any, Any] = Shared(store, name, Memory(decay_fn=fn, clock_fn=clock))
        mine.update(lambda m: m.put("v", key="k"))
        mine.update(lambda m: m.get("k")[0])
        cold: Shared[Any, Any] = Shared(store, name, Memory(decay_fn=fn, clock_fn=clock))
        assert cold.current() == mine.current()


def _anything(in_metadata: bool) -> st.SearchStrategy[Any]:
    """A value made of JSON types, or one holding something from :data:`BAD`."""
    return json_values() | placed(in_metadata).map(lambda bad: bad[0])


@pytest.mark.parametrize("engine", LOCAL_ENGINES)  # the engines needing no server (a property's many examples)
@given(
    puts=st.lists(
        st.tuples(st.integers(0, 5), _anything(False), st.dictionaries(_TEXT, _anything(True), max_size=3)),
        min_size=1,
        max_size=6,
    )
)
def test_replicas_at_one_version_hold_exactly_the_same_values(
    engine: str, request: pytest.FixtureRequest, puts: list[tuple[int, Any, dict[str, Any]]]
) -> None:
    clock = fake_clock()
    kept: list[tuple[Any, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(engine, request, Path(tmp))  # (a local engine asks nothing of request)
        try:
            writer: Shared[Any, Any] = Shared(store, "n", Memory(clock_fn=clock))
            follower: Shared[Any, Any] = Shared(store, "n", Memory(clock_fn=clock))
            for key, value, metadata in puts:
                clock.advance(1)
                try:
                    writer.update(lambda m, k=key, v=value, md=metadata: m.put(v, key=k, metadata=md))
                except ValueError:
                    continue  # (nothing committed: the versions below count the commits)
                kept.append((value, metadata))
            cold: Shared[Any, Any] = Shared(store, "n", Memory(clock_fn=clock))
            mine, theirs, fresh = writer.current(), follower.current(), cold.current()
        finally:
            store.close()
    assert writer.version == follower.version == cold.version == len(kept)
    for e in mine:
        for other in (theirs.peek(e.key), fresh.peek(e.key)):
            assert same(other.value, e.value)
            assert same(dict(other.metadata), dict(e.metadata))
            assert _facts(other) == _facts(e)
    assert mine == theirs == fresh


def _facts(e: Entry[Any, Any]) -> list[Any]:
    """Every field of ``e`` but its value and metadata."""
    return [getattr(e, f.name) for f in dataclasses.fields(e) if f.name not in ("value", "metadata")]


# -- version ids read back ---------------------------------------------------------------------


def _rewrite(path: Path, table: str, column: str, version: int, change: Callable[[Any], Any]) -> None:
    """Rewrite the JSON text in ``column`` of ``table`` at ``version`` as ``change`` makes it, behind lethe's back."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            (text,) = conn.execute(f"SELECT {column} FROM {table} WHERE version = ?", (version,)).fetchone()
            changed = json.dumps(change(json.loads(text)))
            conn.execute(f"UPDATE {table} SET {column} = ? WHERE version = ?", (changed, version))
    finally:
        conn.close()


def _tip_to(tip: Any) -> Callable[[Any], Any]:
    """A change of a head: its version id becomes ``tip``."""

    def change(head: Any) -> Any:
        head[3] = tip
        return head

    return change


@pytest.mark.parametrize("tip", ['0123456789abcde"', "x", "0123456789ABCDEF", "0123456789abcdef0", 7, None])
def test_a_head_whose_version_id_lethe_never_made_is_a_store_error(
    tmp_path: Path, clock: ManualClock, tip: Any
) -> None:
    path = tmp_path / "store.db"
    with SQLiteStore(path) as store:
        shared: Shared[Any, Any] = Shared(store, "n", Memory(clock_fn=clock))
        shared.update(lambda m: m.put("a", key="a"))
    _rewrite(path, "log", "head", 1, _tip_to(tip))
    with SQLiteStore(path) as store:
        before = _log(store)
        with pytest.raises(StoreError, match=r"state at version 1 cannot be read: head\.tip: expected a version id"):
            Shared(store, "n", Memory(clock_fn=clock))
        assert _log(store) == before


def test_a_new_memory_whose_first_head_is_damaged_is_a_store_error(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "store.db"
    with SQLiteStore(path) as store:
        Shared(store, "n", Memory(clock_fn=clock))
    _rewrite(path, "checkpoints", "head", 0, _tip_to('a"b'))
    with SQLiteStore(path) as store, pytest.raises(StoreError, match=r"head\.tip: expected a version id"):
        Shared(store, "n", Memory(clock_fn=clock))


def test_a_replica_never_builds_on_a_damaged_version_id(tmp_path: Path, clock: ManualClock) -> None:
    """Another client committed version 2 with a tip holding a quote: pasted into the next record as it is,
    it would make that record unreadable by every replica."""
    path = tmp_path / "store.db"
    with SQLiteStore(path) as store:
        replica: Shared[Any, Any] = Shared(store, "n", Memory(clock_fn=clock))
        replica.update(lambda m: m.put("a", key="a"))
        Shared(store, "n", Memory(clock_fn=clock)).update(lambda m: m.put("b", key="b"))
        damaged = 'ab"c'

        def record(data: Any) -> Any:
            data["head"][3] = damaged
            return data

        _rewrite(path, "log", "record", 2, record)
        _rewrite(path, "log", "head", 2, _tip_to(damaged))
        before = _log(store)
        for call in (replica.current, lambda: replica.update(lambda m: m.put("c", key="c"))):
            with pytest.raises(StoreError, match=r"log record 2 cannot be read: head\.tip: expected a version id"):
                call()
        assert _log(store) == before
        assert replica.version == 1


def test_a_record_made_on_a_damaged_version_id_is_a_store_error(tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "store.db"
    with SQLiteStore(path) as store:
        shared: Shared[Any, Any] = Shared(store, "n", Memory(clock_fn=clock))
        for key in ("a", "b"):
            shared.update(lambda m, key=key: m.put(key, key=key))

        def prev(data: Any) -> Any:
            data["prev"] = 'x"'
            return data

        _rewrite(path, "log", "record", 2, prev)
        with pytest.raises(StoreError, match=r"log record 2 cannot be read: record\.prev: expected a version id"):
            shared.at(2)


def test_tip_of_reads_only_a_version_id_lethe_makes() -> None:
    tip = _records.new_tip()
    assert _records.tip_of(f'{{"head":[1,1,null,"{tip}"],"written":[]}}') == tip
    assert _records.tip_of('{"head":[1,1,null,"ab\\"c"],"written":[]}') is None
    assert _records.tip_of('{"head":[1,1,null,"ABCDEF0123456789"],"written":[]}') is None
