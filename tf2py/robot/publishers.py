"""``JointStatePublisher`` and ``RobotStatePublisher`` on any bus, as ROS's
joint_state_publisher (its topic side) and robot_state_publisher.

``RobotStatePublisher`` sends the fixed joints once on ``/tf_static`` (latched), on buses that
keep transient-local topics (ROS 2, Zenoh) the URDF on ``/robot_description``, and, hearing
``/joint_states`` (SensorDataQoS, so reliable and best-effort publishers alike), the movable
joints and the mimics following them on ``/tf``, stamped with each message's stamp. Its rate
limit is robot_state_publisher's: a message is used when its stamp is at least one publish
interval (``1000 / publish_frequency`` ms, truncated to the millisecond as ROS does) after the
least recently published of the joints it names; a clock that moves backwards (a bag looped)
forgets those times. The rows go out as columns (``send_columns``): no object per transform.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..buffer.time import Time, to_nanoseconds
from ..buffer.transforms import Transforms
from ..transport.broadcaster import StaticTransformBroadcaster, TransformBroadcaster
from ..transport.counters import DropCounter
from ..transport.interface import TopicReceiver, TopicSender, transport_for
from ..transport.lifetime import CloseOnce, release_all, release_when_collected, weak_callback
from ..transport.ros2.cdr import CdrError
from .joint_state import (
    JOINT_STATES,
    JOINT_STATES_SENSOR,
    ROBOT_DESCRIPTION,
    JointStateDecoder,
    encode_joint_state,
    encode_string,
)
from .model import RobotModel
from .rate import JointIndex, PublishTimes

__all__ = ["JointStatePublisher", "RobotStatePublisher", "AUTHORITY"]

#: The authority of what a RobotStatePublisher sends (as ROS's node name).
AUTHORITY = "robot_state_publisher"


class JointStatePublisher:
    """Publishes ``sensor_msgs/JointState`` on ``/joint_states`` (reliable, keep last 10, as
    joint_state_publisher) on the bus at ``core`` (default ``$TF2PY_CORE``); ``keys`` as for
    the broadcasters. ``close()``; a context manager."""

    def __init__(self, core: Any = None, keys: Any = None):
        transport, address = transport_for(core)
        self.address = address
        self._publisher: TopicSender = transport.topic_publisher(address, JOINT_STATES, keys)

    @property
    def sent_messages(self) -> int:
        """Joint states sent so far."""
        return self._publisher.sent_messages

    def publish(self, names: Any, positions: Any, stamp: Any = None, velocities: Any = None,
                efforts: Any = None) -> None:
        """Send one JointState: ``names`` and ``positions`` (radians or metres) of equal
        length, ``stamp`` (a Time or seconds; None: now), optional ``velocities`` and
        ``efforts`` of the same length. ValueError for mismatched lengths."""
        if isinstance(names, str):
            raise TypeError("names must be a sequence of joint names, not one string")
        stamp_ns = time.time_ns() if stamp is None else to_nanoseconds(stamp, "stamp")
        self._publisher.publish(encode_joint_state(list(names), positions, stamp_ns, "",
                                                   velocities, efforts))

    def close(self) -> None:
        """Close the publisher (idempotent)."""
        self._publisher.close()

    def __enter__(self) -> JointStatePublisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RobotStatePublisher:
    """Publishes a robot's links as ROS's robot_state_publisher, for ``model`` (a
    ``RobotModel``, or a URDF/xacro path) on the bus at ``core`` (default ``$TF2PY_CORE``).

    When it starts it sends the fixed joints once on ``/tf_static`` (latched) and, on
    ``ros2://`` and ``zenoh://``, the URDF on ``/robot_description`` (transient local). With
    ``listen`` it hears ``/joint_states`` and sends on ``/tf`` the movable joints each
    message names and the mimics following them, stamped with the message's stamp
    (``ignore_timestamp``: now, and every message), at most ``publish_frequency`` times a
    second per joint (Hz, 0 < f <= 1000, counted by stamps). ``publish(positions)`` does the
    same from Python. ``frame_prefix`` goes before every link name. Bad joint states are
    dropped and counted (``stats()``). ``close()``; a context manager."""

    def __init__(self, model: RobotModel | str | os.PathLike[str], core: Any = None,
                 keys: Any = None, frame_prefix: str = "", publish_frequency: float = 20.0,
                 ignore_timestamp: bool = False, listen: bool = True):
        if not isinstance(model, RobotModel):
            model = RobotModel.from_urdf(model)
        frequency = float(publish_frequency)
        if not (math.isfinite(frequency) and 0.0 < frequency <= 1000.0):
            raise ValueError(f"publish_frequency must be in (0, 1000] Hz, got {publish_frequency!r}")
        if not isinstance(frame_prefix, str):
            raise TypeError(f"frame_prefix must be a string, got {type(frame_prefix).__name__}")
        self.model = model
        self.frame_prefix = frame_prefix
        self.publish_frequency = frequency
        self.ignore_timestamp = bool(ignore_timestamp)
        transport, address = transport_for(core)
        self.address = address
        self._lock = threading.Lock()  # the broadcaster and the counters, across threads
        self._closing = CloseOnce(self._lock)
        self.dropped = DropCounter(f"tf2py robot_state_publisher {model.name}")
        self.received_messages = 0
        self.published_messages = 0
        self.published_transforms = 0
        self.skipped_messages = 0
        self._index = JointIndex(model.movable_joint_names)
        self._times = PublishTimes(int(1000.0 / frequency) * 1_000_000)
        self._decoder = JointStateDecoder()
        self._parts: list[Any] = []
        # Dropped without close(): its parts are closed when it is collected (the subscriber
        # holds it only weakly, so it can be).
        self._finalizer = release_when_collected(self, release_all(self._parts),
                                                 f"RobotStatePublisher of {model.name!r}")
        try:
            self._static = StaticTransformBroadcaster(address, AUTHORITY, keys)
            self._parts.append(self._static)
            self._tf = TransformBroadcaster(address, AUTHORITY, keys)
            self._parts.append(self._tf)
            self._description: TopicSender | None = None
            if transport.transient_local_topics:
                self._description = transport.topic_publisher(address, ROBOT_DESCRIPTION, keys)
                self._parts.append(self._description)
                self._description.publish(encode_string(model.urdf))
            statics = model.static_transforms(Time.now(), frame_prefix)
            if statics:
                self._static.send_transform(statics)
            self._subscriber: TopicReceiver | None = None
            if listen:
                self._subscriber = transport.topic_subscriber(
                    address, JOINT_STATES_SENSOR, weak_callback(self._on_message), keys)
                self._parts.append(self._subscriber)
        except BaseException:
            self.close()
            raise

    # -- from the bus ------------------------------------------------------------------------

    def _on_message(self, data: bytes) -> None:
        """One /joint_states sample, on the bus's receive thread."""
        self.received_messages += 1
        try:
            message = self._decoder.decode(data)
        except CdrError as exc:
            self.dropped.drop(exc.cause, f"/joint_states: {exc}")
            return
        names, position = message.names, message.position
        if len(names) != len(position):
            self.dropped.drop("shape", f"/joint_states names {len(names)} joints but gives "
                              f"{len(position)} positions")
            return
        if not names:
            return
        if not np.isfinite(position).all():
            bad = names[int(np.flatnonzero(~np.isfinite(position))[0])]
            self.dropped.drop("invalid", f"/joint_states: joint {bad!r} has a non-finite "
                              "position")
            return
        now_ns = time.time_ns()
        if not self._times.due(names, message.stamp_ns, now_ns, self.ignore_timestamp):
            self.skipped_messages += 1
            return
        given = self._index.configuration(names, position)
        self._send(self.model.joint_state_rows(
            given, now_ns if self.ignore_timestamp else message.stamp_ns, self.frame_prefix))

    def _send(self, rows: Transforms) -> None:
        if not rows.parents:
            return
        with self._lock:
            if self._closing.closed:
                return
            self._tf.send_columns(rows.parents, rows.children, rows.stamps_ns, rows.values)
            self.published_messages += 1
            self.published_transforms += len(rows.parents)

    # -- from Python -------------------------------------------------------------------------

    def publish(self, positions: Any, stamp: Any = None) -> None:
        """Send the movable joints of ``positions`` (a mapping of joint names to positions,
        names not in the model ignored, or a sequence in ``model.joint_names`` order) and
        the mimics following them on ``/tf``, stamped ``stamp`` (a Time or seconds; None:
        now). Not rate-limited: the caller chooses the rate. ValueError for a non-finite
        position or a sequence of the wrong length; RuntimeError once closed."""
        if self._closing.closed:
            raise RuntimeError("publish on a closed RobotStatePublisher")
        if not isinstance(positions, Mapping):  # checked: finite, joint_names' length
            positions = self.model.positions_array(positions)
        stamp_ns = time.time_ns() if stamp is None else to_nanoseconds(stamp, "stamp")
        self._send(self.model.movable_rows(positions, stamp_ns, self.frame_prefix))

    # -- the rest ----------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """``received_messages`` (joint states heard), ``published_messages`` and
        ``published_transforms`` (on /tf), ``skipped_messages`` (within the publish
        interval), ``dropped`` ({cause: count}: ``garbage``, ``encoding``, ``too_large``,
        ``shape`` for names and positions of different lengths, ``invalid`` for a
        non-finite position)."""
        return {"received_messages": self.received_messages,
                "published_messages": self.published_messages,
                "published_transforms": self.published_transforms,
                "skipped_messages": self.skipped_messages,
                "dropped": self.dropped.snapshot()}

    def close(self) -> None:
        """Stop hearing joint states and close the broadcasters (idempotent)."""
        if not self._closing.begin():
            return
        self._finalizer.detach()
        for part in reversed(self._parts):
            try:
                part.close()
            except Exception:  # closing the others matters more
                pass
        self._parts = []

    def __enter__(self) -> RobotStatePublisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
