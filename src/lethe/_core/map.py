"""The persistent hash map that holds a memory's entries.

A shallow, wide hash trie built from the interpreter's own containers: a node
is either a leaf ``dict`` mapping keys to values, or a branch ``tuple`` of 32
children indexed by five bits of the key's hash.  A write copies the one leaf
and the few branches on the path to it (small copies that run at C speed) and
shares everything else with the previous version, so it costs O(log32 n) and
creates only a handful of young objects: the garbage collector never has to
walk the whole map because of a write.

Small maps stay small: up to ``_LEAF_MAX`` entries live in one dict, and an
empty map is one shared empty dict.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_BITS = 5
_WIDTH = 1 << _BITS
_MASK = _WIDTH - 1
# A leaf splits into a branch when it grows past this size.  Larger leaves make
# copies dearer; smaller ones make the tree deeper.  16 measured best.
_LEAF_MAX = 16
# 64-bit hashes: below this depth a leaf may still split on fresh hash bits.
_MAX_SHIFT = 60
_EMPTY_LEAF: dict[Any, Any] = {}
_EMPTY_BRANCH: tuple[Any, ...] = (None,) * _WIDTH

Node = Any  # dict (leaf) or tuple (branch); kept loose for speed.


def _split(leaf: dict[Any, Any], shift: int) -> tuple[Any, ...]:
    """Turn an over-full leaf into a branch keyed by the next hash bits."""
    children: list[Any] = [None] * _WIDTH
    for key, value in leaf.items():
        i = (hash(key) >> shift) & _MASK
        child = children[i]
        if child is None:
            children[i] = {key: value}
        else:
            child[key] = value
    if shift < _MAX_SHIFT:
        for i, child in enumerate(children):
            if child is not None and len(child) > _LEAF_MAX:
                children[i] = _split(child, shift + _BITS)
    return tuple(children)


def _assoc(node: Node, h: int, shift: int, key: Any, value: Any) -> Node:
    if type(node) is dict:
        leaf = node.copy()
        leaf[key] = value
        if len(leaf) > _LEAF_MAX and shift <= _MAX_SHIFT:
            return _split(leaf, shift)
        return leaf
    i = (h >> shift) & _MASK
    child = node[i]
    new = {key: value} if child is None else _assoc(child, h, shift + _BITS, key, value)
    branch = list(node)
    branch[i] = new
    return tuple(branch)


def _dissoc(node: Node, h: int, shift: int, key: Any) -> Node:
    """Remove ``key`` (which must be present); None when the node empties."""
    if type(node) is dict:
        if len(node) == 1:
            return None
        leaf = node.copy()
        del leaf[key]
        return leaf
    i = (h >> shift) & _MASK
    new = _dissoc(node[i], h, shift + _BITS, key)
    branch = list(node)
    branch[i] = new
    # Fold a sparse branch back into one leaf so shrinking maps stay small.
    # (Counted at C speed: this runs on most deletes near the bottom of a large map.)
    if new is None or type(new) is dict:
        return _fold(branch)
    return tuple(branch)


def _fold(branch: list[Any]) -> Node:
    """``branch`` as a node: None when empty, one leaf when small and all its children are leaves."""
    if tuple not in map(type, branch):
        size = sum(map(len, filter(None, branch)))
        if size == 0:
            return None
        if size <= _LEAF_MAX // 2:
            merged: dict[Any, Any] = {}
            for c in branch:
                if c is not None:
                    merged.update(c)
            return merged
    return tuple(branch)


def _edit(node: Node, shift: int, ops: list[tuple[int, Any, Any]]) -> Node:
    """``node`` with ``ops`` applied in order: ``(hash, key, value)`` sets ``key``, or deletes it
    (it must be present) when ``value`` is ``_ABSENT``.  Each node on the changed paths is copied
    once, however many ops fall under it; None when the node empties."""
    if type(node) is dict:
        leaf = node.copy()
        for _, key, value in ops:
            if value is _ABSENT:
                del leaf[key]
            else:
                leaf[key] = value
        if not leaf:
            return None
        if len(leaf) > _LEAF_MAX and shift <= _MAX_SHIFT:
            return _split(leaf, shift)
        return leaf
    groups: dict[int, list[tuple[int, Any, Any]]] = {}
    for op in ops:
        i = (op[0] >> shift) & _MASK
        group = groups.get(i)
        if group is None:
            groups[i] = [op]
        else:
            group.append(op)
    branch = list(node)
    deeper = shift + _BITS
    for i, group in groups.items():
        child = branch[i]
        branch[i] = _edit(_EMPTY_LEAF if child is None else child, deeper, group)
    return _fold(branch)


def _leaves(node: Node) -> Iterator[dict[Any, Any]]:
    if type(node) is dict:
        yield node
        return
    stack = [node]
    while stack:
        branch = stack.pop()
        for child in reversed(branch):
            if child is None:
                continue
            if type(child) is dict:
                yield child
            else:
                stack.append(child)


def _items(node: Node | None) -> dict[Any, Any]:
    """Every pair under ``node``, in one dict."""
    if node is None:
        return {}
    if type(node) is dict:
        return node
    out: dict[Any, Any] = {}
    for leaf in _leaves(node):
        out.update(leaf)
    return out


def _diff(old: Node | None, new: Node | None, changed: dict[Any, Any], removed: list[Any]) -> None:
    """Add to ``changed`` the pairs of ``new`` that ``old`` lacks or holds another object for,
    and to ``removed`` the keys of ``old`` that ``new`` lacks.  Shared subtrees are skipped."""
    if old is new:
        return
    if type(old) is tuple and type(new) is tuple:
        for a, b in zip(old, new):
            if a is not b:
                _diff(a, b, changed, removed)
        return
    before, after = _items(old), _items(new)
    for key, value in after.items():
        if before.get(key, _ABSENT) is not value:
            changed[key] = value
    removed.extend(key for key in before if key not in after)


_ABSENT: Any = object()


class PersistentMap(Generic[K, V]):
    """An immutable mapping whose writes return a new map in O(log n).

    Runtime complexity: lookups and writes O(log32 n); iteration O(n).

    >>> m = PersistentMap().set("a", 1)
    >>> m2 = m.set("b", 2)
    >>> (len(m), len(m2), m2["b"], "b" in m)
    (1, 2, 2, False)
    """

    __slots__ = ("_len", "_root")

    _root: Node
    _len: int

    def __init__(self) -> None:
        self._root = _EMPTY_LEAF
        self._len = 0

    @classmethod
    def _make(cls, root: Node, length: int) -> PersistentMap[K, V]:
        new: PersistentMap[K, V] = object.__new__(cls)
        new._root = root
        new._len = length
        return new

    def __len__(self) -> int:
        return self._len

    # __getitem__, get and __contains__ walk the trie the same way, written out three times on
    # purpose: they are the hottest reads of a memory, and a shared helper costs a call each.
    def __getitem__(self, key: K) -> V:
        node = self._root
        h = hash(key)
        while type(node) is tuple:
            node = node[h & _MASK]
            if node is None:
                raise KeyError(key)
            h >>= _BITS
        value: V = node[key]
        return value

    def get(self, key: K, default: V | None = None) -> V | None:
        """Return the value for ``key``, or ``default`` when it is absent."""
        node = self._root
        h = hash(key)
        while type(node) is tuple:
            node = node[h & _MASK]
            if node is None:
                return default
            h >>= _BITS
        value: V | None = node.get(key, default)
        return value

    def __contains__(self, key: object) -> bool:
        node = self._root
        h = hash(key)
        while type(node) is tuple:
            node = node[h & _MASK]
            if node is None:
                return False
            h >>= _BITS
        return key in node

    def set(self, key: K, value: V) -> PersistentMap[K, V]:
        """Return a map with ``key`` bound to ``value``."""
        added = 0 if key in self else 1
        return self._make(_assoc(self._root, hash(key), 0, key, value), self._len + added)

    def replace(self, key: K, value: V) -> PersistentMap[K, V]:
        """Like :meth:`set`, for a key the caller knows is present (no membership test)."""
        return self._make(_assoc(self._root, hash(key), 0, key, value), self._len)

    def add(self, key: K, value: V) -> PersistentMap[K, V]:
        """Like :meth:`set`, for a key the caller knows is absent (no membership test)."""
        return self._make(_assoc(self._root, hash(key), 0, key, value), self._len + 1)

    def delete(self, key: K) -> PersistentMap[K, V]:
        """Return a map without ``key``; KeyError if it is absent."""
        if key not in self:
            raise KeyError(key)
        root = _dissoc(self._root, hash(key), 0, key)
        return self._make(_EMPTY_LEAF if root is None else root, self._len - 1)

    def discard(self, key: K) -> PersistentMap[K, V]:
        """Return a map without ``key``; the same map if it is absent."""
        return self.delete(key) if key in self else self

    def update(self, items: dict[K, V]) -> PersistentMap[K, V]:
        """Return a map with every pair of ``items`` set.

        Few items are set one by one (O(m log n)); many are merged into a fresh
        trie built in one pass (O(n + m)), which is much faster per item.
        """
        if 4 * len(items) < self._len:
            m = self
            for key, value in items.items():
                m = m.set(key, value)
            return m
        merged = dict(self.items())
        merged.update(items)
        root = _split(merged, 0) if len(merged) > _LEAF_MAX else merged
        return self._make(root, len(merged))

    def edited(self, removed: list[K], changed: list[tuple[K, V]], added: int) -> PersistentMap[K, V]:
        """A map without the keys ``removed`` (each present), then with the pairs ``changed`` set
        (``added`` of them absent by then): many writes in one pass that copies each node on their
        paths once.  O(m log n) for m writes, and never more than the O(n) of a rebuild.

        A key removed and set again takes the key object it is set with, as a delete then a set does.
        """
        if not removed and not changed:
            return self
        ops: list[tuple[int, Any, Any]] = [(hash(key), key, _ABSENT) for key in removed]
        ops += [(hash(key), key, value) for key, value in changed]
        root = _edit(self._root, 0, ops)
        return self._make(_EMPTY_LEAF if root is None else root, self._len - len(removed) + added)

    def diff(self, other: PersistentMap[K, V]) -> tuple[dict[K, V], list[K]]:
        """What turns this map into ``other``: ``(changed, removed)``.

        ``changed`` holds every pair of ``other`` whose key this map lacks or
        binds to another object (compared by identity, so an equal value that
        is a different object counts as changed); ``removed`` lists the keys of
        this map that ``other`` lacks.  Setting ``changed`` and deleting
        ``removed`` on this map gives a map equal to ``other``.

        Runtime complexity: O(m log n) for m differences between two versions
        that share structure (one made from the other by writes): subtrees they
        share are skipped by identity.  Unrelated maps cost O(n).

        >>> a = PersistentMap().set("x", 1).set("y", 2)
        >>> changed, removed = a.diff(a.set("y", 3).delete("x").set("z", 4))
        >>> sorted(changed.items()), removed
        ([('y', 3), ('z', 4)], ['x'])
        """
        changed: dict[K, V] = {}
        removed: list[K] = []
        _diff(self._root, other._root, changed, removed)
        return changed, removed

    def values(self) -> Iterator[V]:
        """Iterate over the values, in an order fixed by the keys' hashes."""
        for leaf in _leaves(self._root):
            yield from leaf.values()

    def keys(self) -> Iterator[K]:
        """Iterate over the keys, in an order fixed by their hashes."""
        for leaf in _leaves(self._root):
            yield from leaf

    __iter__ = keys

    def items(self) -> Iterator[tuple[K, V]]:
        """Iterate over ``(key, value)`` pairs."""
        for leaf in _leaves(self._root):
            yield from leaf.items()

    def to_list(self) -> list[V]:
        """All values in one list, built leaf by leaf at C speed."""
        out: list[V] = []
        extend = out.extend
        for leaf in _leaves(self._root):
            extend(leaf.values())
        return out

    def __repr__(self) -> str:
        return f"PersistentMap({dict(self.items())!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_from_items, (list(self.items()),))


def _from_items(items: list[tuple[Any, Any]]) -> PersistentMap[Any, Any]:
    m: PersistentMap[Any, Any] = PersistentMap()
    for k, v in items:
        m = m.set(k, v)
    return m


EMPTY: PersistentMap[Any, Any] = PersistentMap()
