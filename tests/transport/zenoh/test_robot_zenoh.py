"""Robot models on zenoh://, against a reference rmw_zenoh peer (robot_peer.py: zenoh-python and
rosbags, nothing of tf2py) through a real router, each in its own process: rmw_zenoh joint
states drive a tf2py RobotStatePublisher in a namespace; a peer that joins later gets every
link, the statics and /robot_description (transient local) on rmw_zenoh's key expressions
with rosbags' type hashes; a tf2py JointStatePublisher is heard as sensor_msgs."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import wait_for
from tf2py import JointStatePublisher, RobotModel, RobotStatePublisher
from tf2py.robot.joint_state import JOINT_STATE_TYPE_HASH, STRING_TYPE_HASH
from tf2py.transport.zenoh import wire
from zenoh_support import records, start_router

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "robot"))
from rsp_support import SMALL_ARM, TALOS  # tests/robot's descriptions, on the path above

PEER = str(Path(__file__).resolve().parent / "robot_peer.py")
NAMESPACE = "/robot7"


@pytest.fixture
def router(spawn, tf2py_command):
    return start_router(spawn, tf2py_command)[1]


def start(spawn, router, *command):
    proc = spawn([sys.executable, PEER, router, "0", NAMESPACE, *command])
    proc.wait_for_line('"ready"', timeout=30)
    return proc


def test_rmw_zenoh_joint_states_drive_a_tf2py_robot_state_publisher(router, spawn, tmp_path):
    model = RobotModel.from_urdf(TALOS)
    q = np.random.default_rng(3).uniform(-0.4, 0.4, len(model.joint_names))
    spec = tmp_path / "joints.json"
    spec.write_text(json.dumps({"name": model.joint_names, "position": q.tolist()}))
    address = f"zenoh://{router}?namespace={NAMESPACE}"
    with RobotStatePublisher(model, address, frame_prefix="robot7/") as rsp:
        listener = start(spawn, router, "listen")  # joins after statics and description
        start(spawn, router, "joint-states", spec)
        expected = {t.child_frame_id: t for t in model.transforms(q, frame_prefix="robot7/")}

        def every_link():
            got = {r["tf"]["child"]: r["tf"] for r in records(listener, "tf")}
            return got if set(expected) <= set(got) else None
        tf = wait_for(every_link, timeout=30,
                      message=lambda: f"{rsp.stats()} {listener.output()[-2000:]}")
        statics = wait_for(lambda: {r["tf_static"]["child"] for r in records(listener,
                                                                           "tf_static")},
                           timeout=30)
        description = wait_for(lambda: records(listener, "robot_description"), timeout=30)
        assert rsp.stats()["dropped"] == {} and rsp.stats()["received_messages"] >= 1
    assert statics == {t.child_frame_id for t in model.static_transforms(0, "robot7/")}
    assert {c[len("robot7/"):] for c in statics | set(tf)} | {model.root} == set(model.links)
    for child, t in expected.items():
        assert tf[child]["parent"] == t.header.frame_id
        assert tf[child]["sec"] >= 100 and tf[child]["nanosec"] == 5
        v = t.transform
        np.testing.assert_allclose(tf[child]["value"], [
            v.translation.x, v.translation.y, v.translation.z,
            v.rotation.x, v.rotation.y, v.rotation.z, v.rotation.w], atol=1e-12)
    got = description[0]["robot_description"]
    assert got["key"] == f"0/robot7/robot_description/std_msgs::msg::dds_::String_/" \
        f"{STRING_TYPE_HASH}"
    assert got["sha256"] == hashlib.sha256(model.urdf.encode()).hexdigest()
    tokens = [wire.parse_liveliness_keyexpr(r["token"]) for r in records(listener, "token")]
    mine = {(e.kind, e.topic_name): e for e in tokens if e.node_name.startswith("tf2py")}
    described = mine[("MP", "/robot7/robot_description")]
    assert (described.type_hash, described.qos) == (STRING_TYPE_HASH, ":1:,1:,:,:,,")
    hears = mine[("MS", "/robot7/joint_states")]
    assert (hears.type_name, hears.type_hash) == ("sensor_msgs::msg::dds_::JointState_",
                                                  JOINT_STATE_TYPE_HASH)
    assert hears.qos == "2::,5:,:,:,,"  # SensorDataQoS: best effort, keep last 5


def test_a_tf2py_joint_state_publisher_is_heard_by_an_rmw_zenoh_peer(router, spawn):
    listener = start(spawn, router, "listen")
    with JointStatePublisher(f"zenoh://{router}?namespace={NAMESPACE}") as jsp:
        def heard():
            jsp.publish(["a", "b"], [0.5, -1.25], stamp=42.000000007)
            return records(listener, "joint_state")
        sample = wait_for(heard, timeout=30, interval=0.1)[0]["joint_state"]
    assert sample["key"] == f"0/robot7/joint_states/sensor_msgs::msg::dds_::JointState_/" \
        f"{JOINT_STATE_TYPE_HASH}"
    assert (sample["name"], sample["position"], sample["sec"], sample["nanosec"]) == \
        (["a", "b"], [0.5, -1.25], 42, 7)
    assert not records(listener, "bad_attachment")


def test_robot_description_is_not_given_once_its_publisher_closed(router, spawn):
    model = RobotModel.from_urdf_string(SMALL_ARM)
    address = f"zenoh://{router}?namespace={NAMESPACE}"
    with RobotStatePublisher(model, address, listen=False):
        first = start(spawn, router, "listen")
        wait_for(lambda: records(first, "robot_description"), timeout=30)
    late = start(spawn, router, "listen")
    other = RobotModel.from_urdf(TALOS)
    with RobotStatePublisher(other, address, listen=False):  # what late does hear: this one
        got = wait_for(lambda: records(late, "robot_description"), timeout=30)
    assert [r["robot_description"]["sha256"] for r in got] == \
        [hashlib.sha256(other.urdf.encode()).hexdigest()]
