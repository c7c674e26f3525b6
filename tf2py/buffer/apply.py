"""Applying a looked-up transform to geometry: points, vectors, poses, transforms, arrays.

Every function takes ``transform``, a ``TransformStamped`` that maps data in its
``child_frame_id`` into its ``header.frame_id`` (what ``lookup_transform(target_frame,
source_frame, time)`` returns), and data expressed in the child frame; the result is
expressed in ``transform.header.frame_id`` and carries ``transform.header`` (frame id and
stamp), as tf2_geometry_msgs does. Inputs are never modified. Lengths are in the units of
the transform (metres in ROS), angles in radians.

Single objects go through the kernel's ``compose`` (one implementation of the maths, and
cheaper than numpy on one 3-vector); ``transform_point_array`` is vectorised over N points
with numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ._kernel_ext import compose as _compose  # the kernel's: one implementation of the maths
from .convert import convert, message_fields
from .messages import (
    Header,
    Point,
    PointStamped,
    Pose,
    PoseStamped,
    Quaternion,
    Transform,
    TransformStamped,
    Vector3,
    Vector3Stamped,
    _matrix_from_quaternion,
)

__all__ = [
    "SUPPORTED_TYPES",
    "do_transform",
    "do_transform_point",
    "do_transform_vector3",
    "do_transform_pose",
    "do_transform_transform",
    "transform_function",
    "transform_point_array",
    "as_point_array",
    "rotation_matrix",
    "copy_transform_stamped",
]


def _unit_quaternion(q: Quaternion) -> tuple[float, float, float, float]:
    """(x, y, z, w) of ``q`` scaled to unit length (lookups return unit quaternions; this
    keeps a hand-made, slightly off one from scaling the data)."""
    x, y, z, w = float(q.x), float(q.y), float(q.z), float(q.w)
    n = x * x + y * y + z * z + w * w
    if n == 0.0 or n != n:
        raise ValueError(f"transform rotation ({x}, {y}, {z}, {w}) is not a rotation")
    if abs(n - 1.0) > 1e-12:
        s = 1.0 / math.sqrt(n)
        x, y, z, w = x * s, y * s, z * s, w * s
    return x, y, z, w


def rotation_matrix(transform: TransformStamped) -> np.ndarray:
    """The 3x3 rotation matrix of ``transform`` (its quaternion normalised)."""
    return _matrix_from_quaternion(*_unit_quaternion(transform.transform.rotation))


def _header(transform: TransformStamped) -> Header:
    h = transform.header
    return Header(h.stamp, h.frame_id)


def do_transform_point(point: PointStamped, transform: TransformStamped) -> PointStamped:
    """``point`` (in the transform's child frame) expressed in ``transform.header.frame_id``."""
    q = _unit_quaternion(transform.transform.rotation)
    t = transform.transform.translation
    p = point.point
    x, y, z = _compose((t.x, t.y, t.z, *q), (p.x, p.y, p.z, 0.0, 0.0, 0.0, 1.0))[:3]
    return PointStamped(_header(transform), Point(x, y, z))


def do_transform_vector3(vector: Vector3Stamped, transform: TransformStamped) -> Vector3Stamped:
    """``vector`` rotated into ``transform.header.frame_id``; the translation is ignored, as
    tf2_geometry_msgs does (a direction or a velocity does not move with the origin)."""
    q = _unit_quaternion(transform.transform.rotation)
    v = vector.vector
    x, y, z = _compose((0.0, 0.0, 0.0, *q), (v.x, v.y, v.z, 0.0, 0.0, 0.0, 1.0))[:3]
    return Vector3Stamped(_header(transform), Vector3(x, y, z))


def do_transform_pose(pose: PoseStamped, transform: TransformStamped) -> PoseStamped:
    """``pose`` (in the transform's child frame) expressed in ``transform.header.frame_id``:
    position rotated and translated, orientation = transform rotation ⊗ pose orientation."""
    q = _unit_quaternion(transform.transform.rotation)
    t = transform.transform.translation
    p = pose.pose.position
    o = pose.pose.orientation
    x, y, z, ox, oy, oz, ow = _compose((t.x, t.y, t.z, *q), (p.x, p.y, p.z, o.x, o.y, o.z, o.w))
    return PoseStamped(
        _header(transform),
        Pose(Point(x, y, z), Quaternion(ox, oy, oz, ow)),
    )


def do_transform_transform(
    transform_in: TransformStamped, transform: TransformStamped
) -> TransformStamped:
    """``transform ∘ transform_in``: ``transform_in`` maps its child frame into the
    transform's child frame; the result maps the same child frame
    (``transform_in.child_frame_id``) into ``transform.header.frame_id``."""
    q = _unit_quaternion(transform.transform.rotation)
    t = transform.transform.translation
    ti = transform_in.transform.translation
    qi = transform_in.transform.rotation
    x, y, z, rx, ry, rz, rw = _compose(
        (t.x, t.y, t.z, *q), (ti.x, ti.y, ti.z, qi.x, qi.y, qi.z, qi.w)
    )
    return TransformStamped(
        _header(transform),
        transform_in.child_frame_id,
        Transform(Vector3(x, y, z), Quaternion(rx, ry, rz, rw)),
    )


#: A ``do_transform_*`` function: (data, transform) -> the data in the transform's parent frame.
#: The table below holds one per message type, so its argument and result types vary.
ApplyFunction = Callable[[Any, TransformStamped], Any]
_T = TypeVar("_T")

# type -> function; the frame the data is in is always obj.header.frame_id.
_DISPATCH: dict[type, ApplyFunction] = {
    PointStamped: do_transform_point,
    Vector3Stamped: do_transform_vector3,
    PoseStamped: do_transform_pose,
    TransformStamped: do_transform_transform,
}

SUPPORTED_TYPES: tuple[type, ...] = tuple(_DISPATCH)


def _unsupported(obj: object) -> TypeError:
    names = ", ".join(cls.__name__ for cls in SUPPORTED_TYPES)
    return TypeError(
        f"cannot transform an object of type {type(obj).__module__}.{type(obj).__qualname__}; "
        f"supported types are {names}"
    )


# For objects of the same shape from elsewhere (rclpy's geometry_msgs): the field that
# tells them apart, beside ``header``, and the tf2py type whose function applies.
_BY_SHAPE = (
    ("point", PointStamped),
    ("vector", Vector3Stamped),
    ("pose", PoseStamped),
    ("child_frame_id", TransformStamped),
)


def _same_shape(obj: object) -> ApplyFunction | None:
    """The function for an object of another class shaped like one of ours; its result
    comes back in ``obj``'s own class (e.g. rclpy's) when that class can be filled by
    ``convert``, else as the tf2py type."""
    if not hasattr(obj, "header"):
        return None
    for field, cls in _BY_SHAPE:
        if hasattr(obj, field):
            function = _DISPATCH[cls]
            if message_fields(type(obj)) is None:
                return function
            return lambda o, t: convert(function(o, t), type(o))
    return None


def transform_function(obj: _T) -> Callable[[_T, TransformStamped], _T]:
    """The ``do_transform_*`` function for ``obj``'s type (or shape: rclpy's messages too);
    ``TypeError`` naming the supported types when there is none."""
    function = _DISPATCH.get(obj.__class__)
    if function is None:
        for cls, candidate in _DISPATCH.items():
            if isinstance(obj, cls):
                return candidate
        function = _same_shape(obj)
        if function is None:
            raise _unsupported(obj)
    return function


def do_transform(obj: _T, transform: TransformStamped) -> _T:
    """Apply ``transform`` to a PointStamped, Vector3Stamped, PoseStamped or
    TransformStamped; a new object of the same type comes back."""
    return transform_function(obj)(obj, transform)


def as_point_array(points: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``points`` as a float64 ``(N, 3)`` array; ``ValueError`` for any other shape."""
    try:
        array = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"points must be an (N, 3) array of numbers (x, y, z per row): {exc}"
        ) from None
    if array.ndim != 2 or array.shape[1] != 3:
        hint = " (for one point use points.reshape(1, 3))" if array.shape == (3,) else ""
        raise ValueError(
            f"points must be an (N, 3) array (x, y, z per row), got shape {array.shape}{hint}"
        )
    return array


def transform_point_array(
    points: npt.ArrayLike, transform: TransformStamped
) -> npt.NDArray[np.float64]:
    """Points ``(N, 3)`` in the transform's child frame, expressed in
    ``transform.header.frame_id``: a new ``(N, 3)`` float64 array (vectorised)."""
    array = as_point_array(points)
    t = transform.transform.translation
    out: npt.NDArray[np.float64] = array @ rotation_matrix(transform).T
    out += (float(t.x), float(t.y), float(t.z))
    return out


def copy_transform_stamped(transform: TransformStamped) -> TransformStamped:
    """An independent copy (so two callers never share one mutable message)."""
    t = transform.transform
    return TransformStamped(
        Header(transform.header.stamp, transform.header.frame_id),
        transform.child_frame_id,
        Transform(
            Vector3(t.translation.x, t.translation.y, t.translation.z),
            Quaternion(t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w),
        ),
    )
