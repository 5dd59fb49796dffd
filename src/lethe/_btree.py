"""A persistent B+tree of sorted items: the order index behind ``Memory``.

Items are tuples whose first two fields, ``(sort_key, seq)``, are unique and
totally ordered; the rest rides along (the index stores ``(key, seq, entry)``).
Searches use the two-field *probe* ``(sort_key, seq)``, so the payload is never
compared.  Every node also knows the smallest ``seq`` below it, which answers
"the earliest-put item under a bound" in O(log n).

Writes copy the nodes on one root-to-leaf path (lists of at most ``_MAX``
references, copied at C speed) and share the rest, so an insert or a delete
costs O(log n) and leaves every earlier tree intact.  Nodes are never mutated
after they are returned.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from operator import itemgetter
from typing import Any

Item = tuple[Any, ...]
Probe = tuple[Any, Any]

# Node capacity: 64 keeps the copies on a write short while a 100,000-item
# tree is only three levels deep.
_MAX = 64
_MIN = _MAX // 4
_SEQ = itemgetter(1)


class _Leaf:
    __slots__ = ("items", "low")

    def __init__(self, items: list[Item], low: int | None = None) -> None:
        self.items = items
        self.low: int = min(map(_SEQ, items)) if low is None else low


class _Branch:
    __slots__ = ("children", "highs", "low", "lows")

    def __init__(
        self,
        children: list[Node],
        highs: list[Probe] | None = None,
        lows: list[int] | None = None,
        low: int | None = None,
    ) -> None:
        self.children = children
        self.highs: list[Probe] = [_high(c) for c in children] if highs is None else highs
        self.lows: list[int] = [c.low for c in children] if lows is None else lows
        self.low: int = min(self.lows) if low is None else low


Node = _Leaf | _Branch


def _high(node: Node) -> Probe:
    """The probe of the largest item under ``node``."""
    if type(node) is _Branch:
        return node.highs[-1]
    item = node.items[-1]  # type: ignore[union-attr]
    return (item[0], item[1])


def _size(node: Node) -> int:
    return len(node.items) if type(node) is _Leaf else len(node.children)  # type: ignore[union-attr]


def _halves(kind: type[Node], parts: list[Any]) -> list[Node]:
    """Nodes of ``kind`` holding ``parts``: one, or two halves when over-full."""
    if len(parts) <= _MAX:
        return [kind(parts)]
    mid = len(parts) // 2
    return [kind(parts[:mid]), kind(parts[mid:])]


def _insert(node: Node, item: Item, probe: Probe) -> list[Node]:
    seq = item[1]
    if type(node) is _Leaf:
        items = node.items.copy()
        items.insert(bisect_right(items, probe), item)
        if len(items) > _MAX:
            return _halves(_Leaf, items)
        low = node.low
        return [_Leaf(items, seq if seq < low else low)]
    branch: _Branch = node  # type: ignore[assignment]
    highs = branch.highs
    i = bisect_left(highs, probe)
    if i == len(highs):
        i -= 1
    sub = _insert(branch.children[i], item, probe)
    children = branch.children.copy()
    highs = highs.copy()
    lows = branch.lows.copy()
    if len(sub) == 1:
        children[i] = child = sub[0]
        if probe > highs[i]:
            highs[i] = probe
        lows[i] = child.low
    else:
        children[i : i + 1] = sub
        highs[i : i + 1] = [_high(c) for c in sub]
        lows[i : i + 1] = [c.low for c in sub]
        if len(children) > _MAX:
            return _halves(_Branch, children)
    low = branch.low
    return [_Branch(children, highs, lows, seq if seq < low else low)]


def _delete(node: Node, probe: Probe) -> Node | None:
    """``node`` without the item at ``probe`` (KeyError if absent); None when it empties."""
    seq = probe[1]
    if type(node) is _Leaf:
        items = node.items
        i = bisect_left(items, probe)
        if i == len(items) or (items[i][0], items[i][1]) != probe:
            raise KeyError(probe)
        if len(items) == 1:
            return None
        rest = items[:i] + items[i + 1 :]
        return _Leaf(rest, None if seq == node.low else node.low)
    branch: _Branch = node  # type: ignore[assignment]
    i = bisect_left(branch.highs, probe)
    if i == len(branch.children):
        raise KeyError(probe)
    child = _delete(branch.children[i], probe)
    children = branch.children.copy()
    if child is None:
        del children[i]
        return _Branch(children) if children else None
    if _size(child) < _MIN and len(children) > 1:
        # Merge the thin child with a neighbour (splitting again if that over-fills).
        lo = i - 1 if i else i
        a, b = (children[lo], child) if lo < i else (child, children[i + 1])
        if type(a) is _Leaf:
            parts: list[Any] = a.items + b.items  # type: ignore[union-attr]
        else:
            parts = a.children + b.children  # type: ignore[union-attr]
        children[lo : lo + 2] = _halves(type(a), parts)
        return _Branch(children)
    children[i] = child
    highs = branch.highs.copy()
    highs[i] = _high(child)
    lows = branch.lows.copy()
    lows[i] = child.low
    return _Branch(children, highs, lows, None if seq == branch.low else branch.low)


def _iter_desc(node: Node) -> Iterator[Item]:
    if type(node) is _Leaf:
        yield from reversed(node.items)
    else:
        for child in reversed(node.children):  # type: ignore[union-attr]
            yield from _iter_desc(child)


def _iter_from(node: Node, probe: Probe) -> Iterator[Item]:
    """Items >= ``probe``, ascending."""
    if type(node) is _Leaf:
        items = node.items
        yield from items[bisect_left(items, probe) :]
        return
    branch: _Branch = node  # type: ignore[assignment]
    i = bisect_left(branch.highs, probe)
    children = branch.children
    if i < len(children):
        yield from _iter_from(children[i], probe)
        for child in children[i + 1 :]:
            yield from _iter_all(child)


def _iter_all(node: Node) -> Iterator[Item]:
    if type(node) is _Leaf:
        yield from node.items
    else:
        for child in node.children:  # type: ignore[union-attr]
            yield from _iter_all(child)


def _collect(node: Node, out: list[Item]) -> None:
    if type(node) is _Leaf:
        out.extend(node.items)
    else:
        for child in node.children:  # type: ignore[union-attr]
            _collect(child, out)


def _collect_from(node: Node, probe: Probe, out: list[Item]) -> None:
    if type(node) is _Leaf:
        items = node.items
        out.extend(items[bisect_left(items, probe) :])
        return
    branch: _Branch = node  # type: ignore[assignment]
    i = bisect_left(branch.highs, probe)
    children = branch.children
    if i < len(children):
        _collect_from(children[i], probe, out)
        for child in children[i + 1 :]:
            _collect(child, out)


def _earliest(node: Node) -> Item:
    """The item with the smallest seq under ``node``."""
    while type(node) is _Branch:
        node = node.children[node.lows.index(node.low)]
    return min(node.items, key=_SEQ)  # type: ignore[union-attr]


def _earliest_in(node: Node, lo: Probe, hi: Probe) -> Item | None:
    """The item with the smallest seq among those with ``lo <= probe < hi``."""
    if type(node) is _Leaf:
        items = node.items
        i, j = bisect_left(items, lo), bisect_left(items, hi)
        return min(items[i:j], key=_SEQ) if i < j else None
    branch: _Branch = node  # type: ignore[assignment]
    highs, children = branch.highs, branch.children
    i = bisect_left(highs, lo)  # the first child holding anything >= lo
    if i == len(children):
        return None
    j = bisect_left(highs, hi)  # children strictly between i and j lie wholly in range
    if i == j:
        return _earliest_in(children[i], lo, hi)
    found = [_earliest_in(children[i], lo, hi)]
    if j > i + 1:
        lows = branch.lows[i + 1 : j]
        found.append(_earliest(children[i + 1 + lows.index(min(lows))]))
    if j < len(children):
        found.append(_earliest_in(children[j], lo, hi))
    return min((f for f in found if f is not None), key=_SEQ, default=None)


class Tree:
    """An immutable sorted collection of ``(sort_key, seq, ...)`` items.

    >>> t = Tree().insert((2.0, 0, "a")).insert((1.0, 1, "b"))
    >>> [i[2] for i in t.descending()], len(t.delete((2.0, 0)))
    (['a', 'b'], 1)
    """

    __slots__ = ("_len", "_root")

    _root: Node | None
    _len: int

    def __init__(self, items: list[Item] | None = None) -> None:
        """A tree of ``items``, which must already be sorted by ``(sort_key, seq)``."""
        self._root = _build(items) if items else None
        self._len = len(items) if items else 0

    @classmethod
    def _make(cls, root: Node | None, length: int) -> Tree:
        t: Tree = object.__new__(cls)
        t._root = root
        t._len = length
        return t

    def __len__(self) -> int:
        return self._len

    def insert(self, item: Item) -> Tree:
        """A tree with ``item`` added (its ``(sort_key, seq)`` must be new)."""
        probe = (item[0], item[1])
        root = self._root
        if root is None:
            return self._make(_Leaf([item]), 1)
        nodes = _insert(root, item, probe)
        return self._make(nodes[0] if len(nodes) == 1 else _Branch(nodes), self._len + 1)

    def delete(self, probe: Probe) -> Tree:
        """A tree without the item at ``probe``; KeyError if there is none."""
        if self._root is None:
            raise KeyError(probe)
        root = _delete(self._root, probe)
        while type(root) is _Branch and len(root.children) == 1:
            root = root.children[0]
        return self._make(root, self._len - 1)

    def descending(self) -> Iterator[Item]:
        """Every item, largest first (lazily)."""
        return _iter_desc(self._root) if self._root is not None else iter(())

    def ascending_from(self, probe: Probe) -> Iterator[Item]:
        """Items at or above ``probe``, smallest first (lazily)."""
        return _iter_from(self._root, probe) if self._root is not None else iter(())

    def first(self) -> Item | None:
        """The smallest item, or None when empty."""
        node = self._root
        if node is None:
            return None
        while type(node) is _Branch:
            node = node.children[0]
        return node.items[0]  # type: ignore[union-attr]

    def to_list(self) -> list[Item]:
        """Every item, ascending, in one list."""
        out: list[Item] = []
        if self._root is not None:
            _collect(self._root, out)
        return out

    def at_least(self, probe: Probe) -> list[Item]:
        """Items at or above ``probe``, ascending, in one list."""
        out: list[Item] = []
        if self._root is not None:
            _collect_from(self._root, probe, out)
        return out

    def earliest(self, lo: Probe, hi: Probe) -> Item | None:
        """The item with the smallest seq among those with ``lo <= probe < hi``; None if none."""
        return None if self._root is None else _earliest_in(self._root, lo, hi)


def _build(items: list[Item]) -> Node:
    """Bulk-load sorted ``items`` bottom-up, three quarters full."""
    step = _MAX * 3 // 4
    level: list[Node] = [_Leaf(items[i : i + step]) for i in range(0, len(items), step)]
    while len(level) > 1:
        level = [_Branch(level[i : i + step]) for i in range(0, len(level), step)]
    return level[0]
