"""Damaged stores on every engine: whatever another client writes into a memory's rows, heads, log
records, configuration, checkpoints or their keys, ``lethe.store.Shared`` works or raises
``StoreError``; it never lets a raw exception through, never brings a deleted entry back, and never
commits a record it cannot read back.

Each engine holds one memory built through ``Shared`` (puts, a get, a delete, evictions, changes
of configuration, commits past two checkpoints).  Each case restores that memory's stored state,
damages one place of it (a ``random.Random`` started from a fixed state: the cases are the same
every run), then opens it afresh and reads and writes it through a replica that saw it before the
damage and one a few versions behind.  The number of cases is ``LETHE_DAMAGE_CASES`` per server
engine (default below), so a longer hunt is one variable away.  Real servers
(``tests/_servers.py``); SQLite and PostgreSQL are damaged through their own client on the store's
tables, Redis on the store's keys.  Each kind of damage found to get through is then a test of its
own, below the hunt.
"""

from __future__ import annotations

import copy
import json
import os
import random
import sqlite3
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lethe import Memory
from lethe.decay import ACTR
from lethe.store import InMemoryStore, Shared, SQLiteStore, Store, StoreError, _records

from ._support import fake_clock
from .conftest import DURABLE_ENGINES, ENGINES, SERVER_ENGINES

NAME = "m"
#: Cases per server engine (the in-process one and SQLite, cheaper, run three times as many).
CASES = int(os.environ.get("LETHE_DAMAGE_CASES", "600"))


def _template() -> Memory[Any, Any]:
    # ACT-R keeps each entry's access times in its decay state: one more field checked on reading.
    return Memory(max_entries=6, decay_fn=ACTR(), clock_fn=fake_clock(step=timedelta(seconds=1)))


def _history(shared: Shared[Any, Any]) -> None:
    """Puts of every kind of key and value, a get, a delete, evictions, and commits past two
    checkpoints (``checkpoint_every=3``)."""
    shared.update(lambda m: m.put({"a": [1, 2.5, None]}, key="dict", metadata={"tag": ["x"]}))
    shared.update(lambda m: m.put([1, "é", True], key=7, importance=2.0))
    shared.update(lambda m: m.put("tupled", key=("t", 1, None), pinned=True))
    shared.update(lambda m: m.put(1.5, key=2.25, ttl=3600.0))
    shared.update(lambda m: m.get("dict")[0])
    shared.update(lambda m: m.delete(7))
    for i in range(8):  # past max_entries=6: evictions
        shared.update(lambda m, i=i: m.put(f"v{i}", key=f"k{i}"))
    shared.update(lambda m: m.put("auto"))  # an int key the memory chooses


# -- the engines' stored state, read and written behind their backs -----------------------------


@dataclass(frozen=True)
class Slot:
    """One place of a stored memory: ``kind`` (``config``, ``head``, ``row``, ``row_seq``, ``record``,
    ``log_version``, ``ckpt_head``, ``ckpt_version``, ``ckpt_row``, ``ckpt_row_seq``, ``latest``,
    ``first``) and where (a version, a put order)."""

    kind: str
    version: int = -1
    seq: int = -1

    @property
    def text(self) -> bool:
        """Whether the place holds JSON text (else a number: a version, a put order)."""
        return self.kind in ("config", "head", "row", "record", "ckpt_head", "ckpt_row")


class Target:
    """An engine's memory ``NAME``, with its stored state saved, restored and damaged directly."""

    engine: str
    #: Whether the engine keeps text that is not UTF-8 (SQLite, Redis), and other types (SQLite).
    bytes_ok = False
    types_ok = False

    def __init__(self, store: Store) -> None:
        self.store = store

    def save(self) -> Any:
        """Everything stored of the memory, to :meth:`restore` it."""
        raise NotImplementedError

    def restore(self, saved: Any) -> None:
        """Make the memory's stored state what :meth:`save` saved, whatever it is now."""
        raise NotImplementedError

    def slots(self) -> list[Slot]:
        """Every place of the memory that can be damaged."""
        raise NotImplementedError

    def get(self, slot: Slot) -> Any:
        """What ``slot`` holds (for a number slot, the version or put order it says)."""
        raise NotImplementedError

    def put(self, slot: Slot, value: Any) -> None:
        """Write ``value`` into ``slot``; for a number slot, make it say ``value``."""
        raise NotImplementedError

    def close(self) -> None:
        self.store.close()


