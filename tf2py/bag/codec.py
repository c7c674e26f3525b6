"""Fast codecs for the one message type bags hold transforms in: ``tf2_msgs/TFMessage``.

ROS 2 stores it as CDR (``tf2_msgs/msg/TFMessage``), ROS 1 in its own serialisation
(``tf2_msgs/TFMessage`` and the legacy ``tf/tfMessage``, same layout and md5). Both are a
list of ``geometry_msgs/TransformStamped``, so a hand-written decoder that appends straight
into flat lists is several times faster than building one message object per transform with
a generic deserialiser. Decoders raise ``ValueError`` on anything that does not parse
exactly (bad lengths, bytes left over), so a corrupt message is never half-read.

Decoders append to ``Columns``: parents, children (lists of str), stamps (int64 ns) and values
(a flat float64 array, 7 per transform: tx, ty, tz, qx, qy, qz, qw).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence

#: A serialized message (its bytes; a read-only buffer over them works alike).
Raw = bytes

__all__ = [
    "Columns",
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


class Columns:
    """Transforms as parallel columns, filled by the decoders."""

    __slots__ = ("parents", "children", "stamps", "values", "_names", "layouts")

    def __init__(self) -> None:
        self.parents: list[str] = []
        self.children: list[str] = []
        # Compact typed arrays (8 bytes a number, not a Python object each): a long recording
        # holds millions of them.
        self.stamps = array("q")
        self.values = array("d")
        # bytes -> str, so each frame id is decoded once and shared by all its rows.
        self._names: dict[bytes, str] = {}
        # For one-transform messages: the bytes between the stamp and the values (lengths,
        # frame ids, padding) -> (parent, child). Equal bytes there mean an equal parse, so a
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

    def name(self, raw: bytes) -> str:
        name = self._names.get(raw)
        if name is None:
            name = raw.decode("utf-8")
            self._names[raw] = name
        return name


_LE = {
    "u32": struct.Struct("<I"),
    "stamp": struct.Struct("<iII"),  # sec, nanosec, frame_id length
    "f7": struct.Struct("<7d"),
}
_BE = {
    "u32": struct.Struct(">I"),
    "stamp": struct.Struct(">iII"),
    "f7": struct.Struct(">7d"),
}


def decode_ros2(raw: Raw, out: Columns) -> int:
    """Append the transforms of one CDR-encoded ``tf2_msgs/msg/TFMessage``; returns how many.

    Raises ``ValueError`` (and appends nothing) if the bytes are not exactly one such message.
    """
    size = len(raw)
    if size < 8 or raw[0] != 0 or raw[1] > 1:
        raise ValueError("not a CDR message (bad encapsulation header)")
    if raw[1] == 1 and raw[4:8] == b"\x01\x00\x00\x00" and size > 72:
        frames = out.layouts.get(raw[16 : size - 56])
        if frames is not None:
            sec, nanosec = _LE_SEC_NSEC(raw, 8)
            out.values.extend(_LE_F7(raw, size - 56))
            out.parents.append(frames[0])
            out.children.append(frames[1])
            out.stamps.append(sec * _NS_PER_S + nanosec)
            return 1
    s = _LE if raw[1] == 1 else _BE
    u32, stamp, f7 = s["u32"].unpack_from, s["stamp"].unpack_from, s["f7"].unpack_from
    count: int
    (count,) = u32(raw, 4)
    # Each transform takes at least 4+4+4+1 + 4+1 + 56 bytes; reject absurd counts early.
    if count * 72 > size:
        raise ValueError(f"CDR message claims {count} transforms in {size} bytes")
    start = len(out)
    parents, children, stamps, values, name = (
        out.parents,
        out.children,
        out.stamps,
        out.values,
        out.name,
    )
    off = 8  # CDR alignment counts from the end of the 4-byte encapsulation header
    try:
        for _ in range(count):
            sec, nanosec, length = stamp(raw, off)
            off += 12
            end = off + length
            if length == 0 or end > size or raw[end - 1] != 0:
                raise ValueError("bad frame_id string")
            parent = name(bytes(raw[off : end - 1]))
            off = end + (-(end - 4) & 3)
            (length,) = u32(raw, off)
            off += 4
            end = off + length
            if length == 0 or end > size or raw[end - 1] != 0:
                raise ValueError("bad child_frame_id string")
            child = name(bytes(raw[off : end - 1]))
            off = end + (-(end - 4) & 7)
            values.extend(f7(raw, off))
            off += 56
            parents.append(parent)
            children.append(child)
            stamps.append(sec * _NS_PER_S + nanosec)
        # A serialiser may pad the end to a multiple of 4 or 8; anything more is not ours.
        if size - off > 7 or off > size:
            raise ValueError(f"{size - off} bytes left over after {count} transforms")
        if count == 1 and off == size and s is _LE:
            out.layouts[bytes(raw[16 : size - 56])] = (parents[-1], children[-1])
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        out.truncate(start)
        raise ValueError(str(exc)) from None
    return count


_LE_SEC_NSEC = struct.Struct("<iI").unpack_from
_LE_F7 = _LE["f7"].unpack_from

_ROS1_U32 = struct.Struct("<I")
_ROS1_STAMP = struct.Struct("<IIII")  # seq, secs, nsecs, frame_id length
_ROS1_F7 = struct.Struct("<7d")
_ROS1_SEC_NSEC = struct.Struct("<II").unpack_from


def decode_ros1(raw: Raw, out: Columns) -> int:
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


_ENC_U32 = struct.Struct("<I")
_ENC_STAMP = struct.Struct("<iII")
_ENC_F7 = struct.Struct("<7d")


def encode_ros2(rows: Sequence[tuple[str, str, int, Sequence[float]]]) -> bytes:
    """CDR (little-endian) bytes of a ``tf2_msgs/msg/TFMessage``.

    ``rows`` is a sequence of ``(parent, child, stamp_ns, (tx, ty, tz, qx, qy, qz, qw))``.
    Stamps must fit ROS 2's ``int32 sec``.
    """
    buf = bytearray(b"\x00\x01\x00\x00")
    buf += _ENC_U32.pack(len(rows))
    for parent, child, stamp_ns, values in rows:
        sec, nanosec = divmod(int(stamp_ns), _NS_PER_S)
        parent_b = parent.encode("utf-8") + b"\x00"
        child_b = child.encode("utf-8") + b"\x00"
        buf += _ENC_STAMP.pack(sec, nanosec, len(parent_b))
        buf += parent_b
        buf += bytes(-(len(buf) - 4) & 3)
        buf += _ENC_U32.pack(len(child_b))
        buf += child_b
        buf += bytes(-(len(buf) - 4) & 7)
        buf += _ENC_F7.pack(*values)
    return bytes(buf)
