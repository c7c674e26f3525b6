"""zenoh:// against ros2:// and tcp:// on one machine, in the same run: a tf2py broadcaster
process sends single transforms at a paced rate (stamp = the wall clock at sending) to a tf2py
TransformListener process (filling a real Buffer); latency is the receipt wall clock minus the
stamp (p50/p99), CPU is each process's CPU time per transform.

    python -m bench zenoh_bus [--count 3000] [--rate 1000]   (--quick: 300 transforms)

zenoh:// runs through a `tf2py router` process on loopback (rmw_zenoh's layout: peers behind
a local router, peer-to-peer data); tcp:// through a tf2py core process; ros2:// over Cyclone
DDS with localhost-only discovery (skipped without the ros2 extra). Prints the ratios of
zenoh:// to the other two (target: no dearer than ros2://).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any

from bench.harness import (
    PY,
    Child,
    Run,
    free_port,
    percentile,
    start_core,
    tf2py_command,
    threads_cpu,
)


def child_send(address: str, count: int, rate: float) -> None:
    import tf2py
    from tf2py import TransformBroadcaster
    from tf2py.buffer.messages import TransformStamped

    with TransformBroadcaster(core=address) as broadcaster:
        print(json.dumps({"ready": True}), flush=True)
        sys.stdin.readline()  # the receiver is up
        t = TransformStamped()
        t.header.frame_id = "odom"
        t.child_frame_id = "base_link"
        t.transform.rotation.w = 1.0
        cpu0 = time.process_time()
        start = time.monotonic()
        for i in range(count):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            t.header.stamp = tf2py.Time.from_nanoseconds(time.time_ns())
            t.transform.translation.x = float(i)
            broadcaster.send_transform(t)
        cpu = time.process_time() - cpu0
        time.sleep(1.0)
    print(json.dumps({"cpu_per_transform_us": cpu / count * 1e6}), flush=True)


def child_receive(address: str, count: int) -> None:
    from tf2py import Buffer
    from tf2py.transport.listener import TransformSubscriber

    buffer = Buffer()
    latencies: list[int] = []

    def on_batch(batch: Any) -> None:
        now = time.time_ns()
        rows = batch.transforms
        buffer.set_transforms(rows.parents, rows.children, rows.stamps_ns, rows.values,
                              batch.authority, batch.is_static)
        latencies.append(now - int(rows.stamps_ns[0]))

    with TransformSubscriber(core=address, on_batch=on_batch):
        print(json.dumps({"ready": True}), flush=True)
        cpu0 = time.process_time()
        threads0 = threads_cpu()
        deadline = time.monotonic() + 10 + count / 100
        while len(latencies) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        cpu = time.process_time() - cpu0
        threads1 = threads_cpu()
    per = 1e6 / max(1, len(latencies))
    by_thread = {name: round((seconds - threads0.get(name, 0.0)) * per, 1)
                 for name, seconds in threads1.items()}
    print(json.dumps({"received": len(latencies),
                      "threads_us": {k: v for k, v in by_thread.items() if v >= 0.5},
                      "p50_us": percentile(latencies or [0], 50) / 1e3,
                      "p99_us": percentile(latencies or [0], 99) / 1e3,
                      "cpu_per_transform_us": cpu / max(1, len(latencies)) * 1e6}), flush=True)


def measure(address: str, count: int, rate: float, env: dict[str, str]) -> dict[str, Any]:
    me = [PY, "-m", "bench.zenoh_bus"]
    receiver = Child([*me, "--child", "receive", address, str(count)], env=env, drain=False)
    sender = Child([*me, "--child", "send", address, str(count), str(rate)], env=env, stdin=True,
                   drain=False)
    try:
        for p in (receiver, sender):
            p.wait_line('{"ready"')
        time.sleep(1.0)  # discovery settles (DDS, Zenoh gossip)
        sender.tell("go")
        got = json.loads(receiver.wait_line('{"received"', 60 + count / 100))
        sent = json.loads(sender.wait_line('{"cpu_per_transform_us"'))
    finally:
        for p in (receiver, sender):
            p.stop(grace=5)
    return {"received": got["received"], "p50_us": got["p50_us"], "p99_us": got["p99_us"],
            "receiver_cpu_us": got["cpu_per_transform_us"],
            "receiver_threads_us": got["threads_us"],
            "sender_cpu_us": sent["cpu_per_transform_us"]}


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench zenoh_bus",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300 if run.quick else 3000)
    parser.add_argument("--rate", type=float, default=1000.0)
    args = parser.parse_args(argv)
    count, rate = args.count, args.rate
    env = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
           "ROS_DOMAIN_ID": str(random.randint(30, 99))}
    helpers: list[Child] = []
    results: dict[str, dict[str, Any]] = {}
    try:
        router_port = free_port()
        helpers.append(Child(tf2py_command("router", "--listen", f"tcp/127.0.0.1:{router_port}"),
                             env=env, ready="ready"))
        core = start_core()
        helpers.append(core)
        schemes = {"zenoh": f"zenoh://tcp/127.0.0.1:{router_port}", "tcp": core.address}
        try:
            import cyclonedds  # noqa: F401

            schemes["ros2"] = "ros2://"
        except ImportError:
            run.note("ros2:// skipped (no ros2 extra)")
        table = run.table(f"{count} single transforms at {rate:g}/s, broadcaster process -> "
                          "listener process", ["bus", "received", "p50 µs", "p99 µs",
                                               "receiver CPU µs/tf", "sender CPU µs/tf"],
                          [7, 9, 8, 8, 19, 17])
        for name, address in schemes.items():
            results[name] = r = measure(address, count, rate, env)
            table.add(name, f"{r['received']:.0f}/{count}", f"{r['p50_us']:.0f}",
                      f"{r['p99_us']:.0f}", f"{r['receiver_cpu_us']:.1f}",
                      f"{r['sender_cpu_us']:.1f}", **r)
            run.note(f"{name} receiver, CPU per transform by thread: " + ", ".join(
                f"{thread} {us:.0f} µs" for thread, us in sorted(
                    r["receiver_threads_us"].items(), key=lambda kv: -kv[1])))
    finally:
        for h in helpers:
            h.stop()
    z = results["zenoh"]
    for other in ("ros2", "tcp"):
        if other in results:
            o = results[other]
            run.note(f"zenoh/{other}: p50 {z['p50_us'] / o['p50_us']:.2f}x  "
                     f"p99 {z['p99_us'] / o['p99_us']:.2f}x  receiver CPU "
                     f"{z['receiver_cpu_us'] / o['receiver_cpu_us']:.2f}x  sender CPU "
                     f"{z['sender_cpu_us'] / o['sender_cpu_us']:.2f}x")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        if sys.argv[2] == "send":
            child_send(sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
        else:
            child_receive(sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit("run it as: python -m bench zenoh_bus")
