"""The ZeroMQ links of the buffer server (a ROUTER) and its client (a DEALER per socket); see
``link.py`` for the interface they implement.

How the server learns that a connection closed, after its last message: the socket monitor
says "disconnected" with the connection's file descriptor, but messages that came over it
may still be queued in the ROUTER behind that event. So the link notes the descriptor of
every message (``SRCFD``) per routing id, and on "disconnected" first reads everything
queued (libzmq pushed that connection's messages before it reported the close), then reports
each routing id last seen on that descriptor as gone. Clients leave their routing id to the
ROUTER, which gives each connection a new one (``b"\\0"`` + a counter): such an id never comes
back, and anything that would still arrive from it is dropped. (``ROUTER_NOTIFY`` would say
it in band, but it is a draft option that pyzmq's libzmq does not enable.)
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from typing import Any

import zmq
from zmq.utils.monitor import parse_monitor_message

from ..transport.zmq.address import check_server_address, tcp_host
from ..transport.zmq.keys import warn_if_exposed
from ..transport.zmq.sockets import context as _context  # the bus's, one per process
from .link import OnDrop

__all__ = ["ZmqServerLink", "ZmqClientLink", "open_server_link", "open_client_link",
           "check_address"]

# ZeroMQ refuses (and disconnects) peers sending frames larger than this.
MAX_FRAME_BYTES = 1024 * 1024
# Dead peers on other hosts (no FIN/RST): ZeroMQ heartbeats find them.
_HEARTBEAT_IVL_MS = 2_000
_HEARTBEAT_TIMEOUT_MS = 10_000
_HWM = 100_000
# Routing ids of closed connections remembered (to drop a late message from one).
_GONE_REMEMBERED = 65_536
_instance_ids = itertools.count()


def _timeout_ms(timeout: float | None) -> int | None:
    return None if timeout is None else max(0, int(timeout * 1000 + 0.999))


class _Waker:
    """An inproc PUSH/PULL pair: ``wake()`` from any thread makes a poll on ``pull`` return."""

    def __init__(self, context: zmq.Context[zmq.Socket[bytes]], kind: str) -> None:
        name = f"inproc://tf2py-{kind}-wake-{os.getpid()}-{next(_instance_ids)}"
        self.lock = threading.Lock()
        self.closed = False
        self.pull = context.socket(zmq.PULL)
        self.push: zmq.Socket[bytes] | None = None
        try:
            self.pull.setsockopt(zmq.LINGER, 0)
            self.pull.bind(name)
            push = self.push = context.socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 0)
            push.setsockopt(zmq.SNDHWM, 16)
            push.connect(name)
        except BaseException:
            self.close()
            raise

    def wake(self) -> None:
        with self.lock:
            if self.closed or self.push is None:
                return
            try:
                self.push.send(b"", zmq.NOBLOCK)
            except zmq.ZMQError:
                pass  # wake-ups already queued

    def drain(self) -> None:
        try:
            for _ in range(256):
                self.pull.recv(zmq.NOBLOCK)
        except zmq.Again:
            pass

    def close(self) -> None:
        # Under the lock every sender holds: a send on the inproc pipe finishes before the
        # receiving end goes away.
        with self.lock:
            self.closed = True
            if self.push is not None:
                self.push.close(linger=0)
            self.pull.close(linger=0)


class ZmqServerLink:
    """A ROUTER bound to ``address``: a ``ServerLink`` (see ``link.py``)."""

    def __init__(self, address: str, keys: Any, on_drop: OnDrop) -> None:
        requested = check_server_address(address)  # ValueError: say so now
        self._on_drop = on_drop
        self._keys = keys
        self._keyed = False
        self._closed = False
        context = self._context = _context()
        self._router = context.socket(zmq.ROUTER)
        self._monitor: zmq.Socket[bytes] | None = None
        self._waker: _Waker | None = None
        try:
            router = self._router
            router.setsockopt(zmq.LINGER, 0)
            router.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
            router.setsockopt(zmq.SNDHWM, _HWM)
            router.setsockopt(zmq.RCVHWM, _HWM)
            router.setsockopt(zmq.HEARTBEAT_IVL, _HEARTBEAT_IVL_MS)
            router.setsockopt(zmq.HEARTBEAT_TIMEOUT, _HEARTBEAT_TIMEOUT_MS)
            # Closed connections, and when close() has really released the port.
            self._monitor = router.get_monitor_socket(
                zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_CLOSED)
            if keys is not None:
                keys.apply_server(router, "tf2py server")
                self._keyed = True
            host = tcp_host(requested)
            if host is not None:
                warn_if_exposed(host, keys, "tf2py server")
            try:
                router.bind(requested)
            except zmq.ZMQError as exc:
                if exc.errno not in (zmq.EINVAL, zmq.EPROTONOSUPPORT):
                    # in use, a host that no interface has: as Core says it, one line
                    raise OSError(exc.errno, f"cannot bind the buffer server at {requested}: "
                                  f"{exc.strerror}") from None
                raise ValueError(
                    f"invalid buffer server address {requested!r}: {exc.strerror} "
                    "(expected e.g. tcp://127.0.0.1:7402)") from None
            endpoint = router.getsockopt(zmq.LAST_ENDPOINT)
            self.address: str = endpoint.decode() if isinstance(endpoint, bytes) else str(endpoint)
            self._waker = _Waker(context, "server")
            self._poller = zmq.Poller()
            self._poller.register(router, zmq.POLLIN)
            self._poller.register(self._waker.pull, zmq.POLLIN)
            self._poller.register(self._monitor, zmq.POLLIN)
        except BaseException:
            self._release(unbind=False)
            raise
        self._fd_of: dict[bytes, int] = {}  # routing id -> descriptor of its last message
        self._gone: dict[bytes, None] = {}  # routing ids (given by us) of closed connections
        self._closed_fds: list[int] = []
        self._reused_fds: set[int] = set()
        self._monitor_ready = False

    def receive(self, limit: int) -> list[tuple[Any, bytes | None]]:
        if self._monitor_ready:
            self._monitor_ready = False
            self._read_monitor()
        closing = bool(self._closed_fds)
        # Messages still queued from a closed connection are not handed on at all (nobody
        # is left to answer); a descriptor already reused by a new connection is ambiguous.
        dead = set(self._closed_fds) - self._reused_fds if closing else ()
        router = self._router
        fd_of, gone = self._fd_of, self._gone
        out: list[tuple[Any, bytes | None]] = []
        count = 0
        while closing or count < limit:
            try:
                frames = router.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                break
            if len(frames) != 2:
                count += 1
                self._on_drop("framing", f"a message of {len(frames) - 1} frames (expected 1)")
                continue
            peer = frames[0].bytes
            if gone and peer in gone:
                continue  # a late message of a connection that closed
            payload = frames[1]
            try:
                fd = fd_of[peer] = payload.get(zmq.SRCFD)
            except zmq.ZMQError:  # pragma: no cover - transports without a descriptor
                fd = -1
            if dead and fd in dead:
                continue
            count += 1
            out.append((peer, payload.bytes))
        if closing:
            # Everything queued has been read: the closed connections' messages are all in
            # ``out``, before the news that they are gone.
            closed = set(self._closed_fds)
            self._closed_fds.clear()
            reused, self._reused_fds = self._reused_fds, set()
            on_closed = [p for p, fd in fd_of.items() if fd in closed]
            for fd in reused:
                # A new connection got the descriptor already: the one id on it that is
                # alive is the newest the ROUTER gave (its counter only grows).
                ours = [p for p in on_closed if fd_of[p] == fd and p[:1] == b"\0"]
                if ours:
                    on_closed.remove(max(ours, key=lambda p: (len(p), p)))
            for peer in on_closed:
                del fd_of[peer]
                out.append((peer, None))
                if peer[:1] == b"\0":  # ours: never used again by another connection
                    gone[peer] = None
                    if len(gone) > _GONE_REMEMBERED:
                        del gone[next(iter(gone))]
        return out

    def _read_monitor(self) -> None:
        monitor = self._monitor
        assert monitor is not None
        while True:
            try:
                event = parse_monitor_message(monitor.recv_multipart(zmq.NOBLOCK))
            except zmq.Again:
                return
            kind, fd = event["event"], event["value"]
            if kind == zmq.EVENT_DISCONNECTED:
                self._closed_fds.append(fd)
                self._reused_fds.discard(fd)
            elif kind == zmq.EVENT_ACCEPTED and fd in self._closed_fds:
                self._reused_fds.add(fd)  # reused by a new connection before we looked

    def send(self, peer: Any, payload: bytes) -> bool:
        try:
            self._router.send_multipart((peer, payload), zmq.NOBLOCK)
        except zmq.ZMQError:
            return False
        return True

    def wait(self, timeout: float | None) -> None:
        assert self._waker is not None
        for sock, _ in self._poller.poll(_timeout_ms(timeout)):
            if sock is self._waker.pull:
                self._waker.drain()
            elif sock is self._monitor:
                self._monitor_ready = True

    def wake(self) -> None:
        waker = self._waker
        if waker is not None:
            waker.wake()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._release(unbind=True)

    def _release(self, unbind: bool) -> None:
        if unbind:
            self._unbind()
        if self._monitor is not None:
            try:
                self._router.disable_monitor()
            except zmq.ZMQError:
                pass
            self._monitor.close(linger=0)
        if self._waker is not None:
            self._waker.close()
        self._router.close(linger=0)
        if self._keyed:
            self._keyed = False
            self._keys.release_server(self._context)

    def _unbind(self) -> None:
        """Stop listening and wait (up to 2 s) until the port is really released: the context
        is shared, so no term() waits for it, and a server restarted on the same port right
        after close() must be able to bind it."""
        monitor = self._monitor
        try:
            self._router.unbind(self.address)
        except zmq.ZMQError:
            return
        if monitor is None:
            return
        deadline = time.monotonic() + 2.0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not monitor.poll(int(remaining * 1000) + 1):
                return
            try:
                event = parse_monitor_message(monitor.recv_multipart(zmq.NOBLOCK))
            except zmq.Again:
                continue
            if event["event"] == zmq.EVENT_CLOSED:
                return


class ZmqClientLink:
    """A DEALER connected to ``address`` (with its connection monitor): a ``ClientLink``."""

    def __init__(self, address: str, keys: Any) -> None:
        self.address = address
        self._closed = False
        context = _context()
        dealer = self._socket = context.socket(zmq.DEALER)
        self._monitor: zmq.Socket[bytes] | None = None
        self._waker: _Waker | None = None
        self._connected_before = False
        try:
            if keys is not None:
                # CURVE client of the site: a server without the site's keys cannot answer.
                keys.apply_client(dealer)
            dealer.setsockopt(zmq.LINGER, 0)
            # No routing id of our own: the ROUTER gives each connection a new one, so the
            # goals of a connection that closed can never be mistaken for a later one's.
            dealer.setsockopt(zmq.SNDHWM, _HWM)
            dealer.setsockopt(zmq.RCVHWM, _HWM)
            dealer.setsockopt(zmq.RECONNECT_IVL, 50)
            dealer.setsockopt(zmq.RECONNECT_IVL_MAX, 500)
            self._monitor = dealer.get_monitor_socket(
                zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
            try:
                dealer.connect(address)
            except zmq.ZMQError as exc:
                raise ValueError(
                    f"invalid buffer server address {address!r}: {exc} "
                    "(expected e.g. tcp://127.0.0.1:7402)") from None
            self._waker = _Waker(context, "client")
            self._poller = zmq.Poller()
            self._poller.register(dealer, zmq.POLLIN)
            self._poller.register(self._monitor, zmq.POLLIN)
            self._poller.register(self._waker.pull, zmq.POLLIN)
        except BaseException:
            self.close()
            raise

    def send(self, payload: bytes) -> bool:
        try:
            self._socket.send(payload, zmq.NOBLOCK)
        except zmq.Again:
            return False
        return True

    def receive(self, limit: int) -> list[bytes]:
        sock = self._socket
        out: list[bytes] = []
        for _ in range(limit):
            try:
                out.append(sock.recv(zmq.NOBLOCK))
            except zmq.Again:
                break
        return out

    def wait(self, timeout: float | None) -> None:
        assert self._waker is not None
        for sock, _ in self._poller.poll(_timeout_ms(timeout)):
            if sock is self._waker.pull:
                self._waker.drain()

    def wake(self) -> None:
        waker = self._waker
        if waker is not None:
            waker.wake()

    def reconnected(self) -> bool:
        monitor = self._monitor
        if monitor is None:
            return False
        again = False
        while True:
            try:
                event = parse_monitor_message(monitor.recv_multipart(zmq.NOBLOCK))["event"]
            except zmq.Again:
                return again
            if event == zmq.EVENT_CONNECTED:
                again = again or self._connected_before
                self._connected_before = True

    def close(self, linger: float = 0.0) -> None:
        if self._closed:
            return
        self._closed = True
        if self._monitor is not None:
            try:
                self._socket.disable_monitor()
            except zmq.ZMQError:
                pass
            self._monitor.close(linger=0)
        self._socket.close(linger=int(linger * 1000))
        if self._waker is not None:
            self._waker.close()


def check_address(address: str) -> str:
    """``address`` if ZeroMQ can serve it, else ValueError naming it (opens nothing)."""
    return check_server_address(address)


def open_server_link(address: str, keys: Any, on_drop: OnDrop) -> ZmqServerLink:
    """A ROUTER listening on ``address`` (``tcp://HOST:PORT``, ``ipc://``, ``inproc://``)."""
    return ZmqServerLink(address, keys, on_drop)


def open_client_link(address: str, keys: Any) -> ZmqClientLink:
    """A DEALER connecting to ``address``; ValueError for a port a server can only bind (0,
    or a host of ``*``), as the bus's clients refuse them."""
    return ZmqClientLink(check_server_address(address, to_connect=True), keys)
