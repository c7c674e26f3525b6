"""lookup_velocity(..., tf2_compatible=True) against ROS 2 tf2's own BufferCore::lookupVelocity,
side by side on the same data, value for value.

tf2 (the C++ library) has no wheel, so this test compiles tf2's sources (a ros2/geometry2
checkout, 0.39, named by $TF2PY_TF2_SOURCE) with ``tf2_velocity_driver.cpp`` against the
ROS 2 peer environment's headers (geometry_msgs, rcutils...). Without either it skips and
says why; tests/buffer/test_velocity_tf2.py checks the same answers against a transcription
of tf2's steps everywhere."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tf2py import Time, make_transform
from tf2py.buffer.core import BufferCore
from tf2py.buffer.exceptions import TransformException

# Needs a geometry2 checkout to compile tf2 0.39 from (TF2PY_TF2_SOURCE or TF2PY_TF2_DRIVER):
# opt-in with the other heavy tests (TF2PY_HEAVY_TESTS=1), deselected otherwise.
pytestmark = pytest.mark.heavy

HERE = Path(__file__).resolve().parent
NS = 1_000_000_000
HEADERS = ("geometry_msgs", "builtin_interfaces", "rosidl_runtime_cpp", "rosidl_runtime_c", "rcutils",
           "rosidl_typesupport_interface", "std_msgs")


@pytest.fixture(scope="module")
def tf2_driver(request, tmp_path_factory) -> Path:
    """tf2's BufferCore behind a line protocol, compiled once per session ($TF2PY_TF2_DRIVER:
    one compiled already, from this file's driver source)."""
    prebuilt = os.environ.get("TF2PY_TF2_DRIVER", "")
    if prebuilt and Path(prebuilt).is_file():
        return Path(prebuilt)
    source = os.environ.get("TF2PY_TF2_SOURCE", "")
    tf2 = Path(source) / "tf2" if (Path(source) / "tf2").is_dir() else Path(source)
    if not source or not (tf2 / "src" / "buffer_core.cpp").is_file():
        pytest.skip("set TF2PY_TF2_SOURCE to a ros2/geometry2 checkout (0.39) to compare with tf2")
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("no g++ to compile tf2")
    venv = Path(request.getfixturevalue("peer_python")).resolve().parent.parent
    out = tmp_path_factory.mktemp("tf2") / "driver"
    cmd = [compiler, "-std=c++17", "-O2", "-w", f"-I{tf2 / 'include'}"]
    cmd += [f"-I{venv / 'include' / name}" for name in HEADERS]
    cmd += [str(tf2 / "src" / f) for f in ("buffer_core.cpp", "cache.cpp", "static_cache.cpp", "time.cpp")]
    cmd += [str(HERE / "tf2_velocity_driver.cpp"), f"-L{venv / 'lib'}", "-lrcutils",
            f"-Wl,-rpath,{venv / 'lib'}", "-o", str(out)]
    built = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    return out


def hexes(values) -> str:
    return " ".join(float(v).hex() for v in values)


