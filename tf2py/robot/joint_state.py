"""``JointState`` (sensor_msgs' shape), its CDR codec and std_msgs/String's, and the topics
they travel on (``/joint_states``, ``/robot_description``) with ROS 2's QoS and type hashes.

sensor_msgs/msg/JointState in XCDR1 little-endian, offsets counted from the payload (after
the 4-byte encapsulation header)::

    int32 sec, uint32 nanosec                header.stamp
    string frame_id                          uint32 length with the NUL, bytes, NUL
    sequence<string> name                    uint32 count, then each string aligned to 4
    sequence<double> position, velocity,     uint32 count (aligned to 4), then the doubles
                     effort                  aligned to 8; an empty sequence has no padding

``decode_joint_state`` is the one decoder (publishers, bag loaders): raw bytes to
``JointStateColumns`` (stamp ns, frame id, names, float64 arrays). ``JointStateDecoder``
keeps the last message's names and hands the same list back while they do not change (a
500 Hz stream names the same joints every time), so a caller can key caches on it. Every
decoding error is a ``CdrError`` (``cause`` for drop counters: ``garbage``, ``encoding``,
``too_large``); nothing here raises anything else for any input bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from ..buffer.messages import Header, _Message
from ..buffer.time import Time, to_nanoseconds
from ..transport.ros2.cdr import HEADER_LE, CdrError
from ..transport.topics import TopicSpec

__all__ = [
    "JointState",
    "JointStateColumns",
    "JointStateDecoder",
    "CdrError",
    "decode_joint_state",
    "encode_joint_state",
    "encode_string",
    "decode_string",
    "JOINT_STATE_TYPE",
    "JOINT_STATE_TYPE_HASH",
    "STRING_TYPE",
    "STRING_TYPE_HASH",
    "JOINT_STATES",
    "JOINT_STATES_SENSOR",
    "ROBOT_DESCRIPTION",
    "MAX_JOINTS",
]

#: REP-2011 type hashes (ROS 2 Jazzy and Kilted; checked against the peer's share/*.json).
JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
JOINT_STATE_TYPE_HASH = "RIHS01_a13ee3a330e346c9d87b5aa18d24e11690752bd33a0350f11c5882bc9179260e"
STRING_TYPE = "std_msgs/msg/String"
STRING_TYPE_HASH = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"

#: joint_state_publisher's side of /joint_states: reliable, volatile, keep last 10.
JOINT_STATES = TopicSpec("/joint_states", JOINT_STATE_TYPE, JOINT_STATE_TYPE_HASH,
                         reliable=True, depth=10)
#: robot_state_publisher's side: SensorDataQoS (best effort, keep last 5), which hears
#: reliable and best-effort publishers alike.
JOINT_STATES_SENSOR = JOINT_STATES.with_qos(reliable=False, depth=5)
#: robot_state_publisher's /robot_description: reliable, transient local, keep last 1.
ROBOT_DESCRIPTION = TopicSpec("/robot_description", STRING_TYPE, STRING_TYPE_HASH,
                              reliable=True, transient_local=True, depth=1)

#: A message naming more joints than this is refused (``too_large``).
MAX_JOINTS = 65_536
#: Longest joint name or frame id, in bytes.
MAX_NAME = 4096
#: Longest std_msgs/String (a URDF), in bytes.
MAX_TEXT = 64 * 1024 * 1024

_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")
_EMPTY = np.zeros(0, dtype=np.float64)
_EMPTY.flags.writeable = False

Data = bytes | bytearray | memoryview
FloatArray = npt.NDArray[np.float64]


class JointState(_Message):
    """sensor_msgs/JointState: ``header`` (stamp, frame_id), ``name`` (joint names),
    ``position`` (rad or m), ``velocity`` (rad/s or m/s), ``effort`` (N·m or N), each a list
    (velocity and effort may be empty)."""

    __slots__ = ("header", "name", "position", "velocity", "effort")

    def __init__(self, header: Header | None = None, name: Sequence[str] | None = None,
                 position: Sequence[float] | None = None,
                 velocity: Sequence[float] | None = None,
                 effort: Sequence[float] | None = None):
        if isinstance(name, str):
            raise TypeError("name must be a sequence of joint names, not one string")
        self.header: Header = Header() if header is None else header
        self.name: list[str] = [] if name is None else list(name)
        self.position: list[float] = [] if position is None else [float(v) for v in position]
        self.velocity: list[float] = [] if velocity is None else [float(v) for v in velocity]
        self.effort: list[float] = [] if effort is None else [float(v) for v in effort]

    def to_cdr(self) -> bytes:
        """This message's CDR sample (encapsulation header included)."""
        return encode_joint_state(self.name, self.position, to_nanoseconds(self.header.stamp),
                                  self.header.frame_id, self.velocity, self.effort)

    @classmethod
    def from_cdr(cls, data: Data) -> JointState:
        """The message of a CDR sample; CdrError if it is not one."""
        c = decode_joint_state(data)
        return cls(Header(Time.from_nanoseconds(c.stamp_ns), c.frame_id), c.names,
                   c.position.tolist(), c.velocity.tolist(), c.effort.tolist())


