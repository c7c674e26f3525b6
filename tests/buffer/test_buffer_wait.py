"""Buffer lookups and can_transform with a timeout: woken by the insertion that makes them
possible, the underlying tf2 exception (with the wait in its message) when they run out."""

from __future__ import annotations

import threading
import time as wall

import pytest

from helpers import wait_for
from tf2py.buffer.buffer import Buffer
from tf2py.buffer.exceptions import (
    ConnectivityException,
    ExtrapolationException,
    ForwardExtrapolationException,
    InvalidArgumentException,
    LookupException,
)
from tf2py.buffer.messages import Header, Point, PointStamped, make_transform
from tf2py.buffer.time import Duration, Time

LONG = 30.0  # a timeout no passing test comes near
QUICK = 10.0  # generous bound for "returned well before the timeout"


def insert_when_waiting(buffer, *transforms, waiters=1, static=False):
    """A writer thread that inserts once ``waiters`` threads are waiting in the buffer."""

    def run():
        wait_for(lambda: buffer._index.waiting >= waiters, timeout=QUICK, message="reader waiting")
        for t in transforms:
            if static:
                buffer.set_transform_static(t, "writer")
            else:
                buffer.set_transform(t, "writer")

    thread = threading.Thread(target=run, name="test-writer", daemon=True)
    thread.start()
    return thread


@pytest.fixture
def buffer():
    b = Buffer()
    b.set_transform(make_transform("map", "odom", (1.0, 0.0, 0.0), stamp=1), "test")
    b.set_transform(make_transform("map", "odom", (2.0, 0.0, 0.0), stamp=2), "test")
    return b


def test_lookup_wait_is_woken_by_the_insertion(buffer):
    writer = insert_when_waiting(buffer, make_transform("odom", "base", (0.0, 1.0, 0.0), stamp=2))
    start = wall.monotonic()
    result = buffer.lookup_transform("map", "base", 2, timeout=LONG)
    assert wall.monotonic() - start < QUICK
    assert (result.transform.translation.x, result.transform.translation.y) == (2.0, 1.0)
    writer.join(QUICK)


def test_lookup_wait_for_newer_data_is_woken_by_the_insertion(buffer):
    writer = insert_when_waiting(buffer, make_transform("map", "odom", (3.0, 0.0, 0.0), stamp=3))
    result = buffer.lookup_transform("map", "odom", 3, timeout=LONG)
    assert result.transform.translation.x == 3.0
    writer.join(QUICK)


def test_lookup_wait_keeps_waiting_through_unrelated_insertions(buffer):
    # Unrelated data wakes the waiter, which re-checks and waits on; the right data ends it.
    def run():
        wait_for(lambda: buffer._index.waiting >= 1, timeout=QUICK, message="reader waiting")
        buffer.set_transform(make_transform("map", "other", stamp=5), "writer")
        buffer.set_transform(make_transform("odom", "base", stamp=5), "writer")  # too new
        wait_for(lambda: buffer._index.waiting >= 1, timeout=QUICK, message="reader waiting again")
        buffer.set_transform(make_transform("odom", "base", stamp=1), "writer")

    writer = threading.Thread(target=run, name="test-writer", daemon=True)
    writer.start()
    start = wall.monotonic()
    result = buffer.lookup_transform("map", "base", 2, timeout=LONG)
    assert wall.monotonic() - start < QUICK
    assert result.header.stamp == Time(2)
    writer.join(QUICK)


def test_lookup_wait_times_out_with_lookup_exception_and_the_wait_in_the_message(buffer):
    start = wall.monotonic()
    with pytest.raises(LookupException) as info:
        buffer.lookup_transform("map", "base", 2, timeout=0.2)
    assert wall.monotonic() - start >= 0.19
    message = str(info.value)
    assert '"base" passed to lookupTransform argument source_frame does not exist' in message
    assert "canTransform returned after" in message
    assert "timeout was 0.2." in message


def test_a_timed_out_wait_keeps_the_did_you_mean_hint_readable():
    buffer = Buffer()
    buffer.set_transform(make_transform("map", "base_link", stamp=1.0), "test")
    with pytest.raises(LookupException) as info:
        buffer.lookup_transform("map", "base_lnk", 1.0, timeout=0.05)
    message = str(info.value)
    assert "Did you mean 'base_link'? canTransform returned after " in message, message
    assert "?." not in message


def test_lookup_wait_times_out_with_forward_extrapolation(buffer):
    with pytest.raises(ForwardExtrapolationException) as info:
        buffer.lookup_transform("map", "odom", 5, timeout=0.1)
    message = str(info.value)
    assert "extrapolation into the future" in message
    assert "timeout was 0.1." in message


def test_lookup_wait_times_out_with_connectivity_exception(buffer):
    buffer.set_transform(make_transform("island", "rock", stamp=2), "test")
    with pytest.raises(ConnectivityException, match="timeout was 0.1"):
        buffer.lookup_transform("map", "rock", 2, timeout=0.1)


def test_lookup_wait_reports_the_elapsed_time(buffer):
    with pytest.raises(ExtrapolationException) as info:
        buffer.lookup_transform("map", "odom", 5, timeout=0.15)
    elapsed = float(str(info.value).split("canTransform returned after ")[1].split(" ")[0])
    assert 0.14 <= elapsed < QUICK


def test_lookup_timeout_accepts_a_duration(buffer):
    with pytest.raises(ForwardExtrapolationException, match="timeout was 0.05"):
        buffer.lookup_transform("map", "odom", 5, timeout=Duration(0, 50_000_000))


