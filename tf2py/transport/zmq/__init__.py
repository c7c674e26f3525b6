"""tf2py's own bus over ZeroMQ: ``tcp://HOST:PORT`` addresses.

A core (``core.Core``, what ``tf2py core`` runs) forwards between publishers and subscribers
and latches the statics per publisher; the broadcasters, listener, subscriber and clocks here
are what the public classes of ``tf2py.transport`` build for a ``tcp://`` address. The wire
format is ``tf2py.transport.wire`` (shared with the buffer server); docs/protocol.md says
what travels. Keys (``keys=``) are ZeroMQ CURVE keys from ``tf2py keygen``.
"""

from __future__ import annotations

from .address import bus_endpoints
from ..bus_classes import BusClasses

__all__ = ["ZmqTransport", "transport"]


class ZmqTransport(BusClasses):
    """The ZeroMQ bus: a core at ``tcp://HOST:PORT`` (publishers) and ``PORT + 1``
    (subscribers)."""

    schemes = ("tcp",)
    extra = ""
    bus_kind = "the core"

    def check_address(self, address: str) -> str:
        bus_endpoints(address)
        return address

    def no_data_hint(self, address: str, broadcasting: bool = True, probe: bool = False) -> str:
        # With ``probe``, one handshake with the core tells a silent refusal (keys) apart.
        import os

        if probe:
            from .handshake import handshake_refusal

            refusal = handshake_refusal(address)
            if refusal:
                return refusal
        keys = " with the same keys" if os.environ.get("TF2PY_KEYS") else ""
        if not broadcasting:
            return f"is `tf2py core` running there{keys}?"
        return f"is `tf2py core` running there{keys}, and is anything broadcasting?"

    classes = {
        "transform_broadcaster": "broadcaster:ZmqTransformBroadcaster",
        "static_transform_broadcaster": "broadcaster:ZmqStaticTransformBroadcaster",
        "transform_subscriber": "listener:ZmqTransformSubscriber",
        "transform_listener": "listener:ZmqTransformListener",
        "topic_publisher": "typed_topic:ZmqTopicPublisher",
        "topic_subscriber": "typed_topic:ZmqTopicSubscriber",
        "clock_publisher": "clock:ZmqClockPublisher",
        "sim_clock": "clock:ZmqSimClock",
    }


transport = ZmqTransport()
