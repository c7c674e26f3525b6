"""BufferClient: lookup_transform through a BufferServer, with the results and exceptions of a
local Buffer.

Two ways a goal travels, both safe from many threads (ZeroMQ sockets are not thread-safe, so
every socket has exactly one user at a time):

- Futures (``lookup_transform_async``): one DEALER owned by a background I/O thread. Calling
  threads register a future for a new goal id and hand the goal to the I/O thread through an
  inproc PUSH socket (under a lock); the I/O thread sends it, reads the results, resolves the
  futures, and fails with ``TimeoutException`` those the server has not answered within
  ``timeout + timeout_padding``. ``future.cancel()`` sends CANCEL.
- Blocking calls (``lookup_transform``, ``can_transform``...): the calling thread's own DEALER
  (made on its first call, closed with the client or when the thread ends), which it sends on
  and polls itself until the answer or ``timeout + timeout_padding``. This saves two thread
  hand-offs per lookup, which is most of a lookup's cost on the client.

When the connection to the server comes back after a drop (server restarted), every goal
still waiting is sent again with the timeout it has left, so a restart costs a waiting caller
only the down time; a server that still holds the goal ignores the copy.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import struct
import threading
import time
import weakref
from concurrent.futures import Future, InvalidStateError

import zmq
from zmq.utils.monitor import recv_monitor_message

from ..buffer.exceptions import InvalidArgumentException, TimeoutException, TransformException
from ..buffer.time import duration_to_nanoseconds, to_nanoseconds
from ..transport._sockets import context
from ..transport.address import check_server_address, server_address
from ..transport.keys import load_keys
from . import protocol
from .protocol import RESULT, ProtocolError

__all__ = ["BufferClient"]

_ID = struct.Struct("<Q")
_OP_GOAL = b"G"
_OP_CANCEL = b"C"
_OP_CLOSE = b"X"
_BATCH = 256
_MAX_TIMEOUT_NS = 2**63 - 1
# The longest single poll (ms): far deadlines are reached in several polls.
_MAX_POLL_MS = 3_600_000
# On the main thread a blocking lookup polls in short slices: Ctrl-C's SIGINT may be delivered
# to any thread of the process, and Python runs its handler (KeyboardInterrupt) only when the
# main thread returns to the interpreter, so a long poll would hold the interrupt back.
_MAIN_THREAD_POLL_MS = 100
_instance_ids = itertools.count()


class ServerTimeoutException(TimeoutException):
    """The server did not answer within ``timeout + timeout_padding`` (down, unreachable or
    overloaded). A TimeoutException; ``can_transform`` lets it through instead of saying
    False, because it says nothing about the transform."""


def _unreachable(address: str) -> str:
    return (f"the BufferServer at {address} is not reachable: too many goals are queued "
            "for it")


def _no_answer(address: str, waited_ns: int, timeout_ns: int, padding_ns: int) -> str:
    return (f"The LookupTransform goal sent to the BufferServer at {address} did not come "
            f"back in the specified time ({waited_ns / 1e9:.3f} s: timeout "
            f"{timeout_ns / 1e9:g} s + padding {padding_ns / 1e9:g} s). Something is likely "
            f"wrong with the server: is one running there? Start it with `tf2py server "
            f"--address {address}` (or point TF2PY_SERVER / address= at the one you run).")


def _answers_the_goal(transform, target_frame, source_frame, source_time_ns, advanced) -> bool:
    """Whether a successful answer is one for the lookup that was asked: the frames it names
    are the frames asked for (and, for a simple lookup at a given time, that time). A server
    that answers another lookup is refused, so no stranger's answer is taken for ours."""
    if transform.header.frame_id != target_frame or transform.child_frame_id != source_frame:
        return False
    if not advanced and source_time_ns != 0:
        return transform.header.stamp.nanoseconds == source_time_ns
    return True


def _refused_answer(address: str) -> str:
    return (f"the BufferServer at {address} answered with a transform for other frames than "
            "the goal asked (refused)")


