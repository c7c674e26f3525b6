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


def test_ros2_sim_clock_follows_ros2_clock_and_reports_jumps_back(rclpy_peer):
    import tf2py
    from tf2py.transport.ros2.clock import Ros2SimClock

    jumps = []
    with tf2py.SimClock(core="ros2://") as clock:  # the address picks ROS 2's /clock
        assert isinstance(clock, Ros2SimClock)
        assert clock.now().nanoseconds == 0  # zero until the first tick
        clock.add_jump_callback(jumps.append)
        rclpy_peer("clock", 10)  # 500 .. 509 s, then 500 s again
        assert clock.wait_for_time(DISCOVERY_TIMEOUT)
        assert clock.now().nanoseconds % 1_000_000_000 == 7
        wait_for(lambda: jumps, DISCOVERY_TIMEOUT, message="a jump back of /clock")
    jump = jumps[0]
    assert jump.current.nanoseconds == 500_000_000_007
    # 509 s unless that best-effort tick was lost on the way.
    assert 500_000_000_007 < jump.previous.nanoseconds <= 509_000_000_007
    assert jump.delta.nanoseconds == jump.current.nanoseconds - jump.previous.nanoseconds
    assert clock.stats()["jumps"] >= 1 and clock.stats()["dropped"] == {}


def test_ros2_sim_clock_wait_for_time_times_out_without_a_clock(ros_domain):
    from tf2py.transport.ros2.clock import Ros2SimClock

    with Ros2SimClock("ros2://") as clock:
        assert clock.wait_for_time(0.3) is False
