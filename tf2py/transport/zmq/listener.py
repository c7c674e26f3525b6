"""Receiving from the ZeroMQ bus: the listener (fills a Buffer) and the subscriber (a callback
per message), both on one receive loop: a SUB socket on the core's subscriber port read by a
named daemon thread.

The thread runs ``_ReceiveLoop.run`` and holds no reference to the listener or subscriber
object, so one dropped without ``close()`` is collected: its finalizer stops the thread,
closes the sockets and warns with ``ResourceWarning``.
"""

from __future__ import annotations

import struct
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import zmq

from .. import wire
from ..fill import BufferFiller, FillingListener, check_buffer
from ..listener import TransformBatch, TransformListener, TransformSubscriber
from .sockets import (
    RECEIVE_HWM,
    DropCounter,
    SocketGroup,
    client_options,
    connect_keyed,
    inproc_pair,
    join_thread,
    logger,
    make_socket,
    release_when_collected,
)
from .address import bus_endpoints
from ..lifetime import ClosingContext

__all__ = ["ZmqTransformListener", "ZmqTransformSubscriber"]

# Messages handled per wake-up before polling the stop pipe again.
_DRAIN = 1000
#: Streams (broadcasters) whose sequence a receiver follows; beyond, it starts afresh.
MAX_STREAMS = 4096
#: A connection the core closes within this many seconds, before anything arrived on it,
#: counts as refused (the core's subscriber bound).
REFUSED_WINDOW = 1.0

_unpack_stamp = struct.Struct("<q").unpack
_unpack_values = struct.Struct("<7d").unpack

#: handle(columns, is_static, received_ns): one decoded message.
Handler = Callable[[wire.WireBlocks, bool, int], None]


