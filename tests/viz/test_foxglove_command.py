"""`tf2py foxglove` as a real subprocess: prints the URL once ready, serves what the bus
carries to a real Foxglove protocol client, stops cleanly on SIGINT and SIGTERM, and fails
in one line without the viz extra, on a taken port or a malformed bus address."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest

pytest.importorskip("foxglove")

from foxglove_client import FoxgloveClient, values_of
from helpers import free_port
from tf2py import (
    StaticTransformBroadcaster,
    Time,
    TransformBroadcaster,
    make_transform,
)
from tf2py.transport.zmq.core import Core

URL_LINE = re.compile(r"^Open in Foxglove: https://app\.foxglove\.dev/\?ds=foxglove-websocket"
                      r"&ds\.url=ws%3A%2F%2F127\.0\.0\.1%3A(\d+)$")


@pytest.fixture
def core():
    with Core("tcp://127.0.0.1:0") as c:
        yield c.address


def _start(spawn, tf2py_command, core, port=None):
    proc = spawn([*tf2py_command, "foxglove", "--core", core, "--port", str(port or 0)])
    line = proc.wait_for_line("Open in Foxglove: ")
    match = URL_LINE.match(line)
    assert match, line
    return proc, f"ws://127.0.0.1:{match.group(1)}"


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_command_serves_statics_and_live_transforms_and_stops_cleanly(
        spawn, tf2py_command, core, stop_signal):
    stamp = Time(1_700_000_123, 5)
    with StaticTransformBroadcaster(core=core) as statics:
        # Latched on the bus before the command even starts.
        statics.send_transform(make_transform("base_link", "lidar", (0.5, 0.25, 1.0),
                                              (0.5, 0.5, 0.5, 0.5), stamp=Time(3)))
        proc, url = _start(spawn, tf2py_command, core)
        assert proc.lines[0] == f"tf2py foxglove: serving the frame tree of {core} on {url}"
        with FoxgloveClient(url) as client, TransformBroadcaster(core=core) as broadcaster:
            client.subscribe(client.channel("/tf")["id"])
            client.wait(lambda: any(values_of(t)[1] == "lidar" for t in client.transforms()),
                        what="the static sent before the command started")
            live = make_transform("odom", "base_link", (1.0, 2.0, 0.0), (0, 0, 0.6, 0.8),
                                  stamp=stamp)
            client.wait(lambda: broadcaster.send_transform(live) or any(
                values_of(t)[1] == "base_link" for t in client.transforms()),
                what="the live transform")
        got = {values_of(t)[1]: values_of(t) for t in client.transforms()}
        assert got["lidar"] == ("base_link", "lidar", 3_000_000_000, (0.5, 0.25, 1.0),
                                (0.5, 0.5, 0.5, 0.5))
        assert got["base_link"] == ("odom", "base_link", stamp.nanoseconds, (1.0, 2.0, 0.0),
                                    (0.0, 0.0, 0.6, 0.8))
        proc.signal(stop_signal)
        assert proc.wait(timeout=20) == 0, proc.output()
    assert re.match(r"tf2py foxglove: forwarded \d+ transforms in \d+ messages$",
                    proc.lines[-1]), proc.output()
    assert "Traceback" not in proc.output()


def test_command_without_the_viz_extra_says_how_to_install_it(tmp_path, tf2py_command, core):
    fake = tmp_path / "foxglove"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('No module named foxglove')\n")
    result = subprocess.run([*tf2py_command, "foxglove", "--core", core, "--port", "0"],
                            capture_output=True, text=True, timeout=60,
                            env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "tf2py foxglove: error: the Foxglove view needs the optional library 'foxglove-sdk': "
        "pip install 'tf2py[viz]'")


def test_command_on_a_taken_port_fails_in_one_line(spawn, tf2py_command, core, tmp_path):
    _, url = _start(spawn, tf2py_command, core)
    port = int(url.rsplit(":", 1)[1])
    result = subprocess.run([*tf2py_command, "foxglove", "--core", core, "--port", str(port)],
                            capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and re.fullmatch(
        rf"tf2py foxglove: error: cannot serve on 127\.0\.0\.1:{port}: .*in use.*", lines[0]), \
        result.stderr


@pytest.mark.parametrize("args, message", [
    (["--core", "nowhere"], "invalid address 'nowhere'"),
    (["--port", "70000"], "--port must be 0..65535, got 70000"),
])
def test_command_refuses_bad_arguments_in_one_line(tf2py_command, args, message):
    result = subprocess.run([*tf2py_command, "foxglove", "--port", "0", *args],
                            capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_command_warns_when_serving_beyond_loopback(spawn, tf2py_command, core):
    port = free_port()
    proc = spawn([*tf2py_command, "foxglove", "--core", core, "--host", "0.0.0.0",
                  "--port", str(port)])
    proc.wait_for_line("Open in Foxglove: ")
    assert any("warning: serving on 0.0.0.0" in line for line in proc.lines), proc.output()
    # The client still talks to it over loopback.
    with FoxgloveClient(f"ws://127.0.0.1:{port}") as client:
        client.channel("/tf")
    proc.signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0


def test_python_module_runs_without_the_extra_installed_until_used(tmp_path):
    # `import tf2py.viz` is cheap and does not need foxglove-sdk; using it does.
    fake = tmp_path / "foxglove"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('No module named foxglove')\n")
    code = ("import tf2py.viz as v\n"
            "try:\n    v.FoxgloveServer(port=0)\n"
            "except v.VizDependencyError as e:\n    print(e)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, env={"PYTHONPATH": str(tmp_path)})
    assert result.stdout.strip().endswith("pip install 'tf2py[viz]'"), result.stderr


def test_command_is_listed_and_answers_help(tf2py_command):
    listing = subprocess.run([*tf2py_command, "--help"], capture_output=True, text=True,
                             timeout=60)
    assert re.search(r"^\s+foxglove\s+serve the frame tree live to Foxglove", listing.stdout,
                     re.M), listing.stdout
    result = subprocess.run([*tf2py_command, "foxglove", "--help"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("usage: tf2py foxglove ")
    assert "--port PORT" in result.stdout and "--core ADDRESS" in result.stdout
