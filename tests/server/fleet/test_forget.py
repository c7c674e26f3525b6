"""The fleet forgets robots that go, bounds robots per session and names by bytes (issue 30).

The ingest is driven directly (samples as Zenoh would hand them over, CDR bytes on rmw_zenoh
keys) into a real Buffer; the end-to-end flood through a Zenoh router is in test_flood.py.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from helpers import wait_for
from tf2py import LookupException, Time
from tf2py.buffer.buffer import Buffer
from tf2py.server.fleet import slots as slots_module
from tf2py.server.fleet.ingest import Ingest
from tf2py.server.fleet.names import TF_TYPE
from tf2py.server.fleet.queues import RobotQueues
from tf2py.server.fleet.slots import RobotSlots
from tf2py.transport.ros2.cdr import encode_tf_columns

HASH = "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"
STALE = 0.05


def key(robot: str, topic: str = "tf") -> str:
    return f"0/{robot}/{topic}/{TF_TYPE}/{HASH}"


def message(parents: list[str], children: list[str], stamp_ns: int = 1_000_000_000) -> bytes:
    values = np.zeros((len(parents), 7))
    values[:, 6] = 1.0
    return encode_tf_columns(parents, children, np.full(len(parents), stamp_ns, np.int64), values)


DYNAMIC = message(["map", "odom"], ["odom", "base_link"])
STATIC = message(["base_link"], ["laser"], 0)


class Harness:
    def __init__(self, names_budget: int = 1 << 30, world: set[str] | None = None):
        self.buffer = Buffer(cache_time=1000.0)
        self.slots = RobotSlots(names_budget)
        self.forgotten: list[tuple[str, int, int]] = []
        self.ingest = Ingest(self.buffer, lambda robot: True, self.slots, STALE,
                             world or set(), lambda *args: self.forgotten.append(args),
                             RobotQueues())

    def send(self, robot: str, stamp_s: float = 1.0) -> None:
        self.ingest.on_sample(key(robot), message(["map", "odom"], ["odom", "base_link"],
                                                  int(stamp_s * 1e9)))
        self.ingest.on_sample(key(robot, "tf_static"), STATIC)

    def forget_all(self) -> None:
        """Forget every robot without a token once it is gone for STALE (what the fleet's
        timer does)."""
        robots = [r for r, slot in self.slots.slots.items() if not slot.tokens]
        wait_for(lambda: self.ingest.queues.pending() == 0 and set(
            self.slots.silent(time.monotonic() - STALE)) >= set(robots), 10)
        count = len(self.forgotten)
        for robot in robots:
            self.ingest.forget(robot)
        wait_for(lambda: len(self.forgotten) == count + len(robots), 10,
                 message="the ingest thread forgets the robots")

    def frames_with_data(self) -> int:
        return len(self.buffer.frames_info())

    def close(self) -> None:
        self.ingest.close()


def _errors(buffer: Buffer, frame: str) -> list[Exception]:
    """What a lookup of ``frame`` from the robot's other frames raises."""
    out: list[Exception] = []
    for other in ("robot7/map", "robot7/odom"):
        try:
            buffer.lookup_transform(other, frame, Time())
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            out.append(exc)
    return out


@pytest.fixture
def harness():
    h = Harness()
    yield h
    h.close()


def test_a_forgotten_robot_loses_its_statics_dynamic_frames_names_and_queue(harness):
    harness.send("robot7")
    wait_for(lambda: harness.buffer.can_transform("robot7/map", "robot7/laser", Time()), 10)
    harness.forget_all()
    assert harness.forgotten == [("robot7", 1, 4)]  # map, odom, base_link, laser
    buffer = harness.buffer
    assert not buffer.can_transform("robot7/map", "robot7/base_link", Time())
    assert not buffer.can_transform("robot7/base_link", "robot7/laser", Time())
    assert harness.frames_with_data() == 0  # nothing of it is answered any more
    # its names too: a lookup fails as for a robot never heard, and nothing lists them
    assert not [f for f in buffer.get_frames() if f.startswith("robot7/")]
    with pytest.raises(LookupException, match='"robot7/map" passed to lookupTransform '
                       'argument target_frame does not exist'):
        buffer.lookup_transform("robot7/map", "robot7/laser", Time())
    errors = _errors(buffer, "robot7/base_link")
    assert [type(e) for e in errors] == [LookupException] * 2
    assert not any("Did you mean" in str(e) for e in errors)
    assert len(harness.slots) == 0 and harness.slots.name_bytes == 0
    assert harness.slots.name_count == 0
    assert harness.ingest._keys == {} and harness.ingest._frame_ids == {}
    assert harness.ingest.queues.pending() == 0 and harness.ingest.queues.total_bytes == 0


def test_a_robot_that_comes_back_after_being_forgotten_is_heard_again(harness):
    harness.send("robot7")
    wait_for(lambda: harness.buffer.can_transform("robot7/map", "robot7/laser", Time()), 10)
    harness.forget_all()
    harness.send("robot7", stamp_s=2.0)
    wait_for(lambda: harness.buffer.can_transform("robot7/map", "robot7/laser", Time()), 10)
    t = harness.buffer.lookup_transform("robot7/map", "robot7/base_link", Time())
    assert t.header.stamp.sec == 2