class _ReceiveLoop:
    """The socket, the thread and the counters of one receiver (no reference to its owner)."""

    close_timeout = 5.0

    def __init__(self, name: str, core: str, keys: Any, handle: Handler,
                 dropped: DropCounter):
        _, subscribe_endpoint = bus_endpoints(core)
        self.name = name
        self.handle = handle
        self.received_messages = 0
        self.received_transforms = 0
        self.dropped = dropped
        self.closed = False
        self._close_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._thread_done = False  # set by the thread as it ends (under _close_lock)
        self._abandoned = False  # set by close() when it left the sockets to the thread
        self._sequences: dict[int, int] = {}  # stream -> last sequence seen
        self._sockets = SocketGroup()
        try:
            self.sub = self._sockets.add(make_socket(
                zmq.SUB, linger_ms=0, RCVHWM=RECEIVE_HWM, MAXMSGSIZE=wire.MAX_MESSAGE_BYTES,
                **client_options()))
            # "/tf" is a prefix of "/tf_static": one subscription receives both, and it is
            # the subscription that makes the core replay its latched /tf_static set.
            self.sub.setsockopt(zmq.SUBSCRIBE, wire.TOPIC_TF)
            connect_keyed(self.sub, subscribe_endpoint, keys)
            self.endpoint = subscribe_endpoint
            # Connections the core closes at once (it is at its subscriber bound) are told
            # apart from other disconnections here, so the refused side learns why.
            self._monitor = self._sockets.add(self.sub.get_monitor_socket(
                zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED))
            self._connected_at = 0.0
            self._received_at_connect = 0
            self._stop_in, self._stop = map(self._sockets.add, inproc_pair("receiver-stop"))
            self._thread = threading.Thread(target=self.run, name=name, daemon=True)
            self._thread.start()
        except BaseException:
            self.close()
            raise

    def _count_gap(self, stream: int, sequence: int, authority: str) -> None:
        sequences = self._sequences
        last = sequences.get(stream)
        if last is not None and sequence > last + 1:
            lost = sequence - last - 1
            self.dropped.drop("gap", f"{lost} message(s) from {authority} lost on the way "
                              "(a queue bound of the bus, or a reconnection)", n=lost)
        elif last is None and len(sequences) >= MAX_STREAMS:
            sequences.clear()
        sequences[stream] = sequence

    def _connection_events(self) -> None:
        while True:
            try:
                frames = self._monitor.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            event = struct.unpack("=h", frames[0][:2])[0]
            now = time.monotonic()
            if event == zmq.EVENT_CONNECTED:
                self._connected_at = now
                self._received_at_connect = self.received_messages
            elif (event == zmq.EVENT_DISCONNECTED and self._connected_at
                  and now - self._connected_at < REFUSED_WINDOW
                  and self.received_messages == self._received_at_connect):
                self.dropped.drop(
                    "refused", f"the core at {self.endpoint} closed this listener's "
                    f"connection at once: it is at its subscriber bound (see the core's log; "
                    "close unused listeners or run another core), or refused our keys; "
                    "retrying")
                self._connected_at = 0.0

    def run(self) -> None:
        sub = self.sub
        stop = self._stop_in
        monitor = self._monitor
        poller = zmq.Poller()
        poller.register(sub, zmq.POLLIN)
        poller.register(stop, zmq.POLLIN)
        poller.register(monitor, zmq.POLLIN)
        recv = sub.recv
        decode = wire.decode_sequenced
        topic_tf = wire.TOPIC_TF
        topic_static = wire.TOPIC_TF_STATIC
        noblock = zmq.NOBLOCK
        time_ns = time.time_ns
        sequences = self._sequences
        try:
            while True:
                # The stop pipe wakes us at once; the timeout is a backstop for a close()
                # that gave up waiting while we were busy in the buffer or a callback.
                events = poller.poll(1000)
                if self.closed or any(sock is stop for sock, _ in events):
                    return
                if any(sock is monitor for sock, _ in events):
                    self._connection_events()
                for _ in range(_DRAIN):
                    # Frames (copy=False) carry the "more" flag for free; asking the socket
                    # (RCVMORE) costs more than the rest of the receive.
                    try:
                        topic_frame = recv(noblock, copy=False)
                    except zmq.Again:
                        break
                    received_ns = time_ns()
                    if not topic_frame.more:
                        self.dropped.drop("shape", "a bus message has 2 frames, got 1")
                        continue
                    body = recv(0, copy=False)  # multipart delivery is atomic: it is here
                    if body.more:
                        frames = 3
                        while recv(0, copy=False).more:
                            frames += 1
                        self.dropped.drop("shape", f"a bus message has 2 frames, got {frames}")
                        continue
                    topic = topic_frame.bytes
                    if topic == topic_tf:
                        is_static = False
                    elif topic == topic_static:
                        is_static = True
                    else:
                        self.dropped.drop("topic", f"unknown topic {topic[:64]!r}")
                        continue
                    try:
                        columns, stream, sequence = decode(body)
                    except wire.FrameIdTooLongError as exc:
                        # Rows with frame ids over the limit are dropped, the rest is kept.
                        self.dropped.drop(exc.cause, str(exc), n=exc.dropped)
                        stream, sequence = exc.sequence
                        if stream is not None:
                            self._count_gap(stream, sequence, "?")
                        if exc.columns is None:
                            continue
                        columns = exc.columns
                    except wire.WireError as exc:
                        self.dropped.drop(exc.cause, str(exc))
                        continue
                    else:
                        if stream is not None and sequences.get(stream, -2) != sequence - 1:
                            self._count_gap(stream, sequence, columns[0])
                        elif stream is not None:
                            sequences[stream] = sequence
                    try:
                        self.handle(columns, is_static, received_ns)
                    except Exception as exc:  # a long-running listener never dies
                        self.dropped.drop("error", f"{type(exc).__name__}: {exc}")
                    # Counted once stored: a reader that sees the count sees the transforms.
                    self.received_messages += 1
                    self.received_transforms += len(columns[1])
                    if self.closed:
                        return
        except zmq.ZMQError as exc:
            if exc.errno != zmq.ETERM:
                logger.error("%s stopped: %s", self.name, exc)
        finally:
            with self._close_lock:
                self._thread_done = True
                if self._abandoned:
                    # close() gave up waiting for us and left the sockets to this thread.
                    self._close_sockets()

    def stats(self) -> dict[str, Any]:
        return {
            "received_messages": self.received_messages,
            "received_transforms": self.received_transforms,
            "dropped": self.dropped.snapshot(),
        }

    def close(self) -> None:
        """Stop the thread and close the sockets. Idempotent."""
        with self._close_lock:
            if self.closed:
                return
            self.closed = True
            thread = self._thread
            if thread is not None:
                # Also to a thread whose start() was interrupted: it may be starting still.
                try:
                    self._stop.send(b"stop", zmq.NOBLOCK)
                except zmq.ZMQError:
                    pass
        if thread is not None and thread is not threading.current_thread():
            join_thread(thread, self.close_timeout)
            with self._close_lock:
                if not self._thread_done and thread.is_alive():
                    # Still inside the buffer or the callback: the thread closes the sockets
                    # when it ends (a socket must never be closed under its user).
                    self._abandoned = True
                    logger.warning("%s: receive thread still busy after %.1f s; it will "
                                   "close its sockets when it ends", self.name,
                                   self.close_timeout)
                    return
        elif thread is not None:
            # close() from a callback on the thread itself: the thread ends after it.
            with self._close_lock:
                if not self._thread_done:
                    self._abandoned = True
                    return
        self._close_sockets()

    def _close_sockets(self) -> None:
        # The connection monitor stops before its reading end closes: ZeroMQ's I/O thread
        # sends monitor events with a blocking send, and one for a reader that is gone would
        # stall every ZeroMQ socket of the process.
        sub = getattr(self, "sub", None)
        if sub is not None and not sub.closed:
            try:
                sub.disable_monitor()
            except zmq.ZMQError:
                pass
        self._sockets.close(0)


