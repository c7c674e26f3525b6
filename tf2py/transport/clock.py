"""Simulated time on the bus: ``/clock`` (what ``tf2py play --clock`` publishes).

``ClockPublisher`` sends the current simulated time; ``SimClock`` follows it, as a ROS node
with ``use_sim_time`` follows ROS 2's ``/clock``: ``now()`` is the latest time received
(zero until the first tick), and ``add_jump_callback(fn)`` registers ``fn(jump)``, called
on the clock's thread whenever the time goes backwards (a bag that loops), which is what a
``Buffer(clock=...)`` uses to forget its dynamic data, as tf2_ros's Buffer does.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import zmq

from ..buffer.time import Duration, Time, to_nanoseconds
from . import wire
from ._sockets import (
    RECEIVE_HWM,
    SEND_HWM,
    DropCounter,
    client_options,
    inproc_name,
    join_thread,
    logger,
    make_socket,
)
from .address import bus_endpoints, core_address

__all__ = ["SimClock", "ClockPublisher", "TimeJump"]

_STOP = b"\x00stop"  # on the clock thread's own inproc pipe; never a bus topic


class TimeJump(NamedTuple):
    """A backward jump of a ``SimClock``: ``previous`` and ``current`` times, and ``delta``
    (``current - previous``, negative), as rclpy's TimeJump reports it."""

    previous: Time
    current: Time

    @property
    def delta(self) -> Duration:
        return self.current - self.previous


def _ros2_clock(address: str):
    """Dispatch point for ``ros2://`` addresses: ROS 2's ``/clock`` (rosgraph_msgs/Clock)."""
    raise RuntimeError(
        f"SimClock({address!r}): following ROS 2's /clock is not available in this build "
        "of tf2py (needs the ROS 2 transport)"
    )


