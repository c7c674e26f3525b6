"""tf2py inside a real rclpy node (ROS 2 Jazzy, Python 3.12): a ``Buffer`` fed straight from an
rclpy subscription, rclpy's own messages handed to every call, results published back out.
Runs in the peer environment with this checkout's tf2py on PYTHONPATH (tests/ros2/
peer_tf2py.py); prints one JSON object per line, which tests/ros2/test_rclpy_native.py checks.

The node publishes on /tf what rclpy_peer.py's ``transform(i, j)`` builds (rclpy messages,
stamps ``sec``/``nanosec``) and subscribes to /tf itself, inserting each message's
transforms as they are; the main thread meanwhile waits in ``lookup_transform`` with a
timeout, woken by those inserts. Then it transforms rclpy's stamped point, vector, pose and
transform, and publishes the lookup's result on /tf_out with ``tf2py.convert``, where a
second subscription receives it.
"""

import json
import sys
import threading

import rclpy
import rclpy.duration
import rclpy.time
from geometry_msgs.msg import (
    PointStamped,
    PoseStamped,
    TransformStamped,
    Vector3Stamped,
)
from rclpy.executors import SingleThreadedExecutor
from tf2_msgs.msg import TFMessage

import tf2py
from rclpy_peer import TF_QOS, transform


def say(**fields):
    print(json.dumps(fields), flush=True)


def values(t):
    tr, q = t.transform.translation, t.transform.rotation
    return [tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w]


def main():
    rclpy.init()
    node = rclpy.create_node("tf2py_rclpy_native")
    buffer = tf2py.Buffer()
    core = tf2py.BufferCore()
    received = []
    out = []
    node.create_subscription(
        TFMessage, "/tf",
        lambda msg: [(buffer.set_transform(t, "rclpy_native"), core.set_transform(t, "x"),
                      received.append(t)) for t in msg.transforms], TF_QOS)
    node.create_subscription(TFMessage, "/tf_out", lambda msg: out.extend(msg.transforms),
                             TF_QOS)
    publisher = node.create_publisher(TFMessage, "/tf", TF_QOS)
    out_publisher = node.create_publisher(TFMessage, "/tf_out", TF_QOS)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True, name="spin")
    spinner.start()
    say(event="ready", tf2py=tf2py.__file__, python=sys.version.split()[0])

    def publish():
        for i in range(3):
            publisher.publish(TFMessage(transforms=[transform(i, j) for j in range(2)]))

    # Subscribed to ourselves: publish once the subscription has matched the publisher.
    deadline = node.get_clock().now() + rclpy.duration.Duration(seconds=30)
    while publisher.get_subscription_count() == 0 and node.get_clock().now() < deadline:
        threading.Event().wait(0.01)
    threading.Timer(0.0, publish).start()
    # Message 1's stamp, as rclpy's Time; the wait is woken by the subscription's insert.
    stamp = rclpy.time.Time(seconds=1001, nanoseconds=250_000_000)
    looked_up = buffer.lookup_transform("map", "base_link", stamp,
                                        timeout=rclpy.duration.Duration(seconds=30))
    say(event="lookup", type=type(looked_up).__name__, frame=looked_up.header.frame_id,
        child=looked_up.child_frame_id, sec=looked_up.header.stamp.sec,
        nanosec=looked_up.header.stamp.nanosec, values=values(looked_up))
    # Wait for all six inserts before the rest (stamps as builtin_interfaces Time: msg.header.stamp).
    last = transform(2, 1)
    buffer.lookup_transform("map", "frame_1", last.header.stamp, timeout=30.0)
    # That lookup returns as soon as the buffer holds the last transform, which the callback
    # inserts before it inserts into the core and counts it: wait for the count too.
    deadline = node.get_clock().now() + rclpy.duration.Duration(seconds=30)
    while len(received) < 6 and node.get_clock().now() < deadline:
        threading.Event().wait(0.01)
    say(event="inserted", received=len(received),
        stamp_type=type(received[0].header.stamp).__module__ + "." +
        type(received[0].header.stamp).__name__,
        can=buffer.can_transform("base_link", "frame_1", received[2].header.stamp),
        core=values(core.lookup_transform("map", "base_link", received[4].header.stamp)))

    # rclpy's stamped messages through Buffer.transform: the same class comes back.
    point = PointStamped()
    point.header.frame_id = "base_link"
    point.header.stamp = received[2].header.stamp  # message 1, base_link: 1001.25 s
    point.point.x, point.point.y, point.point.z = 1.0, 2.0, 3.0
    vector = Vector3Stamped(header=point.header)
    vector.vector.x = 1.0
    pose = PoseStamped(header=point.header)
    pose.pose.position.x = 1.0
    pose.pose.orientation.w = 1.0
    child = TransformStamped(header=point.header, child_frame_id="tool")
    child.transform.translation.z = 0.5
    child.transform.rotation.w = 1.0
    for name, message in (("point", point), ("vector", vector), ("pose", pose),
                          ("transform", child)):
        result = buffer.transform(message, "map")
        if name == "point":
            numbers = [result.point.x, result.point.y, result.point.z]
        elif name == "vector":
            numbers = [result.vector.x, result.vector.y, result.vector.z]
        elif name == "pose":
            p, o = result.pose.position, result.pose.orientation
            numbers = [p.x, p.y, p.z, o.x, o.y, o.z, o.w]
        else:
            numbers = values(result)
        say(event="transformed", what=name, type=f"{type(result).__module__}."
            f"{type(result).__name__}", frame=result.header.frame_id,
            sec=result.header.stamp.sec, nanosec=result.header.stamp.nanosec, values=numbers,
            child=getattr(result, "child_frame_id", None))

    # The lookup's result published back out by rclpy.
    publisher_msg = TFMessage(transforms=[tf2py.convert(looked_up, TransformStamped)])
    out_publisher.publish(publisher_msg)
    deadline = node.get_clock().now() + rclpy.duration.Duration(seconds=30)
    while not out and node.get_clock().now() < deadline:
        threading.Event().wait(0.01)
    if out:
        t = out[0]
        say(event="published", frame=t.header.frame_id, child=t.child_frame_id,
            sec=t.header.stamp.sec, nanosec=t.header.stamp.nanosec, values=values(t))
    # And back: rclpy's message into tf2py's class.
    back = tf2py.convert(out[0] if out else publisher_msg.transforms[0], tf2py.TransformStamped)
    say(event="back", type=type(back).__module__, equal=back == looked_up)
    executor.shutdown()
    # the spinning thread must be out of rclpy's C++ before the interpreter exits: a thread
    # still waiting inside it at exit aborts the process ("terminate called without an
    # active exception", exit -6)
    spinner.join(timeout=30)
    node.destroy_node()
    rclpy.try_shutdown()
    say(event="done", spinner_ended=not spinner.is_alive())


if __name__ == "__main__":
    main()
