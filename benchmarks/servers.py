"""Throwaway servers for the engine benchmark: a redis-server and a PostgreSQL cluster on 127.0.0.1.

The servers are the tests' (``tests/_servers.py``: one recipe for both), with
the settings a benchmark needs: Redis with AOF on (``appendfsync`` everysec or
always), PostgreSQL with its defaults (``fsync`` and ``synchronous_commit``
on).  Each runs in its own temporary directory under ``directory`` (the
system's temp dir by default), on a random port, and is removed afterwards.
Run the benchmarks from the repository root, which holds ``tests/``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests._servers import PostgresCluster, RedisServer, postgres_unavailable, redis_unavailable

__all__ = [
    "postgres_info",
    "postgres_server",
    "postgres_unavailable",
    "redis_info",
    "redis_server",
    "redis_unavailable",
]


@contextmanager
def redis_server(appendfsync: str, directory: str | None = None) -> Iterator[str]:
    """A fresh ``redis-server`` with AOF on and ``appendfsync`` as given (``everysec``,
    ``always``), no RDB snapshots; yields its URL, then stops it and removes its files."""
    with RedisServer("--appendonly", "yes", "--appendfsync", appendfsync, directory=directory) as server:
        server.start()
        yield server.url


@contextmanager
def postgres_server(directory: str | None = None) -> Iterator[str]:
    """A fresh PostgreSQL cluster (``initdb``, then ``pg_ctl start`` with the server's default
    durability) on 127.0.0.1; yields a connection string, then stops it and removes it.

    As root, the server runs as the ``postgres`` user (PostgreSQL refuses root), so
    ``directory`` must be one that user can reach (the system's temp dir is)."""
    with PostgresCluster(directory=directory) as cluster:
        cluster.start()
        yield cluster.server.dsn()


def redis_info(url: str) -> dict[str, Any]:
    """The server's version and persistence settings, for the record."""
    import redis

    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        info = client.info("server")
        config = {key: client.config_get(key)[key] for key in ("appendonly", "appendfsync", "save")}
    finally:
        client.close()
    return {"server": f"{'Valkey' if 'valkey_version' in info else 'Redis'} {info['redis_version']}", **config}


def postgres_info(dsn: str) -> dict[str, Any]:
    """The server's version and durability settings, for the record."""
    import psycopg

    def show(conn: Any, setting: str) -> str:
        row = conn.execute(f"SHOW {setting}").fetchone()
        return str(row[0]) if row else "?"

    with psycopg.connect(dsn, autocommit=True) as conn:
        out: dict[str, Any] = {"server": f"PostgreSQL {show(conn, 'server_version')}"}
        for setting in ("fsync", "synchronous_commit", "wal_sync_method", "full_page_writes"):
            out[setting] = show(conn, setting)
    return out
