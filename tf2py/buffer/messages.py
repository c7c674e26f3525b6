"""Plain message classes mirroring geometry_msgs, and ``make_transform``.

A ``Transform`` stored for (parent P, child C) maps coordinates expressed in C into P.
Quaternions are ``(x, y, z, w)``; a default one is the identity (``w=1``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from ._kernel_ext import build_transform as _build_transform
from ._kernel_ext import matrix as _matrix
from .time import Time, to_nanoseconds

__all__ = [
    "Vector3",
    "Point",
    "Quaternion",
    "Transform",
    "Pose",
    "Header",
    "TransformStamped",
    "PointStamped",
    "Vector3Stamped",
    "PoseStamped",
    "Twist",
    "VelocityStamped",
    "make_transform",
    "quaternion_from_rpy",
    "rpy_from_quaternion",
]


class _Message:
    """Equality, repr and copying from ``__slots__``; no per-instance dict."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__slots__:
            cls._fields = tuple(cls.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._fields)

    # Mutable, so unhashable (as rclpy's messages); mypy cannot express None here.
    __hash__: ClassVar[None]  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({fields})"


_X = TypeVar("_X", bound="_XYZ")


class _XYZ(_Message):
    __slots__ = ("x", "y", "z")

    def __init__(self, x: float = 0.0, y: float = 0.0, z: float = 0.0):
        self.x = x
        self.y = y
        self.z = z

    def __iter__(self) -> Iterator[float]:
        return iter((self.x, self.y, self.z))

    def __copy__(self: _X) -> _X:
        return type(self)(self.x, self.y, self.z)


class Vector3(_XYZ):
    """A vector (x, y, z)."""

    __slots__ = ()


class Point(_XYZ):
    """A point (x, y, z)."""

    __slots__ = ()


class Quaternion(_Message):
    """A rotation as a quaternion (x, y, z, w); the default is the identity."""

    __slots__ = ("x", "y", "z", "w")

    def __init__(self, x: float = 0.0, y: float = 0.0, z: float = 0.0, w: float = 1.0):
        self.x = x
        self.y = y
        self.z = z
        self.w = w

    def __iter__(self) -> Iterator[float]:
        return iter((self.x, self.y, self.z, self.w))

    def __copy__(self) -> Quaternion:
        return Quaternion(self.x, self.y, self.z, self.w)


def _matrix_from_quaternion(x: float, y: float, z: float, w: float) -> npt.NDArray[np.float64]:
    """The 3x3 rotation matrix of a quaternion (scale 2/|q|², as tf2), computed by the
    kernel's own function."""
    return np.array(_matrix((0.0, 0.0, 0.0, x, y, z, w))).reshape(4, 4)[:3, :3]


def _quaternion_from_matrix(m: npt.ArrayLike) -> tuple[float, float, float, float]:
    """Shepperd's method: the largest of w, x, y, z is computed first for stability."""
    m = np.asarray(m, dtype=np.float64)
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0.0:
        s = math.sqrt(trace + 1.0) * 2.0
        w = 0.25 * s
        x = (m[2, 1] - m[1, 2]) / s
        y = (m[0, 2] - m[2, 0]) / s
        z = (m[1, 0] - m[0, 1]) / s
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2.0
        w = (m[2, 1] - m[1, 2]) / s
        x = 0.25 * s
        y = (m[0, 1] + m[1, 0]) / s
        z = (m[0, 2] + m[2, 0]) / s
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2.0
        w = (m[0, 2] - m[2, 0]) / s
        x = (m[0, 1] + m[1, 0]) / s
        y = 0.25 * s
        z = (m[1, 2] + m[2, 1]) / s
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2.0
        w = (m[1, 0] - m[0, 1]) / s
        x = (m[0, 2] + m[2, 0]) / s
        y = (m[1, 2] + m[2, 1]) / s
        z = 0.25 * s
    return float(x), float(y), float(z), float(w)


def _check_rigid(m: np.ndarray, tolerance: float = 1e-6) -> None:
    """ValueError unless ``m`` (4x4) is a rigid transform."""
    if not np.isfinite(m).all():
        raise ValueError("Transform.from_matrix needs a finite matrix")
    if np.abs(m[3] - (0.0, 0.0, 0.0, 1.0)).max() > tolerance:
        raise ValueError(f"Transform.from_matrix: the bottom row must be (0, 0, 0, 1), got {m[3]}")
    r = m[:3, :3]
    gram = r.T @ r
    if np.abs(gram - np.eye(3)).max() > tolerance:
        scale = gram[0, 0]
        if np.abs(gram - scale * np.eye(3)).max() <= tolerance * max(scale, 1.0):
            raise ValueError(
                f"Transform.from_matrix: the rotation block has a scale of {math.sqrt(scale):g}; "
                "a rigid transform has none"
            )
        raise ValueError("Transform.from_matrix: the rotation block is not orthonormal (a shear?)")
    if np.linalg.det(r) < 0.0:
        raise ValueError(
            "Transform.from_matrix: the rotation block is a reflection (determinant -1), "
            "not a rotation"
        )


