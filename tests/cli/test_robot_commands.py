"""`tf2py robot-state-publisher`, `tf2py joint-state-publisher`, `tf2py play --robot` and
launch/arm.yaml as real subprocesses on a real core: a listener in the test sees every link of
the arm where pinocchio (an independent kinematics library) puts it; every bad input is one
line on stderr and a non-zero exit."""

from __future__ import annotations

import math
import signal

import numpy as np
import pytest

from bag.robot_bags import ARM, ARM_JOINTS, pinocchio_pose, write_mcap
from cli_support import wait_for
from helpers import REPO
from tf2py import Buffer, RobotModel, StaticTransformBroadcaster, Time, TransformListener, make_transform
from tf2py.transport.zmq.core import Core

LAUNCH = REPO / "launch" / "arm.yaml"
# joint_state_publisher's defaults for the arm: 0, or the middle of limits without 0
DEFAULTS = {"joint1": 0.0, "joint2": 0.0, "joint3": 0.0, "joint4": -1.55, "joint5": 0.0,
            "joint6": 1.9, "joint7": 0.0, "finger_left_joint": 0.0}


@pytest.fixture
def bus():
    with Core("tcp://127.0.0.1:0") as core:
        yield core.address


def listening(core: str) -> tuple[Buffer, TransformListener]:
    """A Buffer filled from ``core``, returned once its subscription is attached (a latched
    probe came through)."""
    buffer = Buffer()
    listener = TransformListener(buffer, core=core)
    with StaticTransformBroadcaster(core=core) as probe:
        probe.send_transform(make_transform("probe", "probe_child"))
        wait_for(lambda: buffer.can_transform("probe", "probe_child", 0), timeout=30)
    return buffer, listener


def assert_arm_at(buffer, positions, stamp=0, links=("tool0", "finger_right", "link4")):
    for link in links:
        got = buffer.lookup_transform("base_link", link, stamp, timeout=30)
        np.testing.assert_allclose(got.transform.as_matrix(),
                                   pinocchio_pose(ARM, positions, link), atol=1e-9,
                                   err_msg=link)


def one_line_failure(result, *words, code=None):
    assert result.returncode != 0 if code is None else result.returncode == code, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# -- the two publishers ---------------------------------------------------------------------


def test_the_two_publishers_put_the_arm_on_the_bus_at_its_default_pose(bus, spawn,
                                                                      tf2py_command):
    buffer, listener = listening(bus)
    with listener:
        rsp = spawn([*tf2py_command, "robot-state-publisher", str(ARM), "--core", bus])
        line = rsp.wait_for_line("tf2py robot-state-publisher:", timeout=60)
        assert "'tf2py_arm'" in line and "1 fixed and 9 movable joints" in line
        jsp = spawn([*tf2py_command, "joint-state-publisher", str(ARM), "--core", bus,
                     "--set", "joint2=0.5", "--set", "finger_left_joint=0.02", "--rate", "20"])
        jsp.wait_for_line("tf2py joint-state-publisher:", timeout=60)
        expected = dict(DEFAULTS, joint2=0.5, finger_left_joint=0.02)
        wait_for(lambda: buffer.can_transform("base_link", "tool0", 0), timeout=30)
        assert_arm_at(buffer, expected)
        assert set(RobotModel.from_urdf(ARM).links) <= set(buffer.get_frames())
        for proc in (jsp, rsp):
            proc.signal(signal.SIGINT)
            assert proc.wait() == 0


def test_robot_state_publisher_with_a_frame_prefix(bus, spawn, tf2py_command):
    buffer, listener = listening(bus)
    with listener:
        spawn([*tf2py_command, "robot-state-publisher", str(ARM), "--core", bus,
               "--frame-prefix", "left/"]).wait_for_line("publishing on", timeout=60)
        spawn([*tf2py_command, "joint-state-publisher", str(ARM), "--core", bus]
              ).wait_for_line("tf2py joint-state-publisher:", timeout=60)
        wait_for(lambda: buffer.can_transform("left/base_link", "left/tool0", 0), timeout=30)
        got = buffer.lookup_transform("left/base_link", "left/tool0", 0)
        np.testing.assert_allclose(got.transform.as_matrix(),
                                   pinocchio_pose(ARM, DEFAULTS, "tool0"), atol=1e-9)


# -- bad input: one line, non-zero exit -------------------------------------------------------


