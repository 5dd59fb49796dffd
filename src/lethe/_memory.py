"""``Memory``: an immutable, bounded map of entries whose relevance decays."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Hashable, Iterable, Iterator, KeysView, Mapping
from dataclasses import FrozenInstanceError, InitVar, dataclass
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Any, Generic, TypeVar, overload

from lethe import _expiry, _forecast
from lethe._btree import Tree
from lethe._change import Change, between
from lethe._clock import MAX_US, UTC, aware_us, from_us, to_us, to_utc, utc_now
from lethe._config import FIELDS, ONE_HOUR, Config, build
from lethe._consolidate import find_groups, jaccard_words, merge_group
from lethe._edit import Edit
from lethe._entry import Entry, check_importance, freeze_metadata, new_entry, rehearsed
from lethe._errors import MemoryFullError, SummarizeError
from lethe._expiry import expired as _expired
from lethe._gc import paused
from lethe._hooks import closed_if_awaitable
from lethe._map import EMPTY, PersistentMap
from lethe._ranking import Ranking, rank
from lethe._record import evolve
from lethe._reprs import short_repr
from lethe._scoring import clamp
from lethe._serialize import memory_from_dict, memory_to_dict
from lethe._snapshot import Snapshot
from lethe._validate import duration, flag, hook, integer, unit
from lethe.decay._protocol import DecayCallable, DecayFunction

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

SummarizeFn = Callable[[Entry[Any, Any]], Any]
EvictFn = Callable[[tuple[Entry[Any, Any], ...]], object]
ClockFn = Callable[[], datetime]

_SEQ = attrgetter("seq")
_SCORE_RANGE = "between 0 and 1 (scores never leave that range)"
_INSERTED_US = attrgetter("inserted_us")
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


class _ThisMemory:
    """The default of ``Memory``'s init-only ``_source``: read on a memory, it is that memory.

    ``dataclasses.replace(mem, **changes)`` builds the new memory with
    ``Memory(**fields)``, passing each init-only variable that has a default as
    ``getattr(mem, name)``: through this descriptor the new memory's
    ``__post_init__`` receives ``mem`` and keeps its entries, exactly as
    :meth:`Memory.configure` does.
    """

    __slots__ = ()

    def __get__(self, obj: object, owner: type | None = None) -> object:
        return self if obj is None else obj

    def __repr__(self) -> str:
        return "<no source>"


_THIS_MEMORY: Any = _ThisMemory()


class _Setting:
    """A configuration field of ``Memory``: read from the version's one :class:`Config`.

    The dataclass ``__init__`` assigns each field once; the values wait in
    ``_config`` (a dict until then) for ``__post_init__`` to check them all
    and build the ``Config`` every later version shares.
    """

    __slots__ = ("default", "name")

    def __init__(self, name: str, default: object) -> None:
        self.name = name
        self.default = default

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self.default  # the dataclass reads the default here
        return getattr(obj._config, self.name)  # type: ignore[attr-defined]

    def __set__(self, obj: object, value: object) -> None:
        try:
            pending = obj._config  # type: ignore[attr-defined]
        except AttributeError:
            pending = {}
            object.__setattr__(obj, "_config", pending)
        if type(pending) is not dict:
            raise FrozenInstanceError(f"cannot assign to field {self.name!r}")
        pending[self.name] = value


def _hashable(key: object) -> None:
    try:
        hash(key)
    except TypeError:
        raise TypeError(f"key must be hashable, got {type(key).__name__}") from None


class _Version(Generic[K, V]):
    """What one version of a memory holds besides its configuration's fields (``Memory``'s base,
    so the dataclass does not take these slots for fields)."""

    __slots__ = (
        "_config",
        "_deadlines",
        "_entries",
        "_evicted",
        "_latest",
        "_latest_us",
        "_next_key",
        "_next_seq",
        "_ranking",
    )

    _config: Config
    _entries: PersistentMap[K, Entry[K, V]]
    _ranking: Ranking
    _deadlines: Tree
    _evicted: tuple[Entry[K, V], ...]
    _next_key: int
    _next_seq: int
    _latest: datetime | None
    _latest_us: float


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Memory(_Version[K, V]):
    """An immutable, bounded memory whose entries lose relevance unless rehearsed.

    Every write (``put``, ``get``, ``touch``, ``update``, ``pin``, ``delete``,
    ``evict``, ...) returns a new ``Memory`` and leaves the receiver, and every
    older version, exactly as it was; versions share structure, so a write
    costs O(log n), not a copy.  Reads compute scores lazily from the entries
    and one reading of the clock.  Share a memory across threads or tasks
    freely: only the reference to the *current* version needs guarding.

    Immutability is shallow: the memory never changes the values and
    summaries you give it, but it does not copy or freeze them either; entry
    metadata is copied when put (dicts, lists and sets, at any depth) into a
    read-only mapping whose inner containers are plain ones.
    Store immutable values (str, int, tuple, frozen dataclasses, ...), or
    never mutate one after putting it: a change would show in every version
    that holds it.

    The methods by category, with their cost for n entries.  "Indexed" means a
    decay function that declares one ``decay_rate`` for every entry
    (``Exponential``), or groups whose ranking never changes with time
    (:class:`~lethe.decay.Grouped`: ``PowerLaw``, ``SoftFloor``,
    ``AccessWeighted``, ``StabilityExponential``, ``Recency``, ...; G groups
    add a factor G): the memory then keeps its ranking in an index, chosen
    once when the memory is built; other decay functions score every entry.

    | Reads (one clock reading each) | Cost |
    | --- | --- |
    | ``len(mem)``, ``key in mem``, :meth:`peek`, :meth:`score` | O(1), O(log n) |
    | :meth:`keys` | O(1) for the view, O(log n) per lookup |
    | :meth:`top`, :meth:`top_scored`, the first k of ``iter(mem)`` | indexed O(k log n); else O(n + k log n) |
    | :meth:`above`, :meth:`active`, :meth:`active_count` | indexed O(log n + m) for m found; else O(n + m log m) |
    | :meth:`scored`, :meth:`score_map`, :meth:`stats`, :meth:`filter` | O(n log n) |
    | :meth:`pinned_count` | O(n) |
    | :meth:`time_until` | O(1) with a closed form, else a bisection of O(log horizon) scores |
    | :meth:`next_eviction` | indexed O(log n); else O(n) |

    | Writes (each returns a new memory) | Cost |
    | --- | --- |
    | :meth:`put` | O(log n); a new key at capacity: indexed O(log n), else O(n) |
    | :meth:`put_many` | O(m log n) for m pairs, O(n + m log m) in bulk |
    | :meth:`get`, :meth:`touch`, :meth:`update`, :meth:`pin`, :meth:`unpin`, :meth:`delete` | O(log n) |
    | :meth:`summarize`, :meth:`evict` | indexed O(log n + m) for m affected; else O(n) |
    | :meth:`consolidate` | O(n log n) plus the grouping |
    | :meth:`clear` | O(1) |
    | :meth:`configure` (``copy.replace``, ``dataclasses.replace``) | O(n log n): the ranking is rebuilt |

    | Saving and loading | Cost |
    | --- | --- |
    | :meth:`to_dict`, :meth:`from_dict`, ``pickle`` | O(n log n) |

    Args:
        max_entries: Capacity (a positive int).  A new key at capacity evicts the
            lowest-scored unpinned entry (summarized first, reported to ``on_evict``).
        decay_fn: A built-in by name — ``"exponential"`` (the default),
            ``"access_weighted"``, ``"actr"`` (alias ``"combined"``),
            ``"power_law"``, ``"soft_floor"``, ``"ebbinghaus_ltp"``,
            ``"stability_exponential"``, ``"adaptive"``, ``"fsrs"`` or
            ``"recency"`` (the names of ``lethe.decay.BUILTINS``), built with
            ``half_life`` (``"fsrs"`` keeps its own time scale) — a
            :class:`~lethe.decay.DecayFunction` object (an instance, not the
            class), or any callable ``(entry, now) -> float``.
        half_life: A ``timedelta`` or seconds (> 0), default one hour; stored as
            seconds.  It is the half-life in use: the time after which a fresh,
            never-rehearsed entry of importance 1 scores 0.5.  A built-in decay
            object has its own: leave ``half_life`` out and the memory reports
            the object's (giving a different one raises ValueError); so does
            ``"fsrs"``, which has its own time scale, and a custom decay function
            that declares a ``half_life`` attribute.  With a custom function that
            declares none it is only the half-life names are built with later
            (see :meth:`configure`).
        eviction_threshold: Entries scoring below it are removed by :meth:`evict`.
        summarize_threshold: Entries scoring below it are summarized (>= ``eviction_threshold``).
        summarize_fn: ``entry -> summary``.  Once a version holds an entry's summary,
            no version made from it runs the hook again for that value; it runs
            again only for an operation that did not complete (the hook, another
            entry's summary or ``on_evict`` raised) or one started over from an
            older version (``docs/sharing.md`` lists the cases).
        on_evict: Called with the tuple of entries each operation evicted.
        clock_fn: ``() -> aware datetime``; default ``datetime.now(timezone.utc)``.

    Hooks and decay functions are plain (not ``async``) callables; one that
    cannot take its arguments is refused when the memory is built.  Change the
    configuration of a memory, keeping its entries, with :meth:`configure`.

    Attributes:
        evicted: The entries the operation that produced this version removed
            (a new key at capacity, ``put_many``, ``evict()``, entries past
            their deadline found by a write), summarized as ``on_evict`` got
            them; ``()`` for most versions.  Not part of equality.  Report
            them once a version is published to report each eviction once,
            however many attempts lost a compare-and-swap (``docs/sharing.md``).

    Raises:
        ValueError, TypeError: a parameter is invalid (the message names it).

    >>> from datetime import datetime, timedelta, timezone
    >>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> mem = Memory(max_entries=2, half_life=timedelta(hours=1), clock_fn=lambda: now)
    >>> mem = mem.put("likes tea", key="tea").put("uses vim", key="vim", importance=2.0)
    >>> [e.key for e in mem], mem.score("tea")
    (['vim', 'tea'], 1.0)
    """

    __slots__ = ()

    max_entries: int = 1000
    decay_fn: str | DecayFunction | DecayCallable = "exponential"
    half_life: timedelta | float = ONE_HOUR
    eviction_threshold: float = 0.05
    summarize_threshold: float = 0.15
    summarize_fn: SummarizeFn | None = None
    on_evict: EvictFn | None = None
    clock_fn: ClockFn | None = None
    # Not configuration: the memory whose entries a new one keeps (dataclasses.replace, configure).
    _source: InitVar[object] = _THIS_MEMORY

    def __post_init__(self, _source: object) -> None:
        fields: dict[str, Any] = self._config  # type: ignore[assignment]  # what __init__ gave, unchecked
        if _source is _THIS_MEMORY:
            snapshot = Snapshot(EMPTY, 0, 0, None, _NEVER)
            config = build(fields)
        elif isinstance(_source, Memory):
            snapshot = _source._snapshot()
            config = build(fields, _source._config, len(snapshot.entries))
            if config.decay_fn != _source._config.decay_fn:
                snapshot = snapshot.without_decay_state()
        else:
            raise TypeError(f"_source must be a Memory, got {type(_source).__name__}")
        self._fill(config, snapshot)

    # -- versions ---------------------------------------------------------

    @property
    def evicted(self) -> tuple[Entry[K, V], ...]:
        """The entries the operation that produced this version removed.

        A new key at capacity, ``put_many``, ``evict()``, entries past their
        deadline found by a write: summarized as ``on_evict`` got them; ``()``
        for most versions.  Not part of equality.  Report them once a version
        is published to report each eviction once, however many attempts lost
        a compare-and-swap (``docs/sharing.md``).
        """
        return self._evicted

    def _fill(self, config: Config, snapshot: Snapshot) -> None:
        """Make this (new) memory hold ``snapshot`` under ``config``: the one rebuild path
        (construction, ``configure``, unpickling, ``from_dict``), re-indexing every entry."""
        entries, next_key, next_seq, latest, latest_us, built = snapshot
        # (a list of as many entries as the map holds, the map made from it: the same entries)
        listed = built if built is not None and len(built) == len(entries) else entries.to_list()
        _set_config(self, config)
        _set_entries(self, entries)
        _set_ranking(self, config.ranking.rebuilt(listed, latest_us if latest_us > _NEVER else math.nan))
        _set_deadlines(self, _expiry.built(listed) if listed else _expiry.NONE)
        _set_evicted(self, ())
        _set_next_key(self, next_key)
        _set_next_seq(self, next_seq)
        _set_latest(self, latest)
        _set_latest_us(self, latest_us)

    @classmethod
    def _restored(cls, config: Config, snapshot: Snapshot) -> Memory[Any, Any]:
        """A memory holding ``snapshot`` under ``config`` (see :meth:`_fill`)."""
        new: Memory[Any, Any] = _new(cls)
        new._fill(config, snapshot)
        return new

    def _snapshot(self) -> Snapshot:
        return Snapshot(self._entries, self._next_key, self._next_seq, self._latest, self._latest_us)

    def _changes(self, new: Memory[K, V], evicted: tuple[Entry[K, V], ...] | None = None) -> Change:
        """What turns this version into ``new`` (a version made from it), with what ``new``
        reported (or ``evicted``, when given)."""
        return between(self._snapshot(), new._snapshot(), new._evicted if evicted is None else evicted)

    def _applied(self, change: Change) -> Memory[K, V]:
        """This version with ``change`` applied: the version it was found from, rebuilt without
        running the decay function or any hook.  O(m log n) for m changed entries.

        Raises:
            KeyError: a removed key this version does not hold (the change is not from it).
        """
        entries = self._entries
        removed = [entries[key] for key in change.removed]
        added: dict[Any, Entry[K, V]] = {}
        for entry in change.written:
            old = entries.get(entry.key)
            if old is not None:  # out, then in: a rehearsal or a pin moves it in the ranking
                removed.append(old)
            added[entry.key] = entry
        edit = self._edit()
        edit.apply(removed, [], added)
        new = self._version(edit, change.latest, change.latest_us, change.next_key, change.next_seq, change.evicted)
        return new

    def _rehooked(self, config: Config, evicted: tuple[Entry[K, V], ...] | None = None) -> Memory[K, V]:
        """This version under ``config``, a copy of its own configuration with other hooks
        (``dataclasses.replace``): the same scorer and ranking, so nothing is rebuilt; it
        reports ``evicted`` (None: what this version reports).  O(1)."""
        new: Memory[K, V] = _new(Memory)
        _set_config(new, config)
        _set_entries(new, self._entries)
        _set_ranking(new, self._ranking)
        _set_deadlines(new, self._deadlines)
        _set_evicted(new, self._evicted if evicted is None else evicted)
        _set_next_key(new, self._next_key)
        _set_next_seq(new, self._next_seq)
        _set_latest(new, self._latest)
        _set_latest_us(new, self._latest_us)
        return new

    def _edit(self) -> Edit[K, V]:
        """An edit of this version's contents: every write makes its changes through one."""
        return Edit(self._entries, self._ranking, self._deadlines)

    def _version(
        self,
        edit: Edit[K, V],
        now: datetime | None = None,
        now_us: float = _NEVER,
        next_key: int | None = None,
        next_seq: int | None = None,
        evicted: tuple[Entry[K, V], ...] = (),
    ) -> Memory[K, V]:
        """A new version sharing this one's configuration, holding what ``edit`` holds;
        ``evicted`` is what the operation removed."""
        new: Memory[K, V] = _new(Memory)
        _set_config(new, self._config)
        _set_entries(new, edit.entries)
        _set_ranking(new, edit.ranking)
        _set_deadlines(new, edit.deadlines)
        _set_evicted(new, evicted)
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
        """Read the clock once, as a UTC datetime; never earlier than the latest moment this memory saw.

        Every datetime the memory stores or returns is UTC: arithmetic on datetimes
        of a zone with daylight saving time is wall-clock arithmetic, an hour off
        across a change, and their comparisons ignore ``fold``.
        """
        clock = self._config.clock_fn
        now = utc_now() if clock is None else clock()
        utc = type(now) is datetime and now.tzinfo is UTC  # what clocks return: nothing to check
        now_us = aware_us(now) if utc else to_us(now, "clock_fn()")
        if now_us < self._latest_us:
            latest = self._latest
            assert latest is not None
            return latest, self._latest_us
        if not utc and now.tzinfo is not UTC:
            now = to_utc(now, "clock_fn()")
        return now, now_us

    # -- reads ------------------------------------------------------------

    def __len__(self) -> int:
        """The number of entries (expired ones left out: reading the clock if any has a ``ttl``)."""
        n = len(self._entries)
        if self._deadlines:
            n -= len(_expiry.due(self._deadlines, self._now()[1]))
        return n

    def __contains__(self, key: object) -> bool:
        _hashable(key)
        entry = self._entries.get(key)  # type: ignore[arg-type]  # any hashable may be asked about
        return entry is not None and (entry.expires_us is None or not _expired(entry, self._now()[1]))

    def _expired_seqs(self, now_us: float) -> set[int]:
        """The seqs of the entries expired at ``now_us`` (every read leaves them out)."""
        return {item[1] for item in _expiry.due(self._deadlines, now_us)} if self._deadlines else set()

    def __iter__(self) -> Iterator[Entry[K, V]]:
        """Entries by score, highest first (one clock reading for the whole iteration).

        With an indexed decay function (see :meth:`top`) the iteration is lazy:
        taking its first k entries costs about as much as ``top(k)``.
        """
        now, now_us = self._now()
        return self._ranking.ranked(self._entries, self._config.scorer, now, now_us)

    def keys(self) -> KeysView[K]:
        """A set-like view of the keys at this moment (membership in O(log n); order unspecified).

        Entries past their deadline are left out, as of the moment ``keys()`` is called.

        >>> sorted(Memory().put("a", key="x").put("b", key="y").keys())
        ['x', 'y']
        """
        gone = self._expired_seqs(self._now()[1]) if self._deadlines else set()
        return KeysView(_EntryMapping(self._entries, gone))

    def peek(self, key: K) -> Entry[K, V]:
        """The entry at ``key``, without rehearsing it.

        Raises:
            KeyError: ``key`` is not in the memory (or has passed its deadline).
        """
        try:
            entry = self._entries.get(key)
        except TypeError:
            _hashable(key)  # an unhashable key: say so by name (else the key's own error stands)
            raise
        if entry is None:
            raise KeyError(key)
        return entry if entry.expires_us is None else self._live(key, self._now()[1])

    def _live(self, key: K, now_us: float) -> Entry[K, V]:
        """The entry at ``key`` at ``now_us``, the one clock reading of the calling operation."""
        try:
            entry = self._entries.get(key)
        except TypeError:
            _hashable(key)
            raise
        if entry is None or (entry.expires_us is not None and _expired(entry, now_us)):
            raise KeyError(key)
        return entry

    def score(self, key: K) -> float:
        """The current score of the entry at ``key`` (KeyError if missing)."""
        now, now_us = self._now()
        return self._config.scorer.one(self._live(key, now_us), now, now_us)

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
        with paused():  # n pairs, all of them returned: nothing for the collector to find
            return list(zip(entries, scores))

    def score_map(self) -> dict[K, float]:
        """``{key: score}`` for every entry, in score order."""
        now, now_us = self._now()
        entries, scores = self._ranked(now, now_us)
        return {e.key: s for e, s in zip(entries, scores)}

    def above(self, threshold: float) -> list[Entry[K, V]]:
        """Entries scoring at least ``threshold``, highest first (expired entries left out).

        Raises:
            ValueError, TypeError: ``threshold`` is not a number between 0 and 1.

        Runtime complexity: O(log n + m) for m results with an indexed decay
        function (see :meth:`top`): only entries that can reach ``threshold``
        are scored, and they arrive nearly sorted; otherwise O(n + m log m).
        """
        t = unit(threshold, "threshold", expected=_SCORE_RANGE)
        now, now_us = self._now()
        # Indexed: only the entries whose key can reach the threshold, already nearly in rank order.
        pinned, rest = self._ranking.at_least(self._entries, t, now_us)
        rest = [e for e in rest if not _expired(e, now_us)]
        values = self._config.scorer.many(rest, now, now_us)
        kept = [i for i, v in enumerate(values) if clamp(v) >= t]
        ranked, _ = rank(pinned, [rest[i] for i in kept], [values[i] for i in kept])
        return ranked

    def active(self) -> list[Entry[K, V]]:
        """Entries scoring at least ``eviction_threshold``, highest first."""
        return self.above(self._config.eviction_threshold)

    def top(self, n: int) -> list[Entry[K, V]]:
        """The ``n`` highest-scored entries, highest first (expired entries left out).

        Runtime complexity: O(n log n_entries) when the decay function declares
        one ``decay_rate`` for every entry (``Exponential``), O((n + G) log
        n_entries) when it declares G rank groups (:class:`~lethe.decay.Grouped`):
        the memory keeps an index on the ranking, which such a function never
        changes.  Otherwise (ACT-R, custom callables) O(n_entries + n log
        n_entries): every entry is scored, without a full sort.

        Raises:
            ValueError, TypeError: ``n`` is not an int >= 0.
        """
        now, now_us = self._now()
        return self._top(n, now, now_us)

    def top_scored(self, n: int) -> list[tuple[Entry[K, V], float]]:
        """The ``n`` highest-scored entries with their scores, highest first: what a prompt needs.

        The same entries, in the same order, as :meth:`top` at the same moment,
        each with the score :meth:`score` gives it; at the cost of ``top(n)``
        plus ``n`` scores (one clock reading for the whole answer).

        Raises:
            ValueError, TypeError: ``n`` is not an int >= 0.

        >>> from datetime import datetime, timezone
        >>> mem = Memory(clock_fn=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
        >>> mem = mem.put("likes tea", key="tea", importance=0.5).put("uses vim", key="vim")
        >>> [(e.key, s) for e, s in mem.top_scored(2)] == [("vim", 1.0), ("tea", 0.5)]
        True
        """
        now, now_us = self._now()
        one = self._config.scorer.one
        return [(e, one(e, now, now_us)) for e in self._top(n, now, now_us)]

    def _top(self, n: int, now: datetime, now_us: float) -> list[Entry[K, V]]:
        integer(n, "n", low=0)
        return self._ranking.top(self._entries, self._config.scorer, n, now, now_us, bool(self._deadlines))

    def filter(self, predicate: Callable[[Entry[K, V]], object]) -> list[Entry[K, V]]:
        """Entries for which ``predicate(entry)`` is true, highest score first."""
        hook(predicate, "predicate", optional=False)
        return [e for e in self if predicate(e)]

    def active_count(self) -> int:
        """How many entries score at least ``eviction_threshold``."""
        return len(self.active())

    def pinned_count(self) -> int:
        """How many entries are pinned."""
        return sum(1 for e in self._entries.values() if e.pinned)

    def stats(self) -> Stats:
        """Size, active and pinned counts, insertion range (UTC datetimes) and score statistics."""
        now, now_us = self._now()
        entries, scores = self._ranked(now, now_us)
        if not entries:
            return Stats(0, 0, 0, None, None, None, None)
        threshold = self._config.eviction_threshold
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

    def _ranked(self, now: datetime, now_us: float) -> tuple[list[Entry[K, V]], list[float]]:
        """Every entry not expired at ``now_us``, in rank order, and their scores."""
        # Indexed: already nearly in rank order, which the sort takes in near-linear time.
        pinned, entries = self._ranking.at_least(self._entries, 0.0, now_us)
        gone = self._expired_seqs(now_us)
        if gone:
            entries = [e for e in entries if e.seq not in gone]
        return rank(pinned, entries, self._config.scorer.many(entries, now, now_us))

    # -- writes -----------------------------------------------------------

    # Without a key an int key is generated: only a memory whose keys may be ints takes none.
    # (The overloads repeat put's signature on purpose: mypy needs each one whole.)
    @overload
    def put(
        self: Memory[int, V],
        value: V,
        *,
        key: None = ...,
        importance: float = ...,
        pinned: bool = ...,
        metadata: Mapping[str, Any] | None = ...,
        ttl: timedelta | float | None = ...,
        expires_at: datetime | None = ...,
    ) -> Memory[int, V]: ...

    @overload
    def put(
        self: Memory[int | str, V],
        value: V,
        *,
        key: None = ...,
        importance: float = ...,
        pinned: bool = ...,
        metadata: Mapping[str, Any] | None = ...,
        ttl: timedelta | float | None = ...,
        expires_at: datetime | None = ...,
    ) -> Memory[int | str, V]: ...

    # Without a key, an int key is generated: only a memory whose keys may be ints takes one.
    @overload
    def put(
        self: Memory[Hashable, V],
        value: V,
        *,
        key: None = ...,
        importance: float = ...,
        pinned: bool = ...,
        metadata: Mapping[str, Any] | None = ...,
        ttl: timedelta | float | None = ...,
        expires_at: datetime | None = ...,
    ) -> Memory[Hashable, V]: ...

    @overload
    def put(
        self,
        value: V,
        *,
        key: K,
        importance: float = ...,
        pinned: bool = ...,
        metadata: Mapping[str, Any] | None = ...,
        ttl: timedelta | float | None = ...,
        expires_at: datetime | None = ...,
    ) -> Memory[K, V]: ...

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
    ) -> Memory[Any, V]:
        """Store ``value``; return the new memory.

        Without ``key``, an int key is generated, larger than every key
        generated before and never one already present.  An existing key is
        replaced (fresh timestamps, ``access_count`` 0) and nothing is evicted.
        A new key at capacity first evicts the lowest-scored unpinned entry,
        summarized first when ``summarize_fn`` is set, then passed to ``on_evict``.

        ``ttl`` (a ``timedelta`` or seconds from now) or ``expires_at`` (an aware
        datetime) give the entry a deadline: from then on it is gone for every
        read (``in``, ``peek``, ``get``, ``score``, iteration, ``len``, ...),
        and the next write that changes the memory (not ``delete``, ``clear``
        or ``configure``, which report nothing) removes it, summarized, and
        reports it in :attr:`evicted` and to ``on_evict``.  A pinned entry cannot be
        put with a deadline; pinning one later suspends its deadline until it
        is unpinned.

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
        return self._published(self._put_at(key, value, now, now_us, pinned, imp, meta, expires_at, deadline_us))

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
        generated; a repeated key is replaced by its later value), except that
        ``on_evict`` is told once, of every entry the whole batch evicted, and
        only if the whole batch succeeds (see :attr:`evicted`).  Below capacity
        it is built in bulk, several times faster than the chain.

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
            MemoryFullError, SummarizeError: as for :meth:`put`; nothing changed
                and no hook told of anything.
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
        if not pairs:  # as no put at all: the memory has not seen this clock reading
            return self._unchanged()
        now, now_us = self._now()
        expires, deadline_us = _deadline(now_us, ttl_us, expires_at, deadline_us)
        edit, gone = self._unexpired(now_us)
        entries = edit.entries
        fresh: dict[Any, Entry[K, V]] = {}
        next_key, seq = self._next_key, self._next_seq
        stamp, options = (now, now_us), (pinned, imp, meta, expires, deadline_us)
        with paused():  # new entries, all of them kept: nothing for the collector to find
            for key, value in pairs:
                if key is None:
                    while next_key in entries or next_key in fresh:
                        next_key += 1
                    key = next_key
                    next_key += 1
                # A repeated key: the later put replaces it (with the later seq).
                fresh[key] = new_entry(key, value, seq, stamp, options)
                seq += 1
        replaced = [e for e in map(entries.get, fresh) if e is not None]
        # Equal keys of different types (1 and True) keep the later one: the chain does that.
        mixed = any(type(k) is not type(e.key) for k, e in fresh.items()) or any(
            type(old.key) is not type(fresh[old.key].key) for old in replaced
        )
        if mixed or len(entries) + len(fresh) - len(replaced) > self._config.max_entries:
            # Puts will evict: replay the chain exactly, at this one clock reading, hooks held back,
            # from the memory without its expired entries (summarized once, already).
            mem = self._version(edit)
            evicted: list[Entry[K, V]] = list(gone)
            for key, value in pairs:
                mem = mem._put_at(key, value, now, now_us, pinned, imp, meta, expires, deadline_us)
                evicted += mem.evicted
            _set_evicted(mem, tuple(evicted))  # mem is this call's own, not yet seen by anyone
            return self._published(mem)
        edit.apply(replaced, [], fresh)  # a replaced key gets a new seq: out, then in
        return self._published(self._version(edit, now, now_us, next_key, seq, gone))

    def _unexpired(self, now_us: float) -> tuple[Edit[K, V], tuple[Entry[K, V], ...]]:
        """An edit of this version without the entries expired at ``now_us``, and those entries,
        summarized: what a write removes (and reports) before anything else."""
        edit = self._edit()
        due = _expiry.due(self._deadlines, now_us) if self._deadlines else None  # most memories have no ttl
        if not due:
            return edit, ()
        gone = []
        for _, _, key in due:
            entry = edit.entries[key]
            edit.remove(entry)
            gone.append(self._summarized(entry))
        return edit, tuple(gone)

    def _unchanged(self) -> Memory[K, V]:
        """What an operation that changes nothing returns: this memory, reporting no eviction.

        ``self`` itself unless it reports what the operation that made it removed
        (a version must never report another operation's evictions again).
        """
        return self if not self._evicted else self._version(self._edit())

    def _published(self, new: Memory[K, V]) -> Memory[K, V]:
        """``new``, once ``on_evict`` has been told what the operation that made it evicted.

        Hooks hear only of what a returned version really removed: the
        operation is complete when this runs, and nothing after it can fail.
        """
        evicted = new.evicted
        if evicted and self._config.on_evict is not None:
            _no_awaitable(self._config.on_evict(evicted), "on_evict")
        return new

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
        """One put, with its options checked and the clock read; ``on_evict`` not yet told."""
        edit, gone = self._unexpired(now_us)
        entries = edit.entries
        next_key = self._next_key
        if key is None:
            while next_key in entries:
                next_key += 1
            key = next_key
            next_key += 1
        seq = self._next_seq
        entry = new_entry(key, value, seq, (now, now_us), (pinned, imp, meta, expires, deadline_us))
        old = entries.get(key)
        if old is not None:
            edit.replace(old, entry)
        else:
            if len(entries) >= self._config.max_entries:
                victim = self._victim(edit, now, now_us)
                edit.remove(victim)
                gone = (*gone, self._summarized(victim))
            edit.add(entry)
        return self._version(edit, now, now_us, next_key, seq + 1, gone)

    def _victim(self, edit: Edit[K, V], now: datetime, now_us: float) -> Entry[K, V]:
        """The lowest-scored unpinned entry, which a new key at capacity evicts."""
        victim = edit.ranking.lowest(edit.entries, self._config.scorer, now, now_us)
        if victim is None:
            raise MemoryFullError(
                f"memory is full ({self._config.max_entries} entries) and every entry is pinned; "
                "unpin or delete one first"
            )
        return victim

    def _summarized(self, entry: Entry[K, V]) -> Entry[K, V]:
        fn = self._config.summarize_fn
        if fn is None or entry.summarized:
            return entry
        try:
            summary = fn(entry)
        except Exception as exc:
            # Short, whatever the cause says (a hook that re-enters the memory nests these):
            # the whole story is in the cause chain.
            raise SummarizeError(
                f"summarize_fn failed for key {short_repr(entry.key)}: {short_repr(exc, 160)}",
                key=entry.key,
                entry=entry,
            ) from exc
        _no_awaitable(summary, "summarize_fn")
        return evolve(entry, summary=summary, summarized=True)

    def _rehearse(self, key: K, **changes: Any) -> tuple[Memory[K, V], Entry[K, V]]:
        now, now_us = self._now()
        entry = self._live(key, now_us)
        hook = self._config.scorer.rehearse
        state = entry.decay_state if hook is None else hook(entry, now, now_us)
        new = rehearsed(entry, now, now_us, state)
        if changes:
            new = evolve(new, **changes)
        edit, gone = self._unexpired(now_us)
        edit.replace(entry, new)
        return self._published(self._version(edit, now, now_us, evicted=gone)), new

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
        """Rehearse the entry at ``key`` with a new value; its summary starts over, unless
        the value is the one it had (the same object, or equal and of the same type), whose
        summary still holds: ``summarize_fn`` runs at most once per entry and value.

        Raises:
            KeyError: ``key`` is not in the memory.
        """
        try:
            old = self._entries.get(key)
        except TypeError:
            old = None  # an unhashable key: _rehearse raises the error that names it
        if old is not None and _same_value(old.value, value):
            return self._rehearse(key, value=value)[0]
        return self._rehearse(key, value=value, summary=None, summarized=False)[0]

    def _set_pinned(self, key: K, pinned: bool) -> Memory[K, V]:
        now, now_us = self._now()
        entry = self._live(key, now_us)
        if entry.pinned is pinned:
            return self._unchanged()
        new = evolve(entry, pinned=pinned)
        edit, gone = self._unexpired(now_us)
        edit.replace(entry, new)
        return self._published(self._version(edit, now, now_us, evicted=gone))

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
        """Remove the entry at ``key`` (past its deadline or not); a missing key returns an equal memory.

        The only write that runs no hook and removes nothing else: a deleted
        entry is the caller's own choice, not reported, and other entries past
        their deadline wait for the next write.  So it is also the way on when
        an entry's summary keeps failing (see :class:`~lethe.SummarizeError`).
        """
        _hashable(key)
        entry = self._entries.get(key)
        if entry is None:
            return self._unchanged()
        edit = self._edit()
        edit.remove(entry)
        return self._version(edit)

    def clear(self) -> Memory[K, V]:
        """Remove every entry; configuration and key generation carry on.  Nothing is reported."""
        return self._version(Edit(EMPTY, self._config.ranking, _expiry.NONE))

    def summarize(self) -> Memory[K, V]:
        """Summarize every unpinned entry scoring below ``summarize_threshold``.

        Runs ``summarize_fn`` once for each such entry that has no summary for
        its current value.  Does nothing without a ``summarize_fn`` (but, as
        every write, removes and reports the entries past their deadline).

        Raises:
            SummarizeError: ``summarize_fn`` raised (nothing changed).
        """
        now, now_us = self._now()
        edit, gone = self._unexpired(now_us)
        changed = bool(gone)
        if self._config.summarize_fn is not None:
            limit = self._config.summarize_threshold
            below = edit.ranking.below(edit.entries, self._config.scorer, limit, now, now_us)
            candidates = [e for e in below if not e.summarized]
            values = self._config.scorer.many(candidates, now, now_us)
            for entry, v in sorted(zip(candidates, values), key=lambda p: p[0].seq):
                if clamp(v) < limit:
                    edit.replace(entry, self._summarized(entry))
                    changed = True
        if not changed:
            return self._unchanged()
        return self._published(self._version(edit, now, now_us, evicted=gone))

    def evict(self) -> tuple[Memory[K, V], tuple[Entry[K, V], ...]]:
        """Summarize what is fading and remove what has faded.

        Unpinned entries scoring below ``summarize_threshold`` are summarized;
        those below ``eviction_threshold``, and those past their deadline, are
        then removed, returned (highest score first) and passed to
        ``on_evict`` in one call.

        Returns:
            ``(new_memory, evicted_entries)``; ``new_memory.evicted`` is
            ``evicted_entries`` too.

        Raises:
            SummarizeError: ``summarize_fn`` raised (nothing changed).
        """
        now, now_us = self._now()
        entries = self._entries
        summarize_below = self._config.summarize_threshold if self._config.summarize_fn is not None else -1.0
        evict_below = self._config.eviction_threshold
        candidates = self._ranking.below(entries, self._config.scorer, max(summarize_below, evict_below), now, now_us)
        due = _expiry.due(self._deadlines, now_us) if self._deadlines else None
        if due:  # past their deadline, whatever their score
            seen = {e.seq for e in candidates}
            candidates += [entries[key] for _, seq, key in due if seq not in seen]
        values = self._config.scorer.many(candidates, now, now_us)
        evicted: list[Entry[K, V]] = []  # as held: what the edit removes
        reported: list[Entry[K, V]] = []  # as summarized: what on_evict hears of
        summarized: list[tuple[Entry[K, V], Entry[K, V]]] = []
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
                evicted.append(old)
                reported.append(entry)
            elif entry is not old:
                summarized.append((old, entry))
        if not evicted and not summarized:
            return self._unchanged(), ()
        edit = self._edit()
        edit.apply(evicted, summarized, {})
        reported.reverse()
        out = tuple(reported)
        return self._published(self._version(edit, now, now_us, evicted=out)), out

    # -- forecasts --------------------------------------------------------

    def time_until(self, key: K, threshold: float) -> timedelta | None:
        """How long until the entry's score drops below ``threshold`` without a rehearsal.

        The answer is the first microsecond at which the score is strictly below
        ``threshold``, so an operation scheduled for then sees it below.

        Exact where the decay function has a closed form (``Exponential``,
        ``AccessWeighted`` and others with ``time_until``), otherwise found by
        bisection to the microsecond (scores never rise without a rehearsal).
        A deadline (``ttl``) counts: the score drops to 0.0 then.

        Returns:
            ``timedelta(0)`` if it is already below; None if the entry is pinned, never
            drops below, or drops below only after ``datetime.max`` (not within
            representable time).

        Raises:
            KeyError: ``key`` is not in the memory.
            ValueError, TypeError: ``threshold`` is not a number between 0 and 1.

        >>> from datetime import datetime, timezone
        >>> mem = Memory(half_life=3600, clock_fn=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
        >>> mem.put("v", key="k").time_until("k", 0.25)  # 0.25 after 2 h; below it 1 µs later
        datetime.timedelta(seconds=7200, microseconds=1)
        """
        t = unit(threshold, "threshold", expected=_SCORE_RANGE)
        now, now_us = self._now()
        entry = self._live(key, now_us)
        # At threshold 0 nothing ever drops below, deadline or not.
        return _forecast.time_until(self._config.scorer, entry, t, now, now_us)

    def next_eviction(self) -> datetime | None:
        """The earliest moment an unpinned entry falls below ``eviction_threshold`` (or expires).

        Schedule the next :meth:`evict` sweep for then instead of polling.
        It is the current time if some entry is already evictable, and None if
        no entry ever will be (every entry pinned, or the memory empty) or none
        will be before ``datetime.max`` (not within representable time).  The
        moment is a UTC datetime.

        Runtime complexity: O(log n) with an indexed decay function (see
        :meth:`top`), otherwise O(n).
        """
        now, now_us = self._now()
        threshold = self._config.eviction_threshold
        soonest = self._ranking.soonest(self._entries)
        deadline = self._deadlines.first()
        if deadline is not None:  # the first deadline, whatever its entry's score
            soonest.append(self._entries[deadline[2]])
        return _forecast.next_eviction(self._config.scorer, soonest, threshold, now, now_us)

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
        keys are listed in ``metadata["consolidated_from"]`` (a tuple key as a list, as
        ``to_dict`` writes it).  A ``merge``
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
        t = unit(threshold, "threshold")
        integer(min_group, "min_group", low=2)
        hook(similarity, "similarity", optional=False)
        hook(merge, "merge")
        now, now_us = self._now()
        ranked, _scores = self._ranked(now, now_us)
        candidates = [e for e in ranked if not e.pinned]
        groups = [tuple(candidates[i] for i in sorted(g)) for g in find_groups(candidates, similarity, t, min_group)]
        edit, gone = self._unexpired(now_us)
        if not groups and not gone:
            return self._unchanged(), []
        merge_states = self._config.scorer.merge_states
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
                edit.remove(e)
            edit.add(merged)
            # Time never runs behind an entry the memory holds.
            if merged.accessed_us > now_us:
                now, now_us = merged.last_accessed_at, merged.accessed_us
        groups.sort(key=lambda g: g[0].seq)
        return self._published(self._version(edit, now, now_us, evicted=gone)), groups

    # -- protocol ---------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Memory):
            return NotImplemented
        if self._config != other._config or len(self._entries) != len(other._entries):
            return False
        if (self._next_key, self._next_seq) != (other._next_key, other._next_seq):
            return False
        if self._latest_us != other._latest_us:  # time never runs back below it: it changes scores
            return False
        theirs = other._entries
        return all(theirs.get(e.key) == e for e in self._entries.values())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Memory(size={len(self)}, max_entries={self._config.max_entries}, decay_fn={self._config.decay_fn!r})"

    def configure(self, **changes: Any) -> Memory[K, V]:
        """A memory with the same entries under a changed configuration.

        ``changes`` are any of the constructor's fields (``max_entries``,
        ``decay_fn``, ``half_life``, the thresholds and the hooks), validated as
        the constructor does; the others stay as they are.  The new memory keeps
        every entry, key generation, put order and the latest moment the clock
        showed; scores and the index follow the new configuration.
        ``copy.replace(mem, **changes)`` (Python 3.13+) and
        ``dataclasses.replace(mem, **changes)`` do the same.

        * A decay function the memory built by name follows a new ``half_life``
          (``"exponential"`` with ``half_life=7200`` becomes
          ``Exponential(half_life=7200)``); one with a half-life of its own
          refuses a different ``half_life``, unless a new ``decay_fn`` is given too.
          One passed as an object (``ACTR(half_life=600)``) keeps its own, even
          when it equals what its name gives.  A document does not record how the
          function was given, so after :meth:`from_dict` a built-in counts as built
          by name when its name, built with the saved ``half_life``, gives an equal one.
        * A new decay function resets every entry's ``decay_state`` (ACT-R's
          access times, FSRS's stability and difficulty): the access count and
          the last access carry over, and the new function starts from them.

        Runtime complexity: O(n log n) to rebuild the ranking (and reset states).

        Raises:
            TypeError: an unknown field (named), or a bad hook.
            ValueError: a bad value; ``max_entries`` below the number of entries
                held, expired ones included until a write removes them (evicting
                here would run the hooks behind your back: :meth:`evict` or
                :meth:`delete` first).

        >>> from datetime import datetime, timezone
        >>> mem = Memory(clock_fn=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc)).put("v", key="k")
        >>> moved = mem.configure(half_life=7200, max_entries=10)
        >>> moved.decay_fn, len(moved), moved.peek("k") == mem.peek("k")
        (Exponential(half_life=7200.0), 1, True)
        """
        unknown = set(changes) - set(FIELDS)
        if unknown:
            raise TypeError(f"unknown configuration field(s): {sorted(unknown)}")
        return Memory(**{**self._config.fields(), **changes}, _source=self)

    def __replace__(self, **changes: Any) -> Memory[K, V]:
        """``copy.replace(mem, **changes)``: :meth:`configure`."""
        return self.configure(**changes)

    def __reduce__(self) -> tuple[Any, ...]:
        # Entries as a list in put order: a map's layout depends on this process's str hashes.
        entries = sorted(self._entries.values(), key=_SEQ)
        state = (entries, self._next_key, self._next_seq, self._latest, self._latest_us)
        # A decay function built by name travels as its name, so the copy still follows a new half-life.
        return (_unpickle, (self._config.rebuild_fields(), state))

    # -- serialization ----------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The memory as JSON types: configuration, entries and the latest clock reading (see :meth:`from_dict`).

        Keys keep their type through JSON: str, int, bool and finite floats are
        written as they are, a tuple (of those, None and tuples) as a list.

        Runtime complexity: O(n) for n entries.

        Raises:
            ValueError: a key of another type (or a NaN or infinite float, or an
                int of more than ``sys.get_int_max_str_digits()`` digits), which
                could not be read back as itself; the message shows the key.

        >>> from datetime import datetime, timezone
        >>> mem = Memory(clock_fn=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc)).put("v", key=("a", 1))
        >>> data = mem.to_dict()
        >>> entry = data["entries"].pop()
        >>> entry["key"], data["latest"]
        (['a', 1], '2026-01-01T00:00:00+00:00')
        """
        with paused():  # n new objects, all of them returned: nothing for the collector to find
            return memory_to_dict(self._config, self._snapshot())

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        decay_fn: str | DecayFunction | DecayCallable | None = None,
        summarize_fn: SummarizeFn | None = None,
        on_evict: EvictFn | None = None,
        clock_fn: ClockFn | None = None,
        shift_to: datetime | None = None,
    ) -> Memory[Any, Any]:
        """Rebuild a memory from :meth:`to_dict` output.

        Hooks are not serialized: pass them again.  A memory saved with a custom
        decay function needs ``decay_fn``; one given here overrides the saved one.
        Each entry's ``decay_state`` is handed only to the function that wrote
        it: when ``decay_fn`` differs from the saved one (a different built-in
        or different parameters; a custom function counts as the same only as
        another custom one), every ``decay_state`` is reset to None, while
        ``access_count`` and ``last_accessed_at`` survive.  Nothing named in
        ``data`` is imported, evaluated or called.

        The memory keeps the latest clock reading it was saved with: it never
        scores at an earlier time.  If that reading is ahead of ``clock_fn()``,
        a :class:`~lethe.ClockWarning` says by how much.  ``shift_to`` (an aware
        datetime) moves every instant of the document (access and insertion
        times, deadlines, ACT-R access histories, the latest reading) by the
        one delta that brings the latest reading to ``shift_to``.

        A document must hold exactly the fields :meth:`to_dict` writes, at
        every level (a version-1 document, written before the latest reading
        was kept, all of them but ``latest``).

        Runtime complexity: O(n log n) for n entries.

        Raises:
            ValueError, TypeError: ``data`` is malformed (the message names the
                field, e.g. ``entries[3].pinned: missing``), or ``shift_to`` is
                not an aware datetime or moves an instant out of range.

        >>> from datetime import datetime, timezone
        >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> data = Memory(clock_fn=lambda: t).put("v", key="k").to_dict()
        >>> later = datetime(2026, 6, 1, tzinfo=timezone.utc)
        >>> Memory.from_dict(data, clock_fn=lambda: later, shift_to=later).peek("k").inserted_at == later
        True
        """
        with paused():  # n new entries and the structures holding them, all kept
            config, snapshot = memory_from_dict(
                data,
                decay_fn=decay_fn,
                summarize_fn=summarize_fn,
                on_evict=on_evict,
                clock_fn=clock_fn,
                shift_to=shift_to,
            )
            return cls._restored(config, snapshot)


