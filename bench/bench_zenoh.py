"""zenoh:// against ros2:// and tcp:// on one machine, in the same run: a tf2py broadcaster
process sends single transforms at a paced rate (stamp = the wall clock at sending) to a tf2py
TransformListener process (filling a real Buffer); latency is the receipt wall clock minus the
stamp (p50/p99), CPU is each process's CPU time per transform.

    .venv/bin/python bench/bench_zenoh.py [--count 3000] [--rate 1000]

zenoh:// runs through a `tf2py router` process on loopback (rmw_zenoh's layout: peers behind
a local router, peer-to-peer data); tcp:// through a tf2py core process; ros2:// over Cyclone
DDS with localhost-only discovery (skipped without the ros2 extra). Prints the ratios of
zenoh:// to the other two (target: no dearer than ros2://).
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
        deadline = time.monotonic() + 10 + count / 100
        while len(latencies) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        cpu = time.process_time() - cpu0
    lat = sorted(latencies) or [0]
    print(json.dumps({"received": len(latencies),
                      "p50_us": lat[len(lat) // 2] / 1e3,
                      "p99_us": lat[min(len(lat) - 1, int(len(lat) * 0.99))] / 1e3,
                      "cpu_per_transform_us": cpu / max(1, len(latencies)) * 1e6}), flush=True)


def _spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env)


def measure(address: str, count: int, rate: float, env: dict[str, str]) -> dict[str, float]:
    me = [sys.executable, os.path.abspath(__file__)]
    receiver = _spawn([*me, "--child", "receive", address, str(count)], env)
    sender = _spawn([*me, "--child", "send", address, str(count), str(rate)], env)
    try:
        for p in (receiver, sender):
            assert p.stdout is not None and json.loads(p.stdout.readline())["ready"]
        time.sleep(1.0)  # discovery settles (DDS, Zenoh gossip)
        assert sender.stdin is not None
        sender.stdin.write("go\n")
        sender.stdin.flush()
        assert receiver.stdout is not None and sender.stdout is not None
        got = json.loads(receiver.stdout.readline())
        sent = json.loads(sender.stdout.readline())
    finally:
        for p in (receiver, sender):
            p.kill()
            p.wait(10)
    return {"received": got["received"], "p50_us": got["p50_us"], "p99_us": got["p99_us"],
            "receiver_cpu_us": got["cpu_per_transform_us"],
            "sender_cpu_us": sent["cpu_per_transform_us"]}


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        if sys.argv[2] == "send":
            child_send(sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
        else:
            child_receive(sys.argv[3], int(sys.argv[4]))
        return 0
    count = int(sys.argv[sys.argv.index("--count") + 1]) if "--count" in sys.argv else 3000
    rate = float(sys.argv[sys.argv.index("--rate") + 1]) if "--rate" in sys.argv else 1000.0
    env = dict(os.environ, PYTHONUNBUFFERED="1", ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               ROS_DOMAIN_ID=str(random.randint(30, 99)))
    tf2py = [sys.executable, "-m", "tf2py.cli.main"]
    helpers: list[subprocess.Popen[str]] = []
    results: dict[str, dict[str, float]] = {}
    try:
        router_port = _free_port()
        helpers.append(subprocess.Popen([*tf2py, "router", "--listen",
                                         f"tcp/127.0.0.1:{router_port}"],
                                        stdout=subprocess.PIPE, text=True, env=env))
        core = f"tcp://127.0.0.1:{_free_port()}"
        helpers.append(subprocess.Popen([*tf2py, "core", "--address", core],
                                        stdout=subprocess.PIPE, text=True, env=env))
        for h in helpers:
            assert h.stdout is not None
            core_line = h.stdout.readline()
            if "ready at" in core_line:
                core = core_line.split("ready at")[1].strip()
        schemes = {"zenoh": f"zenoh://tcp/127.0.0.1:{router_port}", "tcp": core}
        try:
            import cyclonedds  # noqa: F401

            schemes["ros2"] = "ros2://"
        except ImportError:
            print("ros2:// skipped (no ros2 extra)")
        for name, address in schemes.items():
            results[name] = measure(address, count, rate, env)
            r = results[name]
            print(f"{name:6s} {address:40s} received {r['received']:.0f}/{count}  "
                  f"p50 {r['p50_us']:8.0f} us  p99 {r['p99_us']:8.0f} us  "
                  f"receiver CPU {r['receiver_cpu_us']:6.1f} us/tf  "
                  f"sender CPU {r['sender_cpu_us']:6.1f} us/tf", flush=True)
    finally:
        for h in helpers:
            h.terminate()
            h.wait(10)
    z = results["zenoh"]
    for other in ("ros2", "tcp"):
        if other in results:
            o = results[other]
            print(f"zenoh/{other}: p50 {z['p50_us'] / o['p50_us']:.2f}x  "
                  f"p99 {z['p99_us'] / o['p99_us']:.2f}x  receiver CPU "
                  f"{z['receiver_cpu_us'] / o['receiver_cpu_us']:.2f}x  sender CPU "
                  f"{z['sender_cpu_us'] / o['sender_cpu_us']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
