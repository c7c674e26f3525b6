"""What a static broadcaster sends, on any bus: the argument of ``send_transform`` as a list,
and the latched set (the latest valid transform per child frame, sent whole every time). An
invalid transform (what a Buffer refuses: NaN, an empty frame id, a frame its own parent, a
quaternion far from unit length) is never latched: it would replace the valid one of its
frame for every late joiner. It is dropped and counted (``"invalid"``) instead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..buffer.time import to_nanoseconds
from .counters import DropCounter
from .frame_ids import strip_leading_slash

__all__ = ["transform_items", "invalid_rows", "StaticSet"]

#: One latched transform: parent, child, stamp (integer ns), (tx, ty, tz, qx, qy, qz, qw).
Row = tuple[str, str, int, tuple[float, ...]]


def transform_items(transform: Any) -> list[Any]:
    """``send_transform``'s argument as a list: one TransformStamped (or an object shaped
    alike), or an iterable of them; TypeError for anything else."""
    if hasattr(transform, "child_frame_id"):
        return [transform]
    if isinstance(transform, (str, bytes)) or not hasattr(transform, "__iter__"):
        raise TypeError("send_transform takes a TransformStamped or a list of them, got "
                        f"{type(transform).__name__}")
    return list(transform)


def invalid_rows(parents: Sequence[str], children: Sequence[str], stamps_ns: Any,
                 values: Any) -> list[tuple[int, str]]:
    """``(index, why)`` of the rows a Buffer would refuse as statics (its own checks, on a
    scratch store), in order."""
    from ..buffer.core import BufferCore

    if not len(parents):
        return []
    result = BufferCore().set_transforms(
        list(parents), list(children), np.asarray(stamps_ns, dtype=np.int64),
        np.asarray(values, dtype=np.float64).reshape(len(parents), 7), "static check", True)
    return [(int(index), str(why)) for index, why in result.invalid]


class StaticSet:
    """A static broadcaster's latched set: the latest transform per child frame (``/a`` and
    ``a`` are one frame), handed out whole as columns. Not thread-safe: its broadcaster holds
    its own lock around it."""

    def __init__(self, dropped: DropCounter) -> None:
        self._rows: dict[str, Row] = {}
        self.dropped = dropped

    def add_transforms(self, transforms: Sequence[Any]) -> None:
        """Latch TransformStampeds (already checked by the caller's encoder)."""
        rows: list[Row] = []
        for ts in transforms:
            t = ts.transform
            rows.append((str(ts.header.frame_id), str(ts.child_frame_id),
                         to_nanoseconds(ts.header.stamp),
                         (t.translation.x, t.translation.y, t.translation.z,
                          t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w)))
        self._add(rows)

    def add_columns(self, parents: Sequence[str], children: Sequence[str], stamps_ns: Any,
                    values: Any) -> None:
        """Latch N transforms given as columns (stamps in ns, (N, 7) values)."""
        rows = np.asarray(values, dtype=np.float64).reshape(len(parents), 7).tolist()
        self._add([(str(parent), str(child), int(stamp), tuple(row))
                   for parent, child, stamp, row in zip(parents, children, list(stamps_ns),
                                                        rows)])

    def _add(self, rows: list[Row]) -> None:
        refused = invalid_rows([r[0] for r in rows], [r[1] for r in rows],
                               [r[2] for r in rows], [r[3] for r in rows])
        if refused:
            self.dropped.drop("invalid", f"static transform {refused[0][0]} not latched: "
                              f"{refused[0][1]}", n=len(refused))
        skip = {index for index, _ in refused}
        for index, row in enumerate(rows):
            if index not in skip:
                self._rows[strip_leading_slash(row[1])] = row

    def columns(self) -> tuple[list[str], list[str], list[int], np.ndarray] | None:
        """The whole set as (parents, children, stamps_ns, (N, 7) values); None if empty."""
        rows = list(self._rows.values())
        if not rows:
            return None
        return ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                np.array([r[3] for r in rows], dtype=np.float64))
