"""Transforms as Foxglove's ``foxglove.FrameTransforms`` message (protobuf), built by the
``foxglove-sdk`` library from the transport's columns (parents, children, stamps in int64
nanoseconds, an ``(N, 7)`` array of [tx, ty, tz, qx, qy, qz, qw]).

The same rules as a tf2 buffer's insert apply before anything is shown: a leading ``/`` is
stripped from frame ids, quaternions are normalized, and a transform tf2 would refuse
(empty frame id, child equal to parent, NaN or infinity, a quaternion whose squared norm is
off by 0.01 or more) is left out and counted, as is a stamp Foxglove's timestamp cannot hold
(before 1970 or after 2106: its seconds are an unsigned 32-bit number).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from foxglove import Schema
    from foxglove.messages import FrameTransform, FrameTransforms

from ..transport.frame_ids import strip_leading_slash
from .errors import require_foxglove

__all__ = ["FrameTransformsBuilder", "SCHEMA_NAME"]

SCHEMA_NAME = "foxglove.FrameTransforms"
_NS_PER_S = 1_000_000_000
_MAX_STAMP_NS = (2**32) * _NS_PER_S  # Foxglove's Timestamp.sec is a uint32

#: Transforms left out of a message: (cause, detail, count) per cause.
LeftOut = list[tuple[str, str, int]]
#: What ``build`` returns: the FrameTransforms of the valid rows, their child frame ids, and
#: the causes of the rows left out (None when none was).
Built = tuple[list["FrameTransform"], list[str], "LeftOut | None"]


class FrameTransformsBuilder:
    """Builds ``foxglove.messages.FrameTransforms`` from transport columns.

    ``build(parents, children, stamps_ns, values)`` -> ``(transforms, children, left_out)``:
    the ``foxglove.messages.FrameTransform`` list of the valid ones (opaque SDK objects), their
    child frame ids, and for those left out a list
    of ``(cause, detail, count)`` (``None`` when none is). ``message(transforms)`` wraps a
    list into one ``FrameTransforms``. Stateless and thread-safe.
    """

    def __init__(self) -> None:
        foxglove = require_foxglove()
        messages = foxglove.messages
        self._frame_transforms = messages.FrameTransforms
        self._frame_transform = messages.FrameTransform
        self._timestamp = messages.Timestamp
        self._vector3 = messages.Vector3
        self._quaternion = messages.Quaternion

    def schema(self) -> Schema:
        """The channel schema (``foxglove.Schema``: name, encoding ``protobuf``, data: the
        serialized FileDescriptorSet), as written into MCAP files and WebSocket adverts."""
        schema: Schema = self._frame_transforms.get_schema()
        return schema

    def build(
        self, parents: Sequence[str], children: Sequence[str],
        stamps_ns: Sequence[int] | npt.NDArray[np.int64], values: npt.ArrayLike,
    ) -> Built:
        if len(parents) == 1:
            return self._build_one(parents[0], children[0], int(stamps_ns[0]),
                                   [float(v) for v in np.ravel(values)])
        array = np.asarray(values, dtype=np.float64).reshape(-1, 7)
        stamps = np.asarray(stamps_ns, dtype=np.int64)
        left_out: LeftOut | None = None
        quaternions = array[:, 3:]
        norm2 = np.einsum("ij,ij->i", quaternions, quaternions)
        good = np.isfinite(array).all(axis=1) & (np.abs(norm2 - 1.0) < 0.01)
        good &= (stamps >= 0) & (stamps < _MAX_STAMP_NS)
        parent_ids = [strip_leading_slash(p) for p in parents]
        child_ids = [strip_leading_slash(c) for c in children]
        if not good.all():
            left_out = self._causes(array, norm2, stamps, good)
        rows = array.copy()
        rows[:, 3:] /= np.sqrt(np.where(good, norm2, 1.0))[:, None]
        frame_transform, timestamp = self._frame_transform, self._timestamp
        vector3, quaternion = self._vector3, self._quaternion
        out: list[FrameTransform] = []
        kept: list[str] = []
        named_bad = 0
        for parent, child, ok, ns, (tx, ty, tz, qx, qy, qz, qw) in zip(
                parent_ids, child_ids, good.tolist(), stamps.tolist(), rows.tolist()):
            if not ok:
                continue
            if not parent or not child or parent == child:
                named_bad += 1
                continue
            sec, nsec = divmod(ns, _NS_PER_S)
            out.append(frame_transform(
                timestamp=timestamp(sec, nsec), parent_frame_id=parent, child_frame_id=child,
                translation=vector3(x=tx, y=ty, z=tz),
                rotation=quaternion(x=qx, y=qy, z=qz, w=qw)))
            kept.append(child)
        if named_bad:
            left_out = (left_out or []) + [
                ("invalid", "an empty frame id, or a child frame equal to its parent",
                 named_bad)]
        return out, kept, left_out

    def message(self, transforms: list[FrameTransform]) -> FrameTransforms:
        """One ``foxglove.messages.FrameTransforms`` holding ``transforms``."""
        message: FrameTransforms = self._frame_transforms(transforms=transforms)
        return message

    def encode(
        self, parents: Sequence[str], children: Sequence[str],
        stamps_ns: Sequence[int] | npt.NDArray[np.int64], values: npt.ArrayLike,
    ) -> tuple[bytes | None, LeftOut | None]:
        """``(protobuf bytes or None when nothing is valid, left_out)``."""
        transforms, _, left_out = self.build(parents, children, stamps_ns, values)
        if not transforms:
            return None, left_out
        encoded: bytes = self._frame_transforms(transforms=transforms).encode()
        return encoded, left_out

    def _build_one(self, parent: str, child: str, ns: int, row: list[float]) -> Built:
        # One transform (a broadcaster per frame): the same rules without numpy's per-call
        # overhead, which is most of the cost for a single row.
        tx, ty, tz, qx, qy, qz, qw = row
        if not all(map(math.isfinite, row)):
            return [], [], [("invalid", "a NaN or infinite value", 1)]
        norm2 = qx * qx + qy * qy + qz * qz + qw * qw
        if not abs(norm2 - 1.0) < 0.01:
            return [], [], [("invalid", "a quaternion that is not of unit length", 1)]
        if not 0 <= ns < _MAX_STAMP_NS:
            return [], [], [("stamp", "a stamp before 1970 or after 2106, which Foxglove's "
                             "timestamp cannot hold", 1)]
        parent = strip_leading_slash(parent)
        child = strip_leading_slash(child)
        if not parent or not child or parent == child:
            return [], [], [("invalid", "an empty frame id, or a child frame equal to its "
                             "parent", 1)]
        if norm2 != 1.0:
            scale = 1.0 / math.sqrt(norm2)
            qx, qy, qz, qw = qx * scale, qy * scale, qz * scale, qw * scale
        sec, nsec = divmod(ns, _NS_PER_S)
        return [self._frame_transform(
            timestamp=self._timestamp(sec, nsec), parent_frame_id=parent, child_frame_id=child,
            translation=self._vector3(x=tx, y=ty, z=tz),
            rotation=self._quaternion(x=qx, y=qy, z=qz, w=qw))], [child], None

    @staticmethod
    def _causes(
        values: npt.NDArray[np.float64], norm2: npt.NDArray[np.float64],
        stamps: npt.NDArray[np.int64], good: npt.NDArray[np.bool_],
    ) -> LeftOut:
        causes: LeftOut = []
        not_finite = ~np.isfinite(values).all(axis=1)
        if not_finite.any():
            causes.append(("invalid", "a NaN or infinite value", int(not_finite.sum())))
        bad_rotation = np.isfinite(values).all(axis=1) & ~(np.abs(norm2 - 1.0) < 0.01)
        if bad_rotation.any():
            causes.append(("invalid", "a quaternion that is not of unit length",
                           int(bad_rotation.sum())))
        bad_stamp = ~((stamps >= 0) & (stamps < _MAX_STAMP_NS)) & ~not_finite & ~bad_rotation
        if bad_stamp.any():
            causes.append(("stamp", "a stamp before 1970 or after 2106, which Foxglove's "
                           "timestamp cannot hold", int(bad_stamp.sum())))
        return causes