class Pair:
    """The same data in tf2py and in tf2 (the values tf2py stored, sent to tf2 as they are)."""

    def __init__(self):
        self.core = BufferCore(cache_time=1e6)
        self.commands: list[str] = []
        self.queries: list[tuple] = []

    def put(self, parent, child, t, xyz=(0, 0, 0), rpy=(0, 0, 0), static=False):
        ts = make_transform(parent, child, tuple(xyz), rpy=tuple(rpy), stamp=t)
        if static:
            self.core.set_transform_static(ts, "test")
        else:
            self.core.set_transform(ts, "test")
        stamp = ts.header.stamp.nanoseconds
        stored = [s for s in self.core.samples(child) if s[0] == stamp or static][-1]
        self.commands.append(f"set {parent} {child} {stamp} {hexes(stored[1])} {int(static)}")

    def ask(self, tracking, observation, time_ns, interval_ns, reference=None, point=(0, 0, 0),
            point_frame=None):
        reference = reference or observation
        point_frame = point_frame or tracking
        self.queries.append((tracking, observation, reference, point_frame, tuple(point), time_ns,
                             interval_ns))
        self.commands.append(f"vel {tracking} {observation} {reference} {point_frame} "
                             f"{hexes(point)} {time_ns} {interval_ns}")

    def compare(self, driver: Path, rtol: float = 1e-12) -> int:
        run = subprocess.run([str(driver)], input="\n".join(self.commands) + "\nquit\n",
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        answers = run.stdout.splitlines()
        assert len(answers) == len(self.queries)
        exact = 0
        for query, answer in zip(self.queries, answers):
            tracking, observation, reference, point_frame, point, time_ns, interval_ns = query
            try:
                v = self.core.lookup_velocity(tracking, observation, Time.from_nanoseconds(time_ns),
                                              interval_ns / 1e9, reference, point, point_frame,
                                              tf2_compatible=True)
            except TransformException as exc:
                assert answer.startswith("err "), (query, answer, exc)
                assert answer.split()[1] in [c.__name__ for c in type(exc).__mro__], (query, answer, exc)
                continue
            assert answer.startswith("ok "), (query, answer, v)
            fields = answer.split()
            assert v.header.stamp.nanoseconds == int(fields[1]) * NS + int(fields[2]), (query, answer)
            theirs = [float.fromhex(x) for x in fields[3:]]
            ours = [v.velocity.linear.x, v.velocity.linear.y, v.velocity.linear.z,
                    v.velocity.angular.x, v.velocity.angular.y, v.velocity.angular.z]
            scale = 1.0 + max(abs(x) for x in theirs if not math.isnan(x)) if theirs else 1.0
            assert np.allclose(ours, theirs, rtol=rtol, atol=rtol * scale, equal_nan=True), (
                query, ours, theirs)
            exact += ours == theirs
        return exact


def test_random_trees_every_role(tf2_driver):
    pair = Pair()
    rng = np.random.default_rng(17)
    links = (("world", "a"), ("a", "tracking"), ("world", "b"), ("b", "other"))
    rates = rng.normal(size=(4, 6)) * [1, 1, 1, 0.4, 0.4, 0.4]
    for k in range(61):
        t = 50.0 + 0.05 * k
        for i, (parent, child) in enumerate(links):
            pose = rates[i] * (t - 50.0) + 0.3 * np.sin(3 * (t - 50.0) + i)
            pair.put(parent, child, t, pose[:3], pose[3:])
    pair.put("world", "viewer", 0, rng.normal(size=3), rng.normal(size=3), static=True)
    pair.put("a", "pointer", 0, rng.normal(size=3), rng.normal(size=3), static=True)
    for tracking, observation in (("tracking", "world"), ("other", "tracking"), ("a", "viewer")):
        for reference in ("world", "viewer", "tracking", "pointer"):
            for point_frame in ("world", "pointer", observation):
                pair.ask(tracking, observation, 50 * NS + int(rng.uniform(0.3, 3.2) * NS),
                         int(rng.uniform(0.05, 0.4) * NS), reference, tuple(rng.normal(size=3)),
                         point_frame)
    exact = pair.compare(tf2_driver)
    print(f"{exact} of {len(pair.queries)} answers equal to tf2's bit for bit")


def test_edges_time_zero_cut_windows_and_stamps_near_zero(tf2_driver):
    pair = Pair()
    for i in range(11):
        pair.put("odom", "base", i * 0.5, (3 * i * 0.5, 0.1 * i, 0), (0, 0, 0.2 * i))
    pair.put("map", "odom", 0, (1, 2, 0), (0, 0, 0.5), static=True)
    pair.put("far", "thing", 1000.0, (1, 0, 0))
    pair.put("far", "thing", 1001.0, (2, 0, 0))
    for time_ns in (0, 1, 10_000, 123_456, NS // 2, 5 * NS, 5 * NS + 1, 10 * NS, 50 * NS):
        for interval_ns in (20_000, NS // 10, 2 * NS, 4_001_000_000, 30 * NS):
            pair.ask("base", "odom", time_ns, interval_ns)
            pair.ask("base", "map", time_ns, interval_ns, "base", (1, -1, 0.5), "odom")
            pair.ask("odom", "odom", time_ns, interval_ns)
            pair.ask("thing", "far", time_ns, interval_ns)
    pair.ask("nowhere", "odom", NS, NS)
    pair.ask("base", "nowhere", NS, NS)
    pair.ask("base", "thing", NS, NS)
    # Windows of 10 µs divide the lookups' last-bit differences (the kernel's interpolation
    # ratio is rounded as num * (1 / span), tf2's as num / span) by 1e-5 s.
    pair.compare(tf2_driver, rtol=1e-9)
