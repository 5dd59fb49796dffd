"""``Memory``: an immutable, bounded map of entries whose relevance decays."""

from __future__ import annotations

import heapq
import math
import statistics
from collections.abc import Callable, Hashable, Iterable, Iterator, KeysView, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import compress, islice
from operator import attrgetter, eq
from typing import Any, Generic, TypeVar

from lethe._clock import from_us, seconds, to_us, utc_now
from lethe._consolidate import find_groups, jaccard_words, merge_group
from lethe._entry import (
    Entry,
    check_importance,
    evolve,
    freeze_metadata,
    make_entry,
    rehearsed,
)
from lethe._errors import MemoryFullError, SummarizeError
from lethe._map import EMPTY, PersistentMap
from lethe._order import Order
from lethe._scoring import Scorer, clamp, make_scorer
from lethe.decay._protocol import DecayCallable, DecayFunction
from lethe.decay._registry import BUILTINS, by_name

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

SummarizeFn = Callable[[Entry[Any, Any]], Any]
EvictFn = Callable[[tuple[Entry[Any, Any], ...]], object]
ClockFn = Callable[[], datetime]

_SEQ = attrgetter("seq")
_NEVER = -math.inf


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


def _check_threshold(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number between 0 and 1, got {type(value).__name__}")
    try:
        f = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be between 0 and 1, got a huge int") from None
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, got {value!r}")
    return f


def _check_hook(value: object, name: str) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable or None, got {type(value).__name__}")


def _hashable(key: object) -> None:
    try:
        hash(key)
    except TypeError:
        raise TypeError(f"key must be hashable, got {type(key).__name__}") from None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Memory(Generic[K, V]):
    """An immutable, bounded memory whose entries lose relevance unless rehearsed.

    Every write (``put``, ``get``, ``touch``, ``update``, ``pin``, ``delete``,
    ``evict``, ...) returns a new ``Memory`` and leaves the receiver, and every
    older version, exactly as it was; versions share structure, so a write
    costs O(log n), not a copy.  Reads compute scores lazily from the entries
    and one reading of the clock.  Share a memory across threads or tasks
    freely: only the reference to the *current* version needs guarding.

    Immutability is shallow: the memory never changes the values, summaries
    or metadata values you give it, but it does not copy or freeze them
    either (entry metadata is a read-only mapping, its values are yours).
    Store immutable values (str, int, tuple, frozen dataclasses, ...), or
    never mutate one after putting it: a change would show in every version
    that holds it.

    Args:
        max_entries: Capacity (a positive int).  A new key at capacity evicts the
            lowest-scored unpinned entry (summarized first, reported to ``on_evict``).
        decay_fn: A built-in by name — ``"exponential"`` (the default),
            ``"access_weighted"``, ``"actr"`` (alias ``"combined"``),
            ``"power_law"``, ``"soft_floor"``, ``"ebbinghaus_ltp"``,
            ``"stability_exponential"``, ``"adaptive"``, ``"fsrs"`` or
            ``"recency"`` (the names of ``lethe.decay.BUILTINS``), built with
            ``half_life`` (``"fsrs"`` keeps its own time scale) — a
            :class:`~lethe.decay.DecayFunction` object, or any callable
            ``(entry, now) -> float``.
        half_life: A ``timedelta`` or seconds (> 0); stored as seconds.
        eviction_threshold: Entries scoring below it are removed by :meth:`evict`.
        summarize_threshold: Entries scoring below it are summarized (>= ``eviction_threshold``).
        summarize_fn: ``entry -> summary``, run at most once per value of an entry.
        on_evict: Called with the tuple of entries each operation evicted.
        clock_fn: ``() -> aware datetime``; default ``datetime.now(timezone.utc)``.

    Raises:
        ValueError, TypeError: a parameter is invalid (the message names it).

    >>> from datetime import datetime, timedelta, timezone
    >>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> mem = Memory(max_entries=2, half_life=timedelta(hours=1), clock_fn=lambda: now)
    >>> mem = mem.put("likes tea", key="tea").put("uses vim", key="vim", importance=2.0)
    >>> [e.key for e in mem], mem.score("tea")
    (['vim', 'tea'], 1.0)
    """

    max_entries: int = 1000
    decay_fn: str | DecayFunction | DecayCallable = "exponential"
    half_life: timedelta | float = timedelta(hours=1)
    eviction_threshold: float = 0.05
    summarize_threshold: float = 0.15
    summarize_fn: SummarizeFn | None = None
    on_evict: EvictFn | None = None
    clock_fn: ClockFn | None = None
    _entries: PersistentMap[K, Entry[K, V]] = field(init=False, repr=False)
    _next_key: int = field(init=False, repr=False)
    _next_seq: int = field(init=False, repr=False)
    _latest: datetime | None = field(init=False, repr=False)
    _latest_us: float = field(init=False, repr=False)
    _scorer: Scorer = field(init=False, repr=False)
    _order: Order | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        max_entries = self.max_entries
        if isinstance(max_entries, bool) or not isinstance(max_entries, int):
            raise TypeError(f"max_entries must be a positive int, got {type(max_entries).__name__}")
        if max_entries < 1:
            raise ValueError(f"max_entries must be a positive int, got {max_entries!r}")
        half_life = seconds(self.half_life, "half_life")
        eviction = _check_threshold(self.eviction_threshold, "eviction_threshold")
        summarize = _check_threshold(self.summarize_threshold, "summarize_threshold")
        if summarize < eviction:
            raise ValueError(
                f"summarize_threshold ({summarize}) must be >= eviction_threshold ({eviction})"
            )
        _check_hook(self.summarize_fn, "summarize_fn")
        _check_hook(self.on_evict, "on_evict")
        _check_hook(self.clock_fn, "clock_fn")
        scorer = make_scorer(self.decay_fn, half_life)
        set_ = object.__setattr__
        set_(self, "half_life", half_life)
        set_(self, "eviction_threshold", eviction)
        set_(self, "summarize_threshold", summarize)
        set_(self, "decay_fn", scorer.fn)
        set_(self, "_scorer", scorer)
        set_(self, "_entries", EMPTY)
        set_(self, "_next_key", 0)
        set_(self, "_next_seq", 0)
        set_(self, "_latest", None)
        set_(self, "_latest_us", _NEVER)
        set_(self, "_order", None if scorer.rate_us is None else Order(scorer.rate_us))

    # -- versions ---------------------------------------------------------

    def _version(
        self,
        entries: PersistentMap[K, Entry[K, V]],
        now: datetime | None = None,
        now_us: float = _NEVER,
        next_key: int | None = None,
        next_seq: int | None = None,
        order: Order | None = None,
    ) -> Memory[K, V]:
        """A new version sharing this one's configuration (and ``order``, the index of ``entries``)."""
        new: Memory[K, V] = _new(Memory)
        _set_max_entries(new, self.max_entries)
        _set_decay_fn(new, self.decay_fn)
        _set_half_life(new, self.half_life)
        _set_eviction_threshold(new, self.eviction_threshold)
        _set_summarize_threshold(new, self.summarize_threshold)
        _set_summarize_fn(new, self.summarize_fn)
        _set_on_evict(new, self.on_evict)
        _set_clock_fn(new, self.clock_fn)
        _set_scorer(new, self._scorer)
        _set_entries(new, entries)
        _set_order(new, order)
        _set_next_key(new, self._next_key if next_key is None else next_key)
        _set_next_seq(new, self._next_seq if next_seq is None else next_seq)
        if now_us > self._latest_us:
            _set_latest(new, now)
            _set_latest_us(new, now_us)
        else:
            _set_latest(new, self._latest)
            _set_latest_us(new, self._latest_us)
        return new

    def _now(self) -> tuple[datetime, float]:
        """Read the clock once; never earlier than the latest moment this memory saw."""
        clock = self.clock_fn
        now = utc_now() if clock is None else clock()
        now_us = to_us(now, "clock_fn()")
        if now_us < self._latest_us:
            latest = self._latest
            assert latest is not None
            return latest, self._latest_us
        return now, now_us

    # -- reads ------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        _hashable(key)
        return key in self._entries

    def __iter__(self) -> Iterator[Entry[K, V]]:
        """Entries by score, highest first (one clock reading for the whole iteration).

        With an indexed decay function (see :meth:`top`) the iteration is lazy:
        taking its first k entries costs about as much as ``top(k)``.
        """
        now, now_us = self._now()
        order = self._order
        if order is None:
            return iter(self._ranked(now, now_us)[0])
        return order.ranked(self._score_fn(now, now_us), now_us, False)

    def _score_fn(self, now: datetime, now_us: float) -> Callable[[Entry[K, V]], float]:
        unclamped = self._scorer.unclamped
        return lambda e: unclamped(e, now, now_us)


    def keys(self) -> KeysView[K]:
        """A set-like view of the keys (membership in O(log n); order unspecified).

        >>> sorted(Memory().put("a", key="x").put("b", key="y").keys())
        ['x', 'y']
        """
        return KeysView(_EntryMapping(self._entries))

    def peek(self, key: K) -> Entry[K, V]:
        """The entry at ``key``, without rehearsing it.

        Raises:
            KeyError: ``key`` is not in the memory.
        """
        _hashable(key)
        entry = self._entries.get(key)
        if entry is None:
            raise KeyError(key)
        return entry

    def score(self, key: K) -> float:
        """The current score of the entry at ``key`` (KeyError if missing)."""
        entry = self.peek(key)
        now, now_us = self._now()
        return self._scorer.one(entry, now, now_us)

    def scored(self) -> list[tuple[Entry[K, V], float]]:
        """Every entry with its current score, highest score first.

        Equal scores keep a fixed order that never depends on hash randomization:
        pinned entries first (the most recently put first); then entries that
        clamping ties at 1.0 by their value before clamping (``importance *
        raw``: the entry that stays at 1.0 longer first); then the most recently
        put first (so at capacity the oldest of equally scored entries goes first).
        """
        now, now_us = self._now()
        entries, scores = self._ranked(now, now_us)
        return list(zip(entries, scores))

    def score_map(self) -> dict[K, float]:
        """``{key: score}`` for every entry, in score order."""
        now, now_us = self._now()
        entries, scores = self._ranked(now, now_us)
        return {e.key: s for e, s in zip(entries, scores)}

    def above(self, threshold: float) -> list[Entry[K, V]]:
        """Entries scoring at least ``threshold``, highest first (expired entries left out).

        Runtime complexity: O(log n + m) for m results with an indexed decay
        function (see :meth:`top`): only entries that can reach ``threshold``
        are scored, and they arrive nearly sorted; otherwise O(n + m log m).
        """
        t = _check_number(threshold, "threshold")
        now, now_us = self._now()
        order = self._order
        if order is None:
            live = [e for e in self._entries.to_list() if not _expired(e, now_us)]
            pinned = [e for e in live if e.pinned]
            rest = [e for e in live if not e.pinned]
        else:
            # Only the entries whose key can reach the threshold, already nearly in rank order.
            pinned, rest = order.at_least(t, now_us)
            rest = [e for e in rest if not _expired(e, now_us)]
        values = self._scorer.many(rest, now, now_us)
        kept = [i for i, v in enumerate(values) if clamp(v) >= t]
        ranked, _ = _rank(pinned, [rest[i] for i in kept], [values[i] for i in kept])
        return ranked

    def active(self) -> list[Entry[K, V]]:
        """Entries scoring at least ``eviction_threshold``, highest first."""
        return self.above(self.eviction_threshold)

    def top(self, n: int) -> list[Entry[K, V]]:
        """The ``n`` highest-scored entries, highest first (expired entries left out).

        Runtime complexity: O(n log n_entries) when the decay function declares
        one ``decay_rate`` for every entry (``Exponential``): the memory keeps an
        index on the ranking, which such a function never changes.  Otherwise
        (ACT-R, per-entry rates, custom callables) O(n_entries + n log
        n_entries): every entry is scored, without a full sort.

        Raises:
            ValueError, TypeError: ``n`` is not an int >= 0.
        """
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"n must be an int, got {type(n).__name__}")
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n!r}")
        now, now_us = self._now()
        order = self._order
        if order is not None:
            ranked = order.ranked(self._score_fn(now, now_us), now_us, True)
            return list(islice(ranked, min(n, len(self._entries))))
        live = [e for e in self._entries.to_list() if not _expired(e, now_us)]
        pinned = sorted((e for e in live if e.pinned), key=_SEQ, reverse=True)
        if len(pinned) >= n:
            return pinned[:n]
        rest = [e for e in live if not e.pinned]
        values = self._scorer.many(rest, now, now_us)
        # The rank order is (value, seq) descending: a heap picks the first n without sorting all.
        best = heapq.nlargest(n - len(pinned), range(len(rest)), key=lambda i: (values[i], rest[i].seq))
        return pinned + [rest[i] for i in best]

    def filter(self, predicate: Callable[[Entry[K, V]], object]) -> list[Entry[K, V]]:
        """Entries for which ``predicate(entry)`` is true, highest score first."""
        if not callable(predicate):
            raise TypeError(f"predicate must be callable, got {type(predicate).__name__}")
        return [e for e in self if predicate(e)]

    def active_count(self) -> int:
        """How many entries score at least ``eviction_threshold``."""
        return len(self.active())

    def pinned_count(self) -> int:
        """How many entries are pinned."""
        return sum(1 for e in self._entries.values() if e.pinned)

    def stats(self) -> Stats:
        """Size, active and pinned counts, insertion range and score statistics."""
        now, now_us = self._now()
        entries, scores = self._ranked(now, now_us)
        if not entries:
            return Stats(0, 0, 0, None, None, None, None)
        threshold = self.eviction_threshold
        return Stats(
            size=len(entries),
            active=sum(1 for s in scores if s >= threshold),
            pinned=sum(1 for e in entries if e.pinned),
            oldest_entry=min(e.inserted_at for e in entries),
            newest_entry=max(e.inserted_at for e in entries),
            mean_score=math.fsum(scores) / len(scores),
            median_score=statistics.median(scores),
        )

    def _ranked(self, now: datetime, now_us: float) -> tuple[list[Entry[K, V]], list[float]]:
        """All entries in rank order, and their scores."""
        order = self._order
        if order is None:
            entries = self._entries.to_list()
            pinned = [e for e in entries if e.pinned]
            if pinned:
                entries = [e for e in entries if not e.pinned]
        else:
            # Already nearly in rank order, which the sort below takes in near-linear time.
            pinned, entries = order.at_least(0.0, now_us)
        return _rank(pinned, entries, self._scorer.many(entries, now, now_us))

    # -- writes -----------------------------------------------------------

    def put(
        self,
        value: V,
        *,
        key: K | None = None,
        importance: float = 1.0,
        pinned: bool = False,
        metadata: Mapping[str, Any] | None = None,
        ttl: timedelta | float | None = None,
        expires_at: datetime | None = None,
    ) -> Memory[K, V]:
        """Store ``value``; return the new memory.

        Without ``key``, an int key is generated, larger than every key
        generated before and never one already present.  An existing key is
        replaced (fresh timestamps, ``access_count`` 0) and nothing is evicted.
        A new key at capacity first evicts the lowest-scored unpinned entry,
        summarized first when ``summarize_fn`` is set, then passed to ``on_evict``.

        ``ttl`` (a ``timedelta`` or seconds from now) or ``expires_at`` (an aware
        datetime) give the entry a deadline: once it passes, the entry scores
        0.0 under every decay function, is left out of ``active``, ``above``
        and ``top``, and the next ``evict()`` removes (and reports) it.  A pinned
        entry cannot be put with a deadline; pinning one later suspends its
        deadline until it is unpinned.

        Runtime complexity: O(log n).  A new key at capacity finds its victim in
        O(log n) with an indexed decay function (see :meth:`top`), by an O(n)
        scan otherwise.

        >>> from datetime import datetime, timezone
        >>> mem = Memory(clock_fn=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
        >>> mem = mem.put("draft", key="d", importance=0.5, metadata={"source": "user"})
        >>> mem.peek("d").importance, mem.score("d")
        (0.5, 0.5)

        Raises:
            MemoryFullError: at capacity with every entry pinned.
            ValueError, TypeError: a bad ``importance``, ``pinned``, ``metadata``, ``key``,
                ``ttl`` or ``expires_at``.
            SummarizeError: ``summarize_fn`` raised (nothing changed).
        """
        imp, meta, ttl_us, deadline_us = _put_options(importance, pinned, metadata, ttl, expires_at)
        if key is not None:
            _hashable(key)
        now, now_us = self._now()
        expires_at, deadline_us = _deadline(now_us, ttl_us, expires_at, deadline_us)
        return self._put_at(key, value, now, now_us, pinned, imp, meta, expires_at, deadline_us)

    def put_many(
        self,
        items: Mapping[K, V] | Iterable[tuple[K | None, V]],
        *,
        importance: float = 1.0,
        pinned: bool = False,
        metadata: Mapping[str, Any] | None = None,
        ttl: timedelta | float | None = None,
        expires_at: datetime | None = None,
    ) -> Memory[K, V]:
        """Store many ``(key, value)`` pairs at once; return the new memory.

        The result is identical to chained :meth:`put` calls made at one clock
        reading, in order, each with the same options (a ``None`` key is
        generated; a repeated key is replaced by its later value).  Below
        capacity it is built in bulk, several times faster than the chain; when
        the pairs would overflow the memory, each put evicts exactly as the
        chain would (hooks included).

        Runtime complexity: O(m log n) for m pairs, or O(n + m log m) when m is a
        sizeable fraction of n (the map and the index are rebuilt in bulk).

        >>> from datetime import datetime, timezone
        >>> mem = Memory(clock_fn=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
        >>> mem = mem.put_many({"tea": "likes tea", "vim": "uses vim"}, importance=2.0)
        >>> sorted(mem.keys()), mem.peek("vim").importance
        (['tea', 'vim'], 2.0)

        Raises:
            ValueError, TypeError: an item is not a ``(key, value)`` pair, an
                unhashable key, or a bad option (as for :meth:`put`); nothing changed.
            MemoryFullError, SummarizeError: as for :meth:`put`; nothing changed.
        """
        imp, meta, ttl_us, deadline_us = _put_options(importance, pinned, metadata, ttl, expires_at)
        pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
        for i, pair in enumerate(pairs):
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise TypeError(f"items[{i}] must be a (key, value) pair, got {type(pair).__name__}")
            if pair[0] is not None:
                try:
                    hash(pair[0])
                except TypeError:
                    raise TypeError(f"items[{i}]: key must be hashable, got {type(pair[0]).__name__}") from None
        now, now_us = self._now()
        expires, deadline_us = _deadline(now_us, ttl_us, expires_at, deadline_us)
        entries = self._entries
        fresh: dict[Any, Entry[K, V]] = {}
        next_key, seq = self._next_key, self._next_seq
        for key, value in pairs:
            if key is None:
                while next_key in entries or next_key in fresh:
                    next_key += 1
                key = next_key
                next_key += 1
            fresh[key] = make_entry(  # a repeated key: the later put replaces it (with the later seq)
                key, value, now, now, 0, pinned, imp, meta, None, False, expires, seq, None, now_us, now_us,
                deadline_us,
            )
            seq += 1
        replaced = [e for e in map(entries.get, fresh) if e is not None]
        if len(entries) + len(fresh) - len(replaced) > self.max_entries:
            # Puts will evict: replay the chain exactly, at this one clock reading.
            mem = self
            for key, value in pairs:
                mem = mem._put_at(key, value, now, now_us, pinned, imp, meta, expires, deadline_us)
            return mem
        order = self._order
        if order is not None:
            if 8 * len(fresh) < len(entries):
                for old in replaced:
                    order = order.remove(old)
                for entry in fresh.values():
                    order = order.add(entry)
            else:
                order = order.edited({e.seq for e in replaced}, {}, list(fresh.values()))
        return self._version(entries.update(fresh), now, now_us, next_key, seq, order)

    def _put_at(
        self,
        key: Any,
        value: V,
        now: datetime,
        now_us: float,
        pinned: bool,
        imp: float,
        meta: Any,
        expires: datetime | None,
        deadline_us: float | None,
    ) -> Memory[K, V]:
        """One put, with its options already checked and the clock already read."""
        entries = self._entries
        next_key = self._next_key
        if key is None:
            while next_key in entries:
                next_key += 1
            key = next_key
            next_key += 1
        seq = self._next_seq
        entry = make_entry(
            key, value, now, now, 0, pinned, imp, meta, None, False, expires, seq, None, now_us, now_us, deadline_us
        )
        order = self._order
        old = entries.get(key)
        if old is not None:
            if order is not None:
                order = order.swap(old, entry)
            entries = entries.replace(key, entry)
        else:
            if len(entries) >= self.max_entries:
                entries, order = self._make_room(entries, order, now, now_us)
            entries = entries.add(key, entry)
            if order is not None:
                order = order.add(entry)
        return self._version(entries, now, now_us, next_key, seq + 1, order)

    def _make_room(
        self, entries: PersistentMap[K, Entry[K, V]], order: Order | None, now: datetime, now_us: float
    ) -> tuple[PersistentMap[K, Entry[K, V]], Order | None]:
        """Evict the lowest-scored unpinned entry (summarized, reported)."""
        if order is None:
            victim = self._scorer.lowest(entries.to_list(), now, now_us)
        else:
            victim = order.lowest(self._score_fn(now, now_us), now_us)
        if victim is None:
            raise MemoryFullError(
                f"memory is full ({self.max_entries} entries) and every entry is pinned; "
                "unpin or delete one first"
            )
        if order is not None:
            order = order.remove(victim)
        victim = self._summarized(victim)
        if self.on_evict is not None:
            self.on_evict((victim,))
        return entries.delete(victim.key), order

    def _summarized(self, entry: Entry[K, V]) -> Entry[K, V]:
        fn = self.summarize_fn
        if fn is None or entry.summarized:
            return entry
        try:
            summary = fn(entry)
        except Exception as exc:
            raise SummarizeError(f"summarize_fn failed for key {entry.key!r}: {exc!r}") from exc
        return evolve(entry, summary=summary, summarized=True)

    def _rehearse(self, key: K, **changes: Any) -> tuple[Memory[K, V], Entry[K, V]]:
        entry = self.peek(key)
        now, now_us = self._now()
        hook = self._scorer.rehearse
        state = entry.decay_state if hook is None else hook(entry, now, now_us)
        new = rehearsed(entry, now, now_us, state)
        if changes:
            new = evolve(new, **changes)
        order = self._order
        if order is not None:
            order = order.swap(entry, new)
        return self._version(self._entries.replace(key, new), now, now_us, order=order), new

    def get(self, key: K) -> tuple[Memory[K, V], Entry[K, V]]:
        """Rehearse and return the entry at ``key``: ``(new_memory, refreshed_entry)``.

        Raises:
            KeyError: ``key`` is not in the memory.
        """
        return self._rehearse(key)

    def touch(self, key: K, *, importance: float | None = None) -> Memory[K, V]:
        """Rehearse the entry at ``key``, optionally setting its importance.

        Raises:
            KeyError: ``key`` is not in the memory.
            ValueError, TypeError: a bad ``importance``.
        """
        if importance is None:
            return self._rehearse(key)[0]
        return self._rehearse(key, importance=check_importance(importance))[0]

    def update(self, key: K, value: V) -> Memory[K, V]:
        """Rehearse the entry at ``key`` with a new value; its summary starts over.

        Raises:
            KeyError: ``key`` is not in the memory.
        """
        return self._rehearse(key, value=value, summary=None, summarized=False)[0]

    def _set_pinned(self, key: K, pinned: bool) -> Memory[K, V]:
        entry = self.peek(key)
        if entry.pinned is pinned:
            return self
        now, now_us = self._now()
        new = evolve(entry, pinned=pinned)
        order = self._order
        if order is not None:
            order = order.swap(entry, new)
        return self._version(self._entries.replace(key, new), now, now_us, order=order)

    def pin(self, key: K) -> Memory[K, V]:
        """Pin the entry at ``key``: it scores 1.0 and is never evicted automatically.

        Raises:
            KeyError: ``key`` is not in the memory.
        """
        return self._set_pinned(key, True)

    def unpin(self, key: K) -> Memory[K, V]:
        """Unpin the entry at ``key``; it decays again from its last access.

        Raises:
            KeyError: ``key`` is not in the memory.
        """
        return self._set_pinned(key, False)

    def delete(self, key: K) -> Memory[K, V]:
        """Remove the entry at ``key``; a missing key returns an equal memory."""
        _hashable(key)
        entry = self._entries.get(key)
        if entry is None:
            return self
        order = self._order
        if order is not None:
            order = order.remove(entry)
        return self._version(self._entries.delete(key), order=order)

    def clear(self) -> Memory[K, V]:
        """Remove every entry; configuration and key generation carry on."""
        order = self._order
        return self._version(EMPTY, order=None if order is None else Order(order.rate_us))

    def summarize(self) -> Memory[K, V]:
        """Summarize every unpinned entry scoring below ``summarize_threshold``.

        Runs ``summarize_fn`` once for each such entry that has no summary for
        its current value.  Does nothing without a ``summarize_fn``.

        Raises:
            SummarizeError: ``summarize_fn`` raised (nothing changed).
        """
        now, now_us = self._now()
        entries = self._entries
        if self.summarize_fn is None:
            return self
        limit = self.summarize_threshold
        order = self._order
        if order is None:
            candidates = [e for e in entries.to_list() if not e.pinned and not e.summarized]
        else:
            candidates = [e for e in order.below(limit, now_us) if not e.summarized]
        values = self._scorer.many(candidates, now, now_us)
        changed = False
        for entry, v in sorted(zip(candidates, values), key=lambda p: p[0].seq):
            if clamp(v) < limit:
                new = self._summarized(entry)
                entries = entries.replace(entry.key, new)
                if order is not None:
                    order = order.swap(entry, new)
                changed = True
        return self._version(entries, now, now_us, order=order) if changed else self

    def evict(self) -> tuple[Memory[K, V], tuple[Entry[K, V], ...]]:
        """Summarize what is fading and remove what has faded.

        Unpinned entries scoring below ``summarize_threshold`` are summarized;
        those below ``eviction_threshold`` are then removed, returned (highest
        score first) and passed to ``on_evict`` in one call.

        Returns:
            ``(new_memory, evicted_entries)``.

        Raises:
            SummarizeError: ``summarize_fn`` raised (nothing changed).
        """
        now, now_us = self._now()
        entries = self._entries
        order = self._order
        summarize_below = self.summarize_threshold if self.summarize_fn is not None else -1.0
        evict_below = self.eviction_threshold
        if order is None:
            candidates = [e for e in entries.to_list() if not e.pinned]
        else:
            candidates = order.below(max(summarize_below, evict_below), now_us)
        values = self._scorer.many(candidates, now, now_us)
        evicted: list[Entry[K, V]] = []
        changed: list[tuple[Entry[K, V], Entry[K, V]]] = []
        # Lowest first (the reverse of rank order), so summaries run in the order entries fade.
        for i in sorted(range(len(candidates)), key=lambda i: (values[i], candidates[i].seq)):
            entry, s = candidates[i], clamp(values[i])
            gone = s < evict_below or _expired(entry, now_us)
            if s >= summarize_below and not gone:
                continue
            old = entry
            if (s < summarize_below or gone) and not entry.summarized:
                entry = self._summarized(entry)
            if gone:
                evicted.append(entry)
                changed.append((old, entry))
            elif entry is not old:
                changed.append((old, entry))
        evicted.reverse()
        out = tuple(evicted)
        if out and self.on_evict is not None:
            self.on_evict(out)
        if not changed:
            return self, out
        entries, order = self._rewritten(changed, {e.seq for e in out})
        return self._version(entries, now, now_us, order=order), out

    def _rewritten(
        self, changed: list[tuple[Entry[K, V], Entry[K, V]]], gone: set[int]
    ) -> tuple[PersistentMap[K, Entry[K, V]], Order | None]:
        """The map and index with each ``(old, new)`` applied: ``new`` replaces ``old``, or
        removes it when its seq is in ``gone``.  Many changes rebuild both in bulk."""
        entries, order = self._entries, self._order
        if 8 * len(changed) > len(entries):
            kept = {e.key: e for e in entries.values()}
            for old, new in changed:
                if old.seq in gone:
                    del kept[old.key]
                else:
                    kept[old.key] = new
            if order is not None:
                order = order.edited(gone, {old.seq: new for old, new in changed if old.seq not in gone}, [])
            return EMPTY.update(kept), order
        for old, new in changed:
            if old.seq in gone:
                entries = entries.delete(old.key)
                if order is not None:
                    order = order.remove(old)
            else:
                entries = entries.replace(old.key, new)
                if order is not None:
                    order = order.swap(old, new)
        return entries, order

    # -- forecasts --------------------------------------------------------

    def _crossing_us(
        self, entry: Entry[K, V], threshold: float, now: datetime, now_us: float, *, expiry: bool
    ) -> float | None:
        """The moment (µs) the entry's score first drops below ``threshold``; None for never.

        With ``expiry``, the entry's deadline counts as a crossing too (an expired
        entry is evicted whatever the threshold).
        """
        if entry.pinned:
            return None
        if self._scorer.one(entry, now, now_us) < threshold:
            return now_us
        crossing = self._decay_crossing_us(entry, threshold, now_us)
        deadline = entry.expires_us
        if expiry and deadline is not None:
            crossing = max(now_us, deadline if crossing is None else min(crossing, deadline))
        return crossing

    def _decay_crossing_us(self, entry: Entry[K, V], threshold: float, now_us: float) -> float | None:
        scorer = self._scorer
        if threshold <= 0.0:
            return None
        closed = getattr(scorer.fn, "time_until", None)
        if callable(closed) and scorer.multiply and scorer.is_builtin:
            if entry.importance == 0.0:
                return now_us
            secs: float | None = closed(entry, threshold / entry.importance)
            if secs is None:
                return None
            # The first whole microsecond strictly past the crossing: the score is below there,
            # so an evict() scheduled for that moment removes the entry.
            return max(now_us, math.floor(entry.accessed_us + max(secs, 0.0) * 1e6) + 1.0)

        def below(t_us: float) -> bool:
            return scorer.one(entry, from_us(t_us), t_us) < threshold

        # Scores never rise without a rehearsal: find a moment below, then bisect.
        step = 1e6
        low, high = now_us, now_us + step
        horizon = now_us + 1e6 * 86_400 * 365 * 1000
        while not below(high):
            if high >= horizon:
                return None
            low, step = high, step * 4
            high = min(now_us + step, horizon)
        while high - low > 1.0:
            mid = math.floor((low + high) / 2)
            if not low < mid < high:
                break  # past 2**53 µs (year 2255) floats are coarser than a microsecond
            if below(mid):
                high = mid
            else:
                low = mid
        return high

    def time_until(self, key: K, threshold: float) -> timedelta | None:
        """How long until the entry's score drops below ``threshold`` without a rehearsal.

        The answer is the first microsecond at which the score is strictly below
        ``threshold``, so an operation scheduled for then sees it below.

        Exact where the decay function has a closed form (``Exponential``,
        ``AccessWeighted`` and others with ``time_until``), otherwise found by
        bisection to the microsecond (scores never rise without a rehearsal).
        A deadline (``ttl``) counts: the score drops to 0.0 then.

        Returns:
            ``timedelta(0)`` if it is already below; None if the entry is pinned or never drops below.

        Raises:
            KeyError: ``key`` is not in the memory.

        >>> from datetime import datetime, timezone
        >>> mem = Memory(half_life=3600, clock_fn=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
        >>> mem.put("v", key="k").time_until("k", 0.25)  # 0.25 after 2 h; below it 1 µs later
        datetime.timedelta(seconds=7200, microseconds=1)
        """
        entry = self.peek(key)
        t = _check_number(threshold, "threshold")
        now, now_us = self._now()
        # At threshold 0 nothing ever drops below, deadline or not.
        crossing = self._crossing_us(entry, t, now, now_us, expiry=t > 0.0)
        if crossing is None:
            return None
        return timedelta(microseconds=round(crossing - now_us))

    def next_eviction(self) -> datetime | None:
        """The earliest moment an unpinned entry falls below ``eviction_threshold`` (or expires).

        Schedule the next :meth:`evict` sweep for then instead of polling.
        It is the current time if some entry is already evictable, and None if
        no entry ever will be (every entry pinned, or the memory empty).

        Runtime complexity: O(log n) with an indexed decay function (see
        :meth:`top`), otherwise O(n).
        """
        now, now_us = self._now()
        threshold = self.eviction_threshold
        best: float | None = None
        order = self._order
        for entry in self._entries.values() if order is None else order.soonest():
            crossing = self._crossing_us(entry, threshold, now, now_us, expiry=True)
            if crossing is not None and (best is None or crossing < best):
                best = crossing
                if best <= now_us:
                    break
        if best is None:
            return None
        return now + timedelta(microseconds=round(best - now_us))

    def consolidate(
        self,
        similarity: Callable[[Any, Any], float] = jaccard_words,
        threshold: float = 0.7,
        min_group: int = 2,
        merge: Callable[[tuple[Entry[K, V], ...]], Entry[K, V]] | None = None,
    ) -> tuple[Memory[K, V], list[tuple[Entry[K, V], ...]]]:
        """Merge groups of near-duplicate unpinned entries into one entry each.

        Entries whose values are at least ``threshold`` similar are grouped
        (transitively); each group of ``min_group`` or more becomes one entry.
        By default (``merge=None``) the highest-scored entry absorbs the rest: it
        keeps its key and value, access counts are summed, access histories
        merged (so duplicates reinforce each other instead of crowding the
        memory), importance is the largest, metadata merged, and the absorbed
        keys are listed in ``metadata["consolidated_from"]``.  A ``merge``
        function gets each group (highest score first) and returns the entry to
        keep; its key must be one of the group's keys.

        Runtime complexity: with the default word-set Jaccard similarity, only
        entries sharing rare words are compared (prefix filtering), fast at
        thousands of entries; any other ``similarity`` compares all pairs, O(n^2).

        Returns:
            ``(new_memory, groups)``: each group is the tuple of original entries it merged.

        Raises:
            ValueError, TypeError: a bad ``threshold``, ``min_group``, ``similarity`` or merge result.

        >>> from datetime import datetime, timezone
        >>> mem = Memory(clock_fn=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
        >>> mem = mem.put("deploy failed on node 7", key="a").put("deploy failed on node 7!", key="b")
        >>> merged, groups = mem.consolidate()
        >>> len(merged), [e.key for e in groups[0]], merged.peek("b").metadata["consolidated_from"]
        (1, ['b', 'a'], ['a'])
        """
        t = _check_number(threshold, "threshold")
        if not 0.0 <= t <= 1.0:
            raise ValueError(f"threshold must be between 0 and 1, got {threshold!r}")
        if isinstance(min_group, bool) or not isinstance(min_group, int):
            raise TypeError(f"min_group must be an int, got {type(min_group).__name__}")
        if min_group < 2:
            raise ValueError(f"min_group must be >= 2, got {min_group!r}")
        if not callable(similarity):
            raise TypeError(f"similarity must be callable, got {type(similarity).__name__}")
        _check_hook(merge, "merge")
        now, now_us = self._now()
        ranked, _scores = self._ranked(now, now_us)
        candidates = [e for e in ranked if not e.pinned]
        groups = [
            tuple(candidates[i] for i in sorted(g)) for g in find_groups(candidates, similarity, t, min_group)
        ]
        if not groups:
            return self, []
        merge_states = getattr(self.decay_fn, "merge_states", None)
        entries = self._entries
        order = self._order
        for group in groups:
            merged = merge(group) if merge is not None else merge_group(group, merge_states)
            if not isinstance(merged, Entry):
                raise TypeError(f"merge must return an Entry, got {type(merged).__name__}")
            replaced = next((e for e in group if e.key == merged.key), None)
            if replaced is None:
                raise ValueError(f"merge returned key {merged.key!r}, which is not in its group")
            if merged.seq != replaced.seq:  # the merged entry takes the place of the one with its key
                merged = evolve(merged, seq=replaced.seq)
            for e in group:
                entries = entries.delete(e.key)
                if order is not None:
                    order = order.remove(e)
            entries = entries.add(merged.key, merged)
            if order is not None:
                order = order.add(merged)
            # Time never runs behind an entry the memory holds.
            if merged.accessed_us > now_us:
                now, now_us = merged.last_accessed_at, merged.accessed_us
        groups.sort(key=lambda g: g[0].seq)
        return self._version(entries, now, now_us, order=order), groups

    # -- protocol ---------------------------------------------------------

    def _config(self) -> dict[str, Any]:
        return {
            "max_entries": self.max_entries,
            "decay_fn": self.decay_fn,
            "half_life": self.half_life,
            "eviction_threshold": self.eviction_threshold,
            "summarize_threshold": self.summarize_threshold,
            "summarize_fn": self.summarize_fn,
            "on_evict": self.on_evict,
            "clock_fn": self.clock_fn,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Memory):
            return NotImplemented
        if self._config() != other._config() or len(self) != len(other):
            return False
        if (self._next_key, self._next_seq) != (other._next_key, other._next_seq):
            return False
        theirs = other._entries
        return all(theirs.get(e.key) == e for e in self._entries.values())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Memory(size={len(self)}, max_entries={self.max_entries}, decay_fn={self.decay_fn!r})"

    def __replace__(self, **changes: Any) -> Memory[K, V]:
        """A memory with the same entries and changed configuration (``copy.replace``).

        Raises:
            ValueError: the new ``max_entries`` is smaller than the size.
        """
        config = self._config()
        unknown = set(changes) - set(config)
        if unknown:
            raise TypeError(f"unknown configuration field(s): {sorted(unknown)}")
        fn: Any = self.decay_fn
        name = getattr(fn, "name", None)
        name = name if isinstance(name, str) else ""
        follows = "half_life" in changes and "decay_fn" not in changes and name in BUILTINS
        # A built-in made from the memory's half-life (by name) follows the new one.
        if follows and by_name(name, self.half_life) == fn:
            config["decay_fn"] = name
        config.update(changes)
        fresh: Memory[K, V] = Memory(**config)
        if len(self) > fresh.max_entries:
            raise ValueError(f"max_entries={fresh.max_entries} is below the size ({len(self)}); evict first")
        return fresh._restored(self._entries, self._next_key, self._next_seq, self._latest, self._latest_us)

    def _restored(
        self,
        entries: PersistentMap[K, Entry[K, V]],
        next_key: int,
        next_seq: int,
        latest: datetime | None,
        latest_us: float,
    ) -> Memory[K, V]:
        order = self._order
        if order is not None:
            order = order.rebuilt(entries.values(), latest_us if latest_us > _NEVER else math.nan)
        new = self._version(entries, None, _NEVER, next_key, next_seq, order)
        _set_latest(new, latest)
        _set_latest_us(new, latest_us)
        return new

    def __reduce__(self) -> tuple[Any, ...]:
        entries = sorted(self._entries.values(), key=_SEQ)
        state = (entries, self._next_key, self._next_seq, self._latest, self._latest_us)
        return (_unpickle, (self._config(), state))

    # -- serialization ----------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The memory as JSON types: configuration and entries (see :meth:`from_dict`)."""
        from lethe._serialize import memory_to_dict

        return memory_to_dict(self)

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        decay_fn: str | DecayFunction | DecayCallable | None = None,
        summarize_fn: SummarizeFn | None = None,
        on_evict: EvictFn | None = None,
        clock_fn: ClockFn | None = None,
    ) -> Memory[Any, Any]:
        """Rebuild a memory from :meth:`to_dict` output.

        Hooks are not serialized: pass them again.  A memory saved with a custom
        decay function needs ``decay_fn``; one given here overrides the saved one.
        Nothing named in ``data`` is imported, evaluated or called.

        Raises:
            ValueError, TypeError: ``data`` is malformed (the message names the field).
        """
        from lethe._serialize import memory_from_dict

        return memory_from_dict(
            data, decay_fn=decay_fn, summarize_fn=summarize_fn, on_evict=on_evict, clock_fn=clock_fn
        )


