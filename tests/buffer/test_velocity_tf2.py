"""lookup_velocity(..., tf2_compatible=True): ROS 2 tf2 0.39's BufferCore::lookupVelocity,
field for field, defects included (tf2-reference.md §14.1).

``tf2_formula`` below transcribes the reference's seven steps straightforwardly (numpy,
plain lookups); the kernel's answer must agree with it on random trajectories, for every
reference frame and point frame, and at the edges (window cut at the data, time 0, stamps
near zero, stamps far from it)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf2py import BackwardExtrapolationException, ExtrapolationException, Time, make_transform
from tf2py.buffer.core import BufferCore

NS = 1_000_000_000


def put(core, parent, child, t, xyz=(0, 0, 0), rpy=(0, 0, 0), static=False):
    ts = make_transform(parent, child, tuple(xyz), rpy=tuple(rpy), stamp=t)
    if static:
        core.set_transform_static(ts, "test")
    else:
        core.set_transform(ts, "test")


def lin(v):
    return np.array([v.velocity.linear.x, v.velocity.linear.y, v.velocity.linear.z])


def ang(v):
    return np.array([v.velocity.angular.x, v.velocity.angular.y, v.velocity.angular.z])


# -- the reference's steps, transcribed --------------------------------------------------------

def seconds(ns: int) -> float:
    """tf2::timeToSec: whole seconds (truncated) plus 1e-9 * the remaining nanoseconds."""
    sec = (abs(ns) // NS) * (1 if ns >= 0 else -1)
    return float(sec) + 1e-9 * float(ns - sec * NS)


def from_seconds(x: float) -> int:
    """tf2::timeFromSec: floor of the seconds, the fraction's nanoseconds rounded half up."""
    sec = math.floor(x)
    fraction = (x - sec) * 1e9
    return sec * NS + math.floor(fraction) + (fraction - math.floor(fraction) >= 0.5)


def matrix(core, target, source, ns):
    return core.lookup_transform(target, source, Time.from_nanoseconds(ns)).transform.as_matrix()


def tf2_formula(core, tracking, observation, time_ns, interval_ns, reference, point, point_frame):
    # 1. the latest common time of observation and tracking (0 when that fails)
    try:
        latest = core.get_latest_common_time(observation, tracking).nanoseconds
    except Exception:  # noqa: BLE001 - tf2 ignores this error
        latest = 0
    # 2. the window, in double seconds
    t = seconds(time_ns)
    interval = interval_ns / 1e9
    end = min(t + interval / 2, seconds(latest))
    start = max(0.00001 + interval, end) - interval
    dt = end - start
    # 3. S, E = observation <- tracking at start and end
    s = matrix(core, observation, tracking, from_seconds(start))
    e = matrix(core, observation, tracking, from_seconds(end))
    # 4. linear from the origins; angular from the relative rotation's axis and angle
    linear = (e[:3, 3] - s[:3, 3]) / dt
    relative = np.linalg.inv(s[:3, :3]) @ e[:3, :3]
    angle = math.acos(max(-1.0, min(1.0, (np.trace(relative) - 1) / 2)))
    skew = np.array([relative[2, 1] - relative[1, 2], relative[0, 2] - relative[2, 0],
                     relative[1, 0] - relative[0, 1]])
    axis = skew / (2 * math.sin(angle)) if angle > 1e-7 else np.array([1.0, 0.0, 0.0])
    angular = s[:3, :3] @ axis * angle / dt
    # 5. R = reference <- tracking at the requested time (through double seconds)
    at = from_seconds(t)
    r = matrix(core, reference, tracking, at)
    angular_out = r[:3, :3] @ angular
    linear_out = r[:3, :3] @ linear + np.cross(r[:3, 3], angular_out)
    # 6. re-reference about the point: ELEMENT-WISE product (tf2::Vector3's operator*)
    p0 = r[:3, 3]
    q = matrix(core, reference, point_frame, at)
    p1 = q[:3, :3] @ np.asarray(point, dtype=float) + q[:3, 3]
    linear_out = linear_out + angular_out * (p1 - p0)
    # 7. stamped start + interval / 2 (the full interval)
    return linear_out, angular_out, from_seconds(start + interval / 2)


