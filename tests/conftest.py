"""Shared fixtures: a hand-driven clock and a memory factory."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from lethe import Memory

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("long", max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

START = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)


class Clock:
    """A fake clock: call it for the time, ``tick`` it forward (or back)."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start
        self.calls = 0

    def __call__(self) -> datetime:
        self.calls += 1
        return self.now

    def tick(self, delta: timedelta | float = HOUR) -> datetime:
        self.now += delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make(clock: Clock) -> Callable[..., Memory[Any, Any]]:
    """Build a memory on the fake clock."""

    def build(**kwargs: Any) -> Memory[Any, Any]:
        kwargs.setdefault("clock_fn", clock)
        return Memory(**kwargs)

    return build
