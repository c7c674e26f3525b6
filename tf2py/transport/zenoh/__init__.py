"""Zenoh (the ``zenoh`` extra): ``zenoh://`` addresses, on rmw_zenoh's wire.

tf2py speaks on a Zenoh network exactly as a ROS 2 node running ``rmw_zenoh_cpp`` does for
``/tf``, ``/tf_static`` and ``/clock`` (see docs/protocol.md, "Zenoh"), so ROS 2 robots on
rmw_zenoh and tf2py processes hear each other. The rooms:

- ``address``: parsing ``zenoh://[LOCATOR][?namespace=&domain=&mode=&config=]`` (pure).
- ``session``: the Zenoh configuration of an address and the shared session per process.
- ``tls``: keys on Zenoh (mutual TLS certificates in a keys folder).
- ``wire``: key expressions, attachments, liveliness tokens (public: the fleet uses them).
- ``endpoint``: rmw_zenoh's publishers and subscriptions; ``tf``, ``clock``: what the public
  classes build; ``bridge_side``: this bus in ``tf2py bridge``; ``router``: a Zenoh router.

Importing this package needs nothing; using a session needs ``eclipse-zenoh``, else a
one-line ``ImportError`` that names the extra.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..interface import (
    ClockReceiver,
    ClockSender,
    TopicReceiver,
    TopicSender,
    TransformReceiver,
    TransformSender,
    Transport,
)
from .address import ZenohAddress, is_zenoh_address, parse_zenoh_address

if TYPE_CHECKING:
    from ..listener import TransformBatch
    from ..topics import TopicSpec

__all__ = ["ZenohAddress", "is_zenoh_address", "parse_zenoh_address", "ZenohTransport",
           "transport"]


class ZenohTransport(Transport):
    """``zenoh://`` buses: /tf, /tf_static and /clock as rmw_zenoh carries them."""

    schemes = ("zenoh",)
    extra = "zenoh"
    transient_local_topics = True
    bus_kind = "the Zenoh network"

    def no_data_hint(self, address: str, broadcasting: bool = True, probe: bool = False) -> str:
        anything = (", and is anything publishing /tf with the same namespace= and domain="
                    if broadcasting else "")
        return (f"is a Zenoh router or peer reachable there, such as `tf2py router`, with a "
                f"tls/ locator and the same keys if it has keys{anything}?")

    def check_address(self, address: str) -> str:
        parse_zenoh_address(address)
        return address.strip()

    def transform_broadcaster(self, address: str, authority: str | None,
                              keys: Any = None) -> TransformSender:
        from .tf import ZenohTransformBroadcaster

        return ZenohTransformBroadcaster(address, authority, keys)

    def static_transform_broadcaster(self, address: str, authority: str | None,
                                     keys: Any = None) -> TransformSender:
        from .tf import ZenohStaticTransformBroadcaster

        return ZenohStaticTransformBroadcaster(address, authority, keys)

    def transform_subscriber(self, address: str, on_batch: Callable[[TransformBatch], None],
                             keys: Any = None) -> TransformReceiver:
        from .tf import ZenohTransformSubscriber

        return ZenohTransformSubscriber(address, on_batch, keys)

    def transform_listener(self, buffer: Any, address: str,
                           keys: Any = None) -> TransformReceiver:
        from .tf import ZenohTransformListener

        return ZenohTransformListener(buffer, address, keys)

    def bridge_side(self, address: str, authority: str, keys: Any = None) -> Any:
        from .bridge_side import ZenohBridgeSide

        return ZenohBridgeSide(self, address, authority, keys)

    def topic_publisher(self, address: str, topic: TopicSpec,
                        keys: Any = None) -> TopicSender:
        from .typed_topic import ZenohTopicPublisher

        return ZenohTopicPublisher(address, topic, keys)

    def topic_subscriber(self, address: str, topic: TopicSpec,
                         on_message: Callable[[bytes], None],
                         keys: Any = None) -> TopicReceiver:
        from .typed_topic import ZenohTopicSubscriber

        return ZenohTopicSubscriber(address, topic, on_message, keys)

    def clock_publisher(self, address: str, keys: Any = None) -> ClockSender:
        from .clock import ZenohClockPublisher

        return ZenohClockPublisher(address, keys)

    def sim_clock(self, address: str, keys: Any = None) -> ClockReceiver:
        from .clock import ZenohSimClock

        return ZenohSimClock(address, keys)


transport = ZenohTransport()
