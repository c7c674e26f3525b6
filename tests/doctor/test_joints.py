"""The doctor's joint checks: joint states naming joints the model lacks, movable joints no
one publishes, joint states with mismatched lists; pure (``tf2py.doctor.joints``), from a bag
and from a live bus (`tf2py doctor` as a subprocess, a real core, real publishers)."""

from __future__ import annotations

import json

import pytest

from bag.robot_bags import ARM, ARM_JOINTS, joint_state_cdr, write_mcap
from tf2py import Core, JointStatePublisher, RobotModel, RobotStatePublisher
from tf2py.doctor.joints import JointObservations, JointWatch, diagnose_joints

S = 1_000_000_000
T0 = 1_700_000_000 * S
MODEL = RobotModel.from_urdf(ARM)


def heard(*messages, authority="driver"):
    observations = JointObservations()
    for names in messages:
        observations.add(authority, names, len(names))
    return observations


def checks(findings):
    return [f.check for f in findings]


def test_joint_states_naming_every_movable_joint_give_no_finding():
    assert diagnose_joints(heard(ARM_JOINTS), MODEL) == []


def test_names_split_over_two_publishers_are_complete_too():
    observations = heard(ARM_JOINTS[:7])
    observations.add("gripper", ["finger_left_joint"], 1)
    assert diagnose_joints(observations, MODEL) == []


def test_a_joint_the_model_lacks_is_named_with_its_publisher():
    findings = diagnose_joints(heard(ARM_JOINTS + ["elbow_joint"]), MODEL)
    assert checks(findings) == ["unknown_joint"]
    assert findings[0].frames == ("elbow_joint",) and findings[0].authorities == ("driver",)
    assert "elbow_joint" in findings[0].line() and "'tf2py_arm'" in findings[0].line()


def test_mimic_and_fixed_joints_in_joint_states_are_not_unknown():
    assert diagnose_joints(heard(ARM_JOINTS + ["finger_right_joint", "flange"]), MODEL) == []


def test_movable_joints_no_one_publishes_are_named_with_their_links():
    findings = diagnose_joints(heard(ARM_JOINTS[:5]), MODEL)
    assert checks(findings) == ["unpublished_joint"]
    assert findings[0].details["joints"] == ["joint6", "joint7", "finger_left_joint"]
    assert findings[0].frames == ("link6", "link7", "finger_left")
    assert "joint-state-publisher" in findings[0].fix


def test_nothing_heard_means_every_movable_joint_is_unpublished():
    findings = diagnose_joints(JointObservations(), MODEL)
    assert checks(findings) == ["unpublished_joint"]
    assert findings[0].details["joints"] == MODEL.joint_names
    assert "no joint state was heard" in findings[0].problem


def test_joint_states_with_mismatched_lists_are_counted():
    observations = heard(ARM_JOINTS)
    observations.add("driver", ARM_JOINTS, 3)
    findings = diagnose_joints(observations, MODEL)
    assert checks(findings) == ["joint_state_invalid"]
    assert findings[0].details == {"messages": 1}


def test_the_watch_decodes_cdr_and_counts_garbage():
    watch = JointWatch("bus")
    watch.on_joint_state(joint_state_cdr(T0, ARM_JOINTS[:2], [0.1, 0.2]))
    watch.on_joint_state(b"\x00\x01\x00\x00garbage")
    observations, description = watch.snapshot()
    assert observations.messages == 1 and set(observations.names) == {"joint1", "joint2"}
    assert watch.undecodable == 1 and description is None


# -- the command ----------------------------------------------------------------------------------


