"""A reference rmw_zenoh peer for the robot topics (/joint_states, /robot_description, /tf,
/tf_static), written from rmw_zenoh's conventions with zenoh-python and rosbags (its type
hashes and CDR), importing nothing of tf2py; reference_peer.py does the same for /tf alone.

    robot_peer.py ROUTER DOMAIN NAMESPACE joint-states FILE
        sensor_msgs/JointState on /joint_states (reliable, volatile, keep last 10, as
        joint_state_publisher): FILE's names and positions (JSON {"name", "position"}),
        message i stamped 100 + i s + 5 ns, at 50 Hz until stopped
    robot_peer.py ROUTER DOMAIN NAMESPACE listen
        prints every /tf and /tf_static transform, each /robot_description (transient local:
        a late joiner still gets it) and /joint_states message received, and the liveliness
        tokens it sees

One JSON object per line: {"ready": ...}, {"tf": ...}, {"tf_static": ...},
{"robot_description": ...}, {"joint_state": ...}, {"token": key}. Stops on SIGINT.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time

import xxhash
import zenoh.ext as zext
from rosbags.typesys import Stores, get_typestore

import zenoh

STORE = get_typestore(Stores.ROS2_JAZZY)
lock = threading.Lock()


def emit(obj: dict) -> None:
    with lock:
        print(json.dumps(obj), flush=True)


def dds(ros_type: str) -> str:
    package, kind, name = ros_type.split("/")
    return f"{package}::{kind}::dds_::{name}_"


def key(domain: str, namespace: str, topic: str, ros_type: str) -> str:
    fqn = (namespace.rstrip("/") + "/" + topic).strip("/")
    return f"{domain}/{fqn}/{dds(ros_type)}/{STORE.hash_rihs01(ros_type)}"


def token(domain, zid, eid, kind, namespace, node, topic=None, ros_type=None, qos=None) -> str:
    parts = ["@ros2_lv", domain, zid, "0", str(eid), kind, "%", namespace.replace("/", "%"),
             node]
    if topic is not None:
        fqn = namespace.rstrip("/") + "/" + topic
        parts += [fqn.replace("/", "%"), dds(ros_type), STORE.hash_rihs01(ros_type), qos]
    return "/".join(parts)


def gid(token_key: str) -> bytes:
    digest = xxhash.xxh3_128(token_key.encode()).digest()
    return digest[8:][::-1] + digest[:8][::-1]


def attachment(sequence: int, gid_bytes: bytes) -> bytes:
    return zext.z_serialize((zext.Int64(sequence), zext.Int64(time.time_ns()),
                             gid_bytes)).to_bytes()


def main() -> None:
    router, domain, namespace, command, *rest = sys.argv[1:]
    config = zenoh.Config()
    config.insert_json5("mode", '"peer"')
    config.insert_json5("connect/endpoints", json.dumps([router]))
    config.insert_json5("listen/endpoints", '["tcp/127.0.0.1:0"]')
    config.insert_json5("scouting/multicast/enabled", "false")
    config.insert_json5("timestamping/enabled", "true")
    s = zenoh.open(config)
    zid = str(s.zid())
    node = f"robot_peer_{os.getpid()}"
    keep: list = [s.liveliness().declare_token(token(domain, zid, 0, "NN", namespace, node)),
                  s.liveliness().declare_subscriber(
                      f"@ros2_lv/{domain}/**", lambda t: emit({"token": str(t.key_expr)}),
                      history=True)]
    types = STORE.types
    if command == "joint-states":
        with open(rest[0]) as f:
            spec = json.load(f)
        ros_type = "sensor_msgs/msg/JointState"
        tok = token(domain, zid, 1, "MP", namespace, node, "joint_states", ros_type,
                    "::,10:,:,:,,")
        pub = zext.declare_advanced_publisher(
            s, key(domain, namespace, "joint_states", ros_type),
            congestion_control=zenoh.CongestionControl.DROP,
            reliability=zenoh.Reliability.RELIABLE)
        keep += [pub, s.liveliness().declare_token(tok)]
        emit({"ready": command})
        import numpy as np

        i = 0
        try:
            while True:
                header = types["std_msgs/msg/Header"](
                    stamp=types["builtin_interfaces/msg/Time"](sec=100 + i, nanosec=5),
                    frame_id="")
                msg = types[ros_type](header=header, name=spec["name"],
                                      position=np.array(spec["position"], dtype=np.float64),
                                      velocity=np.zeros(0), effort=np.zeros(0))
                pub.put(bytes(STORE.serialize_cdr(msg, ros_type)),
                        attachment=attachment(i + 1, gid(tok)))
                i += 1
                time.sleep(0.02)
        except KeyboardInterrupt:  # the tests stop it with SIGINT
            pass
        s.close()
        return
    topics = [("tf", "tf2_msgs/msg/TFMessage", False), ("tf_static", "tf2_msgs/msg/TFMessage", True),
              ("robot_description", "std_msgs/msg/String", True),
              ("joint_states", "sensor_msgs/msg/JointState", False)]
    for eid, (topic, ros_type, latched) in enumerate(topics, start=2):
        def on_sample(sample, topic=topic, ros_type=ros_type):
            if sample.attachment is None or len(sample.attachment.to_bytes()) != 33:
                emit({"bad_attachment": topic})
                return
            msg = STORE.deserialize_cdr(sample.payload.to_bytes(), ros_type)
            if topic in ("tf", "tf_static"):
                for t in msg.transforms:
                    tr, q = t.transform.translation, t.transform.rotation
                    emit({topic: {"parent": t.header.frame_id, "child": t.child_frame_id,
                                  "sec": t.header.stamp.sec, "nanosec": t.header.stamp.nanosec,
                                  "value": [tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w]}})
            elif topic == "robot_description":
                emit({topic: {"key": str(sample.key_expr), "length": len(msg.data),
                              "sha256": hashlib.sha256(msg.data.encode()).hexdigest()}})
            else:
                emit({"joint_state": {"key": str(sample.key_expr), "name": list(msg.name),
                                      "position": msg.position.tolist(),
                                      "sec": msg.header.stamp.sec,
                                      "nanosec": msg.header.stamp.nanosec}})

        options = {}
        if latched:
            depth = 100 if topic == "tf_static" else 1
            options = dict(history=zext.HistoryConfig(detect_late_publishers=True,
                                                      max_samples=depth),
                           recovery=zext.RecoveryConfig(periodic_queries=None, heartbeat=True),
                           subscriber_detection=True)
        qos = (":1:,100:,:,:,," if topic == "tf_static" else ":1:,1:,:,:,,") if latched \
            else "::,100:,:,:,,"
        keep.append(zext.declare_advanced_subscriber(
            s, key(domain, namespace, topic, ros_type), on_sample, **options))
        keep.append(s.liveliness().declare_token(
            token(domain, zid, eid, "MS", namespace, node, topic, ros_type, qos)))
    emit({"ready": "listen"})
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    s.close()


if __name__ == "__main__":
    main()
