"""Replies waited for no longer than a bound, on connections whose client library has no timeout.

A server that stops answering without closing its connections (a frozen process, a host that
paused, a network that drops packets without a reset) leaves a client blocked in its wait for a
reply for ever: the operating system still acknowledges what is sent and answers keepalives.
psycopg waits without a deadline, so :func:`bounded` keeps one: when a block outlives it, one
thread of the process shuts the connection's socket down (its descriptor stays the client's),
the wait ends with the connection lost, and the store treats it as it treats any lost
connection (tried again, then :class:`~lethe.store.StoreError` or
:class:`~lethe.store.CommitUnknown`).

A block costs two acquisitions of one lock and no thread switch: the watcher sleeps until the
earliest deadline, or a second at most, and is woken only for a deadline earlier than that.  It
ends once no block has run for a second (so an idle process, one about to fork say, runs no
thread of lethe's), and the next block starts it again.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

__all__ = ["bounded"]

#: How long the watcher waits for a block, once none runs, before it ends.
_IDLE = 1.0


class _Deadlines:
    """The deadlines of the blocks running in this process, and the thread that enforces them."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[int, tuple[float, Callable[[], int]]] = {}
        self._count = 0
        self._wake_at = math.inf  # when the watcher wakes next (inf: only when told)
        self._watcher: threading.Thread | None = None

    @contextmanager
    def bounded(self, fileno: Callable[[], int], seconds: float) -> Iterator[None]:
        deadline = time.monotonic() + seconds
        with self._cond:
            token = self._count = self._count + 1
            self._due[token] = (deadline, fileno)
            if self._watcher is None:
                watcher = threading.Thread(target=self._watch, name="lethe-deadlines", daemon=True)
                try:
                    watcher.start()
                    self._watcher = watcher
                except RuntimeError:  # (at interpreter shutdown: no thread, no bound)
                    pass
            elif deadline < self._wake_at:
                self._cond.notify()
        try:
            yield
        finally:
            with self._cond:
                self._due.pop(token, None)  # (gone already if it was cut)

    def _watch(self) -> None:
        idle_since: float | None = None  # when it first found no block running, since the last it did
        with self._cond:
            while True:
                now = time.monotonic()
                for token in [t for t, (deadline, _) in self._due.items() if deadline <= now]:
                    _cut(self._due.pop(token)[1])
                if self._due:
                    idle_since = None
                    self._wake_at = min(deadline for deadline, _ in self._due.values())
                elif idle_since is None:
                    idle_since, self._wake_at = now, math.inf  # (so the next block wakes it)
                elif now - idle_since >= _IDLE:
                    self._watcher = None
                    return
                # At least once a second, to end once idle (a block that ends tells no one).
                self._cond.wait(min(self._wake_at - now, _IDLE))


def _cut(fileno: Callable[[], int]) -> None:
    """Shut down the socket ``fileno()`` names, through a duplicate of its descriptor (so the
    descriptor stays its owner's to close): a read or a wait on it ends at once."""
    try:
        sock = socket.socket(fileno=os.dup(fileno()))
    except Exception:  # (closed meanwhile, or no socket: nothing to cut)
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


_DEADLINES = _Deadlines()


def bounded(fileno: Callable[[], int], seconds: float) -> AbstractContextManager[None]:
    """A ``with`` block during which the socket ``fileno()`` names is shut down once
    ``seconds`` pass: a wait for a reply on it ends then, with the connection lost."""
    return _DEADLINES.bounded(fileno, seconds)


def _after_fork_in_child() -> None:
    # The parent's watcher is not the child's, and its lock may have been held at the fork.
    global _DEADLINES
    _DEADLINES = _Deadlines()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
