"""Serving Foxglove clients that offer either of the protocol's names.

The Foxglove WebSocket protocol was named ``foxglove.websocket.v1`` and is now named
``foxglove.sdk.v1`` (the same messages; Foxglove's SDK accepts only the new name and answers
400 to the old). Lichtblick, roslibjs-foxglove and other older clients offer the old name.
``SubprotocolFront`` listens where the user asked, reads each client's opening HTTP request,
offers the SDK's server (on a loopback port of its own) the name it accepts, hands the
client back the name the client offered, and then relays the bytes both ways unchanged: the
WebSocket frames do not depend on the name, and ``Sec-WebSocket-Accept`` depends only on the
client's key.
"""

from __future__ import annotations

import logging
import re
import socket
import threading

__all__ = ["SubprotocolFront", "SDK_NAME", "OLD_NAME"]

SDK_NAME = "foxglove.sdk.v1"
OLD_NAME = "foxglove.websocket.v1"

logger = logging.getLogger("tf2py.viz")

#: The longest opening request or response read, and how long a client may take to send it.
MAX_HEADER_BYTES = 64 * 1024
HEADER_TIMEOUT_S = 10.0
_PROTOCOL_HEADER = re.compile(rb"(?im)^(sec-websocket-protocol:[ \t]*)([^\r\n]*)\r\n")


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    """An HTTP head (up to and with the blank line) and what came after it; ValueError for
    one that is too long or cut short."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEADER_BYTES:
            raise ValueError("HTTP header too long")
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("connection closed during the handshake")
        data += chunk
    end = data.index(b"\r\n\r\n") + 4
    return data[:end], data[end:]


def _offered(head: bytes) -> list[str]:
    names: list[str] = []
    for match in _PROTOCOL_HEADER.finditer(head):
        names += [n.strip() for n in match.group(2).decode("latin-1").split(",") if n.strip()]
    return names


def _with_protocol(head: bytes, name: str) -> bytes:
    """``head`` whose Sec-WebSocket-Protocol header(s) say ``name`` alone."""
    replaced = _PROTOCOL_HEADER.sub(lambda m: m.group(1) + name.encode() + b"\r\n", head, count=1)
    first = _PROTOCOL_HEADER.search(replaced)
    if first is None:
        return replaced
    # Drop any further Sec-WebSocket-Protocol lines (a client may send the header twice).
    tail = _PROTOCOL_HEADER.sub(b"", replaced[first.end():])
    return replaced[:first.end()] + tail


class SubprotocolFront:
    """Listens on ``host:port`` (0: a free port; ``.port``) and relays every client to the
    Foxglove SDK server at ``127.0.0.1:backend_port``, accepting both names of the protocol.
    ``close()`` stops listening and ends every relayed connection; a context manager."""

    def __init__(self, host: str, port: int, backend_port: int):
        self.backend_port = backend_port
        self.served = {SDK_NAME: 0, OLD_NAME: 0}
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._closed = False
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind((host.strip("[]"), port))
            self._listener.listen(64)
        except BaseException:
            self._listener.close()
            raise
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, name="tf2py-foxglove-front",
                                        daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                if self._closed:
                    client.close()
                    return
                self._connections.add(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True,
                             name="tf2py-foxglove-client").start()

    def _serve(self, client: socket.socket) -> None:
        backend: socket.socket | None = None
        try:
            client.settimeout(HEADER_TIMEOUT_S)
            request, rest = _read_head(client)
            offered = _offered(request)
            name = SDK_NAME if SDK_NAME in offered else OLD_NAME if OLD_NAME in offered else ""
            if name == OLD_NAME:
                request = _with_protocol(request, SDK_NAME)
            backend = socket.create_connection(("127.0.0.1", self.backend_port),
                                               timeout=HEADER_TIMEOUT_S)
            with self._lock:
                if self._closed:
                    return
                self._connections.add(backend)
            backend.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            backend.sendall(request + rest)
            response, after = _read_head(backend)
            if name == OLD_NAME and _offered(response) == [SDK_NAME]:
                response = _with_protocol(response, OLD_NAME)
            client.sendall(response + after)
            if name:
                with self._lock:
                    self.served[name] += 1
            client.settimeout(None)
            backend.settimeout(None)
            pump = threading.Thread(target=self._pump, args=(backend, client), daemon=True,
                                    name="tf2py-foxglove-relay")
            pump.start()
            self._pump(client, backend)
            pump.join()
        except (OSError, ValueError) as exc:
            logger.debug("tf2py foxglove: a client's connection ended: %s", exc)
        finally:
            for sock in (client, backend):
                if sock is not None:
                    with self._lock:
                        self._connections.discard(sock)
                    sock.close()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        """Copy bytes from ``source`` to ``target`` until either end closes."""
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                target.sendall(data)
        except OSError:
            pass
        for sock in (target, source):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        """Stop listening and end every relayed connection. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            connections = list(self._connections)
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        for sock in connections:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(timeout=5.0)

    def __enter__(self) -> SubprotocolFront:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
