"""``tf2py bridge`` between a tf2py core and a real ROS 2 graph (rclpy nodes)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections import Counter

import tf2py
from conftest import DISCOVERY_TIMEOUT, expected_transform, go
from helpers import wait_for
from tf2py.transport.listener import TransformSubscriber
from tf2py.transport.zmq.core import Core


def _zmq_transform(k: int, child="zmq_child", parent="zmq_parent"):
    return tf2py.make_transform(parent, child, (k + 0.5, 0.0, 0.0),
                                stamp=tf2py.Time.from_nanoseconds(5_000_000_000 + k))


def test_bridge_both_ways_relays_latches_statics_and_never_loops(
        rclpy_peer, ros_domain, tf2py_command, spawn):
    batches = []
    lock = threading.Lock()

    def on_batch(batch):
        with lock:
            batches.append((batch.authority, batch.is_static, batch.transforms.children,
                            batch.transforms.stamps_ns.tolist(), batch.transforms.values.tolist()))

    def zmq_rows(child):
        with lock:
            return [(a, s, st, v[i]) for a, s, ch, sts, v in batches
                    for i, (c, st) in enumerate(zip(ch, sts)) if c == child]

    with Core("tcp://127.0.0.1:0") as core, \
            TransformSubscriber(core=core.address, on_batch=on_batch):
        statics = rclpy_peer("static", 2)  # map -> base_link, map -> frame_1, latched
        statics.wait_for_events("sent")
        bridge = spawn([*tf2py_command, "bridge", "ros2://", core.address, "--both"])
        bridge.wait_for_line("relaying")
        listener = rclpy_peer("listen")
        listener.wait_for_events("ready")

        # ROS 2 -> tf2py: a latched static, then a stream; both exact on the tf2py bus.
        wait_for(lambda: zmq_rows("frame_1"), DISCOVERY_TIMEOUT,
                 message="the rclpy node's static, relayed to the core")
        talker = rclpy_peer("talk", 1, 40, 20, 2)  # the bridge's reader and the listener's
        talker.wait_for_events("matched")
        go(talker)
        talker.wait_for_events("sent", timeout=60)
        wait_for(lambda: any(st == expected_transform(39, 0)[2] for _, _, st, _ in
                             zmq_rows("base_link")), DISCOVERY_TIMEOUT,
                 message="the talker's last message on the tf2py bus")

        # tf2py -> ROS 2: a static and a stream from a tf2py broadcaster.
        with tf2py.StaticTransformBroadcaster(core=core.address) as static, \
                tf2py.TransformBroadcaster(core=core.address) as broadcaster:
            static.send_transform(tf2py.make_transform("world", "map", (0.0, 0.0, 7.0)))
            k = 0

            def heard():
                nonlocal k
                broadcaster.send_transform(_zmq_transform(k))
                k += 1
                return any(e["child"] == "zmq_child" for e in listener.events("tf"))
            wait_for(heard, DISCOVERY_TIMEOUT, interval=0.05,
                     message="a tf2py transform relayed to the rclpy listener")
            for marker in range(k, k + 3):
                broadcaster.send_transform(_zmq_transform(marker))
            wait_for(lambda: any(e["child"] == "zmq_child" and e["sec"] * 10**9 + e["nanosec"]
                                 == 5_000_000_000 + k + 2 for e in listener.events("tf")),
                     DISCOVERY_TIMEOUT, message="the last tf2py transform in ROS 2")

            # Statics are latched on the far side: late joiners on both sides get them.
            late = rclpy_peer("listen")
            wait_for(lambda: any(e["child"] == "map" and e["topic"] == "/tf_static"
                                 and e["values"][2] == 7.0 for e in late.events("tf")),
                     DISCOVERY_TIMEOUT, message="tf2py's static, latched in ROS 2")
        late_buffer = tf2py.Buffer()
        with tf2py.TransformListener(late_buffer, core=core.address):
            assert late_buffer.can_transform("map", "frame_1", tf2py.Time(), timeout=10.0)

        bridge.signal(signal.SIGINT)
        assert bridge.wait(30) == 0, bridge.output()

    # Exact values both ways.
    received = {st: tuple(v) for _, _, st, v in zmq_rows("base_link")}
    assert len(received) >= 10
    for i in range(40):
        _, _, stamp, values = expected_transform(i, 0)
        if stamp in received:
            assert received[stamp] == values
    in_ros = [e for e in listener.events("tf") if e["child"] == "zmq_child"]
    for e in in_ros:
        n = e["sec"] * 10**9 + e["nanosec"] - 5_000_000_000
        assert e["parent"] == "zmq_parent" and e["values"] == [n + 0.5, 0, 0, 0, 0, 0, 1]

    # No loops: nothing came back to the bus it left, and nothing arrived twice.
    bridge_authority = "tf2py-bridge@"
    assert not [r for r in zmq_rows("zmq_child") if r[0].startswith(bridge_authority)]
    stamps_in_ros = Counter(e["sec"] * 10**9 + e["nanosec"] for e in in_ros)
    assert max(stamps_in_ros.values()) == 1
    talker_in_ros = Counter(e["sec"] * 10**9 + e["nanosec"] for e in listener.events("tf")
                            if e["child"] == "base_link" and e["topic"] == "/tf")
    assert talker_in_ros and max(talker_in_ros.values()) == 1
    assert max(Counter(st for _, s, st, _ in zmq_rows("base_link") if not s).values()) == 1

    out = bridge.output()
    assert f"ros2:// -> {core.address}: relayed" in out and "dropped" in out, out


def test_bridge_refuses_bad_or_identical_buses_with_one_line(tf2py_command):
    for args, text in ((["ros2://", "ros2://0"], "same bus"),
                       (["ros2://3", "tcp://nowhere"], "tcp://HOST:PORT"),
                       (["ros2://999", "tcp://127.0.0.1:7400"], "0..232")):
        out = subprocess.run([*tf2py_command, "bridge", *args], capture_output=True, text=True,
                             timeout=60, env={**os.environ, "ROS_DOMAIN_ID": "0"})
        assert out.returncode == 2, out
        assert out.stderr.count("\n") == 1 and text in out.stderr, out.stderr
