"""Simulated time on any bus: ``/clock`` (what ``tf2py play --clock`` publishes).

``ClockPublisher`` sends the current simulated time; ``SimClock`` follows it, as a ROS node
with ``use_sim_time`` follows ROS 2's ``/clock``: ``now()`` is the latest time received
(zero until the first tick), and ``add_jump_callback(fn)`` registers ``fn(jump)``, called
whenever the time goes backwards (a bag that loops), which is what a ``Buffer(clock=...)``
uses to forget its dynamic data, as tf2_ros's Buffer does. The address's scheme picks the bus.
"""

from __future__ import annotations

import threading
from abc import ABCMeta
from collections.abc import Callable
from time import monotonic
from typing import Any, NamedTuple, TypeVar

from ..buffer.time import Duration, Time, to_nanoseconds
from .counters import DropCounter
from .interface import transport_for
from .lifetime import CloseOnce, release_when_collected

__all__ = ["SimClock", "ClockPublisher", "TimeJump", "FedSimClock", "SampleClockPublisher"]

_C = TypeVar("_C", bound="FedSimClock")
_P = TypeVar("_P", bound="SampleClockPublisher")


class TimeJump(NamedTuple):
    """A backward jump of a ``SimClock``: ``previous`` and ``current`` times, and ``delta``
    (``current - previous``, negative), as rclpy's TimeJump reports it."""

    previous: Time
    current: Time

    @property
    def delta(self) -> Duration:
        delta: Duration = self.current - self.previous
        return delta


class ClockPublisher(metaclass=ABCMeta):
    """Publishes simulated time on the bus's ``/clock`` stream (``ros2://``: ROS 2's /clock,
    rosgraph_msgs/Clock). ``publish(time)`` (a Time or seconds), ``publish_ns(ns)``,
    ``close()``; a context manager; ``keys`` as for the broadcasters. Never blocks."""

    def __new__(cls, core: Any = None, keys: Any = None) -> Any:
        transport, address = transport_for(core)
        return transport.clock_publisher(address, keys)


class SimClock(metaclass=ABCMeta):
    """Follows the ``/clock`` stream of the bus at ``core`` (default ``$TF2PY_CORE``, else
    the loopback default; ``ros2://...`` means ROS 2's own /clock).

    ``now()`` -> the latest simulated ``Time`` received (``Time()`` until the first tick);
    ``wait_for_time(timeout)``; ``add_jump_callback(fn)``: ``fn(jump)`` (a ``TimeJump``) is
    called each time the time goes backwards; ``remove_jump_callback(fn)``. Malformed /clock
    messages are dropped and counted (``stats()``), logged once per cause. ``close()``; a
    context manager.
    """

    def __new__(cls, core: Any = None, keys: Any = None) -> Any:
        transport, address = transport_for(core)
        return transport.sim_clock(address, keys)


