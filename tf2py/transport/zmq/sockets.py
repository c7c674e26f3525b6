"""Shared ZeroMQ plumbing of the bus: one context per process, socket options, unique inproc
names (and, re-exported, the counters and lifetime helpers every bus uses)."""

from __future__ import annotations

import itertools
import threading

import zmq

from ..counters import DropCounter, logger
from ..lifetime import join_thread, release_when_collected

__all__ = ["DropCounter", "logger", "context", "inproc_name", "make_socket", "client_options",
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


def context() -> zmq.Context:
    """The process-wide ZeroMQ context (``zmq.Context.instance()``)."""
    return zmq.Context.instance()


def inproc_name(kind: str) -> str:
    """A unique inproc endpoint for this process."""
    return f"inproc://tf2py-{kind}-{id(threading.current_thread()):x}-{next(_counter)}"


def make_socket(kind: int, linger_ms: int = LINGER_MS, ctx: zmq.Context | None = None,
                **options) -> zmq.Socket:
    """A socket of ``ctx`` (default: the shared context) with ``linger`` set and ``options``
    applied (``zmq.SNDHWM=...`` style, given as option-name keywords)."""
    sock = (ctx or context()).socket(kind)
    try:
        sock.setsockopt(zmq.LINGER, linger_ms)
        for name, value in options.items():
            sock.setsockopt(getattr(zmq, name), value)
    except BaseException:
        sock.close(0)
        raise
    return sock


def client_options() -> dict:
    """Options of every socket that connects to a core."""
    return dict(RECONNECT_IVL=RECONNECT_IVL_MS, RECONNECT_IVL_MAX=RECONNECT_IVL_MAX_MS)
