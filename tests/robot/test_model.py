"""RobotModel's meaning of a URDF: origin then motion, rpy as Rz·Ry·Rx, axes, mimics,
floating and planar joints, the transforms and the forward kinematics agreeing."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from tf2py import Buffer, Joint, RobotModel, Time, Transforms
from tf2py.robot import RobotModelWarning

# Every joint type; line numbers matter only to the warning test.
ARM = """<?xml version="1.0"?>
<robot name="arm">
  <link name="base"/>
  <link name="shoulder"/>
  <link name="upper"/>
  <link name="slider"/>
  <link name="wrist"/>
  <link name="finger_a"/>
  <link name="finger_b"/>
  <link name="camera"/>
  <link name="float"/>
  <link name="plane"/>
  <joint name="pan" type="continuous">
    <parent link="base"/><child link="shoulder"/>
    <origin xyz="0 0 0.3" rpy="0.1 -0.2 0.3"/><axis xyz="0 0 2"/>
  </joint>
  <joint name="lift" type="revolute">
    <parent link="shoulder"/><child link="upper"/>
    <origin xyz="0.05 0 0.1" rpy="0 0.4 0"/><axis xyz="0 1 1"/>
    <limit lower="-1.5" upper="2" velocity="1.5" effort="20"/>
  </joint>
  <joint name="reach" type="prismatic">
    <parent link="upper"/><child link="slider"/>
    <origin xyz="0.4 0 0" rpy="0.3 0 0"/><axis xyz="1 0 1"/>
    <limit lower="0" upper="0.2" velocity="0.1" effort="50"/>
  </joint>
  <joint name="roll" type="revolute">
    <parent link="slider"/><child link="wrist"/>
    <origin xyz="0.1 0.02 0" rpy="-0.5 0.25 1.2"/>
  </joint>
  <joint name="grip_a" type="prismatic">
    <parent link="wrist"/><child link="finger_a"/>
    <origin xyz="0 0.01 0.05"/><axis xyz="0 1 0"/>
    <mimic joint="grip_b" multiplier="-2" offset="0.01"/>
  </joint>
  <joint name="grip_b" type="prismatic">
    <parent link="wrist"/><child link="finger_b"/>
    <origin xyz="0 -0.01 0.05"/><axis xyz="0 1 0"/>
    <mimic joint="roll" multiplier="0.5" offset="0.02"/>
  </joint>
  <joint name="camera_mount" type="fixed">
    <parent link="upper"/><child link="camera"/>
    <origin xyz="0.1 0 0.05" rpy="0 1.5707963267948966 0"/>
  </joint>
  <joint name="free" type="floating">
    <parent link="base"/><child link="float"/>
    <origin xyz="1 2 3" rpy="0.1 0.2 0.3"/>
  </joint>
  <joint name="slide_plane" type="planar">
    <parent link="base"/><child link="plane"/>
    <origin xyz="-1 0 0"/><axis xyz="0 0 1"/>
  </joint>
</robot>
"""


@pytest.fixture(scope="module")
def arm() -> RobotModel:
    return RobotModel.from_urdf_string(ARM)


def pose(xyz, rpy=(0.0, 0.0, 0.0)) -> np.ndarray:
    """4x4 of translation xyz and rotation Rz(yaw)·Ry(pitch)·Rx(roll), built by hand."""
    r, p, y = rpy
    rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    m = np.eye(4)
    m[:3, :3] = rz @ ry @ rx
    m[:3, 3] = xyz
    return m


def rotation(axis, angle) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = Rotation.from_rotvec(np.asarray(axis, float) / np.linalg.norm(axis) * angle).as_matrix()
    return m


def shift(axis, distance) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = np.asarray(axis, float) / np.linalg.norm(axis) * distance
    return m


def expected_poses(q: dict[str, float]) -> dict[str, np.ndarray]:
    """The arm's link poses in base, composed by hand from the URDF above."""
    roll = q["roll"]
    grip_b = 0.5 * roll + 0.02
    grip_a = -2.0 * grip_b + 0.01
    out = {"base": np.eye(4)}
    out["shoulder"] = pose((0, 0, 0.3), (0.1, -0.2, 0.3)) @ rotation((0, 0, 1), q["pan"])
    out["upper"] = out["shoulder"] @ pose((0.05, 0, 0.1), (0, 0.4, 0)) @ rotation((0, 1, 1), q["lift"])
    out["slider"] = out["upper"] @ pose((0.4, 0, 0), (0.3, 0, 0)) @ shift((1, 0, 1), q["reach"])
    out["wrist"] = out["slider"] @ pose((0.1, 0.02, 0), (-0.5, 0.25, 1.2)) @ rotation((1, 0, 0), roll)
    out["finger_a"] = out["wrist"] @ pose((0, 0.01, 0.05)) @ shift((0, 1, 0), grip_a)
    out["finger_b"] = out["wrist"] @ pose((0, -0.01, 0.05)) @ shift((0, 1, 0), grip_b)
    out["camera"] = out["upper"] @ pose((0.1, 0, 0.05), (0, math.pi / 2, 0))
    out["float"] = pose((1, 2, 3), (0.1, 0.2, 0.3))
    out["plane"] = pose((-1, 0, 0))
    return out


