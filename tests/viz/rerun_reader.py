"""Reads a saved Rerun recording (``.rrd``) back with Rerun's own Python reader
(``rerun.chunk.RrdReader``), as rows the tests compare with a tf2py buffer."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from rerun.chunk import RrdReader


@dataclass(frozen=True)
class Row:
    """One logged row of an entity: its Transform3D (translation, xyzw quaternion) or a
    clear (a Clear, or a Transform3D whose components are emptied), static (stamp None) or at
    a ``ros_time`` stamp in nanoseconds; ``row_id`` orders rows as they were logged."""

    row_id: bytes
    path: str
    stamp_ns: int | None
    translation: tuple[float, ...] | None
    quaternion: tuple[float, ...] | None
    cleared: bool


def _column(batch: pa.RecordBatch, name: str) -> list | None:
    if name not in batch.schema.names:
        return None
    column = batch.column(name)
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.int64())
    return column.to_pylist()


def read_rows(path) -> list[Row]:
    """Every Transform3D and Clear row of every entity in the recording, in the order they
    were logged."""
    rows: list[Row] = []
    reader = RrdReader(str(path))
    for chunk in reader.stream():
        if chunk.entity_path.startswith("/__"):
            continue  # the recording's properties
        batch = chunk.to_record_batch()
        stamps = _column(batch, "ros_time")
        translations = _column(batch, "Transform3D:translation")
        quaternions = _column(batch, "Transform3D:quaternion")
        clears = _column(batch, "Clear:is_recursive")
        row_ids = _column(batch, "rerun.controls.RowId")
        for i in range(batch.num_rows):
            stamp = None if chunk.is_static or stamps is None else stamps[i]
            translation = translations[i] if translations is not None else None
            quaternion = quaternions[i] if quaternions is not None else None
            cleared = (clears is not None and clears[i] is not None) or (
                translation is not None and len(translation) == 0)
            rows.append(Row(
                row_ids[i], chunk.entity_path, stamp,
                tuple(translation[0]) if translation else None,
                tuple(quaternion[0]) if quaternion else None, cleared))
    return sorted(rows, key=lambda row: row.row_id)


def split_path(path: str) -> list[str]:
    """An entity path's parts, unescaped (``/tf/map/robot7\\/base_link`` -> tf, map,
    robot7/base_link)."""
    parts, current, escaped = [], "", False
    for ch in path.lstrip("/"):
        if escaped:
            current += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "/":
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts
