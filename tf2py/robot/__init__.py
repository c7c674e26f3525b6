"""Robot models: URDF and xacro descriptions, their joint transforms and forward kinematics,
and ROS's robot_state_publisher and joint_state_publisher on any bus.

- ``model``: ``RobotModel`` (``from_urdf``, ``from_urdf_string``; ``transforms``, rows as a
  ``tf2py.Transforms`` (``static_rows``, ``movable_rows``), link poses
  (``forward_kinematics``), ``fill`` a Buffer), with no bus; built from ``xml_tree`` (a safe
  XML reader keeping line numbers), ``urdf`` (URDF's meaning and urdfdom's checks), ``joint``
  (``Joint``, ``JointLimits``, ``JointMimic``, ``JointSafety``) and ``xacro_files`` (the ``robot`` extra's
  xacro, imported on first use). For N configurations at once, ``kinematics`` computes the
  moving joints' rows in numpy and ``forward`` builds the tables that the kernel's compiled
  walk turns into link poses.
- ``joint_state``: ``JointState`` (sensor_msgs' shape), its CDR codec (and std_msgs/String's)
  and the typed topics ``/joint_states`` and ``/robot_description``.
- ``publishers``: ``JointStatePublisher`` and ``RobotStatePublisher`` (its rate limit in
  ``rate``).
- ``errors``: ``RobotModelError`` (one line naming file, line and element) and
  ``RobotModelWarning``.
"""

from __future__ import annotations

from .errors import RobotModelError, RobotModelWarning
from .joint import Joint, JointLimits, JointMimic, JointSafety
from .model import RobotModel

__all__ = ["RobotModel", "RobotModelError", "RobotModelWarning", "Joint", "JointLimits", "JointMimic",
           "JointSafety"]