Q = {"pan": 0.7, "lift": -0.4, "reach": 0.15, "roll": 1.1}


def test_the_model_names_its_parts(arm):
    assert arm.name == "arm" and arm.root == "base"
    assert arm.joint_names == ["pan", "lift", "reach", "roll"]
    assert [j.name for j in arm.joints][:3] == ["pan", "lift", "reach"]
    assert all(isinstance(j, Joint) for j in arm.joints)
    assert sorted(arm.links) == sorted(["base", "shoulder", "upper", "slider", "wrist",
                                        "finger_a", "finger_b", "camera", "float", "plane"])
    seen = {arm.root}
    for link in arm.links[1:]:  # each parent before its children
        parent = next(j.parent for j in arm.joints if j.child == link)
        assert parent in seen
        seen.add(link)
    assert "<robot" in arm.urdf


def test_links_are_depth_first_in_document_order(arm):
    assert arm.links == ["base", "shoulder", "upper", "slider", "wrist", "finger_a",
                         "finger_b", "camera", "float", "plane"]


def test_joint_fields(arm):
    joints = {j.name: j for j in arm.joints}
    lift = joints["lift"]
    assert (lift.type, lift.parent, lift.child) == ("revolute", "shoulder", "upper")
    assert lift.limits == (-1.5, 2.0, 1.5, 20.0)
    assert (lift.limits.lower, lift.limits.upper, lift.limits.velocity, lift.limits.effort) == (
        -1.5, 2.0, 1.5, 20.0)
    assert joints["roll"].limits is None  # a revolute without <limit> loads (urdfdom refuses)
    assert joints["grip_b"].mimic == ("roll", 0.5, 0.02)
    assert joints["grip_b"].mimic.joint == "roll"
    origin = joints["camera_mount"].origin
    assert (origin.translation.x, origin.translation.y, origin.translation.z) == (0.1, 0.0, 0.05)
    assert np.allclose(origin.as_matrix(), pose((0.1, 0, 0.05), (0, math.pi / 2, 0)))


def test_axes_are_normalised_and_default_to_x(arm):
    joints = {j.name: j for j in arm.joints}
    assert np.allclose(joints["pan"].axis, (0, 0, 1))
    assert np.allclose(joints["lift"].axis, (0, 1 / math.sqrt(2), 1 / math.sqrt(2)))
    assert joints["roll"].axis.tolist() == [1.0, 0.0, 0.0]
    assert joints["pan"].axis.shape == (3,) and joints["pan"].axis.dtype == np.float64
    assert not joints["pan"].axis.flags.writeable


def test_forward_kinematics_is_origin_then_motion_with_rpy_as_rz_ry_rx(arm):
    poses = arm.forward_kinematics([Q[name] for name in arm.joint_names])
    expected = expected_poses(Q)
    assert poses.shape == (len(arm.links), 4, 4)
    for k, link in enumerate(arm.links):
        assert np.allclose(poses[k], expected[link], atol=1e-12), link


def test_floating_and_planar_joints_stand_at_their_origin_and_are_not_published(arm):
    names = {t.child_frame_id for t in arm.transforms(Q)}
    names |= {t.child_frame_id for t in arm.static_transforms()}
    assert "float" not in names and "plane" not in names
    assert "free" not in arm.joint_names and "slide_plane" not in arm.joint_names


