"""A real ROS 2 node (rclpy, Fast DDS) for tf2py's robot tests; runs in the peer environment
(tests/ros2/peer_env.py), never in tf2py's own. Prints one JSON object per line on stdout.

    robot_peer.py joint_states FILE   sensor_msgs/JointState on /joint_states (reliable, keep
                                      last 10, as joint_state_publisher) at 50 Hz: the names and
                                      positions in FILE (JSON {"name", "position", "effort"}),
                                      message i stamped 100 + i s + 5 ns, velocity left empty;
                                      says "matched" once a reader is found
    robot_peer.py listen              prints every /tf and /tf_static transform, the
                                      /robot_description (transient local) and /joint_states
                                      (as robot_state_publisher hears them) it receives, and
                                      the type hashes the graph reports for their publishers
    robot_peer.py hashes              prints the RIHS01 hashes of sensor_msgs/msg/JointState
                                      and std_msgs/msg/String from the installed type
                                      descriptions (share/*/msg/*.json)

Stops on SIGINT or SIGTERM.
"""

import hashlib
import json
import os
import signal
import sys
import threading
import time

import rclpy
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                    durability=DurabilityPolicy.VOLATILE, history=HistoryPolicy.KEEP_LAST)
STATIC_SUB_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                            durability=DurabilityPolicy.TRANSIENT_LOCAL,
                            history=HistoryPolicy.KEEP_LAST)
LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         history=HistoryPolicy.KEEP_LAST)
JSP_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.VOLATILE, history=HistoryPolicy.KEEP_LAST)


def say(**fields):
    print(json.dumps(fields), flush=True)


def installed_hash(package, name):
    path = os.path.join(sys.prefix, "share", package, "msg", f"{name}.json")
    with open(path) as f:
        hashes = json.load(f)["type_hashes"]
    return next(h["hash_string"] for h in hashes if h["type_name"] == f"{package}/msg/{name}")


def endpoint_hash(info):
    return str(info.topic_type_hash)  # "RIHS01_<hex>", or "INVALID" when none was given


def main():
    mode, *args = sys.argv[1:]
    if mode == "hashes":
        say(event="hashes", joint_state=installed_hash("sensor_msgs", "JointState"),
            string=installed_hash("std_msgs", "String"))
        return
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *a: stop.set())
    rclpy.init()
    node = rclpy.create_node(f"robot_peer_{os.getpid()}")
    if mode == "joint_states":
        with open(args[0]) as f:
            spec = json.load(f)
        pub = node.create_publisher(JointState, "/joint_states", JSP_QOS)
        while pub.get_subscription_count() == 0 and not stop.is_set():
            rclpy.spin_once(node, timeout_sec=0.05)
        say(event="matched")
        i = 0
        while not stop.is_set():
            msg = JointState()
            msg.header.stamp.sec = 100 + i
            msg.header.stamp.nanosec = 5
            msg.name = spec["name"]
            msg.position = [float(v) for v in spec["position"]]
            msg.effort = [float(v) for v in spec.get("effort", [])]
            pub.publish(msg)
            say(event="sent", i=i) if i == 0 else None
            i += 1
            rclpy.spin_once(node, timeout_sec=0.02)
    elif mode == "listen":
        def on_tf(msg, static):
            for t in msg.transforms:
                tr, q = t.transform.translation, t.transform.rotation
                say(event="tf_static" if static else "tf", parent=t.header.frame_id,
                    child=t.child_frame_id, sec=t.header.stamp.sec,
                    nanosec=t.header.stamp.nanosec, value=[tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w])

        def on_description(msg):
            say(event="robot_description", length=len(msg.data),
                sha256=hashlib.sha256(msg.data.encode()).hexdigest())

        def on_joint_state(msg):
            say(event="joint_state", name=list(msg.name), position=list(msg.position),
                velocity=list(msg.velocity), effort=list(msg.effort),
                sec=msg.header.stamp.sec, nanosec=msg.header.stamp.nanosec)

        keep = [
            node.create_subscription(TFMessage, "/tf", lambda m: on_tf(m, False), TF_QOS),
            node.create_subscription(TFMessage, "/tf_static", lambda m: on_tf(m, True),
                                     STATIC_SUB_QOS),
            node.create_subscription(String, "/robot_description", on_description, LATCHED_QOS),
            node.create_subscription(JointState, "/joint_states", on_joint_state,
                                     qos_profile_sensor_data),
        ]
        say(event="ready", subscriptions=len(keep))
        seen = set()
        next_look = 0.0
        while not stop.is_set():
            rclpy.spin_once(node, timeout_sec=0.05)
            if time.monotonic() < next_look:
                continue
            next_look = time.monotonic() + 0.2
            for topic in ("/joint_states", "/robot_description", "/tf"):
                for info in node.get_publishers_info_by_topic(topic):
                    key = (topic, info.node_name, endpoint_hash(info))
                    if key not in seen:
                        seen.add(key)
                        say(event="publisher", topic=topic, node=info.node_name,
                            type=info.topic_type, hash=endpoint_hash(info))
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
