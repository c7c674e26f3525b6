"""ROS 2 over DDS (the ``ros2`` extra): ``ros2://`` and ``ros2://DOMAIN_ID`` addresses.

tf2py joins a live ROS 2 graph as a node, with no ROS installed: ``/tf`` and ``/tf_static`` as
tf2_ros sends them (``tf``), ``/clock`` (``clock_subscription``), discovery from ROS 2's own
variables (``discovery``). Importing this package needs nothing; using it needs Cyclone DDS's
Python binding (``pip install 'tf2py[ros2]'``), else a one-line ``ImportError`` that says so.
"""

from __future__ import annotations

from .discovery import is_ros2_address, parse_ros2_address

__all__ = [
    "is_ros2_address",
    "parse_ros2_address",
    "clock_subscription",
    "ClockSubscription",
    "transport_class",
]


class ClockSubscription:
    """Follows ROS 2's ``/clock`` (rosgraph_msgs/Clock) at ``address``: ``callback(stamp_ns)``
    on the receive thread for every tick. ``close()``; context manager."""

    def __init__(self, address: str, callback):
        from .participant import Participant

        self._participant = Participant.acquire(address)
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def clock_subscription(address: str, callback) -> ClockSubscription:
    """Call ``callback(stamp_ns: int)`` for every ``/clock`` tick on the ROS 2 graph at
    ``address`` (``ros2://`` or ``ros2://DOMAIN_ID``); returns the subscription (``close()``)."""
    return ClockSubscription(address, callback)


def transport_class(name: str):
    """The ROS 2 class standing in for tf2py.transport's ``name`` (e.g. "TransformListener")."""
    if name in ("SimClock", "ClockPublisher"):
        from . import clock

        return getattr(clock, "Ros2" + name)
    from . import tf

    return getattr(tf, "Ros2" + name)
