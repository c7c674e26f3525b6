"""`tf2py monitor`: tf2_monitor's frame and broadcaster lines with real rates and delays; for
a pair, the chain and its net delay; appended reports when stdout is not a terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import time

from cli_support import wait_for
from tf2py import Buffer, Time, TransformListener, make_transform

NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]\d+)?"


def test_monitor_reports_delay_and_rate_per_frame_and_per_broadcaster(core, repeat, tf2py):
    sender = repeat(core, [make_transform("map", "odom"), make_transform("odom", "base_link")],
                    live=True)
    # (3 s: a loaded machine may start the command late into a shorter window)
    result = tf2py("monitor", "--once", "--period", "3.0", "--core", core)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"Gathering data on all frames from {core} for 3 seconds..."
    assert lines[1:4] == ["", "RESULTS: for all Frames", "Frames:"]
    frames = [line for line in lines if line.startswith("Frame: ")]
    assert [f.split(",")[0] for f in frames] == ["Frame: base_link", "Frame: odom"]
    for line in frames:
        m = re.fullmatch(rf"Frame: \w+, published by {re.escape(sender.authority)}, Average "
                         rf"Delay: ({NUMBER}), Max Delay: ({NUMBER}), Rate: ({NUMBER}) Hz", line)
        assert m, line
        average, maximum, rate = (float(v) for v in m.groups())
        assert 0 <= average <= maximum < 5.0  # stamped just before sending, on loopback
        assert 2.0 < rate < 200.0  # sent every 50 ms (generous: a loaded machine bunches)
    broadcasters = lines[lines.index("All Broadcasters:") + 1:]
    assert len(broadcasters) == 1
    m = re.fullmatch(rf"Node: {re.escape(sender.authority)} ({NUMBER}) Hz, Average Delay: "
                     rf"({NUMBER}) Max Delay: ({NUMBER})", broadcasters[0])
    assert m, broadcasters[0]
    assert 2.0 < float(m.group(1)) < 200.0


def test_monitor_marks_static_frames(core, latch, tf2py):
    latch(core, [make_transform("base_link", "laser")])
    result = tf2py("monitor", "--once", "--period", "0.5", "--core", core)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("Frame: ")]
    assert line.startswith("Frame: laser, published by ")
    assert line.endswith(", static (latched: no delay or rate)")
    assert "Delay" not in line.split("published by ")[1]  # no meaningless delay for a static
    (node,) = [line for line in result.stdout.splitlines() if line.startswith("Node: ")]
    assert node.endswith(" static (latched: no delay or rate)")  # no "100000 Hz"
    assert "Hz" not in node and "Delay" not in node


def test_monitor_of_a_pair_reports_the_chain_and_its_net_delay(core, repeat, latch, tf2py):
    repeat(core, [make_transform("map", "odom"), make_transform("odom", "base_link")], live=True)
    latch(core, [make_transform("base_link", "laser"), make_transform("map", "elsewhere")])
    # The whole chain on the bus first: the 1 s window is the monitor's, not the time a loaded
    # machine takes to bring the test's own broadcasters to the core.
    bus = Buffer()
    with TransformListener(bus, core=core):
        wait_for(lambda: bus.can_transform("map", "laser", Time()), timeout=30)
    result = tf2py("monitor", "map", "laser", "--once", "--period", "1.0", "--core", core)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"Gathering data on map -> laser from {core} for 1 seconds..."
    assert lines[2] == "RESULTS: for map to laser"
    assert lines[3] == "Chain is: map -> odom -> base_link -> laser"
    m = re.fullmatch(rf"Net delay     avg = ({NUMBER}): max = ({NUMBER})", lines[4])
    assert m, lines[4]
    assert 0 <= float(m.group(1)) <= float(m.group(2)) < 5.0
    frames = [line.split(",")[0] for line in lines if line.startswith("Frame: ")]
    assert frames == ["Frame: base_link", "Frame: laser", "Frame: odom"]  # not 'elsewhere'


def test_monitor_appends_a_report_each_period_until_stopped(core, repeat, spawn, tf2py_command):
    repeat(core, [make_transform("map", "odom")], live=True)
    proc = spawn([*tf2py_command, "monitor", "--period", "0.3", "--core", core])
    wait_for(lambda: proc.output().count("RESULTS: for all Frames") >= 3, timeout=20)
    assert "\x1b[" not in proc.output()  # no terminal control codes when not on a terminal
    proc.signal(signal.SIGTERM)
    assert proc.wait() == 0


def test_monitor_says_when_nothing_was_received(core, tf2py):
    result = tf2py("monitor", "--once", "--period", "0.2", "--core", core)
    assert result.stdout.splitlines()[-1] == f"(no transforms received yet from {core})"


def test_monitor_once_with_nothing_received_fails_with_one_line(core, tf2py):
    result = tf2py("monitor", "--once", "--period", "0.2", "--core", core)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"tf2py monitor: error: no tf data received from the core at {core} in 0.2 s (is "
        "`tf2py core` running there, and is anything broadcasting?)")


def test_monitor_with_one_frame_is_a_usage_error(tf2py):
    result = tf2py("monitor", "map")
    assert result.returncode == 2
    assert result.stderr.strip() == ("tf2py monitor: error: TF_Monitor: usage: tf2py monitor "
                                     "[TARGET SOURCE]")


def test_monitor_refuses_a_bad_period(tf2py):
    result = tf2py("monitor", "--period", "-1")
    assert result.returncode == 2
    assert result.stderr.strip() == ("tf2py monitor: error: --period must be a positive number "
                                     "of seconds, got '-1'")


def test_monitor_refreshes_in_place_on_a_terminal(core, repeat, tf2py_command):
    repeat(core, [make_transform("map", "odom")], live=True)
    controller, terminal = pty.openpty()
    proc = subprocess.Popen([*tf2py_command, "monitor", "--period", "0.3", "--core", core],
                            stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal,
                            start_new_session=True)
    os.close(terminal)
    seen = b""
    try:
        deadline = time.monotonic() + 20
        while seen.count(b"\x1b[H\x1b[2J") < 2 and time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if ready:
                seen += os.read(controller, 65536)
        assert seen.count(b"\x1b[H\x1b[2J") >= 2, seen
        # Each report starts at the top of a cleared screen.
        assert b"\x1b[H\x1b[2JRESULTS: for all Frames" in seen
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
        os.close(controller)
