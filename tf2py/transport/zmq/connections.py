"""The core's connections, watched: how many publishers and subscribers are connected, the
refusal of those over the core's bounds, and the count of publisher connections the core cut
because they sent a message over its 16 KiB limit.

ZeroMQ reports connections on a monitor socket (ACCEPTED and DISCONNECTED, with the
connection's file descriptor). The core keeps a duplicate of each publisher connection's
descriptor, so that when ZeroMQ closes one it can tell why: the peer had closed (end of
stream) or the core cut it (bytes still unread: ZeroMQ stops at the size header of a message
over ``MAXMSGSIZE`` and drops the connection). Refusing a connection is a ``shutdown`` of its
descriptor (through a duplicate): ZeroMQ sees the connection end and frees what it held.
"""

from __future__ import annotations

import errno
import os
import socket
import struct

import zmq

from ..counters import DropCounter, logger

__all__ = ["ConnectionWatch", "MAX_SUBSCRIBERS", "MAX_PUBLISHERS"]

#: Subscriber connections a core serves at once (each may queue up to 64 MiB).
MAX_SUBSCRIBERS = 64
#: Publisher connections a core serves at once (each may have 16 MiB read ahead).
MAX_PUBLISHERS = 256

#: A peer whose handshake failed: with keys, a peer without them (or with another site's).
_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
           | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
_EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | _FAILED


def _event(frames: list[bytes]) -> tuple[int, int]:
    """``(event, value)`` of a monitor message (ZeroMQ 4: 6-byte header, then the endpoint)."""
    event, value = struct.unpack("=hi", frames[0][:6])
    return event, value


def _dup(fd: int) -> socket.socket | None:
    try:
        copy = os.dup(fd)
    except OSError:
        return None  # gone already
    try:
        return socket.socket(fileno=copy)
    except OSError:  # the number was reused by something that is not a socket
        os.close(copy)
        return None


def _refuse(fd: int) -> None:
    copy = _dup(fd)
    if copy is not None:
        try:
            copy.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        copy.close()


class ConnectionWatch:
    """Watches the core's publisher (``frontend``) and subscriber (``backend``) sockets. Made
    before the forwarder starts; ``handle(monitor)`` runs on the core's latch thread."""

    def __init__(self, frontend: zmq.Socket[bytes], backend: zmq.Socket[bytes],
                 dropped: DropCounter, where: str):
        self.dropped = dropped
        self.where = where
        self.publishers: dict[int, socket.socket | None] = {}
        self.subscribers: set[int] = set()
        self.refused_subscribers = 0
        self.refused_publishers = 0
        self.cut_publishers = 0
        self.refused_peers = 0
        self._watched = (frontend, backend)
        self.frontend_monitor = frontend.get_monitor_socket(_EVENTS)
        try:
            self.backend_monitor = backend.get_monitor_socket(_EVENTS)
        except BaseException:
            self.frontend_monitor.close(0)
            raise

    def monitors(self) -> list[zmq.Socket[bytes]]:
        return [self.frontend_monitor, self.backend_monitor]

    def handle(self, monitor: zmq.Socket[bytes]) -> None:
        """Take every pending event of ``monitor`` (one of ``monitors()``)."""
        while True:
            try:
                frames = monitor.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            event, fd = _event(frames)
            if event & _FAILED:
                self.refused_peers += 1
                self.dropped.drop(
                    "refused_peer", f"{self.where} refused a peer whose handshake failed "
                    "(a process without this site's keys, or with another site's: give it "
                    "keys=DIR / --keys DIR / $TF2PY_KEYS of this site)")
                continue
            if monitor is self.backend_monitor:
                self._subscriber_event(event, fd)
            else:
                self._publisher_event(event, fd)

    def _subscriber_event(self, event: int, fd: int) -> None:
        if event == zmq.EVENT_ACCEPTED:
            if len(self.subscribers) >= MAX_SUBSCRIBERS:
                self.refused_subscribers += 1
                self.dropped.drop(
                    "subscriber_limit", f"{self.where} serves at most {MAX_SUBSCRIBERS} "
                    "subscribers (its memory bound); a new subscriber connection was refused "
                    "(it retries; close unused listeners, or run another core)")
                _refuse(fd)
                return
            self.subscribers.add(fd)
        elif event == zmq.EVENT_DISCONNECTED:
            self.subscribers.discard(fd)

    def _publisher_event(self, event: int, fd: int) -> None:
        if event == zmq.EVENT_ACCEPTED:
            if len(self.publishers) >= MAX_PUBLISHERS:
                self.refused_publishers += 1
                self.dropped.drop(
                    "publisher_limit", f"{self.where} serves at most {MAX_PUBLISHERS} "
                    "publisher connections (its memory bound); a new one was refused")
                _refuse(fd)
                return
            self.publishers[fd] = _dup(fd)
        elif event == zmq.EVENT_DISCONNECTED:
            if fd not in self.publishers:
                return
            copy = self.publishers.pop(fd)
            if copy is not None and _cut_by_us(copy):
                self.cut_publishers += 1
                self.dropped.drop(
                    "too_large", f"{self.where} cut a publisher connection that sent a "
                    "message over its limit of 16 KiB (or broke the protocol); tf2py "
                    "broadcasters split big lists, so this is a foreign or raw sender")
            if copy is not None:
                copy.close()

    def close(self) -> None:
        """Stop watching; called before the watched sockets close."""
        for copy in self.publishers.values():
            if copy is not None:
                copy.close()
        self.publishers.clear()
        # Monitoring stops before its reading end closes: ZeroMQ's I/O thread sends each
        # event with a blocking send, so an event for a reader that is gone (the watched
        # socket's own disconnections as it closes) would stall every socket of the process.
        for sock in self._watched:
            try:
                sock.disable_monitor()
            except zmq.ZMQError:
                pass
        for monitor in self.monitors():
            monitor.close(0)

    def stats(self) -> dict[str, int]:
        return {"publishers": len(self.publishers), "subscribers": len(self.subscribers)}


def _cut_by_us(copy: socket.socket) -> bool:
    """Whether ZeroMQ closed this connection with the peer still there (bytes unread, or no
    end of stream): the core cut it. A peer that closed shows end of stream or a reset."""
    try:
        data = copy.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return True  # open, nothing pending: closed by our side
    except OSError as exc:
        if exc.errno in (errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN):
            return False
        logger.debug("connection watch: %s", exc)
        return False
    return bool(data)
