"""A small private network of Linux network namespaces for the tests that need several hosts.

:func:`private_network` makes a server namespace holding a bridge, and one
namespace per host, each joined to the bridge by a veth pair created
directly inside the namespaces (nothing is made in the test's own
namespace), on a private /24 none of this machine's routes covers.  No
namespace has a route anywhere else, so the traffic stays inside them.
Everything goes when the block ends, on failure too: what still runs in
the namespaces is killed, the namespaces are deleted, their veths and
bridge with them.

Creating namespaces needs root (as in CI); :func:`netns_unavailable` says
why it cannot be done here, for the tests to skip with.
"""

from __future__ import annotations

import functools
import ipaddress
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

_made = itertools.count()
#: The ``ip`` command, also where a PATH without the sbin directories would miss it.
IP = shutil.which("ip") or shutil.which("ip", path="/usr/sbin:/sbin") or "ip"


@dataclass(frozen=True)
class Host:
    """A network namespace and its address on the private network."""

    namespace: str
    address: str

    def run(self, *command: str) -> list[str]:
        """``command`` run inside this host's namespace (an argument list for :mod:`subprocess`)."""
        return [IP, "netns", "exec", self.namespace, *command]


@dataclass(frozen=True)
class Network:
    """The server's host, the other hosts, and the subnet they share."""

    server: Host
    hosts: tuple[Host, ...]
    subnet: str


def _ip(*args: str) -> None:
    """Run ``ip args``; raise with its message if it fails."""
    done = subprocess.run([IP, *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip() or f'exit status {done.returncode}'}")


@functools.cache
def netns_unavailable() -> str | None:
    """Why no private network of namespaces can be made here, or None."""
    if not sys.platform.startswith("linux"):
        return "network namespaces are a Linux feature"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    if shutil.which(IP) is None:
        return "the ip command is not installed (apt-get install iproute2)"
    probe = f"lethe{os.getpid()}probe"
    try:
        _ip("netns", "add", probe)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        return f"cannot create a network namespace here: {exc}"
    try:
        _ip("-n", probe, "link", "add", "name", "br0", "type", "bridge")
        _ip("-n", probe, "link", "add", "name", "probe0", "type", "veth", "peer", "name", "probe1")
        _ip("netns", "exec", probe, "true")
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        return f"cannot make a bridge and veths in a network namespace here: {exc}"
    finally:
        subprocess.run([IP, "netns", "del", probe], capture_output=True, timeout=30)
    return None


def _free_subnet(start: int) -> ipaddress.IPv4Network:
    """A /24 in 10.213.0.0/16 that no route of this machine's own namespace overlaps."""
    routes = json.loads(
        subprocess.run(
            [IP, "-j", "-4", "route", "show", "table", "all"], capture_output=True, text=True, check=True, timeout=30
        ).stdout
        or "[]"
    )
    used = [ipaddress.ip_network(r["dst"], strict=False) for r in routes if r.get("dst", "default") != "default"]
    for x in range(start, start + 256):
        subnet = ipaddress.IPv4Network(f"10.213.{x % 256}.0/24")
        if not any(subnet.overlaps(u) for u in used):
            return subnet
    raise RuntimeError("every /24 of 10.213.0.0/16 overlaps a route of this machine")


def _namespace_pids(namespace: str) -> list[int]:
    done = subprocess.run([IP, "netns", "pids", namespace], capture_output=True, text=True, timeout=30)
    return [int(p) for p in done.stdout.split()]


def _remove(namespace: str) -> None:
    """Kill what still runs in ``namespace`` (it was started there by the test) and delete it."""
    for pid in _namespace_pids(namespace):
        with suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(pid, signal.SIGKILL)
    subprocess.run([IP, "netns", "del", namespace], capture_output=True, timeout=30)


@contextmanager
def private_network(hosts: int = 2) -> Iterator[Network]:
    """A server namespace and ``hosts`` host namespaces on one bridge, deleted afterwards.

    The server has the subnet's ``.1`` on the bridge, host ``i`` (counting
    from 1) has ``.(10 + i)`` on its ``eth0``, joined to the bridge's port
    ``port<i>``; every namespace has its loopback up.
    """
    tag = f"lethe{os.getpid()}n{next(_made)}"
    subnet = _free_subnet(os.getpid())
    prefix = subnet.prefixlen
    server = Host(f"{tag}srv", str(subnet[1]))
    others = tuple(Host(f"{tag}h{i}", str(subnet[10 + i])) for i in range(1, hosts + 1))
    made: list[str] = []
    try:
        for host in (server, *others):
            made.append(host.namespace)  # before it exists: an interrupt right after the add still removes it
            _ip("netns", "add", host.namespace)
            _ip("-n", host.namespace, "link", "set", "dev", "lo", "up")
        srv = server.namespace
        _ip("-n", srv, "link", "add", "name", "br0", "type", "bridge")
        _ip("-n", srv, "addr", "add", f"{server.address}/{prefix}", "dev", "br0")
        _ip("-n", srv, "link", "set", "dev", "br0", "up")
        for i, host in enumerate(others, start=1):
            port = f"port{i}"
            _ip("-n", host.namespace, "link", "add", "name", "eth0", "type", "veth", "peer", "name", port, "netns", srv)
            _ip("-n", srv, "link", "set", "dev", port, "master", "br0")
            _ip("-n", srv, "link", "set", "dev", port, "up")
            _ip("-n", host.namespace, "addr", "add", f"{host.address}/{prefix}", "dev", "eth0")
            _ip("-n", host.namespace, "link", "set", "dev", "eth0", "up")
        yield Network(server, others, str(subnet))
    finally:
        for namespace in reversed(made):
            _remove(namespace)
