"""One side of bench/ros2.py: a /tf publisher or subscriber, as rclpy (run with the ROS 2 peer
environment's python) or as tf2py (run with tf2py's). Prints one JSON line when done. A script,
not a module of the bench package: the peer's python (rclpy) has no bench.harness, so
its percentiles and CPU time are its own (getrusage).

    ros2_node.py rclpy|tf2py pub COUNT BATCH RATE SUBSCRIBERS
        waits for SUBSCRIBERS readers (and 1 s more, for discovery to settle both ways), then
        sends COUNT messages of BATCH transforms, RATE per second (0: flat out); each stamp is
        the wall clock at sending, frame ids b{j}.
    ros2_node.py rclpy|tf2py sub COUNT BATCH IDLE
        takes /tf until COUNT messages arrived or IDLE s passed without one (60 s for the
        first); reports the
        messages received, the rate between the first and the last, the latency (receipt -
        stamp) percentiles, and its CPU time per transform over that span (getrusage: the
        process's user + system time, every thread). rclpy: a subscription whose callback
        only counts and stamps (an rclpy subscriber doing nothing with the message).
        tf2py: a TransformListener filling a Buffer (latency: receipt to the buffer's
        notification, via a TransformSubscriber-free hook on the listener's insert).
"""

import json
import resource
import sys
import threading
import time


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def sent(count, batch, start, cpu_start):
    """The sender's figures: its rate and its CPU per transform while sending (sleeps
    between paced messages cost no CPU)."""
    elapsed, cpu = time.perf_counter() - start, cpu_s() - cpu_start
    print(json.dumps(dict(sent=count, rate_tf=count * batch / elapsed,
                          cpu_us_per_tf=1e6 * cpu / (count * batch))), flush=True)


def report(received, first, last, cpu_first, cpu_last, latencies, batch):
    import statistics

    lat = sorted(latencies[len(latencies) // 10:]) or [0]  # without the first 10 %

    def pct(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))] / 1e3
    span = max(last - first, 1e-9)
    print(json.dumps(dict(
        received=received, transforms=received * batch,
        rate_msgs=(received - 1) / span if received > 1 else 0.0,
        rate_tf=(received - 1) * batch / span if received > 1 else 0.0,
        p50_us=pct(0.50), p99_us=pct(0.99), mean_us=statistics.fmean(lat) / 1e3,
        cpu_us_per_tf=1e6 * (cpu_last - cpu_first) / max(1, (received - 1) * batch))),
        flush=True)


def rclpy_side(role, args):
    import rclpy
    from geometry_msgs.msg import TransformStamped
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    from tf2_msgs.msg import TFMessage

    qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.VOLATILE, history=HistoryPolicy.KEEP_LAST)
    rclpy.init()
    node = rclpy.create_node(f"bench_rclpy_{role}")
    if role == "pub":
        count, batch, rate, subscribers = int(args[0]), int(args[1]), float(args[2]), int(args[3])
        pub = node.create_publisher(TFMessage, "/tf", qos)
        while pub.get_subscription_count() < subscribers:
            time.sleep(0.05)
        time.sleep(1.0)
        msg = TFMessage()
        for j in range(batch):
            t = TransformStamped()
            t.header.frame_id = "map"
            t.child_frame_id = f"b{j}"
            t.transform.rotation.w = 1.0
            msg.transforms.append(t)
        period = 1.0 / rate if rate else 0.0
        start, cpu_start = time.perf_counter(), cpu_s()
        for i in range(count):
            now = time.time_ns()
            for t in msg.transforms:
                t.header.stamp.sec, t.header.stamp.nanosec = divmod(now, 1_000_000_000)
                t.transform.translation.x = float(i)
            pub.publish(msg)
            if period:
                delay = start + (i + 1) * period - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
        sent(count, batch, start, cpu_start)
        time.sleep(1.0)  # let reliable delivery finish
        return
    count, batch, idle = int(args[0]), int(args[1]), float(args[2])
    state = dict(n=0, first=0.0, last=0.0, cpu_first=0.0)
    latencies = []

    def on_msg(msg):
        now = time.time_ns()
        stamp = msg.transforms[0].header.stamp
        latencies.append(now - (stamp.sec * 1_000_000_000 + stamp.nanosec))
        state["n"] += 1
        if state["n"] == 1:
            state["first"], state["cpu_first"] = time.perf_counter(), cpu_s()
        state["last"], state["cpu_last"] = time.perf_counter(), cpu_s()

    node.create_subscription(TFMessage, "/tf", on_msg, qos)
    print(json.dumps(dict(ready=True)), flush=True)
    waited = time.perf_counter()
    while state["n"] < count:
        rclpy.spin_once(node, timeout_sec=0.1)
        if time.perf_counter() - (state["last"] or waited + 60.0) > idle:
            break
    report(state["n"], state["first"], state["last"], state["cpu_first"],
           state.get("cpu_last", 0.0), latencies, batch)


def tf2py_side(role, args):
    import numpy as np

    import tf2py
    from tf2py.transport.ros2.tf import Ros2TransformBroadcaster, Ros2TransformListener

    if role == "pub":
        count, batch, rate, subscribers = int(args[0]), int(args[1]), float(args[2]), int(args[3])
        broadcaster = Ros2TransformBroadcaster("ros2://")
        while broadcaster.matched_listeners() < subscribers:
            time.sleep(0.05)
        time.sleep(1.0)
        parents = ["map"] * batch
        children = [f"b{j}" for j in range(batch)]
        values = np.zeros((batch, 7))
        values[:, 6] = 1.0
        period = 1.0 / rate if rate else 0.0
        start, cpu_start = time.perf_counter(), cpu_s()
        for i in range(count):
            values[:, 0] = i
            broadcaster.send_columns(parents, children, [time.time_ns()] * batch, values)
            if period:
                delay = start + (i + 1) * period - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
        sent(count, batch, start, cpu_start)
        time.sleep(1.0)
        broadcaster.close()
        return
    count, batch, idle = int(args[0]), int(args[1]), float(args[2])
    buffer = tf2py.Buffer()
    latencies = []
    state = dict(n=0, first=0.0, last=0.0, cpu_first=0.0)
    lock = threading.Lock()
    set_transforms, set_values = buffer.set_transforms, buffer.set_transform_values

    def note(stamp_ns):
        latencies.append(time.time_ns() - stamp_ns)
        with lock:
            state["n"] += 1
            if state["n"] == 1:
                state["first"], state["cpu_first"] = time.perf_counter(), cpu_s()
            state["last"], state["cpu_last"] = time.perf_counter(), cpu_s()

    class Timed:  # the real Buffer, noting when each message is in it
        def set_transforms(self, parents, children, stamps, values, authority, is_static=False):
            result = set_transforms(parents, children, stamps, values, authority, is_static)
            note(int(stamps[0]))
            return result

        def set_transform_values(self, parent, child, stamp, *rest):
            result = set_values(parent, child, stamp, *rest)
            note(stamp)
            return result

    listener = Ros2TransformListener(Timed(), "ros2://")
    print(json.dumps(dict(ready=True)), flush=True)
    waited = time.perf_counter()
    while True:
        time.sleep(0.02)
        with lock:
            n, last = state["n"], state["last"]
        if n >= count or time.perf_counter() - (last or waited + 60.0) > idle:
            break
    listener.close()
    report(state["n"], state["first"], state["last"], state["cpu_first"],
           state.get("cpu_last", 0.0), latencies, batch)


if __name__ == "__main__":
    impl, role = sys.argv[1], sys.argv[2]
    (rclpy_side if impl == "rclpy" else tf2py_side)(role, sys.argv[3:])
