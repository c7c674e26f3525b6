"""The buffer server's Zenoh link: goals and answers on key expressions (see link.py).

A ``zenoh://`` server address names a Zenoh session (locator, mode, config) and a service:
``domain=`` and ``namespace=`` give the prefix ``P = <domain>[/<namespace>]/tf2py_buffer_server``:

    P/goal/<link>/<channel>     client -> server: one goal or cancel message per sample
    P/reply/<link>/<channel>    server -> client: accepted / result / cancelled messages
    P/client/<link>/<channel>   liveliness token of one client socket (a ClientLink)
    P/server/<zid>              liveliness token of the server

Payloads are the buffer server protocol's messages, untouched. A client socket is a *peer*:
``"<link>/<channel>"`` (``<link>`` random per process and address, ``<channel>`` random per
ClientLink); when its liveliness token goes (closed, process ended, or Zenoh's lease ran out)
the server link reports the peer gone, and ignores whatever comes from it later.

The server takes goals only from *present* clients: a peer whose liveliness token it holds.
A goal from a peer it has no token of yet is held (up to ``_HELD_PER_PEER`` messages, for
``_HOLD_SECONDS``, ``_MAX_HELD_PEERS`` peers and ``_MAX_HELD_BYTES`` at once) until the token
arrives, else dropped and counted (``"absent client"``): made-up client ids cannot fill the
server's limits. At
most ``_MAX_PRESENT`` peers are present at once, ``_MAX_CHANNELS_PER_LINK`` of one
process's link. Without keys, any process on the domain can declare the server's token and
answer; with keys, only the site's identities can connect at all, the server signs each
answer and clients take only answers signed by an identity that may serve (zenoh_auth.py).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ..transport.lifetime import CloseOnce
from ..transport.zenoh.address import ZenohAddress, parse_zenoh_address
from ..transport.zenoh.session import SharedSession
from .zenoh_auth import checker_for, signer_for

__all__ = ["ZenohServerLink", "ZenohClientLink", "open_server_link", "open_client_link",
           "check_address", "service_prefix", "MAX_MESSAGE_BYTES"]

_log = logging.getLogger("tf2py.server")

#: Goal and answer messages larger than this are dropped (the ZeroMQ link's frame limit).
MAX_MESSAGE_BYTES = 1024 * 1024
#: Messages queued for the server loop (or a client) before more are dropped.
_MAX_QUEUED = 100_000
_PEER = re.compile(r"^[0-9a-f]{8,32}/[0-9a-f]{8,32}$")
_GONE_REMEMBERED = 100_000
_MAX_PRESENT = 10_000  # client sockets present at once
_MAX_CHANNELS_PER_LINK = 1_000  # client sockets of one process link (``<link>/``)
_MAX_HELD_PEERS = 1_000  # peers whose goals came before their token
_HELD_PER_PEER = 64
_HOLD_SECONDS = 5.0
_MAX_HELD_BYTES = 16 * 1024 * 1024  # all held messages together
_MAX_LATENCIES = 10_000  # lookup latencies kept between two reads (stats)
_PROCESS_LINK = os.urandom(8).hex()


def service_prefix(address: ZenohAddress) -> str:
    """``<domain>[/<namespace>]/tf2py_buffer_server``."""
    ns = address.namespace.strip("/")
    return f"{address.domain}/{ns}/tf2py_buffer_server" if ns else \
        f"{address.domain}/tf2py_buffer_server"


class _Inbox:
    """A bounded queue with a wake-up: filled by Zenoh's threads, read by one thread."""

    def __init__(self) -> None:
        self.items: deque[Any] = deque()
        self.ready = threading.Condition(threading.Lock())
        self.woken = False

    def put(self, item: Any) -> bool:
        with self.ready:
            if len(self.items) >= _MAX_QUEUED:
                return False
            self.items.append(item)
            self.ready.notify()
            return True

    def take(self, limit: int) -> list[Any]:
        with self.ready:
            n = min(limit, len(self.items))
            return [self.items.popleft() for _ in range(n)]

    def wait(self, timeout: float | None) -> None:
        with self.ready:
            if not self.items and not self.woken:
                self.ready.wait(timeout)
            self.woken = False

    def wake(self) -> None:
        with self.ready:
            self.woken = True
            self.ready.notify()


