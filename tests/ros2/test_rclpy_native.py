"""tf2py used inside a real rclpy node (API.md "Buffer", last bullet): rclpy's own messages
(stamps with ``sec``/``nanosec``) go into every call, and results go back out through rclpy.
The node runs in the ROS 2 peer environment (Python 3.12) with this checkout's tf2py
installed for that python (peer_tf2py.py); rclpy_native.py says what it saw as JSON lines."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

import peer_env
import peer_tf2py
from conftest import HERE, Peer
from helpers import REPO, ros_domain_id

# The first run on a machine compiles the kernel for the peer's Python 3.12 inside the
# session fixture (.ci/run builds it beforehand); give that build time.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="session")
def peer_tf2py_path(peer_python, tmp_path_factory) -> str:
    """PYTHONPATH for the peer: this checkout's tf2py over its kernel built for Python 3.12."""
    try:
        site = peer_tf2py.installed_site(peer_python, verbose=True)
        folder = peer_tf2py.overlay(site, tmp_path_factory.mktemp("peer-tf2py"))
    except peer_env.PeerEnvUnavailable as exc:
        pytest.fail(f"tf2py cannot be installed for the ROS 2 peer's python: {exc}")
    return f"{folder}{os.pathsep}{site}"


@pytest.fixture(scope="module")
def run(peer_python, peer_tf2py_path, tmp_path_factory):
    """Run rclpy_native.py once in its own loopback ROS domain; its events by kind."""
    env = {
        "ROS_DOMAIN_ID": str(ros_domain_id(30, 90)),
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "RMW_IMPLEMENTATION": "rmw_fastrtps_cpp",
        "PYTHONPATH": peer_tf2py_path,
    }
    peer = Peer([peer_python, str(HERE / "rclpy_native.py")], env=env,
                cwd=str(tmp_path_factory.mktemp("rclpy-native")))
    try:
        rc = peer.wait(timeout=120)
    finally:
        peer.stop(timeout=5)
    events: dict[str, list[dict]] = {}
    for line in peer.output().splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            events.setdefault(event["event"], []).append(event)
    assert rc == 0 and "done" in events, f"rclpy node failed (exit {rc}):\n{peer.output()}"
    return events


def _rotate(q, v):
    x, y, z, w = q
    r = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])
    return r @ np.asarray(v, dtype=float)


# What rclpy_peer.transform(1, 0) holds: map <- base_link at 1001.25 s.
TRANSLATION = (1.5, 0.25, -1.125)
ROTATION = (0.0, 0.0, 0.6, 0.8)


def test_the_tf2py_in_the_node_is_this_checkout_on_python_3_12(run):
    ready = run["ready"][0]
    assert ready["python"].startswith("3.12.")
    assert ready["tf2py"].endswith("tf2py/__init__.py")
    assert str(REPO) not in ready["tf2py"]  # the copy installed for the peer, not the source


def test_a_lookup_waits_for_transforms_inserted_from_an_rclpy_subscription(run):
    looked_up = run["lookup"][0]
    assert looked_up["type"] == "TransformStamped"
    assert (looked_up["frame"], looked_up["child"]) == ("map", "base_link")
    assert (looked_up["sec"], looked_up["nanosec"]) == (1001, 250_000_000)
    assert looked_up["values"] == pytest.approx([*TRANSLATION, *ROTATION], abs=1e-12)


def test_rclpy_messages_with_builtin_interfaces_stamps_go_into_buffer_and_buffer_core(run):
    inserted = run["inserted"][0]
    assert inserted["received"] == 6
    assert inserted["stamp_type"] == "builtin_interfaces.msg._time.Time"
    assert inserted["can"] is True
    assert inserted["core"] == pytest.approx([2.5, 0.25, -1.125, *ROTATION], abs=1e-12)


@pytest.mark.parametrize("what", ["point", "vector", "pose", "transform"])
def test_buffer_transform_takes_an_rclpy_message_and_returns_the_same_class(run, what):
    result = {e["what"]: e for e in run["transformed"]}[what]
    rclpy_class = {"point": "PointStamped", "vector": "Vector3Stamped", "pose": "PoseStamped",
                   "transform": "TransformStamped"}[what]
    assert result["type"].startswith("geometry_msgs.msg.")
    assert result["type"].endswith("." + rclpy_class)
    assert result["frame"] == "map"
    assert (result["sec"], result["nanosec"]) == (1001, 250_000_000)
    translation = np.array(TRANSLATION)
    if what == "point":
        expected = list(_rotate(ROTATION, (1.0, 2.0, 3.0)) + translation)
    elif what == "vector":
        expected = list(_rotate(ROTATION, (1.0, 0.0, 0.0)))  # rotated only
    elif what == "pose":
        expected = [*(_rotate(ROTATION, (1.0, 0.0, 0.0)) + translation), *ROTATION]
    else:
        assert result["child"] == "tool"
        expected = [*(_rotate(ROTATION, (0.0, 0.0, 0.5)) + translation), *ROTATION]
    assert result["values"] == pytest.approx(expected, abs=1e-12)
    # The rotation about z by 2·atan2(0.6, 0.8): a sanity check of the expectation itself.
    assert math.isclose(_rotate(ROTATION, (1.0, 0.0, 0.0))[0], 0.28, abs_tol=1e-12)


def test_a_lookup_result_is_published_by_rclpy_after_convert(run):
    published = run["published"][0]
    assert (published["frame"], published["child"]) == ("map", "base_link")
    assert (published["sec"], published["nanosec"]) == (1001, 250_000_000)
    assert published["values"] == pytest.approx([*TRANSLATION, *ROTATION], abs=1e-12)


def test_an_rclpy_message_converts_back_to_an_equal_tf2py_message(run):
    back = run["back"][0]
    assert back["type"] == "tf2py.buffer.messages"
    assert back["equal"] is True