class MemoryTarget(Target):
    """``InMemoryStore``: its dicts, written directly (a version or put order is an int key)."""

    engine = "memory"

    @property
    def _named(self) -> Any:
        return self.store._names[NAME]  # type: ignore[attr-defined]

    def save(self) -> Any:
        return copy.deepcopy(self._named)

    def restore(self, saved: Any) -> None:
        self.store._names[NAME] = copy.deepcopy(saved)  # type: ignore[attr-defined]

    def slots(self) -> list[Slot]:
        n = self._named
        out = [Slot("config"), Slot("head"), Slot("latest")]
        out += [Slot(k, seq=s) for s in n.rows for k in ("row", "row_seq")]
        out += [Slot(k, version=v) for v in n.log for k in ("record", "log_version")]
        for v, (_, rows) in n.checkpoints.items():
            out += [Slot("ckpt_head", version=v), Slot("ckpt_version", version=v)]
            out += [Slot(k, version=v, seq=s) for s in rows for k in ("ckpt_row", "ckpt_row_seq")]
        return out

    def get(self, slot: Slot) -> Any:
        n = self._named
        return {
            "config": lambda: n.config,
            "head": lambda: n.head,
            "latest": lambda: n.version,
            "row": lambda: n.rows[slot.seq],
            "row_seq": lambda: slot.seq,
            "record": lambda: n.log[slot.version],
            "log_version": lambda: slot.version,
            "ckpt_head": lambda: n.checkpoints[slot.version][0],
            "ckpt_version": lambda: slot.version,
            "ckpt_row": lambda: n.checkpoints[slot.version][1][slot.seq],
            "ckpt_row_seq": lambda: slot.seq,
        }[slot.kind]()

    def put(self, slot: Slot, value: Any) -> None:
        n = self._named
        kind = slot.kind
        if kind == "config":
            n.config = value
        elif kind == "head":
            n.head = value
        elif kind == "latest":
            n.version = value
        elif kind in ("row", "row_seq"):
            text = n.rows.pop(slot.seq)
            n.rows[slot.seq if kind == "row" else value] = value if kind == "row" else text
        elif kind in ("record", "log_version"):
            text = n.log.pop(slot.version)
            n.log[slot.version if kind == "record" else value] = value if kind == "record" else text
        elif kind in ("ckpt_head", "ckpt_version"):
            head, rows = n.checkpoints.pop(slot.version)
            if kind == "ckpt_head":
                n.checkpoints[slot.version] = (value, rows)
            else:
                n.checkpoints[value] = (head, rows)
        else:
            rows = n.checkpoints[slot.version][1]
            text = rows.pop(slot.seq)
            rows[slot.seq if kind == "ckpt_row" else value] = value if kind == "ckpt_row" else text


#: The tables of each SQL engine: (table, its columns), the key columns first.
_SQL_TABLES = {
    "sqlite": (
        ("memories", ("name", "config")),
        ("entries", ("name", "seq", "entry")),
        ("log", ("name", "version", "head", "record")),
        ("checkpoints", ("name", "version", "head")),
        ("checkpoint_entries", ("name", "version", "seq", "entry")),
    ),
    "postgres": (
        ("lethe_memories", ("name", "config")),
        ("lethe_entries", ("name", "seq", "entry")),
        ("lethe_log", ("name", "version", "head", "record", "op")),
        ("lethe_checkpoints", ("name", "version", "head")),
        ("lethe_checkpoint_entries", ("name", "version", "seq", "entry")),
    ),
}
#: Where each kind of slot lives in the SQL tables: (table index, column, key columns).
_SQL_SLOTS = {
    "config": (0, "config", ()),
    "row": (1, "entry", ("seq",)),
    "row_seq": (1, "seq", ("seq",)),
    "head": (2, "head", ("version",)),
    "record": (2, "record", ("version",)),
    "log_version": (2, "version", ("version",)),
    "ckpt_head": (3, "head", ("version",)),
    "ckpt_version": (3, "version", ("version",)),
    "ckpt_row": (4, "entry", ("version", "seq")),
    "ckpt_row_seq": (4, "seq", ("version", "seq")),
}


class SQLTarget(Target):
    """SQLite or PostgreSQL, written through its own client (``mark``: the parameter placeholder)."""

    def __init__(self, store: Store, engine: str, conn: Any, mark: str) -> None:
        super().__init__(store)
        self.engine = engine
        self.conn = conn
        self.mark = mark
        self.tables = _SQL_TABLES[engine]
        self.bytes_ok = self.types_ok = engine == "sqlite"

    def _q(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        cur = self.conn.execute(sql.replace("?", self.mark), args)
        return list(cur.fetchall()) if cur.description else []

    def save(self) -> Any:
        return [
            (table, cols, self._q(f"SELECT {', '.join(cols)} FROM {table} WHERE name = ?", (NAME,)))
            for table, cols in self.tables
        ]

    def restore(self, saved: Any) -> None:
        self._q("BEGIN")
        for table, cols, rows in saved:
            self._q(f"DELETE FROM {table} WHERE name = ?", (NAME,))
            if rows:
                marks = ", ".join("?" * len(cols))
                self.conn.cursor().executemany(
                    f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})".replace("?", self.mark), rows
                )
        self._q("COMMIT")

    def slots(self) -> list[Slot]:
        out = [Slot("config")]
        for seq, in self._q(f"SELECT seq FROM {self.tables[1][0]} WHERE name = ?", (NAME,)):
            out += [Slot("row", seq=seq), Slot("row_seq", seq=seq)]
        for v, in self._q(f"SELECT version FROM {self.tables[2][0]} WHERE name = ?", (NAME,)):
            out += [Slot(k, version=v) for k in ("head", "record", "log_version")]
        for v, in self._q(f"SELECT version FROM {self.tables[3][0]} WHERE name = ?", (NAME,)):
            out += [Slot("ckpt_head", version=v), Slot("ckpt_version", version=v)]
        for v, seq in self._q(f"SELECT version, seq FROM {self.tables[4][0]} WHERE name = ?", (NAME,)):
            out += [Slot("ckpt_row", version=v, seq=seq), Slot("ckpt_row_seq", version=v, seq=seq)]
        return out

    def _where(self, slot: Slot) -> tuple[str, str, str, tuple[Any, ...]]:
        """The table and column of ``slot``, and the WHERE clause and its arguments."""
        index, column, keys = _SQL_SLOTS[slot.kind]
        args = tuple(slot.version if k == "version" else slot.seq for k in keys)
        clause = " AND ".join(["name = ?", *(f"{k} = ?" for k in keys)])
        return self.tables[index][0], column, clause, (NAME, *args)

    def get(self, slot: Slot) -> Any:
        table, column, clause, args = self._where(slot)
        return self._q(f"SELECT {column} FROM {table} WHERE {clause}", args)[0][0]

    def put(self, slot: Slot, value: Any) -> None:
        table, column, clause, args = self._where(slot)
        if isinstance(value, _Invalid):  # text that is not UTF-8 (SQLite keeps it as TEXT)
            self._q(f"UPDATE {table} SET {column} = CAST(? AS TEXT) WHERE {clause}", (value.data, *args))
            return
        self._q(f"UPDATE {table} SET {column} = ? WHERE {clause}", (value, *args))

    def close(self) -> None:
        self.conn.close()
        super().close()


