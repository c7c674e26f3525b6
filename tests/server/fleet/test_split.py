"""Two `tf2py fleet --robots` processes on one --address answer as one fleet holding all.

Real processes on a real Zenoh router: robots a0 and b0 (simulators/fleet_robots.py,
rmw_zenoh's wire), fleet A holding a*, fleet B holding b*, both on the router's address with
one --world; a third fleet holding every robot answers on another address and is the reference.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter

import pytest

from helpers import Proc
from tf2py import Duration, Time
from tf2py.server import protocol
from tf2py.server.client import BufferClient
from tf2py.transport.wire_common import pack

FLEET = [sys.executable, "-m", "tf2py.cli.main", "fleet", "--stats", "0"]
WORLD = """
- {parent: world, child: a0/map, translation: [1, 2, 3], rotation: [0, 0, 0.6, 0.8]}
- {parent: world, child: b0/map, translation: [-4, 5, 0.5], rotation: [0.6, 0, 0, 0.8]}
- {parent: world, child: a1/map, translation: [7, 0, 0]}
- {parent: world, child: b1/map, translation: [0, -7, 1], rotation: [0, 0.6, 0, 0.8]}
"""


def numbers(t):
    tr, q = t.transform.translation, t.transform.rotation
    return [tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w]


def moves(robot: str, k: int, stamp: float):
    """Robot ``robot``'s map -> odom and odom -> base_link at sample ``k`` (the fleet adds the
    namespace): far from linear in time, so an interpolation between other samples than
    tf2's gives other numbers."""
    from tf2py import make_transform

    w = 1.0 if robot.startswith("a") else -0.7
    return [make_transform("map", "odom", (k * k * 0.01, w * k, 0.0),
                           rpy=(0.0, 0.0, w * 0.05 * k * k), stamp=stamp),
            make_transform("odom", "base_link", (1.0, (k % 3) * w, 0.2),
                           rpy=(0.1 * k * w, 0.0, 0.0), stamp=stamp + 0.013)]


def test_known_moving_data_gives_the_same_numbers_split_as_in_one_process(split_site):
    from tf2py import TransformBroadcaster

    core, solo_address, _, _, _ = split_site
    t0 = 1000.0
    with TransformBroadcaster(core=f"{core}&namespace=/a1") as a1, \
            TransformBroadcaster(core=f"{core}&namespace=/b1") as b1, \
            BufferClient(core) as split, BufferClient(solo_address) as solo:
        # b1's data end earlier: the latest common time between them is b1's newest stamp.
        last = {"a1": Time.from_nanoseconds(int((t0 + 1.9) * 1e9)),
                "b1": Time.from_nanoseconds(int((t0 + 1.5) * 1e9))}
        deadline = time.monotonic() + 8
        while True:  # /tf is not latched: send the same samples until both fleets have all
            for k in range(20):
                a1.send_transform(moves("a1", k, t0 + 0.1 * k))
                if k < 16:
                    b1.send_transform(moves("b1", k, t0 + 0.1 * k))
            if all(c.can_transform(f"{r}/map", f"{r}/base_link", last[r], timeout=0.5)
                   for c in (split, solo) for r in ("a1", "b1")):
                break
            assert time.monotonic() < deadline, str([
                outcome(lambda: c.lookup_transform(f"{r}/map", f"{r}/base_link", last[r]))
                for c in (split, solo) for r in ("a1", "b1")])
        times = [Time.from_nanoseconds(int((t0 + 0.1 * k + dt) * 1e9))
                 for k in (2, 7, 13) for dt in (0.0, 0.037, 0.0905)] + [Time()]
        for t in times:
            for target, source in (("a1/base_link", "b1/base_link"), ("b1/odom", "a1/map"),
                                   ("b1/base_link", "a1/odom")):
                one, two = (c.lookup_transform(target, source, t) for c in (split, solo))
                assert one.header.stamp == two.header.stamp
                assert numbers(one) == pytest.approx(numbers(two), abs=1e-9)
            one, two = (c.lookup_transform_full("b1/base_link", t, "a1/odom", times[4], "world")
                        for c in (split, solo))
            assert numbers(one) == pytest.approx(numbers(two), abs=1e-9)
        early = Time.from_nanoseconds(int((t0 - 1) * 1e9))
        mine, reference = (outcome(lambda: c.lookup_transform("a1/base_link", "b1/base_link",
                                                               early)) for c in (split, solo))
        assert mine[0] == "BackwardExtrapolationException" and mine == reference


