"""Buffer.add_insert_listener: the frames each storing insertion named, once per call, outside
the lock (the BufferServer's goal index is built on it)."""

from __future__ import annotations

import threading

from tf2py import Buffer, make_transform


def test_a_listener_hears_each_storing_insertion_once_with_its_frames():
    buffer = Buffer(cache_time=10.0)
    heard = []
    buffer.add_insert_listener(lambda parents, children: heard.append(
        (sorted(parents), sorted(children))))
    buffer.set_transform(make_transform("map", "odom", stamp=20.0), "t")
    buffer.set_transform_static(make_transform("odom", "base", (1, 0, 0)), "t")
    buffer.set_transforms(["map", "base"], ["a", "b"], [21_000_000_000, 21_000_000_000],
                          [[0, 0, 0, 0, 0, 0, 1]] * 2, "t")
    assert heard == [(["map"], ["odom"]), (["odom"], ["base"]), (["base", "map"], ["a", "b"])]


def test_an_insertion_that_stores_nothing_is_not_heard():
    buffer = Buffer(cache_time=10.0)
    buffer.set_transform(make_transform("map", "odom", stamp=100.0), "t")
    heard = []
    buffer.add_insert_listener(lambda parents, children: heard.append(children))
    assert buffer.set_transform(make_transform("map", "odom", stamp=1.0), "t") is False
    assert heard == []


def test_the_listener_runs_outside_the_lock_and_can_be_removed():
    buffer = Buffer()
    held = []

    def listener(parents, children):
        # another thread can take the buffer's lock while the listener runs
        t = threading.Thread(target=lambda: held.append(buffer.get_frames()))
        t.start()
        t.join(timeout=5)

    buffer.add_insert_listener(listener)
    buffer.set_transform_static(make_transform("map", "odom"), "t")
    assert held == [["map", "odom"]]
    buffer.remove_insert_listener(listener)
    buffer.set_transform_static(make_transform("map", "other"), "t")
    assert len(held) == 1


def test_a_failing_listener_does_not_stop_insertions(caplog):
    buffer = Buffer()

    def broken(parents, children):
        raise RuntimeError("listener bug")

    buffer.add_insert_listener(broken)
    buffer.set_transform_static(make_transform("map", "odom"), "t")
    assert buffer.can_transform("map", "odom", 0)
    assert "insert listener failed" in caplog.text
