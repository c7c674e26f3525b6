"""lookup_velocity: tf2's BufferCore::lookupVelocity, field for field (tf2-reference §14.1).

Known answers are worked out by hand in each test; the random-trajectory test recomputes
tf2's formula independently in numpy from plain lookups."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tf2py
from tf2py import (
    BackwardExtrapolationException,
    Buffer,
    ExtrapolationException,
    LookupException,
    Time,
    Twist,
    Vector3,
    VelocityStamped,
    make_transform,
)
from tf2py.buffer.core import BufferCore


def put(core, parent, child, t, xyz=(0, 0, 0), rpy=(0, 0, 0), static=False):
    ts = make_transform(parent, child, xyz, rpy=rpy, stamp=t)
    if static:
        core.set_transform_static(ts, "test")
    else:
        core.set_transform(ts, "test")


def linear(v):
    return (v.velocity.linear.x, v.velocity.linear.y, v.velocity.linear.z)


def angular(v):
    return (v.velocity.angular.x, v.velocity.angular.y, v.velocity.angular.z)


def close(a, b, tol=1e-9):
    return all(abs(x - y) <= tol for x, y in zip(a, b))


@pytest.fixture
def core():
    return BufferCore()


def test_straight_line_gives_its_speed_and_the_message_fields(core):
    for i in range(11):  # x = 3 t, t = 0..5 s
        put(core, "odom", "base", i * 0.5, (1.5 * i, 0, 0))
    v = core.lookup_velocity("base", "odom", 2.0, 1.0)
    assert isinstance(v, VelocityStamped)
    assert close(linear(v), (3.0, 0.0, 0.0))
    assert close(angular(v), (0.0, 0.0, 0.0))
    assert v.header.stamp == Time(2)  # start + interval / 2
    assert v.header.frame_id == "odom"  # reference_frame defaults to observation_frame
    assert v.body_frame_id == "base"
    assert v.reference_frame_id == ""  # tf2 leaves it empty


def test_pure_rotation_about_z(core):
    for i in range(41):  # yaw = 0.5 rad/s, about the frame's own origin
        put(core, "odom", "base", i * 0.1, (0, 0, 0), rpy=(0, 0, 0.05 * i))
    v = core.lookup_velocity("base", "odom", 2.0, 0.4)
    assert close(linear(v), (0.0, 0.0, 0.0))
    assert close(angular(v), (0.0, 0.0, 0.5))


def test_rotation_with_an_offset_reference_point(core):
    # base spins at 1 rad/s about z at the odom origin; the point (1, 0, 0) of base moves on a
    # unit circle. At t = 1 s (yaw 1 rad) it is at (cos 1, sin 1, 0), its velocity
    # w x r = (-sin 1, cos 1, 0).
    for i in range(31):
        put(core, "odom", "base", i * 0.1, rpy=(0, 0, 0.1 * i))
    v = core.lookup_velocity("base", "odom", 1.0, 0.2, reference_point=(1, 0, 0))
    assert close(angular(v), (0.0, 0.0, 1.0))
    assert close(linear(v), (-math.sin(1.0), math.cos(1.0), 0.0))
    # The same point named in another frame: odom's (cos 1, sin 1, 0) at t = 1.
    w = core.lookup_velocity("base", "odom", 1.0, 0.2, "odom",
                             (math.cos(1.0), math.sin(1.0), 0.0), "odom")
    assert close(linear(w), linear(v))


def test_reference_frame_rotates_and_moves_the_twist(core):
    # base moves along x at 2 m/s in odom; expressed in "viewer" (rotated +90 deg about z from
    # odom, and 5 m away), the twist rotates: (2, 0, 0) in odom reads... tf2 expresses it with
    # R = viewer <- base at `time`: linear = R.basis * v + R.origin x angular (angular 0).
    put(core, "viewer", "odom", 0, (5, 0, 0), rpy=(0, 0, math.pi / 2), static=True)
    for i in range(21):
        put(core, "odom", "base", i * 0.1, (0.2 * i, 0, 0))
    v = core.lookup_velocity("base", "odom", 1.0, 0.4, reference_frame="viewer")
    # viewer <- base has the same rotation as viewer <- odom (base is not rotated): the
    # inverse rotation of +90 deg maps odom's x to viewer's -y... R.basis is the rotation of
    # the transform viewer <- base, which maps base's x axis to (cos 90, sin 90) = +y.
    assert close(linear(v), (0.0, 2.0, 0.0))
    assert v.header.frame_id == "viewer"


def test_three_frame_chain(core):
    # map -> odom static (5, 5, 0); odom -> base x = 2 t; base -> laser static 1 m ahead. The
    # laser moves at 2 m/s along map's x.
    put(core, "map", "odom", 0, (5, 5, 0), static=True)
    put(core, "base", "laser", 0, (1, 0, 0), static=True)
    for i in range(21):
        put(core, "odom", "base", i * 0.1, (0.2 * i, 0, 0))
    v = core.lookup_velocity("laser", "map", 1.0, 0.4)
    assert close(linear(v), (2.0, 0.0, 0.0))
    assert close(angular(v), (0.0, 0.0, 0.0))
    assert v.header.frame_id == "map" and v.body_frame_id == "laser"


def test_twist_is_rotated_by_reference_from_tracking_as_tf2_does(core):
    # tf2 differences the origins in observation_frame (map: (0, 2, 0) m/s here, odom being
    # turned +90 deg in map), then multiplies by the rotation of reference_frame <- tracking
    # (also +90 deg, since base is not turned in odom): (0, 2, 0) becomes (-2, 0, 0). ROS 1's
    # lookupTwist did the same (ros/geometry#43); we keep tf2's values.
    put(core, "map", "odom", 0, (5, 5, 0), rpy=(0, 0, math.pi / 2), static=True)
    for i in range(21):
        put(core, "odom", "base", i * 0.1, (0.2 * i, 0, 0))
    v = core.lookup_velocity("base", "map", 1.0, 0.4)
    assert close(linear(v), (-2.0, 0.0, 0.0))


def test_rotating_chain_with_an_offset_child_follows_tf2s_steps(core):
    # base spins at 1 rad/s about the odom origin; laser sits 2 m ahead of base (static).
    # tf2's steps at t = 0.5 s, interval 0.2 s, worked by hand:
    # - the origins' chord over [0.4, 0.6] s: speed 2 * 2 sin(0.1) / 0.2 along the tangent at
    #   yaw 0.5, i.e. v = speed (-sin 0.5, cos 0.5, 0); angular (0, 0, 1);
    # - R = odom <- laser at 0.5 s: rotation 0.5 rad, origin 2 (cos 0.5, sin 0.5, 0);
    #   linear = R v + R.origin x w = speed (-sin 1, cos 1, 0) + 2 (sin 0.5, -cos 0.5, 0);
    # - the reference point is laser's origin itself: no correction.
    put(core, "base", "laser", 0, (2, 0, 0), static=True)
    for i in range(21):
        put(core, "odom", "base", i * 0.1, rpy=(0, 0, 0.1 * i))
    v = core.lookup_velocity("laser", "odom", 0.5, 0.2)
    assert close(angular(v), (0.0, 0.0, 1.0))
    speed = 2 * 2 * math.sin(0.1) / 0.2
    expected = (-speed * math.sin(1.0) + 2 * math.sin(0.5),
                speed * math.cos(1.0) - 2 * math.cos(0.5), 0.0)
    assert close(linear(v), expected)


def test_interval_is_cut_at_the_end_of_the_data(core):
    # x = t^2 sampled every 0.5 s up to 10 s. At time 10 with a 2 s interval: end = min(11, 10)
    # = 10, start = max(2.00001, 10) - 2 = 8, dt = 2: (100 - 64) / 2 = 18 m/s, stamped
    # start + interval / 2 = 9 s.
    for i in range(21):
        t = i * 0.5
        put(core, "odom", "base", t, (t * t, 0, 0))
    v = core.lookup_velocity("base", "odom", 10.0, 2.0)
    assert close(linear(v), (18.0, 0.0, 0.0))
    assert v.header.stamp == Time(9)
    # Past the data the window stays at the end, but the reference lookup at `time` itself
    # extrapolates, as in tf2.
    with pytest.raises(tf2py.ForwardExtrapolationException):
        core.lookup_velocity("base", "odom", 50.0, 2.0)


def test_interval_is_cut_near_time_zero_and_keeps_the_full_interval_in_the_stamp(core):
    # x = 3 t from 0 s. At time 0.5 with a 2 s interval: end = 1.5, start = max(2.00001, 1.5)
    # - 2 = 0.00001 s, dt = 1.49999 s; the stamp is start + 2 / 2 = 1.00001 s (tf2 adds half
    # the full interval even though the window was cut).
    for i in range(11):
        put(core, "odom", "base", i * 0.5, (1.5 * i, 0, 0))
    v = core.lookup_velocity("base", "odom", 0.5, 2.0)
    assert close(linear(v), (3.0, 0.0, 0.0))
    assert v.header.stamp == Time(1, 10_000)


def test_window_before_the_first_sample_raises_backward_extrapolation(core):
    for i in range(11):
        put(core, "odom", "base", 100 + i * 0.5, (1.5 * i, 0, 0))
    with pytest.raises(BackwardExtrapolationException):
        core.lookup_velocity("base", "odom", 100.0, 1.0)


def test_time_zero_is_zero_seconds_as_in_tf2(core):
    # tf2_py's own test: x = 3 t at 0..4 s, time 0, interval 4.001 s: the window is
    # [0.00001, 2.0005] s, the stamp 0.00001 + 2.0005 s.
    for t in range(5):
        put(core, "PARENT", "THISFRAME", t, (3 * t, 0, 0))
    v = core.lookup_velocity("THISFRAME", "PARENT", Time(), 4.001)
    assert close(linear(v), (3.0, 0.0, 0.0))
    assert v.header.stamp == Time(2, 510_000)
    full = core.lookup_velocity("THISFRAME", "PARENT", 0, 4.001, "PARENT", (0, 0, 0),
                                "THISFRAME")
    assert full == v


def test_time_zero_far_from_the_epoch_extrapolates_as_tf2_does(core):
    # tf2 does not resolve time 0 to the latest data here: the window sits near 0 s.
    for i in range(11):
        put(core, "odom", "base", 1000 + i, (i, 0, 0))
    with pytest.raises(ExtrapolationException):
        core.lookup_velocity("base", "odom", 0, 1.0)


def test_static_chain_has_zero_velocity(core):
    put(core, "odom", "base", 0, (1, 2, 3), rpy=(0.1, 0.2, 0.3), static=True)
    v = core.lookup_velocity("base", "odom", 5.0, 1.0)
    assert close(linear(v), (0.0, 0.0, 0.0)) and close(angular(v), (0.0, 0.0, 0.0))


def test_errors_are_those_of_lookup_transform(core):
    put(core, "odom", "base", 1, (0, 0, 0))
    put(core, "odom", "base", 2, (1, 0, 0))
    with pytest.raises(LookupException, match="nowhere"):
        core.lookup_velocity("nowhere", "odom", 1.5, 0.5)
    with pytest.raises(tf2py.InvalidArgumentException):
        core.lookup_velocity("", "odom", 1.5, 0.5)
    with pytest.raises(ValueError, match="reference_point"):
        core.lookup_velocity("base", "odom", 1.5, 0.5, reference_point=(1, 2))


def test_buffer_has_it_and_takes_durations():
    buffer = Buffer()
    for i in range(11):
        put(buffer, "odom", "base", i * 0.5, (1.5 * i, 0, 0))
    v = buffer.lookup_velocity("base", "odom", Time(2), tf2py.Duration(1))
    assert close(linear(v), (3.0, 0.0, 0.0))
    assert v == BufferCore.lookup_velocity(buffer, "base", "odom", 2.0, 1.0)


def test_messages_have_defaults_equality_and_repr():
    assert Twist() == Twist(Vector3(), Vector3())
    v = VelocityStamped(body_frame_id="b", velocity=Twist(Vector3(1, 2, 3)))
    assert v.velocity.linear == Vector3(1, 2, 3)
    assert v != VelocityStamped(body_frame_id="c")
    assert "VelocityStamped(" in repr(v) and "body_frame_id='b'" in repr(v)


# -- tf2's formula, independently, on random trajectories ------------------------------------

def _matrix(ts):
    return ts.transform.as_matrix()


def _expected(core, tracking, observation, time_s, interval_s, reference, point, point_frame):
    """tf2-reference §14.1 in numpy, from plain lookups (not our function)."""
    latest = core.get_latest_common_time(observation, tracking).to_seconds()
    end = min(time_s + interval_s / 2, latest)
    start = max(0.00001 + interval_s, end) - interval_s
    dt = end - start
    s = _matrix(core.lookup_transform(observation, tracking, start))
    e = _matrix(core.lookup_transform(observation, tracking, end))
    lin = (e[:3, 3] - s[:3, 3]) / dt
    rel = s[:3, :3].T @ e[:3, :3]
    angle = math.acos(max(-1.0, min(1.0, (np.trace(rel) - 1) / 2)))
    axis = np.array([rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1]])
    axis = axis / (2 * math.sin(angle)) if angle > 1e-12 else np.array([1.0, 0, 0])
    ang = s[:3, :3] @ axis * angle / dt
    r = _matrix(core.lookup_transform(reference, tracking, time_s))
    ang_out = r[:3, :3] @ ang
    lin_out = r[:3, :3] @ lin + np.cross(r[:3, 3], ang_out)
    p0 = r[:3, 3]
    q = _matrix(core.lookup_transform(reference, point_frame, time_s))
    p1 = q[:3, :3] @ np.asarray(point) + q[:3, 3]
    lin_out = lin_out + np.cross(ang_out, p1 - p0)
    return lin_out, ang_out, start + interval_s / 2


@pytest.mark.parametrize("seed", range(6))
def test_equals_tf2s_formula_on_random_trajectories(seed):
    rng = np.random.default_rng(seed)
    core = BufferCore()
    # world -> a (moving) -> tracking (moving); world -> viewer (static); a -> pointer (static)
    t0 = 50.0
    velocities = rng.normal(size=(2, 6)) * [1, 1, 1, 0.5, 0.5, 0.5]
    offsets = rng.normal(size=(2, 6))
    for k in range(61):
        t = t0 + 0.05 * k
        for link, (parent, child) in enumerate((("world", "a"), ("a", "tracking"))):
            pose = offsets[link] + velocities[link] * (t - t0) + 0.3 * np.sin(3 * (t - t0) + link)
            put(core, parent, child, t, tuple(pose[:3]), rpy=tuple(pose[3:]))
    put(core, "world", "viewer", 0, tuple(rng.normal(size=3)), rpy=tuple(rng.normal(size=3)),
        static=True)
    put(core, "a", "pointer", 0, tuple(rng.normal(size=3)), rpy=tuple(rng.normal(size=3)),
        static=True)
    for _ in range(5):
        time_s = t0 + rng.uniform(0.2, 3.0)  # near the end, the window is cut
        interval = rng.uniform(0.05, 0.4)
        point = tuple(rng.normal(size=3))
        for args in (("tracking", "world", "world", (0, 0, 0), "tracking"),
                     ("tracking", "world", "viewer", point, "pointer"),
                     ("tracking", "a", "viewer", point, "world")):
            tracking, observation, reference, p, pframe = args
            v = core.lookup_velocity(tracking, observation, time_s, interval, reference, p,
                                     pframe)
            lin, ang, stamp = _expected(core, tracking, observation, time_s, interval, reference,
                                        p, pframe)
            assert np.allclose(linear(v), lin, atol=1e-7), (args, linear(v), lin)
            assert np.allclose(angular(v), ang, atol=1e-7), (args, angular(v), ang)
            assert abs(v.header.stamp.to_seconds() - stamp) < 2e-9
            assert v.header.frame_id == reference and v.body_frame_id == tracking


# -- the batch form ---------------------------------------------------------------------------

def _random_core(seed):
    rng = np.random.default_rng(seed)
    core = BufferCore()
    t0 = 50.0
    velocities = rng.normal(size=(2, 6)) * [1, 1, 1, 0.5, 0.5, 0.5]
    for k in range(61):
        t = t0 + 0.05 * k
        for link, (parent, child) in enumerate((("world", "a"), ("a", "tracking"))):
            pose = velocities[link] * (t - t0) + 0.3 * np.sin(3 * (t - t0) + link)
            put(core, parent, child, t, tuple(pose[:3]), rpy=tuple(pose[3:]))
    put(core, "world", "viewer", 0, (1, 2, 3), rpy=(0.3, -0.2, 1.0), static=True)
    return core, rng


@pytest.mark.parametrize("form", ["short", "full"])
def test_batch_form_equals_one_lookup_velocity_per_time(form):
    core, rng = _random_core(11)
    times = [Time.from_seconds(50.0 + x) for x in rng.uniform(0.2, 3.0, size=40)]
    times.append(Time.from_seconds(53.0))  # the window cut at the end of the data
    args = () if form == "short" else ("viewer", (0.5, -1.0, 2.0), "a")
    stamps, twists = core.lookup_velocities("tracking", "world", times, 0.3, *args)
    assert stamps.shape == (41,) and twists.shape == (41, 6)
    for k, t in enumerate(times):
        v = core.lookup_velocity("tracking", "world", t, 0.3, *args)
        assert stamps[k] == v.header.stamp.nanoseconds
        assert np.allclose(twists[k], linear(v) + angular(v), atol=1e-9), (k, twists[k], v)


def test_batch_form_takes_float_seconds_and_raises_for_the_first_bad_time():
    core, _ = _random_core(3)
    stamps, twists = core.lookup_velocities("tracking", "world", np.array([51.0, 52.0]), 0.2)
    v = core.lookup_velocity("tracking", "world", 52.0, 0.2)
    assert stamps[1] == v.header.stamp.nanoseconds
    assert np.allclose(twists[1], linear(v) + angular(v), atol=1e-9)
    with pytest.raises(BackwardExtrapolationException):
        core.lookup_velocities("tracking", "world", [51.0, 10.0], 0.2)
    empty_stamps, empty = Buffer().lookup_velocities("a", "b", [], 0.1)
    assert empty_stamps.shape == (0,) and empty.shape == (0, 6)


class _PlainCore:
    """A core-like object that is not the kernel: lookup_velocity takes its generic path
    (the public lookup_transform and get_latest_common_time) for it."""

    def __init__(self, core):
        self.core = core

    def lookup_transform(self, target_frame, source_frame, time):
        return self.core.lookup_transform(target_frame, source_frame, time)

    def get_latest_common_time(self, target_frame, source_frame):
        return self.core.get_latest_common_time(target_frame, source_frame)


def _outcome(function, *args):
    try:
        v = function(*args)
    except Exception as exc:  # noqa: BLE001 - compared below, type and message
        return type(exc), str(exc)
    return repr((v.header, v.body_frame_id, v.reference_frame_id, linear(v), angular(v)))


@pytest.mark.parametrize("make", [Buffer, BufferCore])
def test_kernel_fast_path_equals_generic_path_bit_for_bit(make):
    """lookup_velocity reads the kernel's tuples directly for a Buffer/BufferCore: the
    values (repr for repr) and the exceptions (type and message) are those of the generic
    path through lookup_transform."""
    from tf2py.buffer.velocity import lookup_velocity

    rng = np.random.default_rng(7)
    core = make()
    put(core, "map", "odom", 0, (1, 2, 3), (0.1, 0.2, 0.3), static=True)
    for k in range(40):
        t = 10.0 + 0.05 * k
        put(core, "odom", "base", t, rng.uniform(-5, 5, 3), rng.uniform(-3, 3, 3))
        put(core, "base", "arm", t, (0.5, 0.0, 0.2), (0.0, 0.05 * k, 0.1))
    plain = _PlainCore(core)
    compared = ok = 0
    for t in (10.3, 10.51, 0, 11.9, 12.5, 9.0, Time.from_seconds(10.77)):
        for tracking, observation in (("base", "map"), ("arm", "odom"), ("map", "arm"),
                                      ("arm", "arm"), ("nope", "map"), ("/base", "map")):
            for extra in ((), ("odom",), ("arm", (1, 2, 3), "map"), ("base", (0.5, -1, 0)),
                          ("zz",)):
                args = (tracking, observation, t, 0.2) + extra
                fast = _outcome(lookup_velocity, core, *args)
                assert fast == _outcome(lookup_velocity, plain, *args), args
                compared += 1
                ok += isinstance(fast, str)
    assert compared == 210 and 40 < ok < 200  # both successes and errors were compared
