"""RobotStatePublisher and JointStatePublisher on tf2py's own bus (a real Core on a free
loopback port): joint states in, every link in a listener's buffer out, statics latched for
late joiners, robot_state_publisher's rate limit counted by stamps, bad joint states dropped
and counted, the Python-side publish, and closing."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from helpers import wait_for
from rsp_support import SMALL_ARM, SMALL_ARM_FIXED, SMALL_ARM_JOINTS, SMALL_ARM_MOVING, TALOS, hand_laid
from tf2py import (
    Buffer,
    Core,
    JointStatePublisher,
    RobotModel,
    RobotStatePublisher,
    Time,
    TransformListener,
)
from tf2py.robot.joint_state import JOINT_STATES, encode_joint_state
from tf2py.transport.topics import publish_topic, subscribe_topic, transient_local_topics


@pytest.fixture
def core():
    with Core("tcp://127.0.0.1:0") as c:
        yield c.address


@pytest.fixture
def arm():
    return RobotModel.from_urdf_string(SMALL_ARM)


def connect(rsp, send) -> None:
    """Send ``send()`` until the publisher has heard one (PUB/SUB: what is sent before the
    subscription reaches the core is lost)."""
    def heard():
        send()
        return rsp.stats()["received_messages"] > 0
    wait_for(heard, timeout=10, interval=0.02, message=lambda: rsp.stats())


def pose(buffer, target, source):
    return buffer.lookup_transform(target, source, Time()).transform.as_matrix()


def test_joint_states_drive_every_link_of_a_humanoid(core):
    model = RobotModel.from_urdf(TALOS)
    assert len(model.joint_names) >= 30
    buffer = Buffer()
    rng = np.random.default_rng(25)
    q = rng.uniform(-0.5, 0.5, len(model.joint_names))
    with TransformListener(buffer, core), RobotStatePublisher(model, core) as rsp, \
            JointStatePublisher(core) as jsp:
        connect(rsp, lambda: jsp.publish(model.joint_names, q, stamp=Time(100, 5)))
        wait_for(lambda: all(buffer.can_transform(model.root, link, Time())
                             for link in model.links), timeout=10)
        fk = model.forward_kinematics(q)
        for k, link in enumerate(model.links):
            np.testing.assert_allclose(pose(buffer, model.root, link), fk[k], atol=1e-9)
        moving = buffer.lookup_transform(model.root, "arm_left_7_link", Time())
        assert moving.header.stamp == Time(100, 5)  # the joint state's own stamp
        stats = rsp.stats()
        assert stats["dropped"] == {} and stats["published_transforms"] >= 32


def test_statics_are_latched_for_a_late_listener_with_the_prefix(core, arm):
    with RobotStatePublisher(arm, core, frame_prefix="r1/", listen=False):
        buffer = Buffer()
        with TransformListener(buffer, core):
            pairs = [(t.header.frame_id, t.child_frame_id)
                     for t in arm.static_transforms(0, "r1/")]
            assert {c for _, c in pairs} == {f"r1/{c}" for c in SMALL_ARM_FIXED}
            wait_for(lambda: all(buffer.can_transform(p, c, Time()) for p, c in pairs),
                     timeout=10)
            frames = set(buffer.get_frames())
    assert {"r1/shoulder", "r1/tool", "r1/base_link", "r1/slider"} <= frames
    assert not {"r1/upper", "r1/drone", "drone"} & frames  # no motion yet; floating never
    assert not transient_local_topics(core)  # no /robot_description on tcp://


def test_moving_joints_and_mimics_and_nothing_for_unknown_names(core, arm):
    buffer = Buffer()
    with TransformListener(buffer, core), RobotStatePublisher(arm, core) as rsp, \
            JointStatePublisher(core) as jsp:
        names = ["not_in_model", "grip", "pan", "extend"]
        connect(rsp, lambda: jsp.publish(names, [9.0, 0.5, 0.25, 0.125], stamp=50))
        wait_for(lambda: buffer.can_transform("base_link", "finger_b", Time()), timeout=10)
        got = set(buffer.get_frames())
        assert SMALL_ARM_MOVING <= got and "not_in_model" not in got and "drone" not in got
        fk = arm.forward_kinematics(np.array([0.25, 0.125, 0.5]))
        for link in ("finger_a", "finger_b", "tool"):
            np.testing.assert_allclose(pose(buffer, "base_link", link),
                                       fk[arm.links.index(link)], atol=1e-9)


def test_a_mimic_named_in_a_joint_state_is_sent_at_its_own_position_the_first_name_counts(
        core, arm):
    # robot_state_publisher keeps each name's first position and derives a mimic only when
    # the message does not give it: a message naming the mimic alone moves it alone.
    buffer = Buffer()
    with TransformListener(buffer, core), RobotStatePublisher(arm, core) as rsp, \
            JointStatePublisher(core) as jsp:
        connect(rsp, lambda: jsp.publish(["grip_mimic", "grip_mimic"], [0.3, 0.9], stamp=60))
        wait_for(lambda: buffer.can_transform("slider", "finger_b", Time()), timeout=10)
        (expected,) = [t for t in arm.transforms({"grip_mimic": 0.3})]
        np.testing.assert_allclose(pose(buffer, "slider", "finger_b"),
                                   expected.transform.as_matrix(), atol=1e-12)
        assert not buffer.can_transform("slider", "finger_a", Time())  # its master: not given
        jsp.publish(["grip", "grip_mimic"], [0.5, 0.1], stamp=61)
        wait_for(lambda: buffer.can_transform("slider", "finger_a", Time()), timeout=10)
        wait_for(lambda: buffer.lookup_transform("slider", "finger_b", Time()).header.stamp
                 == Time(61), timeout=10)
        by_child = {t.child_frame_id: t.transform.as_matrix()
                    for t in arm.transforms({"grip": 0.5, "grip_mimic": 0.1})}
        for link in ("finger_a", "finger_b"):
            np.testing.assert_allclose(pose(buffer, "slider", link), by_child[link], atol=1e-12)
        assert not np.allclose(by_child["finger_b"], [
            t for t in arm.transforms({"grip": 0.5}) if t.child_frame_id == "finger_b"
        ][0].transform.as_matrix())  # (the master's 0.5 would put it elsewhere)


def test_rate_limit_is_robot_state_publishers_counted_by_stamps(core, arm):
    with RobotStatePublisher(arm, core, publish_frequency=20.0) as rsp, \
            JointStatePublisher(core) as jsp:
        warm_ups = iter(range(1, 10_000))  # each due (a new second), none with rows
        connect(rsp, lambda: jsp.publish(["warm_up"], [0.0], stamp=next(warm_ups)))
        # 100 messages 10 ms apart (by stamp): one every 50 ms goes out, so 20.
        for k in range(100):
            jsp.publish(SMALL_ARM_JOINTS, [0.1, 0.1, 0.1], stamp=10 + k * 0.01)
        wait_for(lambda: rsp.stats()["published_messages"] + rsp.stats()["skipped_messages"]
                 >= 100, timeout=10, message=lambda: rsp.stats())
        stats = rsp.stats()
        assert (stats["published_messages"], stats["skipped_messages"]) == (20, 80)
        assert stats["published_transforms"] == 20 * 4  # pan, extend, grip, grip_mimic


def test_ignore_timestamp_sends_every_message_stamped_now(core, arm):
    buffer = Buffer()
    with TransformListener(buffer, core), \
            RobotStatePublisher(arm, core, ignore_timestamp=True) as rsp, \
            JointStatePublisher(core) as jsp:
        connect(rsp, lambda: jsp.publish(["warm_up"], [0.0], stamp=1))
        before = Time.now()
        for k in range(30):
            jsp.publish(SMALL_ARM_JOINTS, [0.1, 0.2, 0.3], stamp=10 + k * 0.001)
        wait_for(lambda: rsp.stats()["published_messages"] >= 30, timeout=10,
                 message=lambda: rsp.stats())
        wait_for(lambda: buffer.can_transform("shoulder", "upper", Time()), timeout=10)
        assert buffer.lookup_transform("shoulder", "upper", Time()).header.stamp >= before


def test_bad_joint_states_are_dropped_and_counted_and_it_goes_on(core, arm):
    buffer = Buffer()
    with TransformListener(buffer, core), \
            RobotStatePublisher(arm, core, ignore_timestamp=True) as rsp, \
            publish_topic(JOINT_STATES, core) as raw:
        connect(rsp, lambda: raw.publish(encode_joint_state(["warm_up"], [0.0], 1)))
        good = encode_joint_state(SMALL_ARM_JOINTS, [0.1, 0.2, 0.3], 5)
        mismatched = hand_laid(SMALL_ARM_JOINTS, [0.1, 0.2], [], [])  # 3 names, 2 positions
        for data in (b"", b"\x00\x00\x00\x00garbage-big-endian", good[:30], mismatched,
                     encode_joint_state(["pan", "extend"], [0.1, float("nan")], 5),
                     encode_joint_state(["pan"], [float("inf")], 5)):
            raw.publish(data)
        raw.publish(good)
        wait_for(lambda: buffer.can_transform("shoulder", "finger_b", Time()), timeout=10,
                 message=lambda: rsp.stats())
        dropped = rsp.stats()["dropped"]
    assert dropped == {"garbage": 2, "encoding": 1, "shape": 1, "invalid": 2}


def test_publish_from_python(core, arm):
    buffer = Buffer()
    with TransformListener(buffer, core), \
            RobotStatePublisher(arm, core, listen=False) as rsp:
        def sent():
            rsp.publish({"pan": 0.5, "unknown": 1.0, "grip": 0.1}, stamp=Time(7, 0))
            return buffer.can_transform("shoulder", "upper", Time(7, 0)) and \
                buffer.can_transform("slider", "finger_b", Time(7, 0))
        wait_for(sent, timeout=10, interval=0.02)
        assert not buffer.can_transform("upper", "slider", Time())  # extend not given
        rsp.publish([0.0, 0.2, 0.0], stamp=8.0)  # joint_names order
        with pytest.raises(ValueError, match="not finite"):
            rsp.publish({"pan": float("nan")})
        with pytest.raises(ValueError):
            rsp.publish([0.0, 0.2])
        assert rsp.stats()["received_messages"] == 0
    with pytest.raises(RuntimeError):
        rsp.publish([0.0, 0.0, 0.0])


def test_arguments_threads_and_close(core, arm):
    for bad in (0, -1, float("nan"), 1001):
        with pytest.raises(ValueError, match="publish_frequency"):
            RobotStatePublisher(arm, core, publish_frequency=bad)
    with pytest.raises(ValueError, match="2 joint names but 1 position"):
        with JointStatePublisher(core) as jsp:
            jsp.publish(["a", "b"], [1.0])
    before = set(threading.enumerate())
    rsp = RobotStatePublisher(arm, core)
    mine = [t for t in threading.enumerate() if t not in before]
    assert mine and all(t.daemon and t.name.startswith("tf2py") for t in mine)
    rsp.close()
    rsp.close()
    wait_for(lambda: not [t for t in mine if t.is_alive()], timeout=5)


def test_one_dropped_without_close_releases_its_threads_when_collected(core, arm):
    import gc
    import weakref

    before = set(threading.enumerate())
    rsp = RobotStatePublisher(arm, core)
    mine = [t for t in threading.enumerate() if t not in before]
    assert mine
    ref = weakref.ref(rsp)
    with pytest.warns(ResourceWarning, match="unclosed RobotStatePublisher of 'small_arm'"):
        del rsp
        gc.collect()
        assert ref() is None
    wait_for(lambda: not [t for t in mine if t.is_alive()], timeout=5)


def test_a_joint_state_publisher_is_heard_as_sensor_msgs(core):
    got: list[bytes] = []
    with subscribe_topic(JOINT_STATES, got.append, core) as sub, \
            JointStatePublisher(core) as jsp:
        def heard():
            jsp.publish(["a", "b"], [1.0, 2.0], stamp=Time(3, 4), velocities=[0.5, 0.25])
            return got
        wait_for(heard, timeout=10, interval=0.02)
        assert sub.stats()["dropped"] == {}
    from tf2py import JointState

    message = JointState.from_cdr(got[0])
    assert (message.name, message.position, message.velocity, message.effort) == \
        (["a", "b"], [1.0, 2.0], [0.5, 0.25], [])
    assert message.header.stamp == Time(3, 4)
