"""Benchmark: tf2py.bag.load(..., robot=...) of joint states against loading the same
transforms from /tf.

    .venv/bin/python bench/bench_bag_robot.py [--minutes 10] [--hz 100] [--repeat 5]

Two MCAP files are written first (in a temporary folder, by tf2py's BagWriter):
- joint states: MINUTES of HZ ``sensor_msgs/msg/JointState`` on /joint_states naming the 7
  arm joints of launch/robots/arm.urdf (smooth random motion), nothing on /tf;
- the same recording as robot_state_publisher would have put it on /tf: per joint state one
  ``TFMessage`` holding the 7 joints' transforms at its stamp, and the arm's fixed joint on
  /tf_static (the transforms ``load(..., robot=...)`` makes, written out).

Rows (median and best of N runs, each opening the file afresh, after a warm-up):
- load /tf: ``tf2py.bag.load(tf_bag)`` into a new Buffer;
- load joint states: ``tf2py.bag.load(joint_state_bag, robot=model)`` into a new Buffer
  (the model parsed once beforehand, as a user holding a RobotModel would pass it);
- the same with ``robot=URDF path`` (parsing included).
Target: load joint states <= 2x load /tf. Both buffers are checked to hold the same poses.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
ARM = REPO / "launch" / "robots" / "arm.urdf"
JOINTS = [f"joint{i}" for i in range(1, 8)]
T0_NS = 1_700_000_000 * 1_000_000_000


def write_bags(folder: Path, minutes: float, hz: float) -> tuple[Path, Path, int]:
    from tf2py import RobotModel
    from tf2py.bag import BagWriter
    from tf2py.bag.robot import read_with_robot
    from tf2py.robot.joint_state import (JOINT_STATE_TYPE, JOINT_STATE_TYPE_HASH,
                                         encode_joint_state)

    n = int(minutes * 60 * hz)
    step = int(round(1e9 / hz))
    rng = np.random.default_rng(0)
    t = np.arange(n) / hz
    phases, speeds = rng.uniform(0, 6.3, 7), rng.uniform(0.1, 1.0, 7)
    positions = 0.8 * np.sin(speeds * t[:, None] + phases)
    positions[:, 3] -= 1.55  # joint4's range is [-3.0, -0.1]
    positions[:, 5] += 1.9  # joint6's range is [0.2, 3.6]
    joint_bag = folder / "joint_states.mcap"
    with BagWriter(joint_bag) as writer:
        channel = writer.add_channel(
            "/joint_states", JOINT_STATE_TYPE, "ros2msg", JOINT_STATE_MSG.encode(), "cdr",
            {"topic_type_hash": JOINT_STATE_TYPE_HASH})
        for i in range(n):
            stamp = T0_NS + i * step
            writer.write_message(channel, encode_joint_state(JOINTS, positions[i], stamp), stamp)
    # The /tf recording: exactly the transforms the joint states make, one message each.
    data = read_with_robot(joint_bag, RobotModel.from_urdf(ARM))
    tf_bag = folder / "tf.mcap"
    with BagWriter(tf_bag) as writer:
        offsets = data.message_offsets.tolist()
        for k in range(data.message_count):
            a, b = offsets[k], offsets[k + 1]
            writer.write_columns(data.parents[a:b], data.children[a:b], data.stamps_ns[a:b],
                                 data.values[a:b], bool(data.message_static[k]),
                                 int(data.message_log_ns[k]))
    return joint_bag, tf_bag, len(data)


JOINT_STATE_MSG = (
    "std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\n"
    "float64[] effort\n" + "=" * 80 + "\nMSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\n"
    "string frame_id\n" + "=" * 80 + "\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n"
)


def measure(fn, repeat: int) -> tuple[float, float]:
    fn()  # warm-up: imports, page cache
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--hz", type=float, default=100.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    from tf2py import RobotModel, Time
    from tf2py.bag import load

    model = RobotModel.from_urdf(ARM)
    with tempfile.TemporaryDirectory(prefix="tf2py-bench-robot-") as tmp:
        t0 = time.perf_counter()
        joint_bag, tf_bag, transforms = write_bags(Path(tmp), args.minutes, args.hz)
        print(f"bags written in {time.perf_counter() - t0:.1f} s: {joint_bag.name} "
              f"{joint_bag.stat().st_size / 1e6:.1f} MB ({int(args.minutes * 60 * args.hz)} "
              f"joint states of 7 joints at {args.hz:g} Hz), {tf_bag.name} "
              f"{tf_bag.stat().st_size / 1e6:.1f} MB ({transforms} transforms)")
        print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} "
              f"cores, load average {os.getloadavg()[0]:.2f}; median and best of "
              f"{args.repeat} runs")
        rows = [
            ("load /tf", lambda: load(tf_bag)),
            ("load joint states, robot=model", lambda: load(joint_bag, robot=model)),
            ("load joint states, robot=URDF path", lambda: load(joint_bag, robot=ARM)),
        ]
        results = {}
        print(f"{'':36} {'median s':>9} {'best s':>8} {'transforms/s':>14}")
        for name, fn in rows:
            median, best = measure(fn, args.repeat)
            results[name] = (median, best)
            print(f"{name:36} {median:9.3f} {best:8.3f} {transforms / median:14,.0f}")
        # the same poses either way
        from_tf, from_joints = load(tf_bag), load(joint_bag, robot=model)
        for i in (0, 12345 % max(1, int(args.minutes * 60 * args.hz)), -1):
            stamp = Time.from_nanoseconds(int(from_tf.get_latest_common_time(
                "base_link", "tool0").nanoseconds) if i == -1 else T0_NS + i * int(1e9 / args.hz))
            a = from_tf.lookup_transform("base_link", "tool0", stamp).transform.as_matrix()
            b = from_joints.lookup_transform("base_link", "tool0", stamp).transform.as_matrix()
            assert np.allclose(a, b, atol=1e-12), (i, a, b)
    tf_median, tf_best = results["load /tf"]
    for name in ("load joint states, robot=model", "load joint states, robot=URDF path"):
        median, best = results[name]
        print(f"{name} / load /tf: {median / tf_median:.2f}x median | {best / tf_best:.2f}x best"
              "   (target <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