def test_mimic_chains_follow_their_master_with_multiplier_and_offset(arm):
    poses = dict(zip(arm.links, arm.forward_kinematics(Q)))
    grip_b = 0.5 * Q["roll"] + 0.02
    finger_b_in_wrist = np.linalg.inv(poses["wrist"]) @ poses["finger_b"]
    finger_a_in_wrist = np.linalg.inv(poses["wrist"]) @ poses["finger_a"]
    assert np.allclose(finger_b_in_wrist[:3, 3], (0, -0.01 + grip_b, 0.05), atol=1e-12)
    assert np.allclose(finger_a_in_wrist[:3, 3], (0, 0.01 - 2 * grip_b + 0.01, 0.05), atol=1e-12)


def test_mimic_defaults_are_multiplier_one_offset_zero():
    model = RobotModel.from_urdf_string("""<robot name="m"><link name="a"/><link name="b"/>
      <link name="c"/>
      <joint name="j1" type="revolute"><parent link="a"/><child link="b"/>
        <axis xyz="0 0 1"/></joint>
      <joint name="j2" type="revolute"><parent link="b"/><child link="c"/>
        <axis xyz="0 0 1"/><mimic joint="j1"/></joint></robot>""")
    assert model.joints[1].mimic == ("j1", 1.0, 0.0)
    (b_to_c,) = [t for t in model.transforms([0.5]) if t.child_frame_id == "c"]
    assert math.isclose(b_to_c.transform.rotation.z, math.sin(0.25))


def test_a_mimic_of_a_missing_joint_warns_and_stays_at_its_origin():
    text = """<robot name="m">
      <link name="a"/><link name="b"/><link name="c"/>
      <joint name="j1" type="revolute"><parent link="a"/><child link="b"/></joint>
      <joint name="j2" type="revolute"><parent link="b"/><child link="c"/>
        <origin xyz="0 0 1"/><mimic joint="ghost"/></joint></robot>"""
    with pytest.warns(RobotModelWarning) as record:
        model = RobotModel.from_urdf_string(text)
    (warning,) = record
    assert warning.filename == __file__  # points at the caller's line
    message = str(warning.message)
    assert "\n" not in message and message.startswith("<string>:4:")
    assert "'j2'" in message and "'ghost'" in message
    assert model.joint_names == ["j1"]
    assert [t.child_frame_id for t in model.transforms([1.0])] == ["b"]
    poses = dict(zip(model.links, model.forward_kinematics([0.3])))
    assert np.allclose(np.linalg.inv(poses["b"]) @ poses["c"], pose((0, 0, 1)))


def test_transforms_compose_to_the_forward_kinematics(arm):
    found = {t.child_frame_id: t for t in arm.transforms(Q) + arm.static_transforms()}
    poses = dict(zip(arm.links, arm.forward_kinematics(Q)))
    for child, t in found.items():
        composed = poses[t.header.frame_id] @ t.transform.as_matrix()
        assert np.allclose(composed, poses[child], atol=1e-12), child


def test_joint_rows_are_one_transforms_whose_matrices_compose_to_the_forward_kinematics(arm):
    rows = Transforms.concatenate([arm.movable_rows(Q, 5), arm.static_rows(stamp_ns=5)])
    assert isinstance(rows, Transforms) and set(rows.stamps_ns.tolist()) == {5}
    poses = dict(zip(arm.links, arm.forward_kinematics(Q)))
    for parent, child, matrix in zip(rows.parents, rows.children, rows.as_matrices()):
        assert np.allclose(poses[parent] @ matrix, poses[child], atol=1e-12), child


def test_transforms_name_the_moving_joints_in_document_order(arm):
    transforms = arm.transforms(Q, stamp=Time(sec=5, nanosec=7))
    assert [(t.header.frame_id, t.child_frame_id) for t in transforms] == [
        ("base", "shoulder"), ("shoulder", "upper"), ("upper", "slider"), ("slider", "wrist"),
        ("wrist", "finger_a"), ("wrist", "finger_b")]
    assert all(t.header.stamp == Time(sec=5, nanosec=7) for t in transforms)
    assert [(t.header.frame_id, t.child_frame_id) for t in arm.static_transforms()] == [
        ("upper", "camera")]


def test_a_mapping_and_a_sequence_give_the_same_transforms(arm):
    by_mapping = arm.transforms({**Q, "not_a_joint": 3.0}, stamp=1.5)
    by_sequence = arm.transforms([Q[n] for n in arm.joint_names], stamp=1.5)
    assert by_mapping == by_sequence


