"""lethe.store across hosts: writers on two hosts race on a server on a third, and lose and double nothing.

The hosts are network namespaces on one bridge (``tests/_netns.py``): a real
``redis-server`` or PostgreSQL runs in the server's namespace, listening on
its address only, and writer processes (``tests/_hosts_worker.py``) run in
the two others, each a ``Shared`` on the server's address.  Skips with the
reason where namespaces cannot be made (not root) or the server is missing.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

import lethe

from ._netns import Network, netns_unavailable, private_network
from ._servers import _postgres_bin, postgres_unavailable, redis_unavailable

WORKER = Path(__file__).with_name("_hosts_worker.py")
WRITERS_PER_HOST = 2
PUTS = 20
CAPACITY = 5
#: Seconds after which the test's processes are killed: the test then fails instead of hanging.
DEADLINE = 120


@pytest.fixture
def network() -> Iterator[Network]:
    """A server and two hosts, each its own network namespace (skips where none can be made)."""
    why = netns_unavailable()
    if why is not None:
        pytest.skip(why)
    with private_network(hosts=2) as net:
        yield net


def _env() -> dict[str, str]:
    """The environment of the processes in the namespaces: this lethe on the path."""
    return {**os.environ, "PYTHONPATH": str(Path(lethe.__file__).resolve().parent.parent)}


def _reachable(net: Network, port: int, log: str) -> None:
    """Return once the server's port answers from the first host; raise with the server's log if never."""
    host = net.hosts[0]
    command = host.run(sys.executable, str(WORKER), "wait", net.server.address, str(port))
    if subprocess.run(command, env=_env(), capture_output=True, timeout=60).returncode != 0:
        text = Path(log).read_text(errors="replace") if os.path.exists(log) else "(no log)"
        raise RuntimeError(f"the server on {net.server.address}:{port} never answered from {host.namespace}:\n{text}")


@contextmanager
def _redis_on(net: Network) -> Iterator[str]:
    """A fresh ``redis-server`` in the server's namespace, on its address only; yields its URL."""
    tmp = tempfile.mkdtemp(prefix="lethe-redis-")
    log = os.path.join(tmp, "log")
    command = net.server.run(
        "redis-server", "--bind", net.server.address, "--port", "6379", "--protected-mode", "no",
        "--dir", tmp, "--save", "", "--appendonly", "no", "--logfile", log,
    )  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _reachable(net, 6379, log)
        yield f"redis://{net.server.address}:6379/0"
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def _postgres_on(net: Network) -> Iterator[str]:
    """A fresh PostgreSQL cluster in the server's namespace, on its address only,
    taking the subnet's connections without a password; yields a DSN."""
    bindir = _postgres_bin()
    assert bindir is not None
    entry = pwd.getpwnam("postgres")  # namespaces need root, and PostgreSQL will not run as root
    as_postgres = ["runuser", "-u", "postgres", "--"]
    tmp = tempfile.mkdtemp(prefix="lethe-pg-")
    os.chown(tmp, entry.pw_uid, entry.pw_gid)
    data, log = os.path.join(tmp, "data"), os.path.join(tmp, "log")
    try:
        subprocess.run(
            [*as_postgres, f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "lethe", "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        with open(os.path.join(data, "pg_hba.conf"), "a") as hba:
            hba.write(f"host all all {net.subnet} trust\n")
        # fsync=off: the race is what is tested here, not the disk, whose syncs would dominate the run time.
        options = f"-p 5432 -c listen_addresses={net.server.address} -c unix_socket_directories={tmp} -c fsync=off"
        start = [*as_postgres, f"{bindir}/pg_ctl", "-D", data, "-o", options, "-w", "-t", "60", "-l", log, "start"]
        try:
            started = subprocess.run(net.server.run(*start), capture_output=True, text=True, timeout=90)
            if started.returncode != 0:
                text = Path(log).read_text(errors="replace") if os.path.exists(log) else ""
                raise RuntimeError(f"pg_ctl start failed: {started.stderr.strip()}\n{text}")
            _reachable(net, 5432, log)
            yield f"postgresql://lethe@{net.server.address}:5432/postgres"
        finally:
            subprocess.run(
                [*as_postgres, f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


SERVERS: dict[str, tuple[Callable[[], str | None], Callable[[Network], AbstractContextManager[str]]]] = {
    "redis": (redis_unavailable, _redis_on),
    "postgres": (postgres_unavailable, _postgres_on),
}


class _Writer:
    """A writer process on one host, spoken to by lines: a line on stdin moves it on, it answers in JSON."""

    def __init__(self, net: Network, host: int, tag: str, engine: str, where: str, err: IO[bytes]) -> None:
        self.host = net.hosts[host]
        self.tag = tag
        self._err = err
        command = self.host.run(sys.executable, str(WORKER), "write", engine, where, tag, str(PUTS), str(CAPACITY))
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True, env=_env()
        )

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def report(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            self._err.seek(0)
            error = self._err.read().decode(errors="replace")
            raise AssertionError(f"writer {self.tag} exited ({self.process.returncode}) without reporting:\n{error}")
        found: dict[str, Any] = json.loads(line)
        return found

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


def _race(net: Network, engine: str, where: str) -> tuple[list[_Writer], list[dict[str, Any]], dict[str, Any]]:
    """Run the writers to the end, all starting at once; their final reports, and a cold check's."""
    writers: list[_Writer] = []

    def kill() -> None:
        for w in list(writers):
            w.process.kill()

    watchdog = threading.Timer(DEADLINE, kill)
    watchdog.daemon = True
    watchdog.start()
    with ExitStack() as files:
        try:
            for h in range(len(net.hosts)):
                for n in range(WRITERS_PER_HOST):
                    err = files.enter_context(tempfile.TemporaryFile())
                    writers.append(_Writer(net, h, f"h{h + 1}w{n}", engine, where, err))
            for w in writers:
                seen_from = w.report()["ready"]
                assert seen_from == w.host.address, f"{w.tag} reached the server from {seen_from}"
            for w in writers:
                w.go()
            for w in writers:
                assert w.report() == {"done": True}
            for w in writers:
                w.go()  # every commit is in: catch up
            reports = [w.report() for w in writers]
            for w in writers:
                assert w.process.wait() == 0
            command = net.hosts[-1].run(sys.executable, str(WORKER), "check", engine, where, str(CAPACITY))
            checked = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=DEADLINE)
            assert checked.returncode == 0, checked.stderr
            return writers, reports, json.loads(checked.stdout)
        finally:
            watchdog.cancel()
            for w in writers:
                w.stop()


@pytest.mark.parametrize("engine", sorted(SERVERS))
def test_writers_on_two_hosts_lose_nothing_and_double_nothing(network: Network, engine: str) -> None:
    unavailable, server = SERVERS[engine]
    why = unavailable()
    if why is not None:
        pytest.skip(why)
    with server(network) as where:
        writers, reports, cold = _race(network, engine, where)
    total = len(writers) * PUTS
    assert cold["version"] == total
    # Every version was committed by exactly one writer, none skipped.
    by_version = {v: w.tag for w, r in zip(writers, reports) for v in r["committed"]}
    assert sorted(v for r in reports for v in r["committed"]) == list(range(1, total + 1))
    # Every value put is held or in the eviction feed, exactly once; evictions happened.
    fed = [value for _, gone in cold["feed"] for value in gone]
    put = [f"{w.tag}-{i}" for w in writers for i in range(PUTS)]
    assert sorted(cold["held"] + fed) == sorted(put)
    assert len(cold["held"]) == CAPACITY
    assert fed
    feed_versions = [v for v, _ in cold["feed"]]
    assert feed_versions == sorted(set(feed_versions))
    # Each eviction was heard once, by the on_evict of the writer whose commit made it.
    for w, r in zip(writers, reports):
        made = [value for v, gone in cold["feed"] if by_version[v] == w.tag for value in gone]
        assert sorted(r["heard"]) == sorted(made), w.tag
    # Replicas: a writer's just after its last commit equals the log's replay to that version;
    # caught up, every writer's equals a cold open and the replay of the whole log.
    assert cold["current"] == cold["replayed"]
    for w, r in zip(writers, reports):
        assert r["last"] == r["replayed"], w.tag
        assert r["version"] == total, w.tag
        assert r["current"] == cold["current"], w.tag
