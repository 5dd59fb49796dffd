"""``lethe.Vector``: an entry's embedding, immutable, float32, checked by name."""

from __future__ import annotations

import math
import pickle
from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lethe import Vector

FLOAT32_MAX = 3.4028234663852886e38


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=40))
def test_numbers_are_rounded_to_float32_as_array_rounds_them(numbers: list[float]) -> None:
    rounded = array("f", numbers)
    if any(math.isinf(x) for x in rounded) or not any(rounded):
        with pytest.raises(ValueError, match="vector"):
            Vector(numbers)
        return
    v = Vector(numbers)
    assert list(v) == list(rounded)
    assert v == Vector(tuple(numbers)) == Vector(rounded)
    assert hash(v) == hash(Vector(rounded))
    assert pickle.loads(pickle.dumps(v)) == v
    assert Vector.from_bytes(v.to_bytes()) == v


def test_every_float_buffer_and_sequence_is_taken() -> None:
    np = pytest.importorskip("numpy")
    want = [1.0, 2.5, -3.0]
    for given_ in (want, tuple(want), array("d", want), array("f", want), [1, 2.5, -3]):
        assert list(Vector(given_)) == want
    for dtype in (np.float16, np.float32, np.float64):
        assert list(Vector(np.array(want, dtype=dtype))) == want
    assert list(Vector(np.array([[1.0, 2.5, -3.0]])[0])) == want  # a row of a matrix
    assert list(Vector([np.float32(1.0), np.float64(2.5), -3])) == want


@pytest.mark.parametrize(
    ("values", "error", "words"),
    [
        ([], ValueError, "empty"),
        ([0.0, 0.0], ValueError, "all zeros"),
        ([1.0, math.nan], ValueError, r"vector\[1\] is nan"),
        ([math.inf, 1.0], ValueError, r"vector\[0\] is inf"),
        ([4e38, 1.0], ValueError, "float32's range"),
        ([-4e38, 1.0], ValueError, "float32's range"),
        (["1", 2.0], TypeError, "real numbers"),
        ([1j, 2.0], TypeError, "real numbers"),
        ("12", TypeError, "sequence of numbers"),
        (b"12", TypeError, "sequence of numbers"),
        (12, TypeError, "sequence of numbers"),
        ([1.0] * 65_537, ValueError, "at most 65536"),
    ],
)
def test_what_is_not_a_vector_is_refused_by_name(values: object, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        Vector(values)  # type: ignore[arg-type]


def test_the_largest_float32_is_kept_and_nothing_changes_a_vector() -> None:
    v = Vector([FLOAT32_MAX, -FLOAT32_MAX, 1.0])
    assert v[0] == FLOAT32_MAX
    assert math.isfinite(v.norm)
    with pytest.raises(AttributeError, match="immutable"):
        v._data = None  # type: ignore[misc]
    assert v[1:] == (-FLOAT32_MAX, 1.0)
    assert repr(Vector([1.0, 2.0])) == "Vector([1.0, 2.0])"
    assert repr(Vector([1.0] * 5)) == "Vector([1.0, 1.0, 1.0, ...], dimensions=5)"
    with pytest.raises(ValueError, match="whole number of float32s"):
        Vector.from_bytes(b"abc")
