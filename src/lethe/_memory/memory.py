"""``Memory``: an immutable, bounded map of entries whose relevance decays."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, KeysView, Mapping, Sequence
from dataclasses import FrozenInstanceError, InitVar, dataclass
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Any, TypeVar, overload

from lethe._core.entry import Entry
from lethe._core.gc import paused
from lethe._core.map import EMPTY
from lethe._core.snapshot import Snapshot
from lethe._core.validate import integer, unit
from lethe._memory import reads as _reads
from lethe._memory import searching as _search
from lethe._memory import writes as _writes
from lethe._memory.config import FIELDS, ONE_HOUR, build
from lethe._memory.consolidate import jaccard_words
from lethe._memory.document import memory_from_dict, memory_to_dict
from lethe._memory.reads import Stats, clock
from lethe._memory.version import Version, fill, restored, snapshot_of
from lethe.decay._protocol import DecayCallable, DecayFunction

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

SummarizeFn = Callable[[Entry[Any, Any]], Any]
EvictFn = Callable[[tuple[Entry[Any, Any], ...]], object]
ClockFn = Callable[[], datetime]
EmbedFn = Callable[[list[str]], Sequence[Sequence[float]]]

_SEQ = attrgetter("seq")
_SCORE_RANGE = "between 0 and 1 (scores never leave that range)"


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


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Memory(Version[K, V]):
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
        embed_fn: ``texts -> vectors``, one vector per text (a batch, as embedding APIs
            take them): what gives a put a ``vector`` when it has a text and no vector, and
            a text query its vector (:meth:`search`).  Never stored.

    Hooks and decay functions are plain (not ``async``) callables; one that
    cannot take its arguments is refused when the memory is built.  Change the
    configuration of a memory, keeping its entries, with :meth:`configure`.

    Attributes:
        evicted: The entries the write that made this version removed (see :attr:`evicted`).

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
    embed_fn: EmbedFn | None = None
    # Not configuration: the memory whose entries a new one keeps (dataclasses.replace, configure).
    _source: InitVar[object] = _THIS_MEMORY

    def __post_init__(self, _source: object) -> None:
        # self._config holds what __init__ gave, unchecked (a dict: see _Setting).
        fill(self, *_writes.configured(self._config, None if _source is _THIS_MEMORY else _source))  # type: ignore[arg-type]

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

    def __len__(self) -> int:
        """The number of entries (expired ones left out: reading the clock if any has a ``ttl``)."""
        return _reads.size(self)

    def __contains__(self, key: object) -> bool:
        return _reads.holds(self, key)

    def __iter__(self) -> Iterator[Entry[K, V]]:
        """Entries by score, highest first (one clock reading for the whole iteration).

        With an indexed decay function (see :meth:`top`) the iteration is lazy:
        taking its first k entries costs about as much as ``top(k)``.
        """
        return self._ranking.ranked(self._entries, self._config.scorer, *clock(self))

    def keys(self) -> KeysView[K]:
        """A set-like view of the keys at this moment (membership in O(log n); order unspecified).

        Entries past their deadline are left out, as of the moment ``keys()`` is called.

        >>> sorted(Memory().put("a", key="x").put("b", key="y").keys())
        ['x', 'y']
        """
        return KeysView(_reads.Keys(self._entries, _reads.expired_seqs(self, clock(self)[1])))

    def peek(self, key: K) -> Entry[K, V]:
        """The entry at ``key``, without rehearsing it.

        Raises:
            KeyError: ``key`` is not in the memory (or has passed its deadline).
        """
        return _reads.peek(self, key)

    def score(self, key: K) -> float:
        """The current score of the entry at ``key`` (KeyError if missing)."""
        return _reads.score(self, key)

    def scored(self) -> list[tuple[Entry[K, V], float]]:
        """Every entry with its current score, highest score first.

        Equal scores keep a fixed order that never depends on hash randomization:
        pinned entries first (the most recently put first); then entries that
        clamping ties at 1.0 by their value before clamping (``importance *
        raw``: the entry that stays at 1.0 longer first); then the most recently
        put first (so at capacity the oldest of equally scored entries goes first).
        """
        return _reads.scored(self)

    def score_map(self) -> dict[K, float]:
        """``{key: score}`` for every entry, in score order."""
        return {e.key: s for e, s in zip(*_reads.ranked(self, clock(self)))}

    def above(self, threshold: float) -> list[Entry[K, V]]:
        """Entries scoring at least ``threshold``, highest first (expired entries left out).

        Raises:
            ValueError, TypeError: ``threshold`` is not a number between 0 and 1.

        Runtime complexity: O(log n + m) for m results with an indexed decay
        function (see :meth:`top`): only entries that can reach ``threshold``
        are scored, and they arrive nearly sorted; otherwise O(n + m log m).
        """
        return _reads.above(self, unit(threshold, "threshold", expected=_SCORE_RANGE))

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
        return _reads.top(self, integer(n, "n", low=0), clock(self))

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
        return _reads.top_scored(self, integer(n, "n", low=0))

    def search(
        self,
        query: str | Sequence[float],
        k: int = 10,
        *,
        decay_weight: float = 0.25,
        min_relevance: float = 0.0,
        lexical_weight: float | None = None,
        approximate: bool = False,
    ) -> list[tuple[Entry[K, V], float]]:
        """The ``k`` entries most relevant to ``query`` blended with their decay, best first:
        what the memory knows about something.  Observes; changes nothing.

        Each hit's number is ``relevance + decay_weight * score`` (``score`` as :meth:`score`
        gives it); ties go to the entry put first.  Relevance is:

        * for a vector, or a text when ``embed_fn`` is set: the cosine similarity of the
          query's vector and the entry's (entries without one are not candidates);
        * for a text without ``embed_fn``: BM25 over the entries' texts, over the best
          match's (0..1); an entry that shares no term with the query is never a hit;
        * with ``lexical_weight`` (0..1) and a text query: ``lexical_weight * lexical +
          (1 - lexical_weight) * cosine``, a hybrid (1: lexical only, even with ``embed_fn``).

        Entries whose relevance is below ``min_relevance`` are not hits.  The answer is
        exact: that of sorting every live entry by the same number (``docs/search.md``).
        ``approximate=True`` (the ``ann`` extra) takes vector candidates from an HNSW graph
        instead: much faster at a million entries, but **approximate**, an entry the graph
        misses is never a hit (recall measured in ``docs/performance.md``).

        Runtime complexity: the postings of the query's terms for a text, O(n d) for a vector
        (one matrix-vector product with numpy, the ``vector`` extra), plus a score for each
        entry that could still be a hit.

        Raises:
            ValueError, TypeError: ``k`` < 1, a negative or NaN ``decay_weight``, a query
                vector of another dimension, empty, zero or not numbers, a bad
                ``lexical_weight`` (named), or ``embed_fn`` result.
            ImportError: ``approximate=True`` without the ``ann`` extra.

        >>> from datetime import datetime, timezone
        >>> mem = Memory(clock_fn=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
        >>> mem = mem.put("Ada likes green tea", key="tea").put("Ada uses vim", key="vim")
        >>> for entry, number in mem.search("what tea does Ada drink?"):
        ...     print(entry.key, round(number, 2))
        tea 1.25
        vim 0.47
        """
        return _search.search(
            self, _search.query_of(self, query, k, (decay_weight, min_relevance, lexical_weight, approximate))
        )

    def recall(
        self,
        query: str | Sequence[float],
        k: int = 10,
        *,
        decay_weight: float = 0.25,
        min_relevance: float = 0.0,
        lexical_weight: float | None = None,
        approximate: bool = False,
    ) -> tuple[Memory[K, V], list[tuple[Entry[K, V], float]]]:
        """:meth:`search`, with each hit rehearsed as :meth:`get` rehearses it, in one new version
        (what is recalled is strengthened): ``(new_memory, hits)``, each hit the refreshed
        entry with the number that ranked it.  A write: entries past their deadline are
        removed and reported (:attr:`evicted`, ``on_evict``).

        Raises:
            ValueError, TypeError: as :meth:`search`.
        """
        return _search.recall(
            self, _search.query_of(self, query, k, (decay_weight, min_relevance, lexical_weight, approximate))
        )

    def filter(self, predicate: Callable[[Entry[K, V]], object]) -> list[Entry[K, V]]:
        """Entries for which ``predicate(entry)`` is true, highest score first."""
        return _reads.filtered(self, predicate)

    def active_count(self) -> int:
        """How many entries score at least ``eviction_threshold``."""
        return len(self.active())

    def pinned_count(self) -> int:
        """How many entries are pinned."""
        return sum(1 for e in self._entries.values() if e.pinned)

    def stats(self) -> Stats:
        """Size, active and pinned counts, insertion range (UTC datetimes) and score statistics."""
        return _reads.stats(self)

    # Only a memory whose keys may be ints takes no key (one is generated); mypy needs each overload whole.
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
        text: str | None = ...,
        vector: Sequence[float] | None = ...,
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
        text: str | None = ...,
        vector: Sequence[float] | None = ...,
    ) -> Memory[int | str, V]: ...

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
        text: str | None = ...,
        vector: Sequence[float] | None = ...,
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
        text: str | None = ...,
        vector: Sequence[float] | None = ...,
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
        text: str | None = None,
        vector: Sequence[float] | None = None,
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
                ``ttl``, ``expires_at``, ``text`` or ``vector`` (another dimension, NaN,
                all zeros, ...), or ``embed_fn`` result.
            SummarizeError: ``summarize_fn`` raised (nothing changed).
        """
        asked = _writes.asked(importance, pinned, metadata, ttl, expires_at)
        if text is None and vector is None and (self._config.embed_fn is None or not isinstance(value, str)):
            return _writes.put(self, key, value, asked)
        return _writes.put(self, key, value, asked, _search.content(self, [value], [text], [vector])[0])

    def put_many(
        self,
        items: Mapping[K, V] | Iterable[tuple[K | None, V]],
        *,
        importance: float = 1.0,
        pinned: bool = False,
        metadata: Mapping[str, Any] | None = None,
        ttl: timedelta | float | None = None,
        expires_at: datetime | None = None,
        texts: Sequence[str | None] | None = None,
        vectors: Sequence[Sequence[float] | None] | None = None,
    ) -> Memory[K, V]:
        """Store many ``(key, value)`` pairs at once; return the new memory.

        The result is identical to chained :meth:`put` calls made at one clock
        reading, in order, each with the same options (a ``None`` key is
        generated; a repeated key is replaced by its later value), except that
        ``on_evict`` is told once, of every entry the whole batch evicted, and
        only if the whole batch succeeds (see :attr:`evicted`).  Below capacity
        it is built in bulk, several times faster than the chain.

        ``texts`` and ``vectors``, one per pair (None for none), are each entry's
        ``text`` and ``vector`` as :meth:`put` takes them; ``embed_fn`` is called
        once, for every entry that needs a vector.

        Runtime complexity: O(m log n) for m pairs, or O(n + m log m) when m is a
        sizeable fraction of n (the map and the index are rebuilt in bulk).

        >>> from datetime import datetime, timezone
        >>> mem = Memory(clock_fn=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
        >>> mem = mem.put_many({"tea": "likes tea", "vim": "uses vim"}, importance=2.0)
        >>> sorted(mem.keys()), mem.peek("vim").importance
        (['tea', 'vim'], 2.0)

        Raises:
            ValueError, TypeError: an item is not a ``(key, value)`` pair, an
                unhashable key, a bad option (as for :meth:`put`), ``texts`` or
                ``vectors`` not one per pair, or a bad one (``vectors[2]``); nothing changed.
            MemoryFullError, SummarizeError: as for :meth:`put`; nothing changed
                and no hook told of anything.
        """
        asked = _writes.asked(importance, pinned, metadata, ttl, expires_at)
        pairs = _writes.checked_pairs(items)
        if texts is None and vectors is None and self._config.embed_fn is None:
            return _writes.put_many(self, pairs, asked)
        given_texts = _search.per_pair(texts, len(pairs), "texts")
        given_vectors = _search.per_pair(vectors, len(pairs), "vectors")
        contents = _search.content(self, [v for _, v in pairs], given_texts, given_vectors, many=True)
        return _writes.put_many(self, pairs, asked, contents)

    def get(self, key: K) -> tuple[Memory[K, V], Entry[K, V]]:
        """Rehearse and return the entry at ``key``: ``(new_memory, refreshed_entry)``.

        Raises:
            KeyError: ``key`` is not in the memory.
        """
        return _writes.rehearse(self, key, clock(self), {})

    def touch(self, key: K, *, importance: float | None = None) -> Memory[K, V]:
        """Rehearse the entry at ``key``, optionally setting its importance.

        Raises:
            KeyError: ``key`` is not in the memory.
            ValueError, TypeError: a bad ``importance``.
        """
        return _writes.touch(self, key, importance)

    def update(
        self, key: K, value: V, *, text: str | None = None, vector: Sequence[float] | None = None
    ) -> Memory[K, V]:
        """Rehearse the entry at ``key`` with a new value; its summary starts over, unless
        the value is the one it had (the same object, or equal and of the same type), whose
        summary still holds: ``summarize_fn`` runs at most once per entry and value.

        Its ``text`` and ``vector`` become the ones :meth:`put` would store; when neither is
        given and the value is the one it had, it keeps its own.

        Raises:
            KeyError: ``key`` is not in the memory.
            ValueError, TypeError: a bad ``text`` or ``vector``, or ``embed_fn`` result.
        """
        return _writes.update(self, key, value, text, vector)

    def pin(self, key: K) -> Memory[K, V]:
        """Pin the entry at ``key``: it scores 1.0 and is never evicted automatically.

        Raises:
            KeyError: ``key`` is not in the memory.
        """
        return _writes.set_pinned(self, key, True, clock(self))

    def unpin(self, key: K) -> Memory[K, V]:
        """Unpin the entry at ``key``; it decays again from its last access.

        Raises:
            KeyError: ``key`` is not in the memory.
        """
        return _writes.set_pinned(self, key, False, clock(self))

    def delete(self, key: K) -> Memory[K, V]:
        """Remove the entry at ``key`` (past its deadline or not); a missing key returns an equal memory.

        The only write that runs no hook and removes nothing else: a deleted
        entry is the caller's own choice, not reported, and other entries past
        their deadline wait for the next write.  So it is also the way on when
        an entry's summary keeps failing (see :class:`~lethe.SummarizeError`).
        """
        return _writes.delete(self, key)

    def clear(self) -> Memory[K, V]:
        """Remove every entry; configuration and key generation carry on.  Nothing is reported."""
        return _writes.clear(self)

    def summarize(self) -> Memory[K, V]:
        """Summarize every unpinned entry scoring below ``summarize_threshold``.

        Runs ``summarize_fn`` once for each such entry that has no summary for
        its current value.  Does nothing without a ``summarize_fn`` (but, as
        every write, removes and reports the entries past their deadline).

        Raises:
            SummarizeError: ``summarize_fn`` raised (nothing changed).
        """
        return _writes.summarize(self, clock(self))

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
        return _writes.evict(self, clock(self))

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
        return _reads.time_until(self, key, unit(threshold, "threshold", expected=_SCORE_RANGE))

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
        return _reads.next_eviction(self)

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
        keep; its key must be one of the group's keys, and its ``decay_state``
        one the decay function keeps (None, or as it would read back from
        ``to_dict``, its access times between the entry's insertion and now).

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
        return _writes.consolidate(self, (similarity, threshold, min_group), merge)

    def __eq__(self, other: object) -> bool:
        return _reads.equal(self, other) if isinstance(other, Memory) else NotImplemented

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
        return Memory(**self._config.changed(changes), _source=self)

    __replace__ = configure  # copy.replace(mem, **changes)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpickle, _pickled(self))

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
            return memory_to_dict(self._config, snapshot_of(self))

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        decay_fn: str | DecayFunction | DecayCallable | None = None,
        summarize_fn: SummarizeFn | None = None,
        on_evict: EvictFn | None = None,
        clock_fn: ClockFn | None = None,
        embed_fn: EmbedFn | None = None,
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
        hooks: dict[str, Any] = {"decay_fn": decay_fn, "summarize_fn": summarize_fn, "on_evict": on_evict}
        hooks.update(clock_fn=clock_fn, embed_fn=embed_fn)
        with paused():  # n new entries and the structures holding them, all kept
            return restored(cls, *memory_from_dict(data, shift_to=shift_to, **hooks))


def _pickled(mem: Memory[Any, Any]) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """What pickles ``mem``: its configuration's fields and its state, the entries as a list in
    put order (a map's layout depends on this process's str hashes); a decay function built by
    name travels as its name, so the copy still follows a new half-life."""
    snapshot = snapshot_of(mem)
    entries = sorted(snapshot.entries.values(), key=_SEQ)
    return mem._config.rebuild_fields(), (entries, *snapshot[1:5])


def _unpickle(config: dict[str, Any], state: tuple[Any, ...]) -> Memory[Any, Any]:
    entries, next_key, next_seq, latest, latest_us = state
    with paused():
        built = list(entries)
        snapshot = Snapshot(EMPTY.update({e.key: e for e in built}), next_key, next_seq, latest, latest_us, built=built)
        return restored(Memory, build(config), snapshot)


# The configuration fields are read from the version's one Config: each becomes a descriptor
# once the dataclass has taken its default (so the signature and the docs show plain values).
for _name in FIELDS:
    setattr(Memory, _name, _Setting(_name, getattr(Memory, _name)))
