"""Random joint configurations within a robot model's limits, and the same positions as
pinocchio's ``q``, for tests and benchmarks."""

from __future__ import annotations

from typing import Any

import numpy as np

from tf2py import RobotModel


def random_configurations(model: RobotModel, n: int, seed: int = 0) -> np.ndarray:
    """``(n, len(model.joint_names))`` positions (rad or m) within each joint's limits;
    continuous (or unlimited) joints in [-pi, pi]. The same seed gives the same array."""
    rng = np.random.default_rng(seed)
    joints = {j.name: j for j in model.joints}
    out = np.empty((n, len(model.joint_names)))
    for k, name in enumerate(model.joint_names):
        limits = joints[name].limits
        if joints[name].type == "continuous" or limits is None or limits.lower >= limits.upper:
            out[:, k] = rng.uniform(-np.pi, np.pi, n)
        else:
            out[:, k] = rng.uniform(limits.lower, limits.upper, n)
    return out


def pinocchio_configuration(model: RobotModel, pinocchio: Any, pin_model: Any,
                            positions: np.ndarray) -> np.ndarray:
    """Pinocchio's q for our positions: mimics get ``multiplier × master + offset`` resolved
    along their chain (pinocchio builds them as ordinary joints), continuous joints are
    (cos, sin), joints we leave undriven stay at pinocchio's neutral."""
    joints = {j.name: j for j in model.joints}
    value = dict(zip(model.joint_names, positions.tolist()))

    def position(name: str) -> float | None:
        joint = joints[name]
        if joint.mimic is None:
            return value.get(name)
        master = joints.get(joint.mimic.joint)
        if master is None or master.type not in ("revolute", "continuous", "prismatic"):
            return None
        base = position(master.name)
        return None if base is None else joint.mimic.multiplier * base + joint.mimic.offset

    q = pinocchio.neutral(pin_model)
    for joint in model.joints:
        if joint.type not in ("revolute", "continuous", "prismatic"):
            continue
        p = position(joint.name)
        if p is None:
            continue
        pin_joint = pin_model.joints[pin_model.getJointId(joint.name)]
        if pin_joint.nq == 2:
            q[pin_joint.idx_q], q[pin_joint.idx_q + 1] = np.cos(p), np.sin(p)
        else:
            q[pin_joint.idx_q] = p
    return q
