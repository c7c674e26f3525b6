"""A reference rmw_zenoh peer for /tf and /tf_static, written from rmw_zenoh's conventions
(docs/design.md, liveliness_utils.cpp, attachment_helpers.cpp, rmw_publisher_data.cpp,
rmw_subscription_data.cpp) with zenoh-python directly and rosbags for the CDR: it imports
nothing of tf2py. Run as a separate process by the tests.

    reference_peer.py ROUTER_LOCATOR DOMAIN NAMESPACE publish-static PARENT CHILD X
    reference_peer.py ROUTER_LOCATOR DOMAIN NAMESPACE publish PARENT CHILD COUNT
    reference_peer.py ROUTER_LOCATOR DOMAIN NAMESPACE listen
    reference_peer.py ROUTER_LOCATOR DOMAIN NAMESPACE garbage

Prints one JSON object per line: {"ready": ...} once declared, {"sample": ...} per received
sample (listen), {"token": key, "kind": "PUT"|"DELETE"} per liveliness token seen. Stops
on SIGINT.
"""

from __future__ import annotations

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
TF_TYPE = "tf2_msgs/msg/TFMessage"
DDS_TYPE = "tf2_msgs::msg::dds_::TFMessage_"
HASH = STORE.hash_rihs01(TF_TYPE)
lock = threading.Lock()


def emit(obj: dict) -> None:
    with lock:
        print(json.dumps(obj), flush=True)


def session(router: str) -> zenoh.Session:
    config = zenoh.Config()
    config.insert_json5("mode", '"peer"')
    config.insert_json5("connect/endpoints", json.dumps([router]))
    config.insert_json5("listen/endpoints", '["tcp/127.0.0.1:0"]')
    config.insert_json5("scouting/multicast/enabled", "false")
    config.insert_json5("timestamping/enabled", "true")
    return zenoh.open(config)


def topic_key(domain: str, namespace: str, topic: str) -> str:
    fqn = (namespace.rstrip("/") + "/" + topic).strip("/")
    return f"{domain}/{fqn}/{DDS_TYPE}/{HASH}"


def token(domain, zid, nid, eid, kind, namespace, node, topic=None, qos=None) -> str:
    ns = namespace.replace("/", "%")
    parts = ["@ros2_lv", domain, zid, str(nid), str(eid), kind, "%", ns, node]
    if topic is not None:
        fqn = namespace.rstrip("/") + "/" + topic
        parts += [fqn.replace("/", "%"), DDS_TYPE, HASH, qos]
    return "/".join(parts)


def gid(key: str) -> bytes:
    digest = xxhash.xxh3_128(key.encode()).digest()  # big-endian: high 64 bits first
    return digest[8:][::-1] + digest[:8][::-1]


def attachment(sequence: int, gid_bytes: bytes) -> bytes:
    return zext.z_serialize((zext.Int64(sequence), zext.Int64(time.time_ns()),
                             gid_bytes)).to_bytes()