def test_world_statics_stay_when_their_robot_is_forgotten():
    h = Harness(world={"robot7/map"})
    try:
        h.buffer.set_transforms(["world"], ["robot7/map"], np.zeros(1, np.int64),
                                np.array([[1.0, 0, 0, 0, 0, 0, 1]]), "world", True)
        h.send("robot7")
        wait_for(lambda: h.buffer.can_transform("world", "robot7/laser", Time()), 10)
        h.forget_all()
        assert h.buffer.can_transform("world", "robot7/map", Time())
        assert not h.buffer.can_transform("world", "robot7/odom", Time())
        with pytest.raises(LookupException, match='"robot7/odom" passed to lookupTransform'):
            h.buffer.lookup_transform("world", "robot7/odom", Time())
        assert sorted(h.buffer.get_frames()) == ["robot7/map", "world"]
    finally:
        h.close()


def test_robots_coming_and_going_ten_times_leave_one_cycles_frames(harness):
    per_cycle = []
    for cycle in range(10):
        for k in range(20):
            harness.send(f"robot{k}", stamp_s=1.0 + cycle)
        wait_for(lambda: all(harness.buffer.can_transform(f"robot{k}/map", f"robot{k}/laser",
                                                          Time()) for k in range(20)), 10)
        per_cycle.append(harness.frames_with_data())
        harness.forget_all()
        assert harness.frames_with_data() == 0 and len(harness.slots) == 0
    assert per_cycle == [per_cycle[0]] * 10 and per_cycle[0] == 20 * 3


def test_a_flood_of_unannounced_namespaces_cannot_crowd_out_announced_robots(harness):
    flood = slots_module.MAX_UNANNOUNCED_ROBOTS + 500
    for k in range(flood):
        harness.ingest.on_sample(key(f"flood{k}"), DYNAMIC)
    assert len(harness.slots) == slots_module.MAX_UNANNOUNCED_ROBOTS
    assert harness.ingest.stats()["dropped_by_cause"]["unannounced_robots_full"] == 500
    # A robot that announces itself (its token names its session) still gets a slot, and
    # its samples are heard although the unannounced allowance is full.
    assert not isinstance(harness.slots.admit("robot1", "a1b2c3", time.monotonic()), str)
    harness.send("robot1")
    wait_for(lambda: harness.buffer.can_transform("robot1/map", "robot1/laser", Time()), 10)
    # Once the flood is forgotten, its place is free again.
    harness.slots.set_present("robot1", True, time.monotonic())
    harness.forget_all()
    assert list(harness.slots.slots) == ["robot1"]
    harness.ingest.on_sample(key("late"), DYNAMIC)
    assert "late" in harness.slots.slots


def test_one_session_fills_only_its_own_allowance(monkeypatch):
    monkeypatch.setattr(slots_module, "MAX_ROBOTS_PER_SESSION", 10)
    slots = RobotSlots(1 << 20)
    results = [slots.admit(f"r{k}", "flooder", 0.0) for k in range(15)]
    assert sum(isinstance(r, str) for r in results) == 5
    assert results[-1] == "session_robots_full"
    assert not isinstance(slots.admit("robot1", "honest", 0.0), str)
    slots.forget("r0")
    assert not isinstance(slots.admit("r14", "flooder", 0.0), str)  # counts robots present


def test_the_robot_bound_counts_robots_present(monkeypatch):
    monkeypatch.setattr(slots_module, "MAX_ROBOTS", 5)
    slots = RobotSlots(1 << 20)
    for k in range(5):
        assert not isinstance(slots.admit(f"r{k}", f"s{k}", 0.0), str)
    assert slots.admit("r5", "s5", 0.0) == "too_many_robots"
    for k in range(5):
        slots.forget(f"r{k}")
    assert not isinstance(slots.admit("r5", "s5", 0.0), str)


def test_long_frame_ids_and_namespaces_are_dropped_and_counted(harness):
    harness.ingest.on_sample(key("robot1"), message(["map"], ["x" * 5000]))
    harness.ingest.on_sample(key("n" * 300), DYNAMIC)
    harness.send("robot2")
    wait_for(lambda: harness.buffer.can_transform("robot2/map", "robot2/laser", Time()), 10)
    wait_for(lambda: harness.ingest.stats()["dropped_by_cause"].get("frame_id_too_long") == 1,
             10)
    assert harness.ingest.stats()["dropped_by_cause"]["namespace_too_long"] == 1
    assert not any(len(f) > 4096 for f in harness.buffer.get_frames())


def test_names_beyond_the_byte_budget_are_dropped_and_counted():
    h = Harness(names_budget=3000)
    try:
        for k in range(20):
            h.ingest.on_sample(key(f"robot{k}"), message(["map"], [f"frame_{'y' * 100}"]))
        wait_for(lambda: h.ingest.stats()["dropped_by_cause"].get("fleet_budget", 0) > 0, 10)
        assert h.slots.name_bytes <= 3000
        h.forget_all()
        assert h.slots.name_bytes == 0
    finally:
        h.close()
