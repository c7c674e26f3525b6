"""Typed topics (``topics.TopicSpec``) on the ZeroMQ bus: the core forwards them as it
forwards /clock, in C, with no change to the core.

A message is two ZeroMQ frames: ``topic:<name>\\0`` (e.g. ``topic:/joint_states\\0``; the
NUL ends the name, so a subscription's prefix match is an exact match) and the CDR payload,
encapsulation header included, at most ``wire.MAX_PIECE_BYTES`` (the core refuses larger
frames). Not latched: what is sent while nobody listens is lost (``transient_local`` is not
kept on this bus; see ``Transport.transient_local_topics``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import zmq

from .. import wire
from .address import bus_endpoints
from ..topics import Delivery, SendGate
from .sockets import (
    RECEIVE_HWM,
    client_options,
    connect_keyed,
    join_thread,
    make_socket,
    publisher_socket,
    release_when_collected,
)
from ..lifetime import ClosingContext

if TYPE_CHECKING:
    from ..topics import TopicSpec

__all__ = ["ZmqTopicPublisher", "ZmqTopicSubscriber", "topic_frame", "TOPIC_PREFIX"]

#: What starts the first frame of every typed-topic message.
TOPIC_PREFIX = b"topic:"
#: How often the receive thread looks whether it was asked to stop (seconds).
_POLL_MS = 100


def topic_frame(topic: TopicSpec) -> bytes:
    """The first frame of ``topic``'s messages: ``topic:/<name>\\0``."""
    return TOPIC_PREFIX + ("/" + topic.relative_name).encode() + b"\0"


class ZmqTopicPublisher(ClosingContext):
    """Publishes CDR payloads on one topic of the core at ``address``. Never blocks: a
    message the socket cannot queue is dropped (counted in ``dropped``)."""

    def __init__(self, address: str, topic: TopicSpec, keys: Any = None):
        publish_endpoint, _ = bus_endpoints(address)
        self.topic = topic
        self._frame = topic_frame(topic)
        self._gate = SendGate(topic)
        self.dropped = 0
        self._socket = publisher_socket(publish_endpoint, keys)
        self._finalizer = release_when_collected(self, self._socket.close, "topic publisher")

    @property
    def sent_messages(self) -> int:
        return self._gate.sent_messages

    def publish(self, data: bytes) -> None:
        """Send one message (CDR bytes); ValueError if over the bus's frame bound."""
        if isinstance(data, (bytes, bytearray, memoryview)) and len(data) > wire.MAX_PIECE_BYTES:
            raise ValueError(f"a {self.topic.name} message of {len(data)} bytes exceeds the "
                             f"tcp:// bus's {wire.MAX_PIECE_BYTES} bytes")
        self._gate.send(self._put, data)

    def _put(self, data: bytes) -> bool:
        try:
            self._socket.send_multipart((self._frame, data), zmq.NOBLOCK)
        except zmq.Again:  # the socket's queue is full: dropped, never blocking
            self.dropped += 1
            return False
        return True

    def close(self) -> None:
        self._finalizer.detach()
        if self._gate.close():
            self._socket.close()


class _Reader:
    """The receive loop's parts (the socket, the delivery and its counters): what the
    thread holds, so an unclosed subscriber can still be collected."""

    def __init__(self, sock: zmq.Socket[bytes], frame: bytes, delivery: Delivery):
        self.sock = sock
        self.frame = frame
        self.delivery = delivery
        self.dropped = delivery.dropped
        self.stop = threading.Event()

    def run(self) -> None:
        sock = self.sock
        try:
            while not self.stop.is_set():
                if not sock.poll(_POLL_MS):
                    continue
                for _ in range(1000):
                    try:
                        frames = sock.recv_multipart(zmq.NOBLOCK, copy=True)
                    except zmq.Again:
                        break
                    self._one(frames)
        except zmq.ZMQError as exc:
            if not self.stop.is_set():
                self.dropped.drop("socket", str(exc))
        finally:
            sock.close(0)

    def _one(self, frames: list[bytes]) -> None:
        if len(frames) != 2 or frames[0] != self.frame:
            self.dropped.drop("shape", f"a topic message of {len(frames)} frame(s) "
                              f"starting {bytes(frames[0][:40])!r}")
            return
        self.delivery(frames[1])


class ZmqTopicSubscriber(ClosingContext):
    """Calls ``on_message(data)`` for every message on one topic of the core at
    ``address``, on a named daemon thread."""

    close_timeout = 5.0

    def __init__(self, address: str, topic: TopicSpec, on_message: Callable[[bytes], None],
                 keys: Any = None):
        delivery = Delivery(on_message, f"tf2py {topic.name} subscriber")
        _, subscribe_endpoint = bus_endpoints(address)
        self.topic = topic
        frame = topic_frame(topic)
        sock = make_socket(zmq.SUB, linger_ms=0, RCVHWM=RECEIVE_HWM,
                           MAXMSGSIZE=wire.MAX_PIECE_BYTES, **client_options())
        try:
            sock.setsockopt(zmq.SUBSCRIBE, frame)
            connect_keyed(sock, subscribe_endpoint, keys)
        except BaseException:
            sock.close(0)
            raise
        self._reader = _Reader(sock, frame, delivery)
        self._thread = threading.Thread(target=self._reader.run,
                                         name=f"tf2py-topic{topic.name}", daemon=True)
        self._thread.start()
        self._closed = False
        self._finalizer = release_when_collected(self, self._reader.stop.set,
                                                 "topic subscriber")

    def stats(self) -> dict[str, Any]:
        return self._reader.delivery.stats()

    def close(self) -> None:
        self._finalizer.detach()
        if self._closed:
            return
        self._closed = True
        self._reader.stop.set()
        if self._thread is not threading.current_thread():
            join_thread(self._thread, self.close_timeout)
