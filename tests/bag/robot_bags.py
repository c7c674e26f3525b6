"""Bags of joint states for the robot tests, written by tools other than the code under test:
``sensor_msgs/JointState`` and ``std_msgs/String`` serialised by rosbags (CDR and ROS 1),
MCAP files by tf2py's BagWriter, ROS 2 sqlite3 folders and ROS 1 bags by rosbags' writers;
and the arm's link poses computed by pinocchio, an independent kinematics library."""

from __future__ import annotations

import numpy as np

from helpers import REPO

ARM = REPO / "launch" / "robots" / "arm.urdf"
ARM_JOINTS = [f"joint{i}" for i in range(1, 8)] + ["finger_left_joint"]

JOINT_STATE_MSGDEF = (
    "std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\n"
    "float64[] effort\n" + "=" * 80 + "\nMSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\n"
    "string frame_id\n" + "=" * 80 + "\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n"
)
STRING_MSGDEF = "string data\n"


def _stores():
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_HUMBLE), get_typestore(Stores.ROS1_NOETIC)


def joint_state(store, stamp_ns: int, names, positions, ros1: bool = False):
    t = store.types
    sec, nanosec = divmod(int(stamp_ns), 1_000_000_000)
    header_args = dict(stamp=t["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec),
                       frame_id="")
    if ros1:
        header_args["seq"] = 0
    empty = np.zeros(0, dtype=np.float64)
    return t["sensor_msgs/msg/JointState"](
        header=t["std_msgs/msg/Header"](**header_args), name=list(names),
        position=np.asarray(positions, dtype=np.float64), velocity=empty, effort=empty)


def joint_state_cdr(stamp_ns: int, names, positions) -> bytes:
    ros2, _ = _stores()
    return bytes(ros2.serialize_cdr(joint_state(ros2, stamp_ns, names, positions),
                                    "sensor_msgs/msg/JointState"))


def string_cdr(text: str) -> bytes:
    ros2, _ = _stores()
    return bytes(ros2.serialize_cdr(ros2.types["std_msgs/msg/String"](data=text),
                                    "std_msgs/msg/String"))


def write_mcap(path, states=(), descriptions=(), tf=(), raw_states=()):
    """An MCAP by tf2py's BagWriter: ``states`` ``(stamp_ns, names, positions)`` on
    /joint_states (log time = stamp), ``descriptions`` ``(log_ns, urdf text)`` on
    /robot_description, ``tf`` ``(is_static, log_ns, rows)`` on /tf or /tf_static,
    ``raw_states`` ``(log_ns, bytes)`` as they are."""
    from tf2py.bag import BagWriter

    with BagWriter(path) as writer:
        js = writer.add_channel("/joint_states", "sensor_msgs/msg/JointState", "ros2msg",
                                JOINT_STATE_MSGDEF.encode(), "cdr")
        rd = writer.add_channel("/robot_description", "std_msgs/msg/String", "ros2msg",
                                STRING_MSGDEF.encode(), "cdr")
        for log_ns, text in descriptions:
            writer.write_message(rd, string_cdr(text), log_ns)
        for stamp_ns, names, positions in states:
            writer.write_message(js, joint_state_cdr(stamp_ns, names, positions), stamp_ns)
        for log_ns, data in raw_states:
            writer.write_message(js, data, log_ns)
        for is_static, log_ns, rows in tf:
            writer.write_rows(rows, is_static, log_ns)
    return path


def write_ros1(path, states=(), descriptions=()):
    """A ROS 1 bag by rosbags' writer, with the same content as ``write_mcap``'s."""
    from rosbags.rosbag1 import Writer

    _, ros1 = _stores()
    with Writer(path) as writer:
        js = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=ros1)
        rd = writer.add_connection("/robot_description", "std_msgs/msg/String", typestore=ros1)
        for log_ns, text in descriptions:
            writer.write(rd, log_ns, bytes(ros1.serialize_ros1(
                ros1.types["std_msgs/msg/String"](data=text), "std_msgs/msg/String")))
        for stamp_ns, names, positions in states:
            writer.write(js, stamp_ns, bytes(ros1.serialize_ros1(
                joint_state(ros1, stamp_ns, names, positions, ros1=True),
                "sensor_msgs/msg/JointState")))
    return path


def write_sqlite(path, states=()):
    """A ROS 2 bag folder (sqlite3) by rosbags' writer."""
    from rosbags.rosbag2 import Writer

    ros2, _ = _stores()
    with Writer(path, version=8) as writer:
        js = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=ros2)
        for stamp_ns, names, positions in states:
            writer.write(js, stamp_ns, joint_state_cdr(stamp_ns, names, positions))
    return path


def pinocchio_pose(urdf_path, positions: dict, frame: str, base: str = "base_link"):
    """The 4x4 pose of link ``frame`` in ``base`` by pinocchio, mimic joints set by hand
    (pinocchio reads them as free joints)."""
    import pinocchio as pin

    model = pin.buildModelFromUrdf(str(urdf_path))
    data = model.createData()
    q = pin.neutral(model)
    values = dict(positions)
    if "finger_left_joint" in values:
        values.setdefault("finger_right_joint", values["finger_left_joint"])
    for joint_id in range(1, model.njoints):
        name = model.names[joint_id]
        value = values.get(name, 0.0)
        joint = model.joints[joint_id]
        if joint.nq == 2:  # continuous: (cos, sin)
            q[joint.idx_q:joint.idx_q + 2] = (np.cos(value), np.sin(value))
        else:
            q[joint.idx_q] = value
    pin.framesForwardKinematics(model, data, q)
    world_frame = data.oMf[model.getFrameId(frame)].homogeneous
    world_base = data.oMf[model.getFrameId(base)].homogeneous
    return np.linalg.inv(world_base) @ world_frame
