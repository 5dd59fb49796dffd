"""A memory's versions: the one place a version is built, and the one sequence every write runs.

A version of a :class:`~lethe.Memory` is its configuration (one object, shared
by every version made from it), its contents (the map of entries, the ranking
and the deadlines), its key and put-order counters, the latest clock reading
it saw, and what the write that made it removed (``evicted``).  :func:`built`
is the only code that makes one: from an :class:`~lethe._memory.edit.Edit`, the
draft a write fills, as immutables builds every map in ``Map._new``.

Every write runs :func:`write`, which does, in this order:

1. the expiry sweep: entries past their deadline are removed from the draft
   and summarized (at the write's one clock reading);
2. the edit: the operation's own changes to the draft;
3. the version, built from the draft (or the memory itself, when nothing changed);
4. the report: the version's ``evicted``, what the sweep and the operation removed;
5. the hook: ``on_evict`` told of them, once the version exists, so hooks
   hear only of what a returned version really removed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any, Generic, TypeVar

from lethe._core import expiry as _expiry
from lethe._core.btree import Tree
from lethe._core.change import Change, between
from lethe._core.entry import Entry
from lethe._core.errors import SummarizeError
from lethe._core.hooks import closed_if_awaitable
from lethe._core.map import PersistentMap
from lethe._core.record import evolve
from lethe._core.reprs import short_repr
from lethe._core.snapshot import Snapshot
from lethe._memory.config import Config
from lethe._memory.edit import Edit
from lethe.ranking import Ranking

K = TypeVar("K")
V = TypeVar("V")
M = TypeVar("M", bound="Version[Any, Any]")
_VECTOR = attrgetter("vector")

#: What a write's change function gives back: the entries it removed besides the sweep (as
#: reported, summarized), or None for none.
Removed = Sequence[Entry[Any, Any]] | None


class Version(Generic[K, V]):
    """A memory's version besides its configuration's fields (so the dataclass takes none of these)."""

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
        "_vectors",
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
    _vectors: tuple[int, int]  # (dimensions, count): Edit.vectors


# Building versions on the hot path, as lethe._core.record builds entries: object.__new__ plus
# the slots' own setters, without __init__ or __post_init__.
_new = object.__new__
_d = Version.__dict__
_set_config = _d["_config"].__set__
_set_entries = _d["_entries"].__set__
_set_ranking = _d["_ranking"].__set__
_set_deadlines = _d["_deadlines"].__set__
_set_evicted = _d["_evicted"].__set__
_set_next_key = _d["_next_key"].__set__
_set_next_seq = _d["_next_seq"].__set__
_set_latest = _d["_latest"].__set__
_set_latest_us = _d["_latest_us"].__set__
_set_vectors = _d["_vectors"].__set__
del _d


def built(cls: type[M], config: Config, edit: Edit[Any, Any], evicted: tuple[Entry[Any, Any], ...] = ()) -> M:
    """A new version of class ``cls`` under ``config``, holding what ``edit`` holds, reporting
    ``evicted``: the one place a version is made.  O(1)."""
    new: M = _new(cls)
    _set_config(new, config)
    _set_entries(new, edit.entries)
    _set_ranking(new, edit.ranking)
    _set_deadlines(new, edit.deadlines)
    _set_evicted(new, evicted)
    _set_next_key(new, edit.next_key)
    _set_next_seq(new, edit.next_seq)
    _set_latest(new, edit.latest)
    _set_latest_us(new, edit.latest_us)
    _set_vectors(new, edit.vectors)
    return new


def fill(new: Version[Any, Any], config: Config, edit: Edit[Any, Any]) -> None:
    """Make ``new``, a version being constructed (``Memory.__init__``), the one :func:`built`
    makes of ``config`` and ``edit``."""
    made = built(Version, config, edit)
    for name in Version.__slots__:
        _SLOTS[name].__set__(new, _SLOTS[name].__get__(made))


_SLOTS = {name: Version.__dict__[name] for name in Version.__slots__}


def draft(mem: Version[K, V]) -> Edit[K, V]:
    """A draft of the version after ``mem``: its contents, counters and latest reading."""
    edit: Edit[K, V] = _new(Edit)  # (every slot set here: cheaper than __init__ and then the rest)
    edit.entries, edit.ranking, edit.deadlines, edit.changed = mem._entries, mem._ranking, mem._deadlines, False
    edit.next_key, edit.next_seq = mem._next_key, mem._next_seq
    edit.latest, edit.latest_us, edit.vectors = mem._latest, mem._latest_us, mem._vectors
    return edit


def hashable(key: object) -> None:
    """TypeError naming ``key``'s type when it is not hashable."""
    try:
        hash(key)
    except TypeError:
        raise TypeError(f"key must be hashable, got {type(key).__name__}") from None


