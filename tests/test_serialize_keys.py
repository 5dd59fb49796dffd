"""Int keys and Python's limit on converting an int to text (``sys.set_int_max_str_digits``, Python 3.11+
and 3.10.7+): JSON holds an int as its digits, so a key with more digits than Python converts is refused by
``to_dict`` and by ``from_dict`` alike, and by ``lethe.store``, naming the key."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from lethe import ManualClock, Memory
from lethe.store import InMemoryStore, Shared

pytestmark = pytest.mark.skipif(
    not hasattr(sys, "get_int_max_str_digits"), reason="no limit on int-to-text conversion before 3.10.7"
)


def _limit(digits: int) -> Iterator[int]:
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(digits)
    try:
        yield digits
    finally:
        sys.set_int_max_str_digits(old)


@pytest.fixture
def limit() -> Iterator[int]:
    """Python's default limit, 4300 digits, whatever the test run set."""
    yield from _limit(4300)


def _document(clock: ManualClock, key: Any) -> dict[str, Any]:
    data = Memory(clock_fn=clock).put("v", key=1).to_dict()
    data["entries"][0]["key"] = key
    return data


@pytest.mark.parametrize(
    "key", [10**4300, -(10**4300), [1, 10**4300], ["a", [2, -(10**5000)]]], ids=["int", "negative", "tuple", "nested"]
)
def test_from_dict_refuses_an_int_key_with_more_digits_than_python_converts(
    clock: ManualClock, limit: int, key: Any
) -> None:
    with pytest.raises(ValueError, match=r"^entries\[0\]\.key: int keys may have at most 4300 digits") as info:
        Memory.from_dict(_document(clock, key), clock_fn=clock)
    assert "sys.get_int_max_str_digits()" in str(info.value)
    assert len(str(info.value)) < 200


@pytest.mark.parametrize("key", [10**4300 - 1, -(10**4300 - 1), (1, 10**4300 - 1)], ids=["int", "negative", "tuple"])
def test_an_int_key_of_as_many_digits_as_python_converts_goes_through_json_and_back(
    clock: ManualClock, limit: int, key: Any
) -> None:
    mem: Memory[Any, str] = Memory(clock_fn=clock).put("v", key=key)
    back = Memory.from_dict(json.loads(json.dumps(mem.to_dict())), clock_fn=clock)
    assert back.peek(key).value == "v"
    assert back == mem


def test_to_dict_refuses_what_from_dict_would(clock: ManualClock, limit: int) -> None:
    mem: Memory[Any, str] = Memory(clock_fn=clock).put("v", key=10**4300)
    with pytest.raises(ValueError, match=r"^key an int of 4301 digits: cannot be saved exactly; int keys may have"):
        mem.to_dict()
    with pytest.raises(ValueError, match=r"^key <tuple object>: cannot be saved exactly; int keys may have"):
        Memory(clock_fn=clock).put("v", key=("a", 10**4300)).to_dict()


def test_the_limit_in_force_is_the_one_checked(clock: ManualClock) -> None:
    # The lowest limit Python allows (640 digits) is where the check stops being a comparison.
    for _ in _limit(640):
        with pytest.raises(ValueError, match=r"^entries\[0\]\.key: int keys may have at most 640 digits"):
            Memory.from_dict(_document(clock, 10**640), clock_fn=clock)
        assert len(Memory.from_dict(_document(clock, 10**640 - 1), clock_fn=clock)) == 1
    for _ in _limit(0):  # no limit
        mem: Memory[Any, str] = Memory(clock_fn=clock).put("v", key=10**5000)
        assert Memory.from_dict(json.loads(json.dumps(mem.to_dict())), clock_fn=clock) == mem


def test_a_store_refuses_the_key_by_name_and_writes_nothing(clock: ManualClock, limit: int) -> None:
    store = InMemoryStore()
    shared: Shared[Any, str] = Shared(store, "n", Memory(clock_fn=clock))
    with pytest.raises(ValueError, match=r"^key an int of 4301 digits: cannot be saved exactly; int keys may have"):
        shared.update(lambda m: m.put("v", key=10**4300))
    assert shared.version == 0
    assert store.read("n", 0) == []
