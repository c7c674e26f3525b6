"""ROS 2 over DDS (the ``ros2`` extra): ``ros2://`` and ``ros2://DOMAIN_ID`` addresses.

tf2py joins a live ROS 2 graph as a node, with no ROS installed: ``/tf`` and ``/tf_static`` as
tf2_ros sends them (``tf``), ``/clock`` (``clock_subscription``), discovery from ROS 2's own
variables (``discovery``). Importing this package needs nothing; using it needs Cyclone DDS's
Python binding (``pip install 'tf2py[ros2]'``), else a one-line ``ImportError`` that says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..bus_classes import BusClasses
from ..lifetime import ClosingContext
from .discovery import is_ros2_address, parse_ros2_address

if TYPE_CHECKING:
    from .participant import Participant

__all__ = [
    "is_ros2_address",
    "parse_ros2_address",
    "clock_subscription",
    "ClockSubscription",
    "Ros2Transport",
    "transport",
]


class ClockSubscription(ClosingContext):
    """Follows ROS 2's ``/clock`` (rosgraph_msgs/Clock) at ``address``: ``callback(stamp_ns)``
    on the receive thread for every tick. ``close()``; context manager."""

    def __init__(self, address: str, callback: Callable[[int], None]):
        from .participant import Participant

        self._participant: Participant | None = Participant.acquire(address)
        try:
            self._subscription = self._participant.subscribe_clock(callback)
        except BaseException:
            self._participant.release()
            raise

    def close(self) -> None:
        if self._participant is not None:
            self._subscription.close()
            self._participant.release()
            self._participant = None


def clock_subscription(address: str, callback: Callable[[int], None]) -> ClockSubscription:
    """Call ``callback(stamp_ns: int)`` for every ``/clock`` tick on the ROS 2 graph at
    ``address`` (``ros2://`` or ``ros2://DOMAIN_ID``); returns the subscription (``close()``)."""
    return ClockSubscription(address, callback)


class Ros2Transport(BusClasses):
    """ROS 2's /tf, /tf_static and /clock over DDS (Cyclone DDS's Python binding)."""

    schemes = ("ros2",)
    transient_local_topics = True
    bus_kind = "the ROS 2 graph"
    echoes_own_statics = False

    def refuse_keys(self, keys: Any, flag: str = "keys=") -> None:
        # Keys protect tf2py's buses and Zenoh; ROS 2 traffic is plain DDS (SROS 2 is not
        # supported), so asking for keys here is a mistake worth refusing.
        if keys is not None:
            raise ValueError(f"{flag} applies to tf2py buses (tcp://, zenoh://), not to ROS 2 "
                             "(ros2://), whose traffic is plain DDS")

    def same_bus(self, a: str, b: str) -> bool:
        return bool(parse_ros2_address(a) == parse_ros2_address(b))

    def no_data_hint(self, address: str, broadcasting: bool = True, probe: bool = False) -> str:
        return ("is a ROS 2 node publishing /tf on that domain? Check ROS_DOMAIN_ID, "
                "ROS_LOCALHOST_ONLY / ROS_AUTOMATIC_DISCOVERY_RANGE and ROS_STATIC_PEERS on "
                "both sides, and that multicast discovery reaches this host")

    def check_address(self, address: str) -> str:
        parse_ros2_address(address)
        return address

    classes = {
        "transform_broadcaster": "tf:Ros2TransformBroadcaster",
        "static_transform_broadcaster": "tf:Ros2StaticTransformBroadcaster",
        "transform_subscriber": "tf:Ros2TransformSubscriber",
        "transform_listener": "tf:Ros2TransformListener",
        "bridge_side": "bridge_side:Ros2BridgeSide",
        "topic_publisher": "typed_topic:Ros2TopicPublisher",
        "topic_subscriber": "typed_topic:Ros2TopicSubscriber",
        "clock_publisher": "clock:Ros2ClockPublisher",
        "sim_clock": "clock:Ros2SimClock",
    }


transport = Ros2Transport()
