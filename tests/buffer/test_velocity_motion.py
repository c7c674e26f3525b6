"""lookup_velocity's physical answer (the default, API.md "Velocity") on motions whose velocity
is known in closed form: spinning in place, straight lines at any heading, circles, points on
a spinning body, chains of moving frames.

Samples are placed so that the window's ends fall on them (no interpolation error); the
linear velocity of a frame's own origin is then the chord over the window, exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tf2py import Buffer, Duration, Time, make_transform
from tf2py.buffer.core import BufferCore


def put(core, parent, child, t, xyz=(0, 0, 0), rpy=(0, 0, 0), static=False, q=None):
    if q is None:
        ts = make_transform(parent, child, xyz, rpy=rpy, stamp=t)
    else:
        ts = make_transform(parent, child, xyz, rotation=q, stamp=t)
    if static:
        core.set_transform_static(ts, "test")
    else:
        core.set_transform(ts, "test")


def lin(v):
    return np.array([v.velocity.linear.x, v.velocity.linear.y, v.velocity.linear.z])


def ang(v):
    return np.array([v.velocity.angular.x, v.velocity.angular.y, v.velocity.angular.z])


def rz(theta):
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def axis_quaternion(axis, angle):
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    s = math.sin(angle / 2)
    return (axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2))


STEP = 0.05  # s between samples; windows below are multiples of it around sample times


@pytest.mark.parametrize("centre", [(1.0, 0.0, 0.0), (-3.0, 2.0, 0.5), (0.0, 0.0, 0.0)])
def test_spin_in_place_has_zero_linear_velocity_wherever_it_stands(centre):
    core = BufferCore()
    for k in range(81):
        put(core, "map", "base", k * STEP, centre, rpy=(0, 0, 0.5 * k * STEP))
    v = core.lookup_velocity("base", "map", 2.0, 0.2)
    assert np.allclose(lin(v), 0.0, atol=1e-12)
    assert np.allclose(ang(v), (0.0, 0.0, 0.5), atol=1e-12)


def test_spin_in_place_seen_in_the_robots_own_axes():
    core = BufferCore()
    for k in range(81):
        put(core, "map", "base", k * STEP, (1, 0, 0), rpy=(0, 0, 0.5 * k * STEP))
    v = core.lookup_velocity("base", "map", 2.0, 0.2, reference_frame="base")
    assert np.allclose(lin(v), 0.0, atol=1e-12)
    assert np.allclose(ang(v), (0.0, 0.0, 0.5), atol=1e-12)  # z is z in both


@settings(max_examples=40, deadline=None)
@given(heading=st.floats(-math.pi, math.pi), direction=st.floats(-math.pi, math.pi),
       climb=st.floats(-1.0, 1.0), speed=st.floats(0.1, 5.0))
def test_straight_line_moves_along_the_line_whatever_the_heading(heading, direction, climb, speed):
    core = BufferCore()
    unit = np.array([math.cos(direction), math.sin(direction), climb])
    for k in range(41):
        t = k * STEP
        put(core, "map", "base", t, tuple(speed * t * unit), rpy=(0.2, -0.1, heading))
    v = core.lookup_velocity("base", "map", 1.0, 0.4)
    assert np.allclose(lin(v), speed * unit, atol=1e-9)
    assert np.allclose(ang(v), 0.0, atol=1e-12)
    # In the robot's own axes: the same vector, turned by the inverse of its orientation.
    body = core.lookup_velocity("base", "map", 1.0, 0.4, reference_frame="base")
    rotation = core.lookup_transform("map", "base", 1.0).transform.as_matrix()[:3, :3]
    assert np.allclose(lin(body), rotation.T @ (speed * unit), atol=1e-9)


def test_driving_along_x_while_facing_y_is_moving_along_x():
    core = BufferCore()
    for k in range(41):
        put(core, "map", "base", k * STEP, (1.0 * k * STEP, 0, 0), rpy=(0, 0, math.pi / 2))
    v = core.lookup_velocity("base", "map", 1.0, 0.4)
    assert np.allclose(lin(v), (1.0, 0.0, 0.0), atol=1e-12)
    body = core.lookup_velocity("base", "map", 1.0, 0.4, reference_frame="base")
    assert np.allclose(lin(body), (0.0, -1.0, 0.0), atol=1e-12)  # sideways, to its right


@pytest.mark.parametrize("t", [1.0, 1.5, 2.25])
def test_circle_driven_like_a_car(t):
    # Centre (2, -1), radius 3, 0.4 rad/s, heading along the tangent. The origin's chord over
    # [t - I/2, t + I/2] has length 2 r sin(w I / 2) and the tangent's direction at t.
    core = BufferCore()
    r, w, centre = 3.0, 0.4, np.array([2.0, -1.0, 0.0])
    for k in range(81):
        s = k * STEP
        p = centre + r * np.array([math.cos(w * s), math.sin(w * s), 0.0])
        put(core, "map", "car", s, tuple(p), rpy=(0, 0, w * s + math.pi / 2))
    interval = 0.5
    v = core.lookup_velocity("car", "map", t, interval)
    speed = 2 * r * math.sin(w * interval / 2) / interval
    assert np.allclose(lin(v), speed * np.array([-math.sin(w * t), math.cos(w * t), 0]), atol=1e-9)
    assert np.allclose(ang(v), (0, 0, w), atol=1e-12)
    # The true speed r w, within the chord's O(I²) error.
    assert abs(np.linalg.norm(lin(v)) - r * w) < r * w * (w * interval) ** 2 / 24 * 1.01
    # In the car's axes the velocity points straight ahead (its x).
    ahead = core.lookup_velocity("car", "map", t, interval, reference_frame="car")
    assert np.allclose(lin(ahead), (speed, 0, 0), atol=1e-9)


@pytest.mark.parametrize("point", [(1.0, 0.0, 0.0), (0.3, -2.0, 0.7), (0.0, 0.0, 5.0)])
def test_points_on_a_body_spinning_about_any_axis(point):
    # base stands at o and turns at w about the axis n: the point fixed in base at `point`
    # moves at w n x (R(t) point), whatever o is.
    core = BufferCore()
    o, n, w = np.array([1.0, 2.0, -0.5]), np.array([0.3, -0.4, 1.0]), 0.8
    for k in range(81):
        put(core, "map", "base", k * STEP, tuple(o), q=axis_quaternion(n, w * k * STEP))
    t = 2.0
    v = core.lookup_velocity("base", "map", t, 0.2, reference_point=point)
    rotation = core.lookup_transform("map", "base", t).transform.as_matrix()[:3, :3]
    omega = w * n / np.linalg.norm(n)
    assert np.allclose(ang(v), omega, atol=1e-12)
    assert np.allclose(lin(v), np.cross(omega, rotation @ np.asarray(point)), atol=1e-12)
    # The same point named in map's coordinates at t gives the same answer.
    in_map = rotation @ np.asarray(point) + o
    w_map = core.lookup_velocity("base", "map", t, 0.2, reference_point=tuple(in_map),
                                 reference_point_frame="map")
    assert np.allclose(lin(w_map), lin(v), atol=1e-12)


def test_wheel_rim_rolling_without_slipping_touches_the_ground_at_rest():
    # A wheel of radius 0.5 rolls along x at 1 m/s, so it turns about +y at v / r = 2 rad/s.
    # Its contact point (t, 0, 0) below the hub (named in ground's coordinates at t) is at
    # rest; its top moves at twice the hub's speed.
    core = BufferCore()
    for k in range(81):
        s = k * STEP
        put(core, "ground", "wheel", s, (s, 0, 0.5), q=axis_quaternion((0, 1, 0), 2.0 * s))
    t = 2.0
    contact = core.lookup_velocity("wheel", "ground", t, 0.2, reference_point=(t, 0.0, 0.0),
                                   reference_point_frame="ground")
    assert np.allclose(lin(contact), 0.0, atol=1e-12)
    top = core.lookup_velocity("wheel", "ground", t, 0.2, reference_point=(t, 0.0, 1.0),
                               reference_point_frame="ground")
    assert np.allclose(lin(top), (2.0, 0.0, 0.0), atol=1e-12)


def test_chain_of_moving_frames_adds_up():
    # odom drifts along y at 0.5 m/s in map; base spins in place in odom at (1, 0, 0) at
    # 0.3 rad/s; a laser is bolted 0.4 m ahead of base. base: velocity (0, 0.5, 0) and
    # angular (0, 0, 0.3) in map; the laser's origin moves on a circle of radius 0.4 about
    # base's origin on top of the drift (its chord over the window, for its own origin).
    core = BufferCore()
    put(core, "base", "laser", 0, (0.4, 0, 0), static=True)
    for k in range(81):
        s = k * STEP
        put(core, "map", "odom", s, (0, 0.5 * s, 0))
        put(core, "odom", "base", s, (1, 0, 0), rpy=(0, 0, 0.3 * s))
    t, interval = 2.0, 0.4
    base = core.lookup_velocity("base", "map", t, interval)
    assert np.allclose(lin(base), (0, 0.5, 0), atol=1e-12)
    assert np.allclose(ang(base), (0, 0, 0.3), atol=1e-12)
    laser = core.lookup_velocity("laser", "map", t, interval)
    chord = 2 * 0.4 * math.sin(0.3 * interval / 2) / interval
    expected = np.array([0, 0.5, 0]) + chord * np.array([-math.sin(0.3 * t), math.cos(0.3 * t), 0])
    assert np.allclose(lin(laser), expected, atol=1e-9)
    assert np.allclose(ang(laser), (0, 0, 0.3), atol=1e-12)
    # base's point at the laser: the rigid-body velocity v + w x r (the exact tangent speed).
    point = core.lookup_velocity("base", "map", t, interval, reference_point=(0.4, 0, 0))
    tangent = 0.4 * 0.3 * np.array([-math.sin(0.3 * t), math.cos(0.3 * t), 0])
    assert np.allclose(lin(point), np.array([0, 0.5, 0]) + tangent, atol=1e-12)
    # Seen from odom, the drift is gone.
    assert np.allclose(lin(core.lookup_velocity("base", "odom", t, interval)), 0, atol=1e-12)


def test_reference_frame_turns_the_vectors_and_adds_no_lever_arm():
    # viewer is map turned +90 deg about z and 5 m away: a velocity (2, 0, 0) in map reads
    # (0, -2, 0) in viewer's axes (T(viewer <- map) turns x into -y); no translation term.
    core = BufferCore()
    put(core, "map", "viewer", 0, (5, 5, 0), rpy=(0, 0, math.pi / 2), static=True)
    for k in range(41):
        put(core, "map", "base", k * STEP, (2.0 * k * STEP, 0, 0), rpy=(0, 0, 0.1 * k * STEP))
    v = core.lookup_velocity("base", "map", 1.0, 0.4, reference_frame="viewer")
    assert v.header.frame_id == "viewer"
    assert np.allclose(lin(v), (0, -2.0, 0), atol=1e-9)
    assert np.allclose(ang(v), (0, 0, 0.1), atol=1e-12)


def test_static_chain_is_at_rest():
    core = BufferCore()
    put(core, "map", "odom", 0, (1, 2, 3), rpy=(0.1, 0.2, 0.3), static=True)
    put(core, "odom", "base", 0, (-1, 0, 2), rpy=(0.3, 0.2, 0.1), static=True)
    for t in (0, 5.0):
        v = core.lookup_velocity("base", "map", t, 1.0, reference_point=(1, 1, 1))
        assert lin(v).tolist() == [0.0, 0.0, 0.0] and ang(v).tolist() == [0.0, 0.0, 0.0]


def test_a_frame_seen_from_itself_is_at_rest_even_unknown():
    v = BufferCore().lookup_velocity("nowhere", "nowhere", 3.0, 0.5)
    assert lin(v).tolist() == [0.0, 0.0, 0.0] and ang(v).tolist() == [0.0, 0.0, 0.0]


def test_message_fields_and_stamp():
    core = BufferCore()
    for k in range(41):
        put(core, "odom", "base", k * STEP, (1.5 * k * STEP, 0, 0))
    v = core.lookup_velocity("base", "odom", 1.0, 0.4)
    assert v.header.stamp == Time(1) and v.header.frame_id == "odom"
    assert v.body_frame_id == "base" and v.reference_frame_id == ""
    assert np.allclose(lin(v), (1.5, 0, 0), atol=1e-12)


def test_interval_is_cut_at_the_end_of_the_data_and_time_zero_means_the_latest():
    # x = t^2 sampled every 0.5 s up to 10 s. At 10 s with a 2 s interval the window is
    # [8, 10]: (100 - 64) / 2 = 18 m/s, stamped 9 s. Time 0 is the same as the latest time.
    core = BufferCore()
    for i in range(21):
        put(core, "odom", "base", i * 0.5, ((i * 0.5) ** 2, 0, 0))
    v = core.lookup_velocity("base", "odom", 10.0, 2.0)
    assert np.allclose(lin(v), (18.0, 0, 0), atol=1e-12) and v.header.stamp == Time(9)
    latest = core.lookup_velocity("base", "odom", Time(), 2.0)
    assert latest == v


def test_buffer_has_it_and_takes_durations():
    buffer = Buffer()
    for k in range(41):
        put(buffer, "odom", "base", k * STEP, (1.5 * k * STEP, 0, 0))
    v = buffer.lookup_velocity("base", "odom", Time(1), Duration(0, 400_000_000))
    assert np.allclose(lin(v), (1.5, 0, 0), atol=1e-12)
    assert v == BufferCore.lookup_velocity(buffer, "base", "odom", 1.0, 0.4)