def outcome(call):
    try:
        return "ok", call()
    except Exception as exc:
        return type(exc).__name__, str(exc)


@pytest.fixture
def split_site(core, robots, tmp_path):
    world = tmp_path / "world.yaml"
    world.write_text(WORLD)
    solo_address = core.replace("?", "?namespace=/solo&", 1)
    procs = [Proc(FLEET + ["--core", core, "--world", str(world), "--robots", "a*",
                           "--stats", "0.5", "--json"]),
             Proc(FLEET + ["--core", core, "--world", str(world), "--robots", "b*"]),
             Proc(FLEET + ["--core", core, "--world", str(world), "--address", solo_address])]
    try:
        for proc in procs:
            proc.wait_for_line("tf2py fleet: ready at ", timeout=90)
        procs[0].wait_for_line("tf2py fleet: peer fleet ", timeout=30)
        procs[1].wait_for_line("tf2py fleet: peer fleet ", timeout=30)
        robots.start(prefix="a", frames=4, rate=20)
        robots.start(prefix="b", frames=4, rate=20)
        for proc, names in ((procs[0], ["a0"]), (procs[1], ["b0"]), (procs[2], ["a0", "b0"])):
            for name in names:
                proc.wait_for_line(f"tf2py fleet: robot /{name} joined", timeout=90)
        yield core, solo_address, procs[0], robots, procs[1]
    finally:
        for proc in procs:
            proc.stop()


