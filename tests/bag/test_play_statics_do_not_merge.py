"""Issue 11: two bags played in turn must not merge their statics in the core (each `tf2py
play` latches its statics as its own publisher, and they go when it ends)."""

from __future__ import annotations

import subprocess

from bagdata import IDENTITY, write_bag
from helpers import wait_for
from tf2py.buffer.buffer import Buffer
from tf2py.transport.listener import TransformListener
from tf2py.transport.zmq.core import Core


def play(tf2py_command, bag, address):
    result = subprocess.run(tf2py_command + ["play", str(bag), "--core", address],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_two_bags_played_in_turn_do_not_merge_their_statics(tmp_path, tf2py_command):
    first = write_bag(tmp_path / "first.mcap", [
        (True, 1, [("map", "odom", 1, IDENTITY), ("odom", "base", 1, IDENTITY)]),
        (False, 2, [("base", "wheel", 1_000_000_000, IDENTITY)]),
    ])
    # the second bag's tree reverses the first's: merged, they would make a loop
    second = write_bag(tmp_path / "second.mcap", [
        (True, 1, [("base", "odom", 1, IDENTITY), ("odom", "map", 1, IDENTITY)]),
        (False, 2, [("map", "wheel", 1_000_000_000, IDENTITY)]),
    ])
    with Core("tcp://127.0.0.1:0") as core:
        play(tf2py_command, first, core.address)
        wait_for(lambda: core.latched_frames() == [], timeout=10)  # it ended: gone
        play(tf2py_command, second, core.address)
        wait_for(lambda: core.latched_frames() == [], timeout=10)
        assert core.stats()["dropped"] == {}
        # While the second plays (here: a static broadcaster of its own), a late listener
        # sees only the live publisher's statics.
        from tf2py import make_transform
        from tf2py.transport.broadcaster import StaticTransformBroadcaster

        with StaticTransformBroadcaster(core.address) as live:
            live.send_transform(make_transform("base", "odom"))
            late = Buffer()
            with TransformListener(late, core.address):
                wait_for(lambda: late.can_transform("base", "odom", 0))
                assert "map" not in late.get_frames()
