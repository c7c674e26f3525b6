"""A bag's joint states made whole: ``/joint_states`` (``sensor_msgs/JointState``) turned into
the robot's transforms through its ``RobotModel``, as ROS's ``robot_state_publisher`` would
have sent them while the bag was recorded.

Each joint state message gives, stamped with its header stamp, the transforms of the movable
joints it names and of the mimic joints that follow them (names the model lacks are ignored);
the model's fixed joints come once, as statics. Every message is used: a bag keeps every
sample, so nothing is thinned to a ``publish_frequency``. A message whose name and position
lengths differ, or with a position that is not finite, is dropped and counted
(``robot_state_publisher`` drops the first kind too). The model is a ``RobotModel``, a URDF
or xacro path, or ``True`` for the latest ``/robot_description`` (``std_msgs/String``)
recorded in the bag.

Messages are read from MCAP files, ROS 2 bag folders and ROS 1 bags (ROS 2 CDR and ROS 1
serialisation), grouped by the list of names they carry, and each group goes through the
model's vectorised rows in one call, so a long recording costs a few array operations.
"""

from __future__ import annotations

import os
import struct
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..buffer.transforms import Transforms
from .errors import BagError, BagWarning
from .reader import BagTransforms, _one_line, _sort_by_log_time, open_bag, read_transforms

if TYPE_CHECKING:
    from ..robot.model import RobotModel

__all__ = ["BagJointStates", "read_joint_states", "robot_model", "robot_transforms",
           "read_with_robot", "JOINT_STATE_TYPES", "STRING_TYPES", "RobotArgument"]

#: What ``robot=`` takes: a model, a URDF or xacro path, or True for the bag's own description.
RobotArgument = Any

JOINT_STATE_TYPES = frozenset({"sensor_msgs/msg/JointState", "sensor_msgs/JointState"})
STRING_TYPES = frozenset({"std_msgs/msg/String", "std_msgs/String"})

_NS_PER_S = 1_000_000_000


class BagJointStates:
    """The joint states of a bag in log-time order, as columns: ``log_ns`` and ``stamps_ns``
    (int64 ns, one per message), ``layouts`` (each distinct list of joint names, as a tuple),
    ``layout_of`` (per message, its index in ``layouts``) and ``positions`` (per message, a
    float64 array in its layout's order: radians or metres). ``description``: the latest
    ``/robot_description`` text, or None. ``dropped``: messages left out, by cause.
    ``topics``: every topic of the bag and its type; ``counts``: messages per topic where the
    bag's index says (else None)."""

    def __init__(self, path: Path, log_ns: list[int], stamps_ns: list[int],
                 layouts: list[tuple[str, ...]], layout_of: list[int],
                 positions: list[npt.NDArray[np.float64]], description: str | None,
                 dropped: dict[str, int], topics: dict[str, str],
                 counts: dict[str, int | None]) -> None:
        self.path = str(path)
        self.name = path.name
        order = np.argsort(np.asarray(log_ns, dtype=np.int64), kind="stable")
        self.log_ns = np.asarray(log_ns, dtype=np.int64)[order]
        self.stamps_ns = np.asarray(stamps_ns, dtype=np.int64)[order]
        self.layouts = layouts
        self.layout_of = np.asarray(layout_of, dtype=np.intp)[order]
        index = order.tolist()
        self.positions = [positions[i] for i in index]
        self.description = description
        self.dropped = dropped
        self.topics = topics
        self.counts = counts

    def __len__(self) -> int:
        return len(self.stamps_ns)

    def joint_names(self) -> list[str]:
        """Every joint name the messages carry, in order of first appearance."""
        seen: dict[str, None] = {}
        for names in self.layouts:
            seen.update(dict.fromkeys(names))
        return list(seen)

    def groups(self) -> list[tuple[tuple[str, ...], npt.NDArray[np.intp],
                                   npt.NDArray[np.float64]]]:
        """Per layout: its names, the indices of its messages (log-time order) and their
        positions as one ``(n, len(names))`` array."""
        found = []
        for k, names in enumerate(self.layouts):
            members = np.flatnonzero(self.layout_of == k)
            if not len(members):
                continue
            rows = [self.positions[i] for i in members.tolist()]
            found.append((names, members, np.array(rows, dtype=np.float64).reshape(
                len(members), len(names))))
        return found


