"""`tf2py rerun --save FILE.rrd` as a real subprocess on a real bus (a Core and broadcasters in
this process): the file, read back with Rerun's own reader, holds every sample sent with the
pose the buffer gives, at entity paths that follow the tree, statics once, a reparented frame
moved; bad input is one line."""

from __future__ import annotations

import os
import signal
import subprocess

import numpy as np
import pytest

pytest.importorskip("rerun")

from helpers import free_port, wait_for
from rerun_reader import read_rows, split_path
from tf2py import (
    Buffer,
    StaticTransformBroadcaster,
    Time,
    TransformBroadcaster,
    make_transform,
)
from tf2py.transport.zmq.core import Core

SECOND = 1_000_000_000


@pytest.fixture
def core():
    with Core("tcp://127.0.0.1:0") as c:
        yield c.address


def _send(broadcaster, reference: Buffer, transforms) -> None:
    broadcaster.send_transform(transforms)
    for t in transforms:
        reference.set_transform(t, "test")


def test_saved_recording_holds_every_sample_at_tree_paths_with_statics_once(
        spawn, tf2py_command, core, tmp_path):
    out = tmp_path / "live.rrd"
    reference = Buffer(cache_time=1000.0)
    lidar = make_transform("base_link", "lidar", (0.2, 0.0, 0.5), (0, 0, 0.6, 0.8))
    reference.set_transform_static(lidar, "test")
    with StaticTransformBroadcaster(core=core) as statics, \
            TransformBroadcaster(core=core) as broadcaster:
        statics.send_transform(lidar)  # latched before the command starts
        proc = spawn([*tf2py_command, "rerun", "--core", core, "--save", str(out)])
        proc.wait_for_line("tf2py rerun: logging the frame tree of")
        # Until the command says it logged a frame, its subscription may not be joined yet.
        warmup = make_transform("map", "warmup", (0.0, 0.0, 1.0), stamp=Time(999))
        reference.set_transform(warmup, "test")

        def heard_warmup():
            broadcaster.send_transform(warmup)
            return any("warmup at /tf/map/warmup" in line for line in proc.lines)

        wait_for(heard_warmup, timeout=30, interval=0.05)
        for i in range(10):
            stamp = Time(1000 + i)
            holder = "hand_a" if i < 5 else "hand_b"  # `tool` changes parent at 1005
            _send(broadcaster, reference, [
                make_transform("map", "odom", (0.1 * i, 0.0, 0.0), (0, 0, np.sin(0.01 * i),
                               np.cos(0.01 * i)), stamp=stamp),
                make_transform("odom", "base_link", (1.0 + i, 2.0, 0.0),
                               (0, 0, np.sin(0.1 * i), np.cos(0.1 * i)), stamp=stamp),
                make_transform("base_link", "hand_a", (0.0, 0.5, 0.0), stamp=stamp),
                make_transform("base_link", "hand_b", (0.0, -0.5, 0.0), stamp=stamp),
                make_transform(holder, "tool", (0.01 * i, 0.0, 0.1), stamp=stamp),
            ])
        with StaticTransformBroadcaster(core=core) as again:
            again.send_transform(lidar)  # the same static from a second publisher
            done = make_transform("map", "done", stamp=Time(1010))
            _send(broadcaster, reference, [done])
            proc.wait_for_line("done at /tf/map/done", timeout=30)
        proc.signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0, proc.output()
    assert proc.lines[-1].startswith("tf2py rerun: logged "), proc.output()

    rows = read_rows(out)
    for row in rows:
        if row.cleared:
            continue
        parent, child = split_path(row.path)[-2:]
        time = Time.from_nanoseconds(row.stamp_ns) if row.stamp_ns is not None else Time(0)
        expected = reference.lookup_transform(parent, child, time).transform
        t, q = expected.translation, expected.rotation
        np.testing.assert_allclose(row.translation, (t.x, t.y, t.z), atol=1e-5)
        np.testing.assert_allclose(row.quaternion, (q.x, q.y, q.z, q.w), atol=1e-6)
    logged = {(r.path, r.stamp_ns) for r in rows if r.stamp_ns is not None and not r.cleared}
    for i in range(10):
        stamp = (1000 + i) * SECOND
        assert ("/tf/map/odom", stamp) in logged
        assert ("/tf/map/odom/base_link", stamp) in logged
        hand = "hand_a" if i < 5 else "hand_b"
        assert (f"/tf/map/odom/base_link/{hand}/tool", stamp) in logged
    # The reparented frame was cleared where it was, at the stamp it moved.
    assert any(r.cleared and r.path == "/tf/map/odom/base_link/hand_a/tool"
               and r.stamp_ns == 1005 * SECOND for r in rows)
    # Statics once: the lidar's one static row at its place in the tree, though it was sent
    # twice; wherever it was shown before its parents were heard, it was cleared.
    last_static: dict[str, object] = {}
    for row in rows:  # in the order they were logged: a later static replaces an earlier
        if row.stamp_ns is None:
            last_static[row.path] = row
    shown = {path for path, row in last_static.items() if not row.cleared}
    assert shown == {"/tf/map/odom/base_link/lidar"}
    assert sum(1 for r in rows if r.path == "/tf/map/odom/base_link/lidar") == 1
    assert all(r.cleared for path, r in last_static.items() if path not in shown)


