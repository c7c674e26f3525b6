"""lookup_velocity's physical answer against finite differences of random smooth
trajectories, differentiated here from their closed form (not through the buffer).

Two moving links world -> a -> b; the buffer holds them sampled every 5 ms, and the windows
end on samples, so the estimate differs from the derivative only by the chord's O(I²)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tf2py import Duration, Time, make_transform
from tf2py.buffer.core import BufferCore

STEP_NS = 5_000_000
N = 401  # samples: 0 .. 2 s


def rpy_matrix(roll, pitch, yaw):
    cr, sr, cp, sp, cy, sy = (math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch),
                              math.cos(yaw), math.sin(yaw))
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    return rz @ ry @ rx


class Link:
    """A pose whose six parameters (x, y, z, roll, pitch, yaw) are a + b t + c sin(w t + d)."""

    def __init__(self, params):
        self.a, self.b, self.c, self.w, self.d = (np.asarray(p, dtype=float) for p in params)

    def values(self, t):
        return self.a + self.b * t + self.c * np.sin(self.w * t + self.d)

    def matrix(self, t):
        v = self.values(t)
        m = np.eye(4)
        m[:3, :3] = rpy_matrix(*v[3:])
        m[:3, 3] = v[:3]
        return m


def derivative(f, t, h=1e-5):
    return (f(t + h) - f(t - h)) / (2 * h)


def vee(skew):
    return np.array([skew[2, 1] - skew[1, 2], skew[0, 2] - skew[2, 0], skew[1, 0] - skew[0, 1]]) / 2


six = st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6)
link = st.tuples(six, six, st.lists(st.floats(0.0, 0.5), min_size=6, max_size=6),
                 st.lists(st.floats(0.5, 2.0), min_size=6, max_size=6), six)


@settings(max_examples=25, deadline=None)
@given(first=link, second=link, k=st.integers(100, 300), window=st.integers(1, 4),
       point=st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3),
       viewer=st.lists(st.floats(-3.0, 3.0), min_size=6, max_size=6))
def test_agrees_with_the_derivative_of_the_trajectory(first, second, k, window, point, viewer):
    links = [Link(first), Link(second)]
    core = BufferCore()
    for i in range(N):
        t = i * STEP_NS / 1e9
        for (parent, child), moving in zip((("world", "a"), ("a", "b")), links):
            v = moving.values(t)
            core.set_transform(make_transform(parent, child, tuple(v[:3]), rpy=tuple(v[3:]),
                                              stamp=Time.from_nanoseconds(i * STEP_NS)), "x")
    core.set_transform_static(make_transform("world", "viewer", tuple(viewer[:3]),
                                             rpy=tuple(viewer[3:])), "x")

    def pose(t):  # T(world <- b) in closed form
        return links[0].matrix(t) @ links[1].matrix(t)

    t = k * STEP_NS / 1e9
    m = pose(t)
    p = m[:3, :3] @ np.asarray(point) + m[:3, 3]  # the point of b, in world at t
    rate = derivative(pose, t)
    omega = vee(rate[:3, :3] @ m[:3, :3].T)  # R' R^T = [w]x
    velocity = rate[:3, :3] @ np.asarray(point) + rate[:3, 3]  # d/dt (R p_b + o)

    interval = Duration(0, 2 * window * STEP_NS)
    got = core.lookup_velocity("b", "world", Time.from_nanoseconds(k * STEP_NS), interval,
                               reference_point=tuple(point))
    lin = np.array([got.velocity.linear.x, got.velocity.linear.y, got.velocity.linear.z])
    ang = np.array([got.velocity.angular.x, got.velocity.angular.y, got.velocity.angular.z])
    tolerance = 2e-3 * (1.0 + np.linalg.norm(velocity) + np.linalg.norm(omega))
    assert np.linalg.norm(ang - omega) < tolerance, (ang, omega)
    assert np.linalg.norm(lin - velocity) < tolerance * (1.0 + np.linalg.norm(point)), (lin, velocity)

    # The same in viewer's axes and with the point named in a's coordinates.
    turn = np.linalg.inv(core.lookup_transform("world", "viewer", 0).transform.as_matrix())[:3, :3]
    in_a = np.linalg.inv(links[0].matrix(t)) @ np.append(p, 1.0)
    seen = core.lookup_velocity("b", "world", Time.from_nanoseconds(k * STEP_NS), interval,
                                "viewer", tuple(in_a[:3]), "a")
    assert np.allclose([seen.velocity.linear.x, seen.velocity.linear.y, seen.velocity.linear.z],
                       turn @ lin, atol=1e-9)
    assert np.allclose([seen.velocity.angular.x, seen.velocity.angular.y, seen.velocity.angular.z],
                       turn @ ang, atol=1e-9)

    # The batch form gives the same rows.
    rows = core.lookup_velocities("b", "world", [Time.from_nanoseconds(k * STEP_NS)], interval,
                                  reference_point=tuple(point))
    assert np.allclose(rows[0], np.concatenate([lin, ang]), atol=1e-12)
