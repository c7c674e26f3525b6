"""``tf2py.viz.log_to_rerun``: a buffer logged into a saved Rerun recording, read back with
Rerun's own reader (``rerun.chunk.RrdReader``) and checked pose by pose against the buffer."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("rerun")

import rerun as rr

from rerun_reader import read_rows, split_path
from tf2py import Buffer, Time, make_transform
from tf2py.viz import log_to_rerun
from tf2py.viz.rerun import RerunTree

SECOND = 1_000_000_000


def _yaw(angle: float) -> tuple[float, float, float, float]:
    return (0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2))


def _saved(tmp_path, log) -> list:
    """Log with ``log(recording)`` into a fresh file, close it, and read its rows back."""
    path = tmp_path / "tree.rrd"
    recording = rr.RecordingStream("tf2py-test")
    recording.save(str(path))
    log(recording)
    recording.flush()
    recording.disconnect()
    return read_rows(path)


def _check_against_buffer(rows, buffer: Buffer) -> None:
    """Every Transform3D row equals the buffer's transform from the path's parent to its
    frame at the row's stamp (float32 in the file)."""
    for row in rows:
        if row.cleared:
            continue
        parts = split_path(row.path)
        parent, child = parts[-2], parts[-1]
        time = Time.from_nanoseconds(row.stamp_ns) if row.stamp_ns is not None else Time(0)
        expected = buffer.lookup_transform(parent, child, time).transform
        t, q = expected.translation, expected.rotation
        np.testing.assert_allclose(row.translation, (t.x, t.y, t.z), atol=1e-5)
        np.testing.assert_allclose(row.quaternion, (q.x, q.y, q.z, q.w), atol=1e-6)


@pytest.fixture
def buffer() -> Buffer:
    """map -> odom -> base_link (dynamic, 5 samples each), base_link -> lidar (static), and
    robot7/base_link (a namespaced id) under map."""
    buffer = Buffer(cache_time=100.0)
    buffer.set_transform_static(make_transform("base_link", "lidar", (0.2, 0.0, 0.5),
                                               _yaw(0.3)), "test")
    for i in range(5):
        stamp = Time(100 + i, 0)
        buffer.set_transform(make_transform("map", "odom", (0.1 * i, 0.0, 0.0), _yaw(0.01 * i),
                                            stamp=stamp), "test")
        buffer.set_transform(make_transform("odom", "base_link", (1.0 + i, 2.0, 0.0),
                                            _yaw(0.2 * i), stamp=stamp), "test")
        buffer.set_transform(make_transform("map", "robot7/base_link", (5.0, -i, 0.0),
                                            _yaw(-0.1 * i), stamp=stamp), "test")
    return buffer


def test_every_sample_is_logged_at_its_stamp_with_the_buffers_pose(tmp_path, buffer):
    rows = _saved(tmp_path, lambda rec: log_to_rerun(buffer, rec))
    _check_against_buffer(rows, buffer)
    dynamic = [(r.path, r.stamp_ns) for r in rows if r.stamp_ns is not None]
    expected = {(path, (100 + i) * SECOND) for i in range(5) for path in (
        "/tf/map/odom", "/tf/map/odom/base_link", "/tf/map/robot7\\/base_link")}
    assert sorted(dynamic) == sorted(expected)


def test_entity_paths_follow_the_tree_and_statics_are_logged_once(tmp_path, buffer):
    rows = _saved(tmp_path, lambda rec: log_to_rerun(buffer, rec))
    statics = [r for r in rows if r.stamp_ns is None]
    assert [r.path for r in statics] == ["/tf/map/odom/base_link/lidar"]
    assert split_path("/tf/map/robot7\\/base_link") == ["tf", "map", "robot7/base_link"]
    assert {r.path for r in rows} == {"/tf/map/odom", "/tf/map/odom/base_link",
                                      "/tf/map/odom/base_link/lidar",
                                      "/tf/map/robot7\\/base_link"}


def test_a_static_sent_again_is_not_logged_again(tmp_path):
    static = make_transform("base_link", "lidar", (0.2, 0.0, 0.5))

    def log(recording):
        tree = RerunTree(recording)
        for _ in range(3):
            tree.log([static.header.frame_id], [static.child_frame_id], [0],
                     [[0.2, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0]], True)

    rows = _saved(tmp_path, log)
    assert [(r.path, r.stamp_ns) for r in rows] == [("/tf/base_link/lidar", None)]


