"""``SimClock`` for ``ros2://`` addresses: follows ROS 2's ``/clock`` (rosgraph_msgs/Clock),
with the API of tf2py's SimClock (``now``, ``wait_for_time``, jump callbacks, ``stats``,
``close``), so ``SimClock(core="ros2://")`` can simply hand over to it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from time import monotonic
from typing import Any

from ...buffer.time import Time, to_nanoseconds
from ..counters import DropCounter
from ..lifetime import release_all, release_when_collected, weak_callback
from ..clock import ClockPublisher, SimClock, TimeJump

__all__ = ["Ros2SimClock", "Ros2ClockPublisher"]


def _refuse_keys(keys: Any) -> None:
    if keys is not None:
        raise ValueError("keys= applies to tf2py buses (tcp://, ipc://), not to ROS 2 "
                         "(ros2://), whose traffic is plain DDS")


class Ros2ClockPublisher:
    """Publishes simulated time on ROS 2's ``/clock`` (rosgraph_msgs/Clock, best effort, as
    ``ros2 bag play --clock`` does), with the API of tf2py's ClockPublisher. Never blocks."""

    def __init__(self, core: str | None = None, keys: Any = None) -> None:
        from ..address import core_address
        from . import types
        from .participant import CLOCK_WRITER_QOS, Participant

        _refuse_keys(keys)
        self.address = core_address(core)
        self.sent = 0
        self._lock = threading.Lock()
        self._closed = False
        self._participant = Participant.acquire(self.address)
        try:
            self._writer = self._participant.writer("rt/clock", types.Clock, CLOCK_WRITER_QOS)
        except BaseException:
            self._participant.release()
            raise
        self._finalizer = release_when_collected(
            self, release_all(self._writer.close, self._participant.release), type(self).__name__)

    def publish(self, time: Time | float) -> None:
        """Send ``time`` (a Time or seconds) as the current simulated time."""
        self.publish_ns(to_nanoseconds(time, "time"))

    def publish_ns(self, time_ns: int) -> None:
        from .cdr import encode_time

        sample = encode_time(time_ns)
        with self._lock:
            if self._closed:
                raise RuntimeError("publish on a closed ClockPublisher")
            self._writer.write(sample)
            self.sent += 1

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._finalizer.detach()
        self._writer.close()
        self._participant.release()

    def __enter__(self) -> Ros2ClockPublisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Ros2SimClock:
    """Follows ``/clock`` on the ROS 2 graph at ``core`` (``ros2://`` or ``ros2://DOMAIN``).

    ``now()`` -> the latest ``Time`` received (``Time()`` until the first tick);
    ``add_jump_callback(fn)``: ``fn(jump)`` each time the time goes backwards, called on the
    receive thread as the tick arrives. ``close()``; a context manager.
    """

    def __init__(self, core: str | None = None, keys: Any = None) -> None:
        from ..address import core_address
        from . import ClockSubscription

        _refuse_keys(keys)
        self.address = core_address(core)
        self._now_ns = 0
        self.ticks = 0
        self.jumps = 0
        self._callbacks: list[Callable[[TimeJump], Any]] = []
        self._condition = threading.Condition()
        self._closed = False
        self.dropped = DropCounter("tf2py-sim-clock")
        # The participant keeps its callbacks: a weak one lets an unclosed clock be collected
        self._subscription = ClockSubscription(self.address, weak_callback(self._on_tick))
        self._finalizer = release_when_collected(self, self._subscription.close,
                                                 type(self).__name__)

    def _on_tick(self, stamp_ns: int) -> None:
        with self._condition:
            previous = self._now_ns
            self._now_ns = stamp_ns
            self.ticks += 1
            jumped = bool(previous) and stamp_ns < previous
            if jumped:
                self.jumps += 1
            callbacks = list(self._callbacks) if jumped else ()
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
        return Time.from_nanoseconds(self._now_ns)

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
        if not callable(fn):
            raise TypeError(f"a jump callback must be callable, got {fn!r}")
        with self._condition:
            if self._closed:
                raise RuntimeError("add_jump_callback on a closed SimClock")
            self._callbacks.append(fn)

    def remove_jump_callback(self, fn: Callable[[TimeJump], Any]) -> None:
        with self._condition:
            try:
                self._callbacks.remove(fn)
            except ValueError:
                pass

    def stats(self) -> dict[str, Any]:
        dropped = self.dropped.snapshot()
        participant = getattr(self._subscription, "_participant", None)
        if participant is not None:
            for cause, n in participant.dropped.snapshot().items():
                dropped[cause] = dropped.get(cause, 0) + n
        return {"ticks": self.ticks, "jumps": self.jumps, "dropped": dropped}

    def close(self) -> None:
        with self._condition:
            if self._closed:
                return
            self._closed = True
            self._condition.notify_all()
        self._finalizer.detach()
        self._subscription.close()

    def __enter__(self) -> Ros2SimClock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SimClock({self.address!r}, now={self.now()}, ticks={self.ticks})"


ClockPublisher.register(Ros2ClockPublisher)
SimClock.register(Ros2SimClock)
