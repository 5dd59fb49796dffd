"""A process of ``test_store_hosts``, run inside a host's network namespace; it reports JSON lines on stdout.

``wait ADDRESS PORT``
    Return once a TCP connection to the server succeeds (exit 1 after 30 s).
``write ENGINE WHERE TAG PUTS CAPACITY``
    Open the shared memory and report ``{"ready": <this host's address as the
    server sees it>}``; on a line on stdin, put ``TAG-0`` ... ``TAG-<PUTS-1>``,
    each in its own update, and report ``{"done": true}``; on a second line,
    catch up and report what it heard and holds (see :func:`write`).
``check ENGINE WHERE CAPACITY``
    Open the memory cold and report its version, entries, log replay and
    eviction feed (see :func:`check`).

``ENGINE`` is ``redis`` (``WHERE`` a URL) or ``postgres`` (``WHERE`` a DSN).
"""

from __future__ import annotations

import json
import socket
import sys
import time
from contextlib import closing
from typing import Any

from lethe import Entry, Memory
from lethe.store import Shared, Store

NAME = "team"


def _open(engine: str, where: str) -> Store:
    if engine == "redis":
        from lethe.store import RedisStore

        return RedisStore(where, timeout=20)
    from lethe.store import PostgresStore

    return PostgresStore(where, timeout=20)


def _peer(engine: str, where: str) -> str:
    """The address this process connects from, as the server reports it."""
    if engine == "redis":
        import redis

        with redis.Redis.from_url(where) as client:
            return str(client.client_info()["addr"]).rsplit(":", 1)[0]
    import psycopg

    with psycopg.connect(where) as conn:
        found = conn.execute("SELECT host(inet_client_addr())").fetchone()
        return str(found[0] if found else None)


def _say(report: dict[str, Any]) -> None:
    print(json.dumps(report), flush=True)


def wait(address: str, port: int) -> int:
    """0 once a TCP connection to ``address:port`` succeeds, 1 if none does within 30 s."""
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection((address, port), timeout=1).close()
            return 0
        except OSError:
            if time.monotonic() > deadline:
                return 1
            time.sleep(0.05)


def write(engine: str, where: str, tag: str, puts: int, capacity: int) -> int:
    """Report, at the end: what ``on_evict`` heard, the versions this process committed,
    its replica just after its last commit and the log's replay to that version, and
    its replica caught up to the latest version."""
    heard: list[str] = []

    def on_evict(gone: tuple[Entry[Any, Any], ...]) -> None:
        heard.extend(e.value for e in gone)

    _say({"ready": _peer(engine, where)})
    with closing(_open(engine, where)) as store:
        shared: Shared[Any, str] = Shared(store, NAME, Memory(max_entries=capacity, on_evict=on_evict))
        sys.stdin.readline()
        committed: list[int] = []
        last = shared.current()
        for i in range(puts):
            last = shared.update(lambda m, i=i: m.put(f"{tag}-{i}"))
            committed.append(shared.version)
        _say({"done": True})
        sys.stdin.readline()
        current = shared.current()
        _say(
            {
                "heard": heard,
                "committed": committed,
                "last": last.to_dict(),
                "replayed": shared.at(committed[-1]).to_dict(),
                "version": shared.version,
                "current": current.to_dict(),
            }
        )
    return 0


def check(engine: str, where: str, capacity: int) -> int:
    """Report a cold open's version, held values and entries, the log replayed to its
    version, and the eviction feed from the start."""
    with closing(_open(engine, where)) as store:
        cold: Shared[Any, str] = Shared(store, NAME, Memory(max_entries=capacity))
        _say(
            {
                "version": cold.version,
                "held": [e.value for e in cold.current()],
                "current": cold.current().to_dict(),
                "replayed": cold.at(cold.version).to_dict(),
                "feed": [[v, [e.value for e in gone]] for v, gone in cold.evictions()],
            }
        )
    return 0


def main(argv: list[str]) -> int:
    mode, *args = argv
    if mode == "wait":
        return wait(args[0], int(args[1]))
    if mode == "write":
        return write(args[0], args[1], args[2], int(args[3]), int(args[4]))
    if mode == "check":
        return check(args[0], args[1], int(args[2]))
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
