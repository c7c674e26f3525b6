"""Writing transforms as a ROS 2 MCAP file: ``tf2_msgs/msg/TFMessage`` on ``/tf`` and
``/tf_static`` (ros2msg schema, CDR encoding, rosbag2's QoS metadata with ``/tf_static``
transient-local), which ``ros2 bag``, the ``mcap`` tools and Foxglove read back.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..buffer.transforms import Transforms
from ..transport.lifetime import CloseOnce
from .codec import TFMESSAGE_ROS2_DEFINITION, encode_ros2
from .errors import BagError, require

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..buffer.messages import TransformStamped

#: One transform as the writer takes it: (parent, child, stamp ns, (tx, ty, tz, qx, qy, qz, qw)).
Row = tuple[str, str, int, Sequence[float]]

__all__ = ["BagWriter"]

_TFMESSAGE_HASH = "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"
_INFINITE = "    sec: 9223372036\n    nsec: 854775807\n"


def _qos_yaml(depth: int, durability: str) -> str:
    """rosbag2's ``offered_qos_profiles`` text for one reliable keep-last publisher."""
    return (
        f"- history: keep_last\n  depth: {depth}\n  reliability: reliable\n"
        f"  durability: {durability}\n  deadline:\n{_INFINITE}  lifespan:\n{_INFINITE}"
        f"  liveliness: automatic\n  liveliness_lease_duration:\n{_INFINITE}"
        "  avoid_ros_namespace_conventions: false"
    )


class BagWriter:
    """Writes transform messages into a new ROS 2 MCAP file at ``path``.

    ``write(transforms, is_static=False, log_ns=None)`` adds one ``TFMessage``;
    ``close()`` writes the summary and footer, after which the file is complete (a file
    that was not closed lacks them). Thread-safe; a context manager.
    """

    def __init__(self, path: str | os.PathLike[str], tf_topic: str = "/tf",
                 tf_static_topic: str = "/tf_static") -> None:
        writer_mod = require("mcap.writer")
        self.path = str(path)
        self._lock = threading.Lock()
        self._closing = CloseOnce(self._lock)
        self.message_count = 0
        self.transform_count = 0
        try:
            self._file = open(self.path, "wb")
        except OSError as exc:
            raise BagError(f"{self.path}: cannot create ({' '.join(str(exc).split())})") from None
        try:
            compression = writer_mod.CompressionType.ZSTD
            try:
                import zstandard  # noqa: F401
            except ImportError:
                compression = writer_mod.CompressionType.LZ4
            self._writer = writer_mod.Writer(
                self._file, chunk_size=256 * 1024, compression=compression
            )
            self._writer.start(profile="ros2", library="tf2py")
            schema_id = self._writer.register_schema(
                name="tf2_msgs/msg/TFMessage",
                encoding="ros2msg",
                data=TFMESSAGE_ROS2_DEFINITION.encode("utf-8"),
            )

            def tf_channel(topic: str, depth: int, durability: str) -> int:
                """A TFMessage channel whose metadata says its ROS 2 QoS, as ros2 bag does."""
                channel_id: int = self._writer.register_channel(
                    topic=topic, message_encoding="cdr", schema_id=schema_id,
                    metadata={"offered_qos_profiles": _qos_yaml(depth, durability),
                              "topic_type_hash": _TFMESSAGE_HASH})
                return channel_id

            self._channels = {False: tf_channel(tf_topic, 100, "volatile"),
                              True: tf_channel(tf_static_topic, 1, "transient_local")}
        except BaseException:
            self._file.close()
            raise
        self._sequence = 0

    def write(self, transforms: Iterable[TransformStamped] | Transforms, is_static: bool = False,
              log_ns: int | None = None) -> None:
        """Add one ``TFMessage`` holding ``transforms`` (a ``Transforms``, or
        ``TransformStamped`` objects) on the static or dynamic topic; ``log_ns`` is the
        receive time (ns, default: now)."""
        if isinstance(transforms, Transforms):
            self.write_columns(transforms.parents, transforms.children, transforms.stamps_ns,
                               transforms.values, is_static, log_ns)
            return
        rows: list[Row] = []
        for t in transforms:
            tr, q = t.transform.translation, t.transform.rotation
            rows.append(
                (
                    t.header.frame_id,
                    t.child_frame_id,
                    t.header.stamp.nanoseconds,
                    (tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w),
                )
            )
        self.write_rows(rows, is_static, log_ns)

    def write_columns(self, parents: Sequence[str], children: Sequence[str],
                      stamps_ns: npt.NDArray[Any] | Iterable[int],
                      values: npt.NDArray[Any] | Iterable[Sequence[float]],
                      is_static: bool = False, log_ns: int | None = None) -> None:
        """Like ``write`` with columns: frame id lists, stamps (int ns) and an ``(N, 7)``
        array of [tx, ty, tz, qx, qy, qz, qw] (the transport's and reader's layout)."""
        stamps: list[int] = (stamps_ns.tolist() if isinstance(stamps_ns, np.ndarray)
                             else list(stamps_ns))
        rows: list[Sequence[float]] = (values.tolist() if isinstance(values, np.ndarray)
                                       else list(values))
        self.write_rows(list(zip(parents, children, stamps, rows)), is_static, log_ns)

    def write_rows(self, rows: Sequence[Row], is_static: bool = False,
                   log_ns: int | None = None) -> None:
        """Like ``write`` with rows ``(parent, child, stamp_ns, (tx, ty, tz, qx, qy, qz, qw))``."""
        data = encode_ros2(rows)
        if log_ns is None:
            log_ns = time.time_ns()
        with self._lock:
            if self._closing.closed:
                raise BagError(f"{self.path}: the bag writer is closed")
            self._writer.add_message(
                channel_id=self._channels[bool(is_static)],
                log_time=int(log_ns),
                data=data,
                publish_time=int(log_ns),
                sequence=self._sequence,
            )
            self._sequence += 1
            self.message_count += 1
            self.transform_count += len(rows)

    def add_channel(self, topic: str, schema_name: str, schema_encoding: str,
                    schema_data: bytes, message_encoding: str,
                    metadata: Mapping[str, str] | None = None) -> int:
        """Register one more channel (for messages other than ``TFMessage``, e.g.
        ``foxglove.FrameTransforms`` in protobuf); returns its id for ``write_message``."""
        with self._lock:
            if self._closing.closed:
                raise BagError(f"{self.path}: the bag writer is closed")
            schema_id = self._writer.register_schema(
                name=schema_name, encoding=schema_encoding, data=bytes(schema_data))
            channel_id: int = self._writer.register_channel(
                topic=topic, message_encoding=message_encoding, schema_id=schema_id,
                metadata=dict(metadata or {}))
            return channel_id

    def write_message(self, channel_id: int, data: bytes, log_ns: int | None = None) -> None:
        """Add one already encoded message on a channel from ``add_channel`` (not counted in
        ``message_count`` / ``transform_count``, which count the ``TFMessage`` topics)."""
        if log_ns is None:
            log_ns = time.time_ns()
        with self._lock:
            if self._closing.closed:
                raise BagError(f"{self.path}: the bag writer is closed")
            self._writer.add_message(channel_id=channel_id, log_time=int(log_ns), data=data,
                                     publish_time=int(log_ns), sequence=self._sequence)
            self._sequence += 1

    def close(self) -> None:
        """Finish the file (summary, footer) and close it; safe to call twice."""
        if not self._closing.begin():
            return
        with self._lock:
            try:
                self._writer.finish()
            finally:
                self._file.close()

    def __enter__(self) -> BagWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