def _one_line_error(result, code: int, *words: str) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.fixture
def run(tf2py_command):
    def run(*args, env=None):
        import os

        full = dict(os.environ, **(env or {}))
        return subprocess.run([*tf2py_command, "rerun", *args], capture_output=True,
                              text=True, timeout=60, env=full, stdin=subprocess.DEVNULL)

    return run


def test_a_file_that_cannot_be_written_is_one_line(run, tmp_path, core):
    _one_line_error(run("--core", core, "--save", str(tmp_path / "no" / "such" / "x.rrd")),
                    1, "tf2py rerun: error: cannot write")


def test_a_url_that_is_not_rerun_s_is_one_line(run, core):
    _one_line_error(run("--core", core, "--connect", "http://127.0.0.1:9876"), 2,
                    "expected rerun+http://HOST:PORT/proxy")


def test_no_viewer_at_the_url_is_one_line(run, core):
    url = f"rerun+http://127.0.0.1:{free_port()}/proxy"
    _one_line_error(run("--core", core, "--connect", url), 1,
                    f"no Rerun viewer answers at {url}")


def test_spawn_without_a_display_is_one_line_naming_the_other_sinks(run, core):
    # --spawn is the default: on a machine without a screen the viewer cannot start, and the
    # command said it was logging to it, then retried every sample and raised at exit.
    env = {"DISPLAY": "", "WAYLAND_DISPLAY": "", "WAYLAND_SOCKET": ""}
    for args in ([], ["--spawn"]):
        _one_line_error(run("--core", core, *args, env=env), 1, "no display", "--save FILE.rrd",
                        "--connect URL")


def test_a_spawned_viewer_that_cannot_open_its_display_is_said_in_a_last_line(run, core):
    # The real viewer, given a display that does not exist: it listens, fails to open the
    # display and exits; rerun-sdk only warns. (The viewer's own log lines come first, on
    # the stderr it inherits.)
    display = next(f":{n}" for n in range(97, 200)
                   if not os.path.exists(f"/tmp/.X11-unix/X{n}"))
    result = run("--core", core, env={"DISPLAY": display, "WAYLAND_DISPLAY": ""})
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("tf2py rerun: error: the Rerun viewer started but does not answer "
                           "on port 9876"), last
    assert "logging the frame tree" not in result.stdout


def test_two_sinks_at_once_are_refused(run, tmp_path):
    _one_line_error(run("--spawn", "--save", str(tmp_path / "x.rrd")), 2, "not allowed with")


def test_a_malformed_bus_address_is_one_line(run, tmp_path):
    result = run("--core", "tcp://127.0.0.1:notaport", "--save", str(tmp_path / "x.rrd"))
    _one_line_error(result, 2, "tf2py rerun: error:")


def test_without_rerun_sdk_the_command_says_which_extra(run, tmp_path, core):
    blocker = tmp_path / "block" / "rerun"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('No module named rerun')\n")
    result = run("--core", core, "--save", str(tmp_path / "x.rrd"),
                 env={"PYTHONPATH": str(blocker.parent)})
    _one_line_error(result, 1, "'rerun-sdk'", "pip install 'tf2py[viz]'")


def test_a_bag_played_on_the_bus_is_logged_at_its_own_stamps(spawn, tf2py_command, core,
                                                             tmp_path):
    from bag.bagdata import write_bag

    t0 = 1_700_000_000 * SECOND
    rows = [(0.1 * i, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0) for i in range(20)]
    bag = write_bag(tmp_path / "drive.mcap", [
        (True, t0, [("base_link", "laser", t0, (0.2, 0.0, 0.1, 0.0, 0.0, 0.0, 1.0))]),
        *[(False, t0 + i * 10_000_000, [("odom", "base_link", t0 + i * 10_000_000, rows[i])])
          for i in range(20)]])
    out = tmp_path / "played.rrd"
    with TransformBroadcaster(core=core) as broadcaster:
        proc = spawn([*tf2py_command, "rerun", "--core", core, "--save", str(out)])
        proc.wait_for_line("tf2py rerun: logging the frame tree of")
        warmup = make_transform("map", "warmup", stamp=Time(1))

        def heard_warmup():
            broadcaster.send_transform(warmup)
            return any("warmup at /tf/map/warmup" in line for line in proc.lines)

        wait_for(heard_warmup, timeout=30, interval=0.05)
        played = subprocess.run([*tf2py_command, "play", str(bag), "--core", core],
                                capture_output=True, text=True, timeout=120,
                                stdin=subprocess.DEVNULL)
        assert played.returncode == 0, played.stderr
        broadcaster.send_transform(make_transform("map", "done", stamp=Time(2)))
        proc.wait_for_line("done at /tf/map/done", timeout=30)
        proc.signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0, proc.output()
    logged = {r.stamp_ns: r for r in read_rows(out) if r.path == "/tf/odom/base_link"}
    assert sorted(logged) == [t0 + i * 10_000_000 for i in range(20)]
    for i in range(20):
        np.testing.assert_allclose(logged[t0 + i * 10_000_000].translation, rows[i][:3],
                                   atol=1e-6)
    statics = [r for r in read_rows(out) if r.path == "/tf/odom/base_link/laser"]
    assert len(statics) == 1 and statics[0].stamp_ns is None
