"""`tf2py doctor`: bags built to show each problem, live buses (a real core and
broadcasters) showing some, and the clean real recordings in ../shared/data showing none."""

from __future__ import annotations

import json
import threading
import time

import pytest

from bag.bagdata import ALL_RECORDINGS, write_bag
from tf2py import Core, StaticTransformBroadcaster, Time, TransformBroadcaster, make_transform

pytestmark = pytest.mark.timeout(900)

S = 1_000_000_000
T0 = 1_700_000_000 * S
IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def moving(i: int) -> tuple:
    return (0.01 * i, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def stream(parent, child, hz=20.0, seconds=5.0, start_s=0.0, offset_s=0.0, values=moving):
    """Messages of ``child`` on /tf at ``hz``, logged at T0 + t, stamped ``offset_s`` later."""
    messages = []
    for i in range(int(seconds * hz)):
        log_ns = T0 + int((start_s + i / hz) * S)
        messages.append((False, log_ns, [(parent, child, log_ns + int(offset_s * S), values(i))]))
    return messages


def clean_robot():
    return [(True, T0, [("base_link", "laser", T0, IDENTITY)]), *stream("odom", "base_link")]


PROBLEMS = {
    "parent_changes": stream("odom", "base_link", seconds=2.0)
    + stream("map", "base_link", start_s=2.0, seconds=2.0),
    "unconnected_trees": clean_robot() + [(True, T0, [("world", "camera", T0, IDENTITY)])],
    "clock_ahead": clean_robot() + stream("odom", "arm", offset_s=3.0),
    "clock_behind": clean_robot() + stream("odom", "arm", offset_s=-4.0),
    "static_on_tf": clean_robot() + stream("base_link", "imu", hz=50.0, values=lambda i: IDENTITY),
    "dynamic_on_tf_static": clean_robot() + [
        (True, T0 + i * S, [("base_link", "gripper", T0 + i * S, moving(i))]) for i in range(5)],
    "low_rate": [(True, T0, [("base_link", "laser", T0, IDENTITY)])]
    + stream("odom", "base_link", hz=0.2, seconds=30.0),
    "gap": clean_robot() + stream("odom", "base_link", start_s=10.0),
    "invalid_quaternion": clean_robot() + [
        (False, T0, [("base_link", "wheel", T0, (0, 0, 0, 0, 0, 0, 2.0))])],
    "leading_slash": clean_robot() + [(True, T0, [("/laser", "laser_mount", T0, IDENTITY)])],
}


# The machine running the tests may be loaded: a generous deadline per command.
DEADLINE_S = 240


def doctor_json(tf2py, *args):
    result = tf2py("doctor", *args, "--json", timeout=DEADLINE_S)
    return result, json.loads(result.stdout) if result.stdout.strip() else None


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_a_bag_built_to_show_a_problem_shows_it_alone(tf2py, tmp_path, problem):
    bag = write_bag(tmp_path / f"{problem}.mcap", PROBLEMS[problem])
    text = tf2py("doctor", "--from-bag", str(bag), timeout=DEADLINE_S)
    assert text.returncode == 1, text.stdout + text.stderr
    lines = text.stdout.splitlines()
    assert [x.split("]")[0] for x in lines if x.startswith("[")] == [f"[{problem}"]
    (line,) = [x for x in lines if x.startswith(f"[{problem}]")]
    assert " Fix: " in line
    assert lines[-1].startswith("tf2py doctor: 1 problem found")


def test_json_gives_the_findings_with_their_numbers(tf2py, tmp_path):
    bag = write_bag(tmp_path / "ahead.mcap", PROBLEMS["clock_ahead"])
    result, report = doctor_json(tf2py, "--from-bag", str(bag))
    assert result.returncode == 1
    (finding,) = report["findings"]
    assert finding["check"] == "clock_ahead" and finding["frames"] == ["arm"]
    assert finding["details"]["offset_s"] == pytest.approx(3.0)
    assert report["messages"] == 201 and report["publishers"] == ["bag:ahead.mcap"]


def test_a_clean_built_bag_has_no_findings(tf2py, tmp_path):
    bag = write_bag(tmp_path / "clean.mcap", clean_robot())
    result = tf2py("doctor", "--from-bag", str(bag), timeout=DEADLINE_S)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("tf2py doctor: no problems found (101 messages")


@pytest.mark.parametrize("recording", ALL_RECORDINGS, ids=lambda p: p.name)
def test_the_clean_real_recordings_raise_no_false_alarm(tf2py, recording):
    result, report = doctor_json(tf2py, "--from-bag", str(recording))
    assert report["findings"] == [], json.dumps(report["findings"], indent=1)
    assert result.returncode == 0 and report["transforms"] > 100


def test_an_unreadable_bag_is_a_one_line_error(tf2py, tmp_path):
    path = tmp_path / "not_a_bag.mcap"
    path.write_text("hello\n")
    result = tf2py("doctor", "--from-bag", str(path), timeout=DEADLINE_S)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "not a ROS bag" in result.stderr


@pytest.mark.parametrize("value", ["0", "-1", "nan", "x", "1_0"])
def test_a_bad_duration_is_a_one_line_error(tf2py, value):
    result = tf2py("doctor", "--duration", value, timeout=DEADLINE_S)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "--duration" in result.stderr


def test_core_and_from_bag_exclude_each_other(tf2py):
    result = tf2py("doctor", "--core", "tcp://127.0.0.1:1", "--from-bag", "x.mcap",
                   timeout=DEADLINE_S)
    assert result.returncode == 2 and "not allowed with" in result.stderr


class Sender:
    """Sends ``transforms_at(i, stamp)`` on /tf from a named thread until closed, as a
    timer-driven ROS publisher does: sample ``i`` is due 50 ms after sample ``i - 1`` and
    stamped with its due time, so a test machine that starves the thread for a moment
    delays a send, not the spacing of the stamps the doctor judges."""

    def __init__(self, core: str, transforms_at, authority: str | None = None):
        self.broadcaster = TransformBroadcaster(core=core, authority=authority)
        self.transforms_at = transforms_at
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="test-sender")
        self.thread.start()

    def _run(self):
        first_ns = time.time_ns()
        started = time.monotonic()
        i = 0
        while not self.stop.wait(max(0.0, started + 0.05 * (i + 1) - time.monotonic())):
            i += 1
            stamp = Time.from_nanoseconds(first_ns + i * PERIOD_NS)
            self.broadcaster.send_transform(self.transforms_at(i, stamp))

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.broadcaster.close()


