"""Receiving from the bus: ``TransformListener`` fills a Buffer; ``TransformSubscriber`` hands
each decoded message to a callback (for tools such as monitor and record)."""

from __future__ import annotations

import struct
import threading
import time

import numpy as np
import zmq

from ..buffer.exceptions import InvalidArgumentException
from . import wire
from ._sockets import (
    RECEIVE_HWM,
    DropCounter,
    client_options,
    inproc_name,
    join_thread,
    logger,
    make_socket,
)
from .address import bus_endpoints
from .interface import construct
from .keys import load_keys

__all__ = ["TransformListener", "TransformSubscriber", "TransformBatch"]

# Messages handled per wake-up before polling the stop pipe again.
_DRAIN = 1000

_unpack_stamp = struct.Struct("<q").unpack
_unpack_values = struct.Struct("<7d").unpack


def _arrays(columns) -> wire.TransformArrays:
    authority, parents, children, stamps_bin, values_bin = columns
    return wire.TransformArrays(
        authority, parents, children, np.frombuffer(stamps_bin, dtype="<i8"),
        np.frombuffer(values_bin, dtype="<f8").reshape(len(parents), 7))


class TransformBatch:
    """One decoded /tf or /tf_static message.

    ``authority`` is the sender (``<program>@<host>:<pid>``), ``is_static`` whether it came on
    /tf_static, ``received_ns`` the wall clock at receipt (ns), ``arrays`` the columns
    (parents, children, stamps_ns, values (N, 7)), ``transforms`` the TransformStamped list
    (built on first access).
    """

    __slots__ = ("authority", "is_static", "received_ns", "arrays", "_transforms")

    def __init__(self, arrays: wire.TransformArrays, is_static: bool, received_ns: int):
        self.authority = arrays.authority
        self.is_static = is_static
        self.received_ns = received_ns
        self.arrays = arrays
        self._transforms = None

    @property
    def transforms(self) -> list:
        if self._transforms is None:
            self._transforms = wire.arrays_to_transforms(self.arrays)
        return self._transforms

    def __len__(self) -> int:
        return len(self.arrays.children)

    def __repr__(self) -> str:
        kind = "/tf_static" if self.is_static else "/tf"
        return f"TransformBatch({kind}, {len(self)} transforms from {self.authority!r})"


