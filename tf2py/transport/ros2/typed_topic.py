"""Typed topics (``topics.TopicSpec``) on a ROS 2 graph: a raw writer or reader on DDS topic
``rt<name>`` of the type's DDS name, with the spec's QoS and, as rmw puts it in every
endpoint's USER_DATA, ``typehash=RIHS01_...;`` (what ``ros2 topic info -v`` and rclpy's
``get_publishers_info_by_topic`` report as the endpoint's type hash).

Payloads are CDR bytes both ways; transient-local topics are kept by DDS for late joiners
while the writer lives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..address import core_address
from ..lifetime import ClosingContext
from ..topics import Delivery, SendGate
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
    from . import transport

    transport.refuse_keys(keys)
    return Participant.acquire(core_address(address))


class Ros2TopicPublisher(ClosingContext):
    """Writes CDR payloads on one ROS 2 topic. Never blocks on the network."""

    def __init__(self, address: str, topic: TopicSpec, keys: Any = None):
        data_type = _data_type(topic)
        self.topic = topic
        self._gate = SendGate(topic)
        self._participant = _acquire(address, keys)
        try:
            self._writer = self._participant.writer(dds_topic_name(topic), data_type,
                                                    topic_qos(topic))
        except BaseException:
            self._participant.release()
            raise

    @property
    def sent_messages(self) -> int:
        return self._gate.sent_messages

    def publish(self, data: bytes) -> None:
        """Send one message (CDR bytes, encapsulation header included)."""
        self._gate.send(self._writer.write, data)

    def matched_subscriptions(self) -> int:
        """How many DDS readers of this topic the writer has found."""
        return self._writer.matched_subscriptions()

    def close(self) -> None:
        if self._gate.close():
            self._writer.close()
            self._participant.release()


class Ros2TopicSubscriber(ClosingContext):
    """Calls ``on_message(data)`` (CDR bytes) for every sample of one ROS 2 topic, on the
    participant's receive thread."""

    def __init__(self, address: str, topic: TopicSpec, on_message: Callable[[bytes], None],
                 keys: Any = None):
        self._delivery = Delivery(on_message, f"tf2py ros2 {topic.name} subscriber")
        data_type = _data_type(topic)
        self.topic = topic
        self._closed = False
        self._participant = _acquire(address, keys)
        try:
            self._subscription = self._participant.subscribe(
                dds_topic_name(topic), data_type, topic_qos(topic), self._on_sample)
        except BaseException:
            self._participant.release()
            raise

    def _on_sample(self, data: bytes, info: SampleInfo) -> None:
        if not self._closed:
            self._delivery(data)

    def matched_publishers(self) -> int:
        """How many DDS writers of this topic the reader has found."""
        return self._subscription.matched_publications()

    def stats(self) -> dict[str, Any]:
        return self._delivery.stats()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._subscription.close()
        self._participant.release()