class SampleClockPublisher:
    """What a ``ClockPublisher`` that sends each time as one sample shares (``ros2://``,
    ``zenoh://``): ``publish``, ``publish_ns``, the ``sent`` count, closing (also when
    collected unclosed). A bus's publisher opens its writer, then calls ``_start`` with how
    to encode a time (integer nanoseconds -> bytes), how to send a sample, and how to
    release the writer; none of them may hold the publisher."""

    def _start(self, address: str, encode: Callable[[int], bytes],
               send: Callable[[bytes], object], release: Callable[[], None]) -> None:
        self.address = address
        self.sent = 0
        self._lock = threading.Lock()
        self._closing = CloseOnce(self._lock)
        self._encode = encode
        self._send = send
        self._release = release
        self._finalizer = release_when_collected(self, release, type(self).__name__)

    def publish(self, time: Any) -> None:
        """Send ``time`` (a Time or seconds) as the current simulated time."""
        self.publish_ns(to_nanoseconds(time, "time"))

    def publish_ns(self, time_ns: int) -> None:
        """Send ``time_ns`` (integer nanoseconds) as the current simulated time."""
        sample = self._encode(time_ns)
        with self._lock:
            if self._closing.closed:
                raise RuntimeError("publish on a closed ClockPublisher")
            self._send(sample)
            self.sent += 1

    def close(self) -> None:
        """Release the writer (idempotent)."""
        if not self._closing.begin():
            return
        self._finalizer.detach()
        self._release()

    def __enter__(self: _P) -> _P:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FedSimClock:
    """What a ``SimClock`` fed tick by tick by its bus's receive thread does (``ros2://``,
    ``zenoh://``): the latest time, the tick and jump counts, the jump callbacks, waiting for
    the first tick, ``stats()`` and closing. A bus's clock opens its tick source in
    ``__init__`` (after ``_start``), keeps it as ``_source`` (anything with ``close()``) and
    hands each tick to ``_tick(stamp_ns)``; ``_watch_source()`` then releases the source
    if the clock is collected unclosed."""

    _name = "tf2py-sim-clock"

    def _start(self, address: str) -> None:
        self.address = address
        self._now_ns = 0
        self.ticks = 0
        self.jumps = 0
        self.dropped = DropCounter(self._name)
        self._callbacks: list[Callable[[TimeJump], Any]] = []
        self._condition = threading.Condition()
        self._closed = False
        self._source: Any = None

    def _watch_source(self) -> None:
        self._finalizer = release_when_collected(self, self._source.close, type(self).__name__)

    def _tick(self, stamp_ns: int) -> None:
        """A tick from the bus (on its receive thread): the time, and the jump callbacks when
        it went backwards."""
        with self._condition:
            if self._closed:
                return
            previous = self._now_ns
            self._now_ns = stamp_ns
            self.ticks += 1
            jumped = bool(previous) and stamp_ns < previous
            if jumped:
                self.jumps += 1
            callbacks = list(self._callbacks) if jumped else []
            self._condition.notify_all()
        if jumped:
            jump = TimeJump(Time.from_nanoseconds(previous), Time.from_nanoseconds(stamp_ns))
            for fn in callbacks:
                try:
                    fn(jump)
                except Exception as exc:  # a callback never stops the clock
                    self.dropped.drop("callback", f"a jump callback raised {exc!r}")

    def now(self) -> Time:
        """The latest simulated time received (``Time()`` before the first tick)."""
        now: Time = Time.from_nanoseconds(self._now_ns)
        return now

    def wait_for_time(self, timeout: float | None = None) -> bool:
        """Wait until a first tick arrived (True), or ``timeout`` seconds passed (False)."""
        deadline = None if timeout is None else monotonic() + timeout
        with self._condition:
            while not self._now_ns and not self._closed:
                remaining = None if deadline is None else deadline - monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._condition.wait(remaining)
            return bool(self._now_ns) and not self._closed

    def add_jump_callback(self, fn: Callable[[TimeJump], Any]) -> None:
        """Call ``fn(jump)`` (a ``TimeJump``) on the receive thread whenever the time goes
        backwards."""
        if not callable(fn):
            raise TypeError(f"a jump callback must be callable, got {fn!r}")
        with self._condition:
            if self._closed:
                raise RuntimeError("add_jump_callback on a closed SimClock")
            self._callbacks.append(fn)

    def remove_jump_callback(self, fn: Callable[[TimeJump], Any]) -> None:
        """Stop calling ``fn`` (no error if it was not registered)."""
        with self._condition:
            if fn in self._callbacks:
                self._callbacks.remove(fn)

    def stats(self) -> dict[str, Any]:
        return {"ticks": self.ticks, "jumps": self.jumps, "dropped": self.dropped.snapshot()}

    def close(self) -> None:
        """Stop following the bus (idempotent)."""
        with self._condition:
            if self._closed:
                return
            self._closed = True
            self._condition.notify_all()
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer.detach()
        if self._source is not None:
            self._source.close()

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SimClock({self.address!r}, now={self.now()}, ticks={self.ticks})"
