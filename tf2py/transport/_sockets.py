"""Shared ZeroMQ plumbing of the transport: one context per process, socket options, unique
inproc names, and counters that log once per cause."""

from __future__ import annotations

import itertools
import threading
import time

import zmq

from .counters import DropCounter, logger

__all__ = ["DropCounter", "logger", "context", "inproc_name", "make_socket", "client_options",
           "join_thread"]

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


def join_thread(thread: threading.Thread, timeout: float) -> None:
    """Join ``thread`` for up to ``timeout`` seconds, also one whose ``start()`` was cut short
    (a Ctrl-C or SIGTERM inside ``Thread.start``): such a thread runs but has not yet said it
    started, and a plain ``join`` raises RuntimeError for it."""
    now = time.monotonic()
    deadline = now + timeout
    # A thread that has no ident a second after start() was called never began to run.
    unborn_deadline = min(deadline, now + 1.0)
    while True:
        try:
            thread.join(max(0.0, deadline - time.monotonic()))
            return
        except RuntimeError:
            now = time.monotonic()
            if now >= deadline or (thread.ident is None and now >= unborn_deadline):
                return
            time.sleep(0.001)
