"""A memory's reads: what one version answers at one clock reading, changing nothing.

``Memory``'s read methods check their arguments and call these.  Every read
takes one clock reading (:func:`clock`), never earlier than the latest one the
version saw, and leaves out the entries past their deadline at it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Any

from lethe._core import expiry as _expiry
from lethe._core.clock import UTC, aware_us, to_us, to_utc, utc_now
from lethe._core.entry import Entry
from lethe._core.gc import paused
from lethe._core.map import PersistentMap
from lethe._core.validate import hook
from lethe._memory import forecast as _forecast
from lethe._memory.version import Version, hashable, live
from lethe.decay._scorer import clamp
from lethe.ranking import rank

Moment = tuple[datetime, float]
_INSERTED_US = attrgetter("inserted_us")


@dataclass(frozen=True, slots=True)
class Stats:
    """A summary of a memory at one moment (see :meth:`Memory.stats`).

    Attributes:
        size: Number of entries.
        active: Entries scoring at least the eviction threshold.
        pinned: Pinned entries.
        oldest_entry: Earliest ``inserted_at``; None when empty.
        newest_entry: Latest ``inserted_at``; None when empty.
        mean_score: Mean score; None when empty.
        median_score: Median score; None when empty.
    """

    size: int
    active: int
    pinned: int
    oldest_entry: datetime | None
    newest_entry: datetime | None
    mean_score: float | None
    median_score: float | None


def clock(mem: Version[Any, Any]) -> Moment:
    """Read ``mem``'s clock once, as a UTC datetime and its microseconds; never earlier than
    the latest moment ``mem`` saw.

    Every datetime the memory stores or returns is UTC: arithmetic on datetimes
    of a zone with daylight saving time is wall-clock arithmetic, an hour off
    across a change, and their comparisons ignore ``fold``.
    """
    fn = mem._config.clock_fn
    now = utc_now() if fn is None else fn()
    utc = type(now) is datetime and now.tzinfo is UTC  # what clocks return: nothing to check
    now_us = aware_us(now) if utc else to_us(now, "clock_fn()")
    if now_us < mem._latest_us:
        latest = mem._latest
        assert latest is not None
        return latest, mem._latest_us
    if not utc and now.tzinfo is not UTC:
        now = to_utc(now, "clock_fn()")
    return now, now_us


def size(mem: Version[Any, Any]) -> int:
    """The number of entries not past their deadline now."""
    n = len(mem._entries)
    if mem._deadlines:
        n -= len(_expiry.due(mem._deadlines, clock(mem)[1]))
    return n


def holds(mem: Version[Any, Any], key: Any) -> bool:
    """Whether ``mem`` holds ``key`` now.

    Raises:
        TypeError: ``key`` is not hashable.
    """
    hashable(key)
    entry = mem._entries.get(key)
    return entry is not None and (entry.expires_us is None or not _expiry.expired(entry, clock(mem)[1]))


def peek(mem: Version[Any, Any], key: Any) -> Entry[Any, Any]:
    """The entry at ``key``, reading the clock only when it has a deadline."""
    try:
        entry = mem._entries.get(key)
    except TypeError:
        hashable(key)  # an unhashable key: say so by name (else the key's own error stands)
        raise
    if entry is None:
        raise KeyError(key)
    return entry if entry.expires_us is None else live(mem, key, clock(mem)[1])


def expired_seqs(mem: Version[Any, Any], now_us: float) -> set[int]:
    """The put orders of the entries past their deadline at ``now_us``."""
    return {item[1] for item in _expiry.due(mem._deadlines, now_us)} if mem._deadlines else set()


def ranked(mem: Version[Any, Any], at: Moment) -> tuple[list[Entry[Any, Any]], list[float]]:
    """Every entry not expired at ``at``, in rank order, and their scores."""
    now, now_us = at
    # Indexed: already nearly in rank order, which the sort takes in near-linear time.
    pinned, entries = mem._ranking.at_least(mem._entries, 0.0, now_us)
    gone = expired_seqs(mem, now_us)
    if gone:
        entries = [e for e in entries if e.seq not in gone]
    return rank(pinned, entries, mem._config.scorer.many(entries, now, now_us))


def above(mem: Version[Any, Any], threshold: float) -> list[Entry[Any, Any]]:
    """Entries scoring at least ``threshold`` now, highest first."""
    now, now_us = clock(mem)
    # Indexed: only the entries whose key can reach the threshold, already nearly in rank order.
    pinned, rest = mem._ranking.at_least(mem._entries, threshold, now_us)
    rest = [e for e in rest if not _expiry.expired(e, now_us)]
    values = mem._config.scorer.many(rest, now, now_us)
    kept = [i for i, v in enumerate(values) if clamp(v) >= threshold]
    found, _ = rank(pinned, [rest[i] for i in kept], [values[i] for i in kept])
    return found


def top(mem: Version[Any, Any], n: int, at: Moment) -> list[Entry[Any, Any]]:
    """The ``n`` highest-scored entries at ``at``, highest first."""
    now, now_us = at
    return mem._ranking.top(mem._entries, mem._config.scorer, n, now, now_us, may_expire=bool(mem._deadlines))


def score(mem: Version[Any, Any], key: Any) -> float:
    """The score of the entry at ``key`` now (KeyError if it is not there)."""
    now, now_us = clock(mem)
    return mem._config.scorer.one(live(mem, key, now_us), now, now_us)


def scored(mem: Version[Any, Any]) -> list[tuple[Entry[Any, Any], float]]:
    """Every entry with its score now, highest first."""
    with paused():  # n pairs, all of them returned: nothing for the collector to find
        return list(zip(*ranked(mem, clock(mem))))


def filtered(mem: Version[Any, Any], predicate: Callable[[Entry[Any, Any]], object]) -> list[Entry[Any, Any]]:
    """The entries for which ``predicate(entry)`` is true now, highest score first.

    Raises:
        TypeError: ``predicate`` is not callable.
    """
    hook(predicate, "predicate", optional=False)
    return [e for e in mem._ranking.ranked(mem._entries, mem._config.scorer, *clock(mem)) if predicate(e)]


def top_scored(mem: Version[Any, Any], n: int) -> list[tuple[Entry[Any, Any], float]]:
    """The ``n`` highest-scored entries now, with their scores (one clock reading for all)."""
    at, one = clock(mem), mem._config.scorer.one
    return [(e, one(e, *at)) for e in top(mem, n, at)]


def time_until(mem: Version[Any, Any], key: Any, threshold: float) -> timedelta | None:
    """How long until the entry at ``key`` scores below ``threshold`` without a rehearsal."""
    now, now_us = clock(mem)
    entry = live(mem, key, now_us)
    # At threshold 0 nothing ever drops below, deadline or not.
    return _forecast.time_until(mem._config.scorer, entry, threshold, now, now_us)


def stats(mem: Version[Any, Any]) -> Stats:
    """Size, active and pinned counts, insertion range and score statistics now."""
    entries, scores = ranked(mem, clock(mem))
    if not entries:
        return Stats(
            size=0,
            active=0,
            pinned=0,
            oldest_entry=None,
            newest_entry=None,
            mean_score=None,
            median_score=None,
        )
    threshold = mem._config.eviction_threshold
    # By instant (the microsecond counts), not by datetime: datetimes of one zone
    # compare by wall clock, which repeats an hour when daylight saving time ends.
    return Stats(
        size=len(entries),
        active=sum(1 for s in scores if s >= threshold),
        pinned=sum(1 for e in entries if e.pinned),
        oldest_entry=_as_utc(min(entries, key=_INSERTED_US).inserted_at),
        newest_entry=_as_utc(max(entries, key=_INSERTED_US).inserted_at),
        mean_score=math.fsum(scores) / len(scores),
        median_score=statistics.median(scores),
    )


def _as_utc(moment: datetime) -> datetime:
    """``moment`` as UTC (unchanged if UTC has no datetime for it)."""
    try:
        return moment if moment.tzinfo is UTC else moment.astimezone(UTC)
    except OverflowError:
        return moment


def next_eviction(mem: Version[Any, Any]) -> datetime | None:
    """The earliest moment an unpinned entry falls below ``eviction_threshold`` (or expires)."""
    now, now_us = clock(mem)
    soonest = mem._ranking.soonest(mem._entries)
    deadline = mem._deadlines.first()
    if deadline is not None:  # the first deadline, whatever its entry's score
        soonest.append(mem._entries[deadline[2]])
    return _forecast.next_eviction(mem._config.scorer, soonest, mem._config.eviction_threshold, now, now_us)


def equal(a: Version[Any, Any], b: Version[Any, Any]) -> bool:
    """Whether two versions hold equal entries, counters and latest reading, under equal configurations."""
    if a._config != b._config or len(a._entries) != len(b._entries):
        return False
    if (a._next_key, a._next_seq) != (b._next_key, b._next_seq):
        return False
    if a._latest_us != b._latest_us:  # time never runs back below it: it changes scores
        return False
    theirs = b._entries
    return all(theirs.get(e.key) == e for e in a._entries.values())


class Keys(Mapping[Any, Entry[Any, Any]]):
    """A read-only Mapping view of a persistent map without the entries whose seq is in
    ``gone`` (backs ``Memory.keys()``)."""

    __slots__ = ("_gone", "_map")

    def __init__(self, m: PersistentMap[Any, Entry[Any, Any]], gone: set[int]) -> None:
        self._map = m
        self._gone = gone

    def __getitem__(self, key: Any) -> Entry[Any, Any]:
        entry = self._map[key]
        if entry.seq in self._gone:
            raise KeyError(key)
        return entry

    def __len__(self) -> int:
        return len(self._map) - len(self._gone)

    def __iter__(self) -> Iterator[Any]:
        gone = self._gone
        if not gone:
            return self._map.keys()
        return (e.key for e in self._map.values() if e.seq not in gone)

    def __contains__(self, key: object) -> bool:
        entry = self._map.get(key)
        return entry is not None and entry.seq not in self._gone
