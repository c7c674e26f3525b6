"""``/clock`` on the ZeroMQ bus: ``ClockPublisher`` and ``SimClock`` (see tf2py.transport.clock
for what they do). Both are released when collected unclosed (``ResourceWarning``); the
jump-watching thread holds only a weak reference to its clock."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from time import monotonic
from typing import Any

import zmq

from ...buffer.time import Time, to_nanoseconds
from .. import wire
from . import wire_clock
from ..address import core_address
from .address import bus_endpoints
from ..clock import ClockPublisher, SimClock, TimeJump
from .sockets import (
    DropCounter,
    SocketCloser,
    client_options,
    connect_keyed,
    join_thread,
    logger,
    make_socket,
    publisher_socket,
    release_when_collected,
)
from ..lifetime import CloseOnce, ClosingContext

__all__ = ["ZmqSimClock", "ZmqClockPublisher"]


class ZmqClockPublisher(ClosingContext):
    """Publishes simulated time on the bus's ``/clock`` stream (``keys``: as for the
    broadcasters). Never blocks."""

    def __init__(self, core: str | None = None, keys: Any = None):
        self._publish_endpoint, _ = bus_endpoints(core)
        self._lock = threading.Lock()
        self._closing = CloseOnce(self._lock)
        self.sent = 0
        self._socket = publisher_socket(self._publish_endpoint, keys)
        self._finalizer = release_when_collected(
            self, SocketCloser(self._socket, self._lock), "ClockPublisher")

    def publish(self, time: Any) -> None:
        """Send ``time`` (a Time or seconds) as the current simulated time."""
        self.publish_ns(to_nanoseconds(time, "time"))

    def publish_ns(self, time_ns: int) -> None:
        frame = wire_clock.clock_message(time_ns)
        with self._lock:
            if self._closing.closed:
                raise RuntimeError("publish on a closed ClockPublisher")
            try:
                self._socket.send(frame, zmq.NOBLOCK)
            except zmq.Again:
                return
            self.sent += 1

    def close(self) -> None:
        self._finalizer.detach()
        if not self._closing.begin():
            return
        with self._lock:
            self._socket.close()


class ZmqSimClock(ClosingContext):
    """Follows the ``/clock`` stream of the bus at ``core`` (default ``$TF2PY_CORE``, else
    the loopback default; ``ros2://...`` means ROS 2's own /clock).

    ``now()`` -> the latest simulated ``Time`` received (``Time()`` until the first tick).
    ``add_jump_callback(fn)``: ``fn(jump)`` (a ``TimeJump``) is called each time the time
    goes backwards. Malformed /clock messages are dropped and counted (``stats()``), logged
    once per cause. ``close()``; a context manager.

    Cost: the socket keeps only the latest tick (ZMQ_CONFLATE), and nothing of ours runs per
    tick: ``now()`` reads the latest one when asked. Jumps are noticed by ``now()`` and, once
    a jump callback is registered, by a thread that looks every ``jump_check_interval``
    seconds (50 ms), so a jump back is reported within that time even if nobody asks.
    """

    _name = "tf2py-sim-clock"
    close_timeout = 5.0
    jump_check_interval = 0.05

    def __init__(self, core: str | None = None, keys: Any = None):
        address = core_address(core)
        _, subscribe_endpoint = bus_endpoints(address)
        self._now_ns = 0
        self.ticks = 0  # ticks seen (the socket keeps only the latest: not every one sent)
        self.jumps = 0
        self.dropped = DropCounter(self._name)
        self._callbacks: list[Callable[[TimeJump], Any]] = []
        self._lock = threading.Lock()  # the socket, _now_ns and the callbacks list
        self._closing = CloseOnce(self._lock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sub = make_socket(zmq.SUB, linger_ms=0, CONFLATE=1, MAXMSGSIZE=4096,
                                **client_options())
        try:
            self._sub.setsockopt(zmq.SUBSCRIBE, wire_clock.TOPIC_CLOCK)
            connect_keyed(self._sub, subscribe_endpoint, keys)
        except BaseException:
            self._sub.close(0)
            raise
        self._finalizer = release_when_collected(
            self, SocketCloser(self._sub, self._lock, self._stop), "SimClock")

    # -- public -------------------------------------------------------------------------------

    def now(self) -> Time:
        """The latest simulated time received (``Time()`` before the first tick)."""
        with self._lock:
            jump = self._read_locked(0)
        if jump is not None:
            self._report(jump)
        now: Time = Time.from_nanoseconds(self._now_ns)
        return now

    def wait_for_time(self, timeout: float | None = None) -> bool:
        """Wait until a first tick arrived (True), or ``timeout`` seconds passed (False)."""
        deadline = None if timeout is None else monotonic() + timeout
        while True:
            with self._lock:
                if self._closing.closed:
                    return False
                if not self._now_ns:
                    wait_ms = 50 if deadline is None else \
                        max(0, min(50, int((deadline - monotonic()) * 1000)))
                    self._read_locked(wait_ms)
                if self._now_ns:
                    return True
            if deadline is not None and monotonic() >= deadline:
                return False

    def add_jump_callback(self, fn: Callable[[TimeJump], Any]) -> None:
        """Call ``fn(jump)`` (a ``TimeJump``) whenever the time goes backwards (on the clock's
        thread, started by the first call, or in a ``now()`` that notices the jump)."""
        if not callable(fn):
            raise TypeError(f"a jump callback must be callable, got {fn!r}")
        with self._lock:
            if self._closing.closed:
                raise RuntimeError("add_jump_callback on a closed SimClock")
            self._callbacks.append(fn)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=_watch_jumps, args=(weakref.ref(self), self._stop,
                                               self.jump_check_interval),
                    name=self._name, daemon=True)
                self._thread.start()

    def remove_jump_callback(self, fn: Callable[[TimeJump], Any]) -> None:
        with self._lock:
            try:
                self._callbacks.remove(fn)
            except ValueError:
                pass

    def stats(self) -> dict[str, Any]:
        return {"ticks": self.ticks, "jumps": self.jumps, "dropped": self.dropped.snapshot()}

    # -- reading ------------------------------------------------------------------------------

    def _read_locked(self, wait_ms: int) -> TimeJump | None:
        """Take the latest tick, if one came (waiting up to ``wait_ms``); a ``TimeJump`` when
        it went backwards, else None."""
        if self._closing.closed:
            return None
        sub = self._sub
        try:
            if wait_ms:
                if not sub.poll(wait_ms):
                    return None
            elif not int(sub.get(zmq.EVENTS)) & zmq.POLLIN:  # cheaper than a failed recv
                return None
            frame = sub.recv(zmq.NOBLOCK)
        except zmq.Again:
            return None
        except zmq.ZMQError as exc:
            self.dropped.drop("socket", str(exc))
            return None
        try:
            time_ns = wire_clock.decode_clock_message(frame)
        except wire.WireError as exc:
            self.dropped.drop(exc.cause, str(exc))
            return None
        previous = self._now_ns
        self._now_ns = time_ns
        self.ticks += 1
        if previous and time_ns < previous:
            self.jumps += 1
            return TimeJump(Time.from_nanoseconds(previous), Time.from_nanoseconds(time_ns))
        return None

    def _report(self, jump: TimeJump) -> None:
        with self._lock:
            callbacks = list(self._callbacks)
        for fn in callbacks:
            try:
                fn(jump)
            except Exception as exc:  # noqa: BLE001 - a callback never stops the clock
                self.dropped.drop("callback", f"a jump callback raised {exc!r}")

    def _check_jump(self) -> None:
        with self._lock:
            jump = self._read_locked(0)
        if jump is not None:
            self._report(jump)

    # -- closing ------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the thread and close the socket. Idempotent."""
        self._finalizer.detach()
        if not self._closing.begin():
            return
        with self._lock:
            thread = self._thread
        self._stop.set()
        if thread is not None and thread is not threading.current_thread():
            join_thread(thread, self.close_timeout)
            if thread.is_alive():
                logger.warning("%s: thread still busy after %.1f s (in a jump callback)",
                               self._name, self.close_timeout)
        with self._lock:
            self._sub.close(0)

    def __repr__(self) -> str:
        return f"SimClock(now={Time.from_nanoseconds(self._now_ns)}, ticks={self.ticks})"


def _watch_jumps(ref: weakref.ReferenceType[ZmqSimClock], stop: threading.Event,
                 interval: float) -> None:
    """The jump-watching thread: looks every ``interval`` seconds while the clock lives."""
    while not stop.wait(interval):
        clock = ref()
        if clock is None:
            return
        clock._check_jump()
        del clock


ClockPublisher.register(ZmqClockPublisher)
SimClock.register(ZmqSimClock)