def tf_message(parent: str, child: str, x: float, sec: int) -> bytes:
    m = STORE.types
    header = m["std_msgs/msg/Header"](stamp=m["builtin_interfaces/msg/Time"](sec=sec, nanosec=5),
                                      frame_id=parent)
    transform = m["geometry_msgs/msg/Transform"](
        translation=m["geometry_msgs/msg/Vector3"](x=x, y=2.0, z=3.0),
        rotation=m["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0))
    stamped = m["geometry_msgs/msg/TransformStamped"](header=header, child_frame_id=child,
                                                       transform=transform)
    return bytes(STORE.serialize_cdr(m[TF_TYPE](transforms=[stamped]), TF_TYPE))


def main() -> None:
    router, domain, namespace, command, *rest = sys.argv[1:]
    s = session(router)
    zid = str(s.zid())
    node = f"reference_{os.getpid()}"
    keep = [s.liveliness().declare_token(token(domain, zid, 0, 0, "NN", namespace, node))]

    def on_token(sample: zenoh.Sample) -> None:
        emit({"token": str(sample.key_expr), "kind": str(sample.kind).split(".")[-1]})

    keep.append(s.liveliness().declare_subscriber(f"@ros2_lv/{domain}/**", on_token,
                                                  history=True))
    if command in ("publish-static", "publish", "garbage"):
        static = command == "publish-static"
        topic = "tf_static" if static else "tf"
        qos = ":1:,1:,:,:,," if static else "::,100:,:,:,,"
        tok = token(domain, zid, 0, 1, "MP", namespace, node, topic, qos)
        options = {}
        if static:
            options = dict(cache=zext.CacheConfig(max_samples=1), publisher_detection=True,
                           sample_miss_detection=zext.MissDetectionConfig(
                               heartbeat=None, sporadic_heartbeat=0.5))
        pub = zext.declare_advanced_publisher(
            s, topic_key(domain, namespace, topic),
            congestion_control=zenoh.CongestionControl.DROP,
            reliability=zenoh.Reliability.RELIABLE, **options)
        keep += [pub, s.liveliness().declare_token(tok)]
        my_gid = gid(tok)
        if command == "garbage":
            time.sleep(1.0)  # let the subscriber's interest reach this new publisher
            pub.put(b"\x00\x01\x00\x00garbage", attachment=attachment(1, my_gid))
            pub.put(tf_message("a", "b", 1.0, 1))  # no attachment
            pub.put(b"\x00\x01\x00\x00" + b"\x05\x00\x00\x00" * 3, attachment=b"short")
            clock = STORE.types["rosgraph_msgs/msg/Clock"](
                clock=STORE.types["builtin_interfaces/msg/Time"](sec=1, nanosec=0))
            pub.put(bytes(STORE.serialize_cdr(clock, "rosgraph_msgs/msg/Clock")),
                    attachment=attachment(2, my_gid))  # a wrong-typed sample
            pub.put(tf_message("good_parent", "good_child", 7.0, 9),
                    attachment=attachment(3, my_gid))
        elif static:
            pub.put(tf_message(rest[0], rest[1], float(rest[2]), 100),
                    attachment=attachment(1, my_gid))
        emit({"ready": command, "gid": my_gid.hex(), "token": tok})
        if command == "publish":
            for i in range(int(rest[2])):
                pub.put(tf_message(rest[0], rest[1], float(i), 200 + i),
                        attachment=attachment(i + 1, my_gid))
                time.sleep(0.01)
            emit({"sent": int(rest[2])})
    elif command == "listen":
        for topic, static in (("tf", False), ("tf_static", True)):
            def on_sample(sample: zenoh.Sample, topic: str = topic) -> None:
                raw = sample.attachment.to_bytes() if sample.attachment is not None else b""
                seq, stamp, g = zext.z_deserialize(tuple[zext.Int64, zext.Int64, bytes],
                                                   zenoh.ZBytes(raw))
                msg = STORE.deserialize_cdr(sample.payload.to_bytes(), TF_TYPE)
                emit({"sample": {
                    "topic": topic, "key": str(sample.key_expr), "sequence": int(seq),
                    "source_timestamp": int(stamp), "gid": bytes(g).hex(),
                    "transforms": [[t.header.frame_id, t.child_frame_id,
                                    t.header.stamp.sec, t.header.stamp.nanosec,
                                    t.transform.translation.x, t.transform.rotation.w]
                                   for t in msg.transforms]}})

            qos = ":1:,100:,:,:,," if static else "::,100:,:,:,,"
            options = {}
            if static:
                options = dict(history=zext.HistoryConfig(detect_late_publishers=True,
                                                          max_samples=100),
                               recovery=zext.RecoveryConfig(periodic_queries=None,
                                                            heartbeat=True),
                               subscriber_detection=True)
            keep.append(zext.declare_advanced_subscriber(
                s, topic_key(domain, namespace, topic), on_sample, **options))
            keep.append(s.liveliness().declare_token(
                token(domain, zid, 0, 2 if static else 3, "MS", namespace, node, topic, qos)))
        emit({"ready": "listen"})
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:  # the tests stop it with SIGINT
        pass
    s.close()


if __name__ == "__main__":
    main()
