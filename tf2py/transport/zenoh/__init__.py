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

from ..bus_classes import BusClasses
from .address import ZenohAddress, is_zenoh_address, parse_zenoh_address

__all__ = ["ZenohAddress", "is_zenoh_address", "parse_zenoh_address", "ZenohTransport",
           "transport"]


class ZenohTransport(BusClasses):
    """``zenoh://`` buses: /tf, /tf_static and /clock as rmw_zenoh carries them."""

    schemes = ("zenoh",)
    transient_local_topics = True
    bus_kind = "the Zenoh network"
    hosts_fleet = True

    def no_data_hint(self, address: str, broadcasting: bool = True, probe: bool = False) -> str:
        anything = (", and is anything publishing /tf with the same namespace= and domain="
                    if broadcasting else "")
        return (f"is a Zenoh router or peer reachable there, such as `tf2py router`, with a "
                f"tls/ locator and the same keys if it has keys{anything}?")

    def check_address(self, address: str) -> str:
        parse_zenoh_address(address)
        return address.strip()

    classes = {
        "transform_broadcaster": "tf:ZenohTransformBroadcaster",
        "static_transform_broadcaster": "tf:ZenohStaticTransformBroadcaster",
        "transform_subscriber": "tf:ZenohTransformSubscriber",
        "transform_listener": "tf:ZenohTransformListener",
        "bridge_side": "bridge_side:ZenohBridgeSide",
        "topic_publisher": "typed_topic:ZenohTopicPublisher",
        "topic_subscriber": "typed_topic:ZenohTopicSubscriber",
        "clock_publisher": "clock:ZenohClockPublisher",
        "sim_clock": "clock:ZenohSimClock",
    }


transport = ZenohTransport()
