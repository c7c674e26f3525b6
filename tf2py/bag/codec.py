"""Fast codecs for the one message type bags hold transforms in: ``tf2_msgs/TFMessage``.

ROS 2 stores it as CDR (``tf2_msgs/msg/TFMessage``), ROS 1 in its own serialisation
(``tf2_msgs/TFMessage`` and the legacy ``tf/tfMessage``, same layout and md5). Both are a
list of ``geometry_msgs/TransformStamped``, so a hand-written decoder that appends straight
into flat lists is several times faster than building one message object per transform with
a generic deserialiser. CDR is read and written by tf2py's one TFMessage codec
(``tf2py.transport.ros2.cdr``, decoded in the kernel); ROS 1's is here. Decoders raise
``ValueError`` on anything that does not parse exactly (bad lengths, bytes left over), so a
corrupt message is never half-read.

Decoders append to a ``RowBuilder`` (growing parents, children, int64 ns stamps and a flat
float64 array, 7 per transform: tx, ty, tz, qx, qy, qz, qw); ``RowBuilder.build()`` hands the
rows on as one ``tf2py.Transforms``.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence

import numpy as np

from ..buffer.transforms import Transforms
from ..transport.ros2 import cdr

#: A serialized message (its bytes; a read-only buffer over them works alike).
Raw = bytes

__all__ = [
    "RowBuilder",
    "decode_ros2",
    "decode_ros1",
    "encode_ros2",
    "ROS1_TFMESSAGE_MD5",
    "TFMESSAGE_ROS2_DEFINITION",
]

ROS1_TFMESSAGE_MD5 = "94810edda583a504dfda3829e70d7eec"
_NS_PER_S = 1_000_000_000

# The ros2msg schema text of tf2_msgs/msg/TFMessage with its dependencies, in the layout
# rosbag2 writes into MCAP files (and that mcap-ros2-support and Foxglove parse).
_SEPARATOR = "=" * 80 + "\n"
TFMESSAGE_ROS2_DEFINITION = (
    "geometry_msgs/TransformStamped[] transforms\n"
    + _SEPARATOR
    + "MSG: geometry_msgs/TransformStamped\n"
    "std_msgs/Header header\n"
    "string child_frame_id\n"
    "Transform transform\n"
    + _SEPARATOR
    + "MSG: std_msgs/Header\n"
    "builtin_interfaces/Time stamp\n"
    "string frame_id\n"
    + _SEPARATOR
    + "MSG: builtin_interfaces/Time\n"
    "int32 sec\n"
    "uint32 nanosec\n"
    + _SEPARATOR
    + "MSG: geometry_msgs/Transform\n"
    "Vector3 translation\n"
    "Quaternion rotation\n"
    + _SEPARATOR
    + "MSG: geometry_msgs/Vector3\n"
    "float64 x\n"
    "float64 y\n"
    "float64 z\n"
    + _SEPARATOR
    + "MSG: geometry_msgs/Quaternion\n"
    "float64 x 0\n"
    "float64 y 0\n"
    "float64 z 0\n"
    "float64 w 1\n"
)


class RowBuilder:
    """The rows the decoders append to, growing message by message; ``build()`` makes them
    one ``Transforms``."""

    __slots__ = ("parents", "children", "stamps", "values", "_names", "_cdr_names", "layouts")

    def __init__(self) -> None:
        self.parents: list[str] = []
        self.children: list[str] = []
        # Compact typed arrays (8 bytes a number, not a Python object each): a long recording
        # holds millions of them.
        self.stamps = array("q")
        self.values = array("d")
        # bytes -> str, so each frame id is decoded once and shared by all its rows.
        self._names: dict[bytes, str] = {}
        self._cdr_names: dict[str, str] = {}  # the same for CDR (str -> the str kept)
        # For one-transform ROS 1 messages: the bytes between the stamp and the values
        # (lengths, frame ids) -> (parent, child). Equal bytes there mean an equal parse, so a
        # frame pair seen before costs two unpacks instead of a walk through the message.
        self.layouts: dict[bytes, tuple[str, str]] = {}

    def __len__(self) -> int:
        return len(self.stamps)

    def truncate(self, n: int) -> None:
        """Drop every row after the first ``n`` (undo a message that failed half-way)."""
        del self.parents[n:]
        del self.children[n:]
        del self.stamps[n:]
        del self.values[7 * n :]

    def build(self) -> Transforms:
        """The rows so far as a ``Transforms`` (sharing this builder's memory: build once,
        when every message is decoded)."""
        n = len(self.stamps)
        if not n:
            return Transforms.empty()
        return Transforms._of(self.parents, self.children,
                              np.frombuffer(self.stamps, dtype=np.int64),
                              np.frombuffer(self.values, dtype=np.float64).reshape(n, 7))

    def name(self, raw: bytes) -> str:
        name = self._names.get(raw)
        if name is None:
            name = raw.decode("utf-8")
            self._names[raw] = name
        return name


def decode_ros2(raw: Raw, out: RowBuilder) -> int:
    """Append the transforms of one CDR-encoded ``tf2_msgs/msg/TFMessage``; returns how many.

    Raises ``ValueError`` (a ``CdrError``, and appends nothing) if the bytes are not exactly
    one such message.
    """
    rows = cdr.decode_tf(raw, names=out._cdr_names)
    out.parents.extend(rows.parents)
    out.children.extend(rows.children)
    out.stamps.frombytes(rows.stamps_ns.tobytes())
    out.values.frombytes(rows.values.tobytes())
    return len(rows)


_ROS1_U32 = struct.Struct("<I")
_ROS1_STAMP = struct.Struct("<IIII")  # seq, secs, nsecs, frame_id length
_ROS1_F7 = struct.Struct("<7d")
_ROS1_SEC_NSEC = struct.Struct("<II").unpack_from


def decode_ros1(raw: Raw, out: RowBuilder) -> int:
    """Append the transforms of one ROS 1 ``tf2_msgs/TFMessage`` or ``tf/tfMessage``.

    Raises ``ValueError`` (and appends nothing) if the bytes are not exactly one such message.
    """
    size = len(raw)
    if raw[0:4] == b"\x01\x00\x00\x00" and size > 76:
        frames = out.layouts.get(raw[16 : size - 56])
        if frames is not None:
            sec, nsec = _ROS1_SEC_NSEC(raw, 8)
            out.values.extend(_ROS1_F7.unpack_from(raw, size - 56))
            out.parents.append(frames[0])
            out.children.append(frames[1])
            out.stamps.append(sec * _NS_PER_S + nsec)
            return 1
    u32, stamp, f7 = _ROS1_U32.unpack_from, _ROS1_STAMP.unpack_from, _ROS1_F7.unpack_from
    start = len(out)
    parents, children, stamps, values, name = (
        out.parents,
        out.children,
        out.stamps,
        out.values,
        out.name,
    )
    count: int
    try:
        (count,) = u32(raw, 0)
        if count * 76 > size:
            raise ValueError(f"ROS 1 message claims {count} transforms in {size} bytes")
        off = 4
        for _ in range(count):
            _seq, sec, nsec, length = stamp(raw, off)
            off += 16
            end = off + length
            if end > size:
                raise ValueError("bad frame_id string")
            parent = name(bytes(raw[off:end]))
            (length,) = u32(raw, end)
            off = end + 4
            end = off + length
            if end > size:
                raise ValueError("bad child_frame_id string")
            child = name(bytes(raw[off:end]))
            values.extend(f7(raw, end))
            off = end + 56
            parents.append(parent)
            children.append(child)
            stamps.append(sec * _NS_PER_S + nsec)
        if off != size:
            raise ValueError(f"{size - off} bytes left over after {count} transforms")
        if count == 1:
            out.layouts[bytes(raw[16 : size - 56])] = (parents[-1], children[-1])
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        out.truncate(start)
        raise ValueError(str(exc)) from None
    return count


def encode_ros2(rows: Sequence[tuple[str, str, int, Sequence[float]]]) -> bytes:
    """CDR (little-endian) bytes of a ``tf2_msgs/msg/TFMessage``.

    ``rows`` is a sequence of ``(parent, child, stamp_ns, (tx, ty, tz, qx, qy, qz, qw))``.
    Stamps must fit ROS 2's ``int32 sec``.
    """
    values = np.array([row[3] for row in rows], dtype=np.float64).reshape(len(rows), 7)
    return cdr.encode_tf_columns([row[0] for row in rows], [row[1] for row in rows],
                                 [row[2] for row in rows], values)
