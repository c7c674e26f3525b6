"""``lookup_velocity``: the twist of one frame as seen from another, as tf2 computes it.

ROS 2 tf2's ``BufferCore::lookupVelocity`` (tf2/src/buffer_core.cpp; ROS 1 tf's
``lookupTwist``), step by step and in the same floating-point order, so the values agree
field for field (see shared/tf2-reference.md §14.1):

1. ``latest`` = the latest common time of ``observation_frame`` and ``tracking_frame``
   (0 when that fails: the lookups below then raise the error).
2. In seconds, as doubles: ``end = min(time + interval/2, latest)``,
   ``start = max(0.00001 + interval, end) - interval``; ``dt = end - start``. So the
   interval is cut short at the end of the data, and time 0 means 0 s (not "latest"): the
   window then runs from 0.00001 s to ``interval/2``.
3. ``S``, ``E`` = ``observation <- tracking`` at ``start`` and ``end``.
4. linear = (E.origin - S.origin) / dt; the rotation ``S.basis^-1 E.basis`` as axis and
   angle (angle = 2 acos(w), in [0, 2 pi]); angular = (S.basis axis) angle / dt.
5. ``R`` = ``reference_frame <- tracking`` at ``time`` (time 0 = its latest common time):
   angular is rotated by R; linear = R linear + R.origin x angular. (The twist of steps 3-4
   is in observation_frame's axes, yet it is rotated by reference <- tracking: the result
   is in reference_frame's axes only when tracking_frame is not turned relative to
   observation_frame. ROS 1's lookupTwist had the same step, ros/geometry#43; we keep tf2's
   values.)
6. linear += angular x (p1 - p0), p0 = origin of ``tracking_frame`` and p1 =
   ``reference_point`` (in ``reference_point_frame``), both in ``reference_frame`` at ``time``.
7. ``header.stamp = start + interval/2`` (the full interval, even when dt was cut short),
   ``header.frame_id = reference_frame``, ``body_frame_id = tracking_frame``,
   ``reference_frame_id`` empty.

The functions take any core-like object with ``lookup_transform`` and
``get_latest_common_time`` (a ``BufferCore`` or a ``Buffer``); they hold no state.
"""

from __future__ import annotations

from math import acos, floor, sqrt

import numpy as np

from ._kernel_ext import Kernel, KernelError
from .errors import STAMP_MAX, STAMP_MIN
from .exceptions import TransformException
from .messages import Header, Twist, Vector3, VelocityStamped

_new = object.__new__
# The kernel's own calls stand in for lookup_transform only where it is the kernel's.
_KERNEL_LOOKUPS: tuple = ()  # filled at the end: BufferCore's and Buffer's lookup_transform
_set = object.__setattr__


def _lookups() -> tuple:
    global _KERNEL_LOOKUPS
    _KERNEL_LOOKUPS = _own_lookups()
    return _KERNEL_LOOKUPS
from .time import Duration, Time, duration_to_nanoseconds, to_nanoseconds

__all__ = ["lookup_velocity", "lookup_velocities"]

_NS_PER_S = 1_000_000_000
_EPSILON = 2.220446049250313e-16  # DBL_EPSILON, tf2's TF2SIMD_EPSILON for doubles


def _c_remainder(a: int, b: int) -> int:
    """C's ``a % b`` (the sign follows ``a``)."""
    r = abs(a) % b
    return -r if a < 0 else r


def _seconds_of_ns(ns: int) -> float:
    """tf2::durationToSec / timeToSec: whole seconds and nanoseconds scaled separately (the
    nanoseconds are C's remainder: their sign follows ``ns``)."""
    if ns >= 0:
        sec, nsec = divmod(ns, _NS_PER_S)
    else:
        sec, nsec = divmod(-ns, _NS_PER_S)
        sec, nsec = -sec, -nsec
    return float(sec) + 1e-9 * float(nsec)


def _c_round(x: float) -> int:
    """std::round: halfway cases away from zero."""
    r = floor(x)
    if x - r >= 0.5:
        r += 1
    return int(r)


