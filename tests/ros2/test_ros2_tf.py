"""tf2py and real ROS 2 nodes (rclpy on Fast DDS) exchanging /tf and /tf_static, both ways."""

from __future__ import annotations

import pytest

import tf2py
from conftest import DISCOVERY_TIMEOUT, expected_transform, start_talking, wait_until_heard
from helpers import raising_buffer, stalling_buffer, wait_for


def _values(t) -> tuple:
    tr, q = t.transform.translation, t.transform.rotation
    return (tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w)


def _check_buffer_holds(buffer, i: int, frames: int) -> None:
    """The buffer holds message i of rclpy_peer.py exactly: values and stamps."""
    for j in range(frames):
        parent, child, stamp_ns, values = expected_transform(i, j)
        t = buffer.lookup_transform(parent, child, tf2py.Time.from_nanoseconds(stamp_ns))
        assert tf2py.Time(t.header.stamp.sec, t.header.stamp.nanosec).nanoseconds == stamp_ns
        assert _values(t) == values


@pytest.mark.parametrize("frames", [1, 50])
def test_rclpy_tf_reaches_a_tf2py_listener_exactly(rclpy_peer, frames):
    buffer = tf2py.Buffer(cache_time=10_000.0)
    count = 5
    with tf2py.TransformListener(buffer, core="ros2://") as listener:
        peer = rclpy_peer("talk", frames, count, 50)
        start_talking(peer, listener)
        peer.wait_for_events("sent")
        wait_for(lambda: listener.received_messages >= count, DISCOVERY_TIMEOUT,
                 message=f"every message of the rclpy talker: {listener.stats()}")
        assert listener.received_transforms == count * frames
        assert listener.stats()["dropped"] == {}
        for i in range(count):
            _check_buffer_holds(buffer, i, frames)


def test_received_counts_only_what_the_buffer_already_holds(rclpy_peer):
    peer = rclpy_peer("static", 3)
    peer.wait_for_events("sent")
    buffer = stalling_buffer(0.3)
    with tf2py.TransformListener(buffer, core="ros2://") as listener:
        wait_for(lambda: listener.received_transforms >= 3, DISCOVERY_TIMEOUT,
                 message=lambda: f"the latched statics of the rclpy node: {listener.stats()}")
        # Read the moment the count said so: every counted transform can be looked up.
        for j in range(3):
            parent, child, _, _ = expected_transform(0, j)
            assert buffer.can_transform(parent, child, tf2py.Time())


def test_a_buffer_that_raises_is_counted_and_the_listener_goes_on(ros_domain):
    buffer = raising_buffer("boom")
    with tf2py.TransformListener(buffer, core="ros2://") as listener, \
            tf2py.TransformBroadcaster(core="ros2://") as broadcaster:
        def sent(child, condition):
            broadcaster.send_transform(tf2py.make_transform("map", child, (1.0, 0.0, 0.0),
                                                            stamp=tf2py.Time(5)))
            return condition()
        wait_for(lambda: sent("boom", lambda: listener.stats()["dropped"].get("error")),
                 DISCOVERY_TIMEOUT, interval=0.05, message=lambda: listener.stats())
        wait_for(lambda: sent("fine", lambda: buffer.can_transform("map", "fine", tf2py.Time())),
                 DISCOVERY_TIMEOUT, interval=0.05, message=lambda: listener.stats())
        assert not buffer.can_transform("map", "boom", tf2py.Time())


def _make(i: int, j: int):
    parent, child, stamp_ns, v = expected_transform(i, j)
    return tf2py.make_transform(parent, child, v[:3], rotation=v[3:],
                                stamp=tf2py.Time.from_nanoseconds(stamp_ns))


def _received_by(peer, topic: str) -> list[tuple]:
    return [(e["parent"], e["child"], e["sec"] * 1_000_000_000 + e["nanosec"],
             tuple(e["values"])) for e in peer.events("tf") if e["topic"] == topic]


@pytest.mark.parametrize("frames", [1, 50])
def test_tf2py_broadcaster_reaches_an_rclpy_listener_exactly(rclpy_peer, frames):
    peer = rclpy_peer("listen")
    with tf2py.TransformBroadcaster(core="ros2://") as broadcaster:
        wait_until_heard(peer, broadcaster)
        for i in range(3):
            broadcaster.send_transform([_make(i, j) for j in range(frames)])
        peer.wait_for_events("tf", 3 * frames)
    assert _received_by(peer, "/tf") == [expected_transform(i, j)
                                         for i in range(3) for j in range(frames)]


def test_rclpy_statics_reach_a_tf2py_listener_started_later(rclpy_peer):
    peer = rclpy_peer("static", 3)
    peer.wait_for_events("sent")
    buffer = tf2py.Buffer()
    with tf2py.TransformListener(buffer, core="ros2://") as listener:
        wait_for(lambda: listener.received_transforms >= 3, DISCOVERY_TIMEOUT,
                 message=f"the latched statics of the rclpy node: {listener.stats()}")
        for j in range(3):
            parent, child, _, values = expected_transform(0, j)
            # A static transform holds at every time, as in tf2.
            assert _values(buffer.lookup_transform(parent, child, tf2py.Time(12345))) == values


def test_tf2py_statics_reach_an_rclpy_listener_started_later(rclpy_peer):
    with tf2py.StaticTransformBroadcaster(core="ros2://") as static:
        static.send_transform(_make(0, 1))
        static.send_transform([_make(0, 2), _make(0, 3)])  # the latched set grows
        peer = rclpy_peer("listen")
        received = peer.wait_for_events("tf", 3)
    assert sorted(_received_by(peer, "/tf_static")) == [expected_transform(0, j)
                                                        for j in (1, 2, 3)]
    assert len(received) == 3


def test_a_tf2py_process_is_a_named_node_in_the_ros2_graph(rclpy_peer, monkeypatch):
    monkeypatch.setenv("TF2PY_ROS2_NODE", "tf2py_graph_test")
    buffer = tf2py.Buffer()
    with tf2py.TransformListener(buffer, core="ros2://"):
        peer = rclpy_peer("nodes")
        wait_for(lambda: any("tf2py_graph_test" in e["names"] for e in peer.events("nodes")),
                 DISCOVERY_TIMEOUT, interval=0.1,
                 message=lambda: f"tf2py's node among rclpy's get_node_names(): {peer.output()[-500:]}")
    # Leaving the graph: the node disappears from it.
    wait_for(lambda: "tf2py_graph_test" not in peer.events("nodes")[-1]["names"],
             DISCOVERY_TIMEOUT, interval=0.1, message="tf2py's node gone after close()")


def test_echo_prints_an_rclpy_nodes_transform(rclpy_peer, ros_domain, tf2py_command, spawn):
    peer = rclpy_peer("static", 1)
    peer.wait_for_events("sent")
    echo = spawn([*tf2py_command, "echo", "--core", f"ros2://{ros_domain['ROS_DOMAIN_ID']}",
                  "map", "base_link", "--once", "--timeout", str(DISCOVERY_TIMEOUT)],
                 env={"ROS_DOMAIN_ID": "0"})  # the address's domain wins over the variable
    assert echo.wait(DISCOVERY_TIMEOUT + 20) == 0, echo.output()
    out = echo.output()
    assert "- Translation: [0.500, 0.250, -1.125]" in out, out
    assert "Quaternion [0.000, 0.000, 0.600, 0.800]" in out, out
