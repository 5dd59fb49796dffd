"""A configuration's document form belongs to ``Config``: one list of stored fields, one reader."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from lethe import Memory
from lethe._memory.config import FIELDS, HOOKS, STORED, Config
from lethe.decay import BUILTINS


def _config(mem: Memory[Any, Any]) -> Config:
    return mem._config


def test_the_stored_fields_are_the_constructors_but_the_hooks() -> None:
    assert FIELDS == STORED + HOOKS
    assert set(Memory().to_dict()) >= set(STORED)
    assert not set(Memory().to_dict()) & set(HOOKS)


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_every_builtin_configuration_reads_back_equal(name: str) -> None:
    config = _config(Memory(max_entries=7, decay_fn=name, half_life=timedelta(minutes=5), eviction_threshold=0.1))
    back, same_fn = Config.from_document(config.to_document())
    assert back == config
    assert back.named == config.named
    assert same_fn


def test_a_custom_function_is_passed_back_and_its_states_kept() -> None:
    def fn(entry: Any, now: Any) -> float:
        return 0.5

    config = _config(Memory(decay_fn=fn, half_life=timedelta(minutes=5)))
    doc = config.to_document()
    assert doc["decay_fn"]["name"] == "custom"
    with pytest.raises(
        ValueError, match=r"^decay_fn: the memory was saved with a custom decay function"
    ):
        Config.from_document(doc)
    back, same_fn = Config.from_document(doc, decay_fn=fn)
    assert (back, same_fn) == (config, True)
    builtin, same_fn = Config.from_document(doc, decay_fn="exponential")
    assert builtin.half_life == 300.0
    assert not same_fn  # a built-in never reads a custom function's states


def test_the_hooks_are_the_processs_own() -> None:
    def hook(entries: Any) -> None:
        return None

    config, _ = Config.from_document(_config(Memory()).to_document(), on_evict=hook)
    assert config.on_evict is hook
    assert config.summarize_fn is None


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("half_life", -1, "^configuration: half_life"),
        ("max_entries", 0, "^configuration: max_entries"),
        ("decay_fn", {"name": "nope"}, "nope"),
    ],
)
def test_a_bad_field_is_named(field: str, value: Any, message: str) -> None:
    doc = {**_config(Memory()).to_document(), field: value}
    with pytest.raises(ValueError, match=message):
        Config.from_document(doc)


def test_a_missing_field_is_named() -> None:
    doc = _config(Memory()).to_document()
    del doc["decay_fn"]
    with pytest.raises(ValueError, match=r"^decay_fn: missing"):
        Config.from_document(doc)
