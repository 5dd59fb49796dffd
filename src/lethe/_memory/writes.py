"""A memory's writes: each one change, run through the one write sequence (``lethe._memory.version.write``).

``Memory``'s write methods check their arguments and read the clock, then
call these; each returns the new version (the memory itself when nothing
changed).  What each write removes is reported by the sequence, never here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from lethe._core import expiry as _expiry
from lethe._core.clock import MAX_US, from_us, to_us, to_utc
from lethe._core.entry import Entry, check_importance, freeze_metadata, metadata_copies, new_entry, rehearsed
from lethe._core.errors import MemoryFullError
from lethe._core.gc import paused
from lethe._core.map import EMPTY
from lethe._core.record import evolve, put_options
from lethe._core.reprs import short_repr
from lethe._core.snapshot import Snapshot
from lethe._core.validate import duration, flag, hook, integer, unit
from lethe._memory.config import Config, build
from lethe._memory.consolidate import find_groups, merge_group
from lethe._memory.edit import Edit
from lethe._memory.reads import clock, ranked
from lethe._memory.searching import Content, content
from lethe._memory.version import (
    M,
    Removed,
    Version,
    closed,
    hashable,
    live,
    opened,
    rebuilt,
    snapshot_of,
    summarized,
    unchanged,
    write,
)
from lethe.decay._adapter import check_state, moved_state
from lethe.decay._scorer import clamp

Moment = tuple[datetime, float]
#: A put's options as an entry takes them: ``(pinned, importance, metadata, expires_at, expires_us)``.
Options = tuple[bool, float, Any, "datetime | None", "float | None"]


#: A put's options, checked (:func:`asked`): the options of an entry without a deadline, then
#: ``(ttl_us, expires_at, deadline_us)``; a deadline is fixed once the clock is read (:func:`options_at`).
Asked = tuple[Options, "float | None", "datetime | None", "float | None"]
#: The names of :data:`Options`, in order: ``Entry``'s put options as declared (checked at import).
OPTION_NAMES = ("pinned", "importance", "metadata", "expires_at", "expires_us")
if put_options(Entry) != OPTION_NAMES:
    raise ImportError(f"Options holds {OPTION_NAMES}; Entry declares {put_options(Entry)}: update both together")


def options_at(asked: Asked, now_us: float) -> Options:
    """The options of an entry put at ``now_us`` (a ``ttl`` counts from then)."""
    options, ttl_us, expires_at, deadline_us = asked
    if ttl_us is None and expires_at is None:
        return options
    expires, deadline_us = _deadline(now_us, ttl_us, expires_at, deadline_us)
    return options[0], options[1], options[2], expires, deadline_us


def asked(importance: object, pinned: object, metadata: Any, ttl: object, expires_at: datetime | None) -> Asked:
    """:meth:`Memory.put`'s options, checked.

    Raises:
        ValueError, TypeError: a bad option (named).
    """
    imp = check_importance(importance)
    flag(pinned, "pinned")
    meta = freeze_metadata(metadata)
    if ttl is not None and expires_at is not None:
        raise ValueError("pass ttl or expires_at, not both")
    if pinned and (ttl is not None or expires_at is not None):
        raise ValueError("ttl/expires_at: a pinned entry cannot expire; pin it after putting it instead")
    ttl_us = None if ttl is None else duration(ttl, "ttl") * 1e6
    deadline_us = None if expires_at is None else to_us(expires_at, "expires_at")
    return (bool(pinned), imp, meta, None, None), ttl_us, expires_at, deadline_us


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


def checked_pairs(items: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """``put_many``'s items as a list of ``(key, value)`` pairs.

    Raises:
        TypeError: ``items`` is not iterable, an item is not a pair, or its key is not
            hashable (naming ``items[i]``).
    """
    if isinstance(items, Mapping):
        out = list(items.items())
    else:
        try:
            pairs = iter(items)
        except TypeError:
            raise TypeError(
                f"items must be a mapping or an iterable of (key, value) pairs, got {type(items).__name__}"
            ) from None
        out = list(pairs)
    for i, pair in enumerate(out):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"items[{i}] must be a (key, value) pair, got {type(pair).__name__}")
        if pair[0] is not None:
            try:
                hash(pair[0])
            except TypeError:
                raise TypeError(f"items[{i}]: key must be hashable, got {type(pair[0]).__name__}") from None
    return out


def configured(fields: dict[str, Any], source: object) -> tuple[Config, Edit[Any, Any]]:
    """A new memory's configuration from the constructor's ``fields``, and its contents: none,
    or those of ``source`` (``configure``), whose decay states a new decay function resets.

    Raises:
        TypeError, ValueError: a bad field (named); ``source`` is not a memory.
    """
    if source is None:
        config = build(fields)
        return config, rebuilt(config, Snapshot(EMPTY, 0, 0, None, -math.inf))
    if not isinstance(source, Version):
        raise TypeError(f"_source must be a Memory, got {type(source).__name__}")
    snapshot = snapshot_of(source)
    config = build(fields, source._config, len(snapshot.entries))
    if config.decay_fn != source._config.decay_fn:
        snapshot = snapshot.without_decay_state()
    return config, rebuilt(config, snapshot)


def put(mem: M, key: Any, value: Any, asked: Asked, content: Content = None) -> M:
    """``mem`` with ``value`` put at ``key`` (None: a generated int key) now, with ``content``
    (its text and vector, checked: :func:`~lethe._memory.searching.content`).

    Raises:
        TypeError: ``key`` is not hashable.
    """
    if key is not None:
        hashable(key)
    config, at = mem._config, clock(mem)
    options = asked[0] if asked[1] is None and asked[2] is None else options_at(asked, at[1])
    # The write sequence in its two halves, without a closure: the hottest write.
    edit, gone = opened(mem, at)
    return closed(mem, edit, gone, _put(config, edit, (key, value, content), at, options))


#: What one put puts: its key (None: a generated one), its value and its content.
Item = tuple[Any, Any, Content]


def _put(config: Config, edit: Edit[Any, Any], item: Item, at: Moment, options: Options) -> Removed:
    """One put into ``edit``: a new key at capacity evicts the lowest-scored unpinned entry."""
    key, value, content = item
    entries = edit.entries
    if key is None:
        next_key = edit.next_key
        while next_key in entries:
            next_key += 1
        key = next_key
        edit.next_key = next_key + 1
    seq = edit.next_seq
    edit.next_seq = seq + 1
    entry = new_entry(key, value, seq, at, options, content=content)
    old = entries.get(key)
    if old is not None:
        edit.replace(old, entry)
        return None
    victim = None
    if len(entries) >= config.max_entries:
        victim = edit.ranking.lowest(entries, config.scorer, *at)
        if victim is None:
            raise MemoryFullError(
                f"memory is full ({config.max_entries} entries) and every entry is pinned; unpin or delete one first"
            )
        edit.remove(victim)
        victim = summarized(config, victim)
    edit.add(entry)
    return None if victim is None else (victim,)


def put_many(mem: M, pairs: list[tuple[Any, Any]], asked: Asked, contents: list[Content] | None = None) -> M:
    """``mem`` with every ``(key, value)`` of ``pairs`` (:func:`checked_pairs`) put, each with
    its content (``contents``, one per pair; None: none), as chained puts at one clock reading."""
    if not pairs:  # as no put at all: the memory has not seen this clock reading
        return unchanged(mem)
    config, at = mem._config, clock(mem)
    options = options_at(asked, at[1])
    items: list[Item] = (
        [(k, v, None) for k, v in pairs] if contents is None else [(k, v, c) for (k, v), c in zip(pairs, contents)]
    )
    copies = metadata_copies(options[2])

    def each() -> Options:
        """An entry's options: its own metadata, as its own put would copy it."""
        if copies is None:
            return options
        return options[0], options[1], copies(), options[3], options[4]

    def change(edit: Edit[Any, Any]) -> Removed:
        entries = edit.entries
        fresh: dict[Any, Entry[Any, Any]] = {}
        next_key, seq = edit.next_key, edit.next_seq
        with paused():  # new entries, all of them kept: nothing for the collector to find
            for key, value, content in items:
                if key is None:
                    while next_key in entries or next_key in fresh:
                        next_key += 1
                    key = next_key
                    next_key += 1
                # A repeated key: the later put replaces it (with the later seq).
                fresh[key] = new_entry(key, value, seq, at, each(), content=content)
                seq += 1
        replaced = [e for e in map(entries.get, fresh) if e is not None]
        # Equal keys of different types (1 and True) keep the later one: the chain does that.
        mixed = any(type(k) is not type(e.key) for k, e in fresh.items()) or any(
            type(old.key) is not type(fresh[old.key].key) for old in replaced
        )
        if mixed or len(entries) + len(fresh) - len(replaced) > config.max_entries:
            # Puts will evict: the chain, exactly, into this one draft.
            evicted: list[Entry[Any, Any]] = []
            for item in items:
                evicted += _put(config, edit, item, at, each()) or ()
            return evicted
        edit.apply(replaced, [], fresh)  # a replaced key gets a new seq: out, then in
        edit.next_key, edit.next_seq = next_key, seq
        return None

    return write(mem, change, at)


