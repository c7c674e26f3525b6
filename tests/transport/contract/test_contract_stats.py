"""``stats()`` on every bus: one shape for receivers and clocks, counting what arrived and
what was dropped by cause; bad input, raw from a stranger or invalid from a broadcaster, is
dropped and counted and never stops the listener."""

from __future__ import annotations

import pytest

from contract_support import DISCOVERY_TIMEOUT, wait_until_heard
from helpers import wait_for
from tf2py import Buffer, TransformBroadcaster, TransformListener, make_transform
from tf2py.transport.clock import ClockPublisher, SimClock
from tf2py.transport.listener import TransformSubscriber

RECEIVER_KEYS = {"received_messages", "received_transforms", "dropped"}
LISTENER_KEYS = RECEIVER_KEYS | {"stored_transforms", "old_transforms"}


def check_shape(stats: dict, keys: set) -> None:
    assert keys <= set(stats), sorted(stats)
    assert isinstance(stats["dropped"], dict)
    for cause, count in stats["dropped"].items():
        assert isinstance(cause, str) and cause and isinstance(count, int) and count > 0
    for key in keys - {"dropped"}:
        assert isinstance(stats[key], int) and stats[key] >= 0


def test_receivers_count_what_they_heard(bus, names):
    child = names("counted")
    batches = []
    buffer = Buffer()
    with TransformListener(buffer, core=bus.address) as listener, \
            TransformSubscriber(core=bus.address, on_batch=batches.append) as subscriber, \
            TransformBroadcaster(core=bus.address) as broadcaster:
        check_shape(listener.stats(), LISTENER_KEYS)
        check_shape(subscriber.stats(), RECEIVER_KEYS)
        pair = [make_transform("world", child, stamp=1), make_transform(child, child + "_2",
                                                                      stamp=1)]
        wait_until_heard(buffer, "world", child + "_2",
                         send=lambda: broadcaster.send_transform(pair))
        wait_for(lambda: any(len(b) == 2 and b.transforms.children[0] == child for b in batches),
                 DISCOVERY_TIMEOUT)
        stats = listener.stats()
        check_shape(stats, LISTENER_KEYS)
        assert stats["received_messages"] >= 1 and stats["received_transforms"] >= 2
        assert stats["stored_transforms"] >= 2
        check_shape(subscriber.stats(), RECEIVER_KEYS)


def test_clocks_count_ticks_and_jumps(bus):
    with SimClock(core=bus.address) as clock, ClockPublisher(core=bus.address) as publisher:
        def reached(seconds: float) -> bool:
            publisher.publish(seconds)  # repeated: /clock is best effort, as in ROS 2
            return clock.now().to_seconds() == seconds

        wait_for(lambda: reached(20.0), DISCOVERY_TIMEOUT, interval=0.05)
        wait_for(lambda: reached(10.0), DISCOVERY_TIMEOUT, interval=0.05)  # backwards
        stats = clock.stats()
        assert {"ticks", "jumps", "dropped"} <= set(stats)
        assert stats["ticks"] >= 2 and stats["jumps"] >= 1
        assert isinstance(stats["dropped"], dict)


def test_bad_input_from_a_stranger_is_dropped_and_counted_by_cause(bus, names):
    buffer = Buffer()
    with TransformListener(buffer, core=bus.address) as listener, \
            TransformBroadcaster(core=bus.address) as broadcaster:
        for what, send, cause in bus.bad_inputs():
            def counted() -> bool:
                send()  # repeated: a raw sender may not be matched yet
                return listener.stats()["dropped"].get(cause, 0) > 0

            wait_for(counted, DISCOVERY_TIMEOUT, interval=0.05,
                     message=lambda: f"{what} counted as {cause!r} on {bus.name}: "
                     f"{listener.stats()}")
            check_shape(listener.stats(), LISTENER_KEYS)
        # the listener goes on
        after = names("after_bad_input")
        wait_until_heard(buffer, "world", after, send=lambda: broadcaster.send_transform(
            make_transform("world", after, stamp=1)))
        assert not any(frame.startswith(("bad_", "no_attachment")) for frame in
                       buffer.get_frames())


@pytest.mark.parametrize("bad", ["own_parent", "nan"])
def test_an_invalid_transform_is_dropped_as_invalid_and_the_rest_stored(bus, names, bad):
    good, wrong = names("good"), names("wrong")
    invalid = make_transform("world", wrong, stamp=1)
    if bad == "own_parent":
        invalid.child_frame_id = "world"
    else:
        invalid.transform.translation.x = float("nan")
    buffer = Buffer()
    with TransformListener(buffer, core=bus.address) as listener, \
            TransformBroadcaster(core=bus.address) as broadcaster:
        wait_until_heard(buffer, "world", good, send=lambda: broadcaster.send_transform(
            [invalid, make_transform("world", good, stamp=1)]))
        assert listener.stats()["dropped"].get("invalid", 0) >= 1
        assert wrong not in buffer.get_frames()
