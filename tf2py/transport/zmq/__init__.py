"""tf2py's own bus over ZeroMQ: ``tcp://HOST:PORT`` addresses.

A core (``core.Core``, what ``tf2py core`` runs) forwards between publishers and subscribers
and latches the statics per publisher; the broadcasters, listener, subscriber and clocks here
are what the public classes of ``tf2py.transport`` build for a ``tcp://`` address. The wire
format is ``tf2py.transport.wire`` (shared with the buffer server); docs/protocol.md says
what travels. Keys (``keys=``) are ZeroMQ CURVE keys from ``tf2py keygen``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..address import bus_endpoints
from ..interface import (
    ClockReceiver,
    ClockSender,
    TopicReceiver,
    TopicSender,
    TransformReceiver,
    TransformSender,
    Transport,
)

if TYPE_CHECKING:
    from ..listener import TransformBatch
    from ..topics import TopicSpec

__all__ = ["ZmqTransport", "transport"]


class ZmqTransport(Transport):
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

    def transform_broadcaster(self, address: str, authority: str | None,
                              keys: Any = None) -> TransformSender:
        from .broadcaster import ZmqTransformBroadcaster

        return ZmqTransformBroadcaster(address, authority, keys)

    def static_transform_broadcaster(self, address: str, authority: str | None,
                                     keys: Any = None) -> TransformSender:
        from .broadcaster import ZmqStaticTransformBroadcaster

        return ZmqStaticTransformBroadcaster(address, authority, keys)

    def transform_subscriber(self, address: str, on_batch: Callable[[TransformBatch], None],
                             keys: Any = None) -> TransformReceiver:
        from .listener import ZmqTransformSubscriber

        return ZmqTransformSubscriber(address, on_batch, keys)

    def transform_listener(self, buffer: Any, address: str,
                           keys: Any = None) -> TransformReceiver:
        from .listener import ZmqTransformListener

        return ZmqTransformListener(buffer, address, keys)

    def topic_publisher(self, address: str, topic: TopicSpec,
                        keys: Any = None) -> TopicSender:
        from .typed_topic import ZmqTopicPublisher

        return ZmqTopicPublisher(address, topic, keys)

    def topic_subscriber(self, address: str, topic: TopicSpec,
                         on_message: Callable[[bytes], None],
                         keys: Any = None) -> TopicReceiver:
        from .typed_topic import ZmqTopicSubscriber

        return ZmqTopicSubscriber(address, topic, on_message, keys)

    def clock_publisher(self, address: str, keys: Any = None) -> ClockSender:
        from .clock import ZmqClockPublisher

        return ZmqClockPublisher(address, keys)

    def sim_clock(self, address: str, keys: Any = None) -> ClockReceiver:
        from .clock import ZmqSimClock

        return ZmqSimClock(address, keys)


transport = ZmqTransport()
