"""sensor_msgs/JointState and std_msgs/String in CDR: round trips, the layout ROS 2 writes
(checked byte for byte here against a hand-laid sample; tests/ros2/test_robot_ros2.py checks
it against rclpy), the decoder's names cache, and every kind of bad bytes -> one CdrError."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from rsp_support import hand_laid
from tf2py import JointState, Time
from tf2py.buffer.messages import Header
from tf2py.robot.joint_state import (
    JOINT_STATES,
    JOINT_STATES_SENSOR,
    MAX_JOINTS,
    ROBOT_DESCRIPTION,
    CdrError,
    JointStateDecoder,
    decode_joint_state,
    decode_string,
    encode_joint_state,
    encode_string,
)


@pytest.mark.parametrize("velocity,effort", [([], []), ([0.5, -0.5, 2.0], []),
                                             ([], [1.0, 2.0, 3.0]), ([1, 2, 3], [4, 5, 6])])
def test_layout_matches_the_cdr_rules(velocity, effort):
    names = ["shoulder", "elbow_joint", "w"]
    data = encode_joint_state(names, [0.1, -0.2, 3.0], 7_000_000_005, "base", velocity or None,
                              effort or None)
    assert data == hand_laid(names, [0.1, -0.2, 3.0], velocity, effort)
    c = decode_joint_state(data)
    assert (c.stamp_ns, c.frame_id, c.names) == (7_000_000_005, "base", names)
    assert c.position.tolist() == [0.1, -0.2, 3.0]
    assert c.velocity.tolist() == [float(v) for v in velocity]
    assert c.effort.tolist() == [float(v) for v in effort]


def test_message_round_trip_and_defaults():
    empty = JointState()
    assert (empty.name, empty.position, empty.velocity, empty.effort) == ([], [], [], [])
    assert empty.header.stamp == Time()
    msg = JointState(Header(Time(12, 34), "world"), ["a", "ü"], [1.5, 2.5], effort=[0.0, 1.0])
    assert JointState.from_cdr(msg.to_cdr()) == msg
    assert JointState.from_cdr(JointState().to_cdr()) == JointState()


def test_one_string_for_the_names_is_a_type_error_not_one_joint_per_letter():
    with pytest.raises(TypeError, match="sequence of joint names"):
        JointState(name="elbow", position=[0.1])
    assert JointState(name=("elbow",), position=[1]).position == [1.0]


def test_decoder_keeps_the_names_list_while_names_stay():
    decoder = JointStateDecoder()
    a = decoder.decode(encode_joint_state(["j1", "j2"], [1, 2], 1))
    b = decoder.decode(encode_joint_state(["j1", "j2"], [3, 4], 2))
    assert b.names is a.names and b.position.tolist() == [3, 4] and b.stamp_ns == 2
    c = decoder.decode(encode_joint_state(["j1", "j3"], [5, 6], 3))
    assert c.names == ["j1", "j3"] and c.names is not a.names
    d = decoder.decode(encode_joint_state(["j1", "j3", "j4"], [5, 6, 7], 3))
    assert d.names == ["j1", "j3", "j4"] and d.position.tolist() == [5, 6, 7]


def test_string_round_trip():
    text = "<robot name='r'>" + "é" * 1000 + "</robot>"
    assert decode_string(encode_string(text)) == text
    assert decode_string(encode_string("")) == ""


def test_topics_have_ros2_qos():
    assert (JOINT_STATES.name, JOINT_STATES.reliable, JOINT_STATES.depth) == \
        ("/joint_states", True, 10)
    assert (JOINT_STATES_SENSOR.reliable, JOINT_STATES_SENSOR.depth) == (False, 5)
    assert JOINT_STATES_SENSOR.type_hash == JOINT_STATES.type_hash
    assert (ROBOT_DESCRIPTION.transient_local, ROBOT_DESCRIPTION.depth) == (True, 1)
    assert JOINT_STATES.dds_type_name == "sensor_msgs::msg::dds_::JointState_"
    assert ROBOT_DESCRIPTION.dds_type_name == "std_msgs::msg::dds_::String_"


def test_encoder_refuses_mismatched_lengths_and_bad_stamps():
    with pytest.raises(ValueError, match="2 joint names but 1 position"):
        encode_joint_state(["a", "b"], [1.0])
    with pytest.raises(ValueError, match="velocity"):
        encode_joint_state(["a"], [1.0], velocity=[1.0, 2.0])
    with pytest.raises(ValueError, match="builtin_interfaces"):
        encode_joint_state(["a"], [1.0], stamp_ns=2 ** 63)
    with pytest.raises(ValueError, match="flat"):
        encode_joint_state(["a"], [[1.0]])


def _causes(data) -> str:
    with pytest.raises(CdrError) as info:
        decode_joint_state(data)
    return info.value.cause


def test_every_truncation_is_one_cdr_error():
    data = encode_joint_state(["alpha", "beta"], [1, 2], 5, "f", [3, 4], [5, 6])
    for n in range(len(data)):
        assert _causes(data[:n]) in ("garbage", "too_large")


def test_bad_samples_are_named_errors():
    good = encode_joint_state(["alpha"], [1.0], 5, "f")
    assert _causes(b"\x00\x00" + good[2:]) == "encoding"  # big-endian
    assert _causes(b"") == "garbage"
    nanosec = bytearray(good)
    nanosec[8:12] = struct.pack("<I", 1_000_000_000)
    assert _causes(bytes(nanosec)) == "garbage"
    too_many = bytearray(good)
    too_many[20:24] = struct.pack("<I", MAX_JOINTS + 1)  # the names' count (after "f")
    assert _causes(bytes(too_many)) == "too_large"
    lying = bytearray(good)
    lying[20:24] = struct.pack("<I", 1000)
    assert _causes(bytes(lying)) == "garbage"
    no_nul = bytearray(good)
    no_nul[33] = ord("x")  # the NUL of "alpha"
    assert _causes(bytes(no_nul)) == "garbage"
    latin = encode_joint_state(["alpha"], [1.0]).replace(b"alpha", b"alph\xe9")
    assert _causes(latin) == "encoding"
    with pytest.raises(CdrError):
        decode_string(b"\x00\x01\x00\x00\x05\x00\x00\x00abc")


def test_random_garbage_never_raises_anything_but_cdr_error():
    rng = random.Random(25)
    base = encode_joint_state([f"j{i}" for i in range(8)], np.arange(8.0), 9, "b",
                              np.ones(8), np.zeros(8))
    decoder = JointStateDecoder()
    decoder.decode(base)  # cached names: mutated samples go through the cached path too
    for _ in range(3000):
        data = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        data = data[:rng.randint(0, len(data))] if rng.random() < 0.3 else data
        try:
            c = decoder.decode(bytes(data))
        except CdrError:
            continue
        assert len(c.names) == len(c.position) or len(c.position) <= len(data)
