"""Random joint configurations within a robot model's limits, for tests and benchmarks."""

from __future__ import annotations

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
