"""Robot models: URDF and xacro descriptions, joint transforms and forward kinematics
(``model``), and the publishers that put them on a bus (``publishers``)."""

from __future__ import annotations

from .errors import RobotModelError, RobotModelWarning
from .joint import Joint, JointLimits, JointMimic
from .model import RobotModel

__all__ = ["RobotModel", "RobotModelError", "RobotModelWarning", "Joint", "JointLimits", "JointMimic"]
