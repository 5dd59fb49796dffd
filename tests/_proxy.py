"""A TCP proxy for the fault tests: forwards both ways, and cuts one exchange when armed.

:class:`Proxy` listens on 127.0.0.1 and a random port and forwards every
connection to a real server.  Armed with a marker (bytes the client sends,
such as the SHA of the Redis commit script or PostgreSQL's ``COMMIT``), it
cuts the next message that contains it:

* ``"reply"``: the message goes to the server, the server's reply is
  swallowed and the client's connection is cut (a lost reply);
* ``"request"``: the message is swallowed and the client's connection is cut
  before the server gets it.

:attr:`Proxy.round_trips` counts the exchanges: each time a client sends after its
server answered (or sends first), one more, whatever the number of reads a message
takes on its way.

The server's side of a cut connection is closed at once, or with
``hold_server=True`` kept open until the proxy closes (a server that does
not notice its client is gone).  :meth:`Proxy.hold` stalls what clients
send until :meth:`Proxy.release`, to let other clients work meanwhile.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field


@dataclass
class _Armed:
    marker: bytes
    mode: str
    hold_server: bool
    hold_after: bool


@dataclass
class _Link:
    """One client's connection and the server connection it is forwarded to."""

    client: socket.socket
    server: socket.socket
    swallow: _Armed | None = None  # set: the server's next reply is swallowed, then the client cut
    tail: bytes = b""  # the end of what the client sent last, for a marker split across reads
    answered: bool = True  # the server spoke since the client last did: its next message starts a round trip
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class Proxy:
    """A threaded TCP proxy from 127.0.0.1:``port`` to ``upstream`` that can cut one exchange."""

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._armed: list[_Armed] = []
        self._links: list[_Link] = []
        self._held: list[socket.socket] = []
        self._gate = threading.Event()
        self._gate.set()
        self._closed = False
        self.cuts = 0  #: exchanges cut so far
        self.cut = threading.Event()  #: set at each cut (clear it to wait for the next)
        self.seen: dict[bytes, int] = {}  #: how many client messages contained each marker armed so far
        self.round_trips = 0  #: client messages sent after their server answered, every connection together
        threading.Thread(target=self._accept, daemon=True).start()

    # -- control ----------------------------------------------------------

    def arm(self, marker: bytes, mode: str = "reply", *, hold_server: bool = False, hold_after: bool = False) -> None:
        """Cut the next client message containing ``marker`` (``b""``: any message), as ``mode``
        says (``"reply"`` or ``"request"``); ``hold_after``: then :meth:`hold` at once."""
        assert mode in ("reply", "request")
        with self._lock:
            self._armed.append(_Armed(marker, mode, hold_server, hold_after))
            self.seen.setdefault(marker, 0)

    def disarm(self) -> None:
        """Forget every cut armed and not yet made."""
        with self._lock:
            self._armed.clear()

    @property
    def armed(self) -> int:
        """How many cuts are armed and not yet made."""
        with self._lock:
            return len(self._armed)

    def hold(self) -> None:
        """Stall what every client sends (it is forwarded on :meth:`release`)."""
        self._gate.clear()

    def release(self) -> None:
        """Forward what clients send again."""
        self._gate.set()

    def close(self) -> None:
        """Stop listening and close every connection."""
        self._closed = True
        self._gate.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() in _accept: close() alone does not on Linux
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            links, held = list(self._links), list(self._held)
        for link in links:
            self._close(link, server=True)
        for sock in held:
            _shut(sock)

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- forwarding -------------------------------------------------------

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                _shut(client)  # the server is down: so is the proxy's connection
                continue
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = _Link(client, server)
            with self._lock:
                self._links.append(link)
            threading.Thread(target=self._upstream, args=(link,), daemon=True).start()
            threading.Thread(target=self._downstream, args=(link,), daemon=True).start()

    def _trigger(self, link: _Link, data: bytes) -> _Armed | None:
        """The cut armed for this client message, taken off the list, or None."""
        seen, tail = link.tail + data, len(link.tail)
        link.tail = seen[-64:]

        def holds(marker: bytes) -> bool:  # ends in this message: the tail alone was matched before
            return seen.find(marker, max(0, tail - len(marker) + 1)) >= 0

        with self._lock:
            for marker in self.seen:
                if marker and holds(marker):
                    self.seen[marker] += 1
            for i, armed in enumerate(self._armed):
                if holds(armed.marker):
                    return self._armed.pop(i)
        return None

    def _upstream(self, link: _Link) -> None:
        """Client to server."""
        while True:
            try:
                data = link.client.recv(65536)
            except OSError:
                data = b""
            if not data:
                self._close(link, server=True)
                return
            self._gate.wait()
            with self._lock:
                if link.answered:
                    link.answered = False
                    self.round_trips += 1
            armed = self._trigger(link, data)
            if armed is not None and armed.mode == "request":
                self._cut(link, armed)
                return
            if armed is not None:
                link.swallow = armed
            try:
                link.server.sendall(data)
            except OSError:
                self._close(link, server=True)
                return

    def _downstream(self, link: _Link) -> None:
        """Server to client."""
        while True:
            try:
                data = link.server.recv(65536)
            except OSError:
                data = b""
            if not data:
                self._close(link, server=True)
                return
            if link.swallow is not None:
                self._cut(link, link.swallow)
                return
            with self._lock:
                link.answered = True
            try:
                link.client.sendall(data)
            except OSError:
                self._close(link, server=True)
                return

    def _cut(self, link: _Link, armed: _Armed) -> None:
        if armed.hold_after:
            self.hold()
        with self._lock:  # counted before the client can see the cut
            self.cuts += 1
            if armed.hold_server:
                self._held.append(link.server)
        self._close(link, server=not armed.hold_server)
        self.cut.set()

    def _close(self, link: _Link, *, server: bool) -> None:
        with link.lock:
            if link.closed:
                return
            link.closed = True
        _shut(link.client)
        if server:
            _shut(link.server)
        with self._lock:
            if link in self._links:
                self._links.remove(link)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
