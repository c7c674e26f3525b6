"""Robot models on ros2://, against real rclpy nodes (Fast DDS, ROS 2 Jazzy, robot_peer.py): an
rclpy joint_state publisher drives a tf2py RobotStatePublisher; an rclpy node started later
receives every link on /tf and /tf_static, the URDF on /robot_description (transient local),
and sees the type hashes; a tf2py JointStatePublisher is heard by rclpy as sensor_msgs."""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np
import pytest

from conftest import HERE, Peer
from helpers import wait_for
from tf2py import JointStatePublisher, RobotModel, RobotStatePublisher
from tf2py.robot.joint_state import JOINT_STATE_TYPE_HASH, STRING_TYPE_HASH

sys.path.insert(0, str(HERE.parent / "robot"))
from rsp_support import TALOS

TIMEOUT = 60.0


@pytest.fixture
def robot_peer(peer_python, ros_domain):
    peers: list[Peer] = []

    def start(*args) -> Peer:
        peer = Peer([peer_python, str(HERE / "robot_peer.py"), *map(str, args)],
                    env=dict(ros_domain))
        peers.append(peer)
        return peer

    yield start
    for peer in peers:
        peer.stop(timeout=10)


def test_type_hashes_are_the_installed_ones(robot_peer):
    peer = robot_peer("hashes")
    event = peer.wait_for_events("hashes")[0]
    assert (event["joint_state"], event["string"]) == (JOINT_STATE_TYPE_HASH, STRING_TYPE_HASH)


def test_rclpy_joint_states_drive_a_tf2py_robot_state_publisher(robot_peer, tmp_path):
    model = RobotModel.from_urdf(TALOS)
    rng = np.random.default_rng(7)
    q = rng.uniform(-0.4, 0.4, len(model.joint_names))
    spec = tmp_path / "joints.json"
    # effort given, velocity empty: the CDR of an empty sequence between two full ones
    spec.write_text(json.dumps({"name": ["not_a_joint", *model.joint_names],
                                "position": [5.0, *q.tolist()],
                                "effort": [0.0] * (len(q) + 1)}))
    with RobotStatePublisher(model, "ros2://") as rsp:
        listener = robot_peer("listen")  # after the statics and the description were sent
        listener.wait_for_events("ready", timeout=TIMEOUT)
        talker = robot_peer("joint_states", spec)
        talker.wait_for_events("matched", timeout=TIMEOUT)
        wait_for(lambda: rsp.stats()["published_messages"] >= 1, timeout=TIMEOUT,
                 message=lambda: f"{rsp.stats()} {talker.output()[-2000:]}")
        statics = {e["child"]: e for e in listener.wait_for_events("tf_static",
                                                                   timeout=TIMEOUT)}
        description = listener.wait_for_events("robot_description", timeout=TIMEOUT)[0]
        expected = model.transforms(q)
        children = {t.child_frame_id for t in expected}

        def moving():
            got = {e["child"]: e for e in listener.events("tf")}
            return got if children <= set(got) else None
        tf = wait_for(moving, timeout=TIMEOUT, message=lambda: listener.output()[-3000:])
        publishers = listener.wait_for_events("publisher", n=3, timeout=TIMEOUT)
        assert rsp.stats()["dropped"] == {}
    assert set(statics) == {t.child_frame_id for t in model.static_transforms()}
    assert set(statics) | set(tf) | {model.root} == set(model.links)  # every link
    for t in expected:
        got = tf[t.child_frame_id]
        assert got["parent"] == t.header.frame_id
        assert got["sec"] >= 100 and got["nanosec"] == 5  # the joint state's own stamp
        v = t.transform
        np.testing.assert_allclose(got["value"], [v.translation.x, v.translation.y,
                                                  v.translation.z, v.rotation.x, v.rotation.y,
                                                  v.rotation.z, v.rotation.w], atol=1e-12)
    assert description["length"] == len(model.urdf)
    assert description["sha256"] == hashlib.sha256(model.urdf.encode()).hexdigest()
    hashes = {(p["topic"], p["type"]): p["hash"] for p in publishers}
    assert hashes[("/robot_description", "std_msgs/msg/String")] == STRING_TYPE_HASH


def test_a_tf2py_joint_state_publisher_is_heard_by_rclpy(robot_peer):
    listener = robot_peer("listen")
    listener.wait_for_events("ready", timeout=TIMEOUT)
    with JointStatePublisher("ros2://") as jsp:
        def heard():
            jsp.publish(["a", "b"], [0.5, -1.25], stamp=42.000000007, efforts=[1.0, 2.0])
            return listener.events("joint_state")
        event = wait_for(heard, timeout=TIMEOUT, interval=0.1,
                         message=lambda: listener.output()[-3000:])[0]
        publishers = wait_for(lambda: [p for p in listener.events("publisher")
                                       if p["topic"] == "/joint_states"], timeout=TIMEOUT)
    assert (event["name"], event["position"], event["velocity"], event["effort"]) == \
        (["a", "b"], [0.5, -1.25], [], [1.0, 2.0])
    assert (event["sec"], event["nanosec"]) == (42, 7)
    assert publishers[0]["type"] == "sensor_msgs/msg/JointState"
    assert publishers[0]["hash"] == JOINT_STATE_TYPE_HASH
