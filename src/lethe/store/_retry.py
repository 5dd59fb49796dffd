"""How an engine tries again: one policy, a deadline and a growing, jittered pause, for every engine.

An engine on a server (:class:`~lethe.store.PostgresStore`,
:class:`~lethe.store.RedisStore`) tries an operation again while its
connection fails, for up to its ``timeout`` seconds after the first failure;
:class:`~lethe.store.SQLiteStore` tries again the switch to WAL mode while
another connection holds the file.  Each builds a :class:`Retry` and either
hands it the operation (:meth:`Retry.call`) or, where a failure needs more than
trying the same call again (a commit whose reply was lost is looked up, not
sent again), drives the tries itself (:meth:`Retry.tries`, :meth:`Tries.again`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Retry:
    """Try again for up to ``timeout`` seconds after the first failure, pausing in between.

    The pause before the second try is ``first``; each later one is twice the
    last, at least ``least`` and at most ``most`` seconds.  Each pause is
    scaled by a random factor from ``1 - jitter`` to 1 (so that many clients
    coming back after a server restart do not come in step), and never runs
    past the deadline.  The defaults are the servers' engines': the first try
    again at once (a pooled connection the server closed), then 10 ms, 20 ms,
    ... up to 0.5 s.

    ``sleep``, ``clock`` (monotonic seconds) and ``uniform`` (``random.uniform``)
    are the functions it waits, reads the time and draws the jitter with.

    >>> slept = []
    >>> retry = Retry(timeout=1.0, jitter=0.0, sleep=slept.append, clock=lambda: 0.0)
    >>> tries = retry.tries()
    >>> [tries.again() for _ in range(4)], slept
    ([True, True, True, True], [0.0, 0.01, 0.02, 0.04])

    Args:
        timeout: Seconds after the first failure past which no try is made (0: none).
        first: The pause before the second try.
        least: The shortest pause after that.
        most: The longest pause.
        jitter: How much of each pause may be cut at random (0: none, 0.5: up to half).
    """

    timeout: float
    first: float = 0.0
    least: float = 0.01
    most: float = 0.5
    jitter: float = 0.5
    sleep: Callable[[float], object] = field(default=time.sleep, repr=False, compare=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)
    uniform: Callable[[float, float], float] = field(default=random.uniform, repr=False, compare=False)

    def tries(self) -> Tries:
        """The tries of one operation, none failed yet."""
        return Tries(self)

    def call(self, attempt: Callable[[], T], retryable: Callable[[Exception], bool]) -> T:
        """``attempt()``, called again while it raises an exception ``retryable`` accepts, until
        ``timeout`` seconds after the first failure; then that exception is raised.  Any other
        exception is raised at once.  ``attempt`` must be safe to call again."""
        tries = self.tries()
        while True:
            try:
                return attempt()
            except Exception as exc:
                if not retryable(exc) or not tries.again():
                    raise


class Tries:
    """The tries of one operation under a :class:`Retry`: the deadline, set at the first
    failure, and the pause before the next try."""

    __slots__ = ("_deadline", "_pause", "_retry")

    def __init__(self, retry: Retry) -> None:
        self._retry = retry
        self._deadline: float | None = None
        self._pause = retry.first

    def again(self) -> bool:
        """After a failed try: sleep the pause and return True (try again), or return False at
        once when the deadline has passed (the first call sets it ``timeout`` from now)."""
        retry = self._retry
        now = retry.clock()
        if self._deadline is None:
            self._deadline = now + retry.timeout
        left = self._deadline - now
        if left <= 0:
            return False
        pause = self._pause
        self._pause = min(max(2 * pause, retry.least), retry.most)
        if retry.jitter:
            pause *= retry.uniform(1.0 - retry.jitter, 1.0)
        retry.sleep(min(pause, left))
        return True
