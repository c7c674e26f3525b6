"""MessageFilter: tf2_ros's filter over Buffer's event-driven waits (tf2-reference §14.2)."""

from __future__ import annotations

import gc
import threading
import time
import tracemalloc

import pytest

from helpers import wait_for
from tf2py import Buffer, Duration, MessageFilter, Time, make_transform
from tf2py.transport.broadcaster import TransformBroadcaster
from tf2py.transport.listener import TransformListener
from tf2py.transport.zmq.core import Core


@pytest.fixture
def core():
    """A bus in this process on free ports (the one test that uses a real listener)."""
    with Core("tcp://127.0.0.1:0") as c:
        yield c


class Header:
    def __init__(self, frame_id, stamp):
        self.frame_id = frame_id
        self.stamp = stamp


class Message:
    """A duck-typed message, as an rclpy message looks to the filter."""

    def __init__(self, frame_id, stamp, name=""):
        self.header = Header(frame_id, stamp)
        self.name = name

    def __repr__(self):
        return f"Message({self.name or self.header.frame_id!r})"


class BuiltinTime:  # builtin_interfaces/msg/Time
    def __init__(self, sec, nanosec):
        self.sec = sec
        self.nanosec = nanosec


class RclpyTime:  # rclpy.time.Time
    def __init__(self, nanoseconds):
        self.nanoseconds = nanoseconds


def put(buffer, parent, child, stamp, static=False):
    ts = make_transform(parent, child, (1, 0, 0), stamp=stamp)
    if static:
        buffer.set_transform_static(ts, "test")
    else:
        buffer.set_transform(ts, "test")


def filter_threads():
    return [t for t in threading.enumerate() if t.name.startswith("tf2py-message-filter")]


class Recorder:
    def __init__(self):
        self.passed = []
        self.dropped = []
        self.times = []
        self.lock = threading.Lock()

    def callback(self, message):
        with self.lock:
            self.passed.append(message)
            self.times.append(time.perf_counter())

    def on_drop(self, message, reason):
        with self.lock:
            self.dropped.append((message, reason))


@pytest.fixture
def rec():
    return Recorder()


def make_filter(buffer, rec, targets="map", queue_size=10, timeout=None):
    f = MessageFilter(buffer, targets, queue_size, rec.callback, timeout=timeout)
    f.register_drop_callback(rec.on_drop)
    return f


@pytest.mark.parametrize("zero", [0, 0.0, Duration(0)])
def test_a_zero_timeout_passes_what_is_there_and_drops_the_rest_at_once(rec, zero):
    # tf2_ros's zero buffer timeout: no wait at all
    buffer = Buffer()
    put(buffer, "map", "laser", 5)
    with make_filter(buffer, rec, timeout=zero) as f:
        there, missing, later = Message("laser", 5.0), Message("camera", 5.0), \
            Message("laser", 6.0)
        for m in (there, missing, later):
            f.add(m)
        assert rec.passed == [there]
        assert rec.dropped == [(missing, "OutTheBack"), (later, "OutTheBack")]
        assert len(f) == 0 and not filter_threads()  # nothing waits, no timer
        put(buffer, "map", "camera", 5)  # too late for the one dropped
        put(buffer, "map", "laser", 6)
        assert rec.passed == [there] and f.stats()["passed"] == 1


def test_message_passes_at_once_when_its_transform_is_there(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 5)
    with make_filter(buffer, rec) as f:
        m = Message("laser", 5.0)
        f.add(m)
        assert rec.passed == [m]  # before add returned
        assert len(f) == 0 and f.stats()["passed"] == 1