def rehearse(mem: M, key: Any, at: Moment, changes: dict[str, Any]) -> tuple[M, Entry[Any, Any]]:
    """``mem`` with the entry at ``key`` rehearsed at ``at`` (and given ``changes``), and that entry.

    Raises:
        KeyError: ``key`` is not in the memory at ``at``.
    """
    now, now_us = at
    entry = live(mem, key, now_us)
    hook = mem._config.scorer.rehearse
    state = entry.decay_state if hook is None else hook(entry, now, now_us)
    new = rehearsed(entry, now, now_us, state)
    if changes:
        new = evolve(new, **changes)
    edit, gone = opened(mem, at)  # (the write sequence in its halves: a rehearsal is a hot write)
    edit.replace(entry, new)
    return closed(mem, edit, gone, None), new


def touch(mem: M, key: Any, importance: float | None) -> M:
    """``mem`` with the entry at ``key`` rehearsed (and given ``importance``, if not None)."""
    changes = {} if importance is None else {"importance": check_importance(importance)}
    return rehearse(mem, key, clock(mem), changes)[0]


def update(mem: M, key: Any, value: Any, text: Any = None, vector: Any = None) -> M:
    """``mem`` with the entry at ``key`` rehearsed with ``value``: its summary starts over,
    unless the value is the one it had; its text and vector are the new ones a put would
    store (kept when neither is given and the value is the one it had).

    Raises:
        KeyError: ``key`` is not in the memory.
        TypeError, ValueError: a bad ``text`` or ``vector``, or ``embed_fn`` result.
    """
    try:
        old = mem._entries.get(key)
    except TypeError:
        old = None  # an unhashable key: rehearse raises the error that names it
    changes: dict[str, Any] = {"value": value}
    same = old is not None and _same_value(old.value, value)
    if not same:
        changes.update(summary=None, summarized=False)
    if old is not None and not (same and text is None and vector is None):
        new = content(mem, [value], [text], [vector])[0]
        changes["text"], changes["vector"] = (None, None) if new is None else new
    return rehearse(mem, key, clock(mem), changes)[0]


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


