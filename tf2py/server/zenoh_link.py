"""The buffer server over Zenoh: the same goals and answers as over ZeroMQ, on key expressions.

A ``zenoh://`` server address names a Zenoh session (router, mode, ``domain=``,
``namespace=``); the service lives under ``<domain>[/<namespace>]/tf2py_buffer_server``:

    <prefix>/goal/<link>/<channel>   client -> server: one goal or cancel message per sample
    <prefix>/reply/<link>/<channel>  server -> client: accepted / result / cancelled messages
    <prefix>/client/<link>           liveliness token of a client (one per BufferClient;
                                     ``<channel>``: one per calling thread)
    <prefix>/server/<zid>        liveliness token of the server

Payloads are exactly the ZeroMQ protocol's messages (tf2py/server/protocol.py), so every
rule of the server (waits, timeouts, bounds, errors) is the same code. Each side bridges Zenoh
to the ZeroMQ sockets that the server and the client already use, over ``inproc://``: on the
server, one DEALER per Zenoh client connected to the server's ROUTER; on the client, a ROUTER
its DEALERs connect to. When a client's liveliness token goes (its process ended or lost the
network), the server side cancels that client's waiting goals at once, as it does when a
ZeroMQ connection closes.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from typing import Any

import zmq

from .fleet.session import open_session

__all__ = ["ZenohServerLink", "ZenohClientLink", "service_prefix", "MAX_MESSAGE_BYTES"]

_log = logging.getLogger("tf2py.server")

#: Goal and answer messages larger than this are dropped (the ZeroMQ server's frame limit).
MAX_MESSAGE_BYTES = 1024 * 1024
_CLIENT = re.compile(r"^[0-9a-f]{8,64}/[0-9a-f]{1,64}$")
_instances = iter(range(1 << 62))
_POLL_MS = 200


def service_prefix(parsed: Any) -> str:
    ns = f"/{parsed.namespace}" if parsed.namespace else ""
    return f"{parsed.domain}{ns}/tf2py_buffer_server"


def _inproc(kind: str) -> str:
    return f"inproc://tf2py-zenoh-{kind}-{os.getpid()}-{next(_instances)}"


def _goal_ids(payload: bytes) -> tuple[str, int] | None:
    """("goal" or "cancel", id) of a client message, or None; cheap (msgpack)."""
    try:
        import msgpack  # type: ignore[import-untyped]

        message = msgpack.unpackb(payload, raw=False)
        kind, goal_id = message[1], message[2]
        if isinstance(kind, str) and isinstance(goal_id, int):
            return kind, goal_id
    except Exception:
        pass
    return None


class ZenohServerLink:
    """Serves a BufferServer's inproc ROUTER (``endpoint``) to Zenoh clients on ``address``."""

    def __init__(self, address: str, endpoint: str):
        self.address = address
        self._endpoint = endpoint
        self._context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        self._session, parsed = open_session(address)
        self._prefix = service_prefix(parsed)
        self._lock = threading.Lock()  # the push socket, from Zenoh's threads
        self._closed = False
        self.dropped: dict[str, int] = {}
        inbox = _inproc("server-inbox")
        self._pull = self._context.socket(zmq.PULL)
        self._pull.setsockopt(zmq.LINGER, 0)
        self._pull.bind(inbox)
        self._push = self._context.socket(zmq.PUSH)
        self._push.setsockopt(zmq.LINGER, 0)
        self._push.setsockopt(zmq.SNDHWM, 0)
        self._push.connect(inbox)
        self._entities: list[Any] = []
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"tf2py-server-zenoh {address}")
        try:
            import zenoh

            self._zenoh = zenoh
            self._entities.append(self._session.declare_subscriber(
                f"{self._prefix}/goal/*/*", self._on_goal))
            self._entities.append(self._session.liveliness().declare_subscriber(
                f"{self._prefix}/client/*", self._on_client))
            self._entities.append(self._session.liveliness().declare_token(
                f"{self._prefix}/server/{self._session.info.zid()}"))
            self._thread.start()
        except BaseException:
            self.close()
            raise

    # Zenoh's threads: hand everything to the bridge thread.

    def _forward(self, *frames: bytes) -> None:
        with self._lock:
            if not self._closed:
                self._push.send_multipart(frames)

    def _on_goal(self, sample: Any) -> None:
        client = "/".join(str(sample.key_expr).rsplit("/", 2)[-2:])
        payload = sample.payload.to_bytes()
        if not _CLIENT.match(client):
            self._count("bad client id")
            return
        if len(payload) > MAX_MESSAGE_BYTES:
            self._count("oversized")
            return
        self._forward(b"m", client.encode(), payload)

    def _on_client(self, sample: Any) -> None:
        if sample.kind == self._zenoh.SampleKind.DELETE:
            link = str(sample.key_expr).rsplit("/", 1)[-1]
            self._forward(b"g", link.encode(), b"")

    def _count(self, cause: str) -> None:
        first = cause not in self.dropped
        self.dropped[cause] = self.dropped.get(cause, 0) + 1
        if first:
            _log.warning("tf2py server (zenoh): dropped a message (%s); counted from now on", cause)

    # The bridge thread: Zenoh clients <-> one DEALER each on the server's ROUTER.

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self._pull, zmq.POLLIN)
        dealers: dict[str, zmq.Socket[bytes]] = {}
        clients: dict[zmq.Socket[bytes], str] = {}
        waiting: dict[str, set[int]] = {}  # client -> goal ids sent and not answered
        try:
            while not self._closed:
                for sock, _ in poller.poll(_POLL_MS):
                    if sock is self._pull:
                        self._drain_inbox(poller, dealers, clients, waiting)
                    else:
                        self._drain_answers(sock, clients[sock], waiting)
        except zmq.ZMQError as exc:
            if not self._closed:
                _log.error("tf2py server (zenoh): bridge stopped: %s", exc)
        finally:
            for dealer in dealers.values():
                dealer.close(linger=0)

    def _drain_inbox(self, poller: zmq.Poller, dealers: dict[str, zmq.Socket[bytes]],
                     clients: dict[zmq.Socket[bytes], str], waiting: dict[str, set[int]]) -> None:
        for _ in range(256):
            try:
                kind, name, payload = self._pull.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if kind == b"g":
                self._client_gone(name.decode() + "/", poller, dealers, clients, waiting)
                continue
            client = name.decode()
            dealer = dealers.get(client)
            if dealer is None:
                dealer = self._context.socket(zmq.DEALER)
                dealer.setsockopt(zmq.LINGER, 0)
                dealer.setsockopt(zmq.ROUTING_ID, b"zenoh-" + name.replace(b"/", b"-"))
                dealer.setsockopt(zmq.SNDHWM, 100_000)
                dealer.setsockopt(zmq.RCVHWM, 100_000)
                dealer.connect(self._endpoint)
                dealers[client] = dealer
                clients[dealer] = client
                poller.register(dealer, zmq.POLLIN)
            ids = _goal_ids(payload)
            if ids is not None and ids[0] == "goal":
                waiting.setdefault(client, set()).add(ids[1])
            try:
                dealer.send(payload, zmq.NOBLOCK)
            except zmq.Again:
                self._count("server queue full")

    def _drain_answers(self, dealer: zmq.Socket[bytes], client: str,
                       waiting: dict[str, set[int]]) -> None:
        key = f"{self._prefix}/reply/{client}"
        for _ in range(256):
            try:
                payload = dealer.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            ids = _goal_ids(payload)
            if ids is not None and ids[0] in ("result", "cancelled"):
                waiting.get(client, set()).discard(ids[1])
            try:
                self._session.put(key, payload,
                                  congestion_control=self._zenoh.CongestionControl.BLOCK)
            except Exception as exc:  # the session closing under us
                if not self._closed:
                    _log.warning("tf2py server (zenoh): cannot answer %s: %s", client, exc)

    def _client_gone(self, link: str, poller: zmq.Poller, dealers: dict[str, zmq.Socket[bytes]],
                     clients: dict[zmq.Socket[bytes], str], waiting: dict[str, set[int]]) -> None:
        """A client process is gone: cancel its waiting goals now, drop its sockets."""
        from . import protocol

        for client in [c for c in dealers if c.startswith(link)]:
            dealer = dealers.pop(client)
            for goal_id in waiting.pop(client, set()):
                try:
                    dealer.send(protocol.pack_cancel(goal_id), zmq.NOBLOCK)
                except zmq.ZMQError:
                    pass
            poller.unregister(dealer)
            del clients[dealer]
            dealer.close(linger=100)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for entity in self._entities:
            try:
                entity.undeclare()
            except Exception:
                pass
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._pull.close(linger=0)
        self._push.close(linger=0)
        try:
            self._session.close()
        except Exception:
            pass