def _unpickle(config: dict[str, Any], state: tuple[Any, ...]) -> Memory[Any, Any]:
    entries_list, next_key, next_seq, latest, latest_us = state
    fresh: Memory[Any, Any] = Memory(**config)
    entries: PersistentMap[Any, Entry[Any, Any]] = EMPTY
    for e in entries_list:
        entries = entries.add(e.key, e)
    return fresh._restored(entries, next_key, next_seq, latest, latest_us)


def _put_options(
    importance: object, pinned: object, metadata: Any, ttl: object, expires_at: datetime | None
) -> tuple[float, Any, float | None, float | None]:
    """Check :meth:`Memory.put`'s options: ``(importance, metadata, ttl_us, deadline_us)``."""
    imp = check_importance(importance)
    if not isinstance(pinned, bool):
        raise TypeError(f"pinned must be a bool, got {type(pinned).__name__}")
    meta = freeze_metadata(metadata)
    if ttl is not None and expires_at is not None:
        raise ValueError("pass ttl or expires_at, not both")
    if pinned and (ttl is not None or expires_at is not None):
        raise ValueError("ttl/expires_at: a pinned entry cannot expire; pin it after putting it instead")
    ttl_us = None if ttl is None else seconds(ttl, "ttl") * 1e6
    deadline_us = None if expires_at is None else to_us(expires_at, "expires_at")
    return imp, meta, ttl_us, deadline_us


