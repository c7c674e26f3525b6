"""tf2py and real ROS 2 nodes (rclpy on Fast DDS) exchanging /tf and /tf_static, both ways."""

from __future__ import annotations

import numpy as np
import pytest

import tf2py
from conftest import DISCOVERY_TIMEOUT, expected_transform, start_talking, wait_until_heard
from helpers import wait_for


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