def set_pinned(mem: M, key: Any, pinned: bool, at: Moment) -> M:
    """``mem`` with the entry at ``key`` pinned or unpinned."""
    entry = live(mem, key, at[1])
    if entry.pinned is pinned:
        return unchanged(mem)
    new = evolve(entry, pinned=pinned)
    return write(mem, lambda edit: edit.replace(entry, new), at)


def delete(mem: M, key: Any) -> M:
    """``mem`` without the entry at ``key``: no clock read, nothing else removed or reported.

    Raises:
        TypeError: ``key`` is not hashable.
    """
    hashable(key)
    entry = mem._entries.get(key)
    return unchanged(mem) if entry is None else write(mem, lambda edit: edit.remove(entry))


def clear(mem: M) -> M:
    """``mem`` without any entry; nothing reported."""
    return write(mem, lambda edit: edit.clear(mem._config.ranking))


def summarize(mem: M, at: Moment) -> M:
    """``mem`` with every unpinned entry below ``summarize_threshold`` summarized."""
    config = mem._config
    now, now_us = at

    def change(edit: Edit[Any, Any]) -> Removed:
        if config.summarize_fn is None:
            return None
        limit = config.summarize_threshold
        below = edit.ranking.below(edit.entries, config.scorer, limit, now, now_us)
        candidates = [e for e in below if not e.summarized]
        values = config.scorer.many(candidates, now, now_us)
        for entry, v in sorted(zip(candidates, values), key=lambda p: p[0].seq):
            if clamp(v) < limit:
                edit.replace(entry, summarized(config, entry))
        return None

    return write(mem, change, at)