def test_waiting_message_is_woken_by_the_insert_that_completes_it(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    with make_filter(buffer, rec) as f:
        m = Message("laser", 2.0)
        threads_before = set(threading.enumerate())
        f.add(m)
        assert rec.passed == [] and len(f) == 1
        # Nothing of ours runs while it waits: no thread was started, none polls.
        assert set(threading.enumerate()) == threads_before
        assert filter_threads() == []
        inserted = []

        def insert():
            inserted.append(time.perf_counter())
            put(buffer, "map", "laser", 3)

        inserter = threading.Thread(target=insert)
        inserter.start()
        inserter.join()
        wait_for(lambda: rec.passed, 5.0)
        assert rec.passed == [m]
        delay = rec.times[0] - inserted[0]
        assert delay < 0.05, f"callback {delay * 1000:.1f} ms after the insert"
        assert buffer.pending_request_count == 0


def test_messages_of_one_frame_pass_in_arrival_order(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    put(buffer, "map", "camera", 1)
    with make_filter(buffer, rec) as f:
        late, early = Message("laser", 3.0, "late"), Message("laser", 2.0, "early")
        f.add(late)
        f.add(early)  # transformable after the insert at 2.5 s, but arrived second
        other = Message("camera", 1.0, "other")
        f.add(other)  # another frame is not held back by laser's line
        assert rec.passed == [other]
        put(buffer, "map", "laser", 2.5)
        assert rec.passed == [other]  # "early" is ready, but waits for "late"
        put(buffer, "map", "laser", 3.5)
        assert rec.passed == [other, late, early]


def test_all_target_frames_are_needed(rec):
    buffer = Buffer()
    put(buffer, "map", "base", 0, static=True)
    with make_filter(buffer, rec, targets=["map", "odom"]) as f:
        assert f.target_frames == ("map", "odom")
        put(buffer, "base", "laser", 1)
        m = Message("laser", 2.0)
        f.add(m)
        put(buffer, "base", "laser", 3)
        assert rec.passed == [] and len(f) == 1  # map is reachable, odom is not yet
        put(buffer, "odom", "map", 0, static=True)  # laser -> base -> map -> odom
        assert rec.passed == [m] and rec.dropped == []


def test_full_queue_drops_the_oldest_first(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    with make_filter(buffer, rec, queue_size=3) as f:
        messages = [Message("laser", 10.0 + i, f"m{i}") for i in range(5)]
        for m in messages:
            f.add(m)
        assert len(f) == 3
        assert rec.dropped == [(messages[0], "QueueFull"), (messages[1], "QueueFull")]
        assert f.stats()["dropped"]["QueueFull"] == 2
        assert buffer.pending_request_count == 3  # the dropped ones' waits were cancelled
        put(buffer, "map", "laser", 20)
        assert rec.passed == messages[2:]


def test_queue_full_keeps_other_frames_moving(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    put(buffer, "map", "camera", 1)
    with make_filter(buffer, rec, queue_size=2) as f:
        blocker = Message("laser", 10.0, "blocker")
        held = Message("laser", 1.0, "held")  # ready, but behind the blocker
        f.add(blocker)
        f.add(held)
        f.add(Message("camera", 5.0, "c"))  # queue full: the blocker goes, "held" passes
        assert rec.dropped == [(blocker, "QueueFull")]
        assert rec.passed == [held]


def test_stamp_older_than_the_cache_is_dropped_out_the_back(rec):
    buffer = Buffer(cache_time=10.0)
    put(buffer, "map", "laser", 100)
    put(buffer, "map", "laser", 101)
    with make_filter(buffer, rec) as f:
        old = Message("laser", 50.0)
        f.add(old)
        assert rec.dropped == [(old, "OutTheBack")]
        assert len(f) == 0 and buffer.pending_request_count == 0


def test_waiting_message_that_falls_out_of_the_cache_is_dropped_out_the_back(rec):
    buffer = Buffer(cache_time=10.0)
    put(buffer, "map", "laser", 10)
    with make_filter(buffer, rec) as f:
        m = Message("laser", 5.0)  # before the data, but data that old may still come
        f.add(m)
        assert rec.dropped == [] and len(f) == 1
        put(buffer, "map", "laser", 20)  # now 5 s is more than 10 s older than the latest
        assert rec.dropped == [(m, "OutTheBack")]
        assert f.stats()["dropped"]["OutTheBack"] == 1


def test_empty_frame_id_is_dropped_at_once_and_a_leading_slash_is_stripped(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    with make_filter(buffer, rec) as f:
        empty = Message("", 1.0)
        f.add(empty)
        assert rec.dropped == [(empty, "EmptyFrameID")]
        slashed = Message("/laser", 1.0)
        f.add(slashed)
        assert rec.passed == [slashed]
        assert f.stats()["received"] == 2


def test_timeout_drops_a_message_that_waited_too_long(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    # (1 s: the second message must not wait that long between add and put, even when loaded)
    with make_filter(buffer, rec, timeout=1.0) as f:
        m = Message("laser", 5.0)
        started = time.monotonic()
        f.add(m)
        assert len(filter_threads()) == 1  # the timer runs only while a message waits
        wait_for(lambda: rec.dropped, 10.0)
        assert time.monotonic() - started >= 1.0
        assert rec.dropped == [(m, "OutTheBack")]
        assert buffer.pending_request_count == 0
        wait_for(lambda: not filter_threads(), 5.0, message="timer thread ends when idle")
        # A message that passes in time is not dropped, and a new wait restarts the timer.
        n = Message("laser", 6.0)
        f.add(n)
        put(buffer, "map", "laser", 7)
        assert rec.passed == [n]
        wait_for(lambda: not filter_threads(), 5.0)


def test_timeout_as_a_duration(rec):
    buffer = Buffer()
    with make_filter(buffer, rec, timeout=Duration.from_seconds(0.05)) as f:
        f.add(Message("laser", 5.0))
        wait_for(lambda: rec.dropped, 5.0)
        assert rec.dropped[0][1] == "OutTheBack"


def test_clear_with_messages_pending_forgets_them_without_callbacks(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    with make_filter(buffer, rec, timeout=30) as f:
        for i in range(3):
            f.add(Message("laser", 5.0 + i))
        assert buffer.pending_request_count == 3
        f.clear()
        assert len(f) == 0 and buffer.pending_request_count == 0
        assert f.stats()["cleared"] == 3
        put(buffer, "map", "laser", 10)
        assert rec.passed == [] and rec.dropped == []
        wait_for(lambda: not filter_threads(), 5.0)
        m = Message("laser", 9.0)
        f.add(m)  # still usable
        assert rec.passed == [m]


def test_close_with_messages_pending_stops_everything(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    f = make_filter(buffer, rec, timeout=30)
    f.add(Message("laser", 5.0))
    assert len(filter_threads()) == 1
    f.close()
    assert filter_threads() == [] and buffer.pending_request_count == 0
    put(buffer, "map", "laser", 10)
    assert rec.passed == [] and rec.dropped == []
    f.close()  # idempotent
    with pytest.raises(RuntimeError, match="after close"):
        f.add(Message("laser", 5.0))


def test_set_target_frames_forgets_the_waiting_messages(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    put(buffer, "odom", "laser2", 1)
    with make_filter(buffer, rec) as f:
        f.add(Message("laser", 5.0))
        f.set_target_frames(["/odom"])
        assert f.target_frames == ("odom",) and len(f) == 0
        m = Message("laser2", 1.0)
        f.add(m)
        assert rec.passed == [m]


def test_stamps_of_rclpy_and_builtin_interfaces_kinds(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    put(buffer, "map", "laser", 3)
    with make_filter(buffer, rec) as f:
        a = Message("laser", BuiltinTime(2, 500_000_000))
        b = Message("laser", RclpyTime(2_000_000_000))
        c = Message("laser", Time(2))
        for m in (a, b, c):
            f.add(m)
        assert rec.passed == [a, b, c]


def test_message_that_becomes_untransformable_before_delivery_is_dropped_unknown(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    with make_filter(buffer, rec) as f:
        first, second = Message("laser", 2.0, "first"), Message("laser", 2.5, "second")
        f.add(first)
        f.add(second)

        def callback(message):
            rec.callback(message)
            buffer.clear()  # the data goes away before "second" is passed on

        f._callback = callback
        put(buffer, "map", "laser", 3)
        assert rec.passed == [first]
        assert rec.dropped == [(second, "Unknown")]


def test_a_raising_callback_is_counted_and_does_not_stop_the_filter_or_the_insert(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    calls = []

    def callback(message):
        calls.append(message)
        raise RuntimeError("user bug")

    with MessageFilter(buffer, "map", 10, callback) as f:
        f.add(Message("laser", 2.0))
        f.add(Message("laser", 2.5))
        put(buffer, "map", "laser", 3)  # must not raise in the inserting thread
        assert len(calls) == 2
        assert f.stats()["callback_errors"] == 2


def test_bad_input_is_refused_with_a_clear_error(rec):
    buffer = Buffer()
    with pytest.raises(TypeError, match="Buffer"):
        MessageFilter(object(), "map", 10, rec.callback)
    with pytest.raises(ValueError, match="at least one target"):
        MessageFilter(buffer, [], 10, rec.callback)
    with pytest.raises(ValueError, match="empty"):
        MessageFilter(buffer, "", 10, rec.callback)
    with pytest.raises(TypeError, match="strings"):
        MessageFilter(buffer, ["map", 3], 10, rec.callback)
    with pytest.raises(ValueError, match="queue_size"):
        MessageFilter(buffer, "map", -1, rec.callback)
    with pytest.raises(TypeError, match="callable"):
        MessageFilter(buffer, "map", 10, "not a function")
    with pytest.raises(ValueError, match="timeout"):
        MessageFilter(buffer, "map", 10, rec.callback, timeout=-0.5)
    with make_filter(buffer, rec) as f:
        with pytest.raises(TypeError, match="header"):
            f.add(object())
        with pytest.raises(TypeError, match="frame_id"):
            f.add(Message(7, 1.0))
        with pytest.raises(TypeError, match="stamp"):
            f.add(Message("laser", "yesterday"))
        with pytest.raises(TypeError, match="callable"):
            f.register_drop_callback(42)
        assert f.stats()["received"] == 0 and len(f) == 0


def test_woken_by_a_listener_on_a_real_bus(core, rec):
    buffer = Buffer()
    with TransformListener(buffer, core.address), TransformBroadcaster(core.address) as b, \
            make_filter(buffer, rec) as f:
        m = Message("laser", 5.0)
        f.add(m)

        def sent():
            b.send_transform(make_transform("map", "laser", stamp=6.0))
            b.send_transform(make_transform("map", "laser", stamp=4.0))
            return rec.passed

        wait_for(sent, 10.0, interval=0.02)
        assert rec.passed == [m]


def test_ten_thousand_messages_pass_without_growth():
    """(The rate itself is measured in bench/times.py, not timed here.)"""
    buffer = Buffer()
    put(buffer, "map", "laser", 0.0)
    n = 10_000
    step = 0.01  # data every 10 ms (100 Hz); 100 messages wait for each insert
    counts = {"passed": 0, "dropped": 0}

    def passed(message):
        counts["passed"] += 1

    def dropped(message, reason):
        counts["dropped"] += 1

    f = MessageFilter(buffer, "map", 1000, passed)
    f.register_drop_callback(dropped)
    peak = 0
    tracemalloc.start()
    try:
        for i in range(n):
            stamp = (i // 100 + 1) * step - 0.001 * (i % 3 == 0)
            f.add(Message("laser", stamp))
            if i % 100 == 99:
                put(buffer, "map", "laser", (i // 100 + 1) * step)
                peak = max(peak, len(f))
            if i == 1999:
                gc.collect()
                baseline = tracemalloc.get_traced_memory()[0]
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
        f.close()
    assert counts == {"passed": n, "dropped": 0}
    assert peak == 0  # each insert passed the 100 messages that waited for it
    assert buffer.pending_request_count == 0
    # 8000 more messages went through; the buffer's cache holds 80 more samples (a few KB).
    # Nothing of the filter may grow with the count of messages.
    assert grown < 100_000, f"{grown} bytes kept after 8000 messages"


def test_a_drop_does_not_wait_for_older_messages_of_its_frame(rec):
    buffer = Buffer(cache_time=10.0)
    put(buffer, "map", "laser", 19)
    put(buffer, "map", "laser", 20)
    with make_filter(buffer, rec) as f:
        waiting = Message("laser", 30.0, "waiting")
        f.add(waiting)
        too_old = Message("laser", 1.0, "too old")
        f.add(too_old)
        assert rec.dropped == [(too_old, "OutTheBack")] and len(f) == 1
        put(buffer, "map", "laser", 31)
        assert rec.passed == [waiting]


def test_tolerance_also_waits_for_the_stamp_plus_tolerance(rec):
    buffer = Buffer()
    put(buffer, "map", "laser", 1)
    with make_filter(buffer, rec) as f:
        f.set_tolerance(0.5)
        m = Message("laser", 2.0)
        f.add(m)
        put(buffer, "map", "laser", 2.2)  # 2.0 is possible, 2.5 not yet
        assert rec.passed == [] and buffer.pending_request_count == 1
        put(buffer, "map", "laser", 2.6)
        assert rec.passed == [m]
        with pytest.raises(ValueError, match="tolerance"):
            f.set_tolerance(-1)
