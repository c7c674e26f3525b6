"""Reading the transforms of a ROS bag: MCAP file, ROS 2 bag folder (sqlite3 or MCAP
storage) or ROS 1 ``.bag``, with ``rosbags`` (the ``tf2py[bag]`` extra) finding the
messages and tf2py's own codec decoding them.

Everything is decoded before anything is handed on, so a file that turns out to be corrupt
half-way raises ``BagError`` and leaves no half-filled buffer behind.
"""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..buffer.messages import TransformStamped
from ..buffer.transforms import Transforms
from .codec import ROS1_TFMESSAGE_MD5, RowBuilder, decode_ros1, decode_ros2
from .errors import BagError, BagWarning, require

if TYPE_CHECKING:
    from ..buffer.core import BufferCore

__all__ = ["BagTransforms", "read_transforms", "TRANSFORM_TYPES"]

# Message types that hold transforms: tf2's, in ROS 2 and ROS 1 spelling, and ROS 1's legacy tf.
TRANSFORM_TYPES = frozenset(
    {
        "tf2_msgs/msg/TFMessage",
        "tf2_msgs/TFMessage",
        "tf/msg/tfMessage",
        "tf/tfMessage",
    }
)

_MCAP_MAGIC = b"\x89MCAP0\r\n"
_ROS1_MAGIC = b"#ROSBAG V2.0\n"
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class BagTransforms:
    """The transforms of a bag's ``/tf`` and ``/tf_static``, in recording order, with the
    messages they came in.

    ``transforms``: every transform (a ``tf2py.Transforms``; row k maps data in
    ``children[k]`` into ``parents[k]`` at its header stamp), ``is_static`` (bool per row).
    Messages (one per ``TFMessage``): ``message_log_ns`` (int64, when the recorder received
    it), ``message_offsets`` (``M + 1`` row offsets), ``message_static`` (bool).
    """

    def __init__(
        self, path: str | os.PathLike[str], transforms: Transforms, log_ns: Sequence[int],
        offsets: Sequence[int], static: Sequence[bool], skipped: int, topics: dict[str, str],
    ) -> None:
        self.path = str(path)
        self.name = Path(path).name
        self.transforms = transforms
        self.message_log_ns = np.asarray(log_ns, dtype=np.int64)
        self.message_offsets = np.asarray(offsets, dtype=np.int64)
        self.message_static = np.asarray(static, dtype=bool)
        self.is_static = np.repeat(self.message_static, np.diff(self.message_offsets))
        #: messages that could not be decoded and were left out
        self.skipped_messages = skipped
        #: topic -> message type, for every transform topic that was read
        self.topics = topics

    def __len__(self) -> int:
        return len(self.transforms)

    @property
    def message_count(self) -> int:
        return len(self.message_log_ns)

    @property
    def start_ns(self) -> int:
        """Log time of the first transform message (ns)."""
        return int(self.message_log_ns[0]) if self.message_count else 0

    @property
    def duration_ns(self) -> int:
        """Log time from the first to the last transform message (ns)."""
        if not self.message_count:
            return 0
        return int(self.message_log_ns[-1] - self.message_log_ns[0])

    def recording_span_s(self) -> float:
        """Seconds between the oldest and newest stamp of the dynamic transforms."""
        dynamic = self.transforms.stamps_ns[~self.is_static]
        if not len(dynamic):
            return 0.0
        return (int(dynamic.max()) - int(dynamic.min())) / 1e9

    def transform(self, row: int) -> TransformStamped:
        """Row ``row`` as a ``TransformStamped``."""
        return self.transforms[row]

    def message_transforms(self, index: int) -> list[TransformStamped]:
        """The transforms of message ``index`` as ``TransformStamped`` objects."""
        start, stop = int(self.message_offsets[index]), int(self.message_offsets[index + 1])
        return self.transforms[start:stop].to_messages()

    def insert_into(self, buffer: BufferCore, authority: str) -> None:
        """Store every transform in ``buffer`` (a ``BufferCore`` or ``Buffer``) with the batch
        insert: statics first, then the dynamic ones. Warns (``BagWarning``) with counts if
        some were invalid or older than the buffer's cache window."""
        invalid: list[tuple[int, Exception]] = []
        old = 0
        for static in (True, False):
            rows = np.flatnonzero(self.is_static == static)
            if not len(rows):
                continue
            part = self.transforms if len(rows) == len(self) else self.transforms[rows]
            result = buffer.set_transforms(
                part.parents, part.children, part.stamps_ns, part.values, authority,
                is_static=static
            )
            old += result.old
            invalid.extend((int(rows[i]), exc) for i, exc in result.invalid)
        if invalid or old:
            parts = []
            if invalid:
                row, exc = invalid[0]
                parts.append(
                    f"{len(invalid)} invalid transforms skipped (first: row {row}, "
                    f"{_one_line(exc)})"
                )
            if old:
                parts.append(f"{old} transforms older than the cache window skipped")
            warnings.warn(
                f"{self.name}: loaded {len(self) - len(invalid) - old} of {len(self)} "
                f"transforms; " + "; ".join(parts),
                BagWarning,
                stacklevel=3,
            )


