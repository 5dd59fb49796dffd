"""A LangGraph store (``BaseStore``) kept in lethe: :class:`LetheStore`.

LangGraph agents, ``langmem`` and LangGraph's server keep long-term memory in a
``langgraph.store.base.BaseStore``.  :class:`LetheStore` is one, over a
``lethe.store`` engine (or this process alone): each namespace is one lethe
memory (a :class:`~lethe.store.Shared`), each item one entry under its key.

* Without a ``memory`` template it behaves as LangGraph's ``InMemoryStore`` does
  (nothing is forgotten; a search's scores are cosine similarities), and it
  passes LangGraph's own store tests, in this process and over SQLite.
* With one, each namespace is a bounded, decaying memory: at its capacity the
  lowest-scored item is evicted (through ``on_evict`` and the store's eviction
  feed, :meth:`~lethe.store.Shared.evictions`), a search ranks by similarity plus
  ``decay_weight`` times the item's decay score, and reads that refresh (LangGraph's
  ``refresh_ttl``, on by default) rehearse what they return.
* Every write of a batch to a namespace is one commit, never lost: two processes
  that ``put`` into one namespace both land.  A get-then-put through any
  ``BaseStore`` still loses updates when two callers interleave (each writes back
  what it read, so the later erases the earlier); :meth:`LetheStore.update` is the
  atomic read-modify-write that does not.

Install with ``pip install 'lethe-decay[langgraph]'``.  See ``docs/agents.md``.

>>> from lethe.integrations.langgraph import LetheStore
>>> store = LetheStore()
>>> store.put(("user-7", "memories"), "diet", {"text": "vegetarian since 2019"})
>>> store.get(("user-7", "memories"), "diet").value
{'text': 'vegetarian since 2019'}
>>> store.update(("user-7", "visits"), "count", lambda v: {"n": (v or {"n": 0})["n"] + 1}).value
{'n': 1}
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any, NamedTuple, TypeVar

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from lethe import Entry, Memory, Vector
from lethe._core.vector import cosine, query_vector
from lethe.store import HistoryRewound, InMemoryStore, MemoryGone, Shared, Store, StoreError
from lethe.store._records import utf8

__all__ = ["NAME_PREFIX", "LetheStore"]

NAME_PREFIX = "langgraph:"
"""The prefix of the memory names a :class:`LetheStore` keeps in its engine: a namespace
``("user-7", "memories")`` is the memory ``'langgraph:["user-7","memories"]'``."""

_Value = dict[str, Any]
_Namespace = tuple[str, ...]
_T = TypeVar("_T")

# The item's LangGraph bookkeeping, in its entry's metadata (the value stays the caller's dict).
_CREATED, _UPDATED, _TTL, _VECTORS = "created_at", "updated_at", "ttl_minutes", "vectors"
# True when one of the item's texts embedded to all zeros: no lethe Vector can hold it, yet
# InMemoryStore ranks it at cosine 0.0 (not with the unembedded items at the end).
_ZERO = "zero_vector"
#: How many runs of queued async batches go at once on one event loop (each in a worker thread).
_DRAINS = 4
#: How many namespaces' replicas a LetheStore keeps, the latest used: a server that serves a
#: namespace per user keeps a bounded number of them in memory, not every one it ever saw.
_REPLICAS = 1024
# What LangGraph's SQL stores accept as a filter key (a dotted path of JSON property names):
# a filter that works here works there.
_FILTER_KEY = re.compile(r"[\w-]+(?:\.[\w-]+)*\Z")
_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


def _name(namespace: _Namespace) -> str:
    return NAME_PREFIX + json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


def _namespace(name: str) -> _Namespace | None:
    """The namespace a memory name stands for (None: a memory that is not a LetheStore's)."""
    if not name.startswith(NAME_PREFIX):
        return None
    try:
        labels = json.loads(name[len(NAME_PREFIX) :])
    except ValueError:
        return None
    if not isinstance(labels, list) or not labels or not all(isinstance(label, str) for label in labels):
        return None
    return tuple(labels)


def _path(condition: MatchCondition) -> _Namespace:
    """The labels of the condition's path: a str is one label (LangGraph's own tests pass
    ``MatchCondition("suffix", "public")``), not one label per letter."""
    return (condition.path,) if isinstance(condition.path, str) else tuple(condition.path)


def _matches(condition: MatchCondition, namespace: _Namespace) -> bool:
    """Whether ``namespace`` has the condition's path (``"*"``: any one label) at its start or end."""
    path = _path(condition)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p == "*" or p == label for p, label in zip(path, part))