class _Goal:
    """A goal sent and not yet answered (kept by the client only)."""

    __slots__ = ("future", "target_frame", "source_frame", "source_time_ns", "target_time_ns",
                 "fixed_frame", "advanced", "timeout_ns", "sent_ns", "deadline_ns", "payload")

    def __init__(self, future, target_frame, source_frame, source_time_ns, target_time_ns,
                 fixed_frame, advanced, timeout_ns, sent_ns, deadline_ns, payload):
        self.future = future
        self.target_frame = target_frame
        self.source_frame = source_frame
        self.source_time_ns = source_time_ns
        self.target_time_ns = target_time_ns
        self.fixed_frame = fixed_frame
        self.advanced = advanced
        self.timeout_ns = timeout_ns
        self.sent_ns = sent_ns
        self.deadline_ns = deadline_ns
        self.payload = payload


def _check_frame(value, name: str) -> str:
    """The frame id, or the InvalidArgumentException a local Buffer raises for it. A frame id
    longer than the protocol carries is refused here, at once (the server would refuse the
    goal, or drop it unanswered when it is over the goal size limit)."""
    if value.__class__ is not str and not isinstance(value, str):
        raise InvalidArgumentException(
            "Invalid argument %r passed to lookupTransform argument %s - frame ids must be "
            "strings" % (value, name)
        )
    if len(value) > protocol.MAX_FRAME_ID_LENGTH:
        raise InvalidArgumentException(
            "Invalid argument %r... passed to lookupTransform argument %s - a frame id sent "
            "to a BufferServer has at most %d characters, this one has %d"
            % (value[:32], name, protocol.MAX_FRAME_ID_LENGTH, len(value))
        )
    return value


def _timeout_ns(timeout) -> int:
    """A timeout (seconds or Duration; None or <= 0: do not wait) in int64 nanoseconds."""
    if not timeout:
        return 0
    return min(max(0, duration_to_nanoseconds(timeout, "timeout")), _MAX_TIMEOUT_NS)


def _time_ns(value) -> int:
    """Nanoseconds of a Time or seconds; InvalidArgumentException as a local Buffer."""
    try:
        ns = to_nanoseconds(value, "time")
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentException(str(exc)) from None
    if not -(2**63) <= ns < 2**63:
        raise InvalidArgumentException(
            f"time {value!r} is out of range: the BufferServer protocol carries times as "
            "int64 nanoseconds (about +-292 years around 1970)"
        )
    return ns


class _Channel:
    """One calling thread's own DEALER (and its connection monitor) for blocking lookups."""

    __slots__ = ("socket", "monitor", "poller", "connected_before", "in_use", "closed",
                 "wake_recv", "wake_send", "__weakref__")

    def __init__(self, context, address: str, keys=None):
        self.socket = self.monitor = self.wake_recv = self.wake_send = None
        self.closed = False
        self.in_use = False
        self.connected_before = False
        try:
            self.socket = _make_dealer(context, keys)
            self.monitor = self.socket.get_monitor_socket(
                zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED
            )
            self.socket.connect(address)
            # close() on another thread wakes a call waiting on this channel through this
            # pair (the context is shared, so it cannot be terminated to wake it).
            wake = f"inproc://tf2py-channel-{os.getpid()}-{next(_instance_ids)}"
            self.wake_recv = context.socket(zmq.PAIR)
            self.wake_recv.setsockopt(zmq.LINGER, 0)
            self.wake_recv.bind(wake)
            self.wake_send = context.socket(zmq.PAIR)
            self.wake_send.setsockopt(zmq.LINGER, 0)
            self.wake_send.connect(wake)
        except BaseException:
            self.close()
            raise
        self.poller = zmq.Poller()
        self.poller.register(self.socket, zmq.POLLIN)
        self.poller.register(self.monitor, zmq.POLLIN)
        self.poller.register(self.wake_recv, zmq.POLLIN)

    def wake(self) -> None:
        """From close(), under the client's channel lock: make the waiting call return."""
        try:
            self.wake_send.send(b"", zmq.NOBLOCK)
        except zmq.ZMQError:
            pass

    def reconnected(self) -> bool:
        """Read the monitor: True if the connection came back after a drop."""
        again = False
        while True:
            try:
                event = recv_monitor_message(self.monitor, zmq.NOBLOCK)["event"]
            except zmq.Again:
                return again
            if event == zmq.EVENT_CONNECTED:
                again = again or self.connected_before
                self.connected_before = True

    def close(self, linger: int = 0) -> None:
        if self.closed:
            return
        self.closed = True
        if self.socket is not None and self.monitor is not None:
            try:
                self.socket.disable_monitor()
            except zmq.ZMQError:
                pass
        if self.monitor is not None:
            self.monitor.close(linger=0)
        if self.socket is not None:
            self.socket.close(linger=linger)
        for sock in (self.wake_send, self.wake_recv):
            if sock is not None:
                sock.close(linger=0)