def _is_metadata(path: Path, mode: int) -> bool:
    """Whether ``path`` is a ROS 2 bag's ``metadata.yaml`` (which ``ros2 bag info`` takes for
    its folder)."""
    return path.name == "metadata.yaml" and stat.S_ISREG(mode)


def bag_name(path: str | os.PathLike[str]) -> str:
    """The name a bag goes by (authorities, messages): its file's or folder's, the folder's
    for its ``metadata.yaml``."""
    p = Path(path)
    try:
        return p.parent.name if _is_metadata(p, p.stat().st_mode) else p.name
    except OSError:
        return p.name


def _open(path: Path) -> tuple[Any, str]:  # (a rosbags reader, or _RecoveredMcap)
    """An unopened rosbags reader for ``path`` and its kind: "ros1", "mcap" or "ros2",
    recognised by content (magic bytes; a folder with metadata.yaml), whatever the name."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise BagError(f"{path}: no such file or directory") from None
    except OSError as exc:
        raise BagError(f"{path}: cannot open ({_one_line(exc)})") from None
    if stat.S_ISDIR(mode):
        if not (path / "metadata.yaml").is_file():
            raise BagError(f"{path}: a folder, but not a ROS 2 bag (no metadata.yaml in it)")
        return require("rosbags.rosbag2").Reader(path), "ros2"
    if _is_metadata(path, mode):  # a ROS 2 bag's metadata file names its folder
        return _open(path.parent)
    if not stat.S_ISREG(mode):
        # A FIFO, socket or device would block or never end: refuse it before opening.
        raise BagError(f"{path}: not a regular file or a bag folder (a pipe or a device?)")
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise BagError(f"{path}: cannot open ({_one_line(exc)})") from None
    if not head:
        raise BagError(f"{path}: empty file, not a bag")
    if head.startswith(_ROS1_MAGIC):
        return require("rosbags.rosbag1").Reader(path), "ros1"
    if head.startswith(_MCAP_MAGIC):
        return _rosbag2_reader(path, ".mcap"), "mcap"
    if head.startswith(_SQLITE_MAGIC):
        return _rosbag2_reader(path, ".db3"), "ros2"
    raise BagError(
        f"{path}: not a ROS bag (neither MCAP, ROS 2 sqlite3 nor ROS 1 bag format 2.0)"
    )


def _rosbag2_reader(path: Path, storage: str) -> Any:  # a rosbags.rosbag2.Reader
    """rosbags' ROS 2 reader for a single storage file of the kind ``storage`` (".mcap" or
    ".db3") found by content: rosbags picks the storage by the file's extension, so map this
    file's own extension (whatever it is, or none) to the storage its content is."""
    base = require("rosbags.rosbag2").Reader
    if path.suffix == storage:
        return base(path)
    plugins = dict(base.STORAGE_PLUGINS)
    plugins[path.suffix] = base.STORAGE_PLUGINS[storage]
    by_content = type("ReaderByContent", (base,), {"STORAGE_PLUGINS": plugins})
    return by_content(path)


