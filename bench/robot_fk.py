"""RobotModel.forward_kinematics for a Panda over 10 000 configurations against pinocchio
called once per configuration from Python, the way a user without a batch call would.

    python -m bench robot_fk              # ~20 s
    python -m bench robot_fk --quick      # ~5 s
    python -m bench robot_fk --cpu        # CPU time, not wall (loaded machine)

Needs the test extra (pinocchio as ``pin``, and example-robot-data for the Panda's URDF).

tf2py: one ``forward_kinematics(Q)`` call, ``Q`` of shape (10 000, 8), giving every link's
pose as a (10 000, 13, 4, 4) array. pinocchio 3/4 (C++, the fastest kinematics library on
PyPI for this) from the same URDF, one call per configuration:

- ``framesForwardKinematics(model, data, q)``: computes every frame's placement into
  pinocchio's ``data`` and gives nothing back to Python (the floor of a per-configuration
  call: the poses are still inside pinocchio);
- the same, then every link's pose read out as a (13, 4, 4) array (``data.oMf[f]`` per
  link), the result tf2py's call returns;
- ``forwardKinematics`` + ``updateFramePlacements`` (the two-step form), for information.

Both sides are checked to give the same poses (1e-9) before anything is timed. Figures are
the median of interleaved repeats (the garbage collector paused in each timed loop); each
ratio is tf2py / pinocchio, the median over repeats of the ratio measured back to back.

Also timed: the per-call paths a RobotStatePublisher uses, ``transforms(positions)`` for a
Panda and for TALOS (44 moving joints), and ``forward_kinematics`` of one configuration.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.harness import Missing, Run, version_of
from simulators.joints import pinocchio_configuration
from simulators.joints import random_configurations as configurations
from tf2py import RobotModel, Time

pc = time.perf_counter


def published(folder: str, name: str) -> Path:
    """A URDF of example-robot-data, found through the package's metadata."""
    for file in importlib.metadata.distribution("example-robot-data").files or []:
        parts = Path(str(file)).parts
        if parts[-1] == name and folder in parts:
            return Path(str(file.locate()))
    raise SystemExit(f"example-robot-data has no {folder}/{name}")


CLOCK = pc


def timed(f: Callable[[], object]) -> float:
    """Seconds of one call of f by ``CLOCK``, the garbage collector paused."""
    gc.collect()
    gc.disable()
    try:
        start = CLOCK()
        f()
        return CLOCK() - start
    finally:
        gc.enable()


def per_call(f: Callable[[], object], calls: int) -> Callable[[], object]:
    def loop() -> None:
        for _ in range(calls):
            f()
    return loop


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench robot_fk", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", action="store_true",
                        help="time by this process's CPU time (all its threads, BLAS's too) "
                             "instead of the wall clock: steadier on a loaded machine")
    options = parser.parse_args(argv)
    global CLOCK
    if options.cpu:
        CLOCK = time.process_time
    try:
        import pinocchio as pin
    except ImportError:
        raise Missing("needs pinocchio (pip install pin, in the test extra)") from None
    run.peer("pin", version_of("pin"))

    repeats = 3 if run.quick else 7
    n = 10_000
    path = published("panda_description", "panda.urdf")
    model = RobotModel.from_urdf(path)
    pin_model = pin.buildModelFromUrdf(str(path))
    data = pin_model.createData()
    q = configurations(model, n)
    pin_q = [pinocchio_configuration(model, pin, pin_model, row) for row in q]
    frames = [pin_model.getFrameId(link, pin.BODY) for link in model.links]

    # The same poses on both sides, before anything is timed.
    ours = model.forward_kinematics(q)
    for i in range(0, n, 97):
        pin.framesForwardKinematics(pin_model, data, pin_q[i])
        theirs = np.array([data.oMf[f].homogeneous for f in frames])
        assert np.abs(ours[i] - theirs).max() < 1e-9, i

    def pin_frames() -> None:
        for qi in pin_q:
            pin.framesForwardKinematics(pin_model, data, qi)

    def pin_frames_read() -> None:
        for qi in pin_q:
            pin.framesForwardKinematics(pin_model, data, qi)
            np.array([data.oMf[f].homogeneous for f in frames])

    def pin_two_steps() -> None:
        for qi in pin_q:
            pin.forwardKinematics(pin_model, data, qi)
            pin.updateFramePlacements(pin_model, data)

    rows: dict[str, list[float]] = {k: [] for k in ("ours", "frames", "read", "two")}
    ratios: dict[str, list[float]] = {"frames": [], "read": []}
    for _ in range(repeats):
        t_ours = timed(lambda: model.forward_kinematics(q)) / n
        t_frames = timed(pin_frames) / n
        t_read = timed(pin_frames_read) / n
        t_two = timed(pin_two_steps) / n
        t_ours2 = timed(lambda: model.forward_kinematics(q)) / n
        mine = min(t_ours, t_ours2)  # the two sides of each repeat measured back to back
        for key, value in (("ours", mine), ("frames", t_frames), ("read", t_read), ("two", t_two)):
            rows[key].append(value)
        ratios["frames"].append(mine / t_frames)
        ratios["read"].append(mine / t_read)

    # The per-call paths of a RobotStatePublisher.
    talos = RobotModel.from_urdf(published("talos_data", "talos_full_v2.urdf"))
    talos_q = dict(zip(talos.joint_names, configurations(talos, 1)[0].tolist()))
    panda_q = dict(zip(model.joint_names, q[0].tolist()))
    stamp = Time(sec=1)
    calls = 2000 if run.quick else 5000
    singles = {
        "transforms(mapping), Panda (9 moving joints)": per_call(
            lambda: model.transforms(panda_q, stamp), calls),
        f"transforms(mapping), TALOS ({len(talos.transforms(talos_q))} moving joints)": per_call(
            lambda: talos.transforms(talos_q, stamp), calls),
        "forward_kinematics of one configuration, Panda": per_call(
            lambda: model.forward_kinematics(q[0]), calls),
        "pinocchio framesForwardKinematics, one call, Panda": per_call(
            lambda: pin.framesForwardKinematics(pin_model, data, pin_q[0]), calls),
    }
    single_times = {name: statistics.median(timed(f) for _ in range(repeats)) / calls
                    for name, f in singles.items()}

    us = 1e6
    run.note(f"Panda: {len(model.links)} links, {len(model.joint_names)} driven joints; "
             f"{n} configurations; {repeats} interleaved repeats; "
             f"{'CPU time' if options.cpu else 'wall clock'}")
    table = run.table("forward kinematics per configuration (Panda, 10 000)",
                      ["row", "µs", "tf2py / it", "target"], [56, 9, 11, 8])
    ours_us = statistics.median(rows["ours"]) * us
    table.add("tf2py `forward_kinematics(Q)`, one call", f"{ours_us:.3f}", "", "",
              us=ours_us)
    for key, name, target in (
            ("frames", "pinocchio `framesForwardKinematics`, a call each", "≤ 0.5"),
            ("read", "the same + each link's pose read out as an array", "≤ 0.5"),
            ("two", "pinocchio `forwardKinematics` + `updateFramePlacements`", "")):
        value = statistics.median(rows[key]) * us
        ratio = statistics.median(ratios[key]) if key in ratios else None
        table.add(name, f"{value:.3f}", "" if ratio is None else f"{ratio:.2f}", target,
                  us=value, ratio=ratio)
    paths = run.table("per-call paths of a RobotStatePublisher", ["call", "µs per call"], [56, 12])
    for name, value in single_times.items():
        paths.add(name, f"{value * us:.2f}", us=value * us)