def _same_value(a: object, b: object) -> bool:
    """Whether ``b`` is ``a``, or equal to it and of its type (a comparison that fails is no)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # an == that raises, or returns what cannot be a bool (an array)
        return False


def _unpickle(config: dict[str, Any], state: tuple[Any, ...]) -> Memory[Any, Any]:
    entries, next_key, next_seq, latest, latest_us = state
    with paused():
        built = list(entries)
        snapshot = Snapshot(EMPTY.update({e.key: e for e in built}), next_key, next_seq, latest, latest_us, built)
        return Memory._restored(build(config), snapshot)


def _put_options(
    importance: object, pinned: object, metadata: Any, ttl: object, expires_at: datetime | None
) -> tuple[float, Any, float | None, float | None]:
    """Check :meth:`Memory.put`'s options: ``(importance, metadata, ttl_us, deadline_us)``."""
    imp = check_importance(importance)
    flag(pinned, "pinned")
    meta = freeze_metadata(metadata)
    if ttl is not None and expires_at is not None:
        raise ValueError("pass ttl or expires_at, not both")
    if pinned and (ttl is not None or expires_at is not None):
        raise ValueError("ttl/expires_at: a pinned entry cannot expire; pin it after putting it instead")
    ttl_us = None if ttl is None else duration(ttl, "ttl") * 1e6
    deadline_us = None if expires_at is None else to_us(expires_at, "expires_at")
    return imp, meta, ttl_us, deadline_us