@pytest.mark.parametrize("command", ["robot-state-publisher", "joint-state-publisher"])
def test_a_missing_robot_file_is_one_line(tf2py, tmp_path, command):
    result = tf2py(command, str(tmp_path / "nothing.urdf"), "--core", "tcp://127.0.0.1:1")
    one_line_failure(result, "nothing.urdf", code=1)


@pytest.mark.parametrize("command", ["robot-state-publisher", "joint-state-publisher"])
def test_a_broken_urdf_is_one_line_naming_file_line_and_element(tf2py, tmp_path, command):
    broken = tmp_path / "broken.urdf"
    broken.write_text(ARM.read_text().replace('<child link="link4"/>', '<child link="nope"/>'))
    line = one_line_failure(tf2py(command, str(broken), "--core", "tcp://127.0.0.1:1"),
                            "broken.urdf", "nope", code=1)
    assert "broken.urdf:" in line  # the line number follows the file name


def test_not_xml_is_one_line(tf2py, tmp_path):
    path = tmp_path / "notes.urdf"
    path.write_text("this is not a robot\n")
    one_line_failure(tf2py("robot-state-publisher", str(path)), "notes.urdf", code=1)


def test_a_mistyped_set_name_is_one_line_with_the_close_joint(tf2py):
    line = one_line_failure(tf2py("joint-state-publisher", str(ARM), "--set", "jiont2=0.3"),
                            "jiont2", "did you mean 'joint2'", code=2)
    assert "tf2py joint-state-publisher: error:" in line


@pytest.mark.parametrize("setting, words", [
    ("joint2=fast", ["joint2", "finite number", "fast"]),
    ("joint2=nan", ["joint2", "finite number"]),
    ("joint2", ["NAME=VALUE"]),
    ("=0.3", ["NAME=VALUE"]),
    ("finger_right_joint=0.01", ["mimics", "finger_left_joint"]),
    ("flange=1", ["fixed"]),
])
def test_bad_set_values_are_one_line(tf2py, setting, words):
    one_line_failure(tf2py("joint-state-publisher", str(ARM), "--set", setting), *words, code=2)


@pytest.mark.parametrize("args, words", [
    (["joint-state-publisher", str(ARM), "--rate", "0"], ["--rate", "positive"]),
    (["joint-state-publisher", str(ARM), "--rate", "often"], ["--rate"]),
    (["robot-state-publisher", str(ARM), "--publish-frequency", "-5"], ["--publish-frequency"]),
    (["robot-state-publisher", str(ARM), "--xacro-arg", "novalue"], ["NAME:=VALUE"]),
    (["robot-state-publisher", str(ARM), "--xacro-arg", "a:=1"], ["not .xacro"]),
])
def test_bad_options_are_one_line(tf2py, args, words):
    one_line_failure(tf2py(*args), *words)


# -- play --robot -------------------------------------------------------------------------------

S = 1_000_000_000
T0 = 1_700_000_000 * S


