"""`tf2py foxglove` serves /robot_description (std_msgs/msg/String, the schema name Foxglove's
URDF layer reads) beside /tf, so Foxglove's 3D panel draws the robot on its live frames:
from `--robot URDF`, or from a RobotStatePublisher's /robot_description on a Zenoh bus (a real
router). Checked with a real WebSocket client of the protocol, not the SDK under test."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("foxglove")

from bag.robot_bags import ARM
from foxglove_client import FoxgloveClient
from tf2py import JointStatePublisher, RobotModel, RobotStatePublisher
from tf2py.transport.zmq.core import Core
from tf2py.viz.foxglove import FoxgloveServer

URDF = ARM.read_text()


@pytest.fixture
def core():
    with Core("tcp://127.0.0.1:0") as c:
        yield c.address


def description_of(client: FoxgloveClient, subscription: int = 7) -> str:
    """Subscribe to /robot_description and return the URDF of its first message."""
    channel = client.channel("/robot_description")
    assert channel["schemaName"] == "std_msgs/msg/String"
    assert channel["encoding"] == "json" and channel["schemaEncoding"] == "jsonschema"
    assert json.loads(channel["schema"])["properties"]["data"]["type"] == "string"
    client.subscribe(channel["id"], subscription)

    def first():
        return next((payload for sub, _, payload in client.messages if sub == subscription),
                    None)

    return json.loads(client.wait(first, what="the robot description"))["data"]


def test_a_given_description_is_served_to_every_client_that_subscribes(core):
    with FoxgloveServer(core=core, port=0, robot_description=URDF) as server:
        assert server.robot_description == URDF
        with FoxgloveClient(server.url) as first:
            assert description_of(first) == URDF
        with FoxgloveClient(server.url) as late:  # a late joiner gets it too
            assert description_of(late, 3) == URDF


def test_without_a_description_there_is_no_robot_channel(core):
    with FoxgloveServer(core=core, port=0) as server, FoxgloveClient(server.url) as client:
        client.channel("/tf")
        assert [c["topic"] for c in client.channels.values()] == ["/tf"]
        assert server.robot_description is None


def test_the_description_a_robot_state_publisher_sends_on_zenoh_is_served(spawn,
                                                                          tf2py_command):
    pytest.importorskip("zenoh")
    from transport.zenoh.zenoh_support import start_router

    _, locator = start_router(spawn, tf2py_command)
    address = f"zenoh://tcp/{locator.split('/', 1)[1]}"
    with RobotStatePublisher(RobotModel.from_urdf(ARM), core=address), \
            FoxgloveServer(core=address, port=0) as server, \
            FoxgloveClient(server.url) as client:
        assert description_of(client) == URDF


# -- the command ------------------------------------------------------------------------------

URL = re.compile(r"ds\.url=ws%3A%2F%2F127\.0\.0\.1%3A(\d+)$")


def test_foxglove_robot_serves_the_arm_and_its_live_frames(core, spawn, tf2py_command):
    proc = spawn([*tf2py_command, "foxglove", "--core", core, "--port", "0", "--robot",
                  str(ARM)])
    port = URL.search(proc.wait_for_line("Open in Foxglove: ", timeout=60)).group(1)
    model = RobotModel.from_urdf(ARM)
    with RobotStatePublisher(model, core=core), JointStatePublisher(core=core) as joints, \
            FoxgloveClient(f"ws://127.0.0.1:{port}") as client:
        assert description_of(client) == URDF
        client.subscribe(client.channel("/tf")["id"], 1)

        def every_link():
            joints.publish(model.joint_names, [0.0, 0.2, 0, -1.5, 0, 1.5, 0, 0.01])
            return {t.child_frame_id for t in client.transforms(1)} >= set(model.links[1:])

        client.wait(every_link, timeout=30, what="every link of the arm on /tf")


def test_foxglove_robot_with_a_missing_file_is_one_line(tf2py, tmp_path):
    result = tf2py("foxglove", "--robot", str(tmp_path / "gone.urdf"), "--port", "0")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "gone.urdf" in lines[0], result.stderr


@pytest.fixture
def tf2py(tf2py_command):
    import subprocess

    def run(*args):
        return subprocess.run([*tf2py_command, *args], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)

    return run
