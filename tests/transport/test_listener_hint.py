"""A listener that has heard nothing says so in a failed lookup's message (which bus, what to
start), in the same words as the command line; once it has heard something, tf2's message
stands alone, and a lookup that succeeds never asks."""

from __future__ import annotations

import pytest

from helpers import free_port_pair, wait_for
from tf2py import Buffer, BufferCore, LookupException, Time, make_transform
from tf2py.buffer.exceptions import InvalidArgumentException
from tf2py.transport.broadcaster import TransformBroadcaster
from tf2py.transport.hints import bus_name, no_data_hint
from tf2py.transport.listener import TransformListener
from transport_support import core  # noqa: F401  (fixture)

MISSING = '"odom" passed to lookupTransform argument target_frame does not exist.'


def _silent_address() -> str:
    return f"tcp://127.0.0.1:{free_port_pair()}"


def _error(buffer, *args) -> str:
    with pytest.raises(LookupException) as raised:
        buffer.lookup_transform(*args)
    return str(raised.value)


def test_a_listener_that_heard_nothing_names_the_bus_and_what_to_start():
    address = _silent_address()
    buffer = Buffer()
    with TransformListener(buffer, address):
        message = _error(buffer, "odom", "laser", Time())
    assert message == (f"{MISSING} Nothing was received from the core at {address}: is "
                       "`tf2py core` running there, and is anything broadcasting?")


def test_after_a_wait_the_hint_ends_the_message_once():
    address = _silent_address()
    buffer = Buffer()
    with TransformListener(buffer, address):
        message = _error(buffer, "odom", "laser", Time(), 0.05)
    assert message.startswith(MISSING + " canTransform returned after ")
    assert message.endswith(f"Nothing was received from the core at {address}: is `tf2py "
                            "core` running there, and is anything broadcasting?")
    assert message.count("Nothing was received") == 1


def test_once_anything_was_heard_the_message_is_tf2s_alone(core):  # noqa: F811
    buffer = Buffer()
    with TransformListener(buffer, core.address) as listener, \
            TransformBroadcaster(core.address) as broadcaster:

        def heard():
            broadcaster.send_transform(make_transform("map", "base_link", stamp=Time(1)))
            return listener.received_messages > 0

        wait_for(heard, timeout=10, interval=0.02)
        assert _error(buffer, "odom", "laser", Time()) == MISSING + " "


def test_a_buffer_without_a_listener_and_an_invalid_argument_get_no_hint():
    assert _error(Buffer(), "odom", "laser", Time()) == MISSING + " "
    assert _error(BufferCore(), "odom", "laser", Time()) == MISSING + " "
    buffer = Buffer()
    with TransformListener(buffer, _silent_address()):
        with pytest.raises(InvalidArgumentException) as raised:
            buffer.lookup_transform("", "laser", Time())
    assert "Nothing was received" not in str(raised.value)


def test_a_lookup_that_succeeds_never_asks_for_the_hint():
    asked = []
    buffer = Buffer()
    buffer.add_lookup_hint(lambda: asked.append(1) or "a hint.")
    buffer.set_transform(make_transform("map", "odom", (1, 0, 0), stamp=Time(2)), "test")
    for _ in range(100):
        buffer.lookup_transform("map", "odom", Time())
        buffer.lookup_transform("map", "odom", 2.0)
    assert asked == []
    assert _error(buffer, "odom", "laser", Time()) == (
        '"laser" passed to lookupTransform argument source_frame does not exist. a hint.')
    assert asked == [1]


def test_a_hint_that_raises_adds_nothing_and_a_removed_hint_is_not_asked():
    buffer = Buffer()

    def broken() -> str:
        raise RuntimeError("boom")

    buffer.add_lookup_hint(broken)
    assert _error(buffer, "odom", "laser", Time()) == MISSING + " "

    def hint() -> str:
        return "a hint."

    buffer.add_lookup_hint(hint)
    buffer.remove_lookup_hint(hint)
    buffer.remove_lookup_hint(hint)  # twice: no error
    assert _error(buffer, "odom", "laser", Time()) == MISSING + " "


def test_each_bus_words_its_own_hint_without_touching_the_network():
    assert bus_name("tcp://127.0.0.1:7400") == "the core at tcp://127.0.0.1:7400"
    assert bus_name("ros2://42") == "the ROS 2 graph at ros2://42"
    assert "ROS_DOMAIN_ID" in no_data_hint("ros2://42")
    zenoh = "zenoh://tcp/127.0.0.1:7447?namespace=/robot1"
    assert bus_name(zenoh) == f"the Zenoh network at {zenoh}"
    assert "`tf2py router`" in no_data_hint(zenoh)
    assert no_data_hint("tcp://127.0.0.1:7400", broadcasting=False) == (
        "is `tf2py core` running there?")