def test_a_partial_mapping_gives_those_joints_and_their_mimics(arm):
    assert [t.child_frame_id for t in arm.transforms({"roll": 0.2})] == [
        "wrist", "finger_a", "finger_b"]
    assert [t.child_frame_id for t in arm.transforms({"lift": 0.2})] == ["upper"]
    assert arm.transforms({}) == []


def test_a_mimic_given_keeps_its_own_position_and_its_own_mimics_follow_it(arm):
    # robot_state_publisher: a joint state's own position for a mimic wins over its master's;
    # a mimic not given follows its master, given or followed (grip_a follows grip_b).
    only = {t.child_frame_id: t for t in arm.transforms({"grip_b": 0.03})}
    assert list(only) == ["finger_a", "finger_b"]  # not the wrist: roll is not given
    assert math.isclose(only["finger_b"].transform.translation.y, -0.01 + 0.03)
    assert math.isclose(only["finger_a"].transform.translation.y, 0.01 - 2 * 0.03 + 0.01)
    both = {t.child_frame_id: t for t in arm.transforms({"roll": 0.2, "grip_b": 0.03})}
    assert math.isclose(both["finger_b"].transform.translation.y, -0.01 + 0.03)
    assert both["wrist"] == arm.transforms({"roll": 0.2})[0]
    assert arm.movable_positions({"roll": 0.2, "grip_b": 0.03}) == {
        "roll": 0.2, "grip_a": -2 * 0.03 + 0.01, "grip_b": 0.03}
    assert arm.movable_joint_names == ["pan", "lift", "reach", "roll", "grip_a", "grip_b"]


def test_forward_kinematics_and_fill_with_a_mimic_given_compose_its_transforms(arm):
    positions = dict(Q, grip_b=-0.04)
    poses = dict(zip(arm.links, arm.forward_kinematics(positions)))
    rows = {t.child_frame_id: t.transform.as_matrix() for t in arm.transforms(positions)}
    for finger in ("finger_a", "finger_b"):
        np.testing.assert_allclose(np.linalg.inv(poses["wrist"]) @ poses[finger], rows[finger],
                                   atol=1e-12)
    assert not np.allclose(poses["finger_b"], dict(zip(
        arm.links, arm.forward_kinematics(Q)))["finger_b"])  # the mimic's own position counts
    # links and base choose among the same poses
    chosen = arm.forward_kinematics(positions, links=["finger_a"], base="wrist")
    np.testing.assert_allclose(chosen[0], rows["finger_a"], atol=1e-12)
    buffer = Buffer()
    arm.fill(buffer, positions, 5.0)
    np.testing.assert_allclose(
        buffer.lookup_transform("wrist", "finger_b", Time()).transform.as_matrix(),
        rows["finger_b"], atol=1e-12)


def test_a_sequence_of_the_wrong_length_is_one_value_error(arm):
    with pytest.raises(ValueError, match="4 values") as info:
        arm.transforms([0.1, 0.2])
    assert "\n" not in str(info.value)


def test_a_non_finite_position_is_refused(arm):
    with pytest.raises(ValueError, match="'lift'"):
        arm.transforms({"lift": float("nan")})
    with pytest.raises(ValueError, match="'reach'"):
        arm.forward_kinematics([0.0, 0.0, float("inf"), 0.0])


def test_frame_prefix_is_put_before_every_link(arm):
    names = [(t.header.frame_id, t.child_frame_id)
             for t in arm.transforms(Q, frame_prefix="r1/") + arm.static_transforms(frame_prefix="r1/")]
    assert names[0] == ("r1/base", "r1/shoulder") and names[-1] == ("r1/upper", "r1/camera")


def test_forward_kinematics_of_n_configurations_equals_each_one(arm):
    rng = np.random.default_rng(7)
    configurations = rng.uniform(-1, 1, (6, len(arm.joint_names)))
    batch = arm.forward_kinematics(configurations)
    assert batch.shape == (6, len(arm.links), 4, 4)
    for i, q in enumerate(configurations):
        expected = expected_poses(dict(zip(arm.joint_names, q)))
        for k, link in enumerate(arm.links):
            assert np.allclose(batch[i, k], expected[link], atol=1e-12)


def test_forward_kinematics_of_chosen_links_in_a_chosen_base(arm):
    full = dict(zip(arm.links, arm.forward_kinematics(Q)))
    chosen = arm.forward_kinematics(Q, links=["finger_a", "camera"], base="wrist")
    inverse = np.linalg.inv(full["wrist"])
    assert np.allclose(chosen[0], inverse @ full["finger_a"], atol=1e-12)
    assert np.allclose(chosen[1], inverse @ full["camera"], atol=1e-12)


