"""ROS 2 tests: real rclpy nodes (ROS 2 Jazzy, Fast DDS) in the peer environment that
peer_env.py builds once per machine, talking to tf2py over DDS on loopback only.

Each test gets its own ROS_DOMAIN_ID (random, 30..99; under pytest-xdist from its worker's
own slice) and ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, in this process (for tf2py's objects)
and in every peer it starts. Without the peer environment (no Python 3.12, no network for its
first build) or without the ``ros2`` extra, these tests skip and say why; under CI
(``CI=true``) they fail with that reason instead, so a green run cannot hide that none of
them ran.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from helpers import Proc, ros_domain_id, skip_or_fail, wait_for

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import peer_env  # noqa: E402

#: Discovery between Fast DDS and Cyclone DDS takes a few seconds, more on a loaded machine.
DISCOVERY_TIMEOUT = 40.0


@pytest.fixture(scope="session")
def peer_python() -> str:
    """The peer environment's python (built on first use; skip if it cannot be built)."""
    try:
        return peer_env.peer_python(verbose=True)
    except peer_env.PeerEnvUnavailable as exc:
        skip_or_fail(f"ROS 2 peer environment unavailable: {exc}")


@pytest.fixture(scope="session")
def cyclonedds_available():
    try:
        import cyclonedds  # noqa: F401
    except ImportError as exc:
        skip_or_fail(f"the ros2 extra (cyclonedds) is not installed: {exc}")


@pytest.fixture
def ros_domain(monkeypatch, cyclonedds_available) -> dict:
    """A fresh ROS 2 domain on loopback for this test: the environment to give peers."""
    env = {
        "ROS_DOMAIN_ID": str(ros_domain_id(30, 100)),
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "RMW_IMPLEMENTATION": "rmw_fastrtps_cpp",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("ROS_LOCALHOST_ONLY", "ROS_STATIC_PEERS", "CYCLONEDDS_URI", "TF2PY_CORE"):
        monkeypatch.delenv(key, raising=False)
    return env


class Peer(Proc):
    """An rclpy node (rclpy_peer.py) whose JSON lines can be awaited."""

    go_file = ""  # made by go(): a talk or raw peer starts sending when it exists

    def events(self, kind: str) -> list[dict]:
        out = []
        with self._lock:
            lines = list(self.lines)
        for line in lines:
            if line.startswith("{"):
                event = json.loads(line)
                if event.get("event") == kind:
                    out.append(event)
        return out

    def wait_for_events(self, kind: str, n: int = 1, timeout: float = DISCOVERY_TIMEOUT):
        def enough():
            if self.popen.poll() is not None and len(self.events(kind)) < n:
                pytest.fail(f"rclpy peer exited ({self.popen.returncode}):\n{self.output()}")
            events = self.events(kind)
            return events if len(events) >= n else None
        return wait_for(enough, timeout, interval=0.05,
                        message=lambda: f"{n} {kind!r} events from the rclpy peer; output:\n"
                        f"{self.output()[-3000:]}")


@pytest.fixture
def rclpy_peer(peer_python, ros_domain, tmp_path):
    """Start ``rclpy_peer.py MODE ARGS...`` with ``rclpy_peer(mode, *args)``."""
    peers: list[Peer] = []

    def start(*args) -> Peer:
        go_file = str(tmp_path / f"go-{len(peers)}")
        peer = Peer([peer_python, str(HERE / "rclpy_peer.py"), *map(str, args)],
                    env={**ros_domain, "PEER_GO_FILE": go_file})
        peer.go_file = go_file
        peers.append(peer)
        return peer

    yield start
    for peer in peers:
        peer.stop(timeout=10)


def expected_transform(i: int, j: int):
    """What rclpy_peer.py sends as transform j of message i: (parent, child, stamp_ns, values)."""
    return ("map", "base_link" if j == 0 else f"frame_{j}",
            (1000 + i) * 1_000_000_000 + 250_000_000 + j,
            (i + 0.5, j + 0.25, -1.125, 0.0, 0.0, 0.6, 0.8))


def start_talking(peer: Peer, receiver) -> None:
    """Let a ``talk`` peer start once both sides know each other (/tf is not latched: what
    is sent before discovery completes on both sides is lost, in ROS 2 too)."""
    peer.wait_for_events("matched")
    wait_for(lambda: receiver.matched_publishers() > 0, DISCOVERY_TIMEOUT,
             message="the rclpy talker's /tf writer, seen from tf2py")
    go(peer)


def go(peer: Peer) -> None:
    """Let a ``talk`` or ``raw`` peer start sending (it waits for its go file); wait until it
    says it has started."""
    Path(peer.go_file).touch()
    peer.wait_for_events("go")


def wait_until_heard(peer: Peer, broadcaster) -> None:
    """Wait until a ``listen`` peer and ``broadcaster`` know each other."""
    peer.wait_for_events("publishers")
    wait_for(lambda: broadcaster.matched_listeners() > 0, DISCOVERY_TIMEOUT,
             message="the rclpy listener's /tf reader, seen from tf2py")