def _deadline(
    now_us: float, ttl_us: float | None, expires_at: datetime | None, deadline_us: float | None
) -> tuple[datetime | None, float | None]:
    """An entry's ``(expires_at, expires_us)`` put at ``now_us``: a ``ttl`` counts from now."""
    if ttl_us is None:
        return expires_at, deadline_us
    deadline_us = now_us + float(round(ttl_us))
    return from_us(deadline_us), deadline_us


def _rank(
    pinned: list[Entry[K, V]], entries: list[Entry[K, V]], values: list[float]
) -> tuple[list[Entry[K, V]], list[float]]:
    """``pinned`` (latest put first), then ``entries`` by rank value, equals latest put first;
    and their scores."""
    if len(pinned) > 1:
        pinned = sorted(pinned, key=_SEQ, reverse=True)
    order = sorted(range(len(entries)), key=values.__getitem__, reverse=True)
    ranked = [entries[i] for i in order]
    ranked_values = [values[i] for i in order]
    # Runs of equal values (underflowed to 0.0, importance 0, expired, or true ties) go latest put first.
    ties = list(compress(range(1, len(order)), map(eq, ranked_values, islice(ranked_values, 1, None))))
    i = 0
    while i < len(ties):
        start = ties[i]
        end = start
        while i < len(ties) and ties[i] == end:
            i += 1
            end += 1
        ranked[start - 1 : end] = sorted(ranked[start - 1 : end], key=_SEQ, reverse=True)
    if ranked_values and (ranked_values[0] > 1.0 or not ranked_values[-1] > 0.0):  # sorted: the ends tell
        ranked_values = [1.0 if v >= 1.0 else (v if v > 0.0 else 0.0) for v in ranked_values]
    return pinned + ranked, [1.0] * len(pinned) + ranked_values


