"""The typed topics under the robot publishers (tf2py.transport.topics) on a real core: bad
topic descriptions, a bus without topics, an oversized message, a callback that raises, and
what ros2:// refuses; each one clear error, nothing stopped."""

from __future__ import annotations

import pytest

from helpers import wait_for
from tf2py import Core
from tf2py.robot.joint_state import JOINT_STATES, ROBOT_DESCRIPTION, encode_joint_state
from tf2py.transport import wire
from tf2py.transport.interface import Transport
from tf2py.transport.topics import TopicSpec, publish_topic, subscribe_topic

HASH = JOINT_STATES.type_hash


@pytest.mark.parametrize("fields,match", [
    (("joint states", "sensor_msgs/msg/JointState", HASH), "topic name"),
    (("/j", "sensor_msgs/JointState", HASH), "pkg/msg/Name"),
    (("/j", "sensor_msgs/msg/JointState", "RIHS01_abc"), "RIHS01"),
    (("/j", "sensor_msgs/msg/JointState", HASH.upper()), "RIHS01"),
    (("/j", "sensor_msgs/msg/JointState", HASH, True, False, 0), "depth"),
])
def test_malformed_topic_descriptions_are_one_line_errors(fields, match):
    with pytest.raises(ValueError, match=match):
        TopicSpec(*fields)


def test_a_bus_without_typed_topics_says_so():
    class Plain(Transport):
        schemes = ("plain",)

        def check_address(self, address):
            return address

        transform_broadcaster = static_transform_broadcaster = transform_subscriber = \
            clock_publisher = sim_clock = lambda self, *a, **k: None

    with pytest.raises(NotImplementedError, match="plain carries no topic /joint_states"):
        Plain().topic_publisher("plain://x", JOINT_STATES)


def test_tcp_refuses_what_its_core_would_drop_and_counts_a_raising_callback():
    with Core("tcp://127.0.0.1:0") as core:
        calls = []

        def boom(data: bytes) -> None:
            calls.append(data)
            raise RuntimeError("callback failed")

        with subscribe_topic(JOINT_STATES, boom, core.address) as sub, \
                publish_topic(JOINT_STATES, core.address) as pub:
            with pytest.raises(ValueError, match="exceeds the tcp:// bus"):
                pub.publish(bytes(wire.MAX_PIECE_BYTES + 1))
            with pytest.raises(TypeError):
                pub.publish("text")  # type: ignore[arg-type]

            def raised_twice():
                pub.publish(encode_joint_state(["a"], [1.0]))
                return len(calls) >= 2
            wait_for(raised_twice, timeout=10, interval=0.02)
            assert sub.stats()["dropped"]["error"] >= 2  # it went on after the first
        with pytest.raises(RuntimeError, match="closed"):
            pub.publish(b"")
        sub.close()  # idempotent


def test_ros2_refuses_keys_and_unknown_types():
    pytest.importorskip("cyclonedds")
    with pytest.raises(ValueError, match="keys= applies to tf2py buses"):
        publish_topic(ROBOT_DESCRIPTION, "ros2://77", keys="/nonexistent")
    other = TopicSpec("/odom", "nav_msgs/msg/Odometry", HASH)
    with pytest.raises(ValueError, match="ros2:// carries no nav_msgs/msg/Odometry"):
        publish_topic(other, "ros2://77")
