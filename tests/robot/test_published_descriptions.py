"""Forward kinematics equal pinocchio's (an independent implementation, on urdfdom) to 1e-9
on robot descriptions published by others in example-robot-data: arms, hands, humanoids,
quadrupeds, with prismatic, continuous and mimic joints, at random configurations within
their limits."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from simulators.joints import pinocchio_configuration, random_configurations
from tf2py import RobotModel

pinocchio = pytest.importorskip("pinocchio")

# (package folder, file): every kind of robot the package ships.
DESCRIPTIONS = [
    # arms
    ("panda_description", "panda.urdf"),  # prismatic fingers, one a mimic
    ("ur_description", "ur5_robot.urdf"),
    ("ur_description", "ur10_joint_limited_robot.urdf"),
    ("ur_description", "ur3_gripper.urdf"),
    ("kinova_description", "kinova.urdf"),  # continuous joints
    ("xarm_description", "xarm7.urdf"),
    ("z1_description", "z1.urdf"),
    ("so_arm_description", "so100.urdf"),
    ("so_arm_description", "so101.urdf"),
    ("baxter_description", "baxter.urdf"),  # prismatic grippers with mimics
    ("double_pendulum_description", "double_pendulum_continuous.urdf"),
    ("asr_twodof_description", "TwoDofs.urdf"),
    ("finger_edu_description", "finger_edu.urdf"),
    # hands
    ("allegro_hand_description", "allegro_left_hand.urdf"),
    ("allegro_hand_description", "allegro_right_hand.urdf"),
    # humanoids and mobile manipulators
    ("talos_data", "talos_full_v2.urdf"),  # mimic fingers
    ("talos_data", "talos_left_arm.urdf"),
    ("romeo_description", "romeo.urdf"),  # 22 mimics
    ("icub_description", "icub.urdf"),
    ("g1_description", "g1_29dof_with_hand_rev_1_0.urdf"),
    ("simple_humanoid_description", "simple_humanoid.urdf"),
    ("human_description", "human.urdf"),
    ("alex_description", "alex_psyonic_hands.urdf"),  # mimics of joints it lacks
    ("alexander_description", "alexander_v1.lowerBodyOnly.urdf"),
    ("centauro_description", "centauro.urdf"),
    ("pr2_description", "pr2.urdf"),  # prismatic torso, continuous wheels, mimics
    ("tiago_description", "tiago_dual.urdf"),
    ("tiago_pro_description", "tiago_pro.urdf"),
    # quadrupeds and bipeds
    ("anymal_b_simple_description", "anymal-kinova.urdf"),
    ("anymal_c_simple_description", "anymal.urdf"),
    ("go1_description", "go1.urdf"),
    ("go2_description", "go2.urdf"),
    ("a1_description", "a1.urdf"),
    ("b1_description", "b1-z1.urdf"),
    ("hyq_description", "hyq_no_sensors.urdf"),
    ("laikago_description", "laikago.urdf"),
    ("solo_description", "solo12.urdf"),
    ("bolt_description", "bolt.urdf"),
    # flying robots
    ("hextilt_description", "hextilt_flying_arm_5.urdf"),
    ("iris_description", "iris.urdf"),
]


def load(path: Path) -> RobotModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mimics of joints a description lacks (alex)
        return RobotModel.from_urdf(path)


@pytest.mark.parametrize("folder,name", DESCRIPTIONS, ids=[n for _, n in DESCRIPTIONS])
def test_forward_kinematics_equal_pinocchio(published, folder, name):
    path = published[(folder, name)]
    model = load(path)
    try:
        pin_model = pinocchio.buildModelFromUrdf(str(path))
    except Exception as exc:  # pragma: no cover - every listed file loads in pinocchio 3/4
        pytest.skip(f"pinocchio cannot load {name}: {exc}")
    data = pin_model.createData()
    configurations = random_configurations(model, 4, seed=len(name))
    ours = model.forward_kinematics(configurations)
    frames = [pin_model.getFrameId(link, pinocchio.BODY) for link in model.links]
    assert all(f < pin_model.nframes for f in frames), "a link pinocchio does not know"
    worst = 0.0
    for i, positions in enumerate(configurations):
        pinocchio.framesForwardKinematics(pin_model, data,
                                          pinocchio_configuration(model, pinocchio, pin_model, positions))
        theirs = np.array([data.oMf[f].homogeneous for f in frames])
        worst = max(worst, float(np.abs(ours[i] - theirs).max()))
        if i == 0:  # one configuration takes its own path
            single = model.forward_kinematics(positions)
            worst = max(worst, float(np.abs(single - theirs).max()))
    assert worst < 1e-9, f"{name}: largest difference {worst:g}"


def test_the_descriptions_cover_every_kind_of_moving_joint(published):
    kinds: Counter[str] = Counter()
    for folder, name in DESCRIPTIONS:
        model = load(published[(folder, name)])
        kinds.update(j.type for j in model.joints)
        kinds["mimic"] += sum(1 for j in model.joints if j.mimic is not None)
    assert len(DESCRIPTIONS) >= 30
    assert kinds["prismatic"] and kinds["continuous"] and kinds["revolute"] and kinds["mimic"]


def test_a_published_arm_from_a_file_and_from_its_text_agree(published):
    path = published[("panda_description", "panda.urdf")]
    from_file = load(path)
    from_text = RobotModel.from_urdf_string(path.read_text())
    q = random_configurations(from_file, 3, seed=1)
    assert from_file.links == from_text.links and from_file.urdf == from_text.urdf
    assert np.array_equal(from_file.forward_kinematics(q), from_text.forward_kinematics(q))


@pytest.mark.parametrize("folder,name", [("panda_description", "panda.urdf"),
                                         ("pr2_description", "pr2.urdf"),
                                         ("baxter_description", "baxter.urdf")])
def test_mimic_joints_equal_pinocchios_own_mimic_model(published, folder, name):
    """pinocchio built with ``mimic=True`` drives the mimics itself (multiplier × master +
    offset): its configurations, read as ours, give the same poses."""
    path = published[(folder, name)]
    model = load(path)
    pin_model = pinocchio.buildModelFromUrdf(str(path), mimic=True)
    data = pin_model.createData()
    assert any(j.mimic is not None for j in model.joints)
    pinocchio.seed(7)
    for _ in range(3):
        q = pinocchio.randomConfiguration(pin_model)
        positions = {}
        for joint_id in range(1, pin_model.njoints):
            joint = pin_model.joints[joint_id]
            if joint.nq == 2:  # continuous: (cos, sin)
                positions[pin_model.names[joint_id]] = np.arctan2(q[joint.idx_q + 1], q[joint.idx_q])
            elif joint.nq == 1:
                positions[pin_model.names[joint_id]] = q[joint.idx_q]
        pinocchio.framesForwardKinematics(pin_model, data, q)
        ours = model.forward_kinematics(positions)
        for k, link in enumerate(model.links):
            theirs = data.oMf[pin_model.getFrameId(link, pinocchio.BODY)].homogeneous
            assert np.abs(ours[k] - theirs).max() < 1e-9, link