def _arm_bag(tmp_path, names, description=True, extra=()):
    states = [(T0 + i * S // 10, names, [0.0] * len(names)) for i in range(20)]
    return write_mcap(tmp_path / "arm.mcap", states,
                      descriptions=[(T0, ARM.read_text())] if description else (),
                      raw_states=extra)


def test_doctor_from_a_bag_reports_unknown_and_unpublished_joints(tf2py, tmp_path):
    path = _arm_bag(tmp_path, ARM_JOINTS[:6] + ["wrist_camera_joint"])
    result = tf2py("doctor", "--from-bag", str(path), "--json")
    assert result.returncode == 1, result.stderr
    found = {f["check"]: f for f in json.loads(result.stdout)["findings"]}
    assert found["unknown_joint"]["frames"] == ["wrist_camera_joint"]
    assert found["unpublished_joint"]["details"]["joints"] == ["joint7", "finger_left_joint"]


def test_doctor_from_a_bag_with_every_joint_finds_nothing(tf2py, tmp_path):
    result = tf2py("doctor", "--from-bag", str(_arm_bag(tmp_path, ARM_JOINTS)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no problems found" in result.stdout


def test_doctor_robot_option_overrides_a_bag_without_description(tf2py, tmp_path):
    path = _arm_bag(tmp_path, ARM_JOINTS[:7], description=False)
    plain = tf2py("doctor", "--from-bag", str(path))
    assert "give --robot URDF" in plain.stdout
    result = tf2py("doctor", "--from-bag", str(path), "--robot", str(ARM))
    assert result.returncode == 1
    assert "[unpublished_joint]" in result.stdout and "finger_left_joint" in result.stdout


def test_doctor_from_a_bag_counts_mismatched_joint_states(tf2py, tmp_path):
    bad = joint_state_cdr(T0 + 5 * S, ARM_JOINTS, [0.0] * 2)
    path = _arm_bag(tmp_path, ARM_JOINTS, extra=[(T0 + 5 * S, bad)])
    result = tf2py("doctor", "--from-bag", str(path))
    assert result.returncode == 1
    assert "[joint_state_invalid] 1 joint state from bag:arm.mcap" in result.stdout


def test_doctor_with_a_broken_robot_is_one_line(tf2py, tmp_path):
    broken = tmp_path / "broken.urdf"
    broken.write_text("<robot name='r'><link name='a'/><link name='a'/></robot>")
    result = tf2py("doctor", "--from-bag", str(_arm_bag(tmp_path, ARM_JOINTS)), "--robot",
                   str(broken))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "broken.urdf" in lines[0], result.stderr


def test_doctor_on_a_live_bus_reports_joints_no_one_publishes(tf2py):
    with Core("tcp://127.0.0.1:0") as core, \
            RobotStatePublisher(MODEL, core=core.address), \
            JointStatePublisher(core=core.address) as joints:
        import threading

        stop = threading.Event()

        def publish():  # the arm driver, without the gripper, at 20 Hz
            while not stop.wait(0.05):
                joints.publish(ARM_JOINTS[:7], [0.0, 0.1, 0.0, -1.5, 0.0, 1.5, 0.0])

        thread = threading.Thread(target=publish, daemon=True, name="test-joints")
        thread.start()
        try:
            result = tf2py("doctor", "--core", core.address, "--duration", "2", "--robot",
                           str(ARM), "--json")
        finally:
            stop.set()
            thread.join(5)
    assert result.returncode == 1, result.stderr
    found = {f["check"]: f for f in json.loads(result.stdout)["findings"]}
    assert found["unpublished_joint"]["details"]["joints"] == ["finger_left_joint"]
    assert "unknown_joint" not in found


def test_doctor_on_zenoh_checks_against_the_robot_description_it_hears(tf2py, spawn,
                                                                       tf2py_command):
    pytest.importorskip("zenoh")
    import threading

    from transport.zenoh.zenoh_support import start_router

    _, locator = start_router(spawn, tf2py_command)
    address = f"zenoh://tcp/{locator.split('/', 1)[1]}"
    with RobotStatePublisher(MODEL, core=address), JointStatePublisher(core=address) as joints:
        stop = threading.Event()

        def publish():  # a driver naming a joint the arm lacks, and not the gripper
            while not stop.wait(0.05):
                joints.publish(ARM_JOINTS[:7] + ["camera_tilt"], [0.0] * 8)

        thread = threading.Thread(target=publish, daemon=True, name="test-joints")
        thread.start()
        try:
            result = tf2py("doctor", "--core", address, "--duration", "3", "--json")
        finally:
            stop.set()
            thread.join(5)
    found = {f["check"]: f for f in json.loads(result.stdout)["findings"]}
    assert found["unpublished_joint"]["details"]["joints"] == ["finger_left_joint"], result.stdout
    assert found["unknown_joint"]["frames"] == ["camera_tilt"]