class RedisTarget(Target):
    """Redis: the store's keys, written with a client of its own (DUMP and RESTORE to save)."""

    engine = "redis"
    bytes_ok = True

    def __init__(self, store: Store, client: Any) -> None:
        super().__init__(store)
        self.client = client
        from lethe.store._redis import _KEYS

        self.keys = dict(zip(_KEYS, store._keys(NAME), strict=True))  # type: ignore[attr-defined]
        self.pattern = self.keys["config"].rsplit(":", 1)[0] + ":*"

    def save(self) -> Any:
        keys = sorted(self.client.scan_iter(match=self.pattern))
        return [(k, self.client.dump(k)) for k in keys]

    def restore(self, saved: Any) -> None:
        pipe = self.client.pipeline(transaction=True)
        for key in self.client.scan_iter(match=self.pattern):
            pipe.delete(key)
        for key, dumped in saved:
            pipe.restore(key, 0, dumped, replace=True)
        pipe.execute()

    def _ckpt(self, version: object, part: str) -> str:
        return f"{self.keys['checkpoints']}:{version}:{part}"

    def slots(self) -> list[Slot]:
        c, k = self.client, self.keys
        out = [Slot("config"), Slot("head"), Slot("latest"), Slot("first")]
        out += [Slot(kind, seq=int(s)) for s in c.hkeys(k["entries"]) for kind in ("row", "row_seq")]
        out += [Slot(kind, version=int(v)) for v in c.hkeys(k["log"]) for kind in ("record", "log_version")]
        for v in c.zrange(k["checkpoints"], 0, -1):
            v = int(v)
            out += [Slot("ckpt_head", version=v), Slot("ckpt_version", version=v)]
            out += [
                Slot(kind, version=v, seq=int(s))
                for s in c.hkeys(self._ckpt(v, "entries"))
                for kind in ("ckpt_row", "ckpt_row_seq")
            ]
        return out

    def _hash(self, slot: Slot) -> tuple[str, int]:
        if slot.kind in ("row", "row_seq"):
            return self.keys["entries"], slot.seq
        if slot.kind in ("record", "log_version"):
            return self.keys["log"], slot.version
        return self._ckpt(slot.version, "entries"), slot.seq

    def get(self, slot: Slot) -> Any:
        c, kind = self.client, slot.kind
        if kind in ("config", "head", "latest", "first"):
            return c.get(self.keys[kind]).decode()
        if kind == "ckpt_head":
            return c.get(self._ckpt(slot.version, "head")).decode()
        if kind == "ckpt_version":
            return slot.version
        key, field = self._hash(slot)
        return field if kind.endswith(("_seq", "_version")) else c.hget(key, field).decode()

    def put(self, slot: Slot, value: Any) -> None:
        c, kind = self.client, slot.kind
        if isinstance(value, _Invalid):
            value = value.data
        if kind in ("config", "head", "latest", "first"):
            c.set(self.keys[kind], value)
        elif kind == "ckpt_head":
            c.set(self._ckpt(slot.version, "head"), value)
        elif kind == "ckpt_version":  # the checkpoint listed (and kept) under another version
            z = self.keys["checkpoints"]
            c.zrem(z, slot.version)
            c.zadd(z, {str(value): value if isinstance(value, int) else 0})
            for part in ("head", "entries"):
                if c.exists(self._ckpt(slot.version, part)):
                    c.rename(self._ckpt(slot.version, part), self._ckpt(value, part))
        else:
            key, field = self._hash(slot)
            if kind.endswith(("_seq", "_version")):  # the field renamed
                text = c.hget(key, field)
                c.hdel(key, field)
                c.hset(key, value, text)
            else:
                c.hset(key, field, value)

    def close(self) -> None:
        self.client.close()
        super().close()


# -- damage ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Invalid:
    """Bytes that are not UTF-8, written where text goes (SQLite, Redis)."""

    data: bytes