def _make_dealer(context, keys=None) -> zmq.Socket:
    dealer = context.socket(zmq.DEALER)
    try:
        if keys is not None:
            # CURVE client of the site: a server without the site's keys cannot answer.
            keys.apply_client(dealer)
        dealer.setsockopt(zmq.LINGER, 0)
        # A stable routing id: after a reconnect the server knows it is the same client.
        dealer.setsockopt(zmq.ROUTING_ID, b"tf2py-client-" + os.urandom(12))
        dealer.setsockopt(zmq.SNDHWM, 100_000)
        dealer.setsockopt(zmq.RCVHWM, 100_000)
        dealer.setsockopt(zmq.RECONNECT_IVL, 50)
        dealer.setsockopt(zmq.RECONNECT_IVL_MAX, 500)
    except BaseException:
        dealer.close(linger=0)
        raise
    return dealer


class _ThreadToken:
    """Lives in a thread's threading.local: when the thread ends it is freed, and its
    finalizer closes that thread's channel."""

    __slots__ = ("channel", "__weakref__")

    def __init__(self, channel):
        self.channel = channel


def _forget_channel(client_ref, channel: _Channel) -> None:
    """The thread that used ``channel`` has ended: close it."""
    client = client_ref()
    if client is None:
        return
    with client._channels_lock:
        if channel in client._channels and not channel.in_use:
            client._channels.discard(channel)
            channel.close()


