"""Simulated time on any bus: ``/clock`` (what ``tf2py play --clock`` publishes).

``ClockPublisher`` sends the current simulated time; ``SimClock`` follows it, as a ROS node
with ``use_sim_time`` follows ROS 2's ``/clock``: ``now()`` is the latest time received
(zero until the first tick), and ``add_jump_callback(fn)`` registers ``fn(jump)``, called
whenever the time goes backwards (a bag that loops), which is what a ``Buffer(clock=...)``
uses to forget its dynamic data, as tf2_ros's Buffer does. The address's scheme picks the bus.
"""

from __future__ import annotations

from abc import ABCMeta
from typing import Any, NamedTuple

from ..buffer.time import Duration, Time
from .interface import transport_for

__all__ = ["SimClock", "ClockPublisher", "TimeJump"]


class TimeJump(NamedTuple):
    """A backward jump of a ``SimClock``: ``previous`` and ``current`` times, and ``delta``
    (``current - previous``, negative), as rclpy's TimeJump reports it."""

    previous: Time
    current: Time

    @property
    def delta(self) -> Duration:
        return self.current - self.previous


class ClockPublisher(metaclass=ABCMeta):
    """Publishes simulated time on the bus's ``/clock`` stream (``ros2://``: ROS 2's /clock,
    rosgraph_msgs/Clock). ``publish(time)`` (a Time or seconds), ``publish_ns(ns)``,
    ``close()``; a context manager; ``keys`` as for the broadcasters. Never blocks."""

    def __new__(cls, core: Any = None, keys: Any = None) -> Any:
        transport, address = transport_for(core)
        return transport.clock_publisher(address, keys)


class SimClock(metaclass=ABCMeta):
    """Follows the ``/clock`` stream of the bus at ``core`` (default ``$TF2PY_CORE``, else
    the loopback default; ``ros2://...`` means ROS 2's own /clock).

    ``now()`` -> the latest simulated ``Time`` received (``Time()`` until the first tick);
    ``wait_for_time(timeout)``; ``add_jump_callback(fn)``: ``fn(jump)`` (a ``TimeJump``) is
    called each time the time goes backwards; ``remove_jump_callback(fn)``. Malformed /clock
    messages are dropped and counted (``stats()``), logged once per cause. ``close()``; a
    context manager.
    """

    def __new__(cls, core: Any = None, keys: Any = None) -> Any:
        transport, address = transport_for(core)
        return transport.sim_clock(address, keys)
