"""A flood of namespaces from one Zenoh session cannot lock robots out of a fleet (issue 30):
real router, the flood from a session in this process, the robot a process of its own."""

from __future__ import annotations

import numpy as np

from helpers import wait_for
from tf2py import Time
from tf2py.server.fleet import slots as slots_module
from tf2py.server.fleet.names import TF_TYPE
from tf2py.server.fleet.service import Fleet
from tf2py.transport.ros2.cdr import encode_tf_columns
from tf2py.transport.zenoh.address import parse_zenoh_address
from tf2py.transport.zenoh.session import SharedSession

HASH = "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"


def test_after_a_namespace_flood_a_robot_that_joins_is_heard(core, robots, monkeypatch):
    monkeypatch.setattr(slots_module, "MAX_ROBOTS", 2000)  # small bounds: a fast test
    monkeypatch.setattr(slots_module, "MAX_UNANNOUNCED_ROBOTS", 500)
    values = np.zeros((2, 7))
    values[:, 6] = 1.0
    payload = encode_tf_columns(["map", "odom"], ["odom", "base_link"],
                                np.full(2, 10**18, np.int64), values)
    with Fleet(core, stale_after=1.0) as fleet:
        shared = SharedSession.acquire(parse_zenoh_address(core), None)
        try:
            for k in range(3000):  # more namespaces than the fleet holds robots
                shared.session.put(f"0/flood{k}/tf/{TF_TYPE}/{HASH}", payload)
            wait_for(lambda: fleet.stats()["dropped_by_cause"].get(
                "unannounced_robots_full", 0) > 0, 60, message="the flood reaches the fleet")
            assert fleet.stats()["robots_held"] <= 500
            robots.start(robots=1, prefix="late")
            wait_for(lambda: fleet.buffer.can_transform("late0/map", "late0/base_link",
                                                        Time()), 60,
                     message="the robot that joined after the flood is heard")
            # The flood's namespaces go silent: forgotten, their places free again.
            wait_for(lambda: fleet.stats()["robots_held"] == 1, 60)
            assert not any(f.startswith("flood") for f in _frames_with_data(fleet))
        finally:
            shared.release()


def _frames_with_data(fleet: Fleet) -> list[str]:
    return list(fleet.buffer.frames_info())
