"""The one retry policy of the engines (``lethe.store._retry``), on a hand-driven clock: what it
sleeps, when it gives up, which failures it tries again.  No test here waits."""

from __future__ import annotations

from typing import Any

import pytest

from lethe.store._retry import Retry


class Clock:
    """A monotonic clock that moves only when slept on (or by hand); it records every sleep."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []
        self.draws: list[tuple[float, float]] = []

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.slept.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now

    def uniform(self, low: float, high: float) -> float:
        self.draws.append((low, high))
        return low  # the shortest pause the jitter allows


def retry(clock: Clock, timeout: float = 10.0, **kwargs: Any) -> Retry:
    return Retry(timeout, sleep=clock.sleep, clock=clock, uniform=clock.uniform, **kwargs)


def test_the_pauses_double_from_the_first_up_to_the_longest() -> None:
    clock = Clock()
    tries = retry(clock, jitter=0.0).tries()
    assert all(tries.again() for _ in range(9))
    assert clock.slept == [0.0, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.5, 0.5]
    assert clock.draws == []  # no jitter: nothing drawn


def test_each_pause_is_cut_by_the_jitter_drawn() -> None:
    clock = Clock()
    tries = retry(clock).tries()  # the servers' default: up to half of each pause cut
    for _ in range(4):
        assert tries.again()
    assert clock.draws == [(0.5, 1.0)] * 4
    assert clock.slept == [0.0, 0.005, 0.01, 0.02]


def test_the_deadline_runs_from_the_first_failure_and_the_last_pause_stops_at_it() -> None:
    clock = Clock()
    clock.now = 5.0
    policy = retry(clock, timeout=1.0, jitter=0.0, first=0.3, least=0.3, most=0.3)
    tries = policy.tries()
    clock.now = 50.0  # made long before its first failure: the deadline is not set yet
    assert [tries.again() for _ in range(4)] == [True, True, True, True]
    assert clock.slept == pytest.approx([0.3, 0.3, 0.3, 0.1])  # the last one up to the deadline, not past
    assert clock.now == pytest.approx(51.0)
    assert tries.again() is False
    assert len(clock.slept) == 4  # given up without sleeping


def test_no_time_means_no_second_try() -> None:
    clock = Clock()
    assert retry(clock, timeout=0.0).tries().again() is False
    assert clock.slept == []


def test_each_operation_starts_afresh() -> None:
    clock = Clock()
    policy = retry(clock, timeout=0.05, jitter=0.0)
    first = policy.tries()
    while first.again():
        pass
    assert clock.slept == pytest.approx([0.0, 0.01, 0.02, 0.02])
    second = policy.tries()
    assert second.again()
    assert clock.slept[-1] == 0.0  # the first pause again, and a new deadline


class Lost(Exception):
    pass


def test_call_tries_again_what_is_retryable_and_returns_the_answer() -> None:
    clock = Clock()
    calls: list[int] = []

    def attempt() -> str:
        calls.append(1)
        if len(calls) < 4:
            raise Lost("gone")
        return "answer"

    assert retry(clock, jitter=0.0).call(attempt, lambda exc: isinstance(exc, Lost)) == "answer"
    assert len(calls) == 4
    assert clock.slept == [0.0, 0.01, 0.02]


def test_call_raises_the_last_failure_once_the_deadline_passed() -> None:
    clock = Clock()
    calls: list[int] = []

    def attempt() -> None:
        calls.append(1)
        raise Lost(f"gone {len(calls)}")

    with pytest.raises(Lost, match=r"gone 5$"):
        retry(clock, timeout=0.05, jitter=0.0).call(attempt, lambda exc: isinstance(exc, Lost))
    assert len(calls) == 5
    assert sum(clock.slept) == pytest.approx(0.05)


def test_call_raises_another_failure_at_once() -> None:
    clock = Clock()
    calls: list[int] = []

    def attempt() -> None:
        calls.append(1)
        raise ValueError("not a lost connection")

    with pytest.raises(ValueError, match="not a lost connection"):
        retry(clock).call(attempt, lambda exc: isinstance(exc, Lost))
    assert calls == [1]
    assert clock.slept == []


def test_the_defaults_are_the_servers_engines() -> None:
    """10 ms, then twice as long up to 0.5 s, up to half cut at random: what PostgreSQL and Redis used."""
    policy = Retry(30.0)
    assert (policy.first, policy.least, policy.most, policy.jitter) == (0.0, 0.01, 0.5, 0.5)


def test_every_engine_on_a_server_uses_it() -> None:
    """One policy: the engines that try again keep no backoff of their own."""
    import inspect

    from lethe.store import _postgres, _redis, _sqlite

    for module in (_postgres, _redis, _sqlite):
        source = inspect.getsource(module)
        assert "Retry(" in source, module.__name__
        assert "random.uniform" not in source, module.__name__
        assert "_MAX_PAUSE" not in source, module.__name__
