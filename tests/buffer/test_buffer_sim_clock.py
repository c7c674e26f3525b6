"""Buffer(clock=...): dynamic data is forgotten when the clock jumps back, statics stay
(tf2_ros's Buffer on a /clock reset; API.md "Simulated time")."""

from __future__ import annotations

import pytest

from tf2py import Buffer, Time, make_transform


class ManualClock:
    """A clock with only now(): the buffer notices a jump back at its next insertion."""

    def __init__(self, seconds=0.0):
        self.time = Time.from_seconds(seconds)

    def now(self):
        return self.time


class CallbackClock(ManualClock):
    """A clock that reports jumps itself, as SimClock does."""

    def __init__(self, seconds=0.0):
        super().__init__(seconds)
        self.callbacks = []

    def add_jump_callback(self, fn):
        self.callbacks.append(fn)

    def set(self, seconds):
        previous, self.time = self.time, Time.from_seconds(seconds)
        if self.time < previous:
            for fn in self.callbacks:
                fn(None)


def fill(buffer, start, end):
    buffer.set_transform_static(make_transform("base", "laser", (1, 0, 0)), "test")
    for t in range(start, end + 1):
        buffer.set_transform(make_transform("odom", "base", (t, 0, 0), stamp=t), "test")


def test_clock_without_callbacks_is_checked_at_each_insert():
    clock = ManualClock(100)
    buffer = Buffer(cache_time=10.0, clock=clock)
    fill(buffer, 90, 100)
    clock.time = Time(120)  # forward: nothing forgotten
    buffer.set_transform(make_transform("odom", "base", stamp=101), "test")
    assert buffer.can_transform("odom", "base", 95)
    clock.time = Time(10)  # the bag starts over
    assert buffer.can_transform("odom", "base", 95)  # noticed at the next insertion...
    assert buffer.set_transform(make_transform("odom", "base", stamp=10), "test") is True
    assert not buffer.can_transform("odom", "base", 95)  # ...which found the data forgotten
    assert buffer.can_transform("base", "laser", 0)
    assert buffer.get_frames() == ["base", "laser", "odom"]


def test_clock_with_jump_callbacks_clears_at_the_jump():
    clock = CallbackClock(100)
    buffer = Buffer(cache_time=10.0, clock=clock)
    fill(buffer, 90, 100)
    assert buffer.set_transform(make_transform("odom", "base", stamp=5), "test") is False
    clock.set(5)
    assert not buffer.can_transform("odom", "base", 95)
    assert buffer.can_transform("base", "laser", 0)
    assert buffer.set_transform(make_transform("odom", "base", stamp=5), "test") is True


def test_jump_back_also_serves_waiting_requests_again():
    clock = CallbackClock(100)
    buffer = Buffer(cache_time=10.0, clock=clock)
    fill(buffer, 90, 100)
    future = buffer.wait_for_transform_async("odom", "laser", 50)
    assert future.exception(timeout=1).__class__.__name__ == "BackwardExtrapolationException"
    clock.set(40)
    pending = buffer.wait_for_transform_async("odom", "laser", 50)
    assert not pending.done()
    fill(buffer, 45, 55)
    assert pending.result(timeout=1).transform.translation.x == 51.0


def test_a_clock_needs_now():
    with pytest.raises(TypeError, match="now"):
        Buffer(clock=object())
    assert Buffer(clock=None).get_frames() == []
