"""The robot tracker: joins, leaves, comebacks and stale robots."""

from __future__ import annotations

import pytest

from tf2py.server.fleet.robots import JOINED, LEFT, STALE, RobotTracker


def test_first_token_joins_and_last_token_leaves():
    tracker = RobotTracker(stale_after=5)
    assert tracker.token_added("r7", "tf", 0.0) == [(JOINED, "r7")]
    assert tracker.token_added("r7", "tf_static", 0.1) == []
    assert tracker.token_removed("r7", "tf", 1.0) == []
    assert tracker.alive() == ["r7"]
    assert tracker.token_removed("r7", "tf_static", 2.0) == [(LEFT, "r7")]
    assert tracker.alive() == []


def test_robot_gone_for_stale_after_is_stale():
    tracker = RobotTracker(stale_after=5)
    tracker.token_added("r7", "tf", 0.0)
    tracker.token_removed("r7", "tf", 10.0)
    assert tracker.next_expiry() == 15.0
    assert tracker.expire(14.9) == []
    assert tracker.expire(15.0) == [(STALE, "r7")]
    assert tracker.expire(100.0) == []
    assert tracker.token_added("r7", "tf", 101.0) == [(JOINED, "r7")]


def test_robot_back_before_stale_after_keeps_its_statics():
    tracker = RobotTracker(stale_after=5)
    tracker.token_added("r7", "tf", 0.0)
    tracker.token_removed("r7", "tf", 1.0)
    assert tracker.token_added("r7", "tf", 2.0) == [(JOINED, "r7")]
    assert tracker.expire(50.0) == []
    tracker.token_removed("r7", "tf", 60.0)
    assert tracker.expire(64.0) == [] and tracker.expire(65.0)[0][:2] == (STALE, "r7")


def test_unknown_token_removal_is_ignored():
    tracker = RobotTracker()
    assert tracker.token_removed("ghost", "tf", 0.0) == []


def test_stale_after_must_be_positive():
    with pytest.raises(ValueError, match="--stale-after"):
        RobotTracker(stale_after=0)
