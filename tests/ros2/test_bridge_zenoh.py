"""A DDS robot joins a Zenoh fleet: ``tf2py bridge ros2:// zenoh://...`` between real rclpy
nodes and a tf2py router, both ways, statics latched on each side, and the robot answered for
by ``tf2py fleet`` under its namespace."""

from __future__ import annotations

import signal

import tf2py
from conftest import DISCOVERY_TIMEOUT, expected_transform, go
from helpers import free_port, wait_for
from tf2py.server.client import BufferClient


def test_a_dds_robot_joins_a_zenoh_fleet_through_the_bridge(rclpy_peer, ros_domain,
                                                             tf2py_command, spawn):
    locator = f"tcp/127.0.0.1:{free_port()}"
    spawn([*tf2py_command, "router", "--listen", locator]).wait_for_line(
        "tf2py router: ready", timeout=30)
    fleet_address = f"zenoh://{locator}"
    robot = f"{fleet_address}?namespace=/robot7"
    fleet = spawn([*tf2py_command, "fleet", "--core", fleet_address])
    fleet.wait_for_line("tf2py fleet: ready at", timeout=60)

    statics = rclpy_peer("static", 2)  # map -> base_link, map -> frame_1, latched
    statics.wait_for_events("sent")
    bridge = spawn([*tf2py_command, "bridge", "ros2://", robot, "--both"])
    bridge.wait_for_line("relaying", timeout=60)

    buffer = tf2py.Buffer()
    with tf2py.TransformListener(buffer, core=robot):
        # ROS 2 -> Zenoh: the node's latched static, then its stream, exact.
        wait_for(lambda: buffer.can_transform("map", "frame_1", tf2py.Time()),
                 DISCOVERY_TIMEOUT, message="the rclpy node's static on the Zenoh bus")
        talker = rclpy_peer("talk", 1, 40, 20)
        talker.wait_for_events("matched")  # the bridge's reader: the only one on /tf
        go(talker)
        talker.wait_for_events("sent", timeout=60)
        # map -> base_link is first the node's static (message 0's values), which answers at
        # any stamp: "can transform at the last stamp" held before the stream was in (it can
        # come late and all at once, when the bridge's DDS reader matches the talker late).
        # Wait until the lookup at the last stamp answers the last sample sent; every answer
        # on the way must be a sample sent, in the order sent.
        sent = [expected_transform(i, 0)[3] for i in range(40)]
        at = tf2py.Time.from_nanoseconds(expected_transform(39, 0)[2])
        answers: list[tuple[float, ...]] = []

        def last_sample_answered() -> bool:
            try:
                t = buffer.lookup_transform("map", "base_link", at).transform
            except tf2py.TransformException:
                return False
            answers.append((t.translation.x, t.translation.y, t.translation.z, t.rotation.x,
                            t.rotation.y, t.rotation.z, t.rotation.w))
            return answers[-1] == sent[-1]
        wait_for(last_sample_answered, DISCOVERY_TIMEOUT, interval=0.01,
                 message=lambda: f"the talker's last message on the Zenoh bus; last answers: "
                 f"{answers[-3:]}")
        # Each answer was a sample the talker sent, exact, in the order it sent them.
        assert all(a in sent for a in answers), [a for a in answers if a not in sent][:3]
        order = [sent.index(a) for a in answers]
        assert order == sorted(order), order

    # Zenoh -> ROS 2: a static from the robot's namespace, latched for a late rclpy node.
    with tf2py.StaticTransformBroadcaster(core=robot) as static:
        static.send_transform(tf2py.make_transform("world", "map", (0.0, 0.0, 7.0)))
        late = rclpy_peer("listen")
        wait_for(lambda: any(e["child"] == "map" and e["topic"] == "/tf_static"
                             and e["values"][2] == 7.0 for e in late.events("tf")),
                 DISCOVERY_TIMEOUT, message="the Zenoh static, latched in ROS 2")

        # The fleet answers for the DDS robot under its namespace.
        fleet.wait_for_line("robot /robot7 joined", timeout=60)
        with BufferClient(fleet_address) as client:
            def answered():
                return client.can_transform("robot7/world", "robot7/frame_1", tf2py.Time(),
                                            timeout=1.0)
            wait_for(answered, DISCOVERY_TIMEOUT, message="robot7/frame_1 in the fleet")
            frame_1 = client.lookup_transform("robot7/map", "robot7/frame_1", tf2py.Time(),
                                              timeout=5.0).transform.translation
            _, _, _, frame_values = expected_transform(0, 1)
            assert (frame_1.x, frame_1.y, frame_1.z) == frame_values[:3]

    bridge.signal(signal.SIGINT)
    assert bridge.wait(30) == 0, bridge.output()