class Transform(_Message):
    """A rigid transform: rotate by ``rotation``, then translate by ``translation``."""

    __slots__ = ("translation", "rotation")

    def __init__(self, translation: Vector3 | None = None, rotation: Quaternion | None = None):
        self.translation = Vector3() if translation is None else translation
        self.rotation = Quaternion() if rotation is None else rotation

    def as_matrix(self) -> np.ndarray:
        """The 4x4 homogeneous matrix of this transform."""
        q = self.rotation
        t = self.translation
        m = np.eye(4)
        m[:3, :3] = _matrix_from_quaternion(q.x, q.y, q.z, q.w)
        m[0, 3] = t.x
        m[1, 3] = t.y
        m[2, 3] = t.z
        return m

    @classmethod
    def from_matrix(cls, m: npt.ArrayLike) -> Transform:
        """A Transform from a 4x4 homogeneous matrix of a rigid transform: a rotation block
        that is orthonormal with determinant +1 (no scale, shear or reflection) and a bottom
        row (0, 0, 0, 1); anything else is a ``ValueError`` saying which."""
        m = np.asarray(m, dtype=float)
        if m.shape != (4, 4):
            raise ValueError(f"Transform.from_matrix needs a 4x4 matrix, got shape {m.shape}")
        _check_rigid(m)
        x, y, z, w = _quaternion_from_matrix(m[:3, :3])
        return cls(
            Vector3(float(m[0, 3]), float(m[1, 3]), float(m[2, 3])), Quaternion(x, y, z, w)
        )

    def __copy__(self) -> Transform:
        return Transform(self.translation.__copy__(), self.rotation.__copy__())


class Pose(_Message):
    """A position and an orientation."""

    __slots__ = ("position", "orientation")

    def __init__(self, position: Point | None = None, orientation: Quaternion | None = None):
        self.position = Point() if position is None else position
        self.orientation = Quaternion() if orientation is None else orientation


class Header(_Message):
    """A stamp and the frame the data is expressed in. ``stamp`` also takes seconds."""

    __slots__ = ("stamp", "frame_id")

    def __init__(self, stamp: Time | float | None = None, frame_id: str = ""):
        if stamp is None:
            stamp = Time()
        elif type(stamp) is not Time:
            stamp = Time.from_nanoseconds(to_nanoseconds(stamp, "stamp"))
        self.stamp: Time = stamp
        self.frame_id = frame_id


class TransformStamped(_Message):
    """The transform that maps data in ``child_frame_id`` into ``header.frame_id``."""

    __slots__ = ("header", "child_frame_id", "transform")

    def __init__(
        self,
        header: Header | None = None,
        child_frame_id: str = "",
        transform: Transform | None = None,
    ):
        self.header = Header() if header is None else header
        self.child_frame_id = child_frame_id
        self.transform = Transform() if transform is None else transform


class PointStamped(_Message):
    __slots__ = ("header", "point")

    def __init__(self, header: Header | None = None, point: Point | None = None):
        self.header = Header() if header is None else header
        self.point = Point() if point is None else point


class Vector3Stamped(_Message):
    __slots__ = ("header", "vector")

    def __init__(self, header: Header | None = None, vector: Vector3 | None = None):
        self.header = Header() if header is None else header
        self.vector = Vector3() if vector is None else vector


class PoseStamped(_Message):
    __slots__ = ("header", "pose")

    def __init__(self, header: Header | None = None, pose: Pose | None = None):
        self.header = Header() if header is None else header
        self.pose = Pose() if pose is None else pose