#: JSON texts that Python's ``json`` reads as something odd, or refuses in odd ways.
_RAW = (
    "1e400",
    "-1e400",
    "NaN",
    "Infinity",
    "-Infinity",
    "1" + "0" * 400,
    "-1" + "0" * 400,
    "1" + "0" * 5000,  # past Python's int digit limit
    "[" * 5000 + "]" * 5000,  # nested past the recursion limit
    '{"a":' * 3000 + "1" + "}" * 3000,
    "1.5",
    "-0",
    "-1",
    "0",
    "true",
    "null",
    '"x"',
    "{}",
    "[]",
    '"\\ud800"',
    '"\\u0000"',
    "9" * 20,
    str(2**63),
    str(2**63 - 1),
    str(2**53 + 1),
    "",
    " ",
    '"' + "0" * 16 + '"',
)


def _scalar(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            True,
            False,
            0,
            1,
            -1,
            7,
            2**31,
            2**53 + 1,
            2**63 - 1,
            2**63,
            2**64,
            10**30,
            10**400,
            -(10**400),
            0.5,
            -0.0,
            1e308,
            float("nan"),
            float("inf"),
            float("-inf"),
            "",
            "x",
            "0123456789abcdef",
            "é",
            "\x00",
            "9" * 30,
            "2026-01-01T12:00:00+00:00",
        ]
    )


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth >= 3 or roll < 0.6:
        return _scalar(rng)
    if roll < 0.8:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(["a", "head", "seq", "", "0"]): _value(rng, depth + 1) for _ in range(rng.randrange(3))}


def _places(data: Any) -> list[tuple[Any, Any]]:
    """Every (container, index or key) inside ``data``, at every depth."""
    out: list[tuple[Any, Any]] = []
    stack = [data]
    while stack:
        item = stack.pop()
        pairs = enumerate(item) if type(item) is list else item.items() if type(item) is dict else ()
        for k, v in pairs:
            out.append((item, k))
            stack.append(v)
    return out


_MARK = "\x01raw\x01"


def _encoded(data: Any, raw: str | None) -> str:
    text = json.dumps(data, allow_nan=True, separators=(",", ":"))
    return text if raw is None else text.replace(json.dumps(_MARK), raw)


def _edited(rng: random.Random, text: str) -> str:
    """``text`` (JSON) with one value inside it replaced, removed or added to."""
    data = json.loads(text)
    places = _places(data)
    raw = None
    new = _value(rng)
    if rng.random() < 0.25:
        raw, new = rng.choice(_RAW[:-3]), _MARK
    if not places:
        return _encoded(new, raw)
    container, k = rng.choice(places)
    roll = rng.random()
    if roll < 0.6:
        old = container[k]
        if type(old) is int and not isinstance(old, bool) and rng.random() < 0.5:
            new = old + rng.choice([-1, 1, 2**63, -(2**63), 10**400])
        container[k] = new
    elif roll < 0.8:
        del container[k]
    elif type(container) is list:
        container.insert(rng.randrange(len(container) + 1), new)
    else:
        container[rng.choice(["extra", "prev", "config", "head"])] = new
    return _encoded(data, raw)