def _json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    return bool(a == b)


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _compare(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return _json_equal(value, operand)
    if operator == "$ne":
        return not _json_equal(value, operand)
    a, b = _number(value), _number(operand)
    if a is None or b is None:  # strings compare with strings; other kinds never order
        if not (isinstance(value, str) and isinstance(operand, str)):
            return False
        a, b = value, operand  # type: ignore[assignment]
    if operator == "$gt":
        return a > b  # type: ignore[operator]
    if operator == "$gte":
        return a >= b  # type: ignore[operator]
    if operator == "$lt":
        return a < b  # type: ignore[operator]
    return a <= b  # type: ignore[operator]


def _satisfies(value: Any, wanted: Any) -> bool:
    """Whether ``value`` matches the filter value ``wanted`` (a JSONB containment, as LangGraph's stores do)."""
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_compare(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, Mapping) and all(_satisfies(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(wanted)
            and all(_satisfies(v, w) for v, w in zip(value, wanted))
        )
    return _json_equal(value, wanted)


def _at_path(value: Mapping[str, Any], key: str) -> Any:
    found: Any = value
    for part in key.split("."):
        if not isinstance(found, Mapping):
            return None
        found = found.get(part)
    return found


def _checked_filter(filter: Mapping[str, Any] | None) -> Callable[[Mapping[str, Any]], bool] | None:
    """A predicate over item values, or None for no filter.

    Raises:
        ValueError: a key that is not a dotted path of names, or an unknown ``$`` operator.
    """
    if not filter:
        return None
    for key, wanted in filter.items():
        if not isinstance(key, str) or not _FILTER_KEY.match(key):
            raise ValueError(
                f"Invalid filter key: {key!r}. Filter keys are dotted paths of JSON property names "
                "(letters, digits, underscores and hyphens)."
            )
        _checked_condition(key, wanted)
    pairs = list(filter.items())
    return lambda value: all(_satisfies(_at_path(value, k), w) for k, w in pairs)


def _checked_condition(key: str, wanted: Any) -> None:
    """Refuse a condition (at the filter key ``key``) that names an unknown operator: one
    starting with ``$``, or a plain key beside operators (a condition is operators, or a
    JSON value to match), at any depth.

    Raises:
        ValueError: naming the filter key and the operator.
    """
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            unknown = sorted(str(k) for k in wanted if k not in _OPERATORS)
            if unknown:
                raise ValueError(f"filter[{key!r}]: unsupported operator {unknown[0]!r} (use {sorted(_OPERATORS)})")
        else:
            for inner in wanted.values():
                _checked_condition(key, inner)
    elif isinstance(wanted, (list, tuple)):
        for inner in wanted:
            _checked_condition(key, inner)


#: The longest ttl, in minutes, any deadline can have: all of ``datetime``'s range (about 10,000
#: years).  One longer is no deadline from any clock reading (nor a ``timedelta``).
_LONGEST_MINUTES = (datetime.max - datetime.min) / timedelta(minutes=1)


def _minutes(ttl: Any) -> bool:
    """Whether ``ttl`` is a number of minutes a deadline can be: > 0 and within ``datetime``'s range."""
    number = _number(ttl)
    return number is not None and 0 < number <= _LONGEST_MINUTES


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat()


def _stamp(meta: Mapping[str, Any], field: str, fallback: datetime) -> datetime:
    """The instant ``meta[field]`` holds as a put writes it (an ISO 8601 text with its offset);
    ``fallback`` when it holds none, or something else another client of the memory put there."""
    text = meta.get(field)
    if type(text) is str:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return fallback
        if moment.utcoffset() is not None:
            return moment
    return fallback


def _times(entry: Entry[str, _Value]) -> tuple[datetime, datetime]:
    """When the item was created and last written (its entry's put time, before a re-put)."""
    meta = entry.metadata
    return _stamp(meta, _CREATED, entry.inserted_at), _stamp(meta, _UPDATED, entry.inserted_at)


def _value(entry: Entry[str, Any]) -> _Value:
    """A copy of the entry's value as an item's value, a JSON object: one that another client of
    the memory put as something else (a text, a list) shows as ``{"value": ...}``."""
    value = copy.deepcopy(entry.value)
    return value if type(value) is dict else {"value": value}


def _item(namespace: _Namespace, entry: Entry[str, _Value]) -> Item:
    """The entry as LangGraph's ``Item``, with a copy of its value (the entry's stays as it is)."""
    created, updated = _times(entry)
    return Item(value=_value(entry), key=entry.key, namespace=namespace, created_at=created, updated_at=updated)


def _hit(namespace: _Namespace, entry: Entry[str, _Value], score: float | None) -> SearchItem:
    """The entry as LangGraph's ``SearchItem`` (``score`` None: found without a query, or unranked)."""
    created, updated = _times(entry)
    return SearchItem(
        namespace=namespace,
        key=entry.key,
        value=_value(entry),
        created_at=created,
        updated_at=updated,
        score=score,
    )


def _json_value(value: Mapping[str, Any]) -> _Value:
    """``value`` as the JSON object it will be kept as (a copy: the caller's dict may change).

    Raises:
        TypeError: ``value`` holds something JSON cannot (a set, a datetime, an object).
        ValueError: a NaN or an infinity, or a loop.
    """
    try:
        text = json.dumps(value, allow_nan=False)
    except TypeError as exc:
        raise TypeError(f"value must be a JSON object: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"value must be a JSON object: {exc}") from None
    except RecursionError:
        text = None
    made: _Value | None = None if text is None else json.loads(text)
    if made is None or _depth(made) > _DEEPEST:  # (as kept: a tuple is kept as a list)
        raise ValueError(f"value must be a JSON object nested at most {_DEEPEST} levels deep")
    return made


#: How deeply a value may nest: every read copies it out, and a copy recurses.
_DEEPEST = 200


def _depth(value: object) -> int:
    """How deeply ``value``'s dicts and lists nest (1: none inside), found without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth <= _DEEPEST:  # (deeper is refused: no need to walk on)
            children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


class _Write(NamedTuple):
    """One put of a batch (``value`` None: a delete), its value as kept, and the texts to embed."""

    op: PutOp
    value: _Value | None
    texts: list[str]


class _Plan(NamedTuple):
    """What a batch needs before it touches the store: its puts (the last per key) and the texts
    and queries to embed, found without reading anything."""

    writes: dict[tuple[_Namespace, str], _Write]
    texts: list[str]
    queries: list[str]


#: A batch's puts by namespace and key, each with the vectors of its texts.
_Puts = dict[tuple[_Namespace, str], tuple[_Write, list[Vector | None]]]


def _paired(plan: _Plan, vectors: list[Vector | None]) -> _Puts:
    """The plan's puts, each with the vectors of its texts (``vectors``: those of ``plan.texts``)."""
    paired: _Puts = {}
    at = 0
    for key, write in plan.writes.items():
        paired[key] = (write, vectors[at : at + len(write.texts)])
        at += len(write.texts)
    return paired


class _Queued(NamedTuple):
    """A batch of :meth:`LetheStore.abatch` waiting for the worker thread, and where it answers."""

    ops: list[Op]
    puts: _Puts
    queries: dict[str, tuple[Any, float]]
    answer: asyncio.Future[list[Result]]


def _settle(queued: list[_Queued], outcomes: Sequence[list[Result] | BaseException]) -> None:
    """Give each queued batch its outcome (on its loop's thread), unless its caller gave up."""
    for batch, outcome in zip(queued, outcomes):
        if batch.answer.done():
            continue
        if isinstance(outcome, BaseException):
            batch.answer.set_exception(outcome)
        else:
            batch.answer.set_result(outcome)


def _checked_name(namespace: _Namespace) -> str:
    """The memory name of ``namespace``, checked as LangGraph checks a namespace.

    Raises:
        InvalidNamespaceError: an empty namespace or a bad label.
    """
    _check_labels(namespace, "namespace")
    namespace = tuple(namespace)  # (a list too: checked above, label by label)
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    validate_op_namespace(GetOp(namespace, ""))
    return _name(namespace)


def _check_labels(labels: Iterable[object], field: str) -> None:
    """TypeError for a str given as a namespace (its letters would be taken for labels), and
    InvalidNamespaceError for a label UTF-8 cannot encode, as every store keeps a memory's name
    (a lone surrogate cannot be)."""
    if isinstance(labels, str):
        raise TypeError(f"{field} must be a tuple of labels, as ('users', 'alice'), got the str {labels!r}")
    for label in labels:
        if isinstance(label, str) and not utf8(label):
            raise InvalidNamespaceError(f"Namespace labels must be text UTF-8 can encode, got {label!r}")


def _zero(entry: Entry[str, _Value]) -> bool:
    """Whether one of the item's texts embedded to all zeros (its similarity to any query is 0.0)."""
    return entry.metadata.get(_ZERO) is True


def _caught_up(shared: Shared[str, _Value]) -> Shared[str, _Value]:
    """``shared``, caught up with its memory."""
    shared.current()
    return shared


class LetheStore(BaseStore):
    """A LangGraph ``BaseStore`` whose namespaces are lethe memories, in one process or shared.

    Args:
        store: The ``lethe.store`` engine to keep the namespaces in
            (:class:`~lethe.store.SQLiteStore`, ``PostgresStore``, ``RedisStore``, any
            :class:`~lethe.store.Store`); None keeps them in this process.  The engine
            is the caller's to close (one made here is closed by :meth:`close`).
        index: LangGraph's ``IndexConfig``: ``dims``, ``embed`` (a LangChain
            ``Embeddings``, a function, or a ``"provider:model"`` string) and ``fields``
            (the JSON paths whose text is embedded; default ``["$"]``, the whole value).
            Without it, a ``query`` is ignored and search only filters.
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes) for items put without
            one, ``refresh_on_read`` (default True).  An item past its time is gone for
            every read at once (as ``omit_expired`` asks), and the namespace's next write
            removes it and reports it as an eviction, so no sweeper runs
            (``sweep_interval_minutes`` is not used).
        memory: The template every namespace is opened with: its capacity
            (``max_entries``), decay, thresholds and hooks (``on_evict``,
            ``summarize_fn``, ``clock_fn``).  None: a namespace holds any number of
            items and a search's score is the cosine similarity alone.
        decay_weight: With a ``memory`` template, what a search adds per unit of an
            item's decay score (``Memory.search``'s ``decay_weight``, default 0.25); >= 0.
            Without a template, a score is the similarity alone, and giving it is an error.

    Item values are JSON objects (dicts), copied in and out: a tuple is kept as a list,
    and changing a dict after a put or a get changes nothing in the store.  A put replaces
    the item (its decay starts over) but keeps its importance and pin, set through
    :meth:`shared` (``touch``, ``pin``).  A refreshing read of an item with a TTL is a put
    of it: its deadline moves and, with a template, its decay starts over.  The namespaces
    this store read or wrote last (1,024 of them) are kept as replicas in this process,
    until :meth:`close`; another is read from the engine again when next used.
    Reads and searches answer from each
    namespace's replica, caught up with the store first; a batch's writes to one
    namespace are one commit.  Thread-safe.

    Raises:
        TypeError: ``memory`` is not a :class:`~lethe.Memory`, or ``store`` is not a store.
        ValueError: a bad ``index`` (``dims``), ``ttl`` or ``decay_weight``.

    >>> store = LetheStore(memory=Memory(max_entries=2))
    >>> for key in ("a", "b", "c"):
    ...     store.put(("notes",), key, {"text": key})
    >>> print(*sorted(item.key for item in store.search(("notes",))))
    b c
    """

    supports_ttl = True

    def __init__(
        self,
        store: Store | None = None,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        memory: Memory[str, _Value] | None = None,
        decay_weight: float | None = None,
    ) -> None:
        if memory is not None and not isinstance(memory, Memory):
            raise TypeError(f"memory must be a lethe Memory (a template), got {type(memory).__name__}")
        if store is not None and not all(hasattr(store, m) for m in ("names", "config", "open", "append")):
            raise TypeError(f"store must be a lethe.store engine (SQLiteStore, ...), got {type(store).__name__}")
        if decay_weight is not None and memory is None:
            raise ValueError("decay_weight needs a memory template (without one, a score is the similarity alone)")
        weight = 0.25 if decay_weight is None else decay_weight
        if _number(weight) is None or not weight >= 0 or math.isinf(weight):
            raise ValueError(f"decay_weight must be a finite number >= 0, got {decay_weight!r}")
        default_ttl = (ttl or {}).get("default_ttl")
        if default_ttl is not None and not _minutes(default_ttl):
            raise ValueError(
                f"ttl['default_ttl'] must be None or a number of minutes > 0 (at most {_LONGEST_MINUTES:.4g}), "
                f"got {default_ttl!r}"
            )
        self._engine: Store = InMemoryStore() if store is None else store
        self._owns_engine = store is None
        self._template: Memory[str, _Value] = Memory(max_entries=sys.maxsize) if memory is None else memory
        self._decaying = memory is not None
        self._decay_weight = float(weight) if memory is not None else 0.0
        self.ttl_config = ttl
        self.index_config: IndexConfig | None = None
        self.embeddings = None
        self._fields: list[tuple[str, str | list[str]]] = []
        if index is not None:
            dims = index.get("dims")
            if type(dims) is not int or dims < 1:
                raise ValueError(f"index['dims'] must be a positive int, got {dims!r}")
            self.index_config = index.copy()
            self.embeddings = ensure_embeddings(index.get("embed"))
            self._fields = [(p, p if p == "$" else tokenize_path(p)) for p in index.get("fields") or ["$"]]
        self._memories: OrderedDict[str, Shared[str, _Value]] = OrderedDict()  # the latest used last
        self._multi: dict[str, tuple[Memory[str, _Value], list[Entry[str, _Value]]]] = {}
        self._lock = threading.Lock()
        # abatch's batches waiting for a worker thread, by event loop, and the loops that run one
        self._queued: dict[asyncio.AbstractEventLoop, list[_Queued]] = {}
        self._draining: dict[asyncio.AbstractEventLoop, int] = {}  # (how many drains run, by loop)
        self._drains: set[asyncio.Task[None]] = set()  # (kept referenced while they run)

    # -- namespaces ---------------------------------------------------------

    def shared(self, namespace: _Namespace) -> Shared[str, _Value]:
        """The lethe memory holding ``namespace`` (opened and caught up; created when new, or
        when its memory is gone from the engine): its replica (``current()``), its evictions
        (``evictions()``) and any lethe operation (``transact``), e.g. to pin an item or set
        its importance.

        Raises:
            langgraph.store.base.InvalidNamespaceError: an empty namespace or a bad label.
        """
        shared = self._using(_checked_name(namespace), True, _caught_up)
        assert shared is not None
        return shared

    def _open(self, name: str, create: bool) -> Shared[str, _Value] | None:
        with self._lock:
            shared = self._memories.get(name)
            if shared is not None:
                self._memories.move_to_end(name)
                return shared
            if not create:
                try:
                    self._engine.config(name)
                except KeyError:
                    return None
            shared = self._memories[name] = Shared(self._engine, name, self._template)
            if len(self._memories) > _REPLICAS:
                # Forgotten, not closed: a thread may be using it (it is read again when used).
                gone, _ = self._memories.popitem(last=False)
                self._multi.pop(gone, None)
            return shared

    def _using(self, name: str, create: bool, use: Callable[[Shared[str, _Value]], _T]) -> _T | None:
        """``use(replica of name)`` (None, without a call, for a memory that is not there and
        not ``create``).  A memory gone from the engine behind this store's back (another
        client's drop, a server restarted without its data) is opened afresh, as one never
        written, and ``use`` runs once more on that; so it does on a replica that found the
        memory's history gone back (made again by another client), which follows it then."""
        shared = self._open(name, create)
        if shared is None:
            return None
        try:
            return use(shared)
        except MemoryGone:
            self._forget(name, shared)
        except HistoryRewound:
            pass  # (nothing was written, and the replica follows the memory as it is now)
        shared = self._open(name, create)
        return None if shared is None else use(shared)

    def _forget(self, name: str, shared: Shared[str, _Value]) -> None:
        """Forget ``shared``, the replica of ``name``, whose memory is gone (unless another
        replica took its place already): the next :meth:`_open` opens or creates it afresh."""
        with self._lock:
            if self._memories.get(name) is shared:
                del self._memories[name]
                self._multi.pop(name, None)

    def _namespaces(self, prefix: _Namespace = ()) -> list[tuple[_Namespace, str]]:
        """The namespaces in the engine that start with ``prefix``, sorted."""
        found = []
        for name in self._engine.names():
            namespace = _namespace(name)
            if namespace is not None and namespace[: len(prefix)] == prefix:
                found.append((namespace, name))
        return sorted(found)

    def _view(self, name: str, views: dict[str, Memory[str, _Value] | None]) -> Memory[str, _Value] | None:
        """The namespace's memory as of this batch (caught up once per batch), None if it never was."""
        if name not in views:
            views[name] = self._using(name, False, Shared.current)
        return views[name]

    # -- the batch ----------------------------------------------------------

    def _plan(self, ops: Sequence[Op]) -> _Plan:
        writes: dict[tuple[_Namespace, str], _Write] = {}
        texts: list[str] = []
        queries: list[str] = []
        for op in ops:
            if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
                raise ValueError(f"Unknown operation type: {type(op).__name__}")
            validate_op_namespace(op)
            if isinstance(op, SearchOp):
                _check_labels(op.namespace_prefix, "namespace_prefix")
            elif isinstance(op, ListNamespacesOp):
                for condition in op.match_conditions or ():
                    _check_labels(_path(condition), f"a {condition.match_type} of list_namespaces")
            else:
                _check_labels(op.namespace, "namespace")
            if isinstance(op, PutOp):
                if not op.namespace:
                    raise InvalidNamespaceError("Namespace cannot be empty.")
                if op.value is not None and not isinstance(op.value, Mapping):
                    raise TypeError(f"value must be a dict (a JSON object), got {type(op.value).__name__}")
                if op.ttl is not None and not _minutes(op.ttl):
                    raise ValueError(
                        f"ttl must be None or a number of minutes > 0 (at most {_LONGEST_MINUTES:.4g}), got {op.ttl!r}"
                    )
                if op.ttl is not None and op.value is not None:
                    try:
                        self._now() + timedelta(minutes=op.ttl)
                    except OverflowError:
                        raise ValueError(f"ttl: {op.ttl!r} minutes from now is past the latest datetime") from None
                # Checked here, before any namespace commits: a batch that fails writes nothing.
                value = None if op.value is None else _json_value(op.value)
                writes.pop((op.namespace, op.key), None)  # the last put of a key wins, in its place
                writes[(op.namespace, op.key)] = _Write(op, value, self._texts(op))
            elif isinstance(op, SearchOp):
                _checked_filter(op.filter)
                if op.query and self.embeddings is not None and op.query not in queries:
                    queries.append(op.query)
        for write in writes.values():
            texts.extend(write.texts)
        return _Plan(writes, texts, queries)

    def _texts(self, op: PutOp) -> list[str]:
        """The texts of the item ``op`` puts that its vectors are made of (none without an index)."""
        if self.embeddings is None or op.value is None or op.index is False:
            return []
        paths = self._fields if op.index is None else [(p, p if p == "$" else tokenize_path(p)) for p in op.index]
        return [text for _, path in paths for text in get_text_at_path(op.value, path)]

    def _vectors(self, texts: Sequence[str], vectors: Sequence[Sequence[float]]) -> list[Vector | None]:
        if len(vectors) != len(texts):
            raise ValueError(f"index['embed'] returned {len(vectors)} vectors for {len(texts)} texts")
        assert self.index_config is not None
        dims = self.index_config["dims"]
        made: list[Vector | None] = []
        for v in vectors:
            if len(v) != dims:
                raise ValueError(f"index['embed'] returned a vector of {len(v)} dimensions, index['dims'] is {dims}")
            made.append(Vector(v) if any(v) else None)  # a text with no direction is not searchable
        return made

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` (LangGraph's ``GetOp``, ``SearchOp``, ``ListNamespacesOp`` and ``PutOp``):
        reads answer as of before the batch's writes; the writes to each namespace are one
        commit; reads that refresh rehearse (with a ``memory`` template) and move items' TTL
        deadlines, in one more commit per namespace.

        Texts are embedded before anything is written: an embedder that fails changes nothing.
        """
        ops = list(ops)
        plan = self._plan(ops)
        vectors: list[Vector | None] = []
        queries: dict[str, tuple[Any, float]] = {}
        if self.embeddings is not None:
            if plan.texts:
                vectors = self._vectors(plan.texts, self.embeddings.embed_documents(plan.texts))
            for q in plan.queries:
                queries[q] = query_vector(self.embeddings.embed_query(q), "query")
        return self._run(ops, _paired(plan, vectors), queries)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` for asyncio: the embedder's async methods, the store's work in a thread.

        Batches of one event loop that wait for a worker thread together run as one, as
        LangGraph's own async stores batch their callers: each namespace is read once for all
        of them and their writes to it are one commit (their reads answer as of before their
        writes, as concurrent calls may).  Up to four such runs go at once.  A run that fails
        before it writes anything runs each batch again alone, so each caller gets its own
        batch's answer or error; one that fails after (a store error, or a hook failing at a
        later namespace) gives that error to every caller in it.  A caller cancelled while its
        batch waits writes nothing.
        """
        ops = list(ops)
        plan = self._plan(ops)
        vectors: list[Vector | None] = []
        queries: dict[str, tuple[Any, float]] = {}
        if self.embeddings is not None:
            if plan.texts:
                vectors = self._vectors(plan.texts, await self.embeddings.aembed_documents(plan.texts))
            made = await asyncio.gather(*(self.embeddings.aembed_query(q) for q in plan.queries))
            queries = {q: query_vector(v, "query") for q, v in zip(plan.queries, made)}
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[list[Result]] = loop.create_future()
        with self._lock:
            self._queued.setdefault(loop, []).append(_Queued(ops, _paired(plan, vectors), queries, answer))
            running = self._draining.get(loop, 0)
            if running < _DRAINS:
                self._draining[loop] = running + 1
        if running < _DRAINS:
            self._drains.add(drain := loop.create_task(self._drain(loop)))
            drain.add_done_callback(self._drains.discard)
        return await answer

    async def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        """Run the batches queued on ``loop`` in a worker thread, those queued together as one,
        until none is left."""
        while True:
            with self._lock:
                queued = self._queued.pop(loop, [])
                if not queued:
                    self._drained(loop)
                    return
            queued = [batch for batch in queued if not batch.answer.done()]  # (given up: not run)
            if not queued:
                continue
            try:
                outcomes = await asyncio.to_thread(self._run_queued, queued)
            except asyncio.CancelledError:  # (its loop is closing) so are its callers
                with self._lock:
                    rest = self._queued.pop(loop, []) if self._drained(loop) else []
                for batch in (*queued, *rest):
                    batch.answer.cancel()
                raise
            except Exception as exc:  # (no thread to run them: the loop's executor is shut down)
                outcomes = [exc] * len(queued)
            # (answered here, in this task: once the last is, it ends in the same step, so a loop
            # run until a call is answered leaves no drain behind)
            _settle(queued, outcomes)

    def _drained(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Count a drain of ``loop`` done (hold ``_lock``): whether it was the last one."""
        running = self._draining.pop(loop) - 1
        if running:
            self._draining[loop] = running
        return not running

    def _run_queued(self, queued: list[_Queued]) -> list[list[Result] | BaseException]:
        """Each queued batch's results (or error): run as one batch, or each alone when that
        failed before writing anything."""
        if len(queued) > 1:
            puts: _Puts = {}
            for batch in queued:
                for key, put in batch.puts.items():
                    puts.pop(key, None)  # (the last put of a key wins, in its place, as in a batch)
                    puts[key] = put
            written: list[str] = []
            try:
                results = self._run(
                    [op for batch in queued for op in batch.ops],
                    puts,
                    {q: v for batch in queued for q, v in batch.queries.items()},
                    written,
                )
            except Exception as exc:
                if written or isinstance(exc, StoreError):  # (run again, a batch would be written twice)
                    return [exc] * len(queued)
            else:
                out: list[list[Result] | BaseException] = []
                at = 0
                for batch in queued:
                    out.append(results[at : at + len(batch.ops)])
                    at += len(batch.ops)
                return out
        outcomes: list[list[Result] | BaseException] = []
        for batch in queued:
            try:
                outcomes.append(self._run(batch.ops, batch.puts, batch.queries))
            except Exception as exc:
                outcomes.append(exc)
        return outcomes

    def _run(
        self,
        ops: Sequence[Op],
        puts: _Puts,
        queries: dict[str, tuple[Any, float]],
        written: list[str] | None = None,
    ) -> list[Result]:
        """The batch ``ops`` (its puts and embedded queries made already); the names of the
        namespaces it committed go to ``written`` as each commit goes in."""
        views: dict[str, Memory[str, _Value] | None] = {}
        refresh: dict[str, set[str]] = {}
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                mem = self._view(_name(op.namespace), views)
                entry = None if mem is None or op.key not in mem else mem.peek(op.key)
                results.append(None if entry is None else _item(op.namespace, entry))
                if entry is not None and op.refresh_ttl:
                    refresh.setdefault(_name(op.namespace), set()).add(op.key)
            elif isinstance(op, SearchOp):
                found = self._search(op, queries.get(op.query) if op.query else None, views)
                results.append(found)
                if op.refresh_ttl:
                    for item in found:
                        refresh.setdefault(_name(item.namespace), set()).add(item.key)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list(op, views))
            else:
                results.append(None)
        by_namespace: dict[_Namespace, list[tuple[_Write, list[Vector | None]]]] = {}
        for (namespace, _), put in puts.items():
            by_namespace.setdefault(namespace, []).append(put)
        for namespace, writes in by_namespace.items():
            name = _name(namespace)
            if all(w.value is None for w, _ in writes) and self._view(name, views) is None:
                continue  # deleting from a namespace that never was: nothing to write
            create = any(w.value is not None for w, _ in writes)  # (deletes alone never make a memory)
            self._using(name, create, partial(self._commit, writes=writes))
            if written is not None:
                written.append(name)
            for write, _ in writes:
                refresh.get(name, set()).discard(write.op.key)
        for name, keys in refresh.items():
            self._refresh(name, keys)
            if written is not None:
                written.append(name)
        return results

    # -- writing ------------------------------------------------------------

    def _now(self) -> datetime:
        clock = self._template.clock_fn
        return clock() if clock is not None else datetime.now(timezone.utc)

    def _commit(
        self, shared: Shared[str, _Value], writes: Sequence[tuple[_Write, list[Vector | None]]]
    ) -> Memory[str, _Value]:
        """One namespace's writes of a batch, as one commit."""
        return shared.update(lambda mem: self._written(mem, writes))

    def _written(
        self, mem: Memory[str, _Value], writes: Sequence[tuple[_Write, list[Vector | None]]]
    ) -> Memory[str, _Value]:
        for write, made in writes:
            op = write.op
            if write.value is None:
                mem = mem.delete(op.key)
                continue
            old = mem.peek(op.key) if op.key in mem else None
            mem = self._put(mem, op.key, write.value, old, texts=write.texts, vectors=made, ttl=op.ttl)
        return mem

    def _put(
        self,
        mem: Memory[str, _Value],
        key: str,
        value: _Value,
        old: Entry[str, _Value] | None,
        *,
        texts: Sequence[str],
        vectors: Sequence[Vector | None],
        ttl: float | None,
    ) -> Memory[str, _Value]:
        now = _iso(self._now())
        meta: dict[str, Any] = {_CREATED: old.metadata.get(_CREATED, now) if old is not None else now, _UPDATED: now}
        if ttl is not None:
            meta[_TTL] = ttl
        searchable = [(t, v) for t, v in zip(texts, vectors) if v is not None]
        if len(searchable) > 1:  # the first is the entry's vector; the others rank it as well (the best counts)
            meta[_VECTORS] = [v.to_list() for _, v in searchable[1:]]
        if len(searchable) < len(vectors):  # (a None is a text that embedded to all zeros)
            meta[_ZERO] = True
        return mem.put(
            value,
            key=key,
            importance=old.importance if old is not None else 1.0,
            # (a deadline and a pin exclude each other: a pinned item put with a TTL is unpinned)
            pinned=old is not None and old.pinned and ttl is None,
            metadata=meta,
            ttl=None if ttl is None else timedelta(minutes=ttl),
            text=searchable[0][0] if searchable else None,
            vector=searchable[0][1] if searchable else None,
        )

    def _refresh(self, name: str, keys: set[str]) -> None:
        """Rehearse ``keys`` (with a template) and move the deadlines of those with a TTL."""
        self._using(name, False, partial(self._refreshed, keys=keys))

    def _refreshed(self, shared: Shared[str, _Value], keys: set[str]) -> None:
        """:meth:`_refresh` on the replica ``shared``."""
        current = shared.current()
        due = [k for k in keys if k in current and (self._decaying or _TTL in current.peek(k).metadata)]
        if not due:
            return

        def refreshed(mem: Memory[str, _Value]) -> Memory[str, _Value]:
            for key in due:
                if key not in mem:
                    continue
                entry = mem.peek(key)
                ttl = entry.metadata.get(_TTL)
                if ttl is None:
                    mem = mem.touch(key)
                else:  # a deadline moves only by a put: the item's history starts over, as LangGraph's stores do
                    try:
                        mem = mem.put(
                            entry.value,
                            key=key,
                            importance=entry.importance,
                            metadata=entry.metadata,
                            ttl=timedelta(minutes=ttl),
                            text=entry.text,
                            vector=entry.vector,
                        )
                    except ValueError:  # (its ttl from now is past the latest datetime: it stays put)
                        continue
            return mem

        shared.update(refreshed)

    def update(
        self,
        namespace: _Namespace,
        key: str,
        fn: Callable[[_Value | None], Mapping[str, Any] | None],
        *,
        index: list[str] | bool | None = None,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> Item | None:
        """Replace the item at ``key`` with ``fn(its value)`` (``fn(None)`` when there is none),
        atomically: no write of another thread or process falls between the read and the write.

        A get-then-put through a ``BaseStore`` loses updates: two callers read the same value
        and the later put erases the earlier.  Here ``fn`` runs on the namespace's latest
        version and the result commits at the next version, or ``fn`` runs again on the
        newer one; so ``fn`` may run more than once and must have no other effect.

        Args:
            namespace: The item's namespace.
            key: The item's key.
            fn: The new value (a dict) from the current one (None: no item); returning None
                deletes the item.
            index: As for ``put``: False (do not embed), the fields to embed, or None (the
                store's ``index`` fields).
            ttl: As for ``put``: minutes (None: no deadline; not given: the store's ``default_ttl``).

        Returns:
            The item written (None when ``fn`` returned None).

        Raises:
            InvalidNamespaceError: a bad namespace.
            TypeError: ``fn`` returned something other than a dict or None.

        Whatever ``fn`` or the embedder raises reaches the caller, and nothing is written.
        """
        name = _checked_name(namespace)
        namespace = tuple(namespace)
        if namespace[0] == "langgraph":  # (as BaseStore.put refuses it, before anything is made)
            raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')
        if isinstance(ttl, NotProvided):
            ttl = (self.ttl_config or {}).get("default_ttl")
        embedded: dict[str, Vector | None] = {}  # a text is embedded once, however often fn runs

        def write(mem: Memory[str, _Value]) -> tuple[Memory[str, _Value], Entry[str, _Value] | None]:
            old = mem.peek(key) if key in mem else None
            new = fn(None if old is None else old.value)
            if new is None:
                return mem.delete(key), None
            if not isinstance(new, Mapping):
                raise TypeError(f"fn must return a dict or None, got {type(new).__name__}")
            op = PutOp(namespace, key, new, index=index, ttl=ttl)  # type: ignore[arg-type]
            (write,) = self._plan([op]).writes.values()
            texts = write.texts
            missing = [t for t in dict.fromkeys(texts) if t not in embedded]
            if missing:
                assert self.embeddings is not None
                embedded.update(zip(missing, self._vectors(missing, self.embeddings.embed_documents(missing))))
            assert write.value is not None
            mem = self._put(mem, key, write.value, old, texts=texts, vectors=[embedded[t] for t in texts], ttl=ttl)
            return mem, mem.peek(key)

        # In a 1-tuple: None alone says the memory is not there (and is not made for a delete).
        done = self._using(name, False, lambda shared: (shared.transact(write),))
        if done is None:
            if fn(None) is None:
                return None  # (nothing to delete where nothing was: no memory is made for it)
            done = self._using(name, True, lambda shared: (shared.transact(write),))
            assert done is not None
        (entry,) = done
        return None if entry is None else _item(namespace, entry)

    async def aupdate(
        self,
        namespace: _Namespace,
        key: str,
        fn: Callable[[_Value | None], Mapping[str, Any] | None],
        *,
        index: list[str] | bool | None = None,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> Item | None:
        """:meth:`update` for asyncio, in a worker thread (``fn`` and the embedder run there)."""
        return await asyncio.to_thread(self.update, namespace, key, fn, index=index, ttl=ttl)

    # -- reading ------------------------------------------------------------

    def _search(
        self, op: SearchOp, query: tuple[Any, float] | None, views: dict[str, Memory[str, _Value] | None]
    ) -> list[SearchItem]:
        keep = _checked_filter(op.filter)
        want = max(op.offset, 0) + max(op.limit, 0)
        scored: list[tuple[float, int, int, _Namespace, Entry[str, _Value]]] = []
        plain: list[tuple[_Namespace, Entry[str, _Value]]] = []
        listed: list[tuple[float, _Namespace, Entry[str, _Value]]] = []  # without a query, with decay scores
        for rank, (namespace, name) in enumerate(self._namespaces(tuple(op.namespace_prefix))):
            mem = self._view(name, views)
            if mem is None or not len(mem):
                continue
            if query is None:
                listed.extend((score, namespace, e) for e, score in mem.scored() if keep is None or keep(e.value))
                continue
            for number, entry in self._ranked(mem, self._several(name, mem), query, want, keep):
                scored.append((-number, rank, entry.seq, namespace, entry))
            if len(scored) < want:  # LangGraph's stores fill up with the items that have no vector
                plain.extend(
                    (namespace, e)
                    for e in mem.filter(lambda e: e.vector is None and not _zero(e) and (keep is None or keep(e.value)))
                )
        if query is None:
            if self._decaying:  # the most alive first
                listed.sort(key=lambda sne: sne[0], reverse=True)
            else:  # the latest written first, as LangGraph's SQL stores answer
                listed.sort(key=lambda sne: _times(sne[2])[1], reverse=True)
            return [_hit(ns, e, None) for _, ns, e in listed[op.offset : op.offset + op.limit]]
        scored.sort(key=lambda s: s[:3])
        plain.sort(key=lambda ne: ne[1].seq)
        hits = [_hit(ns, e, -n) for n, _, _, ns, e in scored]
        hits += [_hit(ns, e, None) for ns, e in plain]
        return hits[op.offset : op.offset + op.limit]

    def _several(self, name: str, mem: Memory[str, _Value]) -> list[Entry[str, _Value]]:
        """The items of ``mem`` with more than one vector, or a text that embedded to all zeros: a
        pass over every entry, made once per version of a namespace (searches of an unchanged
        namespace reuse it)."""
        seen = self._multi.get(name)
        if seen is None or seen[0] is not mem:
            seen = (mem, mem.filter(lambda e: _VECTORS in e.metadata or _zero(e)))
            with self._lock:
                if name in self._memories:  # (kept only while its replica is)
                    self._multi[name] = seen
        return seen[1]

    def _ranked(
        self,
        mem: Memory[str, _Value],
        more: list[Entry[str, _Value]],
        query: tuple[Any, float],
        want: int,
        keep: Callable[[Mapping[str, Any]], bool] | None,
    ) -> list[tuple[float, Entry[str, _Value]]]:
        """The best ``want`` items of ``mem`` that ``keep`` keeps, each with its number: the best
        cosine of its vectors (0.0 for a text that embedded to all zeros, as InMemoryStore has it),
        plus ``decay_weight`` times its score with a template.

        ``Memory.search`` ranks by the entry's own (first) vector, which no item's number is
        below; an item in ``more`` (more vectors, or a zero one) is ranked by all of them, so
        the answer is exact."""
        numbers, norm = query
        k = max(want, 1)
        while True:
            hits = mem.search(numbers, k, decay_weight=self._decay_weight, min_relevance=-1.0)
            kept = [e for e, _ in hits if keep is None or keep(e.value)]
            if len(kept) >= want or len(hits) < k:
                break
            k *= 4
        chosen = {e.key: e for e in kept}
        chosen.update((e.key, e) for e in more if keep is None or keep(e.value))
        ranked = []
        for entry in chosen.values():
            best = cosine(numbers, norm, entry.vector) if entry.vector is not None else 0.0
            if _zero(entry):
                best = max(best, 0.0)
            for extra in entry.metadata.get(_VECTORS, ()):
                best = max(best, cosine(numbers, norm, Vector(extra)))
            decay = self._decay_weight * mem.score(entry.key) if self._decay_weight else 0.0
            ranked.append((best + decay, entry))
        return ranked

    def _list(self, op: ListNamespacesOp, views: dict[str, Memory[str, _Value] | None]) -> list[_Namespace]:
        found = set()
        for namespace, name in self._namespaces():
            if not all(_matches(c, namespace) for c in op.match_conditions or ()):
                continue
            mem = self._view(name, views)
            if mem is None or not len(mem):
                continue
            found.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        return sorted(found)[op.offset : op.offset + op.limit]

    # -- lifetime -----------------------------------------------------------

    def close(self) -> None:
        """Close the namespaces' memories (and the engine, when this store made it)."""
        with self._lock:
            memories, self._memories = list(self._memories.values()), OrderedDict()
            self._multi.clear()
        for shared in memories:
            shared.close()
        if self._owns_engine:
            self._engine.close()

    def __enter__(self) -> LetheStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
