"""SimClock and ClockPublisher: simulated time on the bus's /clock stream, its wire format,
bad input dropped and counted, backward jumps reported, and Buffer(clock=SimClock)."""

from __future__ import annotations

import threading

import msgpack
import pytest
import zmq

from helpers import wait_for
from tf2py import Buffer, SimClock, Time, make_transform
from tf2py.transport import wire
from tf2py.transport.clock import ClockPublisher, TimeJump
from tf2py.transport.zmq import wire_clock
from tf2py.transport.zmq.address import bus_endpoints
from transport_support import core  # noqa: F401  (fixture)


def clock_threads():
    return [t for t in threading.enumerate() if t.name == "tf2py-sim-clock"]


def publish_until(publisher, clock, time_s, timeout=10.0):
    """Re-publish until the clock shows it (a fresh PUB's first messages can be lost)."""

    def shown():
        publisher.publish(time_s)
        expected = time_s if isinstance(time_s, Time) else Time.from_seconds(time_s)
        return clock.now() == expected

    wait_for(shown, timeout, interval=0.01)


def test_now_is_zero_until_the_first_tick_then_follows_the_bus(core):  # noqa: F811
    with SimClock(core.address) as clock, ClockPublisher(core.address) as publisher:
        assert clock.now() == Time()
        assert not clock.wait_for_time(0.05)
        publish_until(publisher, clock, Time(1_700_000_000, 123_456_789))
        assert clock.now().nanoseconds == 1_700_000_000_123_456_789  # no float on the way
        assert clock.wait_for_time(0)
        publisher.publish(Time(1_700_000_001))
        wait_for(lambda: clock.now() == Time(1_700_000_001), 5.0)
        assert clock.jumps == 0


def test_backward_jump_calls_the_jump_callbacks(core):  # noqa: F811
    jumps = []
    with SimClock(core.address) as clock, ClockPublisher(core.address) as publisher:
        clock.add_jump_callback(jumps.append)
        publish_until(publisher, clock, 100.0)
        publisher.publish(150.0)  # forward: no callback
        wait_for(lambda: clock.now() == Time(150), 5.0)
        publisher.publish(40.0)
        wait_for(lambda: jumps, 5.0)
        assert jumps == [TimeJump(Time(150), Time(40))]
        assert jumps[0].delta.to_seconds() == -110.0
        assert clock.stats()["jumps"] == 1


def test_a_raising_jump_callback_is_counted_and_the_clock_goes_on(core):  # noqa: F811
    seen = []

    def bad(jump):
        raise RuntimeError("user bug")

    with SimClock(core.address) as clock, ClockPublisher(core.address) as publisher:
        clock.add_jump_callback(bad)
        clock.add_jump_callback(seen.append)
        publish_until(publisher, clock, 100.0)
        publisher.publish(50.0)
        wait_for(lambda: seen, 5.0)
        publisher.publish(60.0)
        wait_for(lambda: clock.now() == Time(60), 5.0)
        assert clock.stats()["dropped"] == {"callback": 1}
        clock.remove_jump_callback(bad)
        with pytest.raises(TypeError, match="callable"):
            clock.add_jump_callback("no")


