"""Throwaway database servers for the store's engine tests: real servers on 127.0.0.1, random ports.

``redis-server`` runs as a child process of the tests, with no persistence
unless a test asks for it (:class:`RedisServer`).

A PostgreSQL cluster is made with ``initdb`` in a temporary directory and run
with ``pg_ctl`` (as the ``postgres`` user when the tests run as root, since
PostgreSQL refuses to run as root), listening on 127.0.0.1 only, and stopped
afterwards; a test that crashes its server owns one (:class:`PostgresCluster`).
Where no server binaries (or no psycopg) are installed, the tests that need
one skip with the reason; ``.ci/run`` installs them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


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


class PostgresCluster:
    """A throwaway PostgreSQL cluster a test owns: made by ``initdb`` in a temporary directory,
    run with ``pg_ctl`` on 127.0.0.1 and a random port (as the ``postgres`` user when the tests
    run as root); :meth:`kill` crashes it (SIGKILL of the postmaster and every process it
    started) and :meth:`start` runs it again on the same port and data (crash recovery)."""

    def __init__(self, *settings: str, directory: str | None = None) -> None:
        bindir = _postgres_bin()
        assert bindir is not None
        self.bindir = bindir
        self.as_user: list[str] = []
        self.tmp = tempfile.mkdtemp(prefix="lethe-pg-", dir=directory)
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            os.chown(self.tmp, entry.pw_uid, entry.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.data, self.port = os.path.join(self.tmp, "data"), free_port()
        self.settings = settings
        self.server = Postgres("127.0.0.1", self.port, "lethe")
        initdb = [f"{bindir}/initdb", "-D", self.data, "-A", "trust", "-U", "lethe", "-E", "UTF8", "--no-sync"]
        subprocess.run([*self.as_user, *initdb], check=True, capture_output=True)

    def _pg_ctl(self, *args: str, check: bool = True) -> None:
        command = [*self.as_user, f"{self.bindir}/pg_ctl", "-D", self.data, *args]
        done = subprocess.run(command, capture_output=True, text=True)
        if check and done.returncode != 0:
            raise RuntimeError(f"pg_ctl {' '.join(args)} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        """Start the server and wait until it accepts connections (after crash recovery, if any)."""
        options = " ".join(
            [f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.tmp}", *self.settings]
        )
        self._pg_ctl("-o", options, "-w", "-t", "60", "-l", f"{self.tmp}/log", "start")

    def postmaster(self) -> int | None:
        """The postmaster's process id, or None when none runs."""
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                pid = int(f.readline())
        except (FileNotFoundError, ValueError):
            return None
        return pid if _alive(pid) else None

    def kill(self) -> None:
        """SIGKILL the postmaster and every process it started, as a crash would; wait until they are gone."""
        pid = self.postmaster()
        assert pid is not None, "the server is not running"
        os.kill(pid, signal.SIGSTOP)  # stopped, it cannot start another process or react meanwhile
        victims = [*_children(pid), pid]
        for victim in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(_alive(v) for v in victims):
            assert time.monotonic() < deadline, "the killed server's processes did not end"
            time.sleep(0.01)
        # Its processes may stay as zombies (no one reaps them here), which the next postmaster
        # would take for a running server: the lock files of the dead one go.
        for lock in (os.path.join(self.data, "postmaster.pid"), os.path.join(self.tmp, f".s.PGSQL.{self.port}.lock")):
            with contextlib.suppress(FileNotFoundError):
                os.remove(lock)

    def freeze(self) -> None:
        """Stop (SIGSTOP) the postmaster and every process it started: a server that keeps its
        connections open and answers nothing, as a paused host does, until :meth:`thaw`."""
        pid = self.postmaster()
        assert pid is not None, "the server is not running"
        os.kill(pid, signal.SIGSTOP)
        for child in _children(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGSTOP)

    def thaw(self) -> None:
        """Let a frozen server run again."""
        pid = self.postmaster()
        assert pid is not None, "the server is not running"
        for child in [pid, *_children(pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGCONT)

    def close(self) -> None:
        """Stop the server (if it runs) and remove the cluster."""
        if self.postmaster() is not None:
            self._pg_ctl("-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> PostgresCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state, parent, ...), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (not gone, not a zombie)."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(int(name))
            if fields is not None and fields[1] == str(pid):
                found.append(int(name))
    return found


@contextmanager
def postgres() -> Iterator[Postgres]:
    """A fresh PostgreSQL cluster on 127.0.0.1 and a random port, removed afterwards."""
    with PostgresCluster() as cluster:
        cluster.start()
        yield cluster.server


def redis_unavailable() -> str | None:
    """Why no throwaway Redis can run here, or None."""
    try:
        import redis  # noqa: F401
    except ImportError:
        return "redis-py is not installed (pip install -e '.[test]')"
    if shutil.which("redis-server") is None:
        return "redis-server is not installed (apt-get install redis-server)"
    return None


class RedisServer:
    """A ``redis-server`` a test owns, on 127.0.0.1 and a random port, with ``options`` (no
    persistence unless they ask for it); :meth:`kill` SIGKILLs it and :meth:`start` runs it
    again on the same port and data directory."""

    def __init__(self, *options: str, directory: str | None = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="lethe-redis-", dir=directory)
        self.port = free_port()
        self.options = options
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None
        self.killed = False

    def mend(self) -> None:
        """``redis-check-aof --fix`` on the append-only file, if there is one (and the tool)."""
        manifests = list(Path(self.dir).glob("*/*.manifest"))
        checker = shutil.which("redis-check-aof")
        if manifests and checker:
            subprocess.run([checker, "--fix", str(manifests[0])], input=b"y\n", stdout=subprocess.DEVNULL, check=False)
        self.killed = False

    def start(self) -> None:
        """Start the server and wait until it answers (after loading its data, if any).  After a
        :meth:`kill`, its append-only file is mended first, as docs/store.md tells operators to
        (``redis-check-aof --fix``): Redis 7.0 leaves a transaction the crash cut in the file,
        and the restart after the next would lose or half-apply the writes made in between."""
        import redis

        if self.killed:
            self.mend()
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir, "--save", ""]
        self.process = subprocess.Popen([*command, *self.options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        try:
            for _ in range(3000):
                try:
                    client.ping()
                    return
                except redis.ConnectionError:  # refused, or still loading its data
                    assert self.process.poll() is None, "redis-server exited"
                    time.sleep(0.01)
            raise RuntimeError("redis-server did not start")
        finally:
            client.close()

    def kill(self) -> None:
        """SIGKILL the server, as a crash would, and wait for it."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()
        self.process = None
        self.killed = True

    def close(self) -> None:
        """Kill the server (if it runs) and remove its data."""
        if self.process is not None:
            self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def redis_server(*extra: str) -> Iterator[str]:
    """A fresh ``redis-server`` on 127.0.0.1 and a random port (no persistence unless ``extra``
    asks for it), stopped afterwards; yields its URL."""
    with RedisServer(*extra) as server:
        server.start()
        yield server.url