class _ZmqReceiver(ClosingContext):
    """What the listener and the subscriber share: a receive loop, its counters, closing."""

    _loop: _ReceiveLoop
    _finalizer: weakref.finalize  # type: ignore[type-arg]

    def _start(self, name: str, core: str, keys: Any, handle: Handler,
               dropped: DropCounter | None = None) -> None:
        self.dropped = dropped or DropCounter(name)
        self._loop = _ReceiveLoop(name, core, keys, handle, self.dropped)
        self._finalizer = release_when_collected(self, self._loop.close, type(self).__name__)

    @property
    def received_messages(self) -> int:
        return self._loop.received_messages

    @property
    def received_transforms(self) -> int:
        return self._loop.received_transforms

    @property
    def close_timeout(self) -> float:
        """How long close() waits for the thread (busy in the buffer or a callback)."""
        return self._loop.close_timeout

    @close_timeout.setter
    def close_timeout(self, seconds: float) -> None:
        self._loop.close_timeout = seconds

    @property
    def _sub(self) -> zmq.Socket[bytes]:
        return self._loop.sub

    def stats(self) -> dict[str, Any]:
        """Counters: messages and transforms received, and drops per cause (messages for
        garbage/shape/version/too_large/topic/gap, transforms for invalid)."""
        return self._loop.stats()

    def close(self) -> None:
        """Stop the thread and close the sockets. Idempotent."""
        self._finalizer.detach()
        self._loop.close()


class ZmqTransformListener(FillingListener, _ZmqReceiver):
    """``TransformListener`` on the ZeroMQ bus (see its docstring)."""

    _name = "tf2py-transform-listener"

    def __init__(self, buffer: Any, core: str, keys: Any = None):
        check_buffer(buffer)
        self.buffer = buffer
        dropped = DropCounter(self._name)
        self._filler = BufferFiller(buffer, dropped)
        self._start(self._name, core, keys, _listener_handler(self._filler), dropped)

    def stats(self) -> dict[str, Any]:
        return self._filled(self._loop.stats())


def _listener_handler(filler: BufferFiller) -> Handler:
    insert_one = filler.insert_one
    insert = filler.insert
    rows_of = wire.rows_of

    def handle(columns: wire.WireBlocks, is_static: bool,
               received_ns: int) -> None:
        authority, parents, children, stamps_bin, values_bin = columns
        if len(parents) == 1:
            # One transform: the single insert skips the array set-up of a batch (same
            # rules, still one insertion call and one notification per message).
            insert_one(parents[0], children[0], _unpack_stamp(stamps_bin)[0],
                       _unpack_values(values_bin), authority, is_static)
            return
        insert(authority, rows_of(columns)[1], is_static)

    return handle


class ZmqTransformSubscriber(_ZmqReceiver):
    """``TransformSubscriber`` on the ZeroMQ bus (see its docstring)."""

    _name = "tf2py-transform-subscriber"

    def __init__(self, core: str, on_batch: Callable[[TransformBatch], None], keys: Any = None):
        if not callable(on_batch):
            raise TypeError("TransformSubscriber needs on_batch=callable(batch)")

        def handle(columns: wire.WireBlocks, is_static: bool,
                   received_ns: int) -> None:
            authority, rows = wire.rows_of(columns)
            on_batch(TransformBatch(authority, rows, is_static, received_ns))

        self._start(self._name, core, keys, handle)


TransformListener.register(ZmqTransformListener)
TransformSubscriber.register(ZmqTransformSubscriber)