def test_lookup_with_empty_frame_raises_invalid_argument_at_once(buffer):
    start = wall.monotonic()
    with pytest.raises(InvalidArgumentException) as info:
        buffer.lookup_transform("map", "", 2, timeout=LONG)
    assert wall.monotonic() - start < QUICK
    assert "canTransform returned after" not in str(info.value)


def test_lookup_with_leading_slash_raises_invalid_argument_at_once(buffer):
    start = wall.monotonic()
    with pytest.raises(InvalidArgumentException, match="cannot start with a '/'"):
        buffer.lookup_transform("/map", "odom", 2, timeout=LONG)
    assert wall.monotonic() - start < QUICK


def test_lookup_full_with_invalid_fixed_frame_raises_at_once(buffer):
    start = wall.monotonic()
    with pytest.raises(InvalidArgumentException):
        buffer.lookup_transform_full("map", 2, "odom", 1, "", timeout=LONG)
    assert wall.monotonic() - start < QUICK


def test_time_zero_is_re_resolved_at_every_check(buffer):
    # odom -> base arrives at 1.5 s: the latest common time of map..base is then 1.5 s
    # (not the 2 s that map..odom alone had when the wait began).
    writer = insert_when_waiting(buffer, make_transform("odom", "base", (0, 1.0, 0), stamp=1.5))
    result = buffer.lookup_transform("map", "base", Time(), timeout=LONG)
    assert result.header.stamp == Time.from_seconds(1.5)
    assert result.transform.translation.x == pytest.approx(1.5)
    writer.join(QUICK)


def test_time_zero_wait_ends_when_the_chain_becomes_known(buffer):
    writer = insert_when_waiting(
        buffer, make_transform("odom", "base", stamp=0), static=True
    )
    result = buffer.lookup_transform("map", "base", 0, timeout=LONG)
    assert result.header.stamp == Time(2)  # static links are ignored by time 0
    writer.join(QUICK)


def test_lookup_full_wait_is_woken_by_the_insertion(buffer):
    # base moves +1 in y from 1 s to 2 s: a point fixed in odom appears 1 m further back.
    writer = insert_when_waiting(
        buffer,
        make_transform("odom", "base", (0.0, 1.0, 0.0), stamp=1),
        make_transform("odom", "base", (0.0, 2.0, 0.0), stamp=2),
    )
    result = buffer.lookup_transform_full("base", 2, "base", 1, "odom", timeout=LONG)
    assert result.header.frame_id == "base"
    assert result.transform.translation.y == pytest.approx(-1.0)
    writer.join(QUICK)


def test_can_transform_wait_is_woken_by_the_insertion(buffer):
    writer = insert_when_waiting(buffer, make_transform("odom", "base", stamp=2))
    start = wall.monotonic()
    assert buffer.can_transform("map", "base", 2, timeout=LONG) is True
    assert wall.monotonic() - start < QUICK
    writer.join(QUICK)


def test_can_transform_wait_returns_false_after_the_timeout(buffer):
    start = wall.monotonic()
    assert buffer.can_transform("map", "base", 2, timeout=0.2) is False
    assert wall.monotonic() - start >= 0.19


def test_can_transform_with_invalid_frame_returns_false_at_once(buffer):
    start = wall.monotonic()
    assert buffer.can_transform("map", "/odom", 2, timeout=LONG) is False
    assert buffer.can_transform("", "odom", 2, timeout=LONG) is False
    assert wall.monotonic() - start < QUICK


def test_can_transform_full_wait_is_woken_by_the_insertion(buffer):
    writer = insert_when_waiting(buffer, make_transform("odom", "base", stamp=1))
    assert buffer.can_transform_full("base", 1, "map", 2, "map", timeout=LONG) is True
    writer.join(QUICK)


def test_can_transform_full_with_invalid_fixed_frame_returns_false_at_once(buffer):
    start = wall.monotonic()
    assert buffer.can_transform_full("map", 1, "odom", 2, "/x", timeout=LONG) is False
    assert wall.monotonic() - start < QUICK


def test_transform_waits_for_its_data(buffer):
    writer = insert_when_waiting(buffer, make_transform("odom", "base", (0.0, 1.0, 0.0), stamp=2))
    point = PointStamped(Header(Time(2), "base"), Point(1.0, 0.0, 0.0))
    out = buffer.transform(point, "map", timeout=LONG)
    assert (out.point.x, out.point.y) == pytest.approx((3.0, 1.0))
    writer.join(QUICK)


def test_transform_points_waits_for_its_data(buffer):
    writer = insert_when_waiting(buffer, make_transform("odom", "base", (0.0, 1.0, 0.0), stamp=2))
    out = buffer.transform_points([[0.0, 0.0, 0.0]], "map", "base", 2, timeout=LONG)
    assert out.tolist() == [[2.0, 1.0, 0.0]]
    writer.join(QUICK)


def test_many_waiters_are_all_woken_by_one_insertion(buffer):
    results = []
    lock = threading.Lock()

    def reader():
        t = buffer.lookup_transform("map", "base", 2, timeout=LONG)
        with lock:
            results.append(t.child_frame_id)

    readers = [threading.Thread(target=reader, daemon=True, name=f"r{i}") for i in range(5)]
    for r in readers:
        r.start()
    writer = insert_when_waiting(buffer, make_transform("odom", "base", stamp=2), waiters=5)
    for r in readers:
        r.join(QUICK)
    writer.join(QUICK)
    assert results == ["base"] * 5


def test_zero_and_none_timeouts_do_not_wait(buffer):
    for timeout in (0, 0.0, None, Duration(), -1.0):
        start = wall.monotonic()
        with pytest.raises(LookupException) as info:
            buffer.lookup_transform("map", "base", 2, timeout=timeout)
        assert wall.monotonic() - start < QUICK
        assert "canTransform returned after" not in str(info.value)
