"""Throwaway servers for the engine benchmark: a redis-server and a PostgreSQL cluster on 127.0.0.1.

The same recipe as the tests' (``tests/_servers.py``), kept here so that the
benchmarks import nothing from ``tests/``, with the settings a benchmark
needs: Redis with AOF on (``appendfsync`` everysec or always), PostgreSQL
with its defaults (``fsync`` and ``synchronous_commit`` on).  Each runs in
its own temporary directory under ``directory`` (the system's temp dir by
default), on a random port, and is stopped and removed afterwards.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (as of now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _postgres_bin() -> str | None:
    """The directory of ``initdb`` and ``pg_ctl``, or None."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return os.path.dirname(os.path.realpath(found))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return os.path.dirname(versions[-1]) if versions else None


def redis_unavailable() -> str | None:
    """Why no throwaway Redis can run here, or None."""
    try:
        import redis  # noqa: F401
    except ImportError:
        return "redis-py is not installed (pip install -e '.[redis]')"
    if shutil.which("redis-server") is None:
        return "redis-server is not installed"
    return None


def postgres_unavailable() -> str | None:
    """Why no throwaway PostgreSQL can run here, or None."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[postgres]')"
    if _postgres_bin() is None:
        return "PostgreSQL is not installed"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root with no 'postgres' user to run the server as"
    return None


@contextmanager
def redis_server(appendfsync: str, directory: str | None = None) -> Iterator[str]:
    """A fresh ``redis-server`` with AOF on and ``appendfsync`` as given (``everysec``,
    ``always``), no RDB snapshots; yields its URL, then stops it and removes its files."""
    import redis

    tmp = tempfile.mkdtemp(prefix="lethe-bench-redis-", dir=directory)
    port = free_port()
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", tmp, "--save", ""]
    command += ["--appendonly", "yes", "--appendfsync", appendfsync]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        for _ in range(1000):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if process.poll() is not None:
                    raise RuntimeError(f"redis-server exited with {process.returncode}") from None
                time.sleep(0.01)
        else:
            raise RuntimeError("redis-server did not start")
        client.close()
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def postgres_server(directory: str | None = None) -> Iterator[str]:
    """A fresh PostgreSQL cluster (``initdb``, then ``pg_ctl start`` with the server's default
    durability) on 127.0.0.1; yields a connection string, then stops it and removes it.

    As root, the server runs as the ``postgres`` user (PostgreSQL refuses root), so
    ``directory`` must be one that user can reach (the system's temp dir is)."""
    bindir = _postgres_bin()
    assert bindir is not None
    as_user: list[str] = []
    tmp = tempfile.mkdtemp(prefix="lethe-bench-pg-", dir=directory)
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(tmp, entry.pw_uid, entry.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = os.path.join(tmp, "data"), free_port()
    try:
        # --no-sync skips initdb's own flush of the new cluster's files: the running server syncs as usual.
        subprocess.run(
            [*as_user, f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "lethe", "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
        )
        options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={tmp}"
        subprocess.run(
            [*as_user, f"{bindir}/pg_ctl", "-D", data, "-o", options, "-w", "-t", "60", "-l", f"{tmp}/log", "start"],
            check=True,
            capture_output=True,
        )
        try:
            yield f"postgresql://lethe@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run([*as_user, f"{bindir}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop"], capture_output=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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
