"""Broadcasters on the ZeroMQ bus: ``/tf`` and latched ``/tf_static``.

Both are collected like files when dropped without ``close()``: a finalizer releases the
sockets (and the static broadcaster's thread, which holds its ``_StaticLatch``, never the
broadcaster) and warns with ``ResourceWarning``.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import Sequence
from typing import Any

import zmq

from ...buffer.messages import TransformStamped
from .. import wire
from .address import bus_endpoints
from ..counters import DropCounter
from ..frame_ids import strip_leading_slash
from ..broadcaster import StaticTransformBroadcaster, TransformBroadcaster
from ..static_set import invalid_rows, transform_items
from .sockets import (
    SEND_HWM,
    SocketCloser,
    SocketGroup,
    client_options,
    connect_keyed,
    inproc_pair,
    join_thread,
    logger,
    make_socket,
    publisher_socket,
    release_when_collected,
)
from ..lifetime import ClosingContext

#: Seconds between a static broadcaster's heartbeats (the core forgets the statics of a
#: publisher that is silent for 3.5 s: API "within 5 s").
HEARTBEAT_SECONDS = 1.0

__all__ = ["ZmqTransformBroadcaster", "ZmqStaticTransformBroadcaster", "HEARTBEAT_SECONDS"]

_SNDMORE = zmq.SNDMORE | zmq.NOBLOCK
_pack_uint64 = struct.Struct(">BQ").pack
_NOBLOCK = zmq.NOBLOCK


def _row_bytes(row: list[Any]) -> int:
    """Bytes (at most) of one row in a message: two msgpack strings, stamp and values."""
    return len(row[0].encode("utf-8", "surrogatepass")) + len(
        row[1].encode("utf-8", "surrogatepass")) + 10 + 64


class ZmqTransformBroadcaster(ClosingContext):
    """``TransformBroadcaster`` on the ZeroMQ bus (see its docstring).

    A list over 16 KiB goes as several messages of whole transforms; over 64 MiB, or with a
    frame id over 4096 characters, ``send_transform`` raises ValueError. Every message carries
    this broadcaster's stream id and its number in the stream (wire version 2), so listeners
    count the messages lost on the way.
    """

    def __init__(self, core: str | None = None, authority: str | None = None,
                 keys: Any = None):
        self._publish_endpoint, _ = bus_endpoints(core)
        self.authority = wire.authority_or_default(authority)
        self._lock = threading.Lock()
        self._closed = False
        self.sent_messages = 0
        self.sent_transforms = 0
        self.stream_id = int.from_bytes(os.urandom(8), "little") >> 1
        self._stream = wire.pack_uint64(self.stream_id)
        self._sequence = 0
        self._socket = publisher_socket(self._publish_endpoint, keys)
        self._finalizer = release_when_collected(
            self, SocketCloser(self._socket, self._lock, linger_ms=None), "TransformBroadcaster")

    def send_transform(self, transform: Any) -> None:
        """Publish a TransformStamped, or a list of them as ONE message.

        Stamps travel as integer nanoseconds; values are not validated here (as in tf2),
        listeners drop invalid rows.
        """
        if transform.__class__ is TransformStamped or hasattr(transform, "child_frame_id"):
            n = 1
        elif isinstance(transform, (list, tuple)):
            n = len(transform)
        else:
            transform = transform_items(transform)
            n = len(transform)
        if n == 0:
            return  # nothing to say: no empty message on the bus
        self._send_body(wire.encode_transforms(transform, self.authority), n)

    def send_columns(self, parents: Sequence[str], children: Sequence[str],
                     stamps_ns: Any, values: Any) -> None:
        """Publish N transforms given as columns (``values`` (N, 7) tx..qw) as one message:
        what a ``TransformBatch`` holds, with no object per transform."""
        if len(parents):
            self._send_body(wire.encode_arrays(parents, children, stamps_ns, values,
                                               self.authority), len(parents))

    def _send_body(self, body: bytes, n: int) -> None:
        if len(body) > wire.MAX_PIECE_BYTES:
            wire.check_message_size(body, f"a message of {n} transforms")
            # The bus carries messages of at most 16 KiB: a big list goes as several
            # messages of whole transforms, in order.
            self._send_pieces(wire.split_body(body, wire.MAX_PIECE_BYTES), n)
            return
        with self._lock:
            if self._closed:
                raise RuntimeError("send_transform on a closed TransformBroadcaster")
            sequence = self._sequence
            self._sequence = sequence + 1
            # wire.sequenced, inlined (the hot path): version 2, stream and number appended
            body = b"\x98\x02" + body[2:] + self._stream + _pack_uint64(0xCF, sequence)
            try:
                # Two sends (not send_multipart): the cheapest way to put [topic, body].
                # PUB never blocks: at the HWM it drops the message for that peer (the
                # listeners see the gap in the sequence).
                self._socket.send(wire.TOPIC_TF, _SNDMORE)
                self._socket.send(body, _NOBLOCK)
            except zmq.Again:
                return
            self.sent_messages += 1
            self.sent_transforms += n

    def _send_pieces(self, pieces: list[bytes], n: int) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("send_transform on a closed TransformBroadcaster")
            for piece in pieces:
                sequence = self._sequence
                self._sequence = sequence + 1
                piece = wire.sequenced(piece, self._stream, sequence)
                try:
                    self._socket.send(wire.TOPIC_TF, _SNDMORE)
                    self._socket.send(piece, _NOBLOCK)
                except zmq.Again:
                    return
                self.sent_messages += 1
            self.sent_transforms += n

    def close(self) -> None:
        """Close the socket (queued messages get a short linger to go out)."""
        self._finalizer.detach()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._socket.close()


class _StaticLatch:
    """The set, the sockets and the thread of one static broadcaster (what its thread holds:
    never the broadcaster itself, so a dropped broadcaster is collected)."""

    def __init__(self, publish_endpoint: str, authority: str, keys: Any):
        self.authority = authority
        self._lock = threading.Lock()
        # child_frame_id -> wire.transform_to_wire row: a copy, so a caller that reuses and
        # mutates one TransformStamped between sends does not change what is latched.
        self._latched: dict[str, list[Any]] = {}
        # This publisher's id at the core (the core latches per publisher, as ROS 2's
        # transient-local durability) and the version of its set (+1 per change).
        self.publisher_id = os.urandom(8).hex()
        self._version = 0
        self._body_cache: tuple[int, list[bytes]] | None = None
        self._row_sizes: dict[str, int] = {}
        self._set_bytes = 0
        self._closed = False
        self.published = 0
        self.dropped = DropCounter("tf2py-static-broadcaster")  # invalid transforms
        self._publish_failed = False
        self._thread: threading.Thread | None = None
        self._sockets = SocketGroup()
        try:
            # XPUB (not PUB): it reports the core's subscription, which tells us the core
            # (re)connected and is ready to receive.
            self._socket = self._sockets.add(make_socket(
                zmq.XPUB, SNDHWM=SEND_HWM, XPUB_VERBOSE=1, **client_options()))
            connect_keyed(self._socket, publish_endpoint, keys)
            self._wake_in, self._wake = map(self._sockets.add,
                                            inproc_pair("static-broadcaster"))
            self._thread = threading.Thread(
                target=self._run, name="tf2py-static-broadcaster", daemon=True
            )
            self._thread.start()
        except BaseException:
            self.close()
            raise

    def send_transform(self, transform: Any) -> None:
        """Latch a TransformStamped or a list of them (latest per child frame wins) and
        publish the whole latched set as one message."""
        items = transform_items(transform)
        wire.encode_transforms(items, self.authority)  # type errors raise here, in the caller
        rows = [wire.transform_to_wire(ts) for ts in items]
        refused = invalid_rows([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                               [r[3:] for r in rows])
        if refused:  # never latched: it would replace its frame's valid one for late joiners
            self.dropped.drop("invalid", f"static transform {refused[0][0]} not latched: "
                              f"{refused[0][1]}", n=len(refused))
            skip = {index for index, _ in refused}
            rows = [row for index, row in enumerate(rows) if index not in skip]
        with self._lock:
            if self._closed:
                raise RuntimeError("send_transform on a closed StaticTransformBroadcaster")
            total = self._set_bytes
            sizes: dict[str, int] = {}
            for row in rows:
                size = _row_bytes(row)
                child = strip_leading_slash(row[1])  # "/a" and "a": one frame
                total += size - sizes.get(child, self._row_sizes.get(child, 0))
                sizes[child] = size
            if total + 64 + len(self.authority.encode()) > wire.MAX_MESSAGE_BYTES:
                raise ValueError(
                    f"the latched set would be about {total} bytes, over the bus limit of "
                    f"{wire.MAX_MESSAGE_BYTES} bytes (64 MiB); these {len(rows)} transforms "
                    "were not latched")
            for row in rows:
                self._latched[strip_leading_slash(row[1])] = row
            self._row_sizes.update(sizes)
            self._set_bytes = total
            self._version += 1
            try:
                self._wake.send(b"publish", zmq.NOBLOCK)
            except zmq.Again:
                pass  # wake-ups already queued: the thread publishes the whole set anyway

    def _encode(self) -> bytes:  # an attribute, so a test can make it fail
        rows = list(self._latched.values())
        return wire.encode_arrays(
            [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
            [r[3:] for r in rows], self.authority)

    def _topic(self, prefix: bytes, version: int | None = None) -> bytes:
        topic = prefix + self.publisher_id.encode()
        return topic if version is None else topic + b"/%d" % version

    def _publish(self) -> None:
        with self._lock:
            version = self._version
            cached = self._body_cache
            if not version:
                return
            if cached is None or cached[0] != version:
                # The set in messages of at most 16 KiB (the core latches each piece).
                cached = self._body_cache = (
                    version, wire.split_body(self._encode(), wire.MAX_PIECE_BYTES))
        version, pieces = cached
        topic = self._topic(b"latch/tf_static/", version)
        try:
            for k, piece in enumerate(pieces):
                self._socket.send_multipart(
                    (topic + b"/%d/%d" % (k, len(pieces)), piece), zmq.NOBLOCK)
            self.published += 1
        except zmq.Again:
            logger.warning("tf2py static broadcaster: queue full, will re-publish when the "
                           "core asks")

    def _heartbeat(self) -> None:
        with self._lock:
            version = self._version
        if version:
            try:
                self._socket.send_multipart((self._topic(b"latch/alive/", version), b""),
                                            zmq.NOBLOCK)
            except zmq.Again:
                pass

    def _goodbye(self) -> None:
        if self._version:
            try:
                self._socket.send_multipart((self._topic(b"latch/bye/"), b""), zmq.NOBLOCK)
            except zmq.ZMQError:
                pass

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        poller.register(self._wake_in, zmq.POLLIN)
        resend = b"\x01latch/resend/" + self.publisher_id.encode()
        next_beat = time.monotonic() + HEARTBEAT_SECONDS
        try:
            while True:
                events = dict(poller.poll(max(0, int((next_beat - time.monotonic()) * 1000))))
                if time.monotonic() >= next_beat:
                    self._heartbeat()
                    next_beat = time.monotonic() + HEARTBEAT_SECONDS
                publish = False
                if self._wake_in in events:
                    while self._wake_in.poll(0):  # coalesce bursts of sends
                        if self._wake_in.recv() == b"stop":
                            self._goodbye()
                            return
                        publish = True
                if self._socket in events:
                    while self._socket.poll(0):
                        message = self._socket.recv()
                        if message[:1] == b"\x01" and (
                            wire.TOPIC_STATIC_LATCH.startswith(message[1:])
                            or message == resend
                        ):
                            # a core (re)connected, or lost our set: give it the whole set
                            publish = True
                if publish:
                    try:
                        self._publish()
                    except zmq.ZMQError:
                        raise
                    except Exception as exc:  # keep latching: the next send or reconnect
                        if not self._publish_failed:  # publishes the whole set again
                            self._publish_failed = True
                            logger.error("tf2py static broadcaster: publishing failed: %s: %s "
                                         "(logged once)", type(exc).__name__, exc)
        except zmq.ZMQError as exc:
            if exc.errno != zmq.ETERM:
                logger.error("tf2py static broadcaster stopped: %s", exc)

    def close(self) -> None:
        """Say goodbye, stop the thread and close the sockets (the last set gets a short
        linger)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._thread is not None:
                # Also to a thread whose start() was interrupted: it may be starting still.
                try:
                    self._wake.send(b"stop", zmq.NOBLOCK)
                except zmq.ZMQError:
                    pass
        if self._thread is not None:
            join_thread(self._thread, 5)
        self._sockets.close()


