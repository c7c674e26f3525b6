"""The live demo: `tf2py launch launch/demo.yaml` brings up a core, a buffer server, the
simulated robot and an echo; `tf2py echo map base_link --once` against it succeeds, through
the bus and through the server; Ctrl-C stops every process."""

from __future__ import annotations

import math
import os
import re
import signal
import socket
import subprocess

import pytest

from helpers import free_port
from tf2py import Buffer, TransformListener
from tf2py.demo import moving_transforms

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(REPO, "launch", "demo.yaml")


def free_bus_port() -> int:
    """A free port whose successor is free too (a core uses PORT and PORT + 1)."""
    for _ in range(100):
        port = free_port()
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two consecutive free ports")


@pytest.fixture
def demo(spawn, tf2py_command):
    """The demo launch running on free ports; yields (proc, env)."""
    core = free_bus_port()
    server = free_port()
    while server in (core, core + 1):
        server = free_port()
    env = {"TF2PY_CORE": f"tcp://127.0.0.1:{core}", "TF2PY_SERVER": f"tcp://127.0.0.1:{server}"}
    proc = spawn([*tf2py_command, "launch", DEMO], env=env)
    yield proc, env


def run_echo(tf2py_command, env, *args):
    return subprocess.run([*tf2py_command, "echo", "map", "base_link", "--once", "--timeout",
                           "30", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env}, stdin=subprocess.DEVNULL)


def test_demo_streams_transforms_and_echo_once_succeeds(demo, tf2py_command):
    proc, env = demo
    proc.wait_for_line("[echo] At time", timeout=30)
    proc.wait_for_line("[echo] - Matrix:", timeout=10)
    for args in ([], ["--server", env["TF2PY_SERVER"]]):
        result = run_echo(tf2py_command, env, *args)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert re.fullmatch(r"At time \d+\.\d{9}", lines[0])
        x, y, z = (float(v) for v in re.fullmatch(
            r"- Translation: \[(.*), (.*), (.*)\]", lines[1]).groups())
        # On (near) the 2 m circle, give or take the slow map -> odom drift (< 0.4 m).
        assert abs(math.hypot(x, y - 2.0) - 2.0) < 0.5 and z == 0.0
        assert lines[5] == "- Matrix:" and len(lines) == 10


def test_demo_has_every_frame_of_the_robot(demo):
    proc, env = demo
    proc.wait_for_line("[robot] tf2py demo:", timeout=30)
    buffer = Buffer()
    with TransformListener(buffer, core=env["TF2PY_CORE"]):
        for frame in ("base_link", "left_wheel", "right_wheel", "laser", "camera",
                      "camera_optical"):
            buffer.lookup_transform("map", frame, 0, timeout=30)
    assert buffer.get_frames() == sorted(["map", "odom", "base_link", "left_wheel",
                                          "right_wheel", "laser", "camera", "camera_optical"])
    assert not buffer.frames_info()["base_link"]["is_static"]
    assert buffer.frames_info()["laser"]["is_static"]


def test_demo_stops_every_process_on_ctrl_c(demo):
    proc, _ = demo
    proc.wait_for_line("[echo] At time", timeout=30)
    pids = [int(p) for p in re.findall(r"^\[launch\] started \S+ \(pid (\d+)\)", proc.output(),
                                       re.M)]
    assert len(pids) == 4
    proc.signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert proc.output().count("finished cleanly") == 4


def test_the_robot_drives_a_circle_of_two_metres():
    for t in (0.0, 3.0, 10.0, 25.1):
        base = moving_transforms(t, 0)[0]
        x, y = base.transform.translation.x, base.transform.translation.y
        assert math.hypot(x, y - 2.0) == pytest.approx(2.0)