class JointStateColumns(NamedTuple):
    """A decoded JointState: stamp (int ns), frame id, names, and float64 arrays (read-only
    views of the sample; ``velocity`` and ``effort`` may be empty)."""

    stamp_ns: int
    frame_id: str
    names: list[str]
    position: FloatArray
    velocity: FloatArray
    effort: FloatArray


def _check_header(data: Data) -> None:
    if len(data) < 4 + 8 + 4 + 1:
        raise CdrError(f"a sample of {len(data)} bytes is too short for a JointState")
    if bytes(data[:2]) != HEADER_LE[:2]:
        raise CdrError(f"encapsulation {bytes(data[:2]).hex()} is not XCDR1 little-endian",
                       "encoding")


def _read_string(data: Data, offset: int, limit: int) -> tuple[str, int]:
    """The string at payload-relative ``offset`` (aligned first) and the offset after it."""
    offset += -offset & 3
    start = 4 + offset
    if start + 4 > len(data):
        raise CdrError("a string runs past the end of the sample")
    (length,) = _U32.unpack_from(data, start)
    if length == 0 or length > limit:
        raise CdrError(f"a string of length {length} (1..{limit})",
                       "garbage" if length == 0 else "too_large")
    end = start + 4 + length
    if end > len(data) or data[end - 1] != 0:
        raise CdrError("a string runs past the end of the sample or lacks its NUL")
    try:
        text = bytes(data[start + 4:end - 1]).decode()
    except UnicodeDecodeError as exc:
        raise CdrError(f"a string is not UTF-8: {exc}", "encoding") from None
    return text, end - 4


def _count(data: Data, offset: int, element: int) -> tuple[int, int]:
    """A sequence's element count at ``offset`` (aligned first), checked against the bytes
    left (each element at least ``element`` bytes), and the offset after the count."""
    offset += -offset & 3
    if 4 + offset + 4 > len(data):
        raise CdrError("a sequence runs past the end of the sample")
    (n,) = _U32.unpack_from(data, 4 + offset)
    if n > MAX_JOINTS:
        raise CdrError(f"a sequence of {n} elements (at most {MAX_JOINTS})", "too_large")
    if n * element > len(data) - 4 - offset - 4:
        raise CdrError(f"a sequence of {n} elements runs past the end of the sample")
    return n, offset + 4


def _doubles(data: Data, offset: int) -> tuple[FloatArray, int]:
    n, offset = _count(data, offset, 8)
    if n == 0:
        return _EMPTY, offset
    offset += -offset & 7
    if 4 + offset + 8 * n > len(data):
        raise CdrError("a sequence of doubles runs past the end of the sample")
    values = np.frombuffer(data, dtype="<f8", count=n, offset=4 + offset)
    return values, offset + 8 * n


