"""Benchmark: RobotStatePublisher for a 30+-joint humanoid at 500 joint states per second.

    python -m bench robot_state_publisher [--seconds 5] [--rate 500] [--urdf PATH] [--repeat 2000]
    (--quick: 1 s per window, 300 repeats)

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
import statistics
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import PY, Child, Run

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


def cpu_run(address: str, urdf: str, frequency: float, rate: int, seconds: float
            ) -> dict[str, Any]:
    from tf2py import Buffer, JointStatePublisher, RobotModel, TransformListener

    model = RobotModel.from_urdf(urdf)
    proc = Child([PY, "-m", "bench.robot_state_publisher", "--child", address, urdf,
                  str(frequency)], stdin=True, drain=False)
    try:
        proc.wait_line('{"ready"')
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
            proc.tell("start")
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
            proc.tell("stop")
            result = json.loads(proc.wait_line('{"cpu"'))
            result["heard_transforms"] = tl.stats()["received_transforms"] - before
        result.update(sent=n, sent_wall=sent_wall, frequency=frequency)
        return result
    finally:
        proc.stop()


def per_transform(address: str, urdf: str, repeat: int) -> dict[str, Any]:
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


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench robot_state_publisher",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0 if run.quick else 5.0)
    parser.add_argument("--rate", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=300 if run.quick else 2000)
    parser.add_argument("--urdf", default=str(TALOS))
    args = parser.parse_args(argv)
    from tf2py import Core

    cpu = run.table(f"RobotStatePublisher's CPU, {args.rate} joint states/s for {args.seconds:g} s",
                    ["publish_frequency", "joint states", "RSP heard", "sent on /tf",
                     "transforms heard", "CPU % of a core", "µs per joint state"],
                    [18, 13, 10, 12, 17, 16, 18])
    with Core("tcp://127.0.0.1:0") as core:
        for frequency in (20.0, 1000.0):
            r = cpu_run(core.address, args.urdf, frequency, args.rate, args.seconds)
            share = 100 * r["cpu"] / r["wall"]
            per = 1e6 * r["cpu"] / max(1, r["received"])
            cpu.add(f"{frequency:.0f} Hz", r["sent"], r["received"], r["published"],
                    r["heard_transforms"], f"{share:.1f}", f"{per:.0f}",
                    frequency=frequency, cpu_percent=share, us_per_joint_state=per,
                    received=r["received"], sent=r["sent"])
        p = per_transform(core.address, args.urdf, args.repeat)
    b = p["broadcaster"]
    table = run.table(f"per transform on /tf ({p['transforms']} per message, median of "
                      f"{args.repeat})", ["path", "ns", "vs broadcaster"], [56, 7, 14])
    for key, label in (("broadcaster", "TransformBroadcaster.send_transform (objects ready)"),
                       ("rsp_send", "RobotStatePublisher's /tf: send_columns of its rows"),
                       ("user_loop", "model.transforms(q) + send_transform (a user's loop)"),
                       ("rsp_message", "RobotStatePublisher, one joint state, whole path"),
                       ("rsp_publish", "RobotStatePublisher.publish(positions)")):
        table.add(label, f"{p[key]:.0f}", f"{p[key] / b:.2f}x", ns=p[key], ratio=p[key] / b)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        sys.exit("run it as: python -m bench robot_state_publisher")
