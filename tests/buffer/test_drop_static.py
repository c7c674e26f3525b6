"""BufferCore.drop_static: forgets the statics of the named frames only (tf2py fleet's stale
robots)."""

from __future__ import annotations

from tf2py import Buffer, Time, make_transform


def test_drop_static_forgets_only_the_named_static_frames():
    buffer = Buffer()
    buffer.set_transform_static(make_transform("world", "r1/map", (1, 0, 0)), "t")
    buffer.set_transform_static(make_transform("r1/base_link", "r1/laser", (0, 0, 1)), "t")
    buffer.set_transform(make_transform("r1/map", "r1/base_link", (2, 0, 0), stamp=1.0), "t")
    assert buffer.drop_static(["r1/laser", "r1/base_link", "unknown", 7]) == 1
    assert not buffer.can_transform("r1/base_link", "r1/laser", Time())
    assert buffer.can_transform("world", "r1/base_link", Time())  # dynamic data and others stay
    assert "r1/laser" in buffer.get_frames()  # the name stays known, as tf2 keeps names
    buffer.set_transform_static(make_transform("r1/base_link", "r1/laser", (0, 0, 1)), "t")
    assert buffer.can_transform("r1/base_link", "r1/laser", Time())
