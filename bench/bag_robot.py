"""Benchmark: tf2py.bag.load(..., robot=...) of joint states against loading the same
transforms from /tf.

    python -m bench bag_robot [--minutes 10] [--hz 100] [--repeat 5]   (--quick: 0.5 min, 3 runs)

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
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.harness import REPO, Run

ARM = REPO / "launch" / "robots" / "arm.urdf"
JOINTS = [f"joint{i}" for i in range(1, 8)]
T0_NS = 1_700_000_000 * 1_000_000_000


def write_bags(folder: Path, minutes: float, hz: float) -> tuple[Path, Path, int]:
    from tf2py import RobotModel
    from tf2py.bag import BagWriter
    from tf2py.bag.robot import read_with_robot
    from tf2py.robot.joint_state import JOINT_STATE_TYPE, JOINT_STATE_TYPE_HASH, encode_joint_state

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
            rows = data.transforms[a:b]
            writer.write_columns(rows.parents, rows.children, rows.stamps_ns, rows.values,
                                 bool(data.message_static[k]), int(data.message_log_ns[k]))
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


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench bag_robot", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=0.5 if run.quick else 10.0)
    parser.add_argument("--hz", type=float, default=100.0)
    parser.add_argument("--repeat", type=int, default=3 if run.quick else 5)
    args = parser.parse_args(argv)

    from tf2py import RobotModel, Time
    from tf2py.bag import load

    model = RobotModel.from_urdf(ARM)
    with tempfile.TemporaryDirectory(prefix="tf2py-bench-robot-") as tmp:
        t0 = time.perf_counter()
        joint_bag, tf_bag, transforms = write_bags(Path(tmp), args.minutes, args.hz)
        run.note(f"bags written in {time.perf_counter() - t0:.1f} s: {joint_bag.name} "
              f"{joint_bag.stat().st_size / 1e6:.1f} MB ({int(args.minutes * 60 * args.hz)} "
              f"joint states of 7 joints at {args.hz:g} Hz), {tf_bag.name} "
              f"{tf_bag.stat().st_size / 1e6:.1f} MB ({transforms} transforms)")
        rows = [
            ("load /tf", lambda: load(tf_bag)),
            ("load joint states, robot=model", lambda: load(joint_bag, robot=model)),
            ("load joint states, robot=URDF path", lambda: load(joint_bag, robot=ARM)),
        ]
        results = {}
        table = run.table(f"bag.load of {args.minutes:g} min at {args.hz:g} Hz, median and best of "
                          f"{args.repeat} runs", ["load", "median s", "best s", "transforms/s",
                                                 "/ load /tf (median, best)"], [36, 9, 8, 14, 26])
        for name, fn in rows:
            median, best = measure(fn, args.repeat)
            results[name] = (median, best)
            tf_median, tf_best = results["load /tf"]
            versus = ("" if name == "load /tf" else
                      f"{median / tf_median:.2f}x, {best / tf_best:.2f}x (target ≤ 2x)")
            table.add(name, f"{median:.3f}", f"{best:.3f}", f"{transforms / median:,.0f}", versus,
                      median_s=median, best_s=best, ratio=median / tf_median,
                      ratio_best=best / tf_best)
        # the same poses either way
        from_tf, from_joints = load(tf_bag), load(joint_bag, robot=model)
        for i in (0, 12345 % max(1, int(args.minutes * 60 * args.hz)), -1):
            stamp = Time.from_nanoseconds(int(from_tf.get_latest_common_time(
                "base_link", "tool0").nanoseconds) if i == -1 else T0_NS + i * int(1e9 / args.hz))
            a = from_tf.lookup_transform("base_link", "tool0", stamp).transform.as_matrix()
            b = from_joints.lookup_transform("base_link", "tool0", stamp).transform.as_matrix()
            assert np.allclose(a, b, atol=1e-12), (i, a, b)
