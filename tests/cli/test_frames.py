"""`tf2py frames`: the indented tree with each edge's parent, broadcaster, rate and age; the
alert for unconnected trees; a clear error when nothing is heard."""

from __future__ import annotations

import re
import signal
import subprocess

import pytest

from cli_support import free_bus_address
from tf2py import make_transform
from tf2py.cli.frames import format_tree, frame_trees


def test_frames_prints_the_tree_with_parent_broadcaster_rate_and_age(core, repeat, latch, tf2py):
    sender = repeat(core, [make_transform("map", "odom", (1, 0, 0)),
                           make_transform("odom", "base_link")], live=True)
    statics = latch(core, [make_transform("base_link", "laser", (0.2, 0, 0.1))])
    # (3 s: a loaded machine may starve the sender for a second; one sample reads as 10 kHz)
    result = tf2py("frames", "--wait-time", "3.0", "--core", core)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"3 frames with a parent, heard on {core} in 3 s:"
    assert lines[1] == "map"
    assert re.fullmatch(
        rf"`-- odom  \(parent map, broadcaster {re.escape(sender.authority)}, "
        r"(\d+\.\d\d) Hz, (\d+\.\d{3}) s old\)", lines[2])
    rate, age = (float(v) for v in re.search(r"(\S+) Hz, (\S+) s old", lines[2]).groups())
    assert 2.0 < rate < 200.0  # sent every 50 ms (generous: a loaded machine bunches)
    assert 0.0 <= age < 5.0
    assert lines[3].startswith("    `-- base_link  (parent odom, ")
    assert lines[4] == (f"        `-- laser  (parent base_link, broadcaster "
                        f"{statics.authority}, static)")
    assert "ALERT" not in result.stdout


def test_frames_alerts_when_there_are_unconnected_trees(core, latch, tf2py):
    latch(core, [make_transform("map", "odom"), make_transform("world", "robot2"),
                 make_transform("robot2", "arm")])
    result = tf2py("frames", "--wait-time", "0.5", "--core", core)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "map"
    assert lines[2].startswith("`-- odom  (parent map, broadcaster ")
    assert lines[3:6] == ["world", "`-- robot2  (parent world, broadcaster "
                          + lines[2].split("broadcaster ", 1)[1],
                          "    `-- arm  (parent robot2, broadcaster "
                          + lines[2].split("broadcaster ", 1)[1]]
    assert lines[-1] == ("ALERT: the frames form 2 unconnected trees (roots: map, world); a lookup "
                         "between frames of different trees fails with ConnectivityException.")


def test_frames_without_any_data_is_an_error_naming_the_core(tf2py):
    nowhere = free_bus_address()
    result = tf2py("frames", "--wait-time", "0.2", "--core", nowhere)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"tf2py frames: error: no tf data received from the core at {nowhere} in 0.2 s (is "
        "`tf2py core` running there, and is anything broadcasting?)")


def test_frames_refuses_a_bad_wait_time(tf2py):
    result = tf2py("frames", "--wait-time", "soon")
    assert result.returncode == 2
    assert result.stderr.strip() == ("tf2py frames: error: --wait-time must be a number of "
                                     "seconds, got 'soon'")


def info(parent, is_static=True):
    return {"parent": parent, "broadcaster": "b", "rate": 10000.0, "most_recent_ns": 0,
            "oldest_ns": 0, "buffer_length": 1, "is_static": is_static}


def test_frames_with_a_huge_wait_time_listens_until_stopped(spawn, tf2py_command):
    # 1e300 s is more than time.sleep accepts in one call; it used to crash at once.
    proc = spawn([*tf2py_command, "frames", "--wait-time", "1e300", "--core",
                  free_bus_address()])
    with pytest.raises(subprocess.TimeoutExpired):  # still listening after 3 s
        proc.popen.wait(timeout=3)
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0, proc.output()
    assert "Traceback" not in proc.output()


def test_frame_trees_finds_frames_in_a_loop():
    roots, _, looped = frame_trees({"a": info("b"), "b": info("a"), "c": info("root")})
    assert roots == ["root"]
    assert looped == ["a", "b"]


def test_format_tree_indents_siblings_and_their_children():
    text = format_tree({"b": info("a"), "c": info("b"), "d": info("a")}, now_ns=0)
    assert [line.split("  (")[0] for line in text.splitlines()] == [
        "a", "+-- b", "|   `-- c", "`-- d"]
