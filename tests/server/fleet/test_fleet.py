"""tf2py fleet against a real Zenoh router and robots in their own processes."""

from __future__ import annotations

import threading

import pytest

from helpers import wait_for
from tf2py import LookupException, Time
from tf2py.server.client import BufferClient
from tf2py.server.fleet.service import Fleet
from tf2py.server.fleet.world import WorldStatic


class Lines:
    def __init__(self):
        self.lines: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self.lock:
            self.lines.append(line)

    def has(self, text: str) -> bool:
        with self.lock:
            return any(text in line for line in self.lines)


WORLD = [WorldStatic("world", "robot0/map", (10.0, 0, 0, 0, 0, 0, 1)),
         WorldStatic("world", "robot1/map", (0, 5.0, 0, 0, 0, 0, 1))]


@pytest.fixture
def fleet(core):
    lines = Lines()
    with Fleet(core, world=WORLD, stale_after=1.0, on_event=lines) as running:
        running.lines = lines
        yield running


def test_robots_join_and_their_frames_carry_the_namespace(fleet, robots):
    robots.start(robots=2)
    wait_for(lambda: fleet.lines.has("robot /robot0 joined") and
             fleet.lines.has("robot /robot1 joined"), 60)
    wait_for(lambda: fleet.buffer.can_transform("robot1/laser", "robot0/base_link", Time()), 60,
             message="cross-robot chain through the world statics")
    t = fleet.buffer.lookup_transform("robot1/map", "robot0/map", Time())
    assert (t.transform.translation.x, t.transform.translation.y) == pytest.approx((10.0, -5.0))
    assert "robot0/link_1" in fleet.buffer.get_frames()
    assert fleet.robots() == ["robot0", "robot1"]


def test_root_namespace_keeps_plain_frame_names(fleet, robots):
    robots.start("--root")
    wait_for(lambda: fleet.lines.has("robot / joined"), 60)
    wait_for(lambda: fleet.buffer.can_transform("map", "laser", Time()), 60)


def test_cross_robot_lookup_from_a_buffer_client(fleet, robots, core):
    robots.start(robots=2)
    with BufferClient(core) as client:
        t = client.lookup_transform("robot1/base_link", "robot0/base_link", Time(), timeout=10)
        # robot k's odom and base_link sit at x = k from its map (fleet_robots.py).
        assert t.transform.translation.x == pytest.approx(10.0 + 0 * 2 - 1 * 2)
        assert t.transform.translation.y == pytest.approx(-5.0)
        assert client.can_transform("robot1/map", "robot0/map", Time())
    # The lookups it served are in its stats, with their latency.
    stats = fleet.stats()
    assert stats["lookup_ms"]["count"] >= 2 and stats["lookup_ms"]["p99"] >= 0
    assert stats["robots"] == 2 and stats["robots_held"] == 2
    assert stats["worst_lag_s"] < 3600 and stats["bytes"]["names"] > 0
    assert stats["names"] >= 2 * 5 and stats["bytes"]["caches"] > 0


def test_unknown_robot_frame_gets_tf2s_error_with_did_you_mean(fleet, robots, core):
    robots.start(robots=2)
    wait_for(lambda: fleet.buffer.can_transform("robot1/map", "robot1/base_link", Time()), 60)
    with BufferClient(core) as client:
        with pytest.raises(LookupException) as info:
            client.lookup_transform("robot9/base_link", "robot0/base_link", Time())
    message = str(info.value)
    assert '"robot9/base_link" passed to lookupTransform argument target_frame does not exist' \
        in message and "Did you mean 'robot" in message


def test_robot_that_leaves_is_announced_and_its_statics_dropped_after_stale_after(
        fleet, robots):
    robot = robots.start(robots=1, first=1)
    wait_for(lambda: fleet.buffer.can_transform("robot1/base_link", "robot1/laser", Time()), 60)
    robot.stop()
    wait_for(lambda: fleet.lines.has("robot /robot1 left"), 60)
    wait_for(lambda: fleet.lines.has("robot /robot1 gone for 1 s: 2 statics dropped"), 60)
    assert not fleet.buffer.can_transform("robot1/base_link", "robot1/laser", Time())
    # Its dynamic frames go too: a dead robot's last pose is not answered.
    assert not fleet.buffer.can_transform("robot1/map", "robot1/base_link", Time())
    assert fleet.stats()["robots_held"] == 0
    # The --world statics stay.
    assert fleet.buffer.can_transform("world", "robot1/map", Time())
    assert fleet.stats()["stale_statics_dropped"] == 2


def test_robot_back_before_stale_after_joins_again(core, robots):
    lines = Lines()
    with Fleet(core, stale_after=30.0, on_event=lines) as fleet:
        first = robots.start(robots=1)
        wait_for(lambda: lines.has("robot /robot0 joined"), 60)
        first.stop()
        wait_for(lambda: lines.has("robot /robot0 left"), 60)
        robots.start(robots=1)
        wait_for(lambda: sum("robot /robot0 joined" in line for line in lines.lines) == 2, 60)
        assert fleet.robots() == ["robot0"]


def test_robots_glob_keeps_only_matching_namespaces(core, robots):
    lines = Lines()
    # A pattern the subscriptions cannot narrow (a plain prefix would keep the router from
    # sending the drone at all: test_split.py), so the fleet hears the drone and drops it.
    with Fleet(core, robots="rob[o]t*", on_event=lines) as fleet:
        robots.start(robots=1, prefix="drone")
        robots.start(robots=1, prefix="robot")
        wait_for(lambda: fleet.buffer.can_transform("robot0/map", "robot0/base_link", Time()), 60)
        wait_for(lambda: fleet.stats()["dropped_by_cause"].get("filtered", 0) > 0, 60)
        assert not any(f.startswith("drone") for f in fleet.buffer.get_frames())
        assert not lines.has("drone")


def test_garbage_and_wrong_typed_samples_are_counted_and_dropped(fleet, robots):
    robots.start("--garbage", "5", robots=1)
    wait_for(lambda: fleet.stats()["dropped_by_cause"].get("garbage", 0) >= 5 and
             fleet.stats()["dropped_by_cause"].get("wrong_type", 0) >= 5, 60,
             message="fleet counters")
    wait_for(lambda: fleet.buffer.can_transform("robot0/map", "robot0/base_link", Time()), 60)


def test_a_flooding_robot_does_not_starve_the_others(core, robots):
    with Fleet(core) as fleet:
        robots.start(robots=1, prefix="flood", rate=0, frames=50)
        robots.start(robots=5, prefix="quiet", rate=20, frames=5)
        wait_for(lambda: fleet.buffer.can_transform("flood0/map", "flood0/link_1", Time()), 60)
        # Every quiet robot's data keeps arriving while the flood goes on: its newest stamp
        # advances, and none of its samples is dropped.
        for k in range(5):
            wait_for(lambda k=k: fleet.buffer.can_transform(
                f"quiet{k}/map", f"quiet{k}/base_link", Time()), 60)
        first = [fleet.buffer.get_latest_common_time(f"quiet{k}/map", f"quiet{k}/base_link")
                 for k in range(5)]
        wait_for(lambda: all(
            fleet.buffer.get_latest_common_time(f"quiet{k}/map", f"quiet{k}/base_link")
            > first[k] for k in range(5)), 60)
        stats = fleet.stats()
        drops = stats["robot_queue_drops"]
        assert not any(robot.startswith("quiet") for robot in drops), drops

