"""`tf2py echo`: tf2_echo's block with the numbers of what was broadcast, the waiting line,
--once, --server, the rate, and its errors."""

from __future__ import annotations

import math
import re
import signal
import time

import pytest

from cli_support import free_address, wait_for
from tf2py import make_transform
from tf2py.buffer.messages import quaternion_from_rpy
from tf2py.cli.common import CommandError
from tf2py.cli.echo import format_block, wait_until_available

YAW_90_BLOCK = [
    "At time 5.050000000",
    "- Translation: [1.000, 2.000, 3.000]",
    "- Rotation: in Quaternion [0.000, 0.000, 0.707, 0.707]",
    "- Rotation: in RPY (radian) [0.000, -0.000, 1.571]",
    "- Rotation: in RPY (degree) [0.000, -0.000, 90.000]",
    "- Matrix:",
    "  0.000 -1.000  0.000  1.000",
    "  1.000  0.000  0.000  2.000",
    "  0.000  0.000  1.000  3.000",
    "  0.000  0.000  0.000  1.000",
]


def yaw_90(parent="map", child="base_link"):
    return make_transform(parent, child, (1.0, 2.0, 3.0), rpy=(0.0, 0.0, math.pi / 2), stamp=5.05)


def test_format_block_is_tf2_echo_block_for_yaw_90():
    assert format_block(yaw_90()).splitlines() == YAW_90_BLOCK


def test_format_block_rpy_lines_match_tf2_for_set_rpy_0_1_0_2_0_3():
    t = make_transform("a", "b", rotation=quaternion_from_rpy(0.1, 0.2, 0.3), stamp=1)
    lines = format_block(t).splitlines()
    assert lines[2] == "- Rotation: in Quaternion [0.034, 0.106, 0.144, 0.983]"
    assert lines[3] == "- Rotation: in RPY (radian) [0.100, 0.200, 0.300]"
    assert lines[4] == "- Rotation: in RPY (degree) [5.730, 11.459, 17.189]"


def test_format_block_prints_large_stamps_to_the_nanosecond():
    t = make_transform("a", "b", stamp=0)
    t.header.stamp = type(t.header.stamp)(1_700_000_000, 123_456_789)
    assert format_block(t).splitlines()[0] == "At time 1700000000.123456789"


def test_echo_once_prints_the_broadcast_transform_as_tf2_echo_does(core, repeat, tf2py):
    repeat(core, [yaw_90()])
    result = tf2py("echo", "map", "base_link", "--once", "--timeout", "20", "--core", core)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == YAW_90_BLOCK


def test_echo_first_argument_is_the_lookup_target(core, repeat, tf2py):
    # The pose of map in base_link: the inverse of (1, 2, 3) with yaw 90 degrees.
    repeat(core, [yaw_90()])
    result = tf2py("echo", "base_link", "map", "--once", "--timeout", "20", "--core", core)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "- Translation: [-2.000, 1.000, -3.000]"
    assert re.fullmatch(r"- Rotation: in RPY \(degree\) \[-?0\.000, -?0\.000, -90\.000\]", lines[4])


def test_echo_composes_a_chain_of_frames(core, repeat, latch, tf2py):
    repeat(core, [make_transform("map", "odom", (1.0, 0.0, 0.0), stamp=7.0)])
    latch(core, [make_transform("odom", "laser", (0.0, 0.5, 0.25), rpy=(0.1, 0.2, 0.3))])
    result = tf2py("echo", "map", "laser", "--once", "--timeout", "20", "--core", core)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "At time 7.000000000"
    assert lines[1] == "- Translation: [1.000, 0.500, 0.250]"
    assert lines[4] == "- Rotation: in RPY (degree) [5.730, 11.459, 17.189]"


def test_echo_prints_a_block_at_the_rate_until_interrupted(core, repeat, spawn, tf2py_command):
    repeat(core, [yaw_90()])
    proc = spawn([*tf2py_command, "echo", "map", "base_link", "20", "--core", core])
    wait_for(lambda: proc.output().count("At time") >= 5, timeout=20, message=proc.output())
    proc.signal(signal.SIGINT)
    assert proc.wait() == 0
    blocks = proc.output().split("At time")[1:]
    assert all(("At time" + b).strip().splitlines() == YAW_90_BLOCK for b in blocks[:-1])


def test_echo_at_a_tiny_rate_prints_one_block_and_waits_without_crashing(core, repeat, spawn,
                                                                         tf2py_command):
    # 1e-300 Hz: a period too long for time.sleep (and infinite in nanoseconds).
    repeat(core, [yaw_90()])
    proc = spawn([*tf2py_command, "echo", "map", "base_link", "1e-300", "--core", core])
    proc.wait_for_line(YAW_90_BLOCK[-1], timeout=20)
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0, proc.output()
    assert "Traceback" not in proc.output()
    assert proc.output().count("At time") == 1


def test_echo_stops_cleanly_on_sigterm(core, spawn, tf2py_command):
    proc = spawn([*tf2py_command, "echo", "map", "nowhere", "--core", core])
    proc.wait_for_line("Waiting for transform")
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0


def test_echo_says_once_a_second_why_it_waits(core, repeat, spawn, tf2py_command):
    repeat(core, [yaw_90()])
    proc = spawn([*tf2py_command, "echo", "map", "laser", "--core", core])
    line = proc.wait_for_line("Waiting for transform", timeout=20)
    assert line == ('Waiting for transform map ->  laser: Invalid frame ID "laser" passed to '
                    "canTransform argument source_frame - frame does not exist")
    wait_for(lambda: proc.output().count("Waiting for transform") >= 2, timeout=20)
    assert "At time" not in proc.output()