class ClockPublisher:
    """Publishes simulated time on the bus's ``/clock`` stream. Never blocks."""

    def __init__(self, core: str | None = None):
        self._publish_endpoint, _ = bus_endpoints(core)
        self._lock = threading.Lock()
        self._closed = False
        self.sent = 0
        self._socket = make_socket(zmq.PUB, SNDHWM=SEND_HWM, **client_options())
        try:
            self._socket.connect(self._publish_endpoint)
        except BaseException:
            self._socket.close(0)
            raise

    def publish(self, time) -> None:
        """Send ``time`` (a Time or seconds) as the current simulated time."""
        self.publish_ns(to_nanoseconds(time, "time"))

    def publish_ns(self, time_ns: int) -> None:
        body = wire.encode_clock(time_ns)
        with self._lock:
            if self._closed:
                raise RuntimeError("publish on a closed ClockPublisher")
            try:
                self._socket.send(wire.TOPIC_CLOCK, zmq.SNDMORE | zmq.NOBLOCK)
                self._socket.send(body, zmq.NOBLOCK)
            except zmq.Again:
                return
            self.sent += 1

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._socket.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SimClock:
    """Follows the ``/clock`` stream of the bus at ``core`` (default ``$TF2PY_CORE``, else
    the loopback default; ``ros2://...`` means ROS 2's own /clock).

    ``now()`` -> the latest simulated ``Time`` received (``Time()`` until the first tick).
    ``add_jump_callback(fn)``: ``fn(jump)`` (a ``TimeJump``) is called on the clock's thread
    each time the time goes backwards. Malformed /clock messages are dropped and counted
    (``stats()``), logged once per cause. ``close()``; a context manager.
    """

    _name = "tf2py-sim-clock"
    close_timeout = 5.0

    def __init__(self, core: str | None = None):
        address = core_address(core)
        if address.startswith("ros2://"):
            _ros2_clock(address)
        _, subscribe_endpoint = bus_endpoints(address)
        self._now_ns = 0
        self.ticks = 0
        self.jumps = 0
        self.dropped = DropCounter(self._name)
        self._callbacks: list = []
        self._callbacks_lock = threading.Lock()
        self._closed = False
        self._close_lock = threading.Lock()
        self._ticked = threading.Condition()
        self._thread = None
        self._sockets: list = []
        try:
            # One SUB socket for the bus and for our stop pipe, so the thread blocks in one
            # recv (no poller): the cheapest wake-up per tick.
            self._sub = self._add(make_socket(
                zmq.SUB, linger_ms=0, RCVHWM=RECEIVE_HWM, MAXMSGSIZE=4096, RCVTIMEO=1000,
                **client_options()))
            self._sub.setsockopt(zmq.SUBSCRIBE, wire.TOPIC_CLOCK)
            self._sub.setsockopt(zmq.SUBSCRIBE, _STOP)
            stop_name = inproc_name("sim-clock-stop")
            self._stop = self._add(make_socket(zmq.PUB, linger_ms=0))
            self._stop.bind(stop_name)
            self._sub.connect(stop_name)
            self._sub.connect(subscribe_endpoint)
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        except BaseException:
            self.close()
            raise

    def _add(self, sock):
        self._sockets.append(sock)
        return sock

    # -- public -------------------------------------------------------------------------------

    def now(self) -> Time:
        """The latest simulated time received (``Time()`` before the first tick)."""
        return Time.from_nanoseconds(self._now_ns)

    def wait_for_time(self, timeout: float | None = None) -> bool:
        """Wait until a first tick arrived (True), or ``timeout`` seconds passed (False)."""
        with self._ticked:
            return self._ticked.wait_for(lambda: self._now_ns != 0 or self._closed, timeout) \
                and self._now_ns != 0

    def add_jump_callback(self, fn) -> None:
        """Call ``fn(jump)`` (a ``TimeJump``) whenever the time goes backwards."""
        if not callable(fn):
            raise TypeError(f"a jump callback must be callable, got {fn!r}")
        with self._callbacks_lock:
            self._callbacks.append(fn)

    def remove_jump_callback(self, fn) -> None:
        with self._callbacks_lock:
            try:
                self._callbacks.remove(fn)
            except ValueError:
                pass

    def stats(self) -> dict:
        return {"ticks": self.ticks, "jumps": self.jumps, "dropped": self.dropped.snapshot()}

    # -- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        sub = self._sub
        recv = sub.recv
        decode = wire.decode_clock
        topic_clock = wire.TOPIC_CLOCK
        try:
            while True:
                try:
                    # Frames (copy=False) carry the "more" flag for free.
                    topic_frame = recv(0, copy=False)
                except zmq.Again:  # the backstop timeout: only to notice a close()
                    if self._closed:
                        return
                    continue
                topic = topic_frame.bytes
                if topic == _STOP or self._closed:
                    return
                if not topic_frame.more:
                    self.dropped.drop("shape", "a bus message has 2 frames, got 1")
                    continue
                body = recv(0, copy=False)  # multipart delivery is atomic: it is here
                if body.more:
                    while recv(0, copy=False).more:
                        pass
                    self.dropped.drop("shape", "a /clock message has 2 frames, got more")
                    continue
                if topic != topic_clock:
                    self.dropped.drop("topic", f"unknown topic {topic[:64]!r}")
                    continue
                try:
                    time_ns = decode(body.bytes)
                except wire.WireError as exc:
                    self.dropped.drop(exc.cause, str(exc))
                    continue
                self._tick(time_ns)
        except zmq.ZMQError as exc:
            if exc.errno != zmq.ETERM and not self._closed:
                logger.error("%s stopped: %s", self._name, exc)
        finally:
            with self._ticked:
                self._ticked.notify_all()

    def _tick(self, time_ns: int) -> None:
        previous = self._now_ns
        self._now_ns = time_ns
        self.ticks += 1
        if previous == 0:
            with self._ticked:
                self._ticked.notify_all()
        elif time_ns < previous:
            self.jumps += 1
            jump = TimeJump(Time.from_nanoseconds(previous), Time.from_nanoseconds(time_ns))
            with self._callbacks_lock:
                callbacks = list(self._callbacks)
            for fn in callbacks:
                try:
                    fn(jump)
                except Exception as exc:  # noqa: BLE001 - a callback never stops the clock
                    self.dropped.drop("callback", f"a jump callback raised {exc!r}")

    # -- closing ------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the thread and close the sockets. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        if thread is not None:
            try:
                self._stop.send(_STOP)
            except zmq.ZMQError:
                pass
            if thread is not threading.current_thread():
                join_thread(thread, self.close_timeout)
                if thread.is_alive():
                    logger.warning("%s: thread still busy after %.1f s (in a jump callback)",
                                   self._name, self.close_timeout)
                    return  # never close a socket under its user; it is a daemon thread
        for sock in self._sockets:
            sock.close(0)
        self._sockets.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"SimClock(now={self.now()}, ticks={self.ticks})"