class ZmqStaticTransformBroadcaster(ClosingContext):
    """``StaticTransformBroadcaster`` on the ZeroMQ bus (see its docstring).

    Keeps one accumulated set with the latest transform per child frame (as tf2's C++
    broadcaster) and publishes the whole set (in messages of at most 16 KiB) on every
    ``send_transform``. It publishes it again whenever a core subscribes to it (it
    (re)connected to a core that was started or restarted) or asks for it. The core latches
    the set as this publisher's (ROS 2's per-publisher transient-local durability): a
    heartbeat every second keeps it there, ``close()`` says goodbye, and once this publisher
    is gone, listeners that start later no longer get its statics (within 5 s). The socket
    lives in a named daemon thread; ``close()`` ends it.
    """

    def __init__(self, core: str | None = None, authority: str | None = None,
                 keys: Any = None):
        publish_endpoint, _ = bus_endpoints(core)
        self._latch = _StaticLatch(publish_endpoint, wire.authority_or_default(authority),
                                   keys)
        self.authority = self._latch.authority
        self.publisher_id = self._latch.publisher_id
        self.dropped = self._latch.dropped  # invalid transforms, never latched
        self._finalizer = release_when_collected(self, self._latch.close,
                                                 "StaticTransformBroadcaster")

    @property
    def published(self) -> int:
        """How many times the whole set went out."""
        return self._latch.published

    @property
    def _socket(self) -> zmq.Socket[bytes]:
        return self._latch._socket

    def send_transform(self, transform: Any) -> None:
        """Latch a TransformStamped or a list of them (latest per child frame wins) and
        publish the whole latched set."""
        self._latch.send_transform(transform)

    def close(self) -> None:
        """Say goodbye (late joiners stop getting this set), stop the thread, close the
        sockets. Idempotent."""
        self._finalizer.detach()
        self._latch.close()


TransformBroadcaster.register(ZmqTransformBroadcaster)
StaticTransformBroadcaster.register(ZmqStaticTransformBroadcaster)