def test_a_reparented_frame_moves_with_its_subtree_at_the_stamp_it_changed(tmp_path):
    buffer = Buffer(cache_time=100.0)
    buffer.set_transform_static(make_transform("tool", "tip", (0.0, 0.0, 0.1)), "test")
    for i in range(6):
        stamp = Time(10 + i)
        for hand, y in (("hand_a", 1.0), ("hand_b", -1.0)):
            buffer.set_transform(make_transform("world", hand, (0.0, y, 0.0), stamp=stamp), "t")
        holder = "hand_a" if i < 3 else "hand_b"
        buffer.set_transform(make_transform(holder, "tool", (0.1 * i, 0.0, 0.0),
                                            stamp=stamp), "test")
    rows = _saved(tmp_path, lambda rec: log_to_rerun(buffer, rec))
    tool = [(r.path, r.stamp_ns, r.cleared) for r in rows if r.path.endswith("/tool")]
    assert sorted(tool, key=lambda r: (r[1], r[2])) == [
        ("/tf/world/hand_a/tool", 10 * SECOND, False),
        ("/tf/world/hand_a/tool", 11 * SECOND, False),
        ("/tf/world/hand_a/tool", 12 * SECOND, False),
        ("/tf/world/hand_b/tool", 13 * SECOND, False),
        ("/tf/world/hand_a/tool", 13 * SECOND, True),  # cleared where it was
        ("/tf/world/hand_b/tool", 14 * SECOND, False),
        ("/tf/world/hand_b/tool", 15 * SECOND, False),
    ]
    tip = [(r.path, r.cleared) for r in rows if r.path.endswith("/tip")]
    # The static child moved with it: cleared at the old path, logged once at the new one.
    assert ("/tf/world/hand_a/tool/tip", False) in tip
    assert ("/tf/world/hand_a/tool/tip", True) in tip
    assert ("/tf/world/hand_b/tool/tip", False) in tip
    assert len(tip) == 3
    _check_against_buffer([r for r in rows if not r.path.endswith("/tip")], buffer)


def test_transforms_tf2_refuses_are_left_out_and_counted(tmp_path):
    def log(recording):
        tree = RerunTree(recording)
        values = [[0, 0, 0, 0, 0, 0, 1], [float("nan"), 0, 0, 0, 0, 0, 1],
                  [0, 0, 0, 0, 0, 0, 2], [0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 1]]
        logged = tree.log(["/map", "map", "map", "", "a"], ["/odom", "b", "c", "d", "a"],
                          [1, 1, 1, 1, 1], values, False)
        assert logged == 1
        assert tree.stats()["left_out"] == {"not finite": 1, "quaternion not unit": 1,
                                            "empty frame id": 1, "child equals parent": 1}

    rows = _saved(tmp_path, log)
    assert [r.path for r in rows] == ["/tf/map/odom"]  # the leading '/' stripped


def test_without_rerun_sdk_the_error_is_one_line_naming_the_viz_extra(tmp_path):
    # A process where `import rerun` fails, as it does when the extra is not installed.
    blocker = tmp_path / "block" / "rerun"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('No module named rerun')\n")
    code = ("import sys; sys.path.insert(0, sys.argv[1]);\n"
            "from tf2py import Buffer\n"
            "from tf2py.viz import log_to_rerun\n"
            "try:\n    log_to_rerun(Buffer())\n"
            "except ImportError as exc:\n    print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-c", code, str(blocker.parent)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ("VizDependencyError the Rerun view needs the optional library "
                          "'rerun-sdk': pip install 'tf2py[viz]'\n")


def test_a_view_whose_viewer_never_answers_closes_without_raising_and_says_why():
    # A gRPC sink with no viewer behind it: rerun-sdk retries, then flush() raises; close()
    # keeps the reason instead (tf2py rerun prints it as a warning line).
    from helpers import free_port
    from tf2py.transport.zmq.core import Core
    from tf2py.viz.rerun import RerunView

    recording = rr.RecordingStream("tf2py-test")
    recording.connect_grpc(f"rerun+http://127.0.0.1:{free_port()}/proxy")
    with Core("tcp://127.0.0.1:0") as core:
        view = RerunView(core=core.address, recording=recording)
        view.tree.log(["map"], ["odom"], np.array([1_000_000_000]),
                      np.array([[0, 0, 0, 0, 0, 0, 1.0]]), False)
        view.close()
        view.close()  # idempotent
    assert view.flush_error and "connect" in view.flush_error, view.flush_error
