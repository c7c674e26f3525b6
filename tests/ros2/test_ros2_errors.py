"""Bad input on the DDS topics, and a missing ``ros2`` extra: clear, counted, nothing lost."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tf2py
from conftest import DISCOVERY_TIMEOUT, start_talking
from helpers import wait_for


def test_garbage_and_wrong_typed_samples_from_ros2_are_dropped_and_counted(rclpy_peer):
    """A real ROS 2 publisher sends raw bytes on /tf. Malformed CDR (too short, a count or a
    string past the end, another message type's bytes) is refused by Cyclone DDS itself,
    before tf2py sees it (Cyclone logs it; it offers no counter). What is well-formed CDR but
    no TFMessage tf2py can use is dropped and counted by tf2py; nothing else is lost."""
    from tf2py.transport.ros2 import cdr

    def sample(parents, values, stamp=7_000_000_001):
        return cdr.encode_tf_columns(parents, ["base_link"] * len(parents), [stamp] * len(parents),
                                     [values] * len(parents))

    good = sample(["map"], [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0])
    samples = [
        cdr.HEADER_LE + b"\x01\x00\x00\x00",                # too short
        cdr.encode_time(5_000_000_123),                     # a rosgraph_msgs/Clock on /tf
        cdr.HEADER_LE + b"\xff\xff\xff\x00" + bytes(64),     # a count past the end
        good[:16] + b"\xff\x00\x00\x00" + good[20:],         # a string past the end
        good.replace(b"map\x00", b"m\xffp\x00"),             # well-formed, not UTF-8: garbage
        sample(["map"], [float("nan"), 0, 0, 0, 0, 0, 1]),  # well-formed, NaN: invalid
        good,
    ]
    buffer = tf2py.Buffer()
    with tf2py.TransformListener(buffer, core="ros2://") as listener:
        peer = rclpy_peer("raw", *[s.hex() for s in samples])
        start_talking(peer, listener)
        peer.wait_for_events("sent")
        wait_for(lambda: listener.stats()["dropped"] == {"garbage": 1, "invalid": 1}
                 and listener.stored_transforms == 1, DISCOVERY_TIMEOUT,
                 message=f"the two bad samples counted, the good one stored: {listener.stats()}")
    assert listener.received_messages == 2  # the NaN one and the good one decoded
    t = buffer.lookup_transform("map", "base_link", tf2py.Time())
    assert (t.transform.translation.x, t.header.stamp.sec, t.header.stamp.nanosec) == (1.0, 7, 1)


def test_invalid_transforms_from_ros2_are_dropped_the_rest_stored(ros_domain):
    from tf2py.transport.ros2 import cdr, types
    from tf2py.transport.ros2.participant import TF_QOS, Participant

    buffer = tf2py.Buffer()
    with tf2py.TransformListener(buffer, core="ros2://") as listener, \
            Participant("ros2://") as other:
        writer = other.writer("rt/tf", types.TFMessage, TF_QOS)
        wait_for(lambda: listener.matched_publishers() > 0 and writer.matched_subscriptions() > 0,
                 DISCOVERY_TIMEOUT, message="the writer and the listener matched")
        writer.write(cdr.encode_tf_columns(
            ["map", "map", "map", ""], ["a", "b", "c", "d"], [1, 1, 1, 1],
            [[0, 0, 0, 0, 0, 0, 1], [float("nan"), 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 2],
             [0, 0, 0, 0, 0, 0, 1]]))
        wait_for(lambda: listener.stats()["dropped"].get("invalid") == 3, DISCOVERY_TIMEOUT,
                 message="the message")
    # NaN, a quaternion of norm 2, an empty parent: dropped and counted; the valid row stored.
    assert listener.stats()["dropped"] == {"invalid": 3}
    assert listener.stored_transforms == 1
    assert buffer.can_transform("map", "a", tf2py.Time())
    assert not any(buffer.can_transform("map", child, tf2py.Time()) for child in "bcd")


_WITHOUT_CYCLONEDDS = "import sys; sys.modules['cyclonedds'] = None; "


def test_without_the_extra_the_api_says_how_to_install_it():
    code = _WITHOUT_CYCLONEDDS + (
        "import tf2py\n"
        "try:\n"
        "    tf2py.TransformListener(tf2py.Buffer(), core='ros2://')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("ros2:// needs Cyclone DDS's Python binding: pip install "
                                  "'tf2py[ros2]' (or pip install cyclonedds)")


@pytest.mark.parametrize("command", [
    ["echo", "--core", "ros2://", "map", "base_link"],
    ["bridge", "ros2://", "tcp://127.0.0.1:7400"],
    ["static-transform-publisher", "--core", "ros2://7", "--frame-id", "a",
     "--child-frame-id", "b"],
])
def test_without_the_extra_a_command_fails_with_one_line(command):
    code = _WITHOUT_CYCLONEDDS + (
        "from tf2py.cli.main import main; sys.exit(main(sys.argv[1:]))")
    out = subprocess.run([sys.executable, "-c", code, *command], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1, out.stderr
    assert "pip install 'tf2py[ros2]'" in out.stderr
    assert out.stderr.startswith(f"tf2py {command[0]}: error: ros2:// needs")


@pytest.mark.parametrize("address", ["ros2://233", "ros2://x", "ros2://1/2"])
def test_a_bad_ros2_address_is_refused_with_one_line(address, tf2py_command):
    out = subprocess.run([*tf2py_command, "record", "--core", address, "/tmp/never.mcap"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and address in out.stderr, out.stderr