def _arm_bag(path, n=15, with_description=True):
    rng = np.random.default_rng(3)
    qs = [np.array([DEFAULTS[name] for name in ARM_JOINTS]) + rng.uniform(-0.2, 0.2, 8) * (
        np.arange(8) < 7) for _ in range(n)]
    states = [(T0 + i * S // 50, ARM_JOINTS, q) for i, q in enumerate(qs)]
    write_mcap(path, states, descriptions=[(T0 - S, ARM.read_text())] if with_description else ())
    return qs


@pytest.mark.parametrize("robot_args", [[], [str(ARM)]], ids=["bag-description", "urdf"])
def test_play_robot_publishes_the_recorded_joint_states_as_the_arm(bus, tf2py, tmp_path,
                                                                   robot_args):
    path = tmp_path / "arm.mcap"
    qs = _arm_bag(path)
    buffer, listener = listening(bus)
    with listener:
        result = tf2py("play", str(path), "--robot", *robot_args, "--core", bus, "--quiet",
                       timeout=120)
        assert result.returncode == 0, result.stderr
        assert "tf2py play: done" in result.stdout
        last = Time.from_nanoseconds(T0 + (len(qs) - 1) * S // 50)
        wait_for(lambda: buffer.can_transform("base_link", "tool0", last), timeout=30)
        for i in (0, len(qs) // 2, len(qs) - 1):
            assert_arm_at(buffer, dict(zip(ARM_JOINTS, qs[i])),
                          Time.from_nanoseconds(T0 + i * S // 50))


def test_play_robot_without_a_description_in_the_bag_is_one_line(tf2py, tmp_path):
    path = tmp_path / "arm.mcap"
    _arm_bag(path, n=2, with_description=False)
    one_line_failure(tf2py("play", str(path), "--robot", "--core", "tcp://127.0.0.1:1"),
                     "arm.mcap", "/robot_description", code=1)


def test_play_robot_with_a_bag_without_joint_states_is_one_line(tf2py, tmp_path):
    path = write_mcap(tmp_path / "tf.mcap",
                      tf=[(False, T0, [("map", "base_link", T0, (0, 0, 0, 0, 0, 0, 1))])])
    one_line_failure(tf2py("play", str(path), "--robot", str(ARM), "--core",
                           "tcp://127.0.0.1:1"), "tf.mcap", "no joint states", code=1)


def test_play_robot_with_a_broken_urdf_is_one_line(tf2py, tmp_path):
    path = tmp_path / "arm.mcap"
    _arm_bag(path, n=2)
    broken = tmp_path / "broken.urdf"
    broken.write_text("<robot name='x'><link name='a'/><joint name='j' type='hinge'>"
                      "<parent link='a'/><child link='b'/></joint><link name='b'/></robot>")
    one_line_failure(tf2py("play", str(path), "--robot", str(broken), "--core",
                           "tcp://127.0.0.1:1"), "broken.urdf", "hinge", code=1)


# -- launch/arm.yaml ------------------------------------------------------------------------------


def test_launch_arm_brings_up_the_arm_and_echoes_base_to_tool(spawn, tf2py_command):
    from cli_support import free_bus_address

    address = free_bus_address()
    proc = spawn([*tf2py_command, "launch", str(LAUNCH), "joint2:=0.6"],
                 env={"TF2PY_CORE": address})
    proc.wait_for_line("[echo] - Translation:", timeout=90)
    buffer = Buffer()
    with TransformListener(buffer, core=address):
        wait_for(lambda: buffer.can_transform("base_link", "tool0", 0), timeout=30)
        assert_arm_at(buffer, dict(DEFAULTS, joint2=0.6))
        assert set(RobotModel.from_urdf(ARM).links) <= set(buffer.get_frames())
    proc.signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0


# -- xacro ------------------------------------------------------------------------------------------

XACRO = """<?xml version="1.0"?>
<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="stick">
  <xacro:arg name="length" default="0.5"/>
  <link name="base"/>
  <link name="tip"/>
  <joint name="hinge" type="revolute">
    <parent link="base"/><child link="tip"/>
    <origin xyz="0 0 $(arg length)"/>
    <axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
</robot>
"""


def test_xacro_arguments_reach_the_description(bus, spawn, tf2py_command, tmp_path):
    pytest.importorskip("xacro")
    path = tmp_path / "stick.urdf.xacro"
    path.write_text(XACRO)
    buffer, listener = listening(bus)
    with listener:
        line = spawn([*tf2py_command, "robot-state-publisher", str(path), "--core", bus,
                      "--xacro-arg", "length:=2.25"]).wait_for_line("publishing on", timeout=60)
        assert "'stick': 0 fixed and 1 movable joints" in line
        spawn([*tf2py_command, "joint-state-publisher", str(path), "--core", bus,
               "--xacro-arg", "length:=2.25", "--set", "hinge=0.5"])
        t = buffer.lookup_transform("base", "tip", 0, timeout=30).transform
        assert t.translation.z == 2.25
        assert abs(t.rotation.z - np.sin(0.25)) < 1e-12


def test_a_xacro_error_is_one_line(tf2py, tmp_path):
    pytest.importorskip("xacro")
    path = tmp_path / "bad.urdf.xacro"
    path.write_text(XACRO.replace("$(arg length)", "${undefined_property}"))
    one_line_failure(tf2py("robot-state-publisher", str(path)), "bad.urdf.xacro", code=1)


def test_joint_state_publisher_lists_every_movable_joint_mimics_included(bus, spawn,
                                                                        tf2py_command):
    """As ROS's joint_state_publisher: the mimic finger is on /joint_states too, at
    multiplier × master + offset, after the joints in document order."""
    from tf2py.robot.joint_state import JOINT_STATES, decode_joint_state
    from tf2py.transport.topics import subscribe_topic

    heard = []
    with subscribe_topic(JOINT_STATES, heard.append, bus):
        spawn([*tf2py_command, "joint-state-publisher", str(ARM), "--core", bus, "--set",
               "finger_left_joint=0.015", "--rate", "20"]).wait_for_line(
            "tf2py joint-state-publisher:", timeout=60)
        wait_for(lambda: heard, timeout=30)
    message = decode_joint_state(heard[0])
    model = RobotModel.from_urdf(ARM)
    movable = [j.name for j in model.joints if j.type in ("revolute", "prismatic", "continuous")]
    assert message.names == movable and "finger_right_joint" in movable
    positions = dict(zip(message.names, message.position.tolist()))
    assert positions == pytest.approx(dict(DEFAULTS, finger_left_joint=0.015,
                                           finger_right_joint=0.015), abs=1e-12)


SOFT = """<robot name="soft"><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
  <link name="e"/>
  <joint name="lift" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="0" upper="0.31" velocity="1" effort="1"/>
    <safety_controller soft_lower_limit="0.0115" soft_upper_limit="0.325" k_position="100"
      k_velocity="2000000"/></joint>
  <joint name="elbow" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/>
    <limit lower="-2.32" upper="0" velocity="1" effort="1"/>
    <safety_controller soft_lower_limit="-2.1213" soft_upper_limit="-0.15" k_velocity="3"/>
  </joint>
  <joint name="wrist" type="continuous"><parent link="c"/><child link="d"/>
    <safety_controller soft_lower_limit="0.2" k_velocity="1"/></joint>
  <joint name="pan" type="revolute"><parent link="d"/><child link="e"/>
    <limit lower="-1" upper="1" velocity="1" effort="1"/>
    <safety_controller soft_upper_limit="0.5" k_velocity="1"/></joint>
</robot>"""


def test_joint_state_publisher_defaults_use_the_soft_limits_as_joint_state_publisher():
    # joint_state_publisher narrows each range to the <safety_controller> soft limits (its
    # use_smallest_joint_limits, on by default), then takes 0, or the middle without 0: the
    # first two are PR2's torso and elbow.
    from tf2py.cli.joint_state_publisher import default_position

    model = RobotModel.from_urdf_string(SOFT)
    got = {joint.name: default_position(joint) for joint in model.joints}
    assert got == pytest.approx({"lift": (0.0115 + 0.31) / 2, "elbow": (-2.1213 - 0.15) / 2,
                                 "wrist": (0.2 + math.pi) / 2, "pan": 0.0}, abs=1e-12)
    assert model.joints["lift"].safety == (0.0115, 0.325, 100.0, 2e6)
    assert model.joints["pan"].safety == (None, 0.5, None, 1.0)


def test_a_robot_without_movable_joints_sends_no_empty_joint_states(bus, spawn, tf2py_command,
                                                                    tmp_path):
    from tf2py.robot.joint_state import JOINT_STATES, decode_joint_state
    from tf2py.transport.topics import subscribe_topic

    lone = tmp_path / "lone.urdf"
    lone.write_text('<robot name="lone"><link name="solo"/></robot>')
    heard = []
    with subscribe_topic(JOINT_STATES, heard.append, bus):
        spawn([*tf2py_command, "joint-state-publisher", str(lone), "--core", bus, "--rate",
               "50"]).wait_for_line("tf2py joint-state-publisher: robot 'lone': 0 joints",
                                    timeout=60)
        # the arm's publisher, on the same bus at the same rate, is the clock: once 20 of its
        # messages are in, the lone robot's would be too, had it sent any
        spawn([*tf2py_command, "joint-state-publisher", str(ARM), "--core", bus, "--rate",
               "50"]).wait_for_line("tf2py joint-state-publisher:", timeout=60)
        wait_for(lambda: len(heard) >= 20, timeout=30)
    assert all(decode_joint_state(data).names for data in heard)


def test_a_mimic_of_a_missing_joint_is_one_warning_line_and_the_robot_runs(bus, spawn,
                                                                           tf2py_command,
                                                                           tmp_path):
    path = tmp_path / "orphan.urdf"
    path.write_text(XACRO.replace("$(arg length)", "1").replace(
        '<axis xyz="0 0 1"/>', '<axis xyz="0 0 1"/><mimic joint="ghost"/>'))
    proc = spawn([*tf2py_command, "robot-state-publisher", str(path), "--core", bus])
    ready = proc.wait_for_line("publishing on", timeout=60)
    assert "0 fixed and 0 movable joints (0 driven by /joint_states)" in ready  # not sent
    warning = [line for line in proc.output().splitlines() if "ghost" in line]
    assert len(warning) == 1, proc.output()
    assert warning[0].startswith("tf2py robot-state-publisher: warning: ")
    assert "orphan.urdf:" in warning[0] and "'hinge'" in warning[0]
    assert "Warning:" not in proc.output() and "mimic joint=" not in proc.output()
