"""Per-robot bounds: a flooding robot fills only its own queue and gets only its turn."""

from __future__ import annotations

from tf2py.server.fleet.queues import RobotQueues


def test_a_flooding_robot_is_bounded_and_the_others_are_not_dropped():
    queues = RobotQueues(max_samples=10, per_round=2)
    for _ in range(1000):
        queues.put("flood", "tf", b"x" * 10)
    assert queues.put("quiet", "tf", b"q") is None
    assert queues.dropped == {"flood": 990}
    first = queues.take(timeout=0)
    assert [r for r, _, _ in first] == ["flood", "flood", "quiet"]


def test_each_round_takes_a_few_samples_of_every_robot_in_turn():
    queues = RobotQueues(max_samples=100, per_round=3)
    for _ in range(50):
        queues.put("a", "tf", b"a")
    for _ in range(2):
        queues.put("b", "tf", b"b")
    assert [r for r, _, _ in queues.take(timeout=0)] == ["a"] * 3 + ["b"] * 2
    assert [r for r, _, _ in queues.take(timeout=0)] == ["a"] * 3


def test_byte_bound_per_robot():
    queues = RobotQueues(max_samples=100, max_bytes=100)
    assert queues.put("a", "tf", b"x" * 60) is None
    assert queues.put("a", "tf", b"x" * 60) == "robot_queue_full"
    assert queues.put("b", "tf", b"x" * 60) is None
    queues.take(timeout=0)
    assert queues.put("a", "tf", b"x" * 60) is None  # bytes given back when taken


def test_take_waits_until_timeout_when_empty():
    assert RobotQueues().take(timeout=0.01) == []


def test_all_queues_together_stay_within_their_byte_budget():
    queues = RobotQueues(max_samples=100, max_bytes=10_000, max_total_bytes=2_000)
    causes = [queues.put(f"robot{k}", "tf", b"x" * 300) for k in range(10)]
    assert causes.count(None) == 4 and causes[4:] == ["fleet_budget"] * 6
    assert queues.total_bytes <= 2_000
    queues.forget("robot0")
    assert queues.put("robot9", "tf", b"x" * 300) is None  # a forgotten queue gives its bytes back
    while queues.take(timeout=0.01):
        pass
    assert queues.total_bytes == 0 and queues.pending() == 0


def test_a_round_stops_taking_robots_once_its_bytes_are_taken():
    queues = RobotQueues(max_samples=100, per_round=2)
    for robot in "abcd":
        for _ in range(3):
            queues.put(robot, "tf", b"x" * 100)
    first = queues.take(timeout=0, max_bytes=300)  # a: 200 bytes, b: 200 more, then stop
    assert [r for r, _, _ in first] == ["a", "a", "b", "b"]
    second = queues.take(timeout=0, max_bytes=10_000)  # the others in turn, then a and b again
    assert [r for r, _, _ in second] == ["c", "c", "d", "d", "a", "b"]
    assert queues.take(timeout=0, max_bytes=1) == [("c", "tf", b"x" * 100)]


def test_samples_already_queued_are_taken_without_lingering():
    queues = RobotQueues()
    queues.put("a", "tf", b"x")
    # linger applies only after waiting for a first sample: this returns at once, not in 60 s
    assert queues.take(timeout=60, linger=60) == [("a", "tf", b"x")]