def check(core, tracking, observation, time_ns, interval_ns, reference=None, point=(0, 0, 0),
          point_frame=None):
    reference = reference or observation
    point_frame = point_frame or tracking
    v = core.lookup_velocity(tracking, observation, Time.from_nanoseconds(time_ns),
                             interval_ns / 1e9, reference, point, point_frame, tf2_compatible=True)
    linear, angular, stamp = tf2_formula(core, tracking, observation, time_ns, interval_ns,
                                         reference, point, point_frame)
    scale = 1.0 + np.abs(linear).max()
    assert np.allclose(lin(v), linear, rtol=1e-9, atol=1e-9 * scale), (lin(v), linear)
    assert np.allclose(ang(v), angular, rtol=1e-9, atol=1e-9), (ang(v), angular)
    assert v.header.stamp.nanoseconds == stamp
    assert v.header.frame_id == reference and v.body_frame_id == tracking
    assert v.reference_frame_id == ""
    return v


# -- random trajectories, every role ------------------------------------------------------------

def random_tree(seed, t0=50.0):
    """world -> a -> tracking (both moving), world -> viewer (static), a -> pointer (static),
    world -> b -> other (moving)."""
    rng = np.random.default_rng(seed)
    core = BufferCore()
    rates = rng.normal(size=(3, 6)) * [1, 1, 1, 0.4, 0.4, 0.4]
    offsets = rng.normal(size=(3, 6))
    links = (("world", "a"), ("a", "tracking"), ("world", "b"), ("b", "other"))
    for k in range(61):
        t = t0 + 0.05 * k
        for i, (parent, child) in enumerate(links):
            j = min(i, 2)
            pose = offsets[j] + rates[j] * (t - t0) + 0.3 * np.sin(3 * (t - t0) + i)
            put(core, parent, child, t, pose[:3], pose[3:])
    put(core, "world", "viewer", 0, rng.normal(size=3), rng.normal(size=3), static=True)
    put(core, "a", "pointer", 0, rng.normal(size=3), rng.normal(size=3), static=True)
    return core, rng


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("tracking,observation", [("tracking", "world"), ("tracking", "a"),
                                                  ("other", "tracking"), ("a", "viewer")])
def test_agrees_with_the_reference_steps_for_every_reference_frame_and_point(
        seed, tracking, observation):
    core, rng = random_tree(seed)
    for reference in (None, "world", "viewer", "tracking", "other", "pointer"):
        for point_frame in (None, "world", "pointer", "other", observation):
            time_ns = 50 * NS + int(rng.uniform(0.3, 3.0) * NS)  # near 53 s the window is cut
            interval_ns = int(rng.uniform(0.05, 0.4) * NS)
            check(core, tracking, observation, time_ns, interval_ns, reference,
                  tuple(rng.normal(size=3)), point_frame)


# -- its known defects, by hand ------------------------------------------------------------------

def test_spin_in_place_off_the_origin_reads_as_moving():
    core = BufferCore()
    for k in range(81):
        put(core, "map", "base", k * 0.05, (1, 0, 0), (0, 0, 0.5 * k * 0.05))
    v = core.lookup_velocity("base", "map", 2.0, 0.2, tf2_compatible=True)
    assert np.allclose(lin(v), (0, -0.5, 0), atol=1e-12)  # R.origin x angular
    assert np.allclose(ang(v), (0, 0, 0.5), atol=1e-12)
    assert np.allclose(lin(core.lookup_velocity("base", "map", 2.0, 0.2)), 0, atol=1e-12)


def test_driving_along_x_while_facing_y_reads_as_moving_along_y():
    core = BufferCore()
    for k in range(41):
        put(core, "map", "base", k * 0.05, (k * 0.05, 0, 0), (0, 0, math.pi / 2))
    v = core.lookup_velocity("base", "map", 1.0, 0.4, tf2_compatible=True)
    assert np.allclose(lin(v), (0, 1, 0), atol=1e-12)  # turned again by R.basis


def test_reference_point_correction_is_element_wise():
    # base spins at 1 rad/s about z at map's origin. Its point (1, 0, 0) moves on the unit
    # circle, but tf2 adds angular * (p1 - p0) element by element: (0, 0, 1) * (cos 1,
    # sin 1, 0) = 0, so the point reads as at rest.
    core = BufferCore()
    for k in range(31):
        put(core, "map", "base", k * 0.1, (0, 0, 0), (0, 0, 0.1 * k))
    v = core.lookup_velocity("base", "map", 1.0, 0.2, reference_point=(1, 0, 0),
                             tf2_compatible=True)
    assert np.allclose(lin(v), 0, atol=1e-12) and np.allclose(ang(v), (0, 0, 1), atol=1e-12)
    physical = core.lookup_velocity("base", "map", 1.0, 0.2, reference_point=(1, 0, 0))
    assert np.allclose(lin(physical), (-math.sin(1), math.cos(1), 0), atol=1e-12)


