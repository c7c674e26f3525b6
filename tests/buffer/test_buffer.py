"""Buffer: BufferCore's calls under one lock, transform() and transform_points()."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from tf2py.buffer.buffer import Buffer
from tf2py.buffer.core import BufferCore
from tf2py.buffer.exceptions import (
    ForwardExtrapolationException,
    LookupException,
    TransformException,
)
from tf2py.buffer.messages import (
    Header,
    Point,
    PointStamped,
    Pose,
    PoseStamped,
    Quaternion,
    Vector3,
    Vector3Stamped,
    make_transform,
)
from tf2py.buffer.time import Time

S = math.sqrt(0.5)


@pytest.fixture
def buffer():
    """map -> base (90° yaw, moving along x from 1 at t=1 s to 3 at t=3 s) -> sensor
    (static: 0.5 m up, rolled 180° about x)."""
    b = Buffer()
    for stamp, x in ((1, 1.0), (2, 2.0), (3, 3.0)):
        b.set_transform(
            make_transform("map", "base", (x, 0.0, 0.0), (0.0, 0.0, S, S), stamp=stamp), "test"
        )
    b.set_transform_static(
        make_transform("base", "sensor", (0.0, 0.0, 0.5), (1.0, 0.0, 0.0, 0.0)), "test"
    )
    return b


def test_buffer_is_a_buffer_core():
    assert isinstance(Buffer(), BufferCore)


def test_lookup_without_timeout_matches_buffer_core(buffer):
    core = BufferCore()
    for t in buffer_transforms():
        core.set_transform(t, "test")
    core.set_transform_static(
        make_transform("base", "sensor", (0.0, 0.0, 0.5), (1.0, 0.0, 0.0, 0.0)), "test"
    )
    for time in (0, 1.5, 3):
        a = buffer.lookup_transform("map", "sensor", time)
        b = core.lookup_transform("map", "sensor", time)
        np.testing.assert_allclose(a.transform.as_matrix(), b.transform.as_matrix(), atol=1e-12)
        assert a.header == b.header


def buffer_transforms():
    return [
        make_transform("map", "base", (x, 0.0, 0.0), (0.0, 0.0, S, S), stamp=stamp)
        for stamp, x in ((1, 1.0), (2, 2.0), (3, 3.0))
    ]


def test_lookup_without_timeout_raises_the_core_message_unchanged(buffer):
    with pytest.raises(ForwardExtrapolationException) as info:
        buffer.lookup_transform("map", "base", 5)
    assert "canTransform returned after" not in str(info.value)
    assert "extrapolation into the future" in str(info.value)


def test_can_transform_without_timeout_is_a_plain_check(buffer):
    assert buffer.can_transform("map", "sensor", 2)
    assert not buffer.can_transform("map", "sensor", 5)
    assert not buffer.can_transform("map", "nowhere", 2)


# Reads are atomic in the kernel (its own lock): they never wait for the buffer's lock.
READ_CALLS = {
    "lookup_transform": lambda b: b.lookup_transform("map", "base", 2),
    "lookup_transform_full": lambda b: b.lookup_transform_full("map", 2, "base", 2, "map"),
    "can_transform": lambda b: b.can_transform("map", "base", 2),
    "can_transform_full": lambda b: b.can_transform_full("map", 2, "base", 2, "map"),
    "get_latest_common_time": lambda b: b.get_latest_common_time("map", "base"),
    "get_parent": lambda b: b.get_parent("base", 2),
    "chain": lambda b: b.chain("map", 2, "base", 2, "map"),
    "all_frames_as_yaml": lambda b: b.all_frames_as_yaml(),
    "all_frames_as_string": lambda b: b.all_frames_as_string(),
    "get_frames": lambda b: b.get_frames(),
    "frames_info": lambda b: b.frames_info(),
    "lookup_transforms": lambda b: b.lookup_transforms("map", "base", np.array([1.5, 2.5])),
}

# Inserts that go through the buffer's index of requests, and clear(), wait for its lock.
LOCKED_CALLS = {
    "clear": lambda b: b.clear(),
    "set_transform_static": lambda b: b.set_transform_static(make_transform("map", "y"), "t"),
    "set_transform_values": lambda b: b.set_transform_values(
        "map", "z", 3_000_000_000, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, "t"
    ),
    "set_transforms": lambda b: b.set_transforms(
        ["map"], ["w"], np.array([3_000_000_000]), np.array([[0, 0, 0, 0, 0, 0, 1.0]]), "t"
    ),
}


@pytest.mark.parametrize("name", sorted(LOCKED_CALLS))
def test_public_call_waits_for_the_lock(buffer, name):
    call = LOCKED_CALLS[name]
    done = threading.Event()
    errors = []

    def run():
        try:
            call(buffer)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        done.set()

    with buffer._lock:
        thread = threading.Thread(target=run, name=f"locked-{name}", daemon=True)
        thread.start()
        # While we hold the lock the call cannot finish (no timing bound can fail this wrongly).
        assert not done.wait(0.2)
    assert done.wait(10.0)
    thread.join(10.0)
    assert errors == []


@pytest.mark.parametrize("name", sorted(READ_CALLS))
def test_read_call_does_not_wait_for_the_buffer_lock(buffer, name):
    done = threading.Event()

    def run():
        READ_CALLS[name](buffer)
        done.set()

    with buffer._lock:
        thread = threading.Thread(target=run, name=f"read-{name}", daemon=True)
        thread.start()
        assert done.wait(30.0)
    thread.join(10.0)


# -- transform() -------------------------------------------------------------------------


def test_transform_point_is_rotated_and_translated(buffer):
    # At t=2: base is at (2, 0, 0) in map, yawed 90°: base's x axis is map's y axis.
    point = PointStamped(Header(Time(2), "base"), Point(1.0, 0.0, 0.0))
    out = buffer.transform(point, "map")
    assert type(out) is PointStamped
    assert (out.point.x, out.point.y, out.point.z) == pytest.approx((2.0, 1.0, 0.0), abs=1e-9)


def test_transform_result_header_is_target_frame_and_lookup_stamp(buffer):
    out = buffer.transform(PointStamped(Header(Time(2), "base")), "map")
    assert out.header.frame_id == "map"
    assert out.header.stamp == Time(2)


def test_transform_at_time_zero_carries_the_resolved_latest_stamp(buffer):
    out = buffer.transform(PointStamped(Header(Time(), "base")), "map")
    assert out.header.stamp == Time(3)
    assert out.point.x == pytest.approx(3.0)


def test_transform_point_through_static_and_dynamic_links(buffer):
    # sensor is 0.5 m above base, rolled 180°: sensor (0, 1, 1) is base (0, -1, -0.5),
    # which at t=1.5 (base at x=1.5, yaw 90°) is map (1.5 + 1, 0, -0.5).
    point = PointStamped(Header(Time.from_seconds(1.5), "sensor"), Point(0.0, 1.0, 1.0))
    out = buffer.transform(point, "map")
    assert (out.point.x, out.point.y, out.point.z) == pytest.approx((2.5, 0.0, -0.5), abs=1e-9)


def test_transform_vector_ignores_translation(buffer):
    vector = Vector3Stamped(Header(Time(3), "base"), Vector3(1.0, 0.0, 0.0))
    out = buffer.transform(vector, "map")
    assert type(out) is Vector3Stamped
    assert (out.vector.x, out.vector.y, out.vector.z) == pytest.approx((0.0, 1.0, 0.0), abs=1e-9)


def test_transform_pose_composes_orientation(buffer):
    pose = PoseStamped(Header(Time(2), "base"), Pose(Point(0.0, 1.0, 0.0), Quaternion()))
    out = buffer.transform(pose, "map")
    assert type(out) is PoseStamped
    p, q = out.pose.position, out.pose.orientation
    assert (p.x, p.y, p.z) == pytest.approx((1.0, 0.0, 0.0), abs=1e-9)
    assert abs(abs(q.z) - S) < 1e-9 and abs(abs(q.w) - S) < 1e-9


def test_transform_of_transform_stamped_maps_its_child_into_target(buffer):
    base_from_tool = make_transform("base", "tool", (1.0, 0.0, 0.0), stamp=2)
    out = buffer.transform(base_from_tool, "map")
    assert out.header.frame_id == "map"
    assert out.child_frame_id == "tool"
    t = out.transform.translation
    assert (t.x, t.y, t.z) == pytest.approx((2.0, 1.0, 0.0), abs=1e-9)


def test_transform_does_not_modify_its_input(buffer):
    point = PointStamped(Header(Time(2), "base"), Point(1.0, 0.0, 0.0))
    buffer.transform(point, "map")
    assert point == PointStamped(Header(Time(2), "base"), Point(1.0, 0.0, 0.0))


def test_transform_of_unsupported_type_raises_type_error_without_waiting(buffer):
    with pytest.raises(TypeError, match=r"Point\b.*PointStamped.*Vector3Stamped.*PoseStamped"):
        buffer.transform(Point(1.0, 2.0, 3.0), "map", timeout=60.0)


def test_transform_to_unknown_frame_raises_lookup_exception(buffer):
    with pytest.raises(LookupException):
        buffer.transform(PointStamped(Header(Time(2), "base")), "nowhere")


# -- transform_points() ------------------------------------------------------------------


def test_transform_points_matches_per_point_transform(buffer):
    rng = np.random.default_rng(3)
    points = rng.uniform(-5, 5, size=(20, 3))
    stamp = Time.from_seconds(2.25)
    out = buffer.transform_points(points, "map", "sensor", stamp)
    assert out.shape == (20, 3)
    for row, p in zip(out, points):
        single = buffer.transform(PointStamped(Header(stamp, "sensor"), Point(*p)), "map")
        np.testing.assert_allclose(row, tuple(single.point), atol=1e-9)


def test_transform_points_hand_computed(buffer):
    out = buffer.transform_points([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], "map", "base", 3)
    np.testing.assert_allclose(out, [[3.0, 1.0, 0.0], [3.0, 0.0, 0.0]], atol=1e-9)


@pytest.mark.parametrize("shape", [(3,), (5, 2), (5, 4), (1, 1, 3)])
def test_transform_points_wrong_shape_raises_value_error_without_waiting(buffer, shape):
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        buffer.transform_points(np.zeros(shape), "map", "base", 2, timeout=60.0)


def test_transform_points_lookup_error_is_the_tf2_exception(buffer):
    with pytest.raises(ForwardExtrapolationException):
        buffer.transform_points(np.zeros((4, 3)), "map", "base", 9)


# -- clear() -----------------------------------------------------------------------------


def test_clear_forgets_dynamic_data_and_keeps_static(buffer):
    buffer.clear()
    assert not buffer.can_transform("map", "base", 2)
    assert buffer.can_transform("base", "sensor", 123)


def test_clear_accepts_older_stamps_again(buffer):
    # Backward time jump (a bag that loops): data far older than the window is refused
    # until clear() is called.
    buffer.set_transform(make_transform("map", "base", stamp=100), "test")
    assert buffer.set_transform(make_transform("map", "base", stamp=1.5), "test") is False
    buffer.clear()
    assert buffer.set_transform(make_transform("map", "base", stamp=1.5), "test") is True


def test_insertion_errors_propagate_and_leave_the_buffer_usable(buffer):
    with pytest.raises(TransformException):
        buffer.set_transform(make_transform("map", ""), "test")
    assert buffer.can_transform("map", "base", 2)
    # the lock was released: another thread can use the buffer
    result = []
    thread = threading.Thread(target=lambda: result.append(buffer.get_frames()), daemon=True)
    thread.start()
    thread.join(10.0)
    assert result and "base" in result[0]
