"""Issue 20: every drop counted by reason (gaps, oversized messages, subscribers over the
bound, version-1 latches), and objects dropped without close() leave nothing behind. Real
cores, real sockets on 127.0.0.1."""

from __future__ import annotations

import gc
import logging
import threading
import warnings

import msgpack
import pytest
import zmq

from helpers import wait_for
from tf2py import make_transform
from tf2py.buffer.buffer import Buffer
from tf2py.transport import wire
from tf2py.transport.broadcaster import StaticTransformBroadcaster, TransformBroadcaster
from tf2py.transport.clock import ClockPublisher, SimClock
from tf2py.transport.listener import TransformListener
from tf2py.transport.zmq import connections
from transport_support import (
    RecordingBuffer,
    good_body,
    open_fds,
    open_path,
    raw_socket,
    subscribe_endpoint,
)

# -- objects dropped without close() ---------------------------------------------------------


def _drop_unclosed(make, n=10):
    """Make ``n`` objects and drop them without close(); the ResourceWarnings raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        objects = [make() for _ in range(n)]
        del objects
        gc.collect()
    return [w for w in caught if issubclass(w.category, ResourceWarning)]


@pytest.mark.parametrize("kind", ["listener", "static", "broadcaster", "sim_clock",
                                  "clock_publisher"])
def test_ten_objects_dropped_without_close_leave_no_descriptors_or_threads(core, kind):
    make = {
        "listener": lambda: TransformListener(Buffer(), core.address),
        "static": lambda: _sent(StaticTransformBroadcaster(core.address)),
        "broadcaster": lambda: TransformBroadcaster(core.address),
        "sim_clock": lambda: _watching(SimClock(core.address)),
        "clock_publisher": lambda: ClockPublisher(core.address),
    }[kind]
    # threads of objects that earlier tests left to the garbage collector may still be
    # ending: only threads started here count
    earlier = set(threading.enumerate())
    _drop_unclosed(make, 1)  # warm up: the shared context and its I/O thread stay
    wait_for(lambda: _object_threads(earlier) == [], message="warm-up threads gone")
    fds = open_fds()
    caught = _drop_unclosed(make)
    assert len(caught) == 10
    assert "unclosed" in str(caught[0].message)
    wait_for(lambda: _object_threads(earlier) == [], message="threads of dropped objects end")
    wait_for(lambda: open_fds() <= fds, message=f"descriptors back to {fds}")


def _object_threads(earlier=frozenset()):
    """tf2py threads, but the in-process core's own and those in ``earlier``."""
    return sorted(t.name for t in threading.enumerate()
                  if t.name.startswith("tf2py") and not t.name.startswith("tf2py-core")
                  and t not in earlier)


def _sent(static):
    static.send_transform(make_transform("map", "camera"))
    return static


def _watching(clock):
    clock.add_jump_callback(lambda jump: None)  # starts its thread
    return clock


