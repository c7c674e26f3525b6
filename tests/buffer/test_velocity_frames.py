"""lookup_velocity's physical answer for every reference frame and every reference point
(frame), against the definition in API.md "Velocity" / tf2-reference.md §14.1 computed here
independently in numpy from plain lookup_transform calls, on random trajectories."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf2py import Buffer, Time, make_transform
from tf2py.buffer.core import BufferCore

NS = 1_000_000_000


def put(core, parent, child, t, xyz, rpy, static=False):
    ts = make_transform(parent, child, tuple(xyz), rpy=tuple(rpy), stamp=t)
    if static:
        core.set_transform_static(ts, "test")
    else:
        core.set_transform(ts, "test")


def lin(v):
    return np.array([v.velocity.linear.x, v.velocity.linear.y, v.velocity.linear.z])


def ang(v):
    return np.array([v.velocity.angular.x, v.velocity.angular.y, v.velocity.angular.z])


def matrix(core, target, source, ns):
    return core.lookup_transform(target, source, Time.from_nanoseconds(ns)).transform.as_matrix()


def rotation_vector(m):
    """The axis times the angle (in [0, pi)) of a rotation matrix."""
    angle = math.acos(max(-1.0, min(1.0, (np.trace(m) - 1) / 2)))
    skew = np.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]]) / 2
    return skew * (angle / math.sin(angle)) if angle > 1e-9 else skew


def physical(core, tracking, observation, time_ns, interval_ns, reference, point, point_frame):
    """The definition: the window of tf2 (exact ns), S and E at its ends, v and w in
    observation's axes, the point's velocity v + w x (p - o), turned into reference's axes."""
    latest = core.get_latest_common_time(observation, tracking).nanoseconds
    if time_ns == 0:
        time_ns = latest
    end = min(time_ns + interval_ns // 2, latest)
    start = max(10_000 + interval_ns, end) - interval_ns
    dt = (end - start) / 1e9
    s = matrix(core, observation, tracking, start)
    e = matrix(core, observation, tracking, end)
    v = (e[:3, 3] - s[:3, 3]) / dt
    w = s[:3, :3] @ rotation_vector(s[:3, :3].T @ e[:3, :3]) / dt
    o = matrix(core, observation, tracking, time_ns)[:3, 3]
    f = matrix(core, observation, point_frame, time_ns)
    p = f[:3, :3] @ np.asarray(point, dtype=float) + f[:3, 3]
    turn = matrix(core, reference, observation, time_ns)[:3, :3]
    return turn @ (v + np.cross(w, p - o)), turn @ w, start + interval_ns // 2


def random_tree(seed, make=BufferCore, t0=50.0):
    """world -> a -> tracking (moving), world -> viewer (static), a -> pointer (static),
    world -> b -> other (moving)."""
    rng = np.random.default_rng(seed)
    core = make()
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


def check(core, tracking, observation, time_ns, interval_ns, reference=None, point=(0, 0, 0),
          point_frame=None):
    reference = reference or observation
    point_frame = point_frame or tracking
    v = core.lookup_velocity(tracking, observation, Time.from_nanoseconds(time_ns),
                             interval_ns / 1e9, reference, point, point_frame)
    linear, angular, stamp = physical(core, tracking, observation, time_ns, interval_ns,
                                      reference, point, point_frame)
    scale = 1.0 + np.abs(linear).max()
    assert np.allclose(lin(v), linear, rtol=1e-9, atol=1e-9 * scale), (lin(v), linear)
    assert np.allclose(ang(v), angular, rtol=1e-9, atol=1e-9), (ang(v), angular)
    assert v.header.stamp.nanoseconds == stamp
    assert v.header.frame_id == reference and v.body_frame_id == tracking
    return v


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("tracking,observation", [("tracking", "world"), ("tracking", "a"),
                                                  ("other", "tracking"), ("a", "viewer"),
                                                  ("pointer", "other")])
def test_every_reference_frame_and_point_frame(seed, tracking, observation):
    core, rng = random_tree(seed)
    for reference in (None, "world", "viewer", "tracking", "other", "pointer", "a"):
        for point_frame in (None, "world", "pointer", "other", observation):
            time_ns = 50 * NS + int(rng.uniform(0.3, 3.0) * NS)  # near 53 s the window is cut
            interval_ns = int(rng.uniform(0.05, 0.4) * NS) | 1  # odd: half an interval rounds
            check(core, tracking, observation, time_ns, interval_ns, reference,
                  tuple(rng.normal(size=3)), point_frame)


def test_time_zero_is_the_latest_common_time():
    core, rng = random_tree(9)
    for reference, point_frame in ((None, None), ("viewer", "pointer")):
        v = check(core, "tracking", "world", 0, 200_000_000, reference, (1, 2, 3), point_frame)
        assert v.header.stamp.nanoseconds == 52_900_000_000  # the window [52.8, 53] s


def test_the_reference_frame_only_turns_the_vectors():
    core, _ = random_tree(5)
    base = core.lookup_velocity("tracking", "world", 51.0, 0.2, reference_point=(1, -1, 2))
    for reference in ("viewer", "tracking", "other", "pointer"):
        v = core.lookup_velocity("tracking", "world", 51.0, 0.2, reference, (1, -1, 2))
        turn = matrix(core, reference, "world", 51 * NS)[:3, :3]
        assert np.allclose(lin(v), turn @ lin(base), atol=1e-12)
        assert np.allclose(ang(v), turn @ ang(base), atol=1e-12)
        assert math.isclose(np.linalg.norm(lin(v)), np.linalg.norm(lin(base)), rel_tol=1e-12)


def test_seen_the_other_way_round_the_angular_velocity_reverses():
    # w(tracking rel. observation) = -w(observation rel. tracking), in the same axes (up to
    # the estimate's second-order terms: the axis is turned at `time` one way, at the
    # window's start the other way).
    core, _ = random_tree(6)
    forward = core.lookup_velocity("tracking", "world", 51.0, 0.02)
    backward = core.lookup_velocity("world", "tracking", 51.0, 0.02, reference_frame="world")
    assert np.linalg.norm(ang(backward) + ang(forward)) < 0.02 * np.linalg.norm(ang(forward))


def test_a_point_at_the_observers_origin_moves_with_the_observed_frame():
    # The point of tracking that sits at world's origin at t: v + w x (0 - o).
    core, _ = random_tree(7)
    v = core.lookup_velocity("tracking", "world", 51.5, 0.1, "world", (0, 0, 0), "world")
    base = core.lookup_velocity("tracking", "world", 51.5, 0.1)
    o = matrix(core, "world", "tracking", int(51.5 * NS))[:3, 3]
    assert np.allclose(lin(v), lin(base) + np.cross(ang(base), -o), atol=1e-12)


def test_buffer_gives_the_cores_answers():
    core, _ = random_tree(8)
    buffer, _ = random_tree(8, make=Buffer)
    for args in (("tracking", "world", 51.0, 0.2), ("other", "a", 52.0, 0.3, "viewer", (1, 2, 3),
                                                     "pointer")):
        assert buffer.lookup_velocity(*args) == core.lookup_velocity(*args)
        assert buffer.lookup_velocity(*args, tf2_compatible=True) == \
            core.lookup_velocity(*args, tf2_compatible=True)
