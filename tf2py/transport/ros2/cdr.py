"""ROS 2's bytes for the messages tf2py exchanges over DDS: XCDR1 (plain CDR), little-endian.

``tf2_msgs/msg/TFMessage`` is ``sequence<geometry_msgs/TransformStamped>``; each element is::

    int32 sec, uint32 nanosec          header.stamp (builtin_interfaces/Time)
    string frame_id                    uint32 length with the NUL, bytes, NUL
    string child_frame_id              (aligned to 4)
    float64 x 7                        translation xyz, rotation xyzw (aligned to 8)

Alignment counts from the start of the payload (after the 4-byte encapsulation header). ROS 2
publishers leave padding bytes uninitialised, so the decoder never looks at them.

``decode_tf`` goes straight to the columns ``Buffer.set_transforms`` takes (frame ids as two
lists, stamps and values as numpy arrays): strings need a Python object each, numbers do not.
Every decoding error is a ``CdrError`` naming what is wrong.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from ...buffer.messages import TransformStamped

__all__ = [
    "CdrError",
    "HEADER_LE",
    "MAX_TRANSFORMS",
    "decode_tf",
    "decode_tf_single",
    "TfDecoder",
    "encode_tf",
    "encode_tf_columns",
    "decode_time",
    "encode_time",
    "encode_participant_entities_info",
]

#: Encapsulation header of XCDR1 little-endian (CDR_LE), what ROS 2 publishers write.
HEADER_LE = b"\x00\x01\x00\x00"
_HEADER_BE = b"\x00\x00\x00\x00"

#: A message holding more transforms than this is refused (as the ZeroMQ bus does).
MAX_TRANSFORMS = 1_000_000
MAX_STRING = 64 * 1024

_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")
_VALUES = struct.Struct("<7d")
_STRING_AND_STAMP_MIN = 8 + 4 + 1 + 4 + 1  # a transform's bytes before its values, at least
_TRANSFORM_MIN = _STRING_AND_STAMP_MIN + 56
_OFFSETS_56 = np.arange(56, dtype=np.intp)

#: A received sample: bytes, or a buffer over them.
Data = bytes | bytearray | memoryview
#: A decoded TFMessage: parents, children, int64 (N,) nanoseconds, float64 (N, 7) values.
TfColumns = tuple[list[str], list[str], npt.NDArray[np.int64], npt.NDArray[np.float64]]
#: Where a message's frame-id bytes, stamps and values are (see TfDecoder).
_Layout = tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]]
#: One transform of a single-transform message: parent, child, stamp ns, (tx..qw).
SingleTransform = tuple[str, str, int, tuple[float, ...]]


class CdrError(ValueError):
    """Bytes that are not the CDR of the expected message; ``cause`` names the kind for
    counters (``"garbage"``, ``"too_large"``, ``"encoding"``)."""

    def __init__(self, message: str, cause: str = "garbage") -> None:
        super().__init__(message)
        self.cause = cause


def _check_header(data: Data) -> None:
    if len(data) < 8:
        raise CdrError(f"a sample of {len(data)} bytes is too short for a TFMessage")
    header = bytes(data[:4])
    if header[:2] != HEADER_LE[:2]:
        if header[:2] == _HEADER_BE[:2]:
            raise CdrError("big-endian CDR is not supported", "encoding")
        raise CdrError(f"unknown encapsulation {header[:2].hex()} (expected XCDR1 little-endian)",
                       "encoding")


def decode_tf(data: Data) -> TfColumns:
    """``(parents, children, stamps_ns, values)`` of a TFMessage sample (header included):
    N frame ids twice, int64 (N,) nanoseconds, float64 (N, 7) ``[tx ty tz qx qy qz qw]``."""
    return _decode_tf(data)[0]


def _decode_tf(data: Data) -> tuple[TfColumns, _Layout]:
    """decode_tf's result and the layout it found: (string byte positions, stamp offsets,
    value offsets), which TfDecoder reuses for the next message of the same frames."""
    _check_header(data)
    size = len(data)
    (n,) = _U32.unpack_from(data, 4)
    if n > MAX_TRANSFORMS:
        raise CdrError(f"a TFMessage of {n} transforms is over the limit of {MAX_TRANSFORMS}",
                       "too_large")
    if n * _TRANSFORM_MIN > size - 8:
        raise CdrError(f"a TFMessage that says {n} transforms has only {size} bytes")
    parents = [""] * n  # (every item is set below, or the message refused)
    children = [""] * n
    stamp_offsets = np.empty(n, dtype=np.intp)
    value_offsets = np.empty(n, dtype=np.intp)
    string_spans: list[tuple[int, int]] = []  # (start, end) of each string with its length field, padding excluded
    unpack_u32 = _U32.unpack_from
    position = 8  # absolute offset; the payload (and its alignment) starts at 4
    i = 0  # the transform being read, for the errors below
    try:
        for i in range(n):
            position += (-(position - 4)) & 3
            stamp_offsets[i] = position
            (length,) = unpack_u32(data, position + 8)
            start = position + 12
            end = start + length
            if length == 0 or end > size or data[end - 1] != 0:
                raise CdrError(f"transform {i}: a bad frame_id string")
            parents[i] = bytes(data[start:end - 1]).decode()
            string_spans.append((start - 4, end))
            position = end + ((-(end - 4)) & 3)
            (length,) = unpack_u32(data, position)
            start = position + 4
            end = start + length
            if length == 0 or end > size or data[end - 1] != 0:
                raise CdrError(f"transform {i}: a bad child_frame_id string")
            children[i] = bytes(data[start:end - 1]).decode()
            string_spans.append((start - 4, end))
            position = end + ((-(end - 4)) & 7)
            value_offsets[i] = position
            position += 56
            if position > size:
                raise CdrError(f"transform {i}: the message ends inside its values")
    except struct.error:
        raise CdrError(f"transform {i}: the message ends inside it") from None
    except UnicodeDecodeError as exc:
        raise CdrError(f"transform {i}: a frame id that is not UTF-8 ({exc.reason})") from None
    raw = np.frombuffer(data, dtype=np.uint8)
    stamps, values = _numbers(raw, n, stamp_offsets, value_offsets)
    # The count and every string with its length: equal bytes there mean an equal layout.
    strings = np.concatenate([np.arange(4, 8, dtype=np.intp)]
                             + [np.arange(a, b, dtype=np.intp) for a, b in string_spans])
    return (parents, children, stamps, values), (strings, stamp_offsets, value_offsets)


def _numbers(
    raw: npt.NDArray[np.uint8], n: int, stamp_offsets: npt.NDArray[np.intp],
    value_offsets: npt.NDArray[np.intp],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    values = raw[value_offsets[:, None] + _OFFSETS_56].view("<f8").reshape(n, 7)
    stamp_bytes = raw[stamp_offsets[:, None] + _OFFSETS_56[:8]]
    seconds = stamp_bytes[:, :4].copy().view("<i4")[:, 0].astype(np.int64)
    nanoseconds = stamp_bytes[:, 4:].copy().view("<u4")[:, 0].astype(np.int64)
    return seconds * 1_000_000_000 + nanoseconds, values


class TfDecoder:
    """decode_tf with a memory: a message of the same size whose frame-id bytes (length fields
    and strings, never the padding) equal the previous message's has the same layout, so only
    its numbers are read (two numpy gathers), not its strings one by one. Most /tf traffic
    repeats the same frames message after message. One decoder per receiving thread."""

    def __init__(self) -> None:
        self._size = -1  # no message yet: the fields below are read only once it is set
        empty = np.empty(0, dtype=np.intp)
        self._layout: _Layout = (empty, empty, empty)
        self._frames: tuple[list[str], list[str]] = ([], [])
        self._string_bytes: npt.NDArray[np.uint8] = np.empty(0, dtype=np.uint8)

    def decode(self, data: Data) -> TfColumns:
        size = len(data)
        if size == self._size and bytes(data[:4]) == HEADER_LE:
            strings, stamp_offsets, value_offsets = self._layout
            raw = np.frombuffer(data, dtype=np.uint8)
            if np.array_equal(raw[strings], self._string_bytes):
                parents, children = self._frames
                stamps, values = _numbers(raw, len(parents), stamp_offsets, value_offsets)
                return list(parents), list(children), stamps, values
        decoded, layout = _decode_tf(data)
        self._size = size
        self._layout = layout
        self._frames = (decoded[0], decoded[1])
        self._string_bytes = np.frombuffer(data, dtype=np.uint8)[layout[0]]
        return list(decoded[0]), list(decoded[1]), decoded[2], decoded[3]


def decode_tf_single(data: Data) -> SingleTransform | None:
    """``(parent, child, stamp_ns, values tuple)`` if the sample holds exactly one transform,
    else None: the cheap path for the most common message."""
    if len(data) < 8 + _TRANSFORM_MIN or _U32.unpack_from(data, 4)[0] != 1:
        return None
    _check_header(data)
    size = len(data)
    sec: int
    nanosec: int
    try:
        sec, nanosec = _STAMP.unpack_from(data, 8)
        (length,) = _U32.unpack_from(data, 16)
        end = 20 + length
        if length == 0 or end > size or data[end - 1] != 0:
            raise CdrError("transform 0: a bad frame_id string")
        parent = bytes(data[20:end - 1]).decode()
        position = end + ((-(end - 4)) & 3)
        (length,) = _U32.unpack_from(data, position)
        start = position + 4
        end = start + length
        if length == 0 or end > size or data[end - 1] != 0:
            raise CdrError("transform 0: a bad child_frame_id string")
        child = bytes(data[start:end - 1]).decode()
        position = end + ((-(end - 4)) & 7)
        values = _VALUES.unpack_from(data, position)
    except struct.error:
        raise CdrError("transform 0: the message ends inside it") from None
    except UnicodeDecodeError as exc:
        raise CdrError(f"transform 0: a frame id that is not UTF-8 ({exc.reason})") from None
    return parent, child, sec * 1_000_000_000 + nanosec, values


def _string(out: bytearray, text: str) -> None:
    """Append a CDR string (aligned to 4 from the payload start, which is out[4])."""
    out += bytes((-(len(out) - 4)) & 3)
    encoded = text.encode()
    if len(encoded) >= MAX_STRING:
        raise ValueError(f"frame id of {len(encoded)} bytes is too long")
    out += _U32.pack(len(encoded) + 1)
    out += encoded
    out += b"\x00"


def _split_stamp(stamp_ns: int) -> tuple[int, int]:
    seconds, nanoseconds = divmod(int(stamp_ns), 1_000_000_000)
    if not -(2 ** 31) <= seconds < 2 ** 31:
        raise ValueError(f"stamp {stamp_ns} ns does not fit builtin_interfaces/Time")
    return seconds, nanoseconds


def encode_tf_columns(
    parents: Sequence[str], children: Sequence[str], stamps_ns: Iterable[int],
    values: npt.ArrayLike,
) -> bytes:
    """The TFMessage sample (header included) of N transforms given as columns."""
    n = len(parents)
    out = bytearray(HEADER_LE)
    out += _U32.pack(n)
    rows = np.asarray(values, dtype=np.float64).reshape(n, 7).tolist()
    stamps = [int(s) for s in stamps_ns]
    for i in range(n):
        out += bytes((-(len(out) - 4)) & 3)
        out += _STAMP.pack(*_split_stamp(stamps[i]))
        _string(out, parents[i])
        _string(out, children[i])
        out += bytes((-(len(out) - 4)) & 7)
        out += _VALUES.pack(*rows[i])
    return bytes(out)


def encode_tf(transforms: Iterable[TransformStamped]) -> bytes:
    """The TFMessage sample of TransformStamped objects (tf2py's or anything shaped alike)."""
    from ...buffer.time import to_nanoseconds

    parents: list[str] = []
    children: list[str] = []
    stamps: list[int] = []
    rows: list[tuple[float, ...]] = []
    for ts in transforms:
        t = ts.transform
        parents.append(str(ts.header.frame_id))
        children.append(str(ts.child_frame_id))
        stamps.append(to_nanoseconds(ts.header.stamp))
        rows.append((t.translation.x, t.translation.y, t.translation.z,
                     t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w))
    return encode_tf_columns(parents, children, stamps, np.array(rows, dtype=np.float64))


def decode_time(data: Data) -> int:
    """Nanoseconds of a ``builtin_interfaces/Time``-first sample (``rosgraph_msgs/Clock``)."""
    if len(data) < 12:
        raise CdrError(f"a sample of {len(data)} bytes is too short for a Clock")
    if bytes(data[:2]) != HEADER_LE[:2]:
        raise CdrError("not XCDR1 little-endian", "encoding")
    sec: int
    nanosec: int
    sec, nanosec = _STAMP.unpack_from(data, 4)
    if nanosec >= 1_000_000_000:
        raise CdrError(f"nanosec {nanosec} is not below 1e9")
    return sec * 1_000_000_000 + nanosec


def encode_time(stamp_ns: int) -> bytes:
    """A ``rosgraph_msgs/Clock`` sample."""
    return HEADER_LE + _STAMP.pack(*_split_stamp(stamp_ns))


def encode_participant_entities_info(
    participant_gid: bytes, nodes: Sequence[tuple[str, str, Sequence[bytes], Sequence[bytes]]]
) -> bytes:
    """A ``rmw_dds_common/msg/ParticipantEntitiesInfo`` sample: the participant's GID (16
    bytes) and, per node, ``(namespace, name, reader_gids, writer_gids)``."""
    out = bytearray(HEADER_LE)
    out += bytes(participant_gid)[:16].ljust(16, b"\x00")
    out += bytes((-(len(out) - 4)) & 3)
    out += _U32.pack(len(nodes))
    for namespace, name, readers, writers in nodes:
        _string(out, namespace)
        _string(out, name)
        for gids in (readers, writers):
            out += bytes((-(len(out) - 4)) & 3)
            out += _U32.pack(len(gids))
            for gid in gids:
                out += bytes(gid)[:16].ljust(16, b"\x00")
    return bytes(out)