def test_echo_gives_up_at_the_timeout_saying_what_it_waited_for(core, tf2py):
    result = tf2py("echo", "map", "base_link", "--once", "--timeout", "1.5", "--core", core)
    assert result.returncode == 1
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("tf2py echo: error: no transform map -> base_link from the core at "
                            f"{core} within 1.5 s: ")
    assert "does not exist" in error
    assert "is `tf2py core` running there" in error
    assert result.stdout == ""


def test_echo_with_an_unreachable_core_fails_with_one_line(tf2py):
    nowhere = free_address()
    result = tf2py("echo", "map", "base_link", "--once", "--timeout", "1", "--core", nowhere)
    assert result.returncode == 1
    assert re.fullmatch(r"tf2py echo: error: no transform map -> base_link from the core at "
                        + re.escape(nowhere) + r" within 1 s: .*is `tf2py core` running there.*",
                        result.stderr.strip().splitlines()[-1])


def test_echo_via_the_buffer_server(core, repeat, spawn, tf2py_command, tf2py):
    repeat(core, [yaw_90()])
    server = spawn([*tf2py_command, "server", "--address", "tcp://127.0.0.1:0", "--core", core])
    address = server.wait_for_line("ready at ").split("ready at ", 1)[1].strip()
    result = tf2py("echo", "map", "base_link", "--once", "--timeout", "20", "--server", address)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == YAW_90_BLOCK


def test_echo_with_an_unreachable_server_fails_with_one_line(tf2py):
    nowhere = free_address()
    result = tf2py("echo", "map", "base_link", "--once", "--timeout", "1", "--server", nowhere)
    assert result.returncode == 1
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith(f"tf2py echo: error: no transform map -> base_link from the buffer "
                            f"server at {nowhere} within 1 s: ")
    assert "is `tf2py server` running there?" in error


def test_echo_refuses_a_rate_that_is_not_a_number(tf2py):
    result = tf2py("echo", "map", "base_link", "--rate", "fast")
    assert result.returncode == 2
    assert result.stderr.strip() == ("tf2py echo: error: Failed to convert rate argument 'fast' "
                                     "to a floating-point number")


def test_echo_takes_the_rate_as_a_third_argument_as_tf2_echo_does(tf2py):
    result = tf2py("echo", "map", "base_link", "x1")
    assert result.returncode == 2
    assert result.stderr.strip() == ("tf2py echo: error: Failed to convert rate argument 'x1' "
                                     "to a floating-point number")


def test_echo_refuses_two_rates(tf2py):
    result = tf2py("echo", "map", "base_link", "2", "--rate", "3")
    assert result.returncode == 2
    assert result.stderr.strip() == ("tf2py echo: error: give the rate once: as the third "
                                     "argument or as --rate")


def test_echo_refuses_a_rate_that_is_not_positive(tf2py):
    result = tf2py("echo", "map", "base_link", "--rate", "0")
    assert result.returncode == 2
    assert result.stderr.strip() == "tf2py echo: error: rate must be a positive number of Hz, got '0'"


def test_echo_refuses_core_and_server_together(tf2py):
    result = tf2py("echo", "a", "b", "--core", "tcp://127.0.0.1:1", "--server", "tcp://127.0.0.1:2")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "not allowed with argument" in result.stderr


def test_echo_refuses_a_malformed_core_address(tf2py):
    result = tf2py("echo", "a", "b", "--core", "localhost")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("tf2py echo: error: invalid address 'localhost'")


def test_echo_needs_two_frames(tf2py):
    result = tf2py("echo", "map")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("frames, message", [
    (("", "base_link"), 'Invalid frame ID "" passed to lookupTransform argument target_frame - '
                        "in tf2 frame_ids cannot be empty"),
    (("map", "/base_link"), 'Invalid frame ID "/base_link" passed to lookupTransform argument '
                            "source_frame - in tf2 frame_ids cannot start with a '/' (write "
                            "'base_link')"),
], ids=["empty", "leading-slash"])
def test_echo_refuses_a_frame_id_no_lookup_accepts_at_once(tf2py, frames, message):
    result = tf2py("echo", *frames, "--timeout", "30")
    assert result.returncode == 2
    assert result.stderr.strip() == f"tf2py echo: error: {message}"


def test_echo_refuses_a_malformed_server_address_in_one_line(tf2py):
    result = tf2py("echo", "a", "b", "--server", "junk", "--timeout", "1")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("tf2py echo: error: invalid address 'junk'")


class _AnswersAtOnce:
    """An echo source that is never ready and says why without waiting (as a server's
    immediate error would)."""

    where = "a test source"

    def __init__(self):
        self.calls = 0

    def wait(self, target_frame, source_frame, timeout):
        self.calls += 1
        return "not yet"

    def hint(self):
        return ""


def test_echo_waiting_lines_stay_one_per_period_when_the_source_answers_at_once(capsys):
    source = _AnswersAtOnce()
    deadline = time.monotonic() + 0.5
    with pytest.raises(CommandError, match="within 0.5 s: not yet"):
        wait_until_available(source, "map", "base_link", deadline, "0.5", period=0.1)
    # 0.5 s at one line per 0.1 s: about 5 (a busy loop made thousands).
    waiting = capsys.readouterr().err.count("Waiting for transform map ->  base_link: not yet")
    assert 1 <= waiting <= 6
    assert source.calls <= 7