class ZenohServerLink:
    """The server side (see link.py's ServerLink)."""

    def __init__(self, address: str, keys: Any, on_drop: Callable[[str, str], None]):
        parsed = parse_zenoh_address(address)
        self.address = address
        self._on_drop = on_drop
        self._prefix = service_prefix(parsed)
        self._inbox = _Inbox()
        self._gone: set[str] = set()
        self._present: set[str] = set()
        self._per_link: dict[str, int] = {}
        self._held: dict[str, tuple[float, list[bytes]]] = {}  # peer -> (first, messages)
        self._held_bytes = 0
        self._arrivals: dict[str, deque[float]] = {}  # peer -> goals not answered yet
        self._latencies: list[float] = []
        self._lock = threading.Lock()
        self._closing = CloseOnce(self._lock)
        self._entities: list[Any] = []
        self._signer = signer_for(keys)  # with keys: answers signed (zenoh_auth.py)
        self._shared = SharedSession.acquire(parsed, keys)
        try:
            import zenoh

            self._zenoh = zenoh
            session = self._shared.session
            self._entities.append(session.declare_subscriber(
                f"{self._prefix}/goal/*/*", self._on_goal))
            self._entities.append(session.liveliness().declare_subscriber(
                f"{self._prefix}/client/*/*", self._on_client, history=True))
            self._entities.append(session.liveliness().declare_token(
                f"{self._prefix}/server/{self._shared.zid}"))
        except BaseException:
            self.close()
            raise

    def _peer(self, key: str, kind: str) -> str | None:
        peer = key[len(self._prefix) + len(kind) + 2:]
        return peer if _PEER.match(peer) else None

    def _on_goal(self, sample: Any) -> None:
        peer = self._peer(str(sample.key_expr), "goal")
        if peer is None:
            self._on_drop("framing", f"a message on {sample.key_expr} (not a client key)")
            return
        payload = sample.payload.to_bytes()
        if len(payload) > MAX_MESSAGE_BYTES:
            self._on_drop("oversized", f"a message of {len(payload)} bytes from {peer}")
            return
        with self._lock:
            if peer in self._gone:
                return  # after its goodbye: nothing of that peer follows its None
            if peer not in self._present:
                self._hold(peer, payload)
                return
            self._arrived(peer)
            if not self._inbox.put((peer, payload)):
                self._on_drop("queue full", f"a message from {peer}: the server is behind")

    def _hold(self, peer: str, payload: bytes) -> None:
        """Keep a goal of a peer without a token yet (its token may be on its way)."""
        self._expire_held(time.monotonic())
        held = self._held.get(peer)
        if held is None:
            if len(self._held) >= _MAX_HELD_PEERS:
                self._on_drop("absent client", f"a message from {peer}, which has no "
                              "liveliness token (too many such clients)")
                return
            held = self._held[peer] = (time.monotonic(), [])
        if len(held[1]) >= _HELD_PER_PEER or \
                self._held_bytes + len(payload) > _MAX_HELD_BYTES:
            self._on_drop("absent client", f"a message from {peer}, which has no liveliness "
                          "token (too many messages waiting for their client's token)")
            return
        held[1].append(payload)
        self._held_bytes += len(payload)

    def _expire_held(self, now: float) -> None:
        while self._held:
            peer, (first, messages) = next(iter(self._held.items()))
            if now - first < _HOLD_SECONDS:
                return
            del self._held[peer]
            self._held_bytes -= sum(len(m) for m in messages)
            for _ in messages:
                self._on_drop("absent client", f"a message from {peer}, which never showed "
                              f"a liveliness token within {_HOLD_SECONDS:g} s")

    def _arrived(self, peer: str) -> None:
        arrivals = self._arrivals.get(peer)
        if arrivals is None:
            arrivals = self._arrivals[peer] = deque()
        if len(arrivals) < _HELD_PER_PEER:
            arrivals.append(time.monotonic())

    def _on_client(self, sample: Any) -> None:
        peer = self._peer(str(sample.key_expr), "client")
        if peer is None:
            return
        link = peer.split("/", 1)[0]
        if sample.kind != self._zenoh.SampleKind.DELETE:
            with self._lock:
                if peer in self._present or peer in self._gone:
                    return
                if len(self._present) >= _MAX_PRESENT or \
                        self._per_link.get(link, 0) >= _MAX_CHANNELS_PER_LINK:
                    self._on_drop("client limit", f"client {peer}: over the server's bound "
                                  "on clients present")
                    return
                self._present.add(peer)
                self._per_link[link] = self._per_link.get(link, 0) + 1
                _, held = self._held.pop(peer, (0.0, []))
                self._held_bytes -= sum(len(m) for m in held)
                for payload in held:  # in order, before any later message of the peer
                    self._arrived(peer)
                    if not self._inbox.put((peer, payload)):
                        self._on_drop("queue full", f"a message from {peer}: the server is "
                                      "behind")
            return
        with self._lock:
            if peer in self._present:
                self._present.discard(peer)
                left = self._per_link.get(link, 1) - 1
                if left > 0:
                    self._per_link[link] = left
                else:
                    self._per_link.pop(link, None)
            _, dropped = self._held.pop(peer, (0.0, []))
            self._held_bytes -= sum(len(m) for m in dropped)
            self._arrivals.pop(peer, None)
            if len(self._gone) >= _GONE_REMEMBERED:
                self._gone.clear()
            self._gone.add(peer)
        self._inbox.put((peer, None))

    def take_latencies(self) -> list[float]:
        """Seconds from each goal's arrival to the first answer sent to its client (accepted
        or result), since the last call (at most the last 10 000)."""
        with self._lock:
            out, self._latencies = self._latencies, []
            return out

    def receive(self, limit: int) -> list[tuple[Any, bytes | None]]:
        return self._inbox.take(limit)

    def send(self, peer: Any, payload: bytes) -> bool:
        if self._closing.closed:
            return False
        with self._lock:
            arrivals = self._arrivals.get(peer)
            if arrivals:
                if len(self._latencies) >= _MAX_LATENCIES:
                    del self._latencies[:_MAX_LATENCIES // 2]
                self._latencies.append(time.monotonic() - arrivals.popleft())
        key = f"{self._prefix}/reply/{peer}"
        try:
            self._shared.session.put(
                key, payload, congestion_control=self._zenoh.CongestionControl.BLOCK,
                attachment=None if self._signer is None else self._signer.sign(key, payload))
        except Exception as exc:  # the session is closing
            _log.debug("tf2py server (zenoh): cannot answer %s: %s", peer, exc)
            return False
        return True

    def wait(self, timeout: float | None) -> None:
        self._inbox.wait(timeout)

    def wake(self) -> None:
        self._inbox.wake()

    def close(self) -> None:
        if self._closing.begin():
            _release(self._entities, self._shared)


def _release(entities: list[Any], shared: Any) -> None:
    """Undeclare a link's Zenoh entities, newest first (one the closing session already
    dropped is fine), and release its share of the session."""
    for entity in reversed(entities):
        try:
            entity.undeclare()
        except Exception:
            pass
    entities.clear()
    shared.release()


def _matching(status: Any) -> bool:
    """A publisher's matching status (zenoh-python hands out a ``MatchingStatus``; its stubs
    say ``bool``)."""
    return bool(getattr(status, "matching", status))


class ZenohClientLink:
    """One client socket (see link.py's ClientLink)."""

    def __init__(self, address: str, keys: Any):
        parsed = parse_zenoh_address(address)
        self.address = address
        self._prefix = service_prefix(parsed)
        self._peer = f"{_PROCESS_LINK}/{os.urandom(8).hex()}"
        self._inbox = _Inbox()
        self._servers_seen = 0
        self._server_back = False
        self._lock = threading.Lock()
        self._closing = CloseOnce(self._lock)
        self._entities: list[Any] = []
        self._checker = checker_for(keys)  # with keys: only answers of a serving identity
        self.refused = 0
        self._reply_key = f"{self._prefix}/reply/{self._peer}"
        self._shared = SharedSession.acquire(parsed, keys)
        try:
            import zenoh

            self._zenoh = zenoh
            session = self._shared.session
            self._entities.append(session.declare_subscriber(self._reply_key, self._on_reply))
            self._entities.append(session.liveliness().declare_token(
                f"{self._prefix}/client/{self._peer}"))
            self._entities.append(session.liveliness().declare_subscriber(
                f"{self._prefix}/server/*", self._on_server))
            self._publisher = session.declare_publisher(
                f"{self._prefix}/goal/{self._peer}",
                congestion_control=zenoh.CongestionControl.BLOCK)
            self._entities.append(self._publisher)
            # A peer session opens before it has reached its router, and a goal put before
            # the server's goal subscriber is known here goes nowhere: goals wait in _early
            # until the publisher first matches. Our reply subscriber and token were declared
            # before, on the same links, so the server knows them before it gets a goal.
            self._early: list[bytes] | None = []
            self._entities.append(self._publisher.declare_matching_listener(self._on_matching))
            if _matching(self._publisher.matching_status):
                self._flush_early()
        except BaseException:
            self.close()
            raise

    def _on_matching(self, status: Any) -> None:
        if _matching(status):
            self._flush_early()

    def _flush_early(self) -> None:
        with self._lock:
            early, self._early = self._early, None
            for payload in early or ():
                try:
                    self._publisher.put(payload)
                except Exception:  # the session is closing
                    return

    def _on_reply(self, sample: Any) -> None:
        payload = sample.payload.to_bytes()
        if len(payload) > MAX_MESSAGE_BYTES:
            return
        if self._checker is not None:
            attachment = None if sample.attachment is None else sample.attachment.to_bytes()
            if not self._checker.check(self._reply_key, payload, attachment):
                self.refused += 1
                if self.refused == 1:
                    _log.warning("tf2py client (zenoh): refused an answer not signed by an "
                                 "identity of the site that may serve (logged once)")
                return
        self._inbox.put(payload)

    def _on_server(self, sample: Any) -> None:
        if sample.kind == self._zenoh.SampleKind.PUT:
            with self._lock:
                # A server token after one was seen: a (re)started server that may not know
                # our waiting goals.
                if self._servers_seen:
                    self._server_back = True
                self._servers_seen += 1
            self._inbox.wake()  # a waiting call asks reconnected() now, not at its next answer

    def send(self, payload: bytes) -> bool:
        if self._closing.closed:
            return False
        with self._lock:
            if self._early is not None:
                if len(self._early) >= _MAX_QUEUED:
                    return False
                self._early.append(payload)
                return True
        try:
            self._publisher.put(payload)
        except Exception:
            return False
        return True

    def receive(self, limit: int) -> list[bytes]:
        return self._inbox.take(limit)

    def wait(self, timeout: float | None) -> None:
        self._inbox.wait(timeout)

    def wake(self) -> None:
        self._inbox.wake()

    def reconnected(self) -> bool:
        with self._lock:
            back, self._server_back = self._server_back, False
            return back

    def close(self, linger: float = 0.0) -> None:
        if self._closing.begin():
            _release(self._entities, self._shared)


def check_address(address: str) -> str:
    """``address`` if it is a usable ``zenoh://`` address, else ValueError naming what is
    wrong (opens nothing, needs no extra)."""
    parse_zenoh_address(address)
    return address.strip()


def open_server_link(address: str, keys: Any, on_drop: Callable[[str, str], None]
                     ) -> ZenohServerLink:
    """A Zenoh ServerLink for a ``zenoh://`` address."""
    return ZenohServerLink(address, keys, on_drop)


def open_client_link(address: str, keys: Any) -> ZenohClientLink:
    """A Zenoh ClientLink for a ``zenoh://`` address."""
    return ZenohClientLink(address, keys)