class JointStateDecoder:
    """Decodes JointState samples, reusing the previous names list while the names' bytes
    are unchanged (one thread at a time per decoder)."""

    def __init__(self) -> None:
        self._names_bytes = b""
        self._names: list[str] = []

    def decode(self, data: Data) -> JointStateColumns:
        """The columns of one sample; CdrError if it is not a JointState."""
        _check_header(data)
        sec, nanosec = _STAMP.unpack_from(data, 4)
        if nanosec >= 1_000_000_000:
            raise CdrError(f"nanosec {nanosec} is not below 1e9")
        frame_id, offset = _read_string(data, 8, MAX_NAME)
        offset += -offset & 3
        names_start = offset
        cached = self._names_bytes
        if cached and data[4 + offset:4 + offset + len(cached)] == cached:
            names = self._names  # the same joints as last time: the same list
            offset += len(cached)
        else:
            n, offset = _count(data, offset, 5)
            names = []
            for _ in range(n):
                name, offset = _read_string(data, offset, MAX_NAME)
                names.append(name)
            self._names_bytes = bytes(data[4 + names_start:4 + offset])
            self._names = names
        position, offset = _doubles(data, offset)
        velocity, offset = _doubles(data, offset)
        effort, offset = _doubles(data, offset)
        return JointStateColumns(sec * 1_000_000_000 + nanosec, frame_id, names, position,
                                 velocity, effort)


def decode_joint_state(data: Data) -> JointStateColumns:
    """The columns of one sensor_msgs/JointState CDR sample (header included); CdrError
    (with ``cause``) for anything else."""
    return JointStateDecoder().decode(data)


def _string(out: bytearray, text: str, limit: int) -> None:
    out += bytes(-(len(out) - 4) & 3)
    encoded = text.encode()
    if len(encoded) + 1 > limit:
        raise ValueError(f"a string of {len(encoded)} bytes is too long (at most {limit - 1})")
    out += _U32.pack(len(encoded) + 1)
    out += encoded
    out += b"\0"


def _double_sequence(out: bytearray, values: FloatArray) -> None:
    out += bytes(-(len(out) - 4) & 3)
    out += _U32.pack(len(values))
    if len(values):
        out += bytes(-(len(out) - 4) & 7)
        out += values.astype("<f8", copy=False).tobytes()


def _floats(values: npt.ArrayLike | None, what: str) -> FloatArray:
    if values is None:
        return _EMPTY
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{what} must be a flat sequence of numbers, got shape {array.shape}")
    return array


def encode_joint_state(names: Sequence[str], position: npt.ArrayLike, stamp_ns: int = 0,
                       frame_id: str = "", velocity: npt.ArrayLike | None = None,
                       effort: npt.ArrayLike | None = None) -> bytes:
    """The CDR sample of a JointState. ``position`` (and ``velocity``/``effort`` when given,
    non-empty) must have one value per name: ValueError otherwise."""
    names = [str(n) for n in names]
    columns = {"position": _floats(position, "position"),
               "velocity": _floats(velocity, "velocity"), "effort": _floats(effort, "effort")}
    for what, values in columns.items():
        if len(values) != len(names) and (what == "position" or len(values)):
            raise ValueError(f"{len(names)} joint names but {len(values)} {what} values")
    if len(names) > MAX_JOINTS:
        raise ValueError(f"{len(names)} joints (at most {MAX_JOINTS})")
    seconds, nanoseconds = divmod(int(stamp_ns), 1_000_000_000)
    if not -(2 ** 31) <= seconds < 2 ** 31:
        raise ValueError(f"stamp {stamp_ns} ns does not fit builtin_interfaces/Time")
    out = bytearray(HEADER_LE)
    out += _STAMP.pack(seconds, nanoseconds)
    _string(out, str(frame_id), MAX_NAME)
    out += bytes(-(len(out) - 4) & 3)
    out += _U32.pack(len(names))
    for name in names:
        _string(out, name, MAX_NAME)
    for values in columns.values():
        _double_sequence(out, values)
    return bytes(out)


def encode_string(text: str) -> bytes:
    """The CDR sample of a std_msgs/String."""
    out = bytearray(HEADER_LE)
    _string(out, str(text), MAX_TEXT)
    return bytes(out)


def decode_string(data: Data) -> str:
    """The text of a std_msgs/String CDR sample; CdrError for anything else."""
    if len(data) < 9:
        raise CdrError(f"a sample of {len(data)} bytes is too short for a String")
    if bytes(data[:2]) != HEADER_LE[:2]:
        raise CdrError(f"encapsulation {bytes(data[:2]).hex()} is not XCDR1 little-endian",
                       "encoding")
    text, _ = _read_string(data, 0, MAX_TEXT)
    return text