def test_a_lookup_between_processes_equals_one_fleet_holding_all(split_site):
    import zenoh

    core, solo_address, fleet_a, sims, fleet_b = split_site
    results: Counter[tuple[str, int]] = Counter()
    lock = threading.Lock()
    cancelled: list[int] = []
    accepted: list[int] = []

    def on_reply(sample):  # every answer any fleet sends on the shared address
        kind, goal_id, rest = protocol.parse_server_message(sample.payload.to_bytes())
        with lock:
            if kind == protocol.RESULT:
                results[(str(sample.key_expr), goal_id)] += 1
            elif kind == protocol.CANCELLED and rest[0]:
                cancelled.append(goal_id)
            elif kind == protocol.ACCEPTED:
                accepted.append(goal_id)

    config = zenoh.Config()
    config.insert_json5("mode", '"client"')
    config.insert_json5("connect/endpoints", f'["{core.split("//")[1].split("?")[0]}"]')
    config.insert_json5("scouting/multicast/enabled", "false")
    with zenoh.open(config) as spy, BufferClient(core) as split, \
            BufferClient(solo_address) as solo:
        spy.declare_subscriber("0/tf2py_buffer_server/reply/**", on_reply)
        # Both robots' data are there (waiting goals between processes retry until then).
        newest = split.lookup_transform("a0/link_1", "b0/link_2", Time(), timeout=20)
        solo.lookup_transform("a0/link_1", "b0/link_2", Time(), timeout=20)
        at = newest.header.stamp + Duration(nanosec=400_000_000)
        for client in (split, solo):  # until both hold data past `at` (a waiting goal)
            client.lookup_transform("a0/link_1", "b0/link_2", at + Duration(nanosec=100_000_000),
                                    timeout=20)
        asked = 0
        for target, source in (("a0/link_1", "b0/link_2"), ("b0/odom", "a0/base_link"),
                               ("world", "b0/laser"), ("a0/map", "a0/link_2"),
                               ("b0/base_link", "b0/map")):
            one, two = split.lookup_transform(target, source, at), \
                solo.lookup_transform(target, source, at)
            assert (one.header.frame_id, one.child_frame_id) == (target, source)
            assert numbers(one) == pytest.approx(numbers(two), abs=1e-9)
            assert one.header.stamp == two.header.stamp
            asked += 1
        full = [c.lookup_transform_full("b0/link_1", at, "a0/link_2",
                                        at - Duration(nanosec=200_000_000), "world")
                for c in (split, solo)]
        assert numbers(full[0]) == pytest.approx(numbers(full[1]), abs=1e-9)
        assert split.can_transform("b0/laser", "a0/laser", at) and \
            solo.can_transform("b0/laser", "a0/laser", at)
        asked += 2
        hints = 0
        for target, source in (("a0/link_1", "nobody/base"), ("nobody/base", "b0/map"),
                               ("ghost", "world"), ("b0/map", "a0/ghost"),
                               ("a0/link_1", "b0/link_9"), ("b0/lnk_1", "a0/map")):
            mine = outcome(lambda: split.lookup_transform(target, source, at))
            reference = outcome(lambda: solo.lookup_transform(target, source, at))
            assert mine[0] != "ok" and mine == reference
            hints += "Did you mean" in mine[1]
            asked += 1
        assert hints == 2  # the near misses name a frame of the other process, as one does
        assert not split.can_transform("a0/link_1", "nobody/base", at)
        asked += 1
        # Garbage asked of the fleets' chain queryables: no answer, nothing broken.
        for garbage in (b"\xc1", b"", pack(["x"] * 100), pack({"frames": 1}), pack([1, 2]),
                        pack([["a0/map"], [1.5], False]), pack([["a0/map"], [0], 1]),
                        pack([["a0/map"], [0] * 99, True]), pack([["a0/map"], [0]])):
            assert not [r for r in spy.get("0/tf2py_buffer_server/fleet/*/chain",
                                           payload=garbage, timeout=2) if r.ok is not None]
        assert split.can_transform("a0/map", "b0/map", at)
        asked += 1
        # A waiting goal between processes, cancelled: the process holding it says so, once.
        with lock:
            accepted.clear()
        waiting = split.lookup_transform_async("a0/map", "b0/never", Time(), timeout=30)
        deadline = time.monotonic() + 10
        while not accepted and time.monotonic() < deadline:
            time.sleep(0.01)
        assert waiting.cancel()
        while not cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        split.lookup_transform("a0/map", "b0/map", at)  # after the cancel, on the same link
        asked += 1
        with lock:
            assert len(cancelled) == 1 and len(accepted) == 1, (cancelled, accepted)
        # Every goal on the shared address got exactly one answer (from one process).
        split.lookup_transform("a0/map", "b0/map", at)
        asked += 1
        with lock:
            seen = dict(results)
        assert sum(seen.values()) >= asked and set(seen.values()) == {1}, seen
        # Time 0 (the latest common time) once the robots stop and the data is still.
        sims.stop_all()
        pairs = [(c.lookup_transform("a0/link_1", "b0/link_2", Time()),
                  c.lookup_transform_full("b0/odom", Time(), "a0/link_2", at, "world"))
                 for c in (split, solo)]
        while pairs[0][0].header.stamp != pairs[1][0].header.stamp and \
                time.monotonic() < deadline + 20:  # until both fleets heard the last sample
            pairs = [(c.lookup_transform("a0/link_1", "b0/link_2", Time()),
                      c.lookup_transform_full("b0/odom", Time(), "a0/link_2", at, "world"))
                     for c in (split, solo)]
        for one, two in zip(*pairs):
            assert one.header.stamp == two.header.stamp
            assert numbers(one) == pytest.approx(numbers(two), abs=1e-9)
        # Fleet B stops: A answers alone, b0's frames gone with B, the --world ones still there.
        fleet_b.stop()
        fleet_a.wait_for_line(lambda text: text.endswith(" left") and "peer fleet" in text,
                              timeout=30)
        assert split.lookup_transform("a0/map", "b0/map", Time()).transform.translation.z == \
            pytest.approx(solo.lookup_transform("a0/map", "b0/map", Time())
                          .transform.translation.z, abs=1e-9)
        kind, message = outcome(lambda: split.lookup_transform("a0/link_1", "b0/link_2", at))
        assert kind == "LookupException" and '"b0/link_2" passed to' in message
    # Fleet A's stats after it answered lookups between processes: its router sent it a*'s
    # samples only (none of b0's reached it to be filtered), and it knows its one peer.
    line = fleet_a.wait_for_line(lambda text: text.startswith('{"stats"') and
                                 json.loads(text)["stats"].get("answered_between", 0) > 0,
                                 timeout=30)
    stats = json.loads(line)["stats"]
    assert stats["transforms"] > 0 and stats["peer_fleets"] == 1, line
    assert "filtered" not in stats["dropped_by_cause"], line


@pytest.mark.parametrize("pattern, chunks", [
    (None, "**"), ("a*", "a$*/**"), ("/robot_7", "robot_7"), ("r?b*", "**"), ("a*b", "**"),
    ("site[12]*", "**"),
])
def test_robots_pattern_narrows_the_subscription_only_when_it_is_safe(pattern, chunks):
    from tf2py.server.fleet.names import RobotFilter

    assert RobotFilter(pattern).key_chunks() == chunks
