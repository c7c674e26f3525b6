"""A real ROS 2 node (rclpy, Fast DDS) for tf2py's ROS 2 tests; runs in the peer environment
(tests/ros2/peer_env.py), never in tf2py's own. Prints one JSON object per line on stdout.

    rclpy_peer.py talk FRAMES COUNT HZ [READERS]
                                          /tf: COUNT messages of FRAMES transforms each, HZ per s,
                                          from when READERS (default 1) readers have matched and
                                          the file $PEER_GO_FILE exists (the test makes it when the
                                          listener under test knows this writer)
    rclpy_peer.py static FRAMES           /tf_static: one latched message of FRAMES transforms
    rclpy_peer.py raw HEX...              /tf: these serialized samples (header included), as they are
    rclpy_peer.py listen                  prints every /tf and /tf_static transform received
                                          (and once a /tf publisher is seen)
    rclpy_peer.py clock [LOOP]            /clock: 500 s + 7 ns, 501 s + 7 ns, ... at 50 Hz (back to
                                          500 s after LOOP ticks, as a looping bag)
    rclpy_peer.py nodes                   prints the node names of the graph, twice a second
    rclpy_peer.py clock_listen            prints every /clock time received (ClockQoS)

Transform j of message i: parent "map" (j = 0: child "base_link", else "frame_{j}"), stamp
(1000 + i) s + 250000000 ns + j ns, translation (i + 0.5, j + 0.25, -1.125), rotation
(0, 0, 0.6, 0.8). Each side checks against these exact values. Stops on SIGINT or SIGTERM.
"""

import json
import os
import signal
import sys
import threading
import time

import rclpy
from geometry_msgs.msg import TransformStamped
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from tf2_msgs.msg import TFMessage

TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                    durability=DurabilityPolicy.VOLATILE, history=HistoryPolicy.KEEP_LAST)
STATIC_PUB_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                            durability=DurabilityPolicy.TRANSIENT_LOCAL,
                            history=HistoryPolicy.KEEP_LAST)
STATIC_SUB_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                            durability=DurabilityPolicy.TRANSIENT_LOCAL,
                            history=HistoryPolicy.KEEP_LAST)


def say(**fields):
    print(json.dumps(fields), flush=True)


def transform(i, j):
    t = TransformStamped()
    t.header.frame_id = "map"
    t.child_frame_id = "base_link" if j == 0 else f"frame_{j}"
    t.header.stamp.sec = 1000 + i
    t.header.stamp.nanosec = 250_000_000 + j
    t.transform.translation.x = i + 0.5
    t.transform.translation.y = j + 0.25
    t.transform.translation.z = -1.125
    t.transform.rotation.z = 0.6
    t.transform.rotation.w = 0.8
    return t


def as_dict(t, topic):
    tr, q = t.transform.translation, t.transform.rotation
    return dict(topic=topic, parent=t.header.frame_id, child=t.child_frame_id,
                sec=t.header.stamp.sec, nanosec=t.header.stamp.nanosec,
                values=[tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w])


def wait_to_go(pub, stop, readers=1):
    """Until this writer has ``readers`` readers and the test has made $PEER_GO_FILE. A file,
    not a signal: a SIGUSR1 was seen never to arrive at an rclpy process on a loaded machine."""
    while pub.get_subscription_count() < readers and not stop.is_set():
        time.sleep(0.05)
    say(event="matched")
    go_file = os.environ["PEER_GO_FILE"]
    while not os.path.exists(go_file) and not stop.is_set():
        stop.wait(0.05)
    say(event="go")


def main():
    mode = sys.argv[1]
    rclpy.init()
    node = rclpy.create_node(f"rclpy_peer_{mode}")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *a: stop.set())
    say(event="ready", node=node.get_name())
    if mode == "talk":
        frames, count, hz = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
        readers = int(sys.argv[5]) if len(sys.argv) > 5 else 1
        pub = node.create_publisher(TFMessage, "/tf", TF_QOS)
        # /tf is not latched: wait for the listener under test to know us (the test says so
        # with a file) and for us to know it, before the first message.
        wait_to_go(pub, stop, readers)
        for i in range(count):
            if stop.is_set():
                break
            pub.publish(TFMessage(transforms=[transform(i, j) for j in range(frames)]))
            time.sleep(1.0 / hz)
        say(event="sent", count=count)
        stop.wait()
    elif mode == "raw":
        # Serialized samples as given (hex, header included), e.g. garbage, on /tf.
        pub = node.create_publisher(TFMessage, "/tf", TF_QOS)
        wait_to_go(pub, stop)
        for sample in sys.argv[2:]:
            pub.publish(bytes.fromhex(sample))
            time.sleep(0.01)
        say(event="sent", count=len(sys.argv) - 2)
        stop.wait()
    elif mode == "clock":
        # /clock as `ros2 bag play --clock` publishes it: rosgraph_msgs/Clock, ClockQoS.
        from rosgraph_msgs.msg import Clock

        clock_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                               durability=DurabilityPolicy.VOLATILE)  # rclcpp's ClockQoS
        pub = node.create_publisher(Clock, "/clock", clock_qos)
        loop = int(sys.argv[2]) if len(sys.argv) > 2 else 0
        tick = 0
        while not stop.is_set():
            msg = Clock()
            msg.clock.sec = 500 + tick
            msg.clock.nanosec = 7
            pub.publish(msg)
            tick = (tick + 1) % loop if loop else tick + 1
            stop.wait(0.02)
    elif mode == "static":
        frames = int(sys.argv[2])
        pub = node.create_publisher(TFMessage, "/tf_static", STATIC_PUB_QOS)
        pub.publish(TFMessage(transforms=[transform(0, j) for j in range(frames)]))
        say(event="sent", count=1)
        stop.wait()
    elif mode == "listen":
        for topic, qos in (("/tf", TF_QOS), ("/tf_static", STATIC_SUB_QOS)):
            node.create_subscription(
                TFMessage, topic,
                lambda msg, topic=topic: [say(event="tf", **as_dict(t, topic))
                                          for t in msg.transforms], qos)
        told = False
        while not stop.is_set():
            rclpy.spin_once(node, timeout_sec=0.05)
            if not told and node.count_publishers("/tf") > 0:
                told = True
                say(event="publishers", n=node.count_publishers("/tf"))
    elif mode == "clock_listen":
        from rosgraph_msgs.msg import Clock

        clock_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                               durability=DurabilityPolicy.VOLATILE)  # rclcpp's ClockQoS
        node.create_subscription(
            Clock, "/clock",
            lambda msg: say(event="clock", ns=msg.clock.sec * 1_000_000_000 + msg.clock.nanosec),
            clock_qos)
        while not stop.is_set():
            rclpy.spin_once(node, timeout_sec=0.05)
    elif mode == "nodes":
        while not stop.is_set():
            say(event="nodes", names=node.get_node_names())
            stop.wait(0.5)
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