class _RecoveredMcap:
    """Reads an MCAP file record by record from the start, as far as it is intact, with the
    interface of a rosbags reader (``connections``, ``messages()``). For files whose summary
    and footer are missing, which rosbags refuses."""

    def __init__(self, path: Path):
        self.path = path
        self.connections: list[Any] = []  # rosbags-like connections (SimpleNamespace)
        self._messages: list[tuple[int, int, bytes]] = []
        self.error: Exception | None = None

    def open(self) -> None:
        from types import SimpleNamespace

        stream_reader = require("mcap.stream_reader")
        records = require("mcap.records")
        schemas: dict[int, Any] = {}
        seen: set[int] = set()
        try:
            with open(self.path, "rb") as f:
                for record in stream_reader.StreamReader(f).records:
                    if isinstance(record, records.Message):
                        self._messages.append((record.channel_id, record.log_time, record.data))
                    elif isinstance(record, records.Schema):
                        schemas[record.id] = record
                    elif isinstance(record, records.Channel) and record.id not in seen:
                        seen.add(record.id)
                        schema = schemas.get(record.schema_id)
                        self.connections.append(SimpleNamespace(
                            id=record.id,
                            topic=record.topic,
                            msgtype=schema.name if schema is not None else "(no schema)",
                            ext=SimpleNamespace(serialization_format=record.message_encoding),
                        ))
        except Exception as exc:  # the damaged end of the file
            self.error = exc
        if not self.connections and self.error is not None:
            raise BagError(
                f"{self.path.name}: cannot read the bag, corrupt or truncated "
                f"({_one_line(self.error)})"
            )

    def messages(self, connections: Iterable[Any]) -> Iterator[tuple[Any, int, bytes]]:
        by_id = {c.id: c for c in connections}
        for channel_id, log_time, data in self._messages:
            connection = by_id.get(channel_id)
            if connection is not None:
                yield connection, log_time, data
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self._messages = []


def open_bag(path: Path, strict: bool) -> tuple[Any, str]:
    """An opened reader for the bag at ``path`` (``connections``, ``messages()``, ``close()``)
    and its kind ("ros1", "mcap" or "ros2"); ``BagError`` (one line) when it cannot be read."""
    reader, kind = _open(path)
    try:
        reader.open()
    except Exception as exc:  # rosbags raises several types for a damaged file
        if kind != "mcap":
            raise BagError(
                f"{path.name}: cannot read the bag, corrupt or truncated ({_one_line(exc)})"
            ) from None
        # rosbags refuses an MCAP without its end (a recorder that was killed) and one with
        # non-ROS channels (the protobuf foxglove.FrameTransforms of `record --foxglove`):
        # read it front to back; when strict, only a file read to its end is accepted.
        recovered = _RecoveredMcap(path)
        recovered.open()
        if strict and recovered.error is not None:
            raise BagError(
                f"{path.name}: cannot read the bag, corrupt or truncated ({_one_line(exc)})"
            ) from None
        reader = recovered
    return reader, kind


def _check_connection(path: Path, connection: Any, is_ros1: bool) -> None:
    """Raise ``BagError`` unless ``connection`` carries tf2_msgs/TFMessage (or tf/tfMessage)."""
    msgtype = connection.msgtype
    if msgtype not in TRANSFORM_TYPES:
        raise BagError(
            f"{path.name}: topic {connection.topic} has type {msgtype}, "
            "not a transform message (tf2_msgs/msg/TFMessage)"
        )
    if is_ros1:
        digest = getattr(connection, "digest", None)
        if digest and digest != ROS1_TFMESSAGE_MD5:
            raise BagError(
                f"{path.name}: topic {connection.topic} has type {msgtype} with md5 {digest}, "
                f"not the known layout ({ROS1_TFMESSAGE_MD5})"
            )
    else:
        fmt = getattr(getattr(connection, "ext", None), "serialization_format", "cdr")
        if fmt != "cdr":
            raise BagError(
                f"{path.name}: topic {connection.topic} is serialised as {fmt!r}, not 'cdr'"
            )