def live(mem: Version[K, V], key: K, now_us: float) -> Entry[K, V]:
    """The entry at ``key`` in ``mem`` at ``now_us`` (the calling operation's one clock reading).

    Raises:
        KeyError: ``key`` is not there, or has passed its deadline.
        TypeError: ``key`` is not hashable.
    """
    try:
        entry = mem._entries.get(key)
    except TypeError:
        hashable(key)  # an unhashable key: say so by name (else the key's own error stands)
        raise
    if entry is None or (entry.expires_us is not None and _expiry.expired(entry, now_us)):
        raise KeyError(key)
    return entry


def write(
    mem: M,
    change: Callable[[Edit[Any, Any]], Removed],
    at: tuple[datetime, float] | None = None,
    *,
    sweep: bool = True,
) -> M:
    """The version after ``mem`` that ``change`` makes: the one write sequence (see the module),
    :func:`opened`, then ``change``, then :func:`closed`.

    Parameters:
        mem: The version written to.
        change: Makes the operation's changes to the draft; returns what it removed
            besides the sweep (summarized, as reported), or None.
        at: The write's clock reading, ``(datetime, microseconds)``; None for a write that
            reads no clock (``delete``, ``clear``), which sweeps nothing and reports nothing.
        sweep: Whether entries past their deadline at ``at`` are removed first (``evict``
            removes them itself, among the rest).

    Returns:
        The new version; ``mem`` itself (or an equal version reporting nothing) when
        nothing changed.

    Raises:
        SummarizeError: ``summarize_fn`` raised during the sweep or the change (nothing
            changed, no hook told).
    """
    edit, gone = opened(mem, at, sweep)
    return closed(mem, edit, gone, change(edit))


def opened(
    mem: Version[K, V], at: tuple[datetime, float] | None, sweep: bool = True
) -> tuple[Edit[K, V], tuple[Entry[K, V], ...]]:
    """The write sequence's first half: a draft of the version after ``mem`` at the clock
    reading ``at`` (None: none), without the entries past their deadline then (``sweep``),
    and those entries, summarized."""
    edit: Edit[K, V] = _new(Edit)  # (draft, inlined: every write starts here)
    edit.entries, edit.ranking, edit.deadlines, edit.changed = mem._entries, mem._ranking, mem._deadlines, False
    edit.next_key, edit.next_seq = mem._next_key, mem._next_seq
    edit.latest, edit.latest_us, edit.vectors = mem._latest, mem._latest_us, mem._vectors
    gone: tuple[Entry[K, V], ...] = ()
    if at is not None:
        if sweep and mem._deadlines:
            gone = _swept(mem._config, edit, at[1])
        if at[1] > edit.latest_us:
            edit.latest, edit.latest_us = at
    return edit, gone


def closed(mem: M, edit: Edit[Any, Any], gone: tuple[Entry[Any, Any], ...], removed: Removed) -> M:
    """The write sequence's second half: the version built from ``edit`` (``mem`` when nothing
    changed), reporting ``gone`` and ``removed``, once ``on_evict`` has been told of them."""
    if not edit.changed:
        return unchanged(mem)
    evicted = gone if not removed else (*gone, *removed) if gone or type(removed) is not tuple else removed
    new = built(type(mem), mem._config, edit, evicted)
    on_evict = mem._config.on_evict
    if new._evicted and on_evict is not None:
        no_awaitable(on_evict(new._evicted), "on_evict")
    return new


def unchanged(mem: M) -> M:
    """What a write that changes nothing returns: ``mem``, reporting no eviction.

    ``mem`` itself unless it reports what the write that made it removed (a
    version must never report another write's evictions again).
    """
    return mem if not mem._evicted else built(type(mem), mem._config, draft(mem))


def _swept(config: Config, edit: Edit[Any, Any], now_us: float) -> tuple[Entry[Any, Any], ...]:
    """Remove from ``edit`` the entries past their deadline at ``now_us``; they, summarized."""
    gone = []
    for _, _, key in _expiry.due(edit.deadlines, now_us):
        entry = edit.entries[key]
        edit.remove(entry)
        gone.append(summarized(config, entry))
    return tuple(gone)