def _deadline(
    now_us: float, ttl_us: float | None, expires_at: datetime | None, deadline_us: float | None
) -> tuple[datetime | None, float | None]:
    """An entry's ``(expires_at, expires_us)`` put at ``now_us``: a ``ttl`` counts from now.

    The deadline is a UTC datetime after now and no later than ``datetime.max``
    (ValueError naming ``ttl`` or ``expires_at`` otherwise: the entry would be
    born expired, or never get a representable deadline).
    """
    if ttl_us is None:
        if expires_at is None or deadline_us is None:
            return None, None
        if not deadline_us > now_us:
            raise ValueError(
                f"expires_at must be after now ({from_us(now_us).isoformat()}), got "
                f"{short_repr(expires_at)}; the entry would be born expired"
            )
        return to_utc(expires_at, "expires_at"), deadline_us
    if not ttl_us <= MAX_US - now_us:
        raise ValueError(f"ttl ({ttl_us / 1e6:.6g} s) puts the deadline past datetime.max")
    deadline_us = now_us + float(round(ttl_us))
    if not deadline_us > now_us:
        raise ValueError(
            f"ttl must be at least a microsecond, got {ttl_us / 1e6:.6g} s; the entry would be born expired"
        )
    if not deadline_us <= MAX_US:
        raise ValueError(f"ttl ({ttl_us / 1e6:.6g} s) puts the deadline past datetime.max")
    return from_us(deadline_us), deadline_us


