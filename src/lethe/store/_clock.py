"""The store's clock: one timeline for every process that shares a store, on every host."""

from __future__ import annotations

import datetime as _dt
import threading
import time

from lethe._core.clock import from_us
from lethe._core.validate import is_number
from lethe.store._engine import Store


class StoreClock:
    """A clock (a ``clock_fn``) that reads the store's clock instead of this host's.

    Every memory keeps the latest clock reading it saw and never goes back
    before it, so when writers on several hosts share a memory and one host's
    clock runs ahead, the others' operations all happen at that host's latest
    reading until their own clocks catch up: decay stands still for them.
    Give every writer this clock and they all read one clock, the server's
    (``TIME`` on Redis and Valkey, ``clock_timestamp()`` on PostgreSQL; this
    host's clock for SQLite and :class:`~lethe.store.InMemoryStore`, which live
    on one host).  The alternative is to keep the hosts' clocks in step
    (NTP, chrony) and use the default clock; :class:`~lethe.store.Shared`
    warns (:class:`~lethe.ClockWarning`) when a memory's latest
    reading is ahead of its process's clock by more than it allows.

    Reading the server for every operation would cost a round trip each: this
    clock asks the server at most once every ``resync`` seconds, takes the
    reading as the time at the middle of the round trip, and in between adds
    how far this host's monotonic clock moved.  It never goes back: a new
    reading earlier than the last time returned keeps that time until the
    clock passes it.  If the server cannot be reached when a new reading is
    due, it goes on from the last one (and tries again at the next call).

    Args:
        store: The store whose clock to read (its ``time()`` method).
        resync: Seconds between two readings of the server's clock.

    Raises:
        ValueError: ``resync`` is negative or not a number.
        StoreError: (when called) the server cannot be reached and was never read.

    >>> from lethe import Memory
    >>> from lethe.store import InMemoryStore, Shared, StoreClock
    >>> store = InMemoryStore()
    >>> shared = Shared(store, "notes", Memory(clock_fn=StoreClock(store)))
    >>> shared.update(lambda m: m.put("v", key="k")).peek("k").inserted_at.tzname()
    'UTC'
    """

    def __init__(self, store: Store, *, resync: float = 1.0) -> None:
        if not is_number(resync) or not resync >= 0 or resync == float("inf"):
            raise ValueError(f"resync must be a finite number of seconds >= 0, got {resync!r}")
        self.store = store
        self.resync = float(resync)
        self._lock = threading.Lock()
        self._server_us = 0.0  # the server's clock, in µs since the epoch ...
        self._at = -float("inf")  # ... when this host's monotonic clock read this (seconds)
        self._last_us = -float("inf")

    @property
    def offset(self) -> float | None:
        """Seconds the store's clock was ahead of this host's wall clock at the last reading
        (negative: behind; None: not read yet)."""
        with self._lock:
            if self._at == -float("inf"):
                return None
            return (self._server_us + (time.monotonic() - self._at) * 1e6) / 1e6 - time.time()

    def __call__(self) -> _dt.datetime:
        """The store's time now, as an aware UTC datetime.

        Complexity: one round trip to the server at most every ``resync`` seconds, O(1) otherwise.
        """
        with self._lock:
            now = time.monotonic()
            if now - self._at >= self.resync:
                self._read(now)
            us = max(self._server_us + round((time.monotonic() - self._at) * 1e6), self._last_us)
            self._last_us = us
        return from_us(us)

    def _read(self, before: float) -> None:
        try:
            server = self.store.time()
        except Exception:
            if self._at == -float("inf"):
                raise
            return  # go on from the last reading; the next call tries again
        after = time.monotonic()
        self._server_us, self._at = float(round(server * 1e6)), (before + after) / 2

    def __repr__(self) -> str:
        return f"StoreClock({self.store!r}, resync={self.resync})"