class ZenohClientLink:
    """Carries a BufferClient's DEALERs (connected to ``endpoint``, an inproc ROUTER) to a
    server on Zenoh ``address``."""

    def __init__(self, address: str):
        self.address = address
        self._context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        self._session, parsed = open_session(address)
        self._prefix = service_prefix(parsed)
        self._link = os.urandom(8).hex()
        self.endpoint = _inproc("client")
        self._closed = False
        self._lock = threading.Lock()
        self._router = self._context.socket(zmq.ROUTER)
        self._router.setsockopt(zmq.LINGER, 0)
        self._router.bind(self.endpoint)
        inbox = _inproc("client-inbox")
        self._pull = self._context.socket(zmq.PULL)
        self._pull.setsockopt(zmq.LINGER, 0)
        self._pull.bind(inbox)
        self._push = self._context.socket(zmq.PUSH)
        self._push.setsockopt(zmq.LINGER, 0)
        self._push.setsockopt(zmq.SNDHWM, 0)
        self._push.connect(inbox)
        self._entities: list[Any] = []
        self._publishers: dict[bytes, Any] = {}
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"tf2py-client-zenoh {address}")
        try:
            import zenoh

            self._zenoh = zenoh
            self._entities.append(self._session.declare_subscriber(
                f"{self._prefix}/reply/{self._link}/*", self._on_reply))
            self._entities.append(self._session.liveliness().declare_token(
                f"{self._prefix}/client/{self._link}"))
            self._thread.start()
        except BaseException:
            self.close()
            raise

    def _on_reply(self, sample: Any) -> None:
        channel = str(sample.key_expr).rsplit("/", 1)[-1]
        payload = sample.payload.to_bytes()
        if len(payload) > MAX_MESSAGE_BYTES:
            return
        with self._lock:
            if not self._closed:
                self._push.send_multipart([bytes.fromhex(channel), payload])

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self._router, zmq.POLLIN)
        poller.register(self._pull, zmq.POLLIN)
        try:
            while not self._closed:
                for sock, _ in poller.poll(_POLL_MS):
                    if sock is self._router:
                        self._drain_goals()
                    else:
                        self._drain_replies()
            self._drain_goals()  # the cancels a closing client sent last
        except zmq.ZMQError as exc:
            if not self._closed:
                _log.error("tf2py client (zenoh): bridge stopped: %s", exc)

    def _drain_goals(self) -> None:
        for _ in range(256):
            try:
                identity, payload = self._router.recv_multipart(zmq.NOBLOCK)
            except (zmq.Again, ValueError):
                return
            publisher = self._publishers.get(identity)
            if publisher is None:
                publisher = self._session.declare_publisher(
                    f"{self._prefix}/goal/{self._link}/{identity.hex()}",
                    congestion_control=self._zenoh.CongestionControl.BLOCK)
                self._publishers[identity] = publisher
            publisher.put(payload)

    def _drain_replies(self) -> None:
        for _ in range(256):
            try:
                identity, payload = self._pull.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                self._router.send_multipart([identity, payload], zmq.NOBLOCK)
            except zmq.ZMQError:
                pass  # that channel is gone

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        for entity in list(self._publishers.values()) + self._entities:
            try:
                entity.undeclare()
            except Exception:
                pass
        for sock in (self._router, self._pull, self._push):
            sock.close(linger=0)
        try:
            self._session.close()
        except Exception:
            pass


