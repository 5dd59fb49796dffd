"""Time-to-live: which entries of a memory have passed their deadline.

A memory keeps the deadlines of its unpinned entries that have one (``put(...,
ttl=...)``) in a persistent B+tree of ``(expires_us, seq, key)``, so that every
read can leave expired entries out and every write can find, in O(log n + m),
the m entries it must remove (and report), without scanning the others.  The
tree holds keys, not entries: a rehearsal changes an entry but not its
deadline, so it leaves the tree alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from operator import attrgetter, is_not
from typing import Any

from lethe._core.btree import Item, Tree
from lethe._core.entry import Entry

NONE = Tree()
_EXPIRES = attrgetter("expires_us")
_BOTTOM = (-float("inf"), -1)


def expired(entry: Entry[Any, Any], now_us: float) -> bool:
    """Whether ``entry`` has passed its deadline (pinned entries never expire)."""
    deadline = entry.expires_us
    return deadline is not None and now_us >= deadline and not entry.pinned


def any_deadline(entries: list[Entry[Any, Any]]) -> bool:
    """Whether any of ``entries`` has a deadline (so some may have expired); checked in C."""
    return any(map(is_not, map(_EXPIRES, entries), repeat(None)))


def tracked(entry: Entry[Any, Any]) -> bool:
    """Whether ``entry`` has a deadline that runs (it has one and is not pinned)."""
    return entry.expires_us is not None and not entry.pinned


def added(deadlines: Tree, entry: Entry[Any, Any]) -> Tree:
    """``deadlines`` with ``entry``'s deadline, if it has one that runs."""
    if entry.expires_us is None or entry.pinned:
        return deadlines
    return deadlines.insert((entry.expires_us, entry.seq, entry.key))


def removed(deadlines: Tree, entry: Entry[Any, Any]) -> Tree:
    """``deadlines`` without ``entry``'s deadline, if it had one that runs."""
    if entry.expires_us is None or entry.pinned:
        return deadlines
    return deadlines.delete((entry.expires_us, entry.seq))


def built(entries: Iterable[Entry[Any, Any]]) -> Tree:
    """The deadlines of ``entries`` (O(n log n))."""
    items = sorted((e.expires_us, e.seq, e.key) for e in entries if e.expires_us is not None and not e.pinned)
    return Tree(items) if items else NONE


def due(deadlines: Tree, now_us: float) -> list[Item]:
    """The ``(expires_us, seq, key)`` items whose deadline is at or before ``now_us``, earliest first."""
    first = deadlines.first()
    if first is None or first[0] > now_us:
        return []
    out: list[Item] = []
    for item in deadlines.ascending_from(_BOTTOM):
        if item[0] > now_us:
            break
        out.append(item)
    return out
