"""``lethe inspect FILE``: a saved ``Memory.to_dict()`` as a table (or JSON) at a chosen moment.

``FILE`` may also be a lethe store: an SQLite file (``lethe.store.SQLiteStore``, told by its
content), or the URL of a Redis (``RedisStore``) or PostgreSQL (``PostgresStore``) server,
told by its scheme.  The memory ``--name`` in it is read at its latest version, without
writing to the store.  A password in a URL is never printed.

Scores, states and forecasts are the library's own: ``Memory.scored``,
``Memory.time_until`` (when an entry falls below a threshold) and
``Memory.next_eviction``, read on a :class:`~lethe.ManualClock` set to ``--at``.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol, TextIO
from urllib.parse import unquote

from lethe import ClockWarning, Entry, ManualClock, Memory
from lethe._cli._format import (
    CLIError,
    Progress,
    format_duration,
    json_type,
    parse_duration,
    parse_time,
    preview,
    printing,
    read_lines,
    table,
    write_json,
)
from lethe._cli._models import half_life_of
from lethe._cli._states import count_text, counts, state
from lethe._memory.version import snapshot_of
from lethe.decay import BUILTINS
from lethe.store import Shared, SQLiteStore, StoreError
from lethe.store._shared import stored_template


def _unscored(entry: Entry[Any, Any], now: datetime) -> float:
    """The stand-in for a saved custom decay function: ``inspect`` never scores with it."""
    raise RuntimeError("scores are unavailable: the memory was saved with a custom decay function")


@dataclass
class Loaded:
    """A memory read by ``lethe inspect``, and where its scores come from.

    ``name`` and ``version`` say which memory of a store, at which version, it is (None for a JSON file).
    """

    memory: Any
    scored: bool
    scores: str
    decay_fn: Any
    model_text: str
    name: str | None = None
    version: int | None = None


#: The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


#: The URL schemes ``inspect`` reads a store server at, and the server each names (those that
#: ``redis.Redis.from_url`` and libpq take).
STORE_SCHEMES = {
    "redis://": "redis",
    "rediss://": "redis",
    "unix://": "redis",
    "postgresql://": "postgres",
    "postgres://": "postgres",
}

#: What looks like a URL (``scheme://``), store or not.
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def server_of(path: str) -> str | None:
    """``"redis"`` or ``"postgres"`` for a store URL (by its scheme), None for a file path.

    >>> server_of("redis://localhost:6379/0"), server_of("postgres://db/agents"), server_of("agent-memory.db")
    ('redis', 'postgres', None)
    """
    return next((server for scheme, server in STORE_SCHEMES.items() if path.startswith(scheme)), None)


def looks_like_url(path: str) -> bool:
    """Whether ``path`` starts as a URL does (``scheme://``), a store's or not.

    >>> looks_like_url("postgresql+psycopg://db/agents"), looks_like_url("agent-memory.db")
    (True, False)
    """
    return _URL.match(path) is not None


def not_a_store_url() -> str:
    """The words that refuse a URL of another scheme than a store's, naming the schemes a store URL has.

    >>> not_a_store_url()
    'not a store URL (one starts with redis://, rediss://, unix://, postgresql://, postgres://)'
    """
    return f"not a store URL (one starts with {', '.join(STORE_SCHEMES)})"


def timeout_needs_a_server(path: str) -> None:
    """Raise CLIError unless ``path`` is a store URL: ``--timeout`` is how long to try to reach a server.

    Raises:
        CLIError: ``path`` is a file path (or a URL of another scheme), which has no server to reach.
    """
    if server_of(path) is None:
        raise CLIError(f"--timeout: {shown(path)} is not a store URL (--timeout is how long to try to reach a server)")


def _query_pair(match: re.Match[str]) -> str:
    """A ``key=value`` pair of a URL's query, its value hidden if the key names a password."""
    return f"{match[1]}{match[2]}=***" if "password" in unquote(match[2]).lower() else match[0]


def shown(path: str) -> str:
    """``path`` as printed: a URL's passwords (in its user information and in query parameters
    such as ``password`` and ``sslpassword``) replaced by ``***``; a file path as it is.

    The user information is taken to end at the last ``@`` before the first ``/`` after the
    host (as libpq reads it, which holds what ``urllib`` reads as the user information).

    >>> shown("redis://default:s3cret@cache:6379/0")
    'redis://default:***@cache:6379/0'
    >>> shown("postgresql://app@db/agents?password=s3cret&sslmode=require")
    'postgresql://app@db/agents?password=***&sslmode=require'
    >>> shown("agent-memory.db")
    'agent-memory.db'
    """
    if not _URL.match(path):
        return path
    scheme, rest = path.split("://", 1)
    authority, slash, tail = rest.partition("/")
    if "@" in authority:
        userinfo, host = authority.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        authority = f"{userinfo}@{host}"
    return f"{scheme}://" + re.sub(r"([?&])([^?&=]*)=([^&]*)", _query_pair, authority + slash + tail)


def _secrets(path: str) -> list[str]:
    """The passwords :func:`shown` hides in the URL ``path``, as written and percent-decoded, longest first."""
    if not _URL.match(path):
        return []
    rest = path.split("://", 1)[1]
    authority = rest.partition("/")[0]
    found = []
    if "@" in authority and ":" in authority.rsplit("@", 1)[0]:
        found.append(authority.rsplit("@", 1)[0].split(":", 1)[1])
    for pair in re.split(r"[?&]", rest):
        key, equals, value = pair.partition("=")
        if equals and "password" in unquote(key).lower():
            found.append(value)
    return sorted({form for secret in found for form in (secret, unquote(secret)) if form}, key=len, reverse=True)


def scrubbed(text: str, path: str) -> str:
    """``text``, a message about ``path``, safe to print: for a URL, one line, and any password of
    it (see :func:`shown`) replaced by ``***``, as client libraries may quote the URL they were given."""
    if not _URL.match(path):
        return text
    text = " ".join(text.split())
    for secret in _secrets(path):
        text = text.replace(secret, "***")
    return text


def is_store(path: str) -> bool:
    """Whether ``path`` is an SQLite database (a lethe store, if anything), by its first bytes, whatever its name.

    Raises:
        CLIError: no such file, or it cannot be read.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode) and not os.path.isdir(path):
            return False  # a pipe (``<(cat m.json)``, ``/dev/stdin``): read once, as a JSON file
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except FileNotFoundError:
        if looks_like_url(path):
            raise CLIError(f"{shown(path)}: no such file, and {not_a_store_url()}") from None
        raise CLIError(f"{path}: no such file") from None
    except OSError as exc:
        raise CLIError(f"{path}: cannot read: {exc}") from None


def _stand_in(identity: str | None) -> Callable[[Entry[Any, Any], datetime], float]:
    """:func:`_unscored` under the identity a store keeps for a custom decay function (its
    ``function`` field; None for a store that keeps none): a decay function's declared
    ``name`` is its identity, so ``Shared`` takes the stand-in for the stored function."""

    def unscored(entry: Entry[Any, Any], now: datetime) -> float:
        return _unscored(entry, now)

    if identity is not None:
        unscored.__dict__["name"] = identity
    return unscored


def _template(config_text: str, clock: ManualClock) -> tuple[Memory[Any, Any], dict[str, Any]]:
    """An empty memory under the stored configuration, and the stored ``decay_fn`` document.

    A custom decay function cannot be rebuilt: a :func:`_stand_in` takes its place.
    """
    config = json.loads(config_text)
    if not isinstance(config, dict) or not isinstance(config.get("decay_fn"), dict):
        raise ValueError(f"expected a JSON object with a decay_fn object, got {config_text:.80}")
    saved: dict[str, Any] = config["decay_fn"]
    function = saved.get("function")
    stand_in = _stand_in(function if isinstance(function, str) else None) if saved.get("name") == "custom" else None
    return stored_template(config, clock_fn=clock, decay_fn=stand_in), saved


#: Seconds ``inspect`` keeps trying to reach a store server by default (``--timeout``).
DEFAULT_TIMEOUT = 10.0


class Readable(Protocol):
    """The reading half of a :class:`~lethe.store.Store`: what ``inspect`` uses of one."""

    def names(self) -> list[str]:
        """See :meth:`lethe.store.Store.names`."""
        ...

    def config(self, name: str) -> str:
        """See :meth:`lethe.store.Store.config`."""
        ...

    def load(self, name: str) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.load`."""
        ...

    def read(self, name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
        """See :meth:`lethe.store.Store.read`."""
        ...

    def wait(self, name: str, after: int, timeout: float) -> int:
        """See :meth:`lethe.store.Store.wait`."""
        ...

    def time(self) -> float:
        """See :meth:`lethe.store.Store.time`."""
        ...

    def checkpoint(self, name: str, at_most: int | None = None) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.checkpoint`."""
        ...

    def close(self) -> None:
        """See :meth:`lethe.store.Store.close`."""
        ...


class ReadOnly:
    """A :class:`~lethe.store.Store` that reads through to ``store`` and refuses every write
    with :class:`~lethe.store.StoreError`: what ``inspect`` hands :class:`~lethe.store.Shared`,
    so that a name gone between the check that it exists and the read is not created again.
    """

    def __init__(self, store: Readable) -> None:
        self._store = store

    @staticmethod
    def _refused(what: str) -> StoreError:
        return StoreError(f"inspect writes nothing, and {what}")

    def names(self) -> list[str]:
        """See :meth:`lethe.store.Store.names`."""
        return self._store.names()

    def config(self, name: str) -> str:
        """See :meth:`lethe.store.Store.config`."""
        return self._store.config(name)

    def open(self, name: str, config: str, head: str, rows: Sequence[tuple[int, str]]) -> str:
        """Refused: it would create ``name``."""
        raise self._refused(f"{name!r} is not in the store any more: it is not created")

    def load(self, name: str) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.load`."""
        return self._store.load(name)

    def read(self, name: str, after: int, upto: int | None = None) -> Sequence[tuple[int, str]]:
        """See :meth:`lethe.store.Store.read`."""
        return self._store.read(name, after, upto)

    def append(
        self,
        name: str,
        version: int,
        record: str,
        head: str,
        written: Sequence[tuple[int, str]],
        removed: Sequence[int],
        config: str | None = None,
        parent: str | None = None,
    ) -> bool:
        """Refused: a commit."""
        raise self._refused(f"commits nothing to {name!r}")

    def wait(self, name: str, after: int, timeout: float) -> int:
        """See :meth:`lethe.store.Store.wait`."""
        return self._store.wait(name, after, timeout)

    def time(self) -> float:
        """See :meth:`lethe.store.Store.time`."""
        return self._store.time()

    def checkpoint(self, name: str, at_most: int | None = None) -> tuple[int, str, list[tuple[int, str]]]:
        """See :meth:`lethe.store.Store.checkpoint`."""
        return self._store.checkpoint(name, at_most)

    def compact(self, name: str, min_gap: int) -> bool:
        """Refused: it writes a checkpoint."""
        raise self._refused(f"makes no checkpoint of {name!r}")

    def drop(self, name: str) -> bool:
        """Refused: it removes ``name``."""
        raise self._refused(f"removes nothing of {name!r}")

    def close(self) -> None:
        """Close ``store``."""
        self._store.close()


def _server_store(url: str, server: str, prefix: str | None, timeout: float) -> tuple[Readable, str]:
    """The store at the URL ``url`` of a ``server`` (see :func:`server_of`), opened without
    writing, and what to add to "holds no memories" (the key prefix of a Redis store).

    Raises:
        CLIError: its client library is not installed, or the URL is malformed (and see
            :func:`lethe.store._postgres.holds_store`).
        StoreError: the server cannot be reached, or holds a store of a newer lethe.
    """
    where = shown(url)
    try:
        if server == "redis":
            from lethe.store import RedisStore

            try:
                if prefix is None:
                    kept = RedisStore(url, timeout=timeout)
                else:
                    kept = RedisStore(url, prefix=prefix, timeout=timeout)
            except ValueError as exc:  # redis-py's: a malformed URL
                raise CLIError(f"{where}: not a valid Redis URL: {exc}") from None
            return kept, f" under the key prefix {kept.prefix!r} (--prefix)"
        from lethe.store import PostgresStore
        from lethe.store._postgres import holds_store

        try:
            held = holds_store(url, timeout)
        except StoreError as exc:
            raise CLIError(f"{where}: {exc}") from None
        if not held:
            raise CLIError(f"{where}: not a lethe store (a database without lethe's tables)")
        return PostgresStore(url, timeout=timeout), ""
    except ImportError as exc:  # the store's own message: what to install
        raise CLIError(f"{where}: {exc}") from None


def _client_errors(server: str | None) -> tuple[type[Exception], ...]:
    """The errors of the client library of ``server`` (none for a file, or when it is not installed)."""
    if server == "redis":
        from lethe.store._redis import CLIENT_ERRORS

        return CLIENT_ERRORS
    if server == "postgres":
        from lethe.store._postgres import CLIENT_ERRORS

        return CLIENT_ERRORS
    return ()


def _read(
    store: ReadOnly, where: str, name: str | None, clock: ManualClock, empty: str
) -> tuple[dict[str, Any], str, int]:
    """What :func:`read_store` returns, read from ``store`` (``where`` names it in messages;
    ``empty`` follows "holds no memories")."""
    names = store.names()
    held = ", ".join(map(repr, names)) if names else "none" + empty
    if name is None:
        if not names:
            raise CLIError(f"{where}: the store holds no memories{empty}")
        if len(names) != 1:
            raise CLIError(f"{where}: holds {len(names)} memories ({held}); choose one with --name")
        name = names[0]
    try:
        config_text = store.config(name)
    except KeyError:
        raise CLIError(f"{where}: no memory named {name!r}; the store holds {held}") from None
    try:
        template, saved = _template(config_text, clock)
    except (ValueError, RecursionError) as exc:
        raise CLIError(f"{where}: {name!r}: the stored configuration cannot be read: {exc}") from None
    try:
        with warnings.catch_warnings():
            # The memory is read again below, at --at: that reading reports a clock ahead of it.
            warnings.simplefilter("ignore", ClockWarning)
            shared = Shared(store, name, template)
            mem = shared.current()
    except StoreError as exc:  # a checkpoint or log record that cannot be read
        raise CLIError(f"{where}: {exc}") from None
    except ValueError as exc:  # the stored configuration, read back, differs from itself
        raise CLIError(f"{where}: {name!r}: {exc}") from None
    data = mem.to_dict()
    data["decay_fn"] = saved
    return data, name, shared.version


def read_store(
    path: str, name: str | None, clock: ManualClock, prefix: str | None = None, timeout: float = DEFAULT_TIMEOUT
) -> tuple[dict[str, Any], str, int]:
    """The latest version of the memory ``name`` in the lethe store ``path``, as ``Memory.to_dict()`` writes it,
    with the stored ``decay_fn`` document; and its name and version.

    ``path`` is an SQLite file or the URL of a Redis or PostgreSQL server (see :func:`server_of`;
    ``prefix`` is a Redis store's key prefix, its default when None, and ``timeout`` how long
    to keep trying to reach a server).  ``name`` may be None when the store holds exactly one
    memory.

    Nothing is written: an SQLite file is opened with ``SQLiteStore(path, read_only=True)``, which
    never writes to it nor folds a write-ahead log left behind into it, reads a file on a
    read-only volume or in a directory this process cannot write, and refuses a file without
    lethe's tables (the file must exist: :func:`load` checks); where the directory is writable,
    SQLite may leave its ``-wal`` and ``-shm`` files beside it, as any reader in WAL mode does.  A
    PostgreSQL database must hold lethe's tables (``PostgresStore`` would create them); the store
    is read through :class:`ReadOnly`, after checking that it holds ``name``.

    Raises:
        CLIError: no such file, not a lethe store (or a newer one), no such name (the message lists
            the names held), a configuration or log that cannot be read, a server that cannot be
            reached, a malformed URL, or a client library that is not installed.
    """
    server = server_of(path)
    where = shown(path)
    try:
        if server is None:
            with SQLiteStore(path, read_only=True) as sqlite:
                return _read(ReadOnly(sqlite), where, name, clock, "")
        store, empty = _server_store(path, server, prefix, timeout)
        try:
            return _read(ReadOnly(store), where, name, clock, empty)
        finally:
            store.close()
    except StoreError as exc:  # not a lethe store, or a newer one (an SQLite store's message names the file)
        raise CLIError(str(exc) if server is None else f"{where}: {exc}") from None
    except sqlite3.Error as exc:
        raise CLIError(f"{path}: cannot read the store: {exc}") from None
    except _client_errors(server) as exc:
        raise CLIError(f"{where}: cannot read the store: {type(exc).__name__}: {exc}") from None


def load(
    path: str,
    clock: ManualClock,
    model: str | None = None,
    name: str | None = None,
    prefix: str | None = None,
    timeout: float | None = None,
) -> Loaded:
    """The memory saved in ``path`` (CLIError with one line for every kind of bad file).

    ``path`` is a ``Memory.to_dict()`` JSON file or, told apart by its content, a lethe store
    (``SQLiteStore``), or the URL of a Redis or PostgreSQL server holding one (see
    :func:`server_of`; ``prefix``, a Redis store's key prefix, and ``timeout``, how long to
    keep trying to reach the server, are for those), read without writing: the memory ``name``
    in it (optional when it holds only one), at its latest version.  A memory saved with a
    custom decay function is loaded unscored unless ``model`` names a built-in to score it with.
    """
    if model is not None and model not in BUILTINS:
        raise CLIError(f"--model: unknown decay function {model!r}; choose one of {sorted(BUILTINS)}")
    server = server_of(path)
    where = shown(path)
    if prefix is not None and server != "redis":
        raise CLIError(f"--prefix: {where} is not a Redis URL (--prefix is the key prefix of a Redis store)")
    if timeout is not None:
        timeout_needs_a_server(path)
    version: int | None = None
    if server is not None:
        data, name, version = read_store(path, name, clock, prefix, DEFAULT_TIMEOUT if timeout is None else timeout)
    elif is_store(path):
        data, name, version = read_store(path, name, clock)
    elif name is not None:
        raise CLIError(
            f"--name: {where} is not a lethe store (--name picks a memory in an SQLite store file or at a store URL)"
        )
    else:
        text = "".join(read_lines(path))
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise CLIError(f"{where}: not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise CLIError(f"{where}: expected a JSON object saved by Memory.to_dict(), got a JSON {json_type(data)}")
    saved: Any = data.get("decay_fn")
    custom = isinstance(saved, dict) and saved.get("name") == "custom"
    # A store keeps no repr of a custom decay function, only that it was custom.
    described = f"{saved.get('repr', '?')!s:.60}" if custom and version is None else None
    if not custom:
        saved_repr = "its saved decay function"
    else:
        saved_repr = "a custom decay function" + ("" if described is None else f" ({described})")
    if model is not None:
        decay_fn: Any = model
        scores = f"scored with --model {model} (built from the saved half_life), not {saved_repr}"
    elif custom:
        decay_fn = _unscored
        scores = f"unavailable: saved with {saved_repr}; pass --model NAME to score with a built-in model"
    else:
        decay_fn, scores = None, "scored with its saved decay function"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ClockWarning)
            mem = Memory.from_dict(data, clock_fn=clock, decay_fn=decay_fn)
    except Exception as exc:
        raise CLIError(f"{where}: not a saved memory: {exc}") from None
    for warning in caught:
        if issubclass(warning.category, ClockWarning):  # one plain line, not a Python warning
            print(f"note: {where}: {warning.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    decay_doc = saved if decay_fn is _unscored else getattr(mem.decay_fn, "to_dict", lambda: {"name": "?"})()
    if decay_fn is _unscored:
        model_text = "custom decay function" + ("" if described is None else f" {described}")
    else:
        model_text = repr(mem.decay_fn)
    return Loaded(
        memory=mem,
        scored=decay_fn is not _unscored,
        scores=scores,
        decay_fn=decay_doc,
        model_text=model_text,
        name=name,
        version=version,
    )


def crossing(mem: Memory[Any, Any], key: Any, threshold: float, at: datetime) -> float | None:
    """Seconds after ``at`` (the memory's clock reading) when the entry first scores below ``threshold``.

    ``Memory.time_until`` in seconds: exact, to the microsecond. 0.0 when it
    already does (or is past its deadline: gone already); None when it never
    will, or not before the largest representable time (``datetime.max``,
    read in the zone of ``at``).
    """
    if key not in mem:  # past its deadline
        return 0.0
    try:
        wait = mem.time_until(key, threshold)
        if wait is not None:
            _ = at + wait  # past datetime.max: OverflowError
    except OverflowError:
        return None
    return None if wait is None else wait.total_seconds()


def _next_eviction(mem: Memory[Any, Any]) -> datetime | None:
    """``Memory.next_eviction()``, None when it lies beyond the representable time."""
    try:
        return mem.next_eviction()
    except OverflowError:
        return None


@dataclass
class Row:
    """One entry of ``lethe inspect``; ``score`` and the forecasts are None when unavailable."""

    key: Any
    score: float | None
    state: str
    age: float
    last_access: float
    access_count: int
    importance: float
    preview: str
    value: Any
    summary: Any
    summarize_in: float | None
    evict_in: float | None


def inspect_rows(
    mem: Any, clock: ManualClock, at: datetime, sort: str = "score", top: int | None = None, scored: bool = True
) -> tuple[list[Row], dict[str, int]]:
    """The rows of ``lethe inspect`` for ``mem`` at ``at``, sorted and cut to ``top``, and every entry's state counts.

    Without scores (``scored=False``) the ``score`` order is pinned first, then the latest put first.
    """
    clock.set(at)
    pairs: list[tuple[Any, float | None]]
    if scored:
        pairs = list(mem.scored())
    else:
        keys = mem.keys()  # not iter(mem): that ranks by score
        entries = sorted((mem.peek(k) for k in keys), key=lambda e: (e.pinned, e.seq), reverse=True)
        pairs = [(e, None) for e in entries]
    # Entries past their deadline are gone for every read, but the file still holds them
    # (the next write would remove and report them): listed last, as expired.
    gone = sorted((e for e in snapshot_of(mem).entries.values() if e.key not in mem), key=lambda e: e.seq, reverse=True)
    pairs += [(e, 0.0 if scored else None) for e in gone]
    states = [state(entry, score, mem, at) for entry, score in pairs]
    order = list(range(len(pairs)))
    if sort == "age":
        order.sort(key=lambda i: (pairs[i][0].inserted_at, pairs[i][0].seq))
    elif sort == "key":
        order.sort(key=lambda i: (type(pairs[i][0].key).__name__, str(pairs[i][0].key)))
    if top is not None:
        order = order[:top]
    progress = Progress("inspect", len(order))
    rows = []
    try:
        for n, i in enumerate(order):
            progress.update(n)
            entry, score = pairs[i]
            rows.append(
                Row(
                    key=entry.key,
                    score=score,
                    state=states[i],
                    age=(at - entry.inserted_at).total_seconds(),
                    last_access=(at - entry.last_accessed_at).total_seconds(),
                    access_count=entry.access_count,
                    importance=entry.importance,
                    preview=preview(entry.value),
                    value=entry.value,
                    summary=entry.summary,
                    summarize_in=crossing(mem, entry.key, mem.summarize_threshold, at) if scored else None,
                    evict_in=crossing(mem, entry.key, mem.eviction_threshold, at) if scored else None,
                )
            )
    finally:
        progress.done()
    return rows, counts(states)


def _when(after: float | None, scored: bool = True) -> str:
    if not scored:
        return "unavailable"
    if after is None:
        return "never"
    if after == 0.0:
        return "now"
    return "in " + format_duration(after)


def _iso(at: datetime, after: float | None) -> str | None:
    return None if after is None else (at + timedelta(seconds=after)).isoformat()


@dataclass(frozen=True)
class Source:
    """How :func:`inspect` reads the memory at its ``path`` (None: the default)."""

    #: A built-in decay model to score with (a memory saved with a custom one is shown unscored without it).
    model: str | None = None
    #: The memory to read in a store.
    name: str | None = None
    #: A Redis store's key prefix.
    prefix: str | None = None
    #: How long to keep trying to reach a server: a duration (``30s``, ``2m``).
    timeout: str | None = None


def inspect(
    path: str,
    at: str | None = None,
    top: int | None = None,
    sort: str = "score",
    as_json: bool = False,
    out: TextIO | None = None,
    source: Source = Source(),
    search: str | None = None,
) -> int:
    """Print the entries of a saved memory with their scores, states, summaries and threshold crossings.

    With ``search``, only the entries :meth:`~lethe.Memory.search` finds for that text, best
    first (``top`` of them, 10 by default), each with the number that ranked it (its match):
    lexical relevance (the saved vectors need the process's ``embed_fn``), plus a quarter of its
    score when the memory can be scored.

    ``path`` is a ``Memory.to_dict()`` JSON file, a lethe store file or a store URL;
    ``source`` (:class:`Source`) tells how to read it: ``model`` names a built-in to
    score with, ``name`` picks the memory in a store, ``prefix`` is a Redis store's key prefix,
    and ``timeout`` (a duration: ``30s``, ``2m``) how long to keep trying to reach a server.
    A URL is printed without its password, in the output and in errors.  Prints to ``out``,
    else to ``sys.stdout`` as it is when called.
    """
    timeout = source.timeout
    if out is None:
        out = sys.stdout
    moment = datetime.now(timezone.utc) if at is None else parse_time(at, "--at")
    if top is not None and top < 0:
        raise CLIError(f"--top: must be >= 0, got {top}")
    seconds = None if timeout is None else parse_duration(timeout, "--timeout")
    clock = ManualClock(moment)
    try:
        loaded = load(
            path,
            clock,
            model=source.model,
            name=source.name,
            prefix=source.prefix,
            timeout=seconds,
        )
    except CLIError as exc:
        raise CLIError(scrubbed(str(exc), path)) from None
    where = shown(path)
    mem = loaded.memory
    rows, by_state = inspect_rows(
        mem, clock, moment, sort=sort, top=top if search is None else None, scored=loaded.scored
    )
    matches: dict[Any, float] = {}
    if search is not None:
        clock.set(moment)
        weight = 0.25 if loaded.scored else 0.0
        k = 10 if top is None else top
        hits = mem.search(search, k=k, decay_weight=weight, lexical_weight=1.0) if k else []
        matches = {e.key: n for e, n in hits}
        found = {r.key: r for r in rows if r.key in matches}
        rows = [found[key] for key in matches]
    half_life = half_life_of(mem) if loaded.scored else None
    upcoming = _next_eviction(mem) if loaded.scored else None
    expired = by_state.get("expired", 0)  # gone for every read, still in the file
    kept_in = "the file" if server_of(path) is None else "the store"
    held = f"{len(mem)}/{mem.max_entries} entries" + (f" (+{expired} expired, still in {kept_in})" if expired else "")
    if as_json:
        doc = {
            "file": where,
            **({} if loaded.version is None else {"name": loaded.name, "version": loaded.version}),
            "at": moment.isoformat(),
            "size": len(mem),
            "expired": expired,
            "max_entries": mem.max_entries,
            "decay_fn": loaded.decay_fn,
            "scores": loaded.scores,
            "half_life": half_life,
            "summarize_threshold": mem.summarize_threshold,
            "eviction_threshold": mem.eviction_threshold,
            "next_eviction": None if upcoming is None else upcoming.isoformat(),
            "counts": by_state,
            **({} if search is None else {"search": search}),
            "entries": [
                {
                    "key": r.key,
                    **({} if search is None else {"match": matches[r.key]}),
                    "score": r.score,
                    "state": r.state,
                    "age_seconds": r.age,
                    "last_access_seconds_ago": r.last_access,
                    "access_count": r.access_count,
                    "importance": r.importance,
                    "preview": r.preview,
                    "value": r.value,
                    "summary": r.summary,
                    "summarize_in_seconds": r.summarize_in,
                    "summarize_at": _iso(moment, r.summarize_in),
                    "evict_in_seconds": r.evict_in,
                    "evict_at": _iso(moment, r.evict_in),
                }
                for r in rows
            ],
        }
        write_json(doc, out)
        return 0
    w = printing(out)
    which = "" if loaded.version is None else f"{loaded.name} @ version {loaded.version}, "
    next_text = "unavailable" if not loaded.scored else "never" if upcoming is None else upcoming.isoformat()
    w(
        f"{where}: {which}{held}, {loaded.model_text}, at {moment.isoformat()}\n"
        f"scores: {loaded.scores}; "
        + (f"half-life {format_duration(half_life)}\n" if half_life is not None else "no half-life\n")
        + f"thresholds: summarize < {mem.summarize_threshold:g}, evict < {mem.eviction_threshold:g}; "
        f"next eviction: {next_text}\n"
        f"states: {count_text(by_state)}\n\n"
    )
    header: tuple[str, ...] = (
        "key",
        "score",
        "state",
        "age",
        "accessed",
        "n",
        "imp",
        "summarize",
        "evict",
        "value",
        "summary",
    )
    if search is not None:
        w(f"search: {search!r}, best first\n\n")
        header = ("match", *header)
    cells = [
        (
            *(() if search is None else (f"{matches[r.key]:.3f}",)),
            preview(r.key, 14),
            "n/a" if r.score is None else f"{r.score:.3f}",
            r.state,
            format_duration(r.age),
            format_duration(r.last_access) + " ago",
            str(r.access_count),
            f"{r.importance:g}",
            _when(r.summarize_in, loaded.scored),
            _when(r.evict_in, loaded.scored),
            r.preview,
            "-" if r.summary is None else preview(r.summary, 40),
        )
        for r in rows
    ]
    for line in table(header, cells):
        w(line + "\n")
    if not rows:
        w("(no entries)\n" if search is None else "(no entry matches)\n")
    return 0