# -- the edges ----------------------------------------------------------------------------------

def line(core, first=0.0, n=11, step=0.5, speed=3.0):
    for i in range(n):
        t = first + i * step
        put(core, "odom", "base", t, (speed * (t - first), 0, 0))


def test_interval_is_cut_at_the_end_of_the_data():
    core = BufferCore()
    for i in range(21):
        put(core, "odom", "base", i * 0.5, ((i * 0.5) ** 2, 0, 0))
    v = check(core, "base", "odom", 10 * NS, 2 * NS)
    assert np.allclose(lin(v), (18, 0, 0)) and v.header.stamp == Time(9)
    check(core, "base", "odom", 9_900_000_000, 2 * NS)  # cut by 0.9 s
    # Past the data the window stays at its end; the lookup at `time` itself extrapolates.
    with pytest.raises(ExtrapolationException):
        core.lookup_velocity("base", "odom", 50.0, 2.0, tf2_compatible=True)


def test_near_time_zero_the_window_starts_at_ten_microseconds_and_keeps_the_full_interval():
    # x = 3 t from 0 s; at 0.5 s with a 2 s interval the window is [0.00001, 1.5] s and the
    # stamp 0.00001 + 1 s.
    core = BufferCore()
    line(core)
    v = check(core, "base", "odom", NS // 2, 2 * NS)
    assert np.allclose(lin(v), (3, 0, 0)) and v.header.stamp == Time(1, 10_000)
    for time_ns in (1, 1000, 10_000, 9_999, 123_456):  # stamps near zero
        check(core, "base", "odom", time_ns, 20_000)
        check(core, "base", "odom", time_ns, NS)


def test_time_zero_is_zero_seconds_and_the_reference_lookups_the_latest():
    # tf2_py's own case: x = 3 t at 0..4 s, time 0, interval 4.001 s: window [0.00001,
    # 2.0005] s, stamp 2.00051 s.
    core = BufferCore()
    for t in range(5):
        put(core, "PARENT", "THISFRAME", t, (3 * t, 0, 0))
    v = check(core, "THISFRAME", "PARENT", 0, 4_001_000_000)
    assert np.allclose(lin(v), (3, 0, 0)) and v.header.stamp == Time(2, 510_000)
    # Far from the epoch, time 0 looks near 0 s and extrapolates (the physical answer does not).
    far = BufferCore()
    line(far, first=1000.0)
    with pytest.raises(BackwardExtrapolationException):
        far.lookup_velocity("base", "odom", 0, 1.0, tf2_compatible=True)
    assert np.allclose(lin(far.lookup_velocity("base", "odom", 0, 1.0)), (3, 0, 0))


def test_static_chain_at_time_zero_divides_by_a_negative_window():
    # latest = 0: end = 0, start = 0.00001: dt < 0, zero displacement (signed zeros).
    core = BufferCore()
    put(core, "map", "base", 0, (1, 2, 3), static=True)
    v = check(core, "base", "map", 0, NS)
    assert lin(v).tolist() == [0.0, 0.0, 0.0]


def test_stamps_far_from_the_epoch_round_through_double_seconds_as_tf2():
    core = BufferCore()
    line(core, first=1_700_000_000.0, n=81, step=0.05)
    for nanos in (123_456_789, 500_000_001, 999_999_999, 1):
        time_ns = 1_700_000_001 * NS + nanos
        v = check(core, "base", "odom", time_ns, 100_000_001)
        exact = time_ns  # the window is not cut: start + I/2 would be `time` in exact ns
        assert abs(v.header.stamp.nanoseconds - exact) < 1000  # within double's ulp (238 ns)


def test_unknown_frames_raise_tf2s_lookup_errors_in_tf2s_order():
    core = BufferCore()
    line(core)
    with pytest.raises(Exception) as first:
        core.lookup_velocity("base", "nowhere", 1.0, 0.5, tf2_compatible=True)
    assert 'passed to lookupTransform argument target_frame does not exist' in str(first.value)
    with pytest.raises(Exception) as second:
        core.lookup_velocity("base", "odom", 1.0, 0.5, "odom", (0, 0, 0), "nowhere",
                             tf2_compatible=True)
    assert '"nowhere" passed to lookupTransform argument source_frame' in str(second.value)
