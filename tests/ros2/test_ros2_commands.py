"""Every command's --core (and TF2PY_CORE) takes ros2://: a few commands against rclpy nodes."""

from __future__ import annotations

import pytest

import tf2py
from conftest import DISCOVERY_TIMEOUT
from helpers import free_address, wait_for


def test_frames_lists_an_rclpy_nodes_statics_via_tf2py_core(rclpy_peer, ros_domain,
                                                            tf2py_command, spawn):
    rclpy_peer("static", 2).wait_for_events("sent")
    frames = spawn([*tf2py_command, "frames", "-t", "6"],
                   env={"TF2PY_CORE": f"ros2://{ros_domain['ROS_DOMAIN_ID']}"})
    assert frames.wait(60) == 0, frames.output()
    assert "base_link" in frames.output() and "frame_1" in frames.output()


def test_record_writes_an_rclpy_nodes_transforms(rclpy_peer, ros_domain, tf2py_command,
                                                 spawn, tmp_path):
    rclpy_peer("static", 3).wait_for_events("sent")
    out = tmp_path / "run.mcap"
    record = spawn([*tf2py_command, "record", "--core", "ros2://", "--duration", "6", str(out)])
    assert record.wait(60) == 0, record.output()
    with pytest.warns(tf2py.bag.BagWarning, match="only the 3 static ones"):  # statics only
        buffer = tf2py.bag.load(str(out))
    t = buffer.lookup_transform("map", "frame_2", tf2py.Time())
    assert (t.transform.translation.x, t.transform.translation.y) == (0.5, 2.25)


def test_server_answers_lookups_of_an_rclpy_nodes_transforms(rclpy_peer, ros_domain,
                                                             tf2py_command, spawn):
    rclpy_peer("static", 1).wait_for_events("sent")
    address = free_address()
    server = spawn([*tf2py_command, "server", "--core", "ros2://", "--address", address])
    server.wait_for_line("tf2py server: ready", timeout=30)
    client = tf2py.BufferClient(address)
    try:
        t = wait_for(lambda: _lookup(client), DISCOVERY_TIMEOUT, interval=0.2,
                     message=lambda: f"the server's answer; server output:\n{server.output()}")
    finally:
        client.close()
    assert t.transform.translation.z == -1.125 and t.child_frame_id == "base_link"


def _lookup(client):
    try:
        return client.lookup_transform("map", "base_link", tf2py.Time(), timeout=1.0)
    except tf2py.TransformException:
        return None


def test_play_clock_on_ros2_is_heard_by_an_rclpy_node(rclpy_peer, ros_domain, tf2py_command,
                                                      spawn):
    """`tf2py play BAG --clock --core ros2://` publishes the bag's time on ROS 2's /clock, as
    `ros2 bag play --clock` does: a real rclpy subscriber hears it."""
    from helpers import SHARED_DATA
    from tf2py.bag import read_transforms

    bag = SHARED_DATA / "tf_example.bag"
    data = read_transforms(bag)
    listener = rclpy_peer("clock_listen")
    play = spawn([*tf2py_command, "play", str(bag), "--core", "ros2://", "--clock", "50",
                  "--loop", "--quiet"])
    listener.wait_for_events("clock", n=5, timeout=DISCOVERY_TIMEOUT + 20)
    assert play.stop() == 0, play.output()
    times = [event["ns"] for event in listener.events("clock")]
    end_ns = data.start_ns + data.duration_ns
    assert all(data.start_ns <= t <= end_ns for t in times), (data.start_ns, times[:5])


def test_clock_publisher_and_sim_clock_refuse_keys_on_ros2(ros_domain, tmp_path):
    from tf2py.transport.clock import ClockPublisher

    for cls in (ClockPublisher, tf2py.SimClock):
        try:
            cls("ros2://", keys=str(tmp_path))
        except ValueError as exc:
            assert "not to ROS 2" in str(exc)
        else:
            raise AssertionError(f"{cls.__name__} took keys= on ros2://")