def test_forward_kinematics_takes_a_complete_mapping(arm):
    assert np.allclose(arm.forward_kinematics(Q), arm.forward_kinematics(
        [Q[n] for n in arm.joint_names]))
    with pytest.raises(ValueError, match="'reach'"):
        arm.forward_kinematics({"pan": 0.0, "lift": 0.0, "roll": 0.0})


@pytest.mark.parametrize("argument", ["links", "base"])
def test_forward_kinematics_names_an_unknown_link(arm, argument):
    kwargs = {"links": ["base", "nowhere"]} if argument == "links" else {"base": "nowhere"}
    with pytest.raises(ValueError, match="'nowhere'"):
        arm.forward_kinematics(Q, **kwargs)


def test_movable_rows_come_joint_by_joint_with_their_stamps(arm):
    configurations = np.array([[0.1, 0.2, 0.05, 0.3], [0.4, 0.5, 0.1, 0.6], [0.7, 0.8, 0.15, 0.9]])
    rows = arm.movable_rows(configurations, np.array([10, 20, 30]), frame_prefix="p/")
    assert rows.values.shape == (6 * 3, 7)
    assert rows.children[:4] == ["p/shoulder"] * 3 + ["p/upper"]
    assert rows.stamps_ns.tolist() == [10, 20, 30] * 6
    for i, q in enumerate(configurations):
        expected = arm.transforms(q)
        for k, t in enumerate(expected):
            row = rows.values[k * 3 + i]
            assert np.allclose(row, [*t.transform.translation, *t.transform.rotation])


def test_movable_rows_leave_out_joints_not_given(arm):
    q = np.array([[0.1, np.nan, 0.05, 0.3], [0.4, 0.5, 0.1, np.nan]])
    rows = arm.movable_rows(q, np.array([1, 2]))
    got = list(zip(rows.children, rows.stamps_ns.tolist()))
    assert ("upper", 1) not in got and ("upper", 2) in got
    assert ("finger_a", 2) not in got and ("finger_a", 1) in got


def test_fill_a_trajectory_then_lookups_equal_the_forward_kinematics(arm):
    buffer = Buffer(cache_time=100.0)
    rng = np.random.default_rng(3)
    configurations = rng.uniform(-1, 1, (5, len(arm.joint_names)))
    configurations[:, 2] = rng.uniform(0, 0.2, 5)
    stamps = np.array([1.0, 1.5, 2.0, 2.5, 3.0])
    stored = arm.fill(buffer, configurations, stamps)
    assert stored == 1 + 5 * 6
    poses = arm.forward_kinematics(configurations)
    for i, stamp in enumerate(stamps):
        for k, link in enumerate(arm.links):
            if link in ("float", "plane"):
                continue  # not published: a localisation node sends them
            found = buffer.lookup_transform("base", link, Time.from_nanoseconds(int(stamp * 1e9)))
            assert np.allclose(found.transform.as_matrix(), poses[i, k], atol=1e-9), (i, link)
    assert not buffer.can_transform("base", "float", Time())


def test_fill_one_configuration_with_a_prefix_and_an_authority(arm):
    buffer = Buffer()
    arm.fill(buffer, Q, Time(sec=4), authority="me", frame_prefix="r/")
    found = buffer.lookup_transform("r/base", "r/finger_b", Time(sec=4))
    expected = dict(zip(arm.links, arm.forward_kinematics(Q)))["finger_b"]
    assert np.allclose(found.transform.as_matrix(), expected, atol=1e-9)
    assert "me" in buffer.all_frames_as_yaml()