def evict(mem: M, at: Moment) -> tuple[M, tuple[Entry[Any, Any], ...]]:
    """``mem`` with what is fading summarized and what has faded (or expired) removed, and
    what was removed (the new version's ``evicted``), highest score first."""
    config = mem._config
    now, now_us = at

    def change(edit: Edit[Any, Any]) -> Removed:
        entries = edit.entries
        summarize_below = config.summarize_threshold if config.summarize_fn is not None else -1.0
        evict_below = config.eviction_threshold
        candidates = edit.ranking.below(entries, config.scorer, max(summarize_below, evict_below), now, now_us)
        due = _expiry.due(edit.deadlines, now_us) if edit.deadlines else None
        if due:  # past their deadline, whatever their score
            seen = {e.seq for e in candidates}
            candidates += [entries[key] for _, seq, key in due if seq not in seen]
        values = config.scorer.many(candidates, now, now_us)
        evicted: list[Entry[Any, Any]] = []  # as held: what the edit removes
        reported: list[Entry[Any, Any]] = []  # as summarized: what on_evict hears of
        kept: list[tuple[Entry[Any, Any], Entry[Any, Any]]] = []
        # Lowest first (the reverse of rank order), so summaries run in the order entries fade.
        for i in sorted(range(len(candidates)), key=lambda i: (values[i], candidates[i].seq)):
            entry, s = candidates[i], clamp(values[i])
            gone = s < evict_below or _expiry.expired(entry, now_us)
            if s >= summarize_below and not gone:
                continue
            old = entry
            if (s < summarize_below or gone) and not entry.summarized:
                entry = summarized(config, entry)
            if gone:
                evicted.append(old)
                reported.append(entry)
            elif entry is not old:
                kept.append((old, entry))
        edit.apply(evicted, kept, {})
        reported.reverse()
        return reported

    new = write(mem, change, at, sweep=False)
    return new, new._evicted


def consolidate(
    mem: M,
    similar: tuple[Callable[[Any, Any], float], Any, Any],
    merge: Callable[[tuple[Entry[Any, Any], ...]], Entry[Any, Any]] | None,
) -> tuple[M, list[tuple[Entry[Any, Any], ...]]]:
    """``mem`` with each group of similar unpinned entries (``similar``: ``(similarity,
    threshold, min_group)``) merged into one entry, and the groups, in put order.

    Raises:
        ValueError, TypeError: a bad argument (named) or merge result.
    """
    similarity, threshold, min_group = similar
    t = unit(threshold, "threshold")
    integer(min_group, "min_group", low=2)
    hook(similarity, "similarity", optional=False)
    hook(merge, "merge")
    at = clock(mem)
    candidates = [e for e in ranked(mem, at)[0] if not e.pinned]
    groups = [tuple(candidates[i] for i in sorted(g)) for g in find_groups(candidates, similarity, t, min_group)]
    merge_states = mem._config.scorer.merge_states

    def change(edit: Edit[Any, Any]) -> Removed:
        for group in groups:
            merged = merge(group) if merge is not None else merge_group(group, merge_states)
            if not isinstance(merged, Entry):
                raise TypeError(f"merge must return an Entry, got {type(merged).__name__}")
            replaced = next((e for e in group if e.key == merged.key), None)
            if replaced is None:
                raise ValueError(f"merge returned key {merged.key!r}, which is not in its group")
            if merged.seq != replaced.seq:  # the merged entry takes the place of the one with its key
                merged = evolve(merged, seq=replaced.seq)
            if merged.last_accessed_at > at[0]:  # (the datetimes: exact past 2**53 microseconds too)
                # Its times are clock readings: a later one would move the memory's clock there.
                raise ValueError(
                    f"merge returned an entry last accessed at {merged.last_accessed_at.isoformat()}, "
                    f"after the memory's clock reading ({at[0].isoformat()})"
                )
            if merge is not None and merged.decay_state is not None:
                _check_merged_state(mem._config.decay_fn, merged, at)
            for e in group:
                edit.remove(e)
            edit.add(merged)
        return None

    new = write(mem, change, at)
    groups.sort(key=lambda g: g[0].seq)
    return new, groups


def _check_merged_state(fn: Any, merged: Entry[Any, Any], at: Moment) -> None:
    """ValueError naming ``merge`` unless the ``decay_state`` it returned is one ``fn`` keeps,
    its instants in the merged entry's life (as ``from_dict`` checks a document's)."""
    state = merged.decay_state
    told = f"merge returned decay_state {short_repr(state)}"
    try:
        check_state(fn, state)
    except ValueError as exc:
        raise ValueError(f"{told}, which {short_repr(fn)} cannot keep: {exc}") from None

    def within(t: float) -> float:
        if t < merged.inserted_us:
            raise ValueError(f"{told}: an access time before the entry's inserted_at")
        if t > at[1]:
            raise ValueError(f"{told}: an access time after the memory's clock reading ({at[0].isoformat()})")
        return t

    moved_state(fn, state, within, lambda custom: custom)