def _no_awaitable(result: object, hook: str) -> None:
    """Refuse what an ``async def`` hook returns: lethe calls hooks synchronously."""
    if closed_if_awaitable(result):
        raise TypeError(
            f"{hook} returned an awaitable ({type(result).__name__}); hooks are called synchronously: "
            "pass a plain function (run async work yourself, e.g. in a thread or before the call)"
        )


def _as_utc(moment: datetime) -> datetime:
    """``moment`` as UTC (unchanged if UTC has no datetime for it)."""
    try:
        return moment if moment.tzinfo is UTC else moment.astimezone(UTC)
    except OverflowError:
        return moment


class _EntryMapping(Mapping[Any, Entry[Any, Any]]):
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


# The configuration fields are read from the version's one Config: each becomes a descriptor
# once the dataclass has taken its default (so the signature and the docs show plain values).
for _name in FIELDS:
    setattr(Memory, _name, _Setting(_name, getattr(Memory, _name)))

# Building versions on the hot path, as _entry builds entries (the same pattern on purpose):
# object.__new__ plus the slots' own setters, without __init__ or __post_init__.
_new = object.__new__
_d = _Version.__dict__
_set_config = _d["_config"].__set__
_set_entries = _d["_entries"].__set__
_set_next_key = _d["_next_key"].__set__
_set_next_seq = _d["_next_seq"].__set__
_set_latest = _d["_latest"].__set__
_set_latest_us = _d["_latest_us"].__set__
_set_ranking = _d["_ranking"].__set__
_set_deadlines = _d["_deadlines"].__set__
_set_evicted = _d["_evicted"].__set__
del _d
