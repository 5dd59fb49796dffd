"""``lethe mcp``: serve a memory kept in a lethe store to agents, as an MCP server.

The memory ``--name`` of the store ``--db`` (an SQLite file, created with its
directory if missing, or the URL of a Redis or PostgreSQL store) is served by
:func:`lethe.integrations.mcp.server` over stdio (the default: an MCP client
starts the command) or streamable HTTP (``--transport streamable-http``).  A
name the store holds is served with its stored configuration; a new one is
created with ``--capacity``, ``--model`` and ``--half-life``.  Several servers
may serve one memory at once: every write is a ``Shared.transact``.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from dataclasses import dataclass
from typing import Any

from lethe import Memory
from lethe._cli._format import CLIError, parse_duration
from lethe._cli._inspect import looks_like_url, not_a_store_url, scrubbed, server_of, shown, timeout_needs_a_server
from lethe._cli._models import build_model
from lethe._memory.config import MAX_ENTRIES
from lethe.decay import BUILTINS
from lethe.store import Shared, SQLiteStore, Store, StoreClock, StoreError
from lethe.store._records import utf8
from lethe.store._shared import stored_template

#: The defaults of a memory ``lethe mcp`` creates: a long-term memory, whose untouched
#: entries lose half their strength in a week.
DEFAULT_NAME = "memory"
DEFAULT_CAPACITY = 1000
DEFAULT_MODEL = "exponential"
DEFAULT_HALF_LIFE = "7d"

#: The transports ``--transport`` takes, as ``MCPServer.run`` names them.
TRANSPORTS = ("stdio", "streamable-http")


@dataclass
class Options:
    """What ``lethe mcp`` was asked: the memory and how to serve it.

    ``capacity``, ``model`` and ``half_life`` are None when not given: a new memory
    takes the defaults, an existing one its stored configuration.
    """

    db: str
    name: str = DEFAULT_NAME
    capacity: int | None = None
    model: str | None = None
    half_life: str | None = None
    transport: str = "stdio"
    host: str = "127.0.0.1"
    port: int = 8000
    #: How long a store server may take to answer (a duration, ``30s``); None: the store's default.
    timeout: str | None = None


def open_store(db: str, timeout: float | None = None) -> Store:
    """The store ``db`` names: a Redis or PostgreSQL store for their URLs (``timeout``: how
    long to keep trying to reach the server, the store's default when None), else the SQLite
    file at that path (``~`` expanded, its directory created), which must be writable.

    Raises:
        CLIError: the file is not a lethe store (or a newer one's), cannot be written, the
            server's client library is not installed, or ``db`` is a URL of another scheme
            (taken for a path, it would make directories named after the URL, and serve an
            empty memory instead of the store it names).
    """
    server = server_of(db)
    if server is None and looks_like_url(db):
        raise CLIError(f"--db {shown(db)}: {not_a_store_url()} and not a file path")
    try:
        if server == "redis":
            from lethe.store import RedisStore

            return RedisStore(db) if timeout is None else RedisStore(db, timeout=timeout)
        if server == "postgres":
            from lethe.store import PostgresStore

            return PostgresStore(db) if timeout is None else PostgresStore(db, timeout=timeout)
        path = os.path.expanduser(db)
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        store = SQLiteStore(path)
    except ImportError as exc:  # the store's own message says what to install
        raise CLIError(f"--db {shown(db)}: {exc}") from None
    except (StoreError, OSError, sqlite3.Error, ValueError) as exc:  # each names the file or the server
        raise CLIError(f"--db: {scrubbed(str(exc), db)}") from None
    if store.read_only:
        store.close()
        raise CLIError(f"--db {db}: the file cannot be written, and a memory server writes to it")
    return store


def _stored(store: Store, where: str, name: str) -> Memory[Any, Any] | None:
    """An empty memory under the stored configuration of ``name``, on the store's clock (None:
    not in the store)."""
    if name not in store.names():
        return None
    try:
        doc = json.loads(store.config(name))
    except KeyError:  # dropped meanwhile
        return None
    except ValueError as exc:
        raise CLIError(f"{where}: {name!r}: the stored configuration cannot be read: {exc}") from None
    decay = doc.get("decay_fn") if isinstance(doc, dict) else None
    if isinstance(decay, dict) and decay.get("name") == "custom":
        raise CLIError(
            f"{where}: {name!r} decays with a custom function ({decay.get('function', '?')}), which lethe mcp "
            "cannot run: serve it from Python with lethe.integrations.mcp.server and a template holding it"
        )
    try:
        return stored_template(doc, clock_fn=StoreClock(store))
    except (TypeError, ValueError) as exc:
        raise CLIError(f"{where}: {name!r}: the stored configuration cannot be read: {exc}") from None


def _differs(stored: Memory[Any, Any], where: str, name: str, options: Options) -> None:
    """Raise CLIError when a flag asks for another configuration than the stored one."""
    if options.capacity is not None and options.capacity != stored.max_entries:
        raise CLIError(
            f"--capacity {options.capacity}: {name!r} in {where} holds at most {stored.max_entries} entries "
            "(its stored configuration); leave --capacity out to serve it as stored"
        )
    if options.model is None and options.half_life is None:
        return
    stored_model = getattr(stored.decay_fn, "name", DEFAULT_MODEL)
    model = stored_model if options.model is None else options.model
    stored_half_life: Any = stored.half_life  # seconds, as a memory keeps it
    half_life = (
        float(stored_half_life) if options.half_life is None else parse_duration(options.half_life, "--half-life")
    )
    if build_model(model, half_life) != stored.decay_fn:
        flag = "--model" if BUILTINS.get(model) is not type(stored.decay_fn) else "--half-life"
        raise CLIError(
            f"{flag}: {name!r} in {where} decays with {stored.decay_fn!r} (its stored configuration); "
            "leave --model and --half-life out to serve it as stored"
        )


def check(options: Options) -> float | None:
    """Raise CLIError naming the first bad flag of ``options``, before anything is opened; else
    return ``--timeout`` in seconds (None when not given)."""
    if options.capacity is not None and not 1 <= options.capacity <= MAX_ENTRIES:
        raise CLIError(f"--capacity: must be a number of entries from 1 to 2**63 - 1, got {options.capacity}")
    # (the model a new memory would decay with: a model or half-life it cannot be built from is
    # refused before the store is opened, or created)
    build_model(options.model or DEFAULT_MODEL, parse_duration(options.half_life or DEFAULT_HALF_LIFE, "--half-life"))
    if "\x00" in options.name or not utf8(options.name):
        raise CLIError(f"--name: must be text without NUL characters or lone surrogates, got {options.name!r}")
    if options.transport not in TRANSPORTS:
        raise CLIError(f"--transport: expected one of {', '.join(TRANSPORTS)}, got {options.transport!r}")
    if not 0 <= options.port <= 65535:
        raise CLIError(f"--port: expected a port number from 0 to 65535, got {options.port}")
    if options.timeout is None:
        return None
    seconds = parse_duration(options.timeout, "--timeout")
    timeout_needs_a_server(options.db)
    return seconds


def _can_listen(host: str, port: int) -> None:
    """CLIError in one line unless a socket can listen on ``host`` and ``port`` (tried, then
    closed: the HTTP server logs such a failure in many lines and exits with status 3).

    Raises:
        CLIError: the host does not resolve, or the port is in use or not allowed.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (OSError, UnicodeError) as exc:
        raise CLIError(f"--host: cannot listen on {host!r}: {exc}") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (as the server sets it)
        try:
            probe.bind(address)
            probe.listen()
        except OSError as exc:
            raise CLIError(f"--port: cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def template(store: Store, where: str, options: Options) -> Memory[Any, Any]:
    """The template to open ``options.name`` with: its stored configuration when the store holds
    it (the flags, when given, must agree with it), else one made from the flags and defaults;
    its clock is the store's (:class:`~lethe.store.StoreClock`).

    Raises:
        CLIError: a flag differs from the stored configuration, a bad flag, or a stored
            configuration that cannot be served (a custom decay function).
    """
    check(options)
    stored = _stored(store, where, options.name)
    if stored is not None:
        _differs(stored, where, options.name, options)
        return stored
    half_life = parse_duration(options.half_life or DEFAULT_HALF_LIFE, "--half-life")
    model = options.model or DEFAULT_MODEL
    return Memory(
        max_entries=DEFAULT_CAPACITY if options.capacity is None else options.capacity,
        decay_fn=build_model(model, half_life),
        clock_fn=StoreClock(store),
    )


def serve(options: Options) -> int:
    """Run ``lethe mcp`` until its client goes (stdio) or it is interrupted; returns the exit status.

    Raises:
        CLIError: the MCP SDK is not installed, or a bad store, name or flag.
    """
    try:
        from lethe.integrations.mcp import server
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] not in ("mcp", "mcp_types", "pydantic"):
            raise
        raise CLIError(f"needs the MCP SDK ({exc}): pip install 'lethe-decay[mcp]'") from None
    timeout = check(options)
    if options.transport != "stdio":
        _can_listen(options.host, options.port)  # (before the store is opened, or created)
    where = shown(options.db)
    store = open_store(options.db, timeout)
    try:
        try:
            shared: Shared[Any, Any] = Shared(store, options.name, template(store, where, options))
        except (ValueError, TypeError, StoreError) as exc:  # a name held with another configuration, ...
            raise CLIError(f"{where}: {exc}") from None
        app = server(shared)
        try:
            if options.transport == "stdio":
                app.run("stdio")
            else:
                app.run("streamable-http", host=options.host, port=options.port)
        except KeyboardInterrupt:
            pass
        return 0
    finally:
        store.close()