# -- decoding ---------------------------------------------------------------------------------

_U32 = struct.Struct("<I")
_ROS1_HEADER = struct.Struct("<III")  # seq, secs, nsecs


class _Ros1JointStateDecoder:
    """ROS 1 ``sensor_msgs/JointState`` (no alignment, strings without NUL), decoded to
    ``(stamp ns, names, positions)``; the names list is the previous one while its bytes are
    unchanged. ValueError unless the bytes are exactly one such message."""

    def __init__(self) -> None:
        self._names_bytes = b""
        self._names: list[str] = []

    def decode(self, raw: bytes) -> tuple[int, list[str], npt.NDArray[np.float64]]:
        raw = bytes(raw)
        size = len(raw)
        try:
            _seq, sec, nsec = _ROS1_HEADER.unpack_from(raw, 0)
            (length,) = _U32.unpack_from(raw, 12)
            off = names_start = 16 + length
            cached = self._names_bytes
            if cached and raw[off:off + len(cached)] == cached:
                names = self._names
                off += len(cached)
            else:
                (count,) = _U32.unpack_from(raw, off)
                off += 4
                if count * 4 > size - off:
                    raise ValueError(f"claims {count} names in {size} bytes")
                names = []
                for _ in range(count):
                    (length,) = _U32.unpack_from(raw, off)
                    off += 4
                    if off + length > size:
                        raise ValueError("a joint name runs past the end")
                    names.append(raw[off:off + length].decode("utf-8"))
                    off += length
                self._names_bytes, self._names = raw[names_start:off], names
            sequences = []
            for _ in range(3):  # position, velocity, effort
                (count,) = _U32.unpack_from(raw, off)
                off += 4
                if count * 8 > size - off:
                    raise ValueError(f"claims {count} numbers in {size} bytes")
                sequences.append(np.frombuffer(raw, dtype="<f8", count=count, offset=off))
                off += 8 * count
        except (struct.error, UnicodeDecodeError) as exc:
            raise ValueError(str(exc)) from None
        if off != size:
            raise ValueError(f"{size - off} bytes left over")
        return sec * _NS_PER_S + nsec, names, sequences[0]


def decode_string_ros1(raw: bytes) -> str:
    """The text of one ROS 1 ``std_msgs/String``; ValueError if it is not one."""
    raw = bytes(raw)
    if len(raw) < 4:
        raise ValueError("shorter than a string's length")
    (length,) = _U32.unpack_from(raw, 0)
    if 4 + length != len(raw):
        raise ValueError(f"string length {length} does not match {len(raw) - 4} bytes")
    return raw[4:].decode("utf-8")


class _CdrJointStateDecoder:
    """ROS 2 CDR ``sensor_msgs/msg/JointState`` through tf2py.robot's one codec."""

    def __init__(self) -> None:
        from ..robot.joint_state import JointStateDecoder

        self._decoder = JointStateDecoder()

    def decode(self, raw: bytes) -> tuple[int, list[str], npt.NDArray[np.float64]]:
        columns = self._decoder.decode(raw)
        return columns.stamp_ns, columns.names, columns.position


# -- reading ----------------------------------------------------------------------------------


def _message_count(connection: Any) -> int | None:
    count = getattr(connection, "msgcount", None)
    return int(count) if isinstance(count, int) else None


