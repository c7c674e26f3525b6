"""Benchmark: RobotStatePublisher for a 30+-joint humanoid at 500 joint states per second.

    .venv/bin/python bench/bench_robot_state_publisher.py [--seconds 5] [--rate 500]
        [--urdf PATH] [--repeat 2000]

Part 1, CPU: a tf2py core runs in this process; the RobotStatePublisher runs alone in a child
process (``--child``) and reports its own CPU time (``time.process_time``: every thread of it)
over the window in which this process sends ``rate`` joint states a second of every movable
joint of the humanoid (TALOS reduced, 32 joints, from example-robot-data) for ``seconds``
seconds, paced by absolute deadlines. Twice: at ROS's default ``publish_frequency`` (20 Hz: a
message is sent on /tf at most every 50 ms of stamps) and at 1000 Hz (every message goes out
on /tf: 32 transforms each). A TransformListener here counts what arrives.

Part 2, cost per transform on /tf, in one process and one run, on the same core, median of
``repeat`` sends of the humanoid's 32 moving joints, per transform:

- TransformBroadcaster.send_transform of the 32 as ready-made TransformStamped objects (the
  sending alone: a user's loop would also have to compute and build them);
- the RobotStatePublisher's sending of the same rows as columns (``send_columns``), i.e. the
  /tf it sends, its kinematics left out;
- a user's loop without it: ``model.transforms(q)`` then ``send_transform``;
- the RobotStatePublisher's whole path for one received joint state (decode the CDR, map the
  names, the rate check, the kinematics, send as columns), and its ``.publish(positions)``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
TALOS = (Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix/share/example-robot-data"
         / "robots/talos_data/robots/talos_reduced.urdf")


def child(address: str, urdf: str, frequency: float) -> None:
    """The RobotStatePublisher process: reports CPU time between two lines on stdin."""
    from tf2py import RobotModel, RobotStatePublisher

    model = RobotModel.from_urdf(urdf)
    with RobotStatePublisher(model, address, publish_frequency=frequency) as rsp:
        print(json.dumps({"ready": len(model.joint_names)}), flush=True)
        sys.stdin.readline()  # start
        cpu0, wall0 = time.process_time(), time.monotonic()
        stats0 = rsp.stats()
        sys.stdin.readline()  # stop
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        stats = rsp.stats()
        print(json.dumps({"cpu": cpu, "wall": wall, "stats": stats,
                          "received": stats["received_messages"] - stats0["received_messages"],
                          "published": stats["published_messages"]
                          - stats0["published_messages"]}), flush=True)


def cpu_run(address: str, urdf: str, frequency: float, rate: int, seconds: float) -> dict:
    from tf2py import Buffer, JointStatePublisher, RobotModel, TransformListener

    model = RobotModel.from_urdf(urdf)
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", address, urdf, str(frequency)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        json.loads(proc.stdout.readline())
        names = model.joint_names
        q = np.zeros(len(names))
        buffer = Buffer()
        with JointStatePublisher(address) as jsp, TransformListener(buffer, address) as tl:
            # Warm up until the child hears us (PUB/SUB joins in the background).
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not buffer.can_transform(
                    model.root, "arm_left_7_link", 0):
                jsp.publish(names, q, stamp=time.time())
                time.sleep(0.01)
            time.sleep(0.2)
            before = tl.stats()["received_transforms"]
            proc.stdin.write("start\n")
            proc.stdin.flush()
            n = int(rate * seconds)
            t0 = time.monotonic()
            for k in range(n):
                target = t0 + k / rate
                delay = target - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                q[:] = 0.3 * np.sin(k * 0.01 + np.arange(len(q)))
                jsp.publish(names, q, stamp=time.time())
            sent_wall = time.monotonic() - t0
            time.sleep(0.3)  # the last messages through
            proc.stdin.write("stop\n")
            proc.stdin.flush()
            result = json.loads(proc.stdout.readline())
            result["heard_transforms"] = tl.stats()["received_transforms"] - before
        result.update(sent=n, sent_wall=sent_wall, frequency=frequency)
        return result
    finally:
        proc.stdin.close()
        proc.wait(10)


def per_transform(address: str, urdf: str, repeat: int) -> dict:
    from tf2py import RobotModel, RobotStatePublisher, Time, TransformBroadcaster
    from tf2py.robot.joint_state import encode_joint_state

    model = RobotModel.from_urdf(urdf)
    q = np.linspace(-0.3, 0.3, len(model.joint_names))
    transforms = model.transforms(q, stamp=Time(5, 0))
    m = len(transforms)
    samples = [encode_joint_state(model.joint_names, q + 1e-6 * k, 10**9 * (10 + k))
               for k in range(repeat)]
    rows = model.movable_rows(q, 5 * 10**9)
    times: dict[str, list[float]] = {k: [] for k in (
        "broadcaster", "rsp_send", "user_loop", "rsp_message", "rsp_publish")}
    with TransformBroadcaster(address) as tb, \
            RobotStatePublisher(model, address, listen=False, ignore_timestamp=False,
                                publish_frequency=1000.0) as rsp:
        on_message = rsp._on_message  # the path a received joint state takes
        for k in range(repeat):
            t = time.perf_counter_ns()
            tb.send_transform(transforms)
            times["broadcaster"].append(time.perf_counter_ns() - t)
            t = time.perf_counter_ns()
            tb.send_columns(rows.parents, rows.children, rows.stamps_ns, rows.values)
            times["rsp_send"].append(time.perf_counter_ns() - t)
            t = time.perf_counter_ns()
            tb.send_transform(model.transforms(q, stamp=k + 0.25))
            times["user_loop"].append(time.perf_counter_ns() - t)
            t = time.perf_counter_ns()
            on_message(samples[k])
            times["rsp_message"].append(time.perf_counter_ns() - t)
            t = time.perf_counter_ns()
            rsp.publish(q, stamp=k + 0.5)
            times["rsp_publish"].append(time.perf_counter_ns() - t)
        assert rsp.stats()["published_messages"] == 2 * repeat, rsp.stats()
    return {name: statistics.median(v) / m for name, v in times.items()} | {"transforms": m}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rate", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--urdf", default=str(TALOS))
    parser.add_argument("--child", nargs=3, metavar=("ADDRESS", "URDF", "HZ"))
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], float(args.child[2]))
        return 0
    from tf2py import Core

    print(f"python {platform.python_version()}, {os.cpu_count()} cpus, {platform.machine()}")
    with Core("tcp://127.0.0.1:0") as core:
        for frequency in (20.0, 1000.0):
            r = cpu_run(core.address, args.urdf, frequency, args.rate, args.seconds)
            print(f"publish_frequency {frequency:6.0f} Hz: {r['sent']} joint states in "
                  f"{r['sent_wall']:.2f} s; RSP heard {r['received']}, sent {r['published']} "
                  f"on /tf ({r['heard_transforms']} transforms heard); "
                  f"CPU {100 * r['cpu'] / r['wall']:.1f} % of a core "
                  f"({1e6 * r['cpu'] / max(1, r['received']):.0f} us per joint state)")
        p = per_transform(core.address, args.urdf, args.repeat)
    b = p["broadcaster"]
    print(f"per transform on /tf ({p['transforms']} per message, median of {args.repeat}):")
    for key, label in (("broadcaster", "TransformBroadcaster.send_transform (objects ready)"),
                       ("rsp_send", "RobotStatePublisher's /tf: send_columns of its rows"),
                       ("user_loop", "model.transforms(q) + send_transform (a user's loop)"),
                       ("rsp_message", "RobotStatePublisher, one joint state, whole path"),
                       ("rsp_publish", "RobotStatePublisher.publish(positions)")):
        print(f"  {label:56s} {p[key]:6.0f} ns  {p[key] / b:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