class _BusReceiver:
    """A SUB socket on the core's subscriber port, read by one named daemon thread."""

    _name = "tf2py-receiver"
    #: How long close() waits for the thread (busy in the buffer or a callback) to stop.
    close_timeout = 5.0

    def __init__(self, core: str | None = None, keys=None):
        _, self._subscribe_endpoint = bus_endpoints(core)
        self.received_messages = 0
        self.received_transforms = 0
        self.dropped = DropCounter(self._name)
        self._closed = False
        self._close_lock = threading.Lock()
        self._thread = None
        self._thread_done = False  # set by the thread as it ends (under _close_lock)
        self._abandoned = False  # set by close() when it left the sockets to the thread
        self._sockets: list[zmq.Socket] = []
        try:
            self._sub = self._add(make_socket(
                zmq.SUB, linger_ms=0, RCVHWM=RECEIVE_HWM, MAXMSGSIZE=wire.MAX_MESSAGE_BYTES,
                **client_options()))
            # "/tf" is a prefix of "/tf_static": one subscription receives both, and it is
            # the subscription that makes the core replay its latched /tf_static set.
            self._sub.setsockopt(zmq.SUBSCRIBE, wire.TOPIC_TF)
            keys = load_keys(keys)
            if keys is not None:
                keys.apply_client(self._sub)
            self._sub.connect(self._subscribe_endpoint)
            stop_name = inproc_name("receiver-stop")
            self._stop_in = self._add(make_socket(zmq.PAIR, linger_ms=0))
            self._stop_in.bind(stop_name)
            self._stop = self._add(make_socket(zmq.PAIR, linger_ms=0))
            self._stop.connect(stop_name)
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        except BaseException:
            self.close()
            raise

    def _add(self, sock):
        self._sockets.append(sock)
        return sock

    def _handle(self, columns: tuple, is_static: bool, received_ns: int) -> None:
        """Take one decoded message: ``columns`` as ``wire.decode_columns`` returns them."""
        raise NotImplementedError

    def _run(self) -> None:
        sub = self._sub
        stop = self._stop_in
        poller = zmq.Poller()
        poller.register(sub, zmq.POLLIN)
        poller.register(stop, zmq.POLLIN)
        recv = sub.recv
        decode = wire.decode_columns
        topic_tf = wire.TOPIC_TF
        topic_static = wire.TOPIC_TF_STATIC
        noblock = zmq.NOBLOCK
        time_ns = time.time_ns
        try:
            while True:
                # The stop pipe wakes us at once; the timeout is a backstop for a close()
                # that gave up waiting while we were busy in the buffer or a callback.
                events = poller.poll(1000)
                if self._closed or any(sock is stop for sock, _ in events):
                    return
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
                        columns = decode(body)
                    except wire.FrameIdTooLongError as exc:
                        # Rows with frame ids over the limit are dropped, the rest is kept.
                        self.dropped.drop(exc.cause, str(exc), n=exc.dropped)
                        if exc.columns is None:
                            continue
                        columns = exc.columns
                    except wire.WireError as exc:
                        self.dropped.drop(exc.cause, str(exc))
                        continue
                    self.received_messages += 1
                    self.received_transforms += len(columns[1])
                    try:
                        self._handle(columns, is_static, received_ns)
                    except Exception as exc:  # a long-running listener never dies
                        self.dropped.drop("error", f"{type(exc).__name__}: {exc}")
                    if self._closed:
                        return
        except zmq.ZMQError as exc:
            if exc.errno != zmq.ETERM:
                logger.error("%s stopped: %s", self._name, exc)
        finally:
            with self._close_lock:
                self._thread_done = True
                if self._abandoned:
                    # close() gave up waiting for us and left the sockets to this thread.
                    for sock in self._sockets:
                        sock.close(0)

    def stats(self) -> dict:
        """Counters: messages and transforms received, and drops per cause (messages for
        garbage/shape/version/too_large/topic, transforms for invalid)."""
        return {
            "received_messages": self.received_messages,
            "received_transforms": self.received_transforms,
            "dropped": self.dropped.snapshot(),
        }

    def close(self) -> None:
        """Stop the thread and close the sockets. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
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
                                   "close its sockets when it ends", self._name,
                                   self.close_timeout)
                    return
        for sock in self._sockets:
            sock.close(0)
        self._sockets.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class TransformListener(_BusReceiver):
    """Fills ``buffer`` from /tf and /tf_static on a background thread (tf2_ros's listener).

    Each message is inserted with ONE call, with the sender's authority:
    ``buffer.set_transform_values(...)`` for a single transform, ``buffer.set_transforms(...)``
    for several (a buffer with only ``set_transform`` also works); invalid transforms (NaN, empty frame id, ...) are dropped and counted, the rest
    of the message is stored. Undecodable messages are dropped and counted per cause (see
    ``stats()``), logged once per cause. A listener started before the core connects when it
    comes up; on (re)connection the core re-sends every latched static transform.
    """

    _name = "tf2py-transform-listener"

    def __new__(cls, *args, **kwargs):  # ros2:// -> tf2py.transport.ros2
        return construct(cls, "TransformListener", args, kwargs, 1)

    def __init__(self, buffer, core: str | None = None, keys=None):
        if not hasattr(buffer, "set_transforms") and not hasattr(buffer, "set_transform"):
            raise TypeError(
                f"TransformListener fills a Buffer (or a BufferCore), got {type(buffer).__name__}"
            )
        self.buffer = buffer
        self.stored_transforms = 0
        self.old_transforms = 0
        self._set_transforms = getattr(buffer, "set_transforms", None)
        self._set_transform_values = getattr(buffer, "set_transform_values", None)
        super().__init__(core, keys)

    def _handle(self, columns, is_static, received_ns):
        authority, parents, children, stamps_bin, values_bin = columns
        n = len(parents)
        if n == 1 and self._set_transform_values is not None:
            # One transform: the single insert skips the array set-up of a batch (same
            # rules, still one insertion call and one notification per message).
            try:
                stored = self._set_transform_values(
                    parents[0], children[0], _unpack_stamp(stamps_bin)[0],
                    *_unpack_values(values_bin), authority, is_static)
            except InvalidArgumentException as exc:
                self.dropped.drop("invalid", f"transform 0 of a message from {authority}: {exc}")
                return
            if stored:
                self.stored_transforms += 1
            else:
                self.old_transforms += 1
            return
        if self._set_transforms is None:
            self._insert_one_by_one(_arrays(columns), is_static)
            return
        result = self._set_transforms(
            parents, children, np.frombuffer(stamps_bin, dtype="<i8"),
            np.frombuffer(values_bin, dtype="<f8").reshape(n, 7), authority, is_static)
        self.stored_transforms += result.stored
        self.old_transforms += result.old
        if result.invalid:
            index, exc = result.invalid[0]
            self.dropped.drop(
                "invalid",
                f"transform {index} of a message from {authority}: {exc}",
                n=len(result.invalid),
            )

    def _insert_one_by_one(self, arrays, is_static):
        # For buffers without the batch call (duck-typed BufferCore-likes).
        for index, ts in enumerate(wire.arrays_to_transforms(arrays)):
            try:
                if self.buffer.set_transform(ts, arrays.authority, is_static):
                    self.stored_transforms += 1
                else:
                    self.old_transforms += 1
            except Exception as exc:
                self.dropped.drop("invalid", f"transform {index}: {exc}")

    def stats(self) -> dict:
        stats = super().stats()
        stats["stored_transforms"] = self.stored_transforms
        stats["old_transforms"] = self.old_transforms
        return stats


class TransformSubscriber(_BusReceiver):
    """Calls ``on_batch(batch)`` on its own thread for every decoded /tf and /tf_static
    message (a ``TransformBatch``). For tools that watch the bus (monitor, record)."""

    _name = "tf2py-transform-subscriber"

    def __new__(cls, *args, **kwargs):  # ros2:// -> tf2py.transport.ros2
        return construct(cls, "TransformSubscriber", args, kwargs, 0)

    def __init__(self, core: str | None = None, on_batch=None, keys=None):
        if on_batch is None:
            raise TypeError("TransformSubscriber needs on_batch=callable(batch)")
        self._on_batch = on_batch
        super().__init__(core, keys)

    def _handle(self, columns, is_static, received_ns):
        self._on_batch(TransformBatch(_arrays(columns), is_static, received_ns))