def read_joint_states(path: str | os.PathLike[str], joint_states_topic: str = "/joint_states",
                      description_topic: str = "/robot_description",
                      strict: bool = True) -> BagJointStates:
    """Read a bag's joint states and its latest robot description (``std_msgs/String``).

    Raises ``BagError`` (one line) for a file that cannot be read, a topic of another type,
    or (with ``strict``) messages that do not decode; without ``strict`` those are left out
    and counted in ``dropped``. Messages whose name and position lengths differ are left out
    and counted either way (robot_state_publisher drops them too). A bag without either
    topic is not an error here: the result is empty (``robot_transforms`` says so)."""
    from ..robot.joint_state import decode_string

    path = Path(path)
    reader, kind = open_bag(path, strict)
    decode_text: Callable[[bytes], str]
    if kind == "ros1":
        decoder: Any = _Ros1JointStateDecoder()
        decode_text = decode_string_ros1
    else:
        decoder = _CdrJointStateDecoder()
        decode_text = decode_string
    log_ns: list[int] = []
    stamps: list[int] = []
    layout_of: list[int] = []
    positions: list[npt.NDArray[np.float64]] = []
    layouts: list[tuple[str, ...]] = []
    # id(names list) -> (that list, its layout index): the decoders hand back the same list
    # while the names do not change; holding it keeps its id from being reused.
    by_list: dict[int, tuple[list[str], int]] = {}
    by_names: dict[tuple[str, ...], int] = {}
    dropped: dict[str, int] = {}
    first_problem = ""
    description: tuple[int, str] | None = None
    try:
        topics = {c.topic: c.msgtype for c in reader.connections}
        counts: dict[str, int | None] = {}
        for c in reader.connections:
            n, before = _message_count(c), counts.get(c.topic, 0)
            counts[c.topic] = None if n is None or before is None else before + n
        wanted = [c for c in reader.connections
                  if c.topic in (joint_states_topic, description_topic)]
        for connection in wanted:
            types = JOINT_STATE_TYPES if connection.topic == joint_states_topic else STRING_TYPES
            if connection.msgtype not in types:
                raise BagError(f"{path.name}: topic {connection.topic} has type "
                               f"{connection.msgtype}, not {max(types)}")
        decode = decoder.decode
        try:
            for connection, timestamp, raw in reader.messages(connections=wanted):
                try:
                    if connection.topic == description_topic:
                        text = decode_text(raw)
                        if description is None or timestamp >= description[0]:
                            description = (timestamp, text)
                        continue
                    stamp, names, position = decode(raw)
                except ValueError as exc:
                    dropped["undecodable"] = dropped.get("undecodable", 0) + 1
                    first_problem = first_problem or (
                        f"{connection.topic} at log time {timestamp} ns: {_one_line(exc)}")
                    continue
                if len(names) != len(position):
                    dropped["length_mismatch"] = dropped.get("length_mismatch", 0) + 1
                    continue
                known = by_list.get(id(names))
                if known is None or known[0] is not names:
                    key = tuple(names)
                    layout = by_names.get(key)
                    if layout is None:
                        layout = by_names[key] = len(layouts)
                        layouts.append(key)
                    by_list[id(names)] = known = (names, layout)
                log_ns.append(timestamp)
                stamps.append(stamp)
                layout_of.append(known[1])
                positions.append(position)
        except Exception as exc:  # a damaged chunk or index, met while reading
            if strict:
                raise BagError(f"{path.name}: reading stopped after {len(log_ns)} joint states, "
                               f"corrupt or truncated ({_one_line(exc)})") from None
            dropped["unreadable_rest"] = 1
    finally:
        try:
            reader.close()
        except Exception:
            pass
    if strict and dropped.get("undecodable"):
        raise BagError(f"{path.name}: {dropped['undecodable']} messages could not be decoded "
                       f"(first: {first_problem})")
    return BagJointStates(path, log_ns, stamps, layouts, layout_of, positions,
                          None if description is None else description[1], dropped, topics,
                          counts)