def _ns_of_seconds(seconds: float) -> int:
    """tf2::durationFromSec / timeFromSec: floor for the seconds, nanoseconds rounded (half
    away from zero). The fraction is in [0, 1), so the rounded nanoseconds are in [0, 1e9]:
    a carry of 1e9 adds one second, which ``sec * 1e9 + nsec`` already does."""
    sec = floor(seconds)
    x = (seconds - sec) * 1e9
    nsec = floor(x)
    if x - nsec >= 0.5:
        nsec += 1
    return sec * _NS_PER_S + nsec


def _basis(q) -> tuple:
    """tf2's Matrix3x3::setRotation: the rotation matrix of quaternion ``q`` (rows)."""
    m = _basis_flat(q.x, q.y, q.z, q.w)
    return (m[0:3], m[3:6], m[6:9])


def _basis_flat(x: float, y: float, z: float, w: float) -> tuple:
    """``_basis`` of the quaternion (x, y, z, w), as 9 floats row by row (the fast path's
    form: no message, no nested tuples)."""
    d = x * x + y * y + z * z + w * w
    s = 2.0 / d
    xs, ys, zs = x * s, y * s, z * s
    wx, wy, wz = w * xs, w * ys, w * zs
    xx, xy, xz = x * xs, x * ys, x * zs
    yy, yz, zz = y * ys, y * zs, z * zs
    return (1.0 - (yy + zz), xy - wz, xz + wy,
            xy + wz, 1.0 - (xx + zz), yz - wx,
            xz - wy, yz + wx, 1.0 - (xx + yy))


def _inverse(m) -> tuple:
    """tf2's Matrix3x3::inverse (cofactors over the determinant, not the transpose)."""

    def cofac(r1, c1, r2, c2):
        return m[r1][c1] * m[r2][c2] - m[r1][c2] * m[r2][c1]

    co = (cofac(1, 1, 2, 2), cofac(1, 2, 2, 0), cofac(1, 0, 2, 1))
    det = m[0][0] * co[0] + m[0][1] * co[1] + m[0][2] * co[2]
    s = 1.0 / det
    return (
        (co[0] * s, cofac(0, 2, 2, 1) * s, cofac(0, 1, 1, 2) * s),
        (co[1] * s, cofac(0, 0, 2, 2) * s, cofac(0, 2, 1, 0) * s),
        (co[2] * s, cofac(0, 1, 2, 0) * s, cofac(0, 0, 1, 1) * s),
    )