def read_transforms(
    path: str | os.PathLike[str],
    tf_topic: str = "/tf",
    tf_static_topic: str = "/tf_static",
    strict: bool = True,
) -> BagTransforms:
    """Read every transform on ``tf_topic`` and ``tf_static_topic`` of a bag.

    ``path``: an MCAP file, a ROS 2 bag folder (sqlite3 or MCAP storage) or a ROS 1 ``.bag``.
    Raises ``BagError`` (one line) for a missing, empty, corrupt or truncated file, a bag
    with neither topic or with no transforms on them, and a topic whose type is not a
    transform message. Messages that do not decode are skipped; with ``strict`` (the
    default) any skipped message or read error raises ``BagError``, without it they are
    reported in a ``BagWarning`` with counts and the readable rest is returned (this also
    recovers the complete chunks of an MCAP file whose end is missing). A bag with static
    transforms only (no ``tf_topic``, or nothing on it) is read with a ``BagWarning``.
    """
    path = Path(path)
    reader, kind = open_bag(path, strict)
    is_ros1 = kind == "ros1"
    decode = decode_ros1 if is_ros1 else decode_ros2
    columns = RowBuilder()
    log_ns: list[int] = []
    offsets = [0]
    static_flags: list[bool] = []
    skipped = 0
    first_skip = None
    read_error = None
    try:
        wanted = {tf_topic: False, tf_static_topic: True}
        connections = [c for c in reader.connections if c.topic in wanted]
        if not connections:
            names = sorted({c.topic for c in reader.connections})
            raise BagError(
                f"{path.name}: no {tf_topic} or {tf_static_topic} topic in the bag "
                f"(topics: {', '.join(names) or 'none'})"
            )
        for connection in connections:
            _check_connection(path, connection, is_ros1)
        topics = {c.topic: c.msgtype for c in connections}
        static_of = {c.id: wanted[c.topic] for c in connections}
        try:
            for connection, timestamp, raw in reader.messages(connections=connections):
                try:
                    decode(raw, columns)
                except ValueError as exc:
                    skipped += 1
                    if first_skip is None:
                        first_skip = f"{connection.topic} at log time {timestamp} ns: {exc}"
                    continue
                log_ns.append(timestamp)
                offsets.append(len(columns))
                static_flags.append(static_of[connection.id])
        except Exception as exc:  # a damaged chunk or index, met while reading
            read_error = exc
    finally:
        try:
            reader.close()
        except Exception:
            pass
    problems = []
    if read_error is not None:
        problems.append(
            f"reading stopped after {len(log_ns)} messages, corrupt or truncated "
            f"({_one_line(read_error)})"
        )
    if skipped:
        problems.append(f"{skipped} messages could not be decoded (first: {first_skip})")
    if problems and strict:
        raise BagError(f"{path.name}: " + "; ".join(problems))
    if not len(columns):
        raise BagError(
            f"{path.name}: no transforms on {tf_topic} or {tf_static_topic}"
            + (f" ({'; '.join(problems)})" if problems else "")
        )
    if not any(not static for static in static_flags):
        # Only static transforms: a wrong tf_topic, or a recording without /tf; not an error
        # (the statics are real data), but never to be taken for a complete recording.
        problems.append(f"no transforms on {tf_topic}, only the {len(columns)} static ones "
                        f"on {tf_static_topic}")
    if problems:
        warnings.warn(
            f"{path.name}: read {len(columns)} transforms in {len(log_ns)} messages; "
            + "; ".join(problems),
            BagWarning,
            stacklevel=2,
        )
    data = BagTransforms(path, columns.build(), log_ns, offsets, static_flags, skipped, topics)
    _sort_by_log_time(data)
    return data


def _sort_by_log_time(data: BagTransforms) -> None:
    """Put the messages in log-time order (stable) if the reader did not."""
    log_ns = data.message_log_ns
    if len(log_ns) < 2 or bool(np.all(log_ns[1:] >= log_ns[:-1])):
        return
    order = np.argsort(log_ns, kind="stable")
    counts = np.diff(data.message_offsets)
    offsets: list[int] = data.message_offsets.tolist()
    rows = np.concatenate(
        [np.arange(offsets[k], offsets[k + 1]) for k in order.tolist()]
    ).astype(np.int64)
    data.transforms = data.transforms[rows]
    data.message_log_ns = log_ns[order]
    data.message_static = data.message_static[order]
    data.message_offsets = np.concatenate([[0], np.cumsum(counts[order])]).astype(np.int64)
    data.is_static = np.repeat(data.message_static, counts[order])
