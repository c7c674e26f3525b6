"""Shared ZeroMQ plumbing of the bus: one context per process, socket options, unique inproc
names (and, re-exported, the counters and lifetime helpers every bus uses)."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import zmq

from ..counters import DropCounter, logger
from ..lifetime import join_thread, release_when_collected

__all__ = ["DropCounter", "logger", "context", "inproc_name", "make_socket", "client_options",
           "connect_keyed", "publisher_socket", "inproc_pair", "SocketGroup", "SocketCloser",
           "join_thread", "release_when_collected"]

#: Queue bounds (messages). A subscriber that falls this far behind loses messages instead of
#: growing memory or slowing the publishers (ZeroMQ PUB/XPUB drop at the high-water mark).
SEND_HWM = 10_000
RECEIVE_HWM = 8192
#: Reconnect quickly on loopback when a core (re)starts; back off up to this bound.
RECONNECT_IVL_MS = 100
RECONNECT_IVL_MAX_MS = 1000
#: How long close() lets queued messages go out.
LINGER_MS = 500

_counter = itertools.count()


def context() -> zmq.Context[zmq.Socket[bytes]]:
    """The process-wide ZeroMQ context (``zmq.Context.instance()``)."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    return ctx


def inproc_name(kind: str) -> str:
    """A unique inproc endpoint for this process."""
    return f"inproc://tf2py-{kind}-{id(threading.current_thread()):x}-{next(_counter)}"


def make_socket(kind: int, linger_ms: int = LINGER_MS, **options: int) -> zmq.Socket[bytes]:
    """A socket of the shared context with ``linger`` set and ``options``
    applied (``zmq.SNDHWM=...`` style, given as option-name keywords)."""
    sock: zmq.Socket[bytes] = context().socket(kind)
    try:
        sock.setsockopt(zmq.LINGER, linger_ms)
        for name, value in options.items():
            sock.setsockopt(getattr(zmq, name), value)
    except BaseException:
        sock.close(0)
        raise
    return sock


def client_options() -> dict[str, int]:
    """Options of every socket that connects to a core."""
    return dict(RECONNECT_IVL=RECONNECT_IVL_MS, RECONNECT_IVL_MAX=RECONNECT_IVL_MAX_MS)


def inproc_pair(kind: str) -> tuple[zmq.Socket[bytes], zmq.Socket[bytes]]:
    """Two PAIR sockets joined on a fresh inproc endpoint ``(bound, connected)``: how a thread
    blocked in a poll is woken (neither lingers)."""
    name = inproc_name(kind)
    bound = make_socket(zmq.PAIR, linger_ms=0)
    try:
        bound.bind(name)
        connected = make_socket(zmq.PAIR, linger_ms=0)
    except BaseException:
        bound.close(0)
        raise
    try:
        connected.connect(name)
    except BaseException:
        bound.close(0)
        connected.close(0)
        raise
    return bound, connected


def connect_keyed(sock: zmq.Socket[bytes], endpoint: str, keys: Any) -> None:
    """Connect ``sock`` to a core's ``endpoint`` with ``keys`` (a keys folder, else
    ``$TF2PY_KEYS``, else plain)."""
    from .keys import load_keys  # keys imports this module's context: imported on use

    loaded = load_keys(keys)
    if loaded is not None:
        loaded.apply_client(sock)
    sock.connect(endpoint)


def publisher_socket(endpoint: str, keys: Any) -> zmq.Socket[bytes]:
    """A PUB socket connected to a core's publish ``endpoint`` with ``keys`` (as
    ``connect_keyed``); closed again if connecting fails."""
    sock = make_socket(zmq.PUB, SNDHWM=SEND_HWM, **client_options())
    try:
        connect_keyed(sock, endpoint, keys)
    except BaseException:
        sock.close(0)
        raise
    return sock


class SocketCloser:
    """Closes a socket under its lock, first setting a thread's stop event: what the finalizer
    of an unclosed object calls (it holds the parts, never the object). ``linger_ms``: None
    keeps the socket's own linger."""

    def __init__(self, sock: zmq.Socket[bytes], lock: threading.Lock,
                 stop: threading.Event | None = None, linger_ms: int | None = 0):
        self._sock = sock
        self._lock = lock
        self._stop = stop
        self._linger_ms = linger_ms

    def __call__(self) -> None:
        if self._stop is not None:
            self._stop.set()
        with self._lock:
            self._sock.close(self._linger_ms)


class SocketGroup:
    """The sockets one object opened, closed together (each once)."""

    def __init__(self) -> None:
        self._sockets: list[zmq.Socket[bytes]] = []

    def add(self, sock: zmq.Socket[bytes]) -> zmq.Socket[bytes]:
        """Keep ``sock`` for ``close``; returns it."""
        self._sockets.append(sock)
        return sock

    def close(self, linger_ms: int | None = None) -> None:
        """Close every socket kept (``linger_ms``: None keeps each socket's own linger)."""
        for sock in self._sockets:
            sock.close(linger_ms)
        self._sockets.clear()