def test_malformed_clock_messages_are_dropped_and_counted(core):  # noqa: F811
    publish_endpoint, _ = bus_endpoints(core.address)
    raw = zmq.Context.instance().socket(zmq.PUB)
    raw.setsockopt(zmq.LINGER, 0)
    raw.connect(publish_endpoint)
    try:
        with SimClock(core.address) as clock:
            def sent_and_seen():
                raw.send(wire_clock.clock_message(5_000_000_000))
                return clock.now() == Time(5)

            wait_for(sent_and_seen, 10.0, interval=0.01)
            # The socket keeps only the latest tick, so each bad one is read before the next.
            for bad in (b"\xc1garbage", msgpack.packb([1, "soon"]), msgpack.packb([99, 7]),
                        msgpack.packb([1, -5])):
                before = sum(clock.stats()["dropped"].values())
                raw.send(wire_clock.TOPIC_CLOCK + bad)
                # (read when asked: now() takes the latest tick and reports a bad one)
                wait_for(lambda: clock.now() is not None
                         and sum(clock.stats()["dropped"].values()) > before, 5.0)
                assert clock.now() == Time(5)
            # A multi-frame message is discarded by ZeroMQ's conflating socket itself.
            raw.send_multipart([wire_clock.TOPIC_CLOCK, wire_clock.encode_clock(7_000_000_000)])
            raw.send(wire_clock.clock_message(6_000_000_000))
            wait_for(lambda: clock.now() == Time(6), 5.0)
            dropped = clock.stats()["dropped"]
            assert dropped == {"garbage": 1, "shape": 2, "version": 1}, dropped
            assert clock.jumps == 0
    finally:
        raw.close(0)


def test_the_jump_thread_runs_only_with_callbacks_and_close_ends_it(core):  # noqa: F811
    before = len(clock_threads())
    clock = SimClock(core.address)
    assert len(clock_threads()) == before  # nothing runs per tick: now() reads the latest
    clock.add_jump_callback(lambda jump: None)
    assert len(clock_threads()) == before + 1
    clock.close()
    assert len(clock_threads()) == before
    clock.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        clock.add_jump_callback(lambda jump: None)
    with SimClock(core.address) as other:
        other.add_jump_callback(print)
    assert len(clock_threads()) == before


def test_bad_addresses_are_refused_in_one_line():
    with pytest.raises(ValueError, match="invalid address"):
        SimClock("udp://nowhere")
    with pytest.raises(ValueError, match="domain 999 is out of range") as info:
        SimClock("ros2://999")  # ros2:// picks ROS 2's /clock, whose domain is checked
    assert "\n" not in str(info.value)
    assert clock_threads() == []


def test_clock_wire_format_round_trips_and_refuses_bad_values():
    assert wire_clock.decode_clock(wire_clock.encode_clock(1_700_000_000_123_456_789)) == \
        1_700_000_000_123_456_789
    with pytest.raises(wire.WireError):
        wire_clock.encode_clock(-1)
    with pytest.raises(wire.UnknownVersionError):
        wire_clock.decode_clock(msgpack.packb([wire.WIRE_VERSION + 1, 5]))
    for body in (b"", b"\xc1", msgpack.packb([1]), msgpack.packb([1, 2.5]),
                 msgpack.packb([1, True]), msgpack.packb({"t": 1}), b"x" * 100,
                 msgpack.packb([1, 2**64 - 1])):
        with pytest.raises(wire.WireError):
            wire_clock.decode_clock(body)


def test_buffer_following_a_sim_clock_forgets_dynamic_data_on_a_jump_back(core):  # noqa: F811
    with SimClock(core.address) as clock, ClockPublisher(core.address) as publisher:
        publish_until(publisher, clock, 200.0)
        buffer = Buffer(cache_time=10.0, clock=clock)
        buffer.set_transform_static(make_transform("base", "laser", (1, 0, 0)), "test")
        for t in range(190, 201):
            buffer.set_transform(make_transform("odom", "base", (t, 0, 0), stamp=t), "test")
        # An old pass's stamp is refused while the newer data is held (tf2's TF_OLD_DATA)...
        assert buffer.set_transform(make_transform("odom", "base", stamp=100), "test") is False
        publisher.publish(100.0)  # ...until the clock jumps back (a bag that loops)
        wait_for(lambda: not buffer.can_transform("odom", "base", 195), 5.0)
        assert buffer.can_transform("base", "laser", 0)  # statics stay
        assert buffer.set_transform(make_transform("odom", "base", stamp=100), "test") is True
        assert buffer.lookup_transform("odom", "laser", 100).transform.translation.x == 1.0