class BufferClient:
    """Remote ``lookup_transform`` / ``can_transform`` through a BufferServer.

    ``address``: the server (None means ``$TF2PY_SERVER``, else ``tcp://127.0.0.1:7402``).
    ``timeout_padding`` (seconds or Duration): how much longer than a goal's own timeout to
    wait for the server's answer before raising ``TimeoutException``. Safe to use from many
    threads at once; ``close()`` (or the context manager) ends its thread and sockets. A
    client dropped without ``close()`` is closed when it is collected (its I/O thread holds
    only the inner state, never this object).

    Only an answer naming the frames asked is accepted: an answer for other frames (a
    stranger standing in for the server) is refused, counted in ``refused_answers`` and
    logged once; the goal keeps waiting for a true answer.
    """

    def __init__(self, address: str | None = None, timeout_padding=2.0, keys=None):
        self._state = _ClientState(address, timeout_padding, keys)
        self.address = self._state.address
        self.timeout_padding = timeout_padding
        self._finalizer = weakref.finalize(self, _ClientState.close, self._state)
        self._finalizer.atexit = False

    def lookup_transform_async(self, target_frame, source_frame, time, timeout=0.0) -> Future:
        """A Future resolved with the TransformStamped that maps data in ``source_frame`` into
        ``target_frame`` at ``time`` (0 = latest common time), or with tf2's exception.
        The server waits up to ``timeout`` for the data; ``future.cancel()`` cancels the goal
        on the server too."""
        return self._state.lookup_transform_async(target_frame, source_frame, time, timeout)

    def lookup_transform_full_async(
        self, target_frame, target_time, source_frame, source_time, fixed_frame, timeout=0.0
    ) -> Future:
        """The time-travel form of ``lookup_transform_async``."""
        return self._state.lookup_transform_full_async(
            target_frame, target_time, source_frame, source_time, fixed_frame, timeout)

    def lookup_transform(self, target_frame, source_frame, time, timeout=0.0):
        """The TransformStamped that maps data in ``source_frame`` into ``target_frame`` at
        ``time`` (0 = latest common time), waiting up to ``timeout`` seconds for the data.

        Raises what a local Buffer raises (LookupException, ConnectivityException, the
        ExtrapolationException subclasses, InvalidArgumentException), and TimeoutException when
        the server does not answer within ``timeout + timeout_padding``.
        """
        return self._state.lookup_transform(target_frame, source_frame, time, timeout)

    def lookup_transform_full(
        self, target_frame, target_time, source_frame, source_time, fixed_frame, timeout=0.0
    ):
        """The time-travel lookup; raises as ``lookup_transform``."""
        return self._state.lookup_transform_full(
            target_frame, target_time, source_frame, source_time, fixed_frame, timeout)

    def can_transform(self, target_frame, source_frame, time, timeout=0.0) -> bool:
        """Whether ``lookup_transform`` would succeed (waiting up to ``timeout``). False for a
        tf2 error; TimeoutException if the server itself does not answer."""
        return self._state.can_transform(target_frame, source_frame, time, timeout)

    def can_transform_full(
        self, target_frame, target_time, source_frame, source_time, fixed_frame, timeout=0.0
    ) -> bool:
        """Whether ``lookup_transform_full`` would succeed; as ``can_transform``."""
        return self._state.can_transform_full(
            target_frame, target_time, source_frame, source_time, fixed_frame, timeout)

    @property
    def pending_count(self) -> int:
        """Goals sent and not answered yet."""
        return len(self._state._goals)

    @property
    def refused_answers(self) -> int:
        """Answers refused because they named other frames than the goal asked."""
        return self._state.refused_answers

    @property
    def _channels(self):
        return self._state._channels

    def close(self) -> None:
        """Cancel the goals still waiting (on the server too), end the I/O thread, close the
        sockets. Callers still waiting get a TimeoutException."""
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"BufferClient(address={self.address!r})"