def test_close_detaches_the_finalizer_so_nothing_warns(core):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        listener = TransformListener(Buffer(), core.address)
        listener.close()
        del listener
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_a_dropped_static_broadcaster_says_goodbye_so_its_set_expires(core):
    static = StaticTransformBroadcaster(core.address)
    static.send_transform(make_transform("map", "camera"))
    wait_for(lambda: core.latched_frames() == ["camera"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        del static
        gc.collect()
    wait_for(lambda: core.latched_frames() == [], timeout=5.0)


# -- messages lost on the way: sequence gaps -------------------------------------------------


def _sequenced(child: str, stream: int, sequence: int) -> bytes:
    return wire.sequenced(good_body(child), wire.pack(stream), sequence)


def test_a_gap_in_a_publishers_sequence_is_counted_by_the_listener(core):
    buffer = RecordingBuffer()
    publisher = raw_socket(zmq.PUB, core.address)
    try:
        with TransformListener(buffer, core.address) as listener:
            probe = iter(range(1000))
            open_path(lambda: publisher.send_multipart(
                [wire.TOPIC_TF, _sequenced("probe", 1, next(probe))]), listener)
            last = next(probe) - 1
            # numbers last+1 .. last+3 never arrive; then last+4 and last+5 do
            for sequence in (last + 4, last + 5):
                publisher.send_multipart([wire.TOPIC_TF, _sequenced("after", 1, sequence)])
            wait_for(lambda: listener.stats()["dropped"].get("gap") == 3)
            # another stream has its own numbers: no gap for its first message
            publisher.send_multipart([wire.TOPIC_TF, _sequenced("other", 2, 50)])
            wait_for(lambda: "other" in buffer.children())
            assert listener.stats()["dropped"] == {"gap": 3}
    finally:
        publisher.close()


def test_messages_lost_at_the_queue_bounds_are_counted_as_gaps(core):
    """A listener stuck in its buffer: the bus's queues fill and ZeroMQ drops; every message
    the broadcaster sent after the first one heard is either stored or counted."""
    release = threading.Event()

    class Stuck(RecordingBuffer):
        def before_insert(self, children):
            release.wait(30)

    buffer = Stuck()
    with TransformListener(buffer, core.address) as listener, \
            TransformBroadcaster(core.address) as broadcaster:
        release.set()
        open_path(lambda: broadcaster.send_transform(make_transform("w", "probe")), listener)
        release.clear()
        for i in range(60_000):
            broadcaster.send_transform(make_transform("w", "c", stamp=(i + 1) * 1e-9))
        release.set()
        ends = 0

        def end_heard():
            nonlocal ends
            ends += 1
            broadcaster.send_transform(make_transform("w", "end", stamp=ends))
            return "end" in buffer.children()

        wait_for(end_heard, timeout=60, interval=0.05)
        # every message sent after the last probe heard is stored or counted as a gap (the
        # end markers sent after the first one heard arrive in order behind it)
        def accounted():
            stored = sum(1 for r in buffer.rows() if r[3] in ("c", "end"))
            return stored + listener.stats()["dropped"].get("gap", 0) == 60_000 + ends

        wait_for(accounted, timeout=20)
        stats = listener.stats()
        assert stats["dropped"].get("gap", 0) > 0
        assert stats["dropped"].keys() == {"gap"}


def test_the_broadcaster_numbers_its_messages_in_its_own_stream(core):
    with TransformBroadcaster(core.address) as a, TransformBroadcaster(core.address) as b:
        assert a.stream_id != b.stream_id
    body = wire.sequenced(good_body("x"), wire.pack(7), 9)
    columns, stream, sequence = wire.decode_sequenced(body)
    assert (stream, sequence) == (7, 9) and columns[2] == ["x"]
    assert wire.decode_columns(body) == columns  # version 2 reads as version 1 plus two


def test_a_version_2_message_with_a_bad_sequence_is_dropped_as_garbage_shape():
    bad = msgpack.packb([2, "a", ["w"], ["c"], b"\0" * 8, b"\0" * 56, "s", -1])
    with pytest.raises(wire.WireError, match="stream and sequence"):
        wire.decode_sequenced(bad)


# -- the core: oversized messages, the subscriber bound, version-1 latches --------------------


def test_a_message_over_16_kib_cut_by_the_core_is_counted_and_logged(core, caplog):
    publisher = raw_socket(zmq.PUB, core.address)
    try:
        with caplog.at_level(logging.WARNING, logger="tf2py.transport"):
            wait_for(lambda: core.stats().get("publishers", 0) >= 1)
            # on /tf_static: the core subscribes to it, so the PUB sends it (a /tf message
            # would be filtered out at the PUB while no listener subscribes)
            publisher.send_multipart([wire.TOPIC_TF_STATIC,
                                      b"\0" * (wire.MAX_PIECE_BYTES + 100)])
            wait_for(lambda: core.stats()["dropped"].get("too_large") == 1)
            # (counted first, then logged outside the counter's lock)
            wait_for(lambda: "over its limit of 16 KiB" in caplog.text)
        assert core.stats()["dropped"]["too_large"] == 1
    finally:
        publisher.close()


def test_a_publisher_that_closes_normally_is_not_counted_as_cut(core):
    publisher = raw_socket(zmq.PUB, core.address)
    wait_for(lambda: core.stats().get("publishers", 0) >= 1)
    publisher.close()
    wait_for(lambda: core.stats().get("publishers", 0) == 0)
    assert core.stats()["dropped"] == {}


def test_subscribers_over_the_core_bound_are_refused_counted_and_told(core, monkeypatch,
                                                                      caplog):
    monkeypatch.setattr(connections, "MAX_SUBSCRIBERS", 2)
    buffers = [RecordingBuffer() for _ in range(3)]
    listeners = []
    try:
        with caplog.at_level(logging.WARNING, logger="tf2py.transport"):
            for buffer in buffers[:2]:
                listeners.append(TransformListener(buffer, core.address))
            # (deadlines for a loaded machine: other workers' floods run beside this test)
            wait_for(lambda: core.stats()["subscribers"] == 2, 30,
                     message=lambda: core.stats())
            refused = TransformListener(buffers[2], core.address)
            listeners.append(refused)
            wait_for(lambda: core.stats()["dropped"].get("subscriber_limit", 0) >= 1, 30,
                     message=lambda: core.stats())
            wait_for(lambda: refused.stats()["dropped"].get("refused", 0) >= 1, 30,
                     message=lambda: refused.stats())
            # (each side counts, then logs outside its counter's lock)
            wait_for(lambda: "serves at most 2 subscribers" in caplog.text, 30)
            wait_for(lambda: "closed this listener's connection at once" in caplog.text, 30)
        assert core.stats()["subscribers"] == 2
        # the first two still hear the bus
        with TransformBroadcaster(core.address) as b:
            wait_for(lambda: b.send_transform(make_transform("w", "x")) or all(
                "x" in buf.children() for buf in buffers[:2]), 30, interval=0.02)
        assert "x" not in buffers[2].children()
    finally:
        for listener in listeners:
            listener.close()


def test_a_version_1_latch_is_refused_and_counted(core):
    publisher = raw_socket(zmq.PUB, core.address)
    try:
        def refused():
            publisher.send_multipart([wire.TOPIC_STATIC_LATCH, good_body("old")])
            return core.stats()["dropped"].get("legacy_latch", 0) > 0

        wait_for(refused, interval=0.02)
        assert core.latched_frames() == []
        subscriber = raw_socket(zmq.SUB, subscribe_endpoint(core.address))
        subscriber.close()
    finally:
        publisher.close()
