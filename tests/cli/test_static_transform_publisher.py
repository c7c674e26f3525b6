"""`tf2py static-transform-publisher`: the ROS 2 flags and the old positional forms reach a
listener with the right numbers; tf2's errors for every bad combination."""

from __future__ import annotations

import math
import signal

import numpy as np
import pytest

from cli_support import free_bus_address
from tf2py import Buffer, TransformListener
from tf2py.buffer.messages import quaternion_from_rpy


def received(core, frame_id, child_frame_id):
    """The transform a late listener gets for (frame_id, child_frame_id) from the latch."""
    buffer = Buffer()
    with TransformListener(buffer, core=core):
        return buffer.lookup_transform(frame_id, child_frame_id, 0, timeout=20.0)


def assert_same_rotation(q, expected):
    q = np.array([q.x, q.y, q.z, q.w])
    expected = np.array(expected) / np.linalg.norm(expected)
    assert min(np.abs(q - expected).max(), np.abs(q + expected).max()) < 1e-9


def publish(spawn, tf2py_command, core, *args):
    proc = spawn([*tf2py_command, "static-transform-publisher", *args, "--core", core]
                 if not args or args[0].startswith("--") else
                 [*tf2py_command, "static-transform-publisher", "--core", core, *args])
    proc.wait_for_line("Spinning until stopped - publishing transform")
    # The block's lines arrive one by one: wait for its last line too.
    proc.wait_for_line(lambda line: line.startswith("from '") and "' to '" in line)
    return proc


def test_flags_with_roll_pitch_yaw_reach_a_listener(core, spawn, tf2py_command):
    publish(spawn, tf2py_command, core, "--x", "1", "--y", "-2", "--z", "3.5", "--roll", "0.1",
            "--pitch", "0.2", "--yaw", "-0.3", "--frame-id", "base_link",
            "--child-frame-id", "laser")
    t = received(core, "base_link", "laser")
    assert (t.header.frame_id, t.child_frame_id) == ("base_link", "laser")
    tr = t.transform.translation
    assert (tr.x, tr.y, tr.z) == pytest.approx((1.0, -2.0, 3.5), abs=1e-12)
    assert_same_rotation(t.transform.rotation, quaternion_from_rpy(0.1, 0.2, -0.3))


def test_flags_with_a_quaternion_reach_a_listener(core, spawn, tf2py_command):
    publish(spawn, tf2py_command, core, "--qx", "0", "--qy", "0", "--qz", "0.7071067811865476",
            "--qw", "0.7071067811865476", "--frame-id", "a", "--child-frame-id", "b")
    t = received(core, "a", "b")
    assert_same_rotation(t.transform.rotation, (0, 0, math.sqrt(0.5), math.sqrt(0.5)))
    tr = t.transform.translation
    assert (tr.x, tr.y, tr.z) == (0.0, 0.0, 0.0)


def test_prints_tf2s_spinning_block(core, spawn, tf2py_command):
    proc = publish(spawn, tf2py_command, core, "--x", "1.5", "--yaw", str(math.pi),
                   "--frame-id", "map", "--child-frame-id", "odom")
    lines = proc.output().splitlines()
    start = lines.index("Spinning until stopped - publishing transform")
    assert lines[start + 1] == "translation: ('1.500000', '0.000000', '0.000000')"
    assert lines[start + 2] == "rotation: ('0.000000', '0.000000', '1.000000', '0.000000')"
    assert lines[start + 3] == "from 'map' to 'odom'"


def test_old_style_eight_arguments_are_x_y_z_yaw_pitch_roll(core, spawn, tf2py_command):
    proc = publish(spawn, tf2py_command, core, "1", "2", "3", "0.3", "0.2", "0.1", "p", "c")
    assert "Old-style arguments are deprecated; see --help for new-style arguments" in \
        proc.output()
    t = received(core, "p", "c")
    tr = t.transform.translation
    assert (tr.x, tr.y, tr.z) == (1.0, 2.0, 3.0)
    assert_same_rotation(t.transform.rotation, quaternion_from_rpy(0.1, 0.2, 0.3))


def test_old_style_nine_arguments_are_x_y_z_and_a_quaternion(core, spawn, tf2py_command):
    publish(spawn, tf2py_command, core, "0.5", "0", "-1", "1", "0", "0", "0", "p", "c")
    t = received(core, "p", "c")
    tr = t.transform.translation
    assert (tr.x, tr.y, tr.z) == (0.5, 0.0, -1.0)
    assert_same_rotation(t.transform.rotation, (1, 0, 0, 0))


def test_stops_cleanly_on_sigterm(core, spawn, tf2py_command):
    proc = publish(spawn, tf2py_command, core, "--frame-id", "a", "--child-frame-id", "b")
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0


def test_says_when_no_core_answers_and_keeps_publishing(spawn, tf2py_command):
    nowhere = free_bus_address()
    proc = publish(spawn, tf2py_command, nowhere, "--frame-id", "a", "--child-frame-id", "b")
    proc.wait_for_line(f"tf2py static-transform-publisher: no core answered at {nowhere} "
                       "within 3 s (is `tf2py core` running there?); the transform stays "
                       "latched for when one does", timeout=30)
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0


@pytest.mark.parametrize("args, message", [
    (["--frame-id", "a", "--child-frame-id", "b", "--qx", "1", "--yaw", "1"],
     "Cannot specify both quaternion and Euler rotations"),
    (["--frame-id", "a", "--child-frame-id", "b", "--x"], "Not enough arguments for --x"),
    (["--frame-id", "a", "--child-frame-id", "b", "--roll", "abc"],
     "Failed to parse --roll argument as float"),
    (["--frame-id", "a", "--child-frame-id", "b", "--qw", "nan"],
     "Failed to parse --qw argument as float"),
    (["1", "2", "3", "a", "b"], "Extra unparsed arguments on command-line"),
    (["1", "2", "3", "x", "0", "0", "a", "b"], "Failed to parse yaw argument as float"),
    (["--child-frame-id", "b"], "Frame id must not be empty"),
    (["--frame-id", "a"], "Child frame id must not be empty"),
    ([], "Frame id must not be empty"),
    (["--x", "1", "0", "0", "0", "0", "0", "0", "a", "b"],
     "Cannot specify both new-style (flags) and old-style (arguments)"),
    (["--frame-id", "a", "--child-frame-id", "a"],
     "cannot publish static transform from 'a' to 'a', exiting"),
    (["--frame-id", "a", "--child-frame-id", "b", "--qw", "0"],
     "the quaternion (0, 0, 0, 0) is not a rotation"),
], ids=["quaternion-and-euler", "missing-value", "not-a-float", "nan", "wrong-count",
        "old-style-not-a-float", "no-frame-id", "no-child-frame-id", "nothing", "both-styles",
        "same-frames", "zero-quaternion"])
def test_bad_arguments_give_tf2s_error_in_one_line(tf2py, args, message):
    result = tf2py("static-transform-publisher", *args, "--core", "tcp://127.0.0.1:9")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == \
        f"tf2py static-transform-publisher: error: {message}"
    assert "Spinning" not in result.stdout