def _expired(entry: Entry[Any, Any], now_us: float) -> bool:
    """Whether ``entry`` has passed its deadline (pinned entries never expire)."""
    deadline = entry.expires_us
    return deadline is not None and now_us >= deadline and not entry.pinned


def _check_number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    try:
        f = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be a finite number, got a huge int") from None
    if f != f:
        raise ValueError(f"{name} must not be NaN")
    return f


class _EntryMapping(Mapping[Any, Entry[Any, Any]]):
    """A read-only Mapping view of a persistent map (backs ``Memory.keys()``)."""

    __slots__ = ("_map",)

    def __init__(self, m: PersistentMap[Any, Entry[Any, Any]]) -> None:
        self._map = m

    def __getitem__(self, key: Any) -> Entry[Any, Any]:
        return self._map[key]

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self) -> Iterator[Any]:
        return self._map.keys()

    def __contains__(self, key: object) -> bool:
        return key in self._map


_new = object.__new__
_d = Memory.__dict__
_set_max_entries = _d["max_entries"].__set__
_set_decay_fn = _d["decay_fn"].__set__
_set_half_life = _d["half_life"].__set__
_set_eviction_threshold = _d["eviction_threshold"].__set__
_set_summarize_threshold = _d["summarize_threshold"].__set__
_set_summarize_fn = _d["summarize_fn"].__set__
_set_on_evict = _d["on_evict"].__set__
_set_clock_fn = _d["clock_fn"].__set__
_set_scorer = _d["_scorer"].__set__
_set_entries = _d["_entries"].__set__
_set_next_key = _d["_next_key"].__set__
_set_next_seq = _d["_next_seq"].__set__
_set_latest = _d["_latest"].__set__
_set_latest_us = _d["_latest_us"].__set__
_set_order = _d["_order"].__set__
del _d
