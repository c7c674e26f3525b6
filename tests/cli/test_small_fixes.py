"""Small things a newcomer met (issue 29, item 7), each shown fixed: one prefix on a core's
bind error, `zenoh:/...` answered naming `zenoh://`, no stray period after "Did you mean
...?", two publishers of a frame not also called irregular, a played bag's statics recorded
once, a file that is no launch file answered in a short line, and `python -m tf2py`."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest

from helpers import REPO, free_port
from tf2py import Buffer, BufferClient, BufferServer, Time, TransformException, make_transform
from tf2py.doctor import TF, Observations, diagnose

S = 1_000_000_000
T0 = 1_700_000_000 * S


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "tf2py.cli.main", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _one_line(result) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_core_that_cannot_bind_says_tf2py_core_once():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = _one_line(_run("core", "--address", f"tcp://127.0.0.1:{port}"))
    assert line.startswith(f"tf2py core: error: cannot bind tcp://127.0.0.1:{port} and ")
    assert line.count("tf2py core") == 1


@pytest.mark.parametrize("address, scheme", [("zenoh:/tcp/127.0.0.1:7447", "zenoh"),
                                             ("zenoh:tcp/127.0.0.1:7447", "zenoh"),
                                             ("ros2:", "ros2"), ("tcp:/127.0.0.1:7400", "tcp")])
def test_a_scheme_with_a_slash_missing_is_answered_with_the_scheme_meant(address, scheme):
    result = _run("frames", "--core", address, "--wait-time", "0")
    assert result.returncode == 2
    line = _one_line(result)
    assert f"a {scheme} address starts with {scheme}://" in line, line


def test_did_you_mean_is_not_followed_by_a_stray_period():
    buffer = Buffer()
    buffer.set_transform(make_transform("world", "robot8/base_link", stamp=Time(1)), "test")
    messages = []
    try:
        buffer.lookup_transform("world", "robot8/base_lnk", Time(), timeout=0.01)
    except TransformException as exc:
        messages.append(str(exc))
    with BufferServer(buffer, address="tcp://127.0.0.1:0") as server:
        client = BufferClient(server.address)
        try:
            client.lookup_transform("world", "robot8/base_lnk", Time(), timeout=0.01)
        except TransformException as exc:
            messages.append(str(exc))
    assert len(messages) == 2
    for message in messages:
        assert "Did you mean 'robot8/base_link'? canTransform returned after " in message
        assert "?." not in message


def test_two_publishers_of_a_frame_are_two_authorities_not_an_irregular_rate():
    observations = Observations()
    for i in range(100):  # two localisers at 20 Hz each, 5 ms apart
        for authority, offset_ns in (("localiser_a", 0), ("localiser_b", 5_000_000)):
            t = T0 + i * 50_000_000 + offset_ns
            observations.add(t, TF, authority, ["map"], ["odom"], [t],
                             [(0.01 * i, 0, 0, 0, 0, 0, 1)])
    assert [f.check for f in diagnose(observations)] == ["two_authorities"]


def test_one_publisher_at_an_irregular_rate_is_still_found():
    observations = Observations()
    t = T0
    for i in range(100):
        t += (10 if i % 2 else 90) * 1_000_000
        observations.add(t, TF, "odometry", ["map"], ["odom"], [t], [(0.01 * i, 0, 0, 0, 0, 0, 1)])
    assert "irregular_rate" in [f.check for f in diagnose(observations)]


def test_record_writes_a_played_bags_statics_once(spawn, tf2py_command, tmp_path):
    from bag.bagdata import IDENTITY, write_bag
    from tf2py.bag import read_transforms
    from tf2py.transport.zmq.core import Core

    bag = write_bag(tmp_path / "in.mcap", [
        (True, T0, [("base_link", "laser", T0, IDENTITY)]),
        *[(False, T0 + i * 10_000_000,
           [("odom", "base_link", T0 + i * 10_000_000, (0.01 * i, 0, 0, 0, 0, 0, 1))])
          for i in range(10)]])
    out = tmp_path / "out.mcap"
    with Core("tcp://127.0.0.1:0") as core:
        recorder = spawn([*tf2py_command, "record", str(out), "--core", core.address])
        recorder.wait_for_line("tf2py record: recording to", timeout=60)
        played = _run("play", str(bag), "--core", core.address)
        assert played.returncode == 0, played.stderr
        recorder.signal(signal.SIGINT)
        assert recorder.wait(timeout=60) == 0, recorder.output()
    data = read_transforms(out)
    assert int(data.message_static.sum()) == 1


def test_a_file_that_is_no_launch_file_is_one_short_line():
    result = _run("launch", "/etc/passwd")
    assert result.returncode != 0
    line = _one_line(result)
    assert len(line) <= 200, line
    assert line.startswith("tf2py launch: error: /etc/passwd:1: the top level must be a map")


def test_python_m_tf2py_runs_the_command():
    result = subprocess.run([sys.executable, "-m", "tf2py", "--version"], capture_output=True,
                            text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("tf2py ")
    missing = subprocess.run([sys.executable, "-m", "tf2py", "frames", "--core",
                              f"tcp://127.0.0.1:{free_port()}", "--wait-time", "0"],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1
    assert missing.stderr.startswith("tf2py frames: error: no tf data received")
