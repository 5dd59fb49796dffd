"""Shared fixtures: a hand-driven clock and a memory factory (the helpers live in ``tests/_support.py``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from lethe import ManualClock, Memory

from ._support import HOUR, START, fake_clock

__all__ = ["HOUR", "START"]

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("long", max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def clock() -> ManualClock:
    """The fake clock, standing at ``START`` until advanced."""
    return fake_clock()


@pytest.fixture
def make(clock: ManualClock) -> Callable[..., Memory[Any, Any]]:
    """Build a memory on the fake clock."""

    def build(**kwargs: Any) -> Memory[Any, Any]:
        kwargs.setdefault("clock_fn", clock)
        return Memory(**kwargs)

    return build