def _damaged_text(rng: random.Random, target: Target, slot: Slot, texts: list[str]) -> Any:
    """Something else where ``slot``'s text was."""
    text = target.get(slot)
    roll = rng.random()
    if roll < 0.45:
        return _edited(rng, text)
    if roll < 0.55:
        return _encoded(_value(rng), None)
    if roll < 0.65:
        return rng.choice(_RAW)
    if roll < 0.72:
        return text[: rng.randrange(len(text))]
    if roll < 0.8:
        i = rng.randrange(len(text))
        return text[:i] + rng.choice('"]}[{,0-9e\\.\x00é ') + text[i + 1 :]
    if roll < 0.9:
        return rng.choice(texts)  # another place's text: another row, record, head
    if target.bytes_ok and roll < 0.95:
        cut = text.encode()[: rng.randrange(1, len(text) + 1)]
        return _Invalid(cut + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80"]))
    if target.types_ok:
        return rng.choice([b"[1]", 5, 2.5])  # a blob, numbers (SQLite keeps the type it is given)
    return _edited(rng, text)


def _damaged_number(rng: random.Random, target: Target, slot: Slot, taken: set[int]) -> Any:
    """Another version or put order where ``slot``'s was."""
    old = int(target.get(slot))
    free = [v for v in (old + 1, old + 2, old + 5, old + 100, old - 1, 0, 2**40) if v not in taken and v >= 0]
    choices: list[Any] = [*free, rng.randrange(2**62)]
    if target.engine in ("sqlite", "redis"):  # (BIGINT holds ints only, as InMemoryStore's dicts)
        choices += ["x", "007", f"{old}", f" {old}", f"0{old}", "-1", "9" * 25, "1e3"]
    if target.types_ok:
        choices += [1.5, float(old) + 0.5, b"\x01", -3]
    if target.engine in ("postgres", "memory"):
        choices += [-3, 2**63 - 1]
    return rng.choice(choices)


def _damage(rng: random.Random, target: Target, slots: list[Slot], texts: list[str]) -> tuple[Slot, Any]:
    """Damage one place of ``target``; the place and what it now holds."""
    while True:
        slot = rng.choice(slots)
        if slot.kind == "first" and target.engine != "redis":
            continue
        if slot.text:
            value = _damaged_text(rng, target, slot, texts)
        else:
            taken = {s.seq if s.kind.endswith("_seq") else s.version for s in slots if s.kind == slot.kind}
            value = _damaged_number(rng, target, slot, taken)
        if target.engine == "postgres" and isinstance(value, str) and "\x00" in value:
            continue  # PostgreSQL's text holds no NUL
        try:
            target.put(slot, value)
        except Exception as exc:  # the engine refused it (a key taken, a type it does not hold): another
            if target.engine == "sqlite":
                target.conn.execute("ROLLBACK") if target.conn.in_transaction else None  # type: ignore[attr-defined]
            if type(exc).__module__.split(".")[0] in ("sqlite3", "psycopg", "redis"):
                continue
            raise
        return slot, value


# -- what a damaged store may do -----------------------------------------------------------------


@dataclass
class Escape:
    """A call that raised what a damaged store must not (or brought a deleted entry back)."""

    engine: str
    call: str
    slot: Slot
    value: str
    error: BaseException


def _allowed(exc: BaseException, call: str, slot: Slot) -> bool:
    if isinstance(exc, StoreError):
        return True
    if not isinstance(exc, ValueError):
        return False
    if call.endswith(".at") and "after the latest version" in str(exc):
        return True  # the store's latest version went back below it: at(v) of a version it lacks
    # A configuration that reads as another one: refused as a template that does not match.
    return call in ("open", "reopen") and slot.kind == "config" and "another configuration" in str(exc)


def _behind(shared: Shared[Any, Any]) -> Shared[Any, Any]:
    """A copy of ``shared``, a replica at its version, of its own (no lock, summaries or
    evictions shared): a process that saw the memory then."""
    twin = copy.copy(shared)
    twin._lock = threading.RLock()
    twin._summaries = {}
    twin._attempt = []
    return twin


def _cold(store: Store) -> Shared[Any, Any]:
    """The memory opened afresh (each template's clock starts again: no skew is told)."""
    return Shared(store, NAME, _template(), checkpoint_every=3, max_clock_skew=None)


class Case:
    """One damaged store, exercised: every call either works or raises ``StoreError``
    (``slot`` None: the store as written, where every call works)."""

    def __init__(self, target: Target, kept: int, slot: Slot | None, value: Any = None) -> None:
        self.target, self.kept, self.slot, self.value = target, kept, slot or Slot("none"), value
        self.strict = slot is None
        self.escapes: list[Escape] = []

    def call(self, name: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as exc:
            if self.strict or not _allowed(exc, name, self.slot):
                shown = repr(self.value)
                self.escapes.append(Escape(self.target.engine, name, self.slot, shown[:120], exc))
            return None

    def written_reads_back(self, shared: Shared[Any, Any]) -> None:
        """The record, head and rows ``shared`` just committed read back (a write never leaves
        what it cannot read)."""
        store, version = self.target.store, shared.version
        rows = store.read(NAME, version - 1, version)
        assert rows[-1][0] == version
        _records.change(rows[-1][1], shared.current()._config.decay_fn)

    def write(self, shared: Shared[Any, Any], who: str, fn: Callable[[Memory[Any, Any]], Memory[Any, Any]]) -> bool:
        """``shared.update(fn)``; whether it committed (and what it committed reads back)."""
        version = shared.version
        if self.call(f"{who}.update", lambda: shared.update(fn)) is None or shared.version == version:
            return False
        self.call("written", lambda: self.written_reads_back(shared))
        return True

    def run(self, fresh: Shared[Any, Any], old: Shared[Any, Any]) -> None:
        """Open the damaged memory afresh, read it and write it through ``fresh`` (a replica
        of it as it was before the damage) and ``old`` (one a few versions behind)."""
        store = self.target.store
        cold = self.call("open", lambda: _cold(store))
        if cold is not None:
            self.call("cold.current", cold.current)
        replicas = ((fresh, "fresh"), (old, "old"))
        for shared, who in replicas:
            self.call(f"{who}.current", shared.current)
            for v in (self.kept, self.kept + 1, fresh.version - 1, fresh.version):
                self.call(f"{who}.at", lambda v=v: shared.at(v))  # noqa: B023
            self.call(f"{who}.evictions", lambda: list(shared.evictions(self.kept)))  # noqa: B023
        for (shared, who), which in zip(replicas, (0, -1), strict=True):
            self.write(shared, who, lambda m, who=who: m.put(who, key=who))
            gone = list(shared._replica.keys())[which]
            if self.write(shared, who, lambda m, gone=gone: m.delete(gone) if gone in m else m):
                again = self.call("reopen", lambda: _cold(store).current())
                if again is not None and gone in again:
                    value = repr(self.value)[:120]
                    self.escapes.append(Escape(self.target.engine, "resurrected", self.slot, value, KeyError(gone)))


def attack(target: Target, cases: int, start: str) -> list[Escape]:
    """``cases`` damaged copies of ``target``'s memory, exercised; what escaped."""
    rng = random.Random(start)
    store = target.store
    writer = _cold(store)
    _history(writer)
    behind = _behind(writer)
    # Then records for it to fold: configurations changed (records of every entry, and of the
    # configuration they replaced) and puts.
    writer.configure(max_entries=7)
    writer.update(lambda m: m.put("w0", key="w0"))
    writer.update(lambda m: m.delete("w0"))
    writer.configure(max_entries=6)
    writer.update(lambda m: m.put("w1", key="w1"))
    # The log is kept from the older of the two newest checkpoints on.
    kept = store.checkpoint(NAME, store.checkpoint(NAME)[0] - 1)[0]
    saved = target.save()
    slots = target.slots()
    texts = [target.get(s) for s in slots if s.text]
    intact = Case(target, kept, None)  # first the store as written: nothing refused
    intact.run(_behind(writer), _behind(behind))
    escapes: list[Escape] = intact.escapes
    slow: list[tuple[float, Slot]] = []
    for _ in range(cases):
        target.restore(saved)
        slot, value = _damage(rng, target, slots, texts)
        case = Case(target, kept, slot, value)
        began = time.monotonic()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case.run(_behind(writer), _behind(behind))
        took = time.monotonic() - began
        if took > 2.0:
            slow.append((took, slot))
        escapes += case.escapes
    target.restore(saved)
    assert not slow, f"cases that took long: {slow[:5]}"
    return escapes


def _summary(escapes: list[Escape]) -> str:
    kinds = Counter((e.engine, type(e.error).__name__, e.call, e.slot.kind) for e in escapes)
    lines = [f"{n} x {kind}" for kind, n in kinds.most_common(30)]
    for e in escapes[:5]:
        lines.append(f"e.g. {e.call} after {e.slot} = {e.value}: {type(e.error).__name__}: {str(e.error)[:200]}")
    return "\n".join(lines)


# -- the engines ----------------------------------------------------------------------------------


@pytest.fixture
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    """A new, empty store of the engine ``request.param``, with a client of its own to damage it."""
    kind = request.param
    made: Target
    if kind == "memory":
        made = MemoryTarget(InMemoryStore())
    elif kind == "sqlite":
        path = tmp_path / "store.db"
        store = SQLiteStore(path)
        made = SQLTarget(store, "sqlite", sqlite3.connect(path, isolation_level=None), "?")
    elif kind == "postgres":
        import psycopg

        from lethe.store import PostgresStore

        dsn = request.getfixturevalue("postgres_dsn")
        made = SQLTarget(PostgresStore(dsn), "postgres", psycopg.connect(dsn, autocommit=True), "%s")
    else:
        import redis

        from lethe.store import RedisStore

        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        made = RedisTarget(RedisStore(url, prefix=prefix), redis.Redis.from_url(url))
    yield made
    made.close()


# The damage suite runs on every engine (conftest.ENGINES), the hunt fewer cases on a server.
@pytest.mark.parametrize(
    ("target", "cases"),
    [(kind, CASES if kind in SERVER_ENGINES else 3 * CASES) for kind in ENGINES],
    indirect=["target"],
)
def test_a_damaged_store_works_or_raises_store_error(target: Target, cases: int) -> None:
    escapes = attack(target, cases, f"damage-{target.engine}")
    assert not escapes, _summary(escapes)


# -- each kind of damage, named ------------------------------------------------------------------


def _two(store: Store) -> tuple[Shared[Any, Any], int]:
    """A memory holding "kept" (put order 0) and "doomed" (2: no entry has put order 1); the put
    order of "doomed"."""
    shared = _cold(store)
    shared.update(lambda m: m.put("kept", key="kept"))
    shared.update(lambda m: m.put("gone", key="gone"))
    shared.update(lambda m: m.put("doomed", key="doomed").delete("gone"))
    return shared, shared.current().peek("doomed").seq


@pytest.mark.parametrize("how", ["column", "text"])
@pytest.mark.parametrize("target", ENGINES, indirect=True)
def test_a_row_keyed_by_another_put_order_is_refused_and_never_comes_back(target: Target, how: str) -> None:
    shared, seq = _two(target.store)
    if how == "column":  # the row keyed by another put order than its own
        target.put(Slot("row_seq", seq=seq), seq + 10)
        said, keyed = seq, seq + 10
    else:  # the row saying another put order than the one it is keyed by (a free one)
        text = target.get(Slot("row", seq=seq))
        target.put(Slot("row", seq=seq), text.replace(f"[{seq},", f"[{seq - 1},", 1))
        said, keyed = seq - 1, seq
    refused = rf"entries\[\d\]\.seq: the row says {said}, but the store keys it by {keyed}"
    with pytest.raises(StoreError, match=refused):
        _cold(target.store)
    # A commit removes the row by the put order the replica holds, which the row said.
    shared.update(lambda m: m.delete("doomed"))
    if how == "column":  # the row is still there, keyed by a put order no commit removes
        with pytest.raises(StoreError, match=refused):
            _cold(target.store)  # refused still: the deleted entry never comes back
    else:
        assert list(_cold(target.store).current().keys()) == ["kept"]


@pytest.mark.parametrize("target", [kind for kind in ENGINES if kind != "postgres"], indirect=True)
def test_a_row_holding_a_nul_character_is_refused(target: Target) -> None:
    # No JSON text holds one (and PostgreSQL's text holds none).
    _, seq = _two(target.store)
    text = target.get(Slot("row", seq=seq))
    target.put(Slot("row", seq=seq), text.replace('"doomed"', '"doo\x00med"', 1))
    with pytest.raises(StoreError):
        _cold(target.store)


@pytest.mark.parametrize("target", ENGINES, indirect=True)
def test_rows_and_records_with_whitespace_around_them_read_as_json_does(target: Target) -> None:
    # lethe writes none; JSON allows it around a value, and a reader parses it as json.loads does.
    shared, seq = _two(target.store)
    behind = _behind(shared)
    shared.update(lambda m: m.put("later", key="later"))
    target.put(Slot("row", seq=seq), f" \n{target.get(Slot('row', seq=seq))}\t ")
    record = Slot("record", version=shared.version)
    target.put(record, f"\n{target.get(record)} ")
    assert sorted(_cold(target.store).current().keys()) == ["doomed", "kept", "later"]
    assert sorted(behind.current().keys()) == ["doomed", "kept", "later"]


@pytest.mark.parametrize("field", ["{seq},{other}", "0{seq}", "{seq} ", "", "x"])
@pytest.mark.parametrize("target", [kind for kind in ENGINES if kind == "redis"], indirect=True)
def test_a_redis_row_keyed_by_a_field_that_is_not_one_put_order_is_refused(target: Target, field: str) -> None:
    # The fields are checked joined by commas: one holding a comma must not pass for two put orders.
    _, seq = _two(target.store)
    target.put(Slot("row_seq", seq=seq), field.format(seq=seq, other=seq + 1))
    with pytest.raises(StoreError, match="the store is damaged: an entry is keyed by"):
        _cold(target.store)


@pytest.mark.parametrize("target", ENGINES, indirect=True)
def test_a_row_s_instant_a_microsecond_past_datetime_max_is_refused(target: Target) -> None:
    # Its float rounds to datetime.max's: a bound kept as a float let it through to an OverflowError.
    _, seq = _two(target.store)
    row = json.loads(target.get(Slot("row", seq=seq)))
    row[3:5] = [253402300800000000, 253402300800000000]
    target.put(Slot("row", seq=seq), json.dumps(row))
    with pytest.raises(StoreError, match=r"entries\[\d\]\.inserted_us"):
        _cold(target.store)


def _newest_head(target: Target) -> Slot:
    if isinstance(target, SQLTarget):
        return Slot("head", version=target.store.load(NAME)[0])
    return Slot("head")


@pytest.mark.parametrize(
    ("field", "value", "refused"),
    [
        (0, 10**400, "head.next_key"),
        (1, 10**400, "head.next_seq"),
        (1, 2**63 + 1, "head.next_seq"),
        (2, 10**400, "head.latest"),
        (2, -(10**18), "head.latest"),
        (2, 253402300800000000, "head.latest"),
    ],
    ids=[
        "next_key 10**400",
        "next_seq 10**400",
        "next_seq 2**63+1",
        "latest 10**400",
        "latest before year 1",
        "latest a microsecond past datetime.max",
    ],
)
@pytest.mark.parametrize("target", ENGINES, indirect=True)
def test_a_hostile_head_is_refused_and_nothing_is_written(target: Target, field: int, value: int, refused: str) -> None:
    _two(target.store)
    slot = _newest_head(target)
    head = json.loads(target.get(slot))
    head[field] = value
    target.put(slot, json.dumps(head))
    version = target.store.load(NAME)[0]
    with pytest.raises(StoreError, match=refused):
        _cold(target.store)
    assert target.store.load(NAME)[0] == version


@pytest.mark.parametrize("target", ENGINES, indirect=True)
def test_a_put_order_past_what_a_store_keeps_is_never_written(target: Target) -> None:
    _two(target.store)
    slot = _newest_head(target)
    head = json.loads(target.get(slot))
    head[1] = 2**63  # the most a head holds: every put order so far is below it, the next one is not
    target.put(slot, json.dumps(head))
    follower = _cold(target.store)
    version = follower.version
    refused = r"head\.next_seq: .* past 2\*\*63, the most a store keeps; nothing was written"
    with pytest.raises(StoreError, match=refused):
        follower.update(lambda m: m.put("one too many", key="new"))
    assert target.store.load(NAME)[0] == version
    assert "new" not in _cold(target.store).current()
    follower.update(lambda m: m.delete("kept"))  # what puts nothing new still commits
    assert list(_cold(target.store).current().keys()) == ["doomed"]


# The engines keeping versions in a file or on a server, each with a last one it keeps
# (conftest.DURABLE_ENGINES; InMemoryStore's are Python ints).
@pytest.mark.parametrize("target", DURABLE_ENGINES, indirect=True)
def test_no_version_past_the_last_an_engine_keeps_is_committed(target: Target) -> None:
    _two(target.store)
    latest = target.store.load(NAME)[0]
    last = 10**13 - 1 if target.engine == "redis" else 2**63 - 1  # (Redis's scripts read 13 digits)
    target.put(Slot("log_version", version=latest), last)  # the newest record, and its head, moved up
    if target.engine == "redis":
        target.put(Slot("latest"), str(last))
    follower = _cold(target.store)
    assert follower.version == last
    with pytest.raises(StoreError, match=r"the last (it|one SQLite) keeps"):
        follower.update(lambda m: m.put("x", key="x"))
    assert target.store.load(NAME)[0] == last
    assert "x" not in _cold(target.store).current()


@pytest.mark.parametrize("target", ["memory"], indirect=True)
def test_a_latest_version_ahead_of_the_log_raises_rather_than_retrying_for_ever(target: Target) -> None:
    # An engine whose latest version says records its log does not give: every commit would be
    # refused (the version is taken), and every catch-up would find nothing to fold.
    shared, _ = _two(target.store)
    target.put(Slot("latest"), shared.version + 5)
    outcomes: list[BaseException | None] = []

    def run(call: Callable[[], Any]) -> None:
        try:
            call()
            outcomes.append(None)
        except BaseException as exc:
            outcomes.append(exc)

    for call in (lambda: shared.update(lambda m: m.put("x", key="x")), lambda: shared.wait(timeout=None)):
        worker = threading.Thread(target=run, args=(call,), daemon=True)
        worker.start()
        worker.join(10)
        assert not worker.is_alive(), "still retrying"
        assert isinstance(outcomes[-1], StoreError)
        assert f"its log holds no record after version {shared.version}" in str(outcomes[-1])


@pytest.mark.parametrize("target", ENGINES, indirect=True)
def test_at_a_version_whose_record_is_gone_raises_store_error(target: Target) -> None:
    store = target.store
    shared = Shared(store, NAME, _template(), checkpoint_every=1000, max_clock_skew=None)
    for i in range(5):
        shared.update(lambda m, i=i: m.put(i, key=i))
    target.put(Slot("log_version", version=3), 0)  # record 3 out of the log's range
    with pytest.raises(StoreError, match="version 3"):  # not "after the latest version"
        shared.at(3)


@pytest.mark.parametrize("target", ENGINES, indirect=True)
def test_versions_past_every_int_an_engine_keeps_are_asked_for_as_any_other(target: Target) -> None:
    shared, _ = _two(target.store)
    with pytest.raises(ValueError, match=r"version 10{30} is after the latest version \(3\)"):
        shared.at(10**30)
    assert list(shared.evictions(since=10**30)) == []


@pytest.mark.parametrize("target", ENGINES, indirect=True)
def test_json_nested_past_what_python_reads_is_a_store_error(target: Target) -> None:
    _, seq = _two(target.store)
    target.put(Slot("row", seq=seq), "[" * 5000 + "]" * 5000)
    # Python up to 3.12 cannot read it (RecursionError, refused as too deep); 3.13's parser can,
    # and the row is then refused for its shape: a StoreError naming it either way.
    with pytest.raises(StoreError, match=r"entries\[\d\]: (nested deeper than JSON can be read|expected a list)"):
        _cold(target.store)


@pytest.mark.parametrize(
    ("kind", "value", "refused"),
    [
        ("log_version", "x", "its latest version is 'x', not a version number"),
        ("log_version", 2.5, r"its log version is '2.5', not a version number"),
        ("config", b"{}", "its configuration is bytes, not text"),
        ("head", b"[1]", "its head is bytes, not text"),
        ("record", b"[1]", "its log record 3 is bytes, not text"),
        ("row", b"[1]", r"entries\[\d\]: expected JSON text, got bytes"),
        ("row", _Invalid(b"[\xff]"), "Could not decode to UTF-8"),
        ("row_seq", "x", r"the store keys it by 'x'"),
    ],
)
@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
def test_sqlite_columns_holding_what_lethe_never_writes(target: Target, kind: str, value: Any, refused: str) -> None:
    # SQLite keeps whatever type another client writes into a column (a BLOB, a REAL, TEXT).
    shared, seq = _two(target.store)
    version = shared.version - 1 if value == 2.5 else shared.version  # (2.5: below the latest, 3)
    slot = Slot(kind, seq=seq) if kind.startswith("row") else Slot(kind, version=version)
    target.put(slot, value)
    with pytest.raises(StoreError, match=refused):
        _cold(target.store).current()


@pytest.mark.parametrize("target", ENGINES, indirect=True)
def test_a_record_that_gives_an_entry_another_put_order_is_refused(target: Target) -> None:
    # Folded as it is, the reader would hold "k" under the put order of "j", and its delete of
    # "k" would remove the row of "j" (and leave the row of "k", to come back on the next open).
    writer, reader = _cold(target.store), _cold(target.store)
    writer.update(lambda m: m.put("j", key="j"))
    writer.update(lambda m: m.put("k", key="k"))
    record = target.get(Slot("record", version=2))
    target.put(Slot("record", version=2), record.replace('"written":[[1,', '"written":[[0,', 1))
    with pytest.raises(StoreError, match=r"log record 2 was not made on version 1: written\[0\]\.seq: 0"):
        reader.current()


@pytest.mark.parametrize(
    ("change", "raised", "says"),
    [
        (lambda doc: doc.pop("half_life"), StoreError, "the stored configuration has no half_life"),
        (lambda doc: doc.update(max_entries="six"), StoreError, "the stored configuration cannot be read"),
        (lambda doc: doc.update(max_entries=7), ValueError, "stored with another configuration: max_entries"),
    ],
)
@pytest.mark.parametrize("target", ["memory"], indirect=True)
def test_a_damaged_configuration_is_told_from_another_one(
    target: Target, change: Callable[[dict[str, Any]], Any], raised: type[Exception], says: str
) -> None:
    _two(target.store)
    doc = json.loads(target.get(Slot("config")))
    change(doc)
    target.put(Slot("config"), json.dumps(doc))
    with pytest.raises(raised, match=says):
        _cold(target.store)


def test_an_engine_that_gives_rows_without_their_put_orders_is_told_so() -> None:
    class Older(InMemoryStore):
        """An engine written for the interface before rows came with the put orders keying them."""

        def load(self, name: str) -> Any:
            version, head, rows = super().load(name)
            return version, head, [text for _, text in rows]

    store = Older()
    _two(store)
    with pytest.raises(StoreError, match=r"entries: expected \(seq, row\) pairs from the engine, got str"):
        _cold(store)
