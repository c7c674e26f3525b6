"""Ctrl-C (SIGINT) during a long `frames --wait-time 30`, `doctor --duration 30` or
`view-frames --wait-time 30` ends the listening, prints what was heard, and exits 0, as
ROS's tools do: real subprocesses on a real core, stopped once they say they hear."""

from __future__ import annotations

import json
import signal

import pytest

from tf2py import make_transform

HEARING = "hearing transforms from the core at "


def _robot(core_address: str, repeat) -> None:
    repeat(core_address, [make_transform("odom", "base_link", (1, 0, 0)),
                          make_transform("base_link", "laser", (0.2, 0, 0))], live=True)


def _interrupted(spawn, tf2py_command, args, cwd=None):
    proc = spawn([*tf2py_command, *args], cwd=cwd)
    line = proc.wait_for_line(HEARING, timeout=60)
    assert "; Ctrl-C reports what was heard now, else in " in line
    proc.signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0, proc.output()
    return proc


def test_frames_prints_the_tree_heard_before_ctrl_c(spawn, tf2py_command, core, repeat):
    _robot(core, repeat)
    proc = _interrupted(spawn, tf2py_command, ["frames", "--core", core, "--wait-time", "30"])
    output = proc.output()
    assert f"2 frames with a parent, heard on {core} in " in output
    assert "s (stopped early):" in output
    assert "`-- base_link  (parent odom" in output and "laser" in output


def test_doctor_reports_what_it_heard_before_ctrl_c(spawn, tf2py_command, core, repeat):
    _robot(core, repeat)
    proc = _interrupted(spawn, tf2py_command,
                        ["doctor", "--core", core, "--duration", "30", "--json"])
    text = "\n".join(line for line in proc.lines if not line.startswith("tf2py doctor: hearing"))
    report = json.loads(text)
    assert report["messages"] > 0 and report["frames"] == 2
    assert report["listened_s"] < 30


def test_view_frames_draws_what_it_heard_before_ctrl_c(spawn, tf2py_command, core, repeat,
                                                       tmp_path):
    _robot(core, repeat)
    proc = _interrupted(spawn, tf2py_command,
                        ["view-frames", "--core", core, "--wait-time", "30", "-o", "tree"],
                        cwd=tmp_path)
    assert "Wrote tree.gv" in proc.output()
    drawing = (tmp_path / "tree.gv").read_text()
    assert '"odom" -> "base_link"' in drawing and '"base_link" -> "laser"' in drawing


@pytest.mark.parametrize("args", [["frames", "--wait-time", "2"], ["doctor", "--duration", "2"]])
def test_a_short_wait_says_nothing_extra(tf2py_command, core, repeat, args):
    import subprocess

    _robot(core, repeat)
    result = subprocess.run([*tf2py_command, *args, "--core", core], capture_output=True,
                            text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode in (0, 1), result.stderr  # doctor: 1 when it finds problems
    assert "hearing transforms" not in result.stderr