def quaternion_from_rpy(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) of the rotation by roll about x, then pitch about y, then yaw about z
    (fixed axes; tf2's setRPY). Angles in radians."""
    cr, sr = math.cos(roll * 0.5), math.sin(roll * 0.5)
    cp, sp = math.cos(pitch * 0.5), math.sin(pitch * 0.5)
    cy, sy = math.cos(yaw * 0.5), math.sin(yaw * 0.5)
    return (
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
        cr * cp * cy + sr * sp * sy,
    )


def rpy_from_quaternion(x: float, y: float, z: float, w: float) -> tuple[float, float, float]:
    """(roll, pitch, yaw) in radians of a quaternion, the inverse of ``quaternion_from_rpy``."""
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if n == 0.0:
        raise ValueError("zero quaternion has no rotation")
    x, y, z, w = x / n, y / n, z / n, w / n
    roll = math.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    sinp = 2.0 * (w * y - z * x)
    pitch = math.copysign(math.pi / 2.0, sinp) if abs(sinp) >= 1.0 else math.asin(sinp)
    yaw = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return roll, pitch, yaw


def make_transform(
    parent: str,
    child: str,
    translation: Sequence[float] = (0.0, 0.0, 0.0),
    rotation: Sequence[float] = (0.0, 0.0, 0.0, 1.0),
    stamp: Time | float = 0,
    rpy: Sequence[float] | None = None,
) -> TransformStamped:
    """A TransformStamped that maps data in ``child`` into ``parent``.

    ``rotation`` is an (x, y, z, w) quaternion; ``rpy=(roll, pitch, yaw)`` in radians may be
    given instead. ``stamp`` is a Time or seconds.
    """
    if rpy is None:
        # Tuples or lists of numbers and a Time or seconds: built in C++ (the kernel's
        # module); None for anything else, checked and converted below.
        message = _build_transform(parent, child, translation, rotation, stamp)
        if message is not None:
            return message
    return _make_transform_checked(parent, child, translation, rotation, stamp, rpy)


def _make_transform_checked(
    parent: str, child: str, translation: Any, rotation: Any, stamp: Any, rpy: Any
) -> TransformStamped:
    """``make_transform`` for any argument form: checked, converted, built in Python."""
    if rpy is not None:
        if tuple(rotation) != (0.0, 0.0, 0.0, 1.0):
            raise ValueError("make_transform takes rotation or rpy, not both")
        if len(rpy) != 3:
            raise ValueError(f"rpy must be (roll, pitch, yaw), got {rpy!r}")
        rotation = quaternion_from_rpy(*(float(a) for a in rpy))
    if len(translation) != 3:
        raise ValueError(f"translation must be (x, y, z), got {translation!r}")
    if len(rotation) != 4:
        raise ValueError(f"rotation must be an (x, y, z, w) quaternion, got {rotation!r}")
    tx, ty, tz = (float(v) for v in translation)
    qx, qy, qz, qw = (float(v) for v in rotation)
    return TransformStamped(
        Header(stamp, parent),
        child,
        Transform(Vector3(tx, ty, tz), Quaternion(qx, qy, qz, qw)),
    )


_new = object.__new__
_set = object.__setattr__


def stamped(
    target_frame: str, source_frame: str, values: Sequence[Any], time: object
) -> TransformStamped:
    """The ``TransformStamped`` of a lookup, built without the constructors' checks (the
    lookup hot path): ``values`` = ``(tx, ty, tz, qx, qy, qz, qw, stamp_ns)``; ``time``, the
    time asked for, is reused as the stamp when it is that ``Time``."""
    t = values[7]
    stamp: Time
    if type(time) is not Time or time.nanoseconds != t:
        stamp = _new(Time)
        _set(stamp, "nanoseconds", t)
    else:
        stamp = time
    header = _new(Header)
    header.stamp = stamp
    header.frame_id = target_frame
    translation = _new(Vector3)
    translation.x = values[0]
    translation.y = values[1]
    translation.z = values[2]
    rotation = _new(Quaternion)
    rotation.x = values[3]
    rotation.y = values[4]
    rotation.z = values[5]
    rotation.w = values[6]
    transform = _new(Transform)
    transform.translation = translation
    transform.rotation = rotation
    out = _new(TransformStamped)
    out.header = header
    out.child_frame_id = source_frame
    out.transform = transform
    return out


class Twist(_Message):
    """Velocity: ``linear`` (units per second) and ``angular`` (radians per second)."""

    __slots__ = ("linear", "angular")

    def __init__(self, linear: Vector3 | None = None, angular: Vector3 | None = None):
        self.linear = Vector3() if linear is None else linear
        self.angular = Vector3() if angular is None else angular


class VelocityStamped(_Message):
    """geometry_msgs/VelocityStamped: the twist of ``body_frame_id``, expressed in
    ``header.frame_id``; what ``lookup_velocity`` returns (``reference_frame_id`` empty, as
    tf2 leaves it)."""

    __slots__ = ("header", "body_frame_id", "reference_frame_id", "velocity")

    def __init__(
        self,
        header: Header | None = None,
        body_frame_id: str = "",
        reference_frame_id: str = "",
        velocity: Twist | None = None,
    ):
        self.header = Header() if header is None else header
        self.body_frame_id = body_frame_id
        self.reference_frame_id = reference_frame_id
        self.velocity = Twist() if velocity is None else velocity