def test_fill_needs_one_stamp_per_configuration(arm):
    with pytest.raises(ValueError, match="3 stamps"):
        arm.fill(Buffer(), np.zeros((3, 4)), [1.0, 2.0])
    with pytest.raises(ValueError, match="one configuration needs one stamp, got 3"):
        arm.fill(Buffer(), np.zeros(4), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("stamp", [Time(sec=5), 5, 5.0, np.float64(5.0), [5.0], np.array([5])])
def test_fill_one_configuration_takes_its_stamp_as_a_time_or_seconds(arm, stamp):
    buffer = Buffer()
    arm.fill(buffer, Q, stamp)
    found = buffer.lookup_transform("base", "wrist", Time(sec=5))
    expected = dict(zip(arm.links, arm.forward_kinematics(Q)))["wrist"]
    assert np.allclose(found.transform.as_matrix(), expected, atol=1e-9)
    assert not buffer.can_transform("base", "wrist", Time(sec=4))


def test_movable_positions_are_every_published_joint_mimics_following(arm):
    got = arm.movable_positions(Q)
    published = [t.child_frame_id for t in arm.transforms(Q)]
    assert [arm.joints[name].child for name in got] == published
    def position(name: str) -> float:  # mimics of mimics included
        mimic = arm.joints[name].mimic
        return Q[name] if mimic is None else position(mimic.joint) * mimic.multiplier + \
            mimic.offset

    assert got == pytest.approx({name: position(name) for name in got}, abs=1e-15)
    assert any(arm.joints[name].mimic is not None for name in got)


def test_joints_are_found_by_name_too(arm):
    assert arm.joints["lift"] is next(j for j in arm.joints if j.name == "lift")
    assert "lift" in arm.joints and "nothing" not in arm.joints
    assert arm.joints[0].name == "pan" and [j.name for j in arm.joints[:2]] == ["pan", "lift"]
    with pytest.raises(KeyError, match="'nothing'"):
        arm.joints["nothing"]


def test_fill_takes_one_configuration_as_a_row_with_one_stamp(arm):
    buffer = Buffer()
    arm.fill(buffer, np.array([[Q[n] for n in arm.joint_names]]), 2.0)
    found = buffer.lookup_transform("base", "wrist", Time(sec=2))
    expected = dict(zip(arm.links, arm.forward_kinematics(Q)))["wrist"]
    assert np.allclose(found.transform.as_matrix(), expected, atol=1e-9)


@pytest.mark.parametrize("bad", ["up", None, [1.0, 2.0]])
def test_a_position_that_is_not_a_number_names_its_joint(arm, bad):
    with pytest.raises(ValueError, match="'lift'") as info:
        arm.transforms({"lift": bad})
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("axis", ["0 0 1e-300", "1e200 1e200 0", "0 -3 4"])
def test_axes_of_any_scale_are_normalised(axis):
    model = RobotModel.from_urdf_string(
        '<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="revolute">'
        f'<parent link="a"/><child link="b"/><axis xyz="{axis}"/></joint></robot>')
    unit = model.joints[0].axis
    assert np.isclose(np.linalg.norm(unit), 1.0)
    expected = np.array([float(v) for v in axis.split()])
    assert np.allclose(unit, expected / np.abs(expected).max() / np.linalg.norm(
        expected / np.abs(expected).max()))
    assert np.isfinite(model.forward_kinematics([0.3])).all()


def test_a_prismatic_joint_slides_its_position_in_metres_along_a_non_unit_axis():
    """KDL (robot_state_publisher's kinematics) divides an axis by its norm; a library that
    does not (yourdfpy) would slide 1 m here for 0.2 m."""
    model = RobotModel.from_urdf_string(
        '<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="prismatic">'
        '<parent link="a"/><child link="b"/><origin xyz="0.1 0 0" rpy="0 0 1.5707963267948966"/>'
        '<axis xyz="0 -5 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        '</robot>')
    pose = model.forward_kinematics([0.2], links=["b"])[0]
    assert np.allclose(pose[:3, 3], (0.1 + 0.2, 0.0, 0.0), atol=1e-15)  # -y turned by 90°: +x
    (t,) = model.transforms([0.2])
    assert np.allclose(t.transform.as_matrix(), pose, atol=1e-15)


@pytest.mark.parametrize("data", [
    '<?xml version="1.0" encoding="ISO-8859-1"?>\n<robot name="bras_é"><link name="a"/></robot>'
    .encode("latin-1"),
    '<robot name="bras_é"><link name="a"/></robot>'.encode("utf-16"),
    b"\xef\xbb\xbf" + '<robot name="bras_é"><link name="a"/></robot>'.encode(),
])
def test_the_urdf_text_is_the_document_in_the_encoding_it_declares(tmp_path, data):
    # .urdf is what /robot_description carries: the document's text, not its bytes misread
    path = tmp_path / "bras.urdf"
    path.write_bytes(data)
    for model in (RobotModel.from_urdf(path), RobotModel.from_urdf_string(data)):
        assert model.name == "bras_é" and "bras_é" in model.urdf
        assert RobotModel.from_urdf_string(model.urdf).name == "bras_é"
