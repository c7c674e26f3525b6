"""Typed topics (``topics.TopicSpec``) on Zenoh, as rmw_zenoh carries any ROS 2 topic: data on
``<domain>/<namespace>/<name>/<DDS type name>/<type hash>``, CDR payloads with rmw_zenoh's
attachment, a liveliness token per publisher and subscription (its QoS in it), and a
transient-local topic kept for late joiners by the advanced publisher's cache while the
publisher lives. The topic's name is resolved in the address's namespace (``/joint_states``
at ``?namespace=/robot7`` is ``/robot7/joint_states``), as ROS 2 resolves a relative name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..lifetime import ClosingContext
from ..topics import Delivery, SendGate
from . import wire
from .address import ZenohAddress, parse_zenoh_address
from .endpoint import Publisher, Subscription, Topic

if TYPE_CHECKING:
    from ..topics import TopicSpec

__all__ = ["zenoh_topic", "ZenohTopicPublisher", "ZenohTopicSubscriber"]


def zenoh_topic(address: ZenohAddress, topic: TopicSpec) -> Topic:
    """rmw_zenoh's view of ``topic`` in the address's namespace and domain (one side's QoS:
    the spec's depth serves as the publisher's and the subscription's)."""
    name = wire.topic_name(address.namespace, topic.relative_name)
    return Topic(name, wire.data_keyexpr(address.domain, name, topic.dds_type_name,
                                         topic.type_hash),
                 topic.dds_type_name, topic.type_hash, reliable=topic.reliable,
                 transient_local=topic.transient_local, publisher_depth=topic.depth,
                 subscription_depth=topic.depth)


class ZenohTopicPublisher(ClosingContext):
    """Publishes CDR payloads on one topic with rmw_zenoh's attachment. Never blocks."""

    def __init__(self, address: str, topic: TopicSpec, keys: Any = None):
        self.topic = topic
        self._gate = SendGate(topic)
        parsed = parse_zenoh_address(address)
        self._publisher = Publisher(parsed, zenoh_topic(parsed, topic), keys)

    @property
    def gid(self) -> bytes:
        """The publisher's rmw_zenoh GID (in its attachments)."""
        return self._publisher.gid

    @property
    def sent_messages(self) -> int:
        return self._gate.sent_messages

    def publish(self, data: bytes) -> None:
        """Send one message (CDR bytes, encapsulation header included)."""
        self._gate.send(self._publisher.put, data)

    def close(self) -> None:
        if self._gate.close():
            self._publisher.close()


class ZenohTopicSubscriber(ClosingContext):
    """Calls ``on_message(data)`` (CDR bytes) for every sample of one topic, one call at a
    time. Samples without rmw_zenoh's attachment are dropped and counted (``attachment``),
    as rmw_zenoh drops them; an ``on_message`` that raises is counted (``error``)."""

    def __init__(self, address: str, topic: TopicSpec, on_message: Callable[[bytes], None],
                 keys: Any = None):
        self._delivery = Delivery(on_message, f"tf2py zenoh {topic.name} subscriber")
        self.topic = topic
        self._lock = threading.Lock()  # one message at a time, whichever thread brings it
        self._closed = False
        parsed = parse_zenoh_address(address)
        self._subscription = Subscription(parsed, zenoh_topic(parsed, topic), self._on_sample,
                                          keys)

    def _on_sample(self, sample: Any) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                wire.decode_attachment(
                    None if sample.attachment is None else sample.attachment.to_bytes())
            except wire.WireError as exc:
                self._delivery.dropped.drop(exc.cause, f"{sample.key_expr}: {exc}")
                return
            self._delivery(sample.payload.to_bytes())

    def stats(self) -> dict[str, Any]:
        return self._delivery.stats()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._subscription.close()
