"""ROS 2's bytes for the messages tf2py exchanges over DDS: XCDR1 (plain CDR).

``tf2_msgs/msg/TFMessage`` is ``sequence<geometry_msgs/TransformStamped>``; each element is::

    int32 sec, uint32 nanosec          header.stamp (builtin_interfaces/Time)
    string frame_id                    uint32 length with the NUL, bytes, NUL
    string child_frame_id              (aligned to 4)
    float64 x 7                        translation xyz, rotation xyzw (aligned to 8)

Alignment counts from the start of the payload (after the 4-byte encapsulation header). ROS 2
publishers leave padding bytes uninitialised, so the decoder never looks at them.

TFMessage is decoded by the kernel (``tf2py/buffer/_kernel/cdr.hpp``, little- and big-endian):
the one decoder of tf2py, which the ROS 2 and Zenoh buses, the fleet (straight into the
kernel's batch insert, ``tf2py.buffer.batch.insert_cdr``) and bags share. It returns a refusal
record for a malformed sample; this module words it (``cdr_error``). ``decode_tf`` gives its
rows as one ``tf2py.Transforms``, what ``Buffer.set_transforms`` takes. The encoders, and the
Clock and ParticipantEntitiesInfo codecs, are here.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

from ...buffer._kernel_ext import CDR_MAX_TRANSFORMS, decode_tf_cdr, decode_tf_cdr_one
from ...buffer.transforms import Transforms

if TYPE_CHECKING:
    from ...buffer.messages import TransformStamped

__all__ = [
    "CdrError",
    "HEADER_LE",
    "MAX_TRANSFORMS",
    "cdr_error",
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

#: A message holding more transforms than this is refused (as the ZeroMQ bus does).
MAX_TRANSFORMS: int = CDR_MAX_TRANSFORMS
MAX_STRING = 64 * 1024

_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")
_VALUES = struct.Struct("<7d")

#: A received sample: bytes, or a buffer over them.
Data = bytes | bytearray | memoryview
#: What the kernel's decoder gives: parents, children, int64 (N,) ns, float64 (N, 7) values.
_Decoded = tuple[list[str], list[str], npt.NDArray[np.int64], npt.NDArray[np.float64]]
#: One transform of a single-transform message: parent, child, stamp ns, (tx..qw).
SingleTransform = tuple[str, str, int, tuple[float, ...]]


class CdrError(ValueError):
    """Bytes that are not the CDR of the expected message; ``cause`` names the kind for
    counters (``"garbage"``, ``"too_large"``, ``"encoding"``, ``"frame_id_too_long"``)."""

    def __init__(self, message: str, cause: str = "garbage") -> None:
        super().__init__(message)
        self.cause = cause


#: The kernel's refusals of a TFMessage sample (cdr.hpp's CdrStatus): counter cause, words.
_REFUSALS = {
    1: ("garbage", "a sample of {size} bytes is too short for a TFMessage"),
    2: ("encoding", "unknown encapsulation {header} (expected XCDR1)"),
    3: ("too_large", "a TFMessage of {count} transforms is over the limit of {limit}"),
    4: ("garbage", "transform {where}: the message ends inside it"),
    5: ("garbage", "transform {where}: a bad frame id string (empty, or not ending in NUL)"),
    6: ("garbage", "transform {where}: a frame id that is not UTF-8"),
    7: ("frame_id_too_long", "transform {where}: a frame id over {max_chars} characters"),
    8: ("garbage", "bytes left over after the {count} transforms of a TFMessage"),
}


def cdr_error(status: int, where: int, count: int, data: Data, max_chars: int = 0) -> CdrError:
    """The error for the kernel's refusal of a TFMessage sample (``cdr.hpp``'s CdrStatus):
    ``where`` the transform where it went wrong, ``count`` the transforms it says it holds."""
    cause, words = _REFUSALS.get(status, ("garbage", "a TFMessage refused (status {status})"))
    if status == 4 and where == count:  # the count itself is more than the bytes can hold
        words = "a TFMessage that says {count} transforms has only {size} bytes"
    return CdrError(words.format(size=len(data), header=bytes(data[:2]).hex(), count=count,
                                 limit=MAX_TRANSFORMS, where=where, max_chars=max_chars,
                                 status=status), cause)


def decode_tf(data: Data, max_chars: int = 0, names: dict[str, str] | None = None,
              prefix: str | None = None) -> Transforms:
    """The transforms of a TFMessage sample (header included) as one ``Transforms``.
    ``max_chars``: refuse frame ids longer than this (0: any length); ``names``: a dict that
    makes equal frame ids one str across calls; ``prefix``: each frame id named as the fleet
    names a robot's (one leading ``/`` dropped, then the prefix). Raises ``CdrError``."""
    decoded = decode_tf_cdr(data, max_chars, names, prefix)
    if len(decoded) == 3:
        raise cdr_error(*decoded, data, max_chars)
    return Transforms._of(*cast(_Decoded, decoded))


class TfDecoder:
    """decode_tf with a memory of the frame ids it met: most /tf traffic repeats the same
    frames, so every message names the same str objects. One decoder per receiving thread."""

    #: Distinct frame ids remembered (a stream of ever new ids starts the memory afresh).
    MAX_NAMES = 4096

    def __init__(self) -> None:
        self._names: dict[str, str] = {}

    def decode(self, data: Data) -> Transforms:
        if len(self._names) > self.MAX_NAMES:
            self._names.clear()
        return decode_tf(data, 0, self._names)


def decode_tf_single(data: Data) -> SingleTransform | None:
    """``(parent, child, stamp_ns, values tuple)`` if the sample holds exactly one transform,
    else None: the cheap path for the most common message. Raises ``CdrError``."""
    decoded = decode_tf_cdr_one(data)
    if decoded is not None and len(decoded) == 3:
        raise cdr_error(*decoded, data)
    return decoded


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
