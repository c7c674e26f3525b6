"""ROS 2's /clock, for SimClock(core="ros2://"): tf2py.transport.ros2.clock_subscription."""

from __future__ import annotations

import threading

from conftest import DISCOVERY_TIMEOUT
from helpers import wait_for
from tf2py.transport.ros2 import clock_subscription


def test_clock_subscription_follows_an_rclpy_clock_publisher(rclpy_peer):
    ticks = []
    lock = threading.Lock()

    def on_tick(stamp_ns):
        with lock:
            ticks.append(stamp_ns)

    with clock_subscription("ros2://", on_tick) as subscription:
        rclpy_peer("clock")
        wait_for(lambda: len(ticks) >= 5, DISCOVERY_TIMEOUT, message="5 /clock ticks")
        subscription.close()  # idempotent with the context manager's
        with lock:
            seen = list(ticks)
    assert all(t % 1_000_000_000 == 7 and t // 1_000_000_000 >= 500 for t in seen)
    assert seen == sorted(seen)
