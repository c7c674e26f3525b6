"""Typed topics beside /tf: one ROS 2 message type on one topic name, on any bus.

A ``TopicSpec`` says what ROS 2 says of a topic: its name (relative to the bus's namespace,
e.g. ``/joint_states``), its message type (``sensor_msgs/msg/JointState``) and REP-2011 type
hash, and the QoS of one side (reliability, durability, depth). ``Transport.topic_publisher``
and ``Transport.topic_subscriber`` build the two ends on a bus; the payload is the message's
CDR (XCDR1, encapsulation header included) on every bus, so one codec serves them all:

- ``ros2://``: DDS topic ``rt<name>`` of type ``pkg::msg::dds_::Name_``, the QoS given, and
  the type hash in the endpoint's USER_DATA (``typehash=RIHS01_...;``, as rmw does);
- ``zenoh://``: rmw_zenoh's key expression, attachment and liveliness token for the type;
  transient-local through the advanced publisher's cache;
- ``tcp://``: the core forwards the topic as it forwards /clock (see docs/protocol.md);
  transient-local is not kept there (``Transport.transient_local_topics`` says which buses
  keep it).

``publish_topic`` and ``subscribe_topic`` are the public entry points: they resolve the
address and ask its bus.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .counters import DropCounter
from .interface import TopicReceiver, TopicSender, transport_for

__all__ = ["TopicSpec", "Delivery", "SendGate", "dds_type_name", "payload_bytes", "publish_topic",
           "subscribe_topic", "transient_local_topics"]

_ROS_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*/(msg|srv|action)/[A-Z][A-Za-z0-9]*$")
_TOPIC_NAME = re.compile(r"^/?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$")
_RIHS01 = re.compile(r"^RIHS01_[0-9a-f]{64}$")


@dataclass(frozen=True)
class TopicSpec:
    """One side of a ROS 2 topic: ``name`` (``/joint_states``, resolved in the bus's
    namespace), ``type_name`` (``pkg/msg/Name``), ``type_hash`` (``RIHS01_<64 hex>``) and
    QoS: ``reliable`` (else best effort), ``transient_local`` (else volatile), ``depth``
    (keep last). ValueError, one line, for a malformed field."""

    name: str
    type_name: str
    type_hash: str
    reliable: bool = True
    transient_local: bool = False
    depth: int = 10

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _TOPIC_NAME.match(self.name):
            raise ValueError(f"topic name {self.name!r} is not a ROS 2 topic name")
        if not isinstance(self.type_name, str) or not _ROS_TYPE.match(self.type_name):
            raise ValueError(f"message type {self.type_name!r} is not pkg/msg/Name")
        if not isinstance(self.type_hash, str) or not _RIHS01.match(self.type_hash):
            raise ValueError(f"type hash {self.type_hash!r} is not RIHS01_<64 hex digits>")
        if not isinstance(self.depth, int) or not 1 <= self.depth <= 10_000:
            raise ValueError(f"a topic's depth is 1..10000, got {self.depth!r}")

    @property
    def relative_name(self) -> str:
        """The name without its leading slash (``joint_states``)."""
        return self.name.lstrip("/")

    @property
    def dds_type_name(self) -> str:
        """The DDS name of the type, as ROS 2 names it (``sensor_msgs::msg::dds_::JointState_``)."""
        return dds_type_name(self.type_name)

    def with_qos(self, *, reliable: bool | None = None, transient_local: bool | None = None,
                 depth: int | None = None) -> TopicSpec:
        """The same topic with other QoS (the other side of it, e.g. a best-effort reader)."""
        return replace(self, reliable=self.reliable if reliable is None else reliable,
                       transient_local=(self.transient_local if transient_local is None
                                        else transient_local),
                       depth=self.depth if depth is None else depth)


def dds_type_name(type_name: str) -> str:
    """``pkg/msg/Name`` -> ``pkg::msg::dds_::Name_`` (the name DDS and rmw_zenoh use)."""
    package, kind, name = type_name.split("/")
    return f"{package}::{kind}::dds_::{name}_"


def payload_bytes(data: object) -> bytes:
    """``data`` as the bytes a topic publisher sends; TypeError for anything but bytes."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"publish takes bytes, got {type(data).__name__}")
    return bytes(data)


class SendGate:
    """What every bus's topic publisher guards its send with: bytes only, one send at a
    time, none once closed (RuntimeError), and the count of messages the bus took."""

    def __init__(self, topic: TopicSpec):
        self.topic = topic
        self.sent_messages = 0
        self._lock = threading.Lock()
        self._closed = False

    def send(self, put: Callable[[bytes], bool | None], data: object) -> None:
        """``put(payload)`` under the lock; a ``put`` that returns False did not send it."""
        payload = payload_bytes(data)
        with self._lock:
            if self._closed:
                raise RuntimeError(f"publish on a closed {self.topic.name} publisher")
            if put(payload) is not False:
                self.sent_messages += 1

    def close(self) -> bool:
        """Close the gate; True the first time only (the caller then releases the bus's
        side)."""
        with self._lock:
            first = not self._closed
            self._closed = True
            return first


class Delivery:
    """Hands each payload of one topic to a subscriber's ``on_message`` (every bus's
    subscriber has one), counting what it received and, by cause, what it dropped: the bus's
    own causes through ``dropped``, and ``error`` for an ``on_message`` that raises (a
    long-running subscriber never dies of its callback)."""

    def __init__(self, on_message: Callable[[bytes], None], who: str):
        if not callable(on_message):
            raise TypeError("a topic subscriber needs on_message=callable(data)")
        self.on_message = on_message
        self.dropped = DropCounter(who)
        self.received_messages = 0

    def __call__(self, data: bytes) -> None:
        try:
            self.on_message(data)
        except Exception as exc:
            self.dropped.drop("error", f"{type(exc).__name__}: {exc}")
        finally:
            self.received_messages += 1

    def stats(self) -> dict[str, Any]:
        return {"received_messages": self.received_messages,
                "dropped": self.dropped.snapshot()}


def publish_topic(topic: TopicSpec, core: Any = None, keys: Any = None) -> TopicSender:
    """A publisher of ``topic`` on the bus at ``core`` (None: ``$TF2PY_CORE``, else the
    default): ``publish(cdr_bytes)``, ``sent_messages``, ``close()``."""
    transport, address = transport_for(core)
    return transport.topic_publisher(address, topic, keys)


def subscribe_topic(topic: TopicSpec, on_message: Callable[[bytes], None], core: Any = None,
                    keys: Any = None) -> TopicReceiver:
    """Call ``on_message(cdr_bytes)`` for every message on ``topic`` at ``core``, on the bus's
    receive thread: ``stats()``, ``close()``."""
    transport, address = transport_for(core)
    return transport.topic_subscriber(address, topic, on_message, keys)


def transient_local_topics(core: Any = None) -> bool:
    """Whether the bus at ``core`` keeps transient-local topics for late joiners."""
    transport, _ = transport_for(core)
    return transport.transient_local_topics
