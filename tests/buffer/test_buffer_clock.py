"""Buffer(clock=...): the dynamic data is forgotten when the clock jumps backwards, as
tf2_ros's Buffer does on a /clock reset; statics stay."""

from __future__ import annotations

import pytest

from tf2py.buffer.buffer import Buffer
from tf2py.buffer.exceptions import TransformException
from tf2py.buffer.messages import make_transform
from tf2py.buffer.time import Time


class FakeClock:
    """A clock whose time the test sets; counts its readings."""

    def __init__(self, seconds=100.0):
        self.time = Time.from_seconds(seconds)
        self.reads = 0

    def now(self):
        self.reads += 1
        return self.time


class JumpingClock(FakeClock):
    """A clock that reports its jumps to registered callbacks (as SimClock may)."""

    def __init__(self, seconds=100.0):
        super().__init__(seconds)
        self.callbacks = []

    def add_jump_callback(self, fn):
        self.callbacks.append(fn)

    def jump_to(self, seconds):
        self.time = Time.from_seconds(seconds)
        for fn in self.callbacks:
            fn()


def fill(buffer, start):
    buffer.set_transform_static(make_transform("map", "odom", (1.0, 0, 0)), "s")
    for k in range(3):
        buffer.set_transform(make_transform("odom", "base", (k, 0, 0), stamp=start + k), "d")


def test_a_backward_jump_clears_dynamic_data_before_the_insert():
    clock = FakeClock(100.0)
    buffer = Buffer(clock=clock)
    fill(buffer, 100.0)
    assert buffer.can_transform("odom", "base", 101.0)
    clock.time = Time.from_seconds(5.0)  # the bag looped
    # Older than the cache window of the old data: refused without the clear.
    assert buffer.set_transform(make_transform("odom", "base", (9, 0, 0), stamp=5.0), "d")
    assert not buffer.can_transform("odom", "base", 101.0)
    assert buffer.lookup_transform("odom", "base", 5.0).transform.translation.x == 9.0
    # The static survived.
    assert buffer.lookup_transform("map", "odom", 0).transform.translation.x == 1.0


def test_a_clock_moving_forward_clears_nothing():
    clock = FakeClock(100.0)
    buffer = Buffer(clock=clock)
    fill(buffer, 100.0)
    clock.time = Time.from_seconds(100.5)
    fill(buffer, 103.0)
    assert buffer.can_transform("odom", "base", 100.0)
    assert buffer.can_transform("odom", "base", 105.0)


def test_the_clock_is_read_once_per_insert_call():
    clock = FakeClock(100.0)
    buffer = Buffer(clock=clock)
    buffer.set_transforms(["a"] * 5, ["b"] * 5, [1, 2, 3, 4, 5], [[0, 0, 0, 0, 0, 0, 1.0]] * 5, "x")
    assert clock.reads == 1
    buffer.set_transform(make_transform("a", "b", stamp=1.0), "x")
    buffer.set_transform_static(make_transform("a", "c"), "x")
    assert clock.reads == 3


def test_a_jump_callback_clears_at_once():
    clock = JumpingClock(100.0)
    buffer = Buffer(clock=clock)
    fill(buffer, 100.0)
    assert len(clock.callbacks) == 1
    clock.jump_to(1.0)
    with pytest.raises(TransformException):
        buffer.lookup_transform("odom", "base", 101.0)
    assert buffer.lookup_transform("map", "odom", 0).transform.translation.x == 1.0


def test_the_jump_callback_holds_the_buffer_weakly():
    import gc
    import weakref

    clock = JumpingClock(100.0)
    buffer = Buffer(clock=clock)
    ref = weakref.ref(buffer)
    del buffer
    gc.collect()
    assert ref() is None
    clock.jump_to(1.0)  # a callback into a collected buffer does nothing


def test_a_clock_without_now_is_refused():
    with pytest.raises(TypeError, match="now"):
        Buffer(clock=object())


def test_a_late_jump_callback_keeps_data_inserted_after_the_jump():
    """The jump is seen twice: by an insertion (which clears) and by the clock's own thread a
    moment later. The late report must not forget what was stored at the new time."""
    clock = JumpingClock(200.0)
    buffer = Buffer(clock=clock)
    buffer.set_transform(make_transform("map", "odom", (1, 0, 0), stamp=200.0), "a")
    clock.time = Time.from_seconds(100.0)  # jumped back; the callback is not called yet
    buffer.set_transform(make_transform("map", "odom", (2, 0, 0), stamp=100.0), "a")
    for fn in clock.callbacks:  # the clock's thread reports the jump late
        fn()
    t = buffer.lookup_transform("map", "odom", Time())
    assert (t.transform.translation.x, t.header.stamp) == (2.0, Time.from_seconds(100.0))