class _ClientState:
    """Everything the I/O thread and the calling threads use (see BufferClient)."""

    def __init__(self, address: str | None = None, timeout_padding=2.0, keys=None):
        self.address = server_address(address)
        self._link = None
        self._endpoint = self.address  # where the DEALERs connect
        if self.address.startswith("zenoh://"):
            from .zenoh_link import ZenohClientLink

            self._link = ZenohClientLink(self.address)
            self._endpoint = self._link.endpoint
        else:
            check_server_address(self.address)
        self._keys = load_keys(keys)  # keys folder, else $TF2PY_KEYS, else plain
        self.timeout_padding = timeout_padding
        self._padding_ns = max(0, duration_to_nanoseconds(timeout_padding, "timeout_padding"))
        self._ids = itertools.count(1)
        self._goals: dict[int, _Goal] = {}
        self._send_lock = threading.Lock()
        self._closed = False
        self._term_on_exit = False  # close() was called on the I/O thread itself
        self._channels_lock = threading.Lock()
        self._channels: set = set()
        self._local = threading.local()
        self.refused_answers = 0
        self._refusal_logged = False
        self._context = context()
        self._dealer = self._monitor = self._pull = self._push = None
        self._thread = None
        try:
            self._dealer = _make_dealer(self._context, self._keys)
            self._monitor = self._dealer.get_monitor_socket(
                zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED
            )
            try:
                self._dealer.connect(self._endpoint)
            except zmq.ZMQError as exc:
                raise ValueError(
                    f"invalid buffer server address {self.address!r}: {exc} "
                    "(expected e.g. tcp://127.0.0.1:7402)"
                ) from None
            inproc = f"inproc://tf2py-client-{os.getpid()}-{next(_instance_ids)}"
            self._pull = self._context.socket(zmq.PULL)
            self._pull.setsockopt(zmq.LINGER, 0)
            self._pull.bind(inproc)
            self._push = self._context.socket(zmq.PUSH)
            self._push.setsockopt(zmq.LINGER, 0)
            self._push.setsockopt(zmq.SNDHWM, 0)
            self._push.connect(inproc)
            self._thread = threading.Thread(
                target=self._run, name=f"tf2py-client {self.address}", daemon=True
            )
            self._thread.start()
        except BaseException:
            self._closed = True
            if self._dealer is not None and self._monitor is not None:
                self._dealer.disable_monitor()
            for sock in (self._monitor, self._dealer, self._pull, self._push):
                if sock is not None:
                    sock.close(linger=0)
            if self._link is not None:
                self._link.close()
            raise

    # --- lookups ---------------------------------------------------------------------------

    def lookup_transform_async(self, target_frame, source_frame, time, timeout=0.0) -> Future:
        """A Future resolved with the TransformStamped that maps data in ``source_frame`` into
        ``target_frame`` at ``time`` (0 = latest common time), or with tf2's exception.
        The server waits up to ``timeout`` for the data; ``future.cancel()`` cancels the goal
        on the server too."""
        t = _time_ns(time)
        return self._submit(
            _check_frame(target_frame, "target_frame"),
            _check_frame(source_frame, "source_frame"),
            t, t, "", False, timeout,
        )

    def lookup_transform_full_async(
        self, target_frame, target_time, source_frame, source_time, fixed_frame, timeout=0.0
    ) -> Future:
        """The time-travel form of ``lookup_transform_async``: ``source_frame`` at
        ``source_time`` into ``target_frame`` at ``target_time``, through ``fixed_frame``."""
        target_ns = _time_ns(target_time)
        source_ns = _time_ns(source_time)
        return self._submit(
            _check_frame(target_frame, "target_frame"),
            _check_frame(source_frame, "source_frame"),
            source_ns, target_ns,
            _check_frame(fixed_frame, "fixed_frame"),
            True, timeout,
        )

    def lookup_transform(self, target_frame, source_frame, time, timeout=0.0):
        """The TransformStamped that maps data in ``source_frame`` into ``target_frame`` at
        ``time`` (0 = latest common time), waiting up to ``timeout`` seconds for the data.

        Raises what a local Buffer raises (LookupException, ConnectivityException, the
        ExtrapolationException subclasses, InvalidArgumentException), and TimeoutException when
        the server does not answer within ``timeout + timeout_padding``.
        """
        t = _time_ns(time)
        return self._call(
            _check_frame(target_frame, "target_frame"),
            _check_frame(source_frame, "source_frame"),
            t, t, "", False, timeout,
        )

    def lookup_transform_full(
        self, target_frame, target_time, source_frame, source_time, fixed_frame, timeout=0.0
    ):
        """The time-travel lookup: data in ``source_frame`` at ``source_time`` into
        ``target_frame`` at ``target_time``, ``fixed_frame`` being the frame that does not
        change over time. Raises as ``lookup_transform``."""
        target_ns = _time_ns(target_time)
        source_ns = _time_ns(source_time)
        return self._call(
            _check_frame(target_frame, "target_frame"),
            _check_frame(source_frame, "source_frame"),
            source_ns, target_ns,
            _check_frame(fixed_frame, "fixed_frame"),
            True, timeout,
        )

    def can_transform(self, target_frame, source_frame, time, timeout=0.0) -> bool:
        """Whether ``lookup_transform`` would succeed (waiting up to ``timeout``). False for a
        tf2 error; TimeoutException if the server itself does not answer."""
        try:
            self.lookup_transform(target_frame, source_frame, time, timeout)
        except ServerTimeoutException:
            raise
        except TransformException:
            return False
        return True

    def can_transform_full(
        self, target_frame, target_time, source_frame, source_time, fixed_frame, timeout=0.0
    ) -> bool:
        """Whether ``lookup_transform_full`` would succeed; as ``can_transform``."""
        try:
            self.lookup_transform_full(
                target_frame, target_time, source_frame, source_time, fixed_frame, timeout
            )
        except ServerTimeoutException:
            raise
        except TransformException:
            return False
        return True

    # --- resources -------------------------------------------------------------------------

    @property
    def pending_count(self) -> int:
        """Goals sent and not answered yet."""
        return len(self._goals)

    def close(self) -> None:
        """Cancel the goals still waiting (on the server too), end the I/O thread, close the
        sockets. Callers still waiting get a TimeoutException."""
        with self._send_lock:
            if self._closed:
                return
            self._closed = True
            self._push.send(_OP_CLOSE)
        with self._channels_lock:
            # Idle channels close now; one in use is woken, and closes as its call ends
            for channel in list(self._channels):
                if not channel.in_use:
                    self._channels.discard(channel)
                    channel.close()
                else:
                    channel.wake()
        if self._thread is threading.current_thread():
            # Called from a future's done callback (they run on the I/O thread): the thread
            # ends its loop after this callback and closes the last socket itself.
            self._term_on_exit = True
            return
        self._thread.join()
        self._push.close(linger=0)
        if self._link is not None:
            self._link.close()

    # --- calling threads -------------------------------------------------------------------

    def _submit(self, target_frame, source_frame, source_time_ns, target_time_ns, fixed_frame,
                advanced, timeout) -> Future:
        timeout_ns = _timeout_ns(timeout)
        goal_id = next(self._ids)
        now = time.monotonic_ns()
        future = Future()
        goal = _Goal(
            future, target_frame, source_frame, source_time_ns, target_time_ns, fixed_frame,
            advanced, timeout_ns, now, now + timeout_ns + self._padding_ns,
            protocol.pack_goal(goal_id, target_frame, source_frame, source_time_ns,
                               target_time_ns, fixed_frame, advanced, timeout_ns),
        )
        self._goals[goal_id] = goal
        with self._send_lock:
            if self._closed:
                self._goals.pop(goal_id, None)
                raise RuntimeError("BufferClient is closed")
            self._push.send(_OP_GOAL + _ID.pack(goal_id))
        future.add_done_callback(lambda f, goal_id=goal_id: self._on_done(goal_id, f))
        return future

    def _on_done(self, goal_id: int, future: Future) -> None:
        if not future.cancelled():
            return
        # Cancelled by the caller: forget it here and tell the server to forget it too.
        if self._goals.pop(goal_id, None) is None:
            return
        with self._send_lock:
            if not self._closed:
                self._push.send(_OP_CANCEL + _ID.pack(goal_id))

    def _channel(self) -> _Channel:
        token = getattr(self._local, "token", None)
        if token is not None and not token.channel.closed:
            return token.channel
        with self._channels_lock:
            if self._closed:
                raise RuntimeError("BufferClient is closed")
            channel = _Channel(self._context, self._endpoint, self._keys)
            self._channels.add(channel)
        token = _ThreadToken(channel)
        weakref.finalize(token, _forget_channel, weakref.ref(self), channel)
        self._local.token = token
        return channel

    def _call(self, target_frame, source_frame, source_time_ns, target_time_ns, fixed_frame,
              advanced, timeout):
        """A blocking lookup on the calling thread's own socket."""
        timeout_ns = _timeout_ns(timeout)
        channel = self._channel()
        goal_id = next(self._ids)
        sent_ns = time.monotonic_ns()
        deadline_ns = sent_ns + timeout_ns + self._padding_ns
        with self._channels_lock:
            if self._closed:
                raise RuntimeError("BufferClient is closed")
            channel.in_use = True
        sock = channel.socket
        try:
            try:
                sock.send(protocol.pack_goal(goal_id, target_frame, source_frame, source_time_ns,
                                             target_time_ns, fixed_frame, advanced, timeout_ns),
                          zmq.NOBLOCK)
            except zmq.Again:
                raise ServerTimeoutException(_unreachable(self.address)) from None
            poll = channel.poller.poll
            slice_ms = _MAIN_THREAD_POLL_MS if threading.current_thread() is \
                threading.main_thread() else _MAX_POLL_MS
            while True:
                wait_ns = deadline_ns - time.monotonic_ns()
                if wait_ns <= 0:
                    try:
                        sock.send(protocol.pack_cancel(goal_id), zmq.NOBLOCK)
                    except zmq.ZMQError:
                        pass
                    raise ServerTimeoutException(
                        _no_answer(self.address, time.monotonic_ns() - sent_ns, timeout_ns,
                                   self._padding_ns))
                for ready, _ in poll(min(-(-wait_ns // 1_000_000), slice_ms)):
                    if ready is channel.wake_recv:
                        raise zmq.ZMQError(zmq.ETERM)  # closed: answered below
                    if ready is sock:
                        for _ in range(_BATCH):
                            try:
                                data = sock.recv(zmq.NOBLOCK)
                            except zmq.Again:
                                break
                            try:
                                kind, answer_id, rest = protocol.parse_server_message(data)
                                if kind != RESULT or answer_id != goal_id:
                                    continue  # ACCEPTED, or an answer to an abandoned goal
                                transform, exc = protocol.result_outcome(rest)
                            except ProtocolError:
                                continue
                            if exc is not None:
                                raise exc
                            if not _answers_the_goal(transform, target_frame, source_frame,
                                                     source_time_ns, advanced):
                                self._refuse_answer()
                                continue
                            return transform
                    elif channel.reconnected():
                        remaining = max(0, sent_ns + timeout_ns - time.monotonic_ns())
                        try:
                            sock.send(protocol.pack_goal(
                                goal_id, target_frame, source_frame, source_time_ns,
                                target_time_ns, fixed_frame, advanced, remaining), zmq.NOBLOCK)
                        except zmq.Again:
                            pass
        except zmq.ZMQError as exc:
            if exc.errno == zmq.ETERM or self._closed:
                raise TimeoutException(
                    "the BufferClient was closed before the server answered") from None
            raise
        except KeyboardInterrupt:
            # Ctrl-C while waiting: the server forgets the goal now, not at its timeout.
            try:
                sock.send(protocol.pack_cancel(goal_id), zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
            raise
        finally:
            with self._channels_lock:
                channel.in_use = False
                if self._closed:
                    self._channels.discard(channel)
                    channel.close()

    # --- the I/O thread --------------------------------------------------------------------

    def _run(self) -> None:
        dealer, pull, monitor = self._dealer, self._pull, self._monitor
        poller = zmq.Poller()
        poller.register(dealer, zmq.POLLIN)
        poller.register(pull, zmq.POLLIN)
        poller.register(monitor, zmq.POLLIN)
        deadlines: list = []  # heap of (deadline_ns, goal_id)
        connected_before = False
        running = True
        try:
            while running:
                if deadlines:
                    wait_ns = deadlines[0][0] - time.monotonic_ns()
                    timeout = min(max(0, -(-wait_ns // 1_000_000)), _MAX_POLL_MS)
                else:
                    timeout = None
                for sock, _ in poller.poll(timeout):
                    if sock is pull:
                        running = self._drain_requests(deadlines)
                    elif sock is dealer:
                        self._drain_answers()
                    else:
                        connected_before = self._drain_monitor(connected_before)
                if deadlines and deadlines[0][0] <= time.monotonic_ns():
                    self._expire(deadlines)
                if len(deadlines) > 2 * len(self._goals) + 1024:
                    deadlines[:] = [(g.deadline_ns, i) for i, g in list(self._goals.items())]
                    heapq.heapify(deadlines)
        finally:
            self._shutdown()
            if self._term_on_exit:
                self._push.close(linger=0)
                if self._link is not None:
                    self._link.close()

    def _drain_requests(self, deadlines) -> bool:
        pull, goals = self._pull, self._goals
        for _ in range(_BATCH):
            try:
                msg = pull.recv(zmq.NOBLOCK)
            except zmq.Again:
                return True
            op = msg[:1]
            if op == _OP_CLOSE:
                return False
            (goal_id,) = _ID.unpack_from(msg, 1)
            if op == _OP_GOAL:
                goal = goals.get(goal_id)
                if goal is None:
                    continue  # cancelled before it left
                heapq.heappush(deadlines, (goal.deadline_ns, goal_id))
                self._send_to_server(goal.payload, goal_id)
            else:
                self._send_to_server(protocol.pack_cancel(goal_id), None)
        return True

    def _send_to_server(self, payload: bytes, goal_id) -> None:
        try:
            self._dealer.send(payload, zmq.NOBLOCK)
        except zmq.Again:
            # Tens of thousands of goals queued for a server that is not there.
            if goal_id is not None:
                self._fail(goal_id, ServerTimeoutException(_unreachable(self.address)))

    def _drain_answers(self) -> None:
        dealer, goals = self._dealer, self._goals
        for _ in range(_BATCH):
            try:
                data = dealer.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                kind, goal_id, rest = protocol.parse_server_message(data)
                if kind != RESULT:
                    continue  # ACCEPTED / CANCELLED: nothing to do for the caller
                goal = goals.get(goal_id)
                if goal is None:
                    continue  # cancelled, timed out, or a duplicate answer after a re-send
                transform, exc = protocol.result_outcome(rest)
            except ProtocolError:
                continue  # not from a tf2py server we understand; nothing to resolve
            if exc is None and not _answers_the_goal(
                    transform, goal.target_frame, goal.source_frame, goal.source_time_ns,
                    goal.advanced):
                self._refuse_answer()
                continue
            goals.pop(goal_id, None)
            future = goal.future
            try:
                if exc is None:
                    future.set_result(transform)
                else:
                    future.set_exception(exc)
            except InvalidStateError:
                pass  # cancelled by the caller meanwhile

    def _refuse_answer(self) -> None:
        self.refused_answers += 1
        if not self._refusal_logged:
            self._refusal_logged = True
            logging.getLogger("tf2py.server").warning(
                "tf2py BufferClient: %s (logged once)", _refused_answer(self.address))

    def _drain_monitor(self, connected_before: bool) -> bool:
        while True:
            try:
                event = recv_monitor_message(self._monitor, zmq.NOBLOCK)["event"]
            except zmq.Again:
                return connected_before
            if event == zmq.EVENT_CONNECTED:
                if connected_before:
                    self._resend()
                connected_before = True

    def _resend(self) -> None:
        """After a reconnect: the server may be a new one that never saw our goals; send every
        waiting goal again with the time it has left (a server that still has one ignores the
        copy)."""
        now = time.monotonic_ns()
        for goal_id, goal in list(self._goals.items()):
            remaining = max(0, goal.sent_ns + goal.timeout_ns - now)
            self._send_to_server(
                protocol.pack_goal(goal_id, goal.target_frame, goal.source_frame,
                                   goal.source_time_ns, goal.target_time_ns, goal.fixed_frame,
                                   goal.advanced, remaining),
                goal_id,
            )

    def _expire(self, deadlines) -> None:
        now = time.monotonic_ns()
        while deadlines and deadlines[0][0] <= now:
            deadline_ns, goal_id = heapq.heappop(deadlines)
            goal = self._goals.get(goal_id)
            if goal is None or goal.deadline_ns != deadline_ns:
                continue
            self._fail(goal_id, ServerTimeoutException(
                _no_answer(self.address, now - goal.sent_ns, goal.timeout_ns, self._padding_ns)))
            self._send_to_server(protocol.pack_cancel(goal_id), None)

    def _fail(self, goal_id: int, exc: BaseException) -> None:
        goal = self._goals.pop(goal_id, None)
        if goal is None:
            return
        try:
            goal.future.set_exception(exc)
        except InvalidStateError:
            pass

    def _shutdown(self) -> None:
        for goal_id in list(self._goals):
            try:
                self._dealer.send(protocol.pack_cancel(goal_id), zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
            self._fail(goal_id, TimeoutException(
                "the BufferClient was closed before the server answered"))
        self._dealer.disable_monitor()
        self._monitor.close(linger=0)
        # A moment for the cancels to leave, so the server forgets those goals now.
        self._dealer.close(linger=100)
        self._pull.close(linger=0)
