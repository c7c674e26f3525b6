"""What the robot_state_publisher tests share: published robot descriptions (example-robot-data's
URDFs, installed with the test extra) and a small arm written here that has every joint kind
robot_state_publisher treats apart (fixed, revolute, continuous, prismatic, a mimic, a floating
joint it leaves alone)."""

from __future__ import annotations

import struct
import sysconfig
from pathlib import Path

import numpy as np

ROBOTS = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix/share/example-robot-data/robots"
#: A 32-joint humanoid (PAL Robotics' TALOS, reduced: no fingers).
TALOS = ROBOTS / "talos_data/robots/talos_reduced.urdf"

SMALL_ARM = """<?xml version="1.0"?>
<robot name="small_arm">
  <link name="base_link"/><link name="shoulder"/><link name="upper"/><link name="slider"/>
  <link name="finger_a"/><link name="finger_b"/><link name="tool"/><link name="drone"/>
  <joint name="mount" type="fixed"><parent link="base_link"/><child link="shoulder"/>
    <origin xyz="0 0 0.5" rpy="0 0 1.5707963267948966"/></joint>
  <joint name="pan" type="revolute"><parent link="shoulder"/><child link="upper"/>
    <origin xyz="0.1 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" velocity="1" effort="1"/></joint>
  <joint name="extend" type="prismatic"><parent link="upper"/><child link="slider"/>
    <axis xyz="1 0 0"/><limit lower="0" upper="0.3" velocity="1" effort="1"/></joint>
  <joint name="grip" type="continuous"><parent link="slider"/><child link="finger_a"/>
    <origin xyz="0.05 0.01 0"/><axis xyz="0 1 0"/></joint>
  <joint name="grip_mimic" type="continuous"><parent link="slider"/><child link="finger_b"/>
    <origin xyz="0.05 -0.01 0"/><axis xyz="0 1 0"/>
    <mimic joint="grip" multiplier="-1" offset="0.25"/></joint>
  <joint name="tool_mount" type="fixed"><parent link="slider"/><child link="tool"/>
    <origin xyz="0.2 0 0" rpy="0.1 0.2 0.3"/></joint>
  <joint name="free" type="floating"><parent link="base_link"/><child link="drone"/></joint>
</robot>
"""
#: SMALL_ARM's driven joints, and the frames robot_state_publisher sends for them.
SMALL_ARM_JOINTS = ["pan", "extend", "grip"]
SMALL_ARM_MOVING = {"upper", "slider", "finger_a", "finger_b"}
SMALL_ARM_FIXED = {"shoulder", "tool"}


def expected_pose(model, positions, link: str, prefix: str = "") -> np.ndarray:
    """The 4x4 pose of ``link`` in the model's root for ``positions`` (joint_names order)."""
    index = model.links.index(link)
    return model.forward_kinematics(np.asarray(positions, dtype=float))[index]


def hand_laid(names, position, velocity, effort, sec=7, nanosec=5, frame="base") -> bytes:
    """XCDR1 little-endian as the CDR rules lay it out, written independently of the codec."""
    out = bytearray(b"\x00\x01\x00\x00")

    def pad(n):
        out.extend(bytes(-(len(out) - 4) % n))

    def string(s):
        pad(4)
        b = s.encode() + b"\0"
        out.extend(struct.pack("<I", len(b)) + b)

    out.extend(struct.pack("<iI", sec, nanosec))
    string(frame)
    pad(4)
    out.extend(struct.pack("<I", len(names)))
    for n in names:
        string(n)
    for seq in (position, velocity, effort):
        pad(4)
        out.extend(struct.pack("<I", len(seq)))
        if seq:
            pad(8)
            out.extend(struct.pack(f"<{len(seq)}d", *seq))
    return bytes(out)
