"""A persistent B+tree of sorted items: the order index behind ``Memory``.

Items are tuples whose first two fields, ``(sort_key, seq)``, are unique and
totally ordered; the rest rides along (the index stores ``(key, seq, entry)``).
Searches use the two-field *probe* ``(sort_key, seq)``, so the payload is never
compared.  Every branch also knows the smallest ``seq`` under each child, which
answers "the earliest-put item in a key range" in O(log n).

Nodes are the interpreter's own lists: a leaf is a list of items, a branch of
m children one flat list ``highs + children + lows`` (each child's largest
probe, the children, each child's smallest seq), searched with ``bisect`` over
its first m slots.  One list rather than three: a write copies one list per
level, and leaves the collector one object to track instead of four.  A write
copies the nodes on one root-to-leaf path (lists of at most ``3 * _MAX``
references, copied at C speed) and shares the rest, so an insert or a delete
costs O(log n) and leaves every earlier tree intact.  Nodes are never mutated
once a tree holds them.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from operator import itemgetter
from typing import Any

Item = tuple[Any, ...]
Probe = tuple[Any, Any]
Leaf = list[Item]
Branch = list[Any]  # highs + children + lows, m of each
Node = Any  # Leaf or Branch: which one is known from the depth, kept loose for speed.

# Node capacity: 64 keeps the copies on a write short while a 100,000-item
# tree is only three levels deep.
_MAX = 64
_MIN = _MAX // 4
_SEQ = itemgetter(1)
_BOTTOM: Probe = (-float("inf"), -1)  # below every probe


def _branch(children: list[Node], highs: list[Probe], lows: list[int]) -> Branch:
    """A branch of ``children``, given their largest probes and smallest seqs."""
    return highs + children + lows


def _parts(branch: Branch) -> tuple[list[Node], list[Probe], list[int]]:
    """``(children, highs, lows)`` of ``branch``, as new lists."""
    m = len(branch) // 3
    return branch[m : 2 * m], branch[:m], branch[2 * m :]


def _children(branch: Branch) -> list[Node]:
    m = len(branch) // 3
    return branch[m : 2 * m]


def _size(node: Node, leaf: bool) -> int:
    """How many items (a leaf) or children (a branch) ``node`` holds."""
    return len(node) if leaf else len(node) // 3


def _high(node: Node, leaf: bool) -> Probe:
    """The probe of the largest item under ``node``."""
    if leaf:
        item = node[-1]
        return (item[0], item[1])
    high: Probe = node[len(node) // 3 - 1]
    return high


def _low(node: Node, leaf: bool) -> int:
    """The smallest seq under ``node``."""
    low: int = min(map(_SEQ, node)) if leaf else min(node[2 * (len(node) // 3) :])
    return low


def _pieces(parts: Any, leaf: bool) -> list[Node]:
    """``parts`` (a leaf's items, or a branch's ``(children, highs, lows)``) as one node, or
    two halves when over-full."""
    if leaf:
        if len(parts) <= _MAX:
            return [parts]
        mid = len(parts) // 2
        return [parts[:mid], parts[mid:]]
    children, highs, lows = parts
    if len(children) <= _MAX:
        return [_branch(children, highs, lows)]
    mid = len(children) // 2
    return [_branch(children[:mid], highs[:mid], lows[:mid]), _branch(children[mid:], highs[mid:], lows[mid:])]


class Tree:
    """An immutable sorted collection of ``(sort_key, seq, ...)`` items.

    >>> t = Tree().insert((2.0, 0, "a")).insert((1.0, 1, "b"))
    >>> [i[2] for i in t.descending()], len(t.delete((2.0, 0)))
    (['a', 'b'], 1)
    """

    __slots__ = ("_height", "_len", "_root")

    _root: Node | None
    _height: int  # branch levels above the leaves
    _len: int

    def __init__(self, items: list[Item] | None = None) -> None:
        """A tree of ``items``, which must already be sorted by ``(sort_key, seq)``."""
        self._root, self._height = _build(items) if items else (None, 0)
        self._len = len(items) if items else 0

    # The constructor without __init__ that every write uses, as _map's PersistentMap._make.
    @classmethod
    def _make(cls, root: Node | None, height: int, length: int) -> Tree:
        t: Tree = object.__new__(cls)
        t._root = root
        t._height = height
        t._len = length
        return t

    def __len__(self) -> int:
        return self._len

    def insert(self, item: Item) -> Tree:
        """A tree with ``item`` added (its ``(sort_key, seq)`` must be new)."""
        return self.insert_beside(item)[0]

    def insert_beside(self, item: Item) -> tuple[Tree, Item | None, Item | None]:
        """:meth:`insert`, and the items beside ``item`` in its leaf: ``(tree, before, after)``.

        ``before`` is None when ``item`` is first in its leaf (the item before it, if any, is
        in another leaf); ``after`` is None only when ``item`` is the largest of the tree.
        """
        node = self._root
        if node is None:
            return self._make([item], 0, 1), None, None
        probe = (item[0], item[1])
        seq = item[1]
        path = []
        for _ in range(self._height):
            m = len(node) // 3
            i = bisect_left(node, probe, 0, m)
            if i == m:
                i -= 1
            path.append((node, i))
            node = node[m + i]
        items = node.copy()
        j = bisect_right(items, probe)
        items.insert(j, item)
        before = items[j - 1] if j else None
        after = items[j + 1] if j + 1 < len(items) else None
        # ``sub`` is the new node in place of the old one, ``extra`` its right half when it split
        # (what _pieces does, written out: this is the hottest write of an indexed memory).
        sub: Node = items
        extra: Node | None = None
        if len(items) > _MAX:
            mid = len(items) // 2
            sub, extra = items[:mid], items[mid:]
        leaf = True
        for branch, i in reversed(path):
            if extra is None:
                m = len(branch) // 3
                new = branch.copy()
                new[m + i] = sub
                if probe > new[i]:
                    new[i] = probe
                if seq < new[2 * m + i]:
                    new[2 * m + i] = seq
                sub = new
            else:
                children, highs, lows = _parts(branch)
                children[i : i + 1] = (sub, extra)
                highs[i : i + 1] = (_high(sub, leaf), _high(extra, leaf))
                lows[i : i + 1] = (_low(sub, leaf), _low(extra, leaf))
                if len(children) > _MAX:
                    mid = len(children) // 2
                    sub = _branch(children[:mid], highs[:mid], lows[:mid])
                    extra = _branch(children[mid:], highs[mid:], lows[mid:])
                else:
                    sub, extra = _branch(children, highs, lows), None
            leaf = False
        height = self._height
        if extra is not None:
            sub = _branch([sub, extra], [_high(sub, leaf), _high(extra, leaf)], [_low(sub, leaf), _low(extra, leaf)])
            height += 1
        return self._make(sub, height, self._len + 1), before, after

    def delete(self, probe: Probe) -> Tree:
        """A tree without the item at ``probe``; KeyError if there is none."""
        node = self._root
        if node is None:
            raise KeyError(probe)
        path = []
        for _ in range(self._height):
            m = len(node) // 3
            i = bisect_left(node, probe, 0, m)
            if i == m:
                raise KeyError(probe)
            path.append((node, i))
            node = node[m + i]
        j = bisect_left(node, probe)
        if j == len(node) or (node[j][0], node[j][1]) != probe:
            raise KeyError(probe)
        sub: Node | None = node[:j] + node[j + 1 :] or None
        seq = probe[1]
        leaf = True
        for branch, i in reversed(path):
            m = len(branch) // 3
            if sub is None:  # the child went: drop its slot from each third
                sub = branch[:i] + branch[i + 1 : m + i] + branch[m + i + 1 : 2 * m + i] + branch[2 * m + i + 1 :]
                sub = sub or None
            else:
                new = branch.copy()
                new[m + i] = sub
                if new[i] == probe:  # the largest item went: the child's high is the one before it
                    new[i] = _high(sub, leaf)
                if new[2 * m + i] == seq:
                    new[2 * m + i] = _low(sub, leaf)
                if _size(sub, leaf) < _MIN and m > 1:
                    # Merge the thin child with a neighbour (splitting again if that over-fills).
                    children, highs, lows = _parts(new)
                    lo = i - 1 if i else i
                    a, b = children[lo], children[lo + 1]
                    parts = a + b if leaf else tuple(map(list.__add__, _parts(a), _parts(b)))
                    merged = _pieces(parts, leaf)
                    children[lo : lo + 2] = merged
                    highs[lo : lo + 2] = [_high(c, leaf) for c in merged]
                    lows[lo : lo + 2] = [_low(c, leaf) for c in merged]
                    new = _branch(children, highs, lows)
                sub = new
            leaf = False
        height = self._height
        while sub is not None and height and len(sub) == 3:  # a root of one child: the child is the root
            sub = sub[1]
            height -= 1
        return self._make(sub, height if sub is not None else 0, self._len - 1)

    def edited(
        self, gone: AbstractSet[int], replaced: dict[int, Any], added: list[Item]
    ) -> tuple[Tree, list[list[Item]], list[Item]]:
        """Many writes in one pass: without the items whose seq is in ``gone``, the payload of
        those whose seq is in ``replaced`` swapped for ``replaced[seq]`` (key and seq kept), and
        with ``added`` (sorted by probe, probes new) inserted.

        Returns ``(tree, windows, olds)``: ``windows`` holds, for every leaf that took added
        items, its items with the item before and the one after it in the tree (every pair of
        neighbours an added item has), and ``olds`` the items whose payload was replaced.

        Only the leaves that change are copied (once each); the others are shared, and the few
        branches above them are rebuilt.  O(n / _MAX + (m + c) log m) for m writes touching c
        leaves, with an O(n) membership scan at C speed: meant for writes of many items.
        """
        if self._root is None:
            return (Tree(added), [added], []) if added else (self, [], [])
        leaves, highs, lows = _leaf_level(self._root, self._height)
        per_leaf: dict[int, list[Item]] = {}
        if added:
            last = len(leaves) - 1
            for item in added:
                i = bisect_left(highs, (item[0], item[1]))
                per_leaf.setdefault(i if i < last else last, []).append(item)
        olds: list[Item] = []
        out: list[Leaf] = []
        out_highs: list[Probe] = []
        out_lows: list[int] = []
        took: list[int] = []  # indices in out of the leaves that took added items
        for i, leaf in enumerate(leaves):
            extra = per_leaf.get(i)
            hit_gone = bool(gone) and not gone.isdisjoint(map(_SEQ, leaf))
            hit_replaced = bool(replaced) and not replaced.keys().isdisjoint(map(_SEQ, leaf))
            if not (hit_gone or hit_replaced or extra):
                out.append(leaf)
                out_highs.append(highs[i])
                out_lows.append(lows[i])
                continue
            new: Leaf = [item for item in leaf if item[1] not in gone] if hit_gone else leaf.copy()
            if hit_replaced:
                for j, item in enumerate(new):
                    payload = replaced.get(item[1], _ABSENT)
                    if payload is not _ABSENT:
                        olds.append(item)
                        new[j] = (item[0], item[1], payload)
            if extra:
                new += extra
                new.sort()  # two sorted runs: merged in linear time
                took.append(len(out))
            if new:
                out.append(new)
                out_highs.append(_high(new, True))
                out_lows.append(_low(new, True))
        windows = [
            ([out[j - 1][-1]] if j else []) + out[j] + ([out[j + 1][0]] if j + 1 < len(out) else []) for j in took
        ]
        return _rebuilt(out, out_highs, out_lows), windows, olds

    def descending(self) -> Iterator[Item]:
        """Every item, largest first (lazily)."""
        return _iter_desc(self._root, self._height) if self._root is not None else iter(())

    def descending_below(self, probe: Probe) -> Iterator[Item]:
        """Items below ``probe``, largest first (lazily): a seek past a run of equal sort keys."""
        return _iter_desc_below(self._root, self._height, probe) if self._root is not None else iter(())

    def ceiling(self, probe: Probe) -> Item | None:
        """The smallest item at or above ``probe``; None if there is none.  O(log n)."""
        node = self._root
        if node is None:
            return None
        for _ in range(self._height):
            m = len(node) // 3
            i = bisect_left(node, probe, 0, m)
            if i == m:
                return None
            node = node[m + i]
        j = bisect_left(node, probe)
        found: Item | None = node[j] if j < len(node) else None
        return found

    def ascending_from(self, probe: Probe) -> Iterator[Item]:
        """Items at or above ``probe``, smallest first (lazily)."""
        return _iter_from(self._root, self._height, probe) if self._root is not None else iter(())

    def first(self) -> Item | None:
        """The smallest item, or None when empty."""
        node = self._root
        if node is None:
            return None
        for _ in range(self._height):
            node = node[len(node) // 3]
        first: Item = node[0]
        return first

    def to_list(self) -> list[Item]:
        """Every item, ascending, in one list."""
        out: list[Item] = []
        if self._root is not None:
            _collect(self._root, self._height, out)
        return out

    def at_least(self, probe: Probe) -> list[Item]:
        """Items at or above ``probe``, ascending, in one list."""
        out: list[Item] = []
        if self._root is not None:
            _collect_from(self._root, self._height, probe, out)
        return out

    def earliest(self, lo: Probe, hi: Probe) -> Item | None:
        """The item with the smallest seq among those with ``lo <= probe < hi``; None if none."""
        return None if self._root is None else _earliest_in(self._root, self._height, lo, hi)


def _iter_desc(node: Node, height: int) -> Iterator[Item]:
    if not height:
        yield from reversed(node)
    else:
        for child in reversed(_children(node)):
            yield from _iter_desc(child, height - 1)


def _iter_desc_below(node: Node, height: int, probe: Probe) -> Iterator[Item]:
    """Items < ``probe``, descending."""
    if not height:
        yield from reversed(node[: bisect_left(node, probe)])
        return
    m = len(node) // 3
    i = bisect_left(node, probe, 0, m)  # children before i lie wholly below probe
    if i < m:
        yield from _iter_desc_below(node[m + i], height - 1, probe)
    for child in reversed(node[m : m + i]):
        yield from _iter_desc(child, height - 1)


def _iter_from(node: Node, height: int, probe: Probe) -> Iterator[Item]:
    """Items >= ``probe``, ascending."""
    if not height:
        yield from node[bisect_left(node, probe) :]
        return
    m = len(node) // 3
    i = bisect_left(node, probe, 0, m)
    if i < m:
        yield from _iter_from(node[m + i], height - 1, probe)
        for child in node[m + i + 1 : 2 * m]:
            yield from _iter_from(child, height - 1, _BOTTOM)


def _collect(node: Node, height: int, out: list[Item]) -> None:
    if not height:
        out.extend(node)
    else:
        for child in _children(node):
            _collect(child, height - 1, out)


def _collect_from(node: Node, height: int, probe: Probe, out: list[Item]) -> None:
    if not height:
        out.extend(node[bisect_left(node, probe) :])
        return
    m = len(node) // 3
    i = bisect_left(node, probe, 0, m)
    if i < m:
        _collect_from(node[m + i], height - 1, probe, out)
        for child in node[m + i + 1 : 2 * m]:
            _collect(child, height - 1, out)


def _earliest(node: Node, height: int) -> Item:
    """The item with the smallest seq under ``node``."""
    for _ in range(height):
        m = len(node) // 3
        lows = node[2 * m :]
        node = node[m + lows.index(min(lows))]
    earliest: Item = min(node, key=_SEQ)
    return earliest


def _earliest_in(node: Node, height: int, lo: Probe, hi: Probe) -> Item | None:
    """The item with the smallest seq among those with ``lo <= probe < hi``."""
    if not height:
        i, j = bisect_left(node, lo), bisect_left(node, hi)
        return min(node[i:j], key=_SEQ) if i < j else None
    children, highs, lows = _parts(node)
    i = bisect_left(highs, lo)  # the first child holding anything >= lo
    if i == len(children):
        return None
    j = bisect_left(highs, hi)  # children strictly between i and j lie wholly in range
    if i == j:
        return _earliest_in(children[i], height - 1, lo, hi)
    found = [_earliest_in(children[i], height - 1, lo, hi)]
    if j > i + 1:
        inner = lows[i + 1 : j]
        found.append(_earliest(children[i + 1 + inner.index(min(inner))], height - 1))
    if j < len(children):
        found.append(_earliest_in(children[j], height - 1, lo, hi))
    return min((f for f in found if f is not None), key=_SEQ, default=None)


_ABSENT: Any = object()


def _leaf_level(root: Node, height: int) -> tuple[list[Leaf], list[Probe], list[int]]:
    """Every leaf under ``root``, in order, with its largest probe and smallest seq."""
    if not height:
        return [root], [_high(root, True)], [_low(root, True)]
    nodes = [root]
    for _ in range(height - 1):
        nodes = [child for node in nodes for child in _children(node)]
    parts = list(map(_parts, nodes))
    return (
        [leaf for children, _, _ in parts for leaf in children],
        [high for _, highs, _ in parts for high in highs],
        [low for _, _, lows in parts for low in lows],
    )


def _rebuilt(leaves: list[Leaf], highs: list[Probe], lows: list[int]) -> Tree:
    """A tree of ``leaves`` (in order; any sizes, none empty; with their probes and seqs):
    over-full leaves split, thin ones merged with a neighbour, branches built above them."""
    fit: list[Leaf] = []
    fit_highs: list[Probe] = []
    fit_lows: list[int] = []
    step = _MAX * 3 // 4
    for leaf, high, low in zip(leaves, highs, lows):
        if fit and (len(leaf) < _MIN or len(fit[-1]) < _MIN):
            leaf = fit.pop() + leaf
            fit_highs.pop()
            low = min(low, fit_lows.pop())
            if len(leaf) <= _MAX:
                fit.append(leaf)
                fit_highs.append(high)
                fit_lows.append(low)
                continue
        if len(leaf) <= _MAX:
            fit.append(leaf)
            fit_highs.append(high)
            fit_lows.append(low)
            continue
        parts = -(-len(leaf) // step)
        size = len(leaf)
        for j in range(parts):
            piece = leaf[size * j // parts : size * (j + 1) // parts]
            fit.append(piece)
            fit_highs.append(_high(piece, True))
            fit_lows.append(_low(piece, True))
    if not fit:
        return Tree()
    level: list[Node] = fit
    level_highs, level_lows = fit_highs, fit_lows
    height = 0
    length = sum(map(len, fit))
    while len(level) > 1:
        nodes: list[Node] = []
        node_highs: list[Probe] = []
        node_lows: list[int] = []
        for i in range(0, len(level), step):
            group_highs, group_lows = level_highs[i : i + step], level_lows[i : i + step]
            nodes.append(_branch(level[i : i + step], group_highs, group_lows))
            node_highs.append(group_highs[-1])
            node_lows.append(min(group_lows))
        level, level_highs, level_lows = nodes, node_highs, node_lows
        height += 1
    return Tree._make(level[0], height, length)


def _build(items: list[Item]) -> tuple[Node, int]:
    """Bulk-load sorted ``items`` bottom-up, three quarters full: ``(root, height)``."""
    step = _MAX * 3 // 4
    level: list[Node] = [items[i : i + step] for i in range(0, len(items), step)]
    leaf = True
    height = 0
    while len(level) > 1:
        level = [
            _branch(group, [_high(c, leaf) for c in group], [_low(c, leaf) for c in group])
            for group in (level[i : i + step] for i in range(0, len(level), step))
        ]
        leaf = False
        height += 1
    return level[0], height
