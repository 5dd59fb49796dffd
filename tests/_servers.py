"""Throwaway database servers for the store's engine tests: real servers on 127.0.0.1, random ports.

``redis-server`` runs as a child process of the tests, with no persistence.

A PostgreSQL cluster is made with ``initdb`` in a temporary directory and run
with ``pg_ctl`` (as the ``postgres`` user when the tests run as root, since
PostgreSQL refuses to run as root), listening on 127.0.0.1 only, and stopped
afterwards.  Where no server binaries (or no psycopg) are installed, the tests
that need one skip with the reason; ``.ci/run`` installs them.
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
from dataclasses import dataclass


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


@dataclass(frozen=True)
class Postgres:
    """A running throwaway cluster: connect as ``user`` to ``host:port``."""

    host: str
    port: int
    user: str

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"


def postgres_unavailable() -> str | None:
    """Why no throwaway PostgreSQL can run here, or None."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[test]')"
    if _postgres_bin() is None:
        return "PostgreSQL is not installed (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root with no 'postgres' user to run the server as"
    return None


@contextmanager
def postgres() -> Iterator[Postgres]:
    """A fresh PostgreSQL cluster on 127.0.0.1 and a random port, removed afterwards."""
    bindir = _postgres_bin()
    assert bindir is not None
    as_user: list[str] = []
    tmp = tempfile.mkdtemp(prefix="lethe-pg-")
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(tmp, entry.pw_uid, entry.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = os.path.join(tmp, "data"), free_port()
    try:
        subprocess.run(
            [*as_user, f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "lethe", "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
        )
        options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={tmp}"
        subprocess.run(
            [*as_user, f"{bindir}/pg_ctl", "-D", data, "-o", options, "-w", "-t", "30", "-l", f"{tmp}/log", "start"],
            check=True,
            capture_output=True,
        )
        try:
            yield Postgres("127.0.0.1", port, "lethe")
        finally:
            subprocess.run(
                [*as_user, f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"], capture_output=True
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def redis_unavailable() -> str | None:
    """Why no throwaway Redis can run here, or None."""
    try:
        import redis  # noqa: F401
    except ImportError:
        return "redis-py is not installed (pip install -e '.[test]')"
    if shutil.which("redis-server") is None:
        return "redis-server is not installed (apt-get install redis-server)"
    return None


@contextmanager
def redis_server(*extra: str) -> Iterator[str]:
    """A fresh ``redis-server`` on 127.0.0.1 and a random port (no persistence unless ``extra``
    asks for it), stopped afterwards; yields its URL."""
    import redis

    tmp = tempfile.mkdtemp(prefix="lethe-redis-")
    port = free_port()
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", tmp, "--save", ""]
    process = subprocess.Popen([*command, *extra], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        for _ in range(500):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.01)
        else:
            raise RuntimeError("redis-server did not start")
        client.close()
        yield url
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(tmp, ignore_errors=True)