@pytest.fixture
def live():
    """A real core on free ports, and a way to start senders on it; all closed after."""
    core = Core("tcp://127.0.0.1:0")
    senders: list = []

    def start(transforms_at, authority=None):
        senders.append(Sender(core.address, transforms_at, authority))

    statics = StaticTransformBroadcaster(core=core.address)
    statics.send_transform(make_transform("base_link", "laser", (0.2, 0, 0.1)))
    yield core.address, start
    for sender in senders:
        sender.close()
    statics.close()
    core.close()


PERIOD_NS = 50_000_000


def robot_at(i, stamp):
    return make_transform("odom", "base_link", (0.01 * i, 0, 0), stamp=stamp)


def test_a_clean_live_bus_has_no_findings(tf2py, live):
    address, start = live
    start(robot_at)
    result, report = doctor_json(tf2py, "--core", address, "--duration", "3")
    assert result.returncode == 0, json.dumps(report, indent=1)
    assert report["frames"] == 2 and report["findings"] == []


def test_two_live_publishers_of_one_frame_are_both_named(tf2py, live):
    address, start = live
    start(robot_at, "localiser_a")  # (one process: two authorities named as two nodes)
    start(robot_at, "localiser_b")
    result, report = doctor_json(tf2py, "--core", address, "--duration", "3")
    assert result.returncode == 1
    (finding,) = [f for f in report["findings"] if f["check"] == "two_authorities"]
    assert finding["authorities"] == ["localiser_a", "localiser_b"]
    assert finding["frames"] == ["base_link"]


def test_a_live_publisher_with_a_clock_ahead_is_named_with_its_offset(tf2py, live):
    address, start = live
    start(robot_at)
    start(lambda i, stamp: make_transform(
        "base_link", "arm", (0, 0, 0.01 * i),
        stamp=Time.from_nanoseconds(stamp.nanoseconds + 3 * S)))
    result, report = doctor_json(tf2py, "--core", address, "--duration", "3")
    assert result.returncode == 1
    (finding,) = report["findings"]
    assert finding["check"] == "clock_ahead" and finding["frames"] == ["arm"]
    assert finding["details"]["offset_s"] == pytest.approx(3.0, abs=0.5)


def test_a_silent_bus_is_a_one_line_error_naming_the_core(tf2py):
    with Core("tcp://127.0.0.1:0") as core:
        result = tf2py("doctor", "--core", core.address, "--duration", "0.5",
                       timeout=DEADLINE_S)
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert f"no tf data received from the core at {core.address}" in result.stderr
    assert "`tf2py core`" in result.stderr
