"""`tf2py.bag.load(path, robot=...)`: a bag's /joint_states become the robot's transforms, as
robot_state_publisher would have sent them. Bags are written by BagWriter (MCAP) and rosbags
(ROS 1, ROS 2 sqlite3) with messages serialised by rosbags; the arm's poses are checked
against pinocchio, an independent kinematics library."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("rosbags")
pytest.importorskip("mcap")

from robot_bags import (
    ARM,
    ARM_JOINTS,
    joint_state_cdr,
    pinocchio_pose,
    write_mcap,
    write_ros1,
    write_sqlite,
)
from tf2py import RobotModel, RobotModelError, Time
from tf2py.bag import BagError, BagWarning, load

S = 1_000_000_000
T0 = 1_700_000_000 * S


def configurations(n: int, seed: int = 7) -> np.ndarray:
    """n random configurations of the arm within its limits (joint order ARM_JOINTS)."""
    model = RobotModel.from_urdf(ARM)
    joints = {j.name: j for j in model.joints}
    rng = np.random.default_rng(seed)
    columns = []
    for name in ARM_JOINTS:
        limits = joints[name].limits
        low, high = (-3.0, 3.0) if limits is None or joints[name].type == "continuous" else (
            limits[0], limits[1])
        columns.append(rng.uniform(low, high, n))
    return np.stack(columns, axis=1)


def states_of(qs: np.ndarray, names=ARM_JOINTS, step_ns: int = S // 100):
    return [(T0 + i * step_ns, names, q) for i, q in enumerate(qs)]


def check_poses(buffer, qs, names=ARM_JOINTS, step_ns=S // 100,
                links=("tool0", "finger_right", "link4")):
    for i, q in enumerate(qs):
        stamp = Time.from_nanoseconds(T0 + i * step_ns)
        positions = dict(zip(names, q))
        for link in links:
            got = buffer.lookup_transform("base_link", link, stamp).transform.as_matrix()
            np.testing.assert_allclose(got, pinocchio_pose(ARM, positions, link), atol=1e-9,
                                       err_msg=f"{link} at message {i}")


def test_joint_states_with_a_urdf_path_give_the_arm_at_every_stamp(tmp_path):
    qs = configurations(20)
    path = write_mcap(tmp_path / "arm.mcap", states_of(qs))
    buffer = load(path, robot=ARM)
    assert set(buffer.get_frames()) == set(RobotModel.from_urdf(ARM).links)
    check_poses(buffer, qs)


def test_robot_true_uses_the_latest_robot_description_in_the_bag(tmp_path):
    qs = configurations(5)
    # An earlier description of another robot, then the arm: the latest one counts.
    other = ARM.read_text().replace('xyz="0 0 0.3"', 'xyz="0 0 0.9"')
    path = write_mcap(tmp_path / "arm.mcap", states_of(qs),
                      descriptions=[(T0 - 2 * S, other), (T0 - S, ARM.read_text())])
    buffer = load(path, robot=True)
    check_poses(buffer, qs)


def test_a_robot_model_object_is_used_as_it_is(tmp_path):
    qs = configurations(5)
    path = write_mcap(tmp_path / "arm.mcap", states_of(qs))
    check_poses(load(path, robot=RobotModel.from_urdf(ARM)), qs)


def test_ros1_bags_are_read_alike(tmp_path):
    qs = configurations(10)
    path = write_ros1(tmp_path / "arm.bag", states_of(qs), descriptions=[(T0, ARM.read_text())])
    check_poses(load(path, robot=True), qs)


def test_ros2_sqlite_bag_folders_are_read_alike(tmp_path):
    qs = configurations(10)
    path = write_sqlite(tmp_path / "arm_bag", states_of(qs))
    check_poses(load(path, robot=ARM), qs)


def test_each_message_gives_only_the_joints_it_names_in_any_order(tmp_path):
    # Two publishers: the arm driver (joints 1-7, in reverse order) and the gripper.
    arm_names = list(reversed(ARM_JOINTS[:7]))
    states = [(T0, arm_names, [0.1 * (k + 1) for k in range(7)]),
              (T0 + S, ["finger_left_joint", "not_in_the_model"], [0.03, 9.0])]
    buffer = load(write_mcap(tmp_path / "two.mcap", states), robot=ARM)
    # joint1 is last in the message: position 0.7 about z
    np.testing.assert_allclose(
        buffer.lookup_transform("base_link", "link1", T0 / S).transform.as_matrix(),
        pinocchio_pose(ARM, {"joint1": 0.7}, "link1"), atol=1e-12)
    # the gripper's message moves the finger and its mimic, and nothing of the arm
    for finger in ("finger_left", "finger_right"):
        t = buffer.lookup_transform("tool0", finger, (T0 + S) / S).transform.translation
        assert abs(abs(t.y) - 0.03) < 1e-12
        assert buffer.lookup_transform("tool0", finger, 0).header.stamp.nanoseconds == T0 + S
    assert buffer.lookup_transform("link6", "link7", 0).header.stamp.nanoseconds == T0


def test_a_mimic_named_in_a_message_keeps_its_own_position_and_a_name_twice_its_first(
        tmp_path):
    # robot_state_publisher reads each message into a map that keeps a name's first
    # position, and derives a mimic only when the message does not give it.
    states = [(T0, ["finger_right_joint", "finger_left_joint"], [0.01, 0.03]),
              (T0 + S, ["finger_right_joint"], [0.02]),
              (T0 + 2 * S, ["joint1", "joint1"], [0.2, 0.9])]
    buffer = load(write_mcap(tmp_path / "mimic.mcap", states), robot=ARM)
    for stamp, positions in ((T0, {"finger_left_joint": 0.03, "finger_right_joint": 0.01}),
                             (T0 + S, {"finger_right_joint": 0.02})):
        for finger in positions:
            link = finger.removesuffix("_joint")
            np.testing.assert_allclose(
                buffer.lookup_transform("tool0", link, stamp / S).transform.as_matrix(),
                pinocchio_pose(ARM, positions, link, base="tool0"), atol=1e-12)
    # the mimic alone moves itself, not its master
    assert buffer.lookup_transform("tool0", "finger_left", 0).header.stamp.nanoseconds == T0
    np.testing.assert_allclose(
        buffer.lookup_transform("base_link", "link1", 0).transform.as_matrix(),
        pinocchio_pose(ARM, {"joint1": 0.2}, "link1"), atol=1e-12)


def test_the_bags_own_tf_is_kept_beside_the_joint_states(tmp_path):
    qs = configurations(3)
    rows = [("map", "base_link", T0 + i * S // 100, (1.0 * i, 0, 0, 0, 0, 0, 1)) for i in range(3)]
    path = write_mcap(tmp_path / "both.mcap", states_of(qs),
                      tf=[(False, T0 + i * S // 100, [row]) for i, row in enumerate(rows)])
    buffer = load(path, robot=ARM)
    t = buffer.lookup_transform("map", "tool0", Time.from_nanoseconds(T0 + 2 * S // 100))
    expected = pinocchio_pose(ARM, dict(zip(ARM_JOINTS, qs[2])), "tool0")
    expected[0, 3] += 2.0
    np.testing.assert_allclose(t.transform.as_matrix(), expected, atol=1e-9)


def test_messages_with_mismatched_lengths_or_non_finite_positions_are_dropped_and_counted(
        tmp_path):
    qs = configurations(4)
    bad_length = joint_state_cdr(T0 + 10 * S, ARM_JOINTS, [0.0] * 3)
    nan = list(qs[0])
    nan[2] = float("nan")
    path = write_mcap(tmp_path / "bad.mcap",
                      states_of(qs) + [(T0 + 11 * S, ARM_JOINTS, nan)],
                      raw_states=[(T0 + 10 * S, bad_length)])
    with pytest.warns(BagWarning) as caught:
        buffer = load(path, robot=ARM)
    message = " ".join(str(w.message) for w in caught)
    assert "1 had name and position lists of different lengths" in message
    assert "1 had a position that is not finite" in message
    check_poses(buffer, qs)
    assert buffer.get_latest_common_time("base_link", "tool0").nanoseconds == T0 + 3 * S // 100


def one_line_error(exc_info) -> str:
    text = str(exc_info.value)
    assert "\n" not in text and text
    return text


def test_robot_true_without_a_description_is_one_bag_error(tmp_path):
    path = write_mcap(tmp_path / "nodesc.mcap", states_of(configurations(2)))
    with pytest.raises(BagError) as exc:
        load(path, robot=True)
    text = one_line_error(exc)
    assert "nodesc.mcap" in text and "/robot_description" in text


def test_a_bag_without_joint_states_is_one_bag_error(tmp_path):
    rows = [("map", "base_link", T0, (0, 0, 0, 0, 0, 0, 1))]
    path = write_mcap(tmp_path / "tfonly.mcap", tf=[(False, T0, rows)])
    with pytest.raises(BagError) as exc:
        load(path, robot=ARM)
    text = one_line_error(exc)
    assert "tfonly.mcap" in text and "no joint states on /joint_states" in text


def test_joint_states_of_another_robot_are_one_bag_error(tmp_path):
    path = write_mcap(tmp_path / "other.mcap", [(T0, ["wheel_left", "wheel_right"], [1, 2])])
    with pytest.raises(BagError) as exc:
        load(path, robot=ARM)
    text = one_line_error(exc)
    assert "wheel_left" in text and "tf2py_arm" in text


def test_a_missing_urdf_is_one_robot_model_error(tmp_path):
    path = write_mcap(tmp_path / "arm.mcap", states_of(configurations(2)))
    with pytest.raises(RobotModelError) as exc:
        load(path, robot=tmp_path / "missing.urdf")
    assert "missing.urdf" in one_line_error(exc)


def test_a_broken_description_in_the_bag_is_one_robot_model_error(tmp_path):
    broken = ARM.read_text().replace('<parent link="link3"/>', '<parent link="link99"/>')
    path = write_mcap(tmp_path / "arm.mcap", states_of(configurations(2)),
                      descriptions=[(T0, broken)])
    with pytest.raises(RobotModelError) as exc:
        load(path, robot=True)
    assert "link99" in one_line_error(exc)


def test_undecodable_joint_states_are_a_bag_error_unless_lenient(tmp_path):
    qs = configurations(3)
    path = write_mcap(tmp_path / "garbage.mcap", states_of(qs),
                      raw_states=[(T0 + 5 * S, b"\x00\x01\x00\x00garbage")])
    with pytest.raises(BagError) as exc:
        load(path, robot=ARM)
    assert "could not be decoded" in one_line_error(exc)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        buffer = load(path, robot=ARM, strict=False)
    assert any("1 could not be decoded" in str(w.message) for w in caught)
    check_poses(buffer, qs)


def test_a_missing_bag_is_one_bag_error(tmp_path):
    with pytest.raises(BagError) as exc:
        load(tmp_path / "nothing.mcap", robot=ARM)
    assert "no such file" in one_line_error(exc)
