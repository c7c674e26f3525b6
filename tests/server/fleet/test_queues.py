"""Per-robot bounds: a flooding robot fills only its own queue and gets only its turn."""

from __future__ import annotations

from tf2py.server.fleet.queues import RobotQueues


def test_a_flooding_robot_is_bounded_and_the_others_are_not_dropped():
    queues = RobotQueues(max_samples=10, per_round=2)
    for i in range(1000):
        queues.put("flood", "tf", b"x" * 10)
    assert queues.put("quiet", "tf", b"q")
    assert queues.dropped == {"flood": 990}
    first = queues.take(timeout=0)
    assert [r for r, _, _ in first] == ["flood", "flood", "quiet"]


def test_each_round_takes_a_few_samples_of_every_robot_in_turn():
    queues = RobotQueues(max_samples=100, per_round=3)
    for i in range(50):
        queues.put("a", "tf", b"a")
    for i in range(2):
        queues.put("b", "tf", b"b")
    assert [r for r, _, _ in queues.take(timeout=0)] == ["a"] * 3 + ["b"] * 2
    assert [r for r, _, _ in queues.take(timeout=0)] == ["a"] * 3


def test_byte_bound_per_robot():
    queues = RobotQueues(max_samples=100, max_bytes=100)
    assert queues.put("a", "tf", b"x" * 60)
    assert not queues.put("a", "tf", b"x" * 60)
    assert queues.put("b", "tf", b"x" * 60)
    queues.take(timeout=0)
    assert queues.put("a", "tf", b"x" * 60)  # bytes given back when taken


def test_take_waits_until_timeout_when_empty():
    assert RobotQueues().take(timeout=0.01) == []