def summarized(config: Config, entry: Entry[K, V]) -> Entry[K, V]:
    """``entry`` with its summary, ``summarize_fn`` run once for its value (if set).

    Raises:
        SummarizeError: the hook raised.
    """
    fn = config.summarize_fn
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
    no_awaitable(summary, "summarize_fn")
    return evolve(entry, summary=summary, summarized=True)


def no_awaitable(result: object, hook: str) -> None:
    """Refuse what an ``async def`` hook returns: lethe calls hooks synchronously."""
    if closed_if_awaitable(result):
        raise TypeError(
            f"{hook} returned an awaitable ({type(result).__name__}); hooks are called synchronously: "
            "pass a plain function (run async work yourself, e.g. in a thread or before the call)"
        )


# -- the seam replicas use ----------------------------------------------------------
#
# ``lethe.store`` keeps a memory in step with a store through these functions only: it
# reads a version as a snapshot and a configuration, rebuilds one from them, and applies
# the changes other processes committed, never running a decay function or a hook.


def config_of(mem: Version[Any, Any]) -> Config:
    """The configuration ``mem`` shares with every version made from it."""
    return mem._config


def snapshot_of(mem: Version[Any, Any]) -> Snapshot:
    """``mem``'s entries, counters and latest clock reading.  O(1)."""
    return Snapshot(mem._entries, mem._next_key, mem._next_seq, mem._latest, mem._latest_us)


def restored(cls: type[M], config: Config, snapshot: Snapshot) -> M:
    """A version of class ``cls`` holding ``snapshot`` under ``config``.  O(n log n)."""
    return built(cls, config, rebuilt(config, snapshot))


def rebuilt(config: Config, snapshot: Snapshot) -> Edit[Any, Any]:
    """A draft holding ``snapshot``, its ranking and deadlines built for ``config``: the one
    rebuild path (construction, ``configure``, unpickling, ``from_dict``, a store's load),
    re-indexing every entry.  O(n log n)."""
    entries, next_key, next_seq, latest, latest_us, made = snapshot
    # (a list of as many entries as the map holds, the map made from it: the same entries)
    listed = made if made is not None and len(made) == len(entries) else entries.to_list()
    ranking = config.ranking.rebuilt(listed, latest_us if latest_us > -math.inf else math.nan)
    edit: Edit[Any, Any] = Edit(entries, ranking, _expiry.built(listed) if listed else _expiry.NONE)
    edit.next_key, edit.next_seq, edit.latest, edit.latest_us = next_key, next_seq, latest, latest_us
    vectors = list(filter(None, map(_VECTOR, listed)))  # (at C speed: most memories hold none)
    if vectors:
        edit.vectors = (len(vectors[0]), len(vectors))
    return edit


def rehooked(mem: M, config: Config, evicted: tuple[Entry[Any, Any], ...] | None = None) -> M:
    """``mem`` under ``config``, a copy of its own configuration with other hooks: the same
    scorer and ranking, so nothing is rebuilt; it reports ``evicted`` (None: what ``mem``
    reports).  O(1)."""
    return built(type(mem), config, draft(mem), mem._evicted if evicted is None else evicted)


def changes(
    old: Version[Any, Any], new: Version[Any, Any], evicted: tuple[Entry[Any, Any], ...] | None = None
) -> Change:
    """What turns ``old`` into ``new`` (a version made from it), with what ``new`` reported
    (or ``evicted``, when given)."""
    return between(snapshot_of(old), snapshot_of(new), new._evicted if evicted is None else evicted)


def applied(mem: M, change: Change) -> M:
    """``mem`` with ``change`` applied: the version it was found from, rebuilt without running
    the decay function or any hook.  O(m log n) for m changed entries.

    Raises:
        KeyError: a removed key ``mem`` does not hold (the change is not from it).
    """
    entries = mem._entries
    removed = [entries[key] for key in change.removed]
    added: dict[Any, Entry[Any, Any]] = {}
    for entry in change.written:
        old = entries.get(entry.key)
        if old is not None:  # out, then in: a rehearsal or a pin moves it in the ranking
            removed.append(old)
        added[entry.key] = entry
    edit = draft(mem)
    edit.apply(removed, [], added)
    edit.next_key, edit.next_seq = change.next_key, change.next_seq
    if change.latest is not None:
        edit.seen(change.latest, change.latest_us)
    return built(type(mem), mem._config, edit, change.evicted)
