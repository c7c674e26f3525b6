"""Messages that point at the fix (issue 19): each mistake a ROS user makes in the first hour
gets one line naming the fix, and long inputs are cut in every message. Real subprocesses."""

from __future__ import annotations

import json
import os

import pytest

from helpers import ros_domain_id

pytestmark = pytest.mark.timeout(900)


def error_line(result) -> str:
    """The command's one error line; beside it the listener's own drop log may say, once,
    that the core closed its connection (the bus counts and logs every drop)."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.strip().splitlines()
             if not line.startswith(("tf2py-transform-listener:", "tf2py-transform-subscriber:"))]
    assert len(lines) == 1, result.stderr
    return lines[0]


def one_line(result) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("argv, meant", [
    (["static-transform-publisher", "--frame_id", "a", "--child-frame-id", "b"], "--frame-id"),
    (["static-transform-publisher", "--child_frame_id", "b", "--frame-id", "a"],
     "--child-frame-id"),
    (["echo", "map", "base_link", "--raet", "5"], "--rate"),
    (["frames", "--wait_time", "1"], "--wait-time"),
    (["doctor", "-from-bag", "x.mcap"], "--from-bag"),
])
def test_ros1_underscores_and_typos_get_the_flag_meant(tf2py, argv, meant):
    result = tf2py(*argv, timeout=240)
    assert result.returncode == 2
    assert f"did you mean {meant}?" in one_line(result)


def test_a_mistyped_command_gets_the_command_meant(tf2py):
    result = tf2py("eccho", "map", "base_link", timeout=240)
    assert result.returncode == 2
    line = one_line(result)
    assert "invalid choice: 'eccho'" in line and "did you mean `tf2py echo`?" in line


@pytest.mark.parametrize("argv", [
    ["0", "0", "0", "0", "0", "0", "base_link", "laser", "100"],
    ["0", "0", "0", "0", "0", "0", "1", "base_link", "laser", "100"],
])
def test_ros1_period_argument_is_explained(tf2py, argv):
    result = tf2py("static-transform-publisher", *argv, timeout=240)
    assert result.returncode == 1
    line = one_line(result)
    assert "'100' is ROS 1's publishing period" in line and "leave it out" in line


def test_a_huge_frame_id_is_one_cut_line(tf2py):
    frame = "f" * 5000
    result = tf2py("static-transform-publisher", "--frame-id", frame, "--child-frame-id", "b",
                   timeout=240)
    assert result.returncode == 1
    line = one_line(result)
    assert len(line) < 400 and "(5000 characters)" in line and "at most 4096" in line


def test_launching_a_file_that_is_not_a_launch_file_quotes_it_cut(tf2py):
    result = tf2py("launch", "/etc/passwd", timeout=240)
    assert result.returncode == 1
    line = one_line(result)
    assert line.startswith("tf2py launch: error: /etc/passwd") and len(line) < 600


def test_a_huge_unknown_argument_is_cut(tf2py):
    result = tf2py("core", "x" * 10000, timeout=240)
    assert result.returncode == 2 and len(one_line(result)) < 400


def test_ros2_hints_speak_of_ros2_discovery(tf2py):
    env = {"ROS_DOMAIN_ID": str(ros_domain_id(161, 201)),
           "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    result = tf2py("frames", "--core", "ros2://", "--wait-time", "1", env=env, timeout=240)
    assert result.returncode == 1
    line = one_line(result)
    assert "ROS_DOMAIN_ID" in line and "discovery" in line
    assert "tf2py core" not in line


@pytest.fixture
def keyed_core(spawn, tf2py_command, tmp_path):
    """A `tf2py core --keys SITE` on free ports: (process, address)."""
    site = tmp_path / "site"
    from tf2py.transport.zmq.keys import create_site

    create_site(site)
    proc = spawn([*tf2py_command, "core", "--address", "tcp://127.0.0.1:0", "--keys", str(site)])
    line = proc.wait_for_line("ready at ", timeout=120)
    return proc, line.split("ready at ", 1)[1].strip()


def test_a_keyless_client_on_a_keyed_core_is_told_the_core_needs_keys(tf2py, keyed_core):
    proc, address = keyed_core
    env = {k: v for k, v in os.environ.items() if k != "TF2PY_KEYS"}
    result = tf2py("frames", "--core", address, "--wait-time", "0.5",
                   env={**env, "TF2PY_KEYS": ""}, timeout=240)
    assert result.returncode == 1
    line = error_line(result)
    assert f"the core at {address} needs keys: pass --keys DIR" in line


def test_doctor_on_a_keyed_core_without_keys_says_so(tf2py, keyed_core):
    _, address = keyed_core
    result = tf2py("doctor", "--core", address, "--duration", "0.5", env={"TF2PY_KEYS": ""},
                   timeout=240)
    assert result.returncode == 1 and "needs keys" in error_line(result)


@pytest.mark.parametrize("name", ["foxglove.sdk.v1", "foxglove.websocket.v1"])
def test_foxglove_serves_clients_offering_either_protocol_name(spawn, tf2py_command, core,
                                                               name):
    from websockets.sync.client import connect

    proc = spawn([*tf2py_command, "foxglove", "--core", core, "--port", "0"])
    url = proc.wait_for_line("serving the frame tree", timeout=120).rsplit(" on ", 1)[1]
    with connect(url, subprotocols=[name], open_timeout=10) as ws:
        assert ws.subprotocol == name
        first = json.loads(ws.recv(timeout=10))
        assert first["op"] == "serverInfo"


def test_foxglove_refuses_a_client_offering_neither_name(spawn, tf2py_command, core):
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    proc = spawn([*tf2py_command, "foxglove", "--core", core, "--port", "0"])
    url = proc.wait_for_line("serving the frame tree", timeout=120).rsplit(" on ", 1)[1]
    with pytest.raises(InvalidStatus, match="400"):
        connect(url, subprotocols=["something.else"], open_timeout=10)
