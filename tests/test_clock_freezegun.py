"""The default clock follows freezegun without being passed a clock."""

from __future__ import annotations

from typing import Any

import pytest
from freezegun import freeze_time

from lethe import Memory


def test_default_clock_is_frozen_and_moved_by_freezegun() -> None:
    with freeze_time("2026-03-01 12:00:00") as frozen:
        mem: Memory[Any, Any] = Memory().put("v", key="k")
        assert mem.peek("k").inserted_at.isoformat() == "2026-03-01T12:00:00+00:00"
        frozen.tick(3600)
        assert mem.score("k") == pytest.approx(0.5)
        mem, entry = mem.get("k")
        assert entry.last_accessed_at.isoformat() == "2026-03-01T13:00:00+00:00"
        assert mem.score("k") == 1.0