def _product(a, b) -> tuple:
    """Matrix product (rows), unrolled: the hot part of a lookup_velocity call."""
    (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = a
    (b00, b01, b02), (b10, b11, b12), (b20, b21, b22) = b
    return (
        (a00 * b00 + a01 * b10 + a02 * b20, a00 * b01 + a01 * b11 + a02 * b21,
         a00 * b02 + a01 * b12 + a02 * b22),
        (a10 * b00 + a11 * b10 + a12 * b20, a10 * b01 + a11 * b11 + a12 * b21,
         a10 * b02 + a11 * b12 + a12 * b22),
        (a20 * b00 + a21 * b10 + a22 * b20, a20 * b01 + a21 * b11 + a22 * b21,
         a20 * b02 + a21 * b12 + a22 * b22),
    )


def _apply(m, v) -> tuple:
    r0, r1, r2 = m
    x, y, z = v
    return (r0[0] * x + r0[1] * y + r0[2] * z,
            r1[0] * x + r1[1] * y + r1[2] * z,
            r2[0] * x + r2[1] * y + r2[2] * z)


def _cross(a, b) -> tuple:
    return (
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    )


def _rotation(m) -> tuple:
    """tf2's Matrix3x3::getRotation: the quaternion (x, y, z, w) of a rotation matrix."""
    trace = m[0][0] + m[1][1] + m[2][2]
    q = [0.0, 0.0, 0.0, 0.0]
    if trace > 0.0:
        s = sqrt(trace + 1.0)
        q[3] = s * 0.5
        s = 0.5 / s
        q[0] = (m[2][1] - m[1][2]) * s
        q[1] = (m[0][2] - m[2][0]) * s
        q[2] = (m[1][0] - m[0][1]) * s
    else:
        if m[0][0] < m[1][1]:
            i = 2 if m[1][1] < m[2][2] else 1
        else:
            i = 2 if m[0][0] < m[2][2] else 0
        j = (i + 1) % 3
        k = (i + 2) % 3
        s = sqrt(m[i][i] - m[j][j] - m[k][k] + 1.0)
        q[i] = s * 0.5
        s = 0.5 / s
        q[3] = (m[k][j] - m[j][k]) * s
        q[j] = (m[j][i] + m[i][j]) * s
        q[k] = (m[k][i] + m[i][k]) * s
    return tuple(q)


def _axis_angle(q) -> tuple:
    """tf2's Quaternion::getAxis and getAngle (2 acos(w), w clamped to [-1, 1])."""
    x, y, z, w = q
    angle = 2.0 * acos(max(-1.0, min(1.0, w)))
    s_squared = 1.0 - w ** 2.0
    if s_squared < 10.0 * _EPSILON:  # tf2's guard against dividing by zero
        return (1.0, 0.0, 0.0), angle
    s = sqrt(s_squared)
    return (x / s, y / s, z / s), angle


def _origin(t) -> tuple:
    v = t.transform.translation
    return (v.x, v.y, v.z)


def _lookup(core, target_frame, source_frame, ns: int):
    return core.lookup_transform(target_frame, source_frame, Time.from_nanoseconds(ns))


def _lookup_values(core, target_frame, source_frame, ns: int) -> tuple:
    """``lookup_transform``'s translation, rotation and stamp as ``(tx, ty, tz, qx, qy, qz,
    qw, stamp)``: the kernel's tuple straight away when it takes the arguments as they are, else
    (and to raise the error) the public ``lookup_transform``, so results and exceptions are
    that call's own."""
    if (
        target_frame.__class__ is str and source_frame.__class__ is str
        and target_frame != source_frame and STAMP_MIN <= ns <= STAMP_MAX
        and core.__class__.lookup_transform in (_KERNEL_LOOKUPS or _lookups())
    ):
        try:
            return core._k_lookup(target_frame, source_frame, ns)
        except KernelError:
            pass  # lookup_transform below raises tf2's exception for it
    t = _lookup(core, target_frame, source_frame, ns)
    v, q = t.transform.translation, t.transform.rotation
    return (v.x, v.y, v.z, q.x, q.y, q.z, q.w, t.header.stamp)


def _latest_common_ns(core, target_frame, source_frame) -> int:
    """``get_latest_common_time`` in nanoseconds, 0 when it raises (tf2 ignores that error:
    the lookups report it)."""
    if (
        target_frame.__class__ is str and source_frame.__class__ is str
        and isinstance(core, Kernel)
    ):
        if not (core._k_exists(target_frame) and core._k_exists(source_frame)):
            return 0  # get_latest_common_time raises a frame error
        try:
            return core._k_common_time(target_frame, source_frame)
        except KernelError:
            return 0
    try:
        return to_nanoseconds(core.get_latest_common_time(target_frame, source_frame))
    except TransformException:
        return 0


def lookup_velocity(
    core,
    tracking_frame,
    observation_frame,
    time,
    averaging_interval,
    reference_frame=None,
    reference_point=(0.0, 0.0, 0.0),
    reference_point_frame=None,
) -> VelocityStamped:
    """The twist of ``tracking_frame`` as seen from ``observation_frame`` around ``time``
    (Time or seconds), averaged over ``averaging_interval`` (Duration or seconds), expressed
    in ``reference_frame`` (default: ``observation_frame``) about ``reference_point`` given in
    ``reference_point_frame`` (default: ``tracking_frame``, i.e. its origin). Linear in units
    per second, angular in radians per second. Raises what ``lookup_transform`` raises."""
    # The arithmetic of the helpers above (_basis, _inverse, _product, _rotation, _apply,
    # _cross), inlined on plain floats in the same order of operations: this is the hot
    # path, and Python function calls and tuples cost more than the arithmetic itself.
    if reference_frame is None:
        reference_frame = observation_frame
    if reference_point_frame is None:
        reference_point_frame = tracking_frame
    if reference_point.__class__ is tuple and len(reference_point) == 3:
        qx, qy, qz = float(reference_point[0]), float(reference_point[1]), \
            float(reference_point[2])
    else:
        point = tuple(float(c) for c in reference_point)
        if len(point) != 3:
            raise ValueError(f"reference_point has 3 coordinates, got {reference_point!r}")
        qx, qy, qz = point
    time_ns = time._ns if time.__class__ is Time else to_nanoseconds(time, "time")
    interval_ns = (averaging_interval._ns if averaging_interval.__class__ is Duration
                   else duration_to_nanoseconds(averaging_interval, "averaging_interval"))

    # The kernel's own calls when it takes the frames as they are (else, and for errors,
    # the public calls: _lookup_values, _latest_common_ns).
    fast = (
        observation_frame.__class__ is str and tracking_frame.__class__ is str
        and reference_frame.__class__ is str and core.__class__.lookup_transform in (_KERNEL_LOOKUPS or _lookups())
        and observation_frame != tracking_frame and reference_frame != tracking_frame
    )
    if fast:  # _latest_common_ns, inlined
        latest_ns = 0
        if core._k_exists(observation_frame) and core._k_exists(tracking_frame):
            try:
                latest_ns = core._k_common_time(observation_frame, tracking_frame)
            except KernelError:
                pass
    else:
        latest_ns = _latest_common_ns(core, observation_frame, tracking_frame)

    # _seconds_of_ns and _ns_of_seconds inlined for the usual non-negative times
    if time_ns >= 0:
        sec, nsec = divmod(time_ns, _NS_PER_S)
        time_s = float(sec) + 1e-9 * float(nsec)
    else:
        time_s = _seconds_of_ns(time_ns)
    interval_s = interval_ns / 1e9  # std::chrono::duration<double>: count / 1e9
    if latest_ns >= 0:
        sec, nsec = divmod(latest_ns, _NS_PER_S)
        end_s = min(time_s + interval_s * 0.5, float(sec) + 1e-9 * float(nsec))
    else:
        end_s = min(time_s + interval_s * 0.5, _seconds_of_ns(latest_ns))
    start_s = max(0.00001 + interval_s, end_s) - interval_s
    dt = end_s - start_s  # cut short at the ends of the data

    start_ns = _ns_of_seconds(start_s)
    end_ns = _ns_of_seconds(end_s)
    r = None
    if fast and STAMP_MIN <= start_ns <= STAMP_MAX and STAMP_MIN <= end_ns <= STAMP_MAX:
        try:
            r = core._k_lookup(observation_frame, tracking_frame, start_ns)
            r2 = core._k_lookup(observation_frame, tracking_frame, end_ns)
        except KernelError:
            r = None  # the calls below raise tf2's exception for it, in the same order
    if r is None:
        r = _lookup_values(core, observation_frame, tracking_frame, start_ns)
        r2 = _lookup_values(core, observation_frame, tracking_frame, end_ns)
    sx, sy, sz, x, y, z, w, _ = r
    s00, s01, s02, s10, s11, s12, s20, s21, s22 = _basis_flat(x, y, z, w)  # S
    ex, ey, ez, x, y, z, w, _ = r2
    e00, e01, e02, e10, e11, e12, e20, e21, e22 = _basis_flat(x, y, z, w)  # E

    # I = _inverse(S): cofactors over the determinant
    c0 = s11 * s22 - s12 * s21
    c1 = s12 * s20 - s10 * s22
    c2 = s10 * s21 - s11 * s20
    s = 1.0 / (s00 * c0 + s01 * c1 + s02 * c2)
    i00, i01, i02 = c0 * s, (s02 * s21 - s01 * s22) * s, (s01 * s12 - s02 * s11) * s
    i10, i11, i12 = c1 * s, (s00 * s22 - s02 * s20) * s, (s02 * s10 - s00 * s12) * s
    i20, i21, i22 = c2 * s, (s01 * s20 - s00 * s21) * s, (s00 * s11 - s01 * s10) * s

    # M = _product(I, E)
    m00 = i00 * e00 + i01 * e10 + i02 * e20
    m01 = i00 * e01 + i01 * e11 + i02 * e21
    m02 = i00 * e02 + i01 * e12 + i02 * e22
    m10 = i10 * e00 + i11 * e10 + i12 * e20
    m11 = i10 * e01 + i11 * e11 + i12 * e21
    m12 = i10 * e02 + i11 * e12 + i12 * e22
    m20 = i20 * e00 + i21 * e10 + i22 * e20
    m21 = i20 * e01 + i21 * e11 + i22 * e21
    m22 = i20 * e02 + i21 * e12 + i22 * e22

    # _axis_angle(_rotation(M))
    trace = m00 + m11 + m22
    if trace > 0.0:
        s = sqrt(trace + 1.0)
        w = s * 0.5
        s = 0.5 / s
        x = (m21 - m12) * s
        y = (m02 - m20) * s
        z = (m10 - m01) * s
    else:
        x, y, z, w = _rotation(((m00, m01, m02), (m10, m11, m12), (m20, m21, m22)))
    angle = 2.0 * acos(max(-1.0, min(1.0, w)))
    s_squared = 1.0 - w ** 2.0
    if s_squared < 10.0 * _EPSILON:  # tf2's guard against dividing by zero
        ax, ay, az = 1.0, 0.0, 0.0
    else:
        s = sqrt(s_squared)
        ax, ay, az = x / s, y / s, z / s

    # o = S axis; linear = (E.origin - S.origin) / dt; angular = o angle / dt
    ox = s00 * ax + s01 * ay + s02 * az
    oy = s10 * ax + s11 * ay + s12 * az
    oz = s20 * ax + s21 * ay + s22 * az
    vx, vy, vz = (ex - sx) / dt, (ey - sy) / dt, (ez - sz) / dt
    scale = angle / dt
    rx, ry, rz = ox * scale, oy * scale, oz * scale

    # Express it in the reference frame (the transform R at the requested time itself).
    at_ns = _ns_of_seconds(time_s)
    r = None
    if fast and STAMP_MIN <= at_ns <= STAMP_MAX:
        try:
            r = core._k_lookup(reference_frame, tracking_frame, at_ns)
        except KernelError:
            pass
    if r is None:
        r = _lookup_values(core, reference_frame, tracking_frame, at_ns)
    px, py, pz, x, y, z, w, _ = r
    b00, b01, b02, b10, b11, b12, b20, b21, b22 = _basis_flat(x, y, z, w)  # R
    # angular = R angular; linear = R linear + R.origin x angular
    wx = b00 * rx + b01 * ry + b02 * rz
    wy = b10 * rx + b11 * ry + b12 * rz
    wz = b20 * rx + b21 * ry + b22 * rz
    lx = (b00 * vx + b01 * vy + b02 * vz) + (py * wz - pz * wy)
    ly = (b10 * vx + b11 * vy + b12 * vz) + (pz * wx - px * wz)
    lz = (b20 * vx + b21 * vy + b22 * vz) + (px * wy - py * wx)

    # Re-reference about the requested point: p1 - p0, both in reference_frame at time.
    # p0 is tracking's origin through the transform R just looked up (the same lookup tf2
    # repeats; R's basis times a zero vector is kept: it decides the sign of a zero), and so
    # is p1 when the point is given in tracking_frame.
    # (R basis * 0 + origin is the origin itself but for the sign of a zero origin.)
    p0x = px if px else (b00 * 0.0 + b01 * 0.0 + b02 * 0.0) + px
    p0y = py if py else (b10 * 0.0 + b11 * 0.0 + b12 * 0.0) + py
    p0z = pz if pz else (b20 * 0.0 + b21 * 0.0 + b22 * 0.0) + pz
    if reference_point_frame != tracking_frame:
        px, py, pz, x, y, z, w, _ = _lookup_values(core, reference_frame, reference_point_frame,
                                                   at_ns)
        d = x * x + y * y + z * z + w * w
        s = 2.0 / d
        xs, ys, zs = x * s, y * s, z * s
        wx_, wy_, wz_ = w * xs, w * ys, w * zs
        xx, xy, xz = x * xs, x * ys, x * zs
        yy, yz, zz = y * ys, y * zs, z * zs
        b00, b01, b02 = 1.0 - (yy + zz), xy - wz_, xz + wy_
        b10, b11, b12 = xy + wz_, 1.0 - (xx + zz), yz - wx_
        b20, b21, b22 = xz - wy_, yz + wx_, 1.0 - (xx + yy)
    dx = ((b00 * qx + b01 * qy + b02 * qz) + px) - p0x
    dy = ((b10 * qx + b11 * qy + b12 * qz) + py) - p0y
    dz = ((b20 * qx + b21 * qy + b22 * qz) + pz) - p0z
    lx = lx + (wy * dz - wz * dy)
    ly = ly + (wz * dx - wx * dz)
    lz = lz + (wx * dy - wy * dx)

    # VelocityStamped(Header(stamp, reference_frame), tracking_frame, "",
    # Twist(Vector3(linear), Vector3(angular))), built without the constructors' calls.
    stamp = _new(Time)
    _set(stamp, "_ns", _ns_of_seconds(start_s + interval_s * 0.5))
    header = _new(Header)
    header.stamp = stamp
    header.frame_id = reference_frame
    linear = _new(Vector3)
    linear.x = lx
    linear.y = ly
    linear.z = lz
    angular = _new(Vector3)
    angular.x = wx
    angular.y = wy
    angular.z = wz
    velocity = _new(Twist)
    velocity.linear = linear
    velocity.angular = angular
    out = _new(VelocityStamped)
    out.header = header
    out.body_frame_id = tracking_frame
    out.reference_frame_id = ""
    out.velocity = velocity
    return out


def _point_through(t, basis, point) -> tuple:
    """tf2's Transform * Vector3: ``basis * point + origin``."""
    rotated = _apply(basis, point)
    o = _origin(t)
    return (rotated[0] + o[0], rotated[1] + o[1], rotated[2] + o[2])


def _transform_point(core, target_frame, source_frame, point, ns: int) -> tuple:
    """``point`` in ``source_frame`` expressed in ``target_frame`` at ``ns``."""
    t = _lookup(core, target_frame, source_frame, ns)
    return _point_through(t, _basis(t.transform.rotation), point)


# -- batch form ----------------------------------------------------------------------------------

def _ns_of_seconds_many(seconds: np.ndarray) -> np.ndarray:
    """``_ns_of_seconds`` over an array (floor for the seconds, nanoseconds rounded half away
    from zero)."""
    sec = np.floor(seconds)
    frac = (seconds - sec) * 1e9
    nsec = np.floor(frac)
    nsec = nsec + (frac - nsec >= 0.5)
    sec = sec.astype(np.int64) + (nsec // 1e9).astype(np.int64)
    return sec * _NS_PER_S + np.fmod(nsec, 1e9).astype(np.int64)


def _seconds_of_ns_many(ns: np.ndarray) -> np.ndarray:
    nsec = np.fmod(ns, _NS_PER_S)  # C's %: the sign follows ns
    sec = (ns - nsec) // _NS_PER_S
    return sec.astype(np.float64) + 1e-9 * nsec.astype(np.float64)


def _rotation_many(m: np.ndarray) -> np.ndarray:
    """``_rotation`` (tf2's getRotation) over ``(N, 3, 3)``: quaternions ``(N, 4)``."""
    n = len(m)
    q = np.empty((n, 4))
    trace = m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2]
    positive = trace > 0.0
    if positive.any():
        mp = m[positive]
        s = np.sqrt(trace[positive] + 1.0)
        q[positive, 3] = s * 0.5
        s = 0.5 / s
        q[positive, 0] = (mp[:, 2, 1] - mp[:, 1, 2]) * s
        q[positive, 1] = (mp[:, 0, 2] - mp[:, 2, 0]) * s
        q[positive, 2] = (mp[:, 1, 0] - mp[:, 0, 1]) * s
    for k in np.flatnonzero(~positive).tolist():  # rotations over 120 degrees: rare
        q[k] = _rotation(m[k].tolist())
    return q


def lookup_velocities(
    core,
    tracking_frame,
    observation_frame,
    times,
    averaging_interval,
    reference_frame=None,
    reference_point=(0.0, 0.0, 0.0),
    reference_point_frame=None,
):
    """``lookup_velocity`` at N times at once, vectorised over the lookups
    (``core.lookup_transforms``) and the arithmetic.

    ``times`` is a sequence of N times (``Time``s, or float seconds). Returns ``(stamps,
    twists)``: the stamps each ``VelocityStamped`` would carry (int64 nanoseconds, ``(N,)``)
    and ``(N, 6)`` rows ``(linear x, y, z, angular x, y, z)``, the values of
    ``lookup_velocity`` at each time (equal up to rounding: the batch lookups return matrices,
    not quaternions). Raises what ``lookup_transforms`` raises for the first time that fails.
    """
    if reference_frame is None:
        reference_frame = observation_frame
    if reference_point_frame is None:
        reference_point_frame = tracking_frame
    point = np.array([float(c) for c in reference_point])
    if point.shape != (3,):
        raise ValueError(f"reference_point has 3 coordinates, got {reference_point!r}")
    # The same conversion as lookup_velocity's, per time (float seconds lose nothing more).
    if isinstance(times, np.ndarray):
        times = times.reshape(-1).tolist()
    time_ns = np.fromiter((to_nanoseconds(t, "time") for t in times), dtype=np.int64)
    n = len(time_ns)
    interval_ns = duration_to_nanoseconds(averaging_interval, "averaging_interval")
    try:
        latest_ns = to_nanoseconds(core.get_latest_common_time(observation_frame, tracking_frame))
    except TransformException:
        latest_ns = 0
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 6))

    time_s = _seconds_of_ns_many(time_ns)
    interval_s = interval_ns / 1e9
    end_s = np.minimum(time_s + interval_s * 0.5, _seconds_of_ns(latest_ns))
    start_s = np.maximum(0.00001 + interval_s, end_s) - interval_s
    dt = (end_s - start_s)[:, None]

    def at(target, source, ns):
        return core.lookup_transforms(target, source, [Time.from_nanoseconds(t)
                                                       for t in ns.tolist()])

    start = at(observation_frame, tracking_frame, _ns_of_seconds_many(start_s))
    end = at(observation_frame, tracking_frame, _ns_of_seconds_many(end_s))
    s_basis, e_basis = start[:, :3, :3], end[:, :3, :3]
    relative = np.linalg.inv(s_basis) @ e_basis
    q = _rotation_many(relative)
    w = q[:, 3]
    angle = 2.0 * np.arccos(np.clip(w, -1.0, 1.0))
    s_squared = 1.0 - w ** 2.0
    safe = s_squared >= 10.0 * _EPSILON
    axis = np.where(safe[:, None], q[:, :3] / np.sqrt(np.where(safe, s_squared, 1.0))[:, None],
                    np.array([1.0, 0.0, 0.0]))
    o = np.einsum("nij,nj->ni", s_basis, axis)
    twist_vel = (end[:, :3, 3] - start[:, :3, 3]) / dt
    twist_rot = o * (angle[:, None] / dt)

    at_ns = _ns_of_seconds_many(time_s)
    inverse = at(reference_frame, tracking_frame, at_ns)
    r_basis, r_origin = inverse[:, :3, :3], inverse[:, :3, 3]
    out_rot = np.einsum("nij,nj->ni", r_basis, twist_rot)
    out_vel = np.einsum("nij,nj->ni", r_basis, twist_vel) + np.cross(r_origin, out_rot)
    p0 = r_origin
    if reference_point_frame == tracking_frame:
        p1 = r_basis @ point + r_origin
    else:
        q_tf = at(reference_frame, reference_point_frame, at_ns)
        p1 = q_tf[:, :3, :3] @ point + q_tf[:, :3, 3]
    out_vel = out_vel + np.cross(out_rot, p1 - p0)
    stamps = _ns_of_seconds_many(start_s + interval_s * 0.5)
    return stamps, np.hstack((out_vel, out_rot))


def _own_lookups() -> tuple:
    from .buffer import Buffer
    from .core import BufferCore

    return (BufferCore.lookup_transform, Buffer.lookup_transform)
