"""Typed topics (``topics.TopicSpec``) on a ROS 2 graph: a raw writer or reader on DDS topic
``rt<name>`` of the type's DDS name, with the spec's QoS and, as rmw puts it in every
endpoint's USER_DATA, ``typehash=RIHS01_...;`` (what ``ros2 topic info -v`` and rclpy's
``get_publishers_info_by_topic`` report as the endpoint's type hash).

Payloads are CDR bytes both ways; transient-local topics are kept by DDS for late joiners
while the writer lives.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..address import core_address
from ..counters import DropCounter
from ..topics import payload_bytes
from . import types
from ._dds import dds
from .participant import Participant

if TYPE_CHECKING:
    from cyclonedds.idl import IdlStruct
    from cyclonedds.internal import SampleInfo
    from cyclonedds.qos import Qos

    from ..topics import TopicSpec

__all__ = ["Ros2TopicPublisher", "Ros2TopicSubscriber", "topic_qos", "dds_topic_name"]

_P = dds.qos.Policy
_MS = 1_000_000


def topic_qos(topic: TopicSpec) -> Qos:
    """The DDS QoS of one side of ``topic``, with its type hash in USER_DATA (as rmw)."""
    qos: Qos = dds.qos.Qos(
        _P.Reliability.Reliable(100 * _MS) if topic.reliable else _P.Reliability.BestEffort,
        _P.Durability.TransientLocal if topic.transient_local else _P.Durability.Volatile,
        _P.History.KeepLast(topic.depth),
        _P.Userdata(f"typehash={topic.type_hash};".encode()),
        _P.DataRepresentation(use_cdrv0_representation=True))
    return qos


def dds_topic_name(topic: TopicSpec) -> str:
    """ROS 2's DDS name of a topic: ``rt/joint_states``."""
    return "rt/" + topic.relative_name


def _data_type(topic: TopicSpec) -> type[IdlStruct]:
    data_type = types.BY_ROS_TYPE.get(topic.type_name)
    if data_type is None:
        raise ValueError(f"ros2:// carries no {topic.type_name} (known: "
                         f"{', '.join(sorted(types.BY_ROS_TYPE))})")
    return data_type


def _acquire(address: str, keys: Any) -> Participant:
    if keys is not None:
        raise ValueError("keys= applies to tf2py buses (tcp://, ipc://), not to ROS 2 "
                         "(ros2://), whose traffic is plain DDS")
    return Participant.acquire(core_address(address))


class Ros2TopicPublisher:
    """Writes CDR payloads on one ROS 2 topic. Never blocks on the network."""

    def __init__(self, address: str, topic: TopicSpec, keys: Any = None):
        data_type = _data_type(topic)
        self.topic = topic
        self.sent_messages = 0
        self._lock = threading.Lock()
        self._closed = False
        self._participant = _acquire(address, keys)
        try:
            self._writer = self._participant.writer(dds_topic_name(topic), data_type,
                                                    topic_qos(topic))
        except BaseException:
            self._participant.release()
            raise

    def publish(self, data: bytes) -> None:
        """Send one message (CDR bytes, encapsulation header included)."""
        data = payload_bytes(data)
        with self._lock:
            if self._closed:
                raise RuntimeError(f"publish on a closed {self.topic.name} publisher")
            self._writer.write(data)
            self.sent_messages += 1

    def matched_subscriptions(self) -> int:
        """How many DDS readers of this topic the writer has found."""
        return self._writer.matched_subscriptions()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._writer.close()
        self._participant.release()

    def __enter__(self) -> Ros2TopicPublisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Ros2TopicSubscriber:
    """Calls ``on_message(data)`` (CDR bytes) for every sample of one ROS 2 topic, on the
    participant's receive thread."""

    def __init__(self, address: str, topic: TopicSpec, on_message: Callable[[bytes], None],
                 keys: Any = None):
        if not callable(on_message):
            raise TypeError("a topic subscriber needs on_message=callable(data)")
        data_type = _data_type(topic)
        self.topic = topic
        self.received_messages = 0
        self.dropped = DropCounter(f"tf2py ros2 {topic.name} subscriber")
        self._on_message = on_message
        self._closed = False
        self._participant = _acquire(address, keys)
        try:
            self._subscription = self._participant.subscribe(
                dds_topic_name(topic), data_type, topic_qos(topic), self._on_sample)
        except BaseException:
            self._participant.release()
            raise

    def _on_sample(self, data: bytes, info: SampleInfo) -> None:
        if self._closed:
            return
        try:
            self._on_message(data)
        except Exception as exc:  # a long-running subscriber never dies
            self.dropped.drop("error", f"{type(exc).__name__}: {exc}")
        finally:
            self.received_messages += 1

    def matched_publishers(self) -> int:
        """How many DDS writers of this topic the reader has found."""
        return self._subscription.matched_publications()

    def stats(self) -> dict[str, Any]:
        return {"received_messages": self.received_messages,
                "dropped": self.dropped.snapshot()}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._subscription.close()
        self._participant.release()

    def __enter__(self) -> Ros2TopicSubscriber:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