def robot_model(robot: RobotArgument, states: BagJointStates,
                description_topic: str = "/robot_description") -> RobotModel:
    """The ``RobotModel`` that ``robot`` names: itself, the URDF or xacro file at that path,
    or (``True``) the one in the bag's latest ``/robot_description``. ``BagError`` when the
    bag has none; ``RobotModelError`` (one line) when the description cannot be built."""
    from ..robot.model import RobotModel

    if isinstance(robot, RobotModel):
        return robot
    if robot is True:
        if states.description is None:
            raise BagError(f"{states.name}: robot=True, but the bag has no {description_topic} "
                           "(std_msgs/String) to build the robot from; give a RobotModel or a "
                           "URDF path")
        return RobotModel.from_urdf_string(states.description)
    if isinstance(robot, (str, os.PathLike)):
        return RobotModel.from_urdf(robot)
    raise TypeError(f"robot must be a RobotModel, a URDF path or True, not {type(robot).__name__}")


# -- from joint states to transforms ----------------------------------------------------------


def robot_transforms(model: RobotModel, states: BagJointStates, frame_prefix: str = "",
                     joint_states_topic: str = "/joint_states") -> BagTransforms:
    """The transforms ``robot_state_publisher`` would have sent for ``states``: the fixed
    joints once on /tf_static (stamped with the first joint state's stamp, received with
    it), then, per joint state message, the movable joints it names and their mimics,
    stamped with its stamp and received at its log time, as ``read_transforms`` gives them.

    ``BagError`` (one line) when the bag has no joint states, or when none of their names is
    a movable joint of the model. Messages with a position that is not finite are left out
    and counted in ``states.dropped``."""
    where = f"{states.name}: "
    if not len(states):
        count = states.counts.get(joint_states_topic)
        found = (f"{joint_states_topic} has no readable messages"
                 if joint_states_topic in states.topics and count != 0 else
                 f"no joint states on {joint_states_topic}")
        raise BagError(where + f"{found} (sensor_msgs/JointState) to turn into the robot's "
                       f"transforms (topics: {', '.join(sorted(states.topics)) or 'none'})")
    movable = model.movable_joint_names
    if not set(movable) & set(states.joint_names()):
        raise BagError(where + f"none of the {len(states.joint_names())} joints named on "
                       f"{joint_states_topic} ({_names(states.joint_names())}) is a movable "
                       f"joint of robot {model.name!r} ({_names(movable)})")
    from ..robot.rate import JointIndex

    index = JointIndex(movable)  # robot_state_publisher's reading, as RobotStatePublisher's
    parts: list[tuple[Transforms, npt.NDArray[np.intp]]] = []
    for names, members, positions in states.groups():
        finite = np.isfinite(positions).all(axis=1)
        if not finite.all():
            states.dropped["not_finite"] = (states.dropped.get("not_finite", 0)
                                            + int((~finite).sum()))
            members, positions = members[finite], positions[finite]
        if not len(members):
            continue
        given = index.configuration(names, positions)
        rows = model.joint_state_rows(given, states.stamps_ns[members], frame_prefix)
        if not len(rows):  # (none of its names is a movable joint of the model)
            continue
        # movable_rows gives joint by joint; each joint's rows in configuration order
        parts.append((rows, np.tile(members, len(rows) // len(members))))
    return _as_bag_transforms(model, states, parts, frame_prefix)


def _names(names: Sequence[str], shown: int = 6) -> str:
    listed = ", ".join(names[:shown])
    return listed + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _as_bag_transforms(model: RobotModel, states: BagJointStates,
                       parts: list[tuple[Transforms, npt.NDArray[np.intp]]],
                       frame_prefix: str) -> BagTransforms:
    """Rows in message order (statics first, as one message) as a ``BagTransforms``."""
    message = np.concatenate([m for _, m in parts]) if parts else np.zeros(0, dtype=np.intp)
    order = np.argsort(message, kind="stable")  # message by message, joints in model order
    moving = Transforms.concatenate([rows for rows, _ in parts])[order]
    used = np.unique(message)  # the messages that gave rows, in log-time order
    per_message = np.bincount(message, minlength=len(states))[used]
    fixed = model.static_rows(frame_prefix, int(states.stamps_ns[0]))
    statics = len(fixed)
    data = BagTransforms(states.path, Transforms.concatenate([fixed, moving]), [], [0], [], 0,
                         {})
    log_ns = states.log_ns[used]
    data.message_log_ns = np.concatenate([[int(states.log_ns[0])] if statics else [],
                                          log_ns]).astype(np.int64)
    counts = np.concatenate([[statics] if statics else [], per_message]).astype(np.int64)
    data.message_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    data.message_static = np.concatenate([[True] if statics else [],
                                          np.zeros(len(used), dtype=bool)]).astype(bool)
    data.is_static = np.repeat(data.message_static, counts)
    return data


def merge(first: BagTransforms, second: BagTransforms) -> BagTransforms:
    """The messages of both, in log-time order (stable: ``first``'s before ``second``'s at
    equal times)."""
    data = BagTransforms(first.path, Transforms.concatenate([first.transforms, second.transforms]),
                         [], [0], [], 0, {})
    data.message_log_ns = np.concatenate([first.message_log_ns, second.message_log_ns])
    data.message_offsets = np.concatenate(
        [first.message_offsets, second.message_offsets[1:] + first.message_offsets[-1]])
    data.message_static = np.concatenate([first.message_static, second.message_static])
    data.is_static = np.concatenate([first.is_static, second.is_static])
    data.skipped_messages = first.skipped_messages + second.skipped_messages
    data.topics = {**first.topics, **second.topics}
    _sort_by_log_time(data)
    return data


def _recorded_transforms(path: str | os.PathLike[str], states: BagJointStates, tf_topic: str,
                         tf_static_topic: str, strict: bool) -> BagTransforms | None:
    """The bag's own /tf and /tf_static, or None when it has no message on either."""
    counts = [states.counts.get(topic) for topic in (tf_topic, tf_static_topic)
              if topic in states.topics]
    if not counts or all(count == 0 for count in counts):
        return None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BagWarning)
        try:
            data = read_transforms(path, tf_topic, tf_static_topic, strict=strict)
        except BagError:
            if None not in counts:  # messages there, and unreadable: say so
                raise
            return None  # an index that did not count them: there were none to read
    for warning in caught:
        # "only static transforms" is no news when the joint states give the dynamic ones
        if not (issubclass(warning.category, BagWarning) and " only the " in str(warning.message)):
            warnings.warn(warning.message, warning.category, stacklevel=3)
    return data


def read_with_robot(path: str | os.PathLike[str], robot: RobotArgument,
                    tf_topic: str = "/tf", tf_static_topic: str = "/tf_static",
                    strict: bool = True, frame_prefix: str = "",
                    joint_states_topic: str = "/joint_states",
                    description_topic: str = "/robot_description") -> BagTransforms:
    """A bag's transforms with its joint states made whole: its own ``tf_topic`` and
    ``tf_static_topic`` (if it has any) and the transforms of ``robot_transforms``, in
    log-time order. ``robot``: a ``RobotModel``, a URDF or xacro path, or ``True`` for the
    bag's latest ``description_topic``. Raises ``BagError`` or ``RobotModelError``, one
    line each. Left-out messages are reported in one ``BagWarning`` with counts."""
    states = read_joint_states(path, joint_states_topic, description_topic, strict=strict)
    model = robot_model(robot, states, description_topic)
    data = robot_transforms(model, states, frame_prefix, joint_states_topic)
    if states.dropped:
        causes = {"undecodable": "could not be decoded",
                  "length_mismatch": "had name and position lists of different lengths",
                  "not_finite": "had a position that is not finite",
                  "unreadable_rest": "(the rest of the file could not be read)"}
        parts = [f"{count} {causes.get(cause, cause)}" if cause != "unreadable_rest"
                 else causes[cause] for cause, count in states.dropped.items()]
        warnings.warn(f"{states.name}: joint states left out: {'; '.join(parts)}", BagWarning,
                      stacklevel=2)
    recorded = _recorded_transforms(path, states, tf_topic, tf_static_topic, strict)
    return data if recorded is None else merge(recorded, data)
