"""TransformListener and TransformSubscriber: transforms flow in, bad input is dropped and
counted, the listener goes on, and nothing leaks."""

from __future__ import annotations

import math
import threading
import time

import msgpack
import pytest
import zmq

from helpers import stalling_buffer, wait_for
from tf2py import make_transform
from tf2py.transport import wire
from tf2py.transport.broadcaster import StaticTransformBroadcaster, TransformBroadcaster
from tf2py.transport.listener import TransformListener, TransformSubscriber
from tf2py.transport.zmq.core import Core
from transport_support import (
    RAW_LATCH,
    RecordingBuffer,
    fake_core_publisher,
    good_body,
    open_path,
    raw_socket,
    resources,
    tf2py_threads,
)


def send_until(broadcaster, transform, predicate, timeout=10.0):
    """Re-send a /tf transform until ``predicate()`` holds (a fresh PUB's first messages
    can be lost before its subscription arrives: /tf is not latched)."""

    def sent_and_seen():
        broadcaster.send_transform(transform)
        return predicate()

    wait_for(sent_and_seen, timeout, interval=0.02)


def test_listener_receives_dynamic_transforms_with_sender_authority(core):
    buffer = RecordingBuffer()
    with TransformListener(buffer, core.address) as listener, \
            TransformBroadcaster(core.address, authority="robot@h:1") as broadcaster:
        send_until(broadcaster, make_transform("odom", "base", (1, 2, 3), stamp=4),
                   lambda: "base" in buffer.children())
        authority, is_static, parent, child, stamp, row = buffer.rows()[0]
        assert (authority, is_static, parent, child, stamp) == (
            "robot@h:1", False, "odom", "base", 4_000_000_000)
        assert row == [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]
        assert listener.received_messages >= 1


def test_list_send_arrives_as_one_insert_call(core):
    buffer = RecordingBuffer()
    with TransformListener(buffer, core.address), TransformBroadcaster(core.address) as b:
        batch = [make_transform("world", f"f{i}", stamp=1) for i in range(50)]
        send_until(b, batch, lambda: buffer.calls)
        assert all(len(rows) == 50 for _, _, rows in buffer.calls)


def test_listener_fills_a_real_buffer(core):
    # A broken Buffer is a failure here, never a skip.
    from tf2py.buffer.buffer import Buffer

    buffer = Buffer()
    with TransformListener(buffer, core.address), TransformBroadcaster(core.address) as b:
        send_until(b, make_transform("odom", "base", (1, 0, 0), stamp=1.0),
                   lambda: buffer.can_transform("odom", "base", 0))
        t = buffer.lookup_transform("odom", "base", 0, timeout=5.0)
        assert t.transform.translation.x == 1.0


@pytest.mark.parametrize("frames", [1, 3])
def test_received_counts_only_what_the_buffer_already_holds(core, frames):
    buffer = stalling_buffer(0.3)
    with TransformListener(buffer, core.address) as listener, \
            TransformBroadcaster(core.address) as broadcaster:
        batch = [make_transform("odom", f"c{i}", stamp=1) for i in range(frames)]
        send_until(broadcaster, batch, lambda: listener.received_transforms >= frames)
        # Read the moment the count said so: every counted transform can be looked up.
        assert all(buffer.can_transform("odom", f"c{i}", 0) for i in range(frames))
        assert listener.stats()["received_messages"] >= 1


def test_static_transform_reaches_a_listener_started_later(core):
    with StaticTransformBroadcaster(core.address) as static:
        static.send_transform(make_transform("map", "odom", (5, 0, 0)))
        wait_for(lambda: core.latched_frames() == ["odom"])
        buffer = RecordingBuffer()
        with TransformListener(buffer, core.address):
            wait_for(lambda: "odom" in buffer.children(is_static=True))


def test_static_reaches_every_one_of_many_quickly_started_listeners(core):
    """The slow-joiner loss of ZeroMQ must not lose a static transform: each listener gets
    the latched set on its own subscription."""
    with StaticTransformBroadcaster(core.address) as static:
        static.send_transform(make_transform("map", "odom"))
        wait_for(lambda: core.latched_frames() == ["odom"])
        buffers = [RecordingBuffer() for _ in range(15)]
        listeners = [TransformListener(b, core.address) for b in buffers]
        try:
            for b in buffers:
                wait_for(lambda: "odom" in b.children(is_static=True))
        finally:
            for listener in listeners:
                listener.close()


def test_static_broadcaster_keeps_latest_per_child_across_calls(core):
    with StaticTransformBroadcaster(core.address) as static:
        static.send_transform(make_transform("map", "a", (1, 0, 0)))
        static.send_transform([make_transform("map", "b"), make_transform("map", "a", (2, 0, 0))])
        wait_for(lambda: core.latched_frames() == ["a", "b"])
        buffer = RecordingBuffer()
        with TransformListener(buffer, core.address):
            wait_for(lambda: buffer.children(is_static=True) == {"a", "b"})
            # A late joiner's replay holds only the latest value per child.
            replay = [r for r in buffer.rows() if r[1]]
            assert {r[3]: r[5][0] for r in replay} == {"a": 2.0, "b": 0.0}


def test_static_broadcaster_latches_a_copy_of_a_reused_message(core):
    """Reusing one TransformStamped for several children (change child_frame_id, send again)
    latches each child with the values it had when it was sent."""
    with StaticTransformBroadcaster(core.address) as static:
        t = make_transform("map", "a", (1, 0, 0))
        static.send_transform(t)
        t.child_frame_id = "b"
        t.transform.translation.x = 2.0
        static.send_transform(t)
        wait_for(lambda: core.latched_frames() == ["a", "b"])
        buffer = RecordingBuffer()
        with TransformListener(buffer, core.address):
            wait_for(lambda: buffer.children(is_static=True) == {"a", "b"})
            assert {r[3]: r[5][0] for r in buffer.rows() if r[1]} == {"a": 1.0, "b": 2.0}


def test_static_broadcaster_keeps_publishing_after_a_failed_publish(core, caplog):
    with StaticTransformBroadcaster(core.address) as static:
        calls = []
        body = static._latch._encode

        def fails_once():
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("boom")
            return body()

        static._latch._encode = fails_once
        static.send_transform(make_transform("map", "a"))
        wait_for(lambda: calls)
        static.send_transform(make_transform("map", "b"))
        wait_for(lambda: core.latched_frames() == ["a", "b"])
    assert "publishing failed: RuntimeError: boom" in caplog.text


def test_static_broadcaster_started_before_the_core_latches_when_it_comes_up():
    from helpers import free_port_pair

    address = f"tcp://127.0.0.1:{free_port_pair()}"
    with StaticTransformBroadcaster(address) as static:
        static.send_transform(make_transform("map", "early"))
        with Core(address) as late_core:
            wait_for(lambda: late_core.latched_frames() == ["early"])


def test_listener_started_before_the_core_connects_when_it_comes_up():
    from helpers import free_port_pair

    address = f"tcp://127.0.0.1:{free_port_pair()}"
    buffer = RecordingBuffer()
    with TransformListener(buffer, address), StaticTransformBroadcaster(address) as static:
        static.send_transform(make_transform("map", "odom"))
        with Core(address):
            wait_for(lambda: "odom" in buffer.children(is_static=True))


def test_broadcaster_started_before_the_core_connects_when_it_comes_up():
    from helpers import free_port_pair

    address = f"tcp://127.0.0.1:{free_port_pair()}"
    buffer = RecordingBuffer()
    with TransformBroadcaster(address) as b, TransformListener(buffer, address):
        b.send_transform(make_transform("world", "lost"))  # no core yet: dropped, no error
        with Core(address):
            send_until(b, make_transform("world", "arm"), lambda: "arm" in buffer.children())


# -- bad input: each kind is dropped and counted, and good data after it still arrives -----

BAD_MESSAGES = {
    "garbage": ([wire.TOPIC_TF, b"\xc1\x00garbage"], "garbage"),
    "wrong-shape": ([wire.TOPIC_TF, msgpack.packb({"transforms": []})], "shape"),
    "future-version": ([wire.TOPIC_TF, msgpack.packb([wire.NEWEST_VERSION + 1, "x"])], "version"),
    "one-frame": ([wire.TOPIC_TF], "shape"),
    "three-frames": ([wire.TOPIC_TF, good_body(), b"extra"], "shape"),
}


@pytest.mark.parametrize("name", sorted(BAD_MESSAGES))
def test_bad_message_is_dropped_counted_and_listener_goes_on(name, caplog):
    # Straight from a publisher bound where a core would be (the core itself drops messages
    # with a wrong number of frames: see the next test), so the listener sees each kind.
    frames, cause = BAD_MESSAGES[name]
    buffer = RecordingBuffer()
    with fake_core_publisher() as (address, publisher), \
            TransformListener(buffer, address) as listener:
        open_path(lambda: publisher.send_multipart([wire.TOPIC_TF, good_body("probe")]),
                  listener)
        with caplog.at_level("WARNING", logger="tf2py.transport"):
            publisher.send_multipart(frames)
            publisher.send_multipart(frames)
            publisher.send_multipart([wire.TOPIC_TF, good_body("after")])
            wait_for(lambda: "after" in buffer.children())
        assert listener.stats()["dropped"] == {cause: 2}
        # Logged once per cause, not once per message.
        assert len([r for r in caplog.records if f"({cause})" in r.getMessage()]) == 1


@pytest.mark.parametrize("name", ["one-frame", "three-frames", "unknown-topic"])
def test_messages_of_the_wrong_shape_or_topic_through_a_core_are_counted(core, name):
    frames, cause = dict(BAD_MESSAGES, **{
        "unknown-topic": ([b"/tfx", good_body("other")], "topic")})[name]
    buffer = RecordingBuffer()
    publisher = raw_socket(zmq.PUB, core.address)
    try:
        with TransformListener(buffer, core.address) as listener:
            open_path(lambda: publisher.send_multipart([wire.TOPIC_TF, good_body("probe")]),
                      listener)
            publisher.send_multipart(frames)
            publisher.send_multipart(frames)
            publisher.send_multipart([wire.TOPIC_TF, good_body("after")])
            wait_for(lambda: "after" in buffer.children())
            assert listener.stats()["dropped"] == {cause: 2}
            assert "other" not in buffer.children()
    finally:
        publisher.close()


def test_future_version_log_line_says_to_upgrade(core, caplog):
    buffer = RecordingBuffer()
    publisher = raw_socket(zmq.PUB, core.address)
    try:
        with TransformListener(buffer, core.address) as listener:
            open_path(lambda: publisher.send_multipart([wire.TOPIC_TF, good_body()]), listener)
            with caplog.at_level("WARNING", logger="tf2py.transport"):
                publisher.send_multipart([wire.TOPIC_TF, msgpack.packb([99, "new"])])
                wait_for(lambda: listener.stats()["dropped"].get("version"))
                # (counted under the counter's lock, then logged outside it)
                wait_for(lambda: "wire version 99" in caplog.text)
            assert "upgrade tf2py" in caplog.text
    finally:
        publisher.close()


@pytest.mark.parametrize(
    "bad",
    [
        make_transform("world", "", (0, 0, 0)),
        make_transform("", "bad_parent", (0, 0, 0)),
        make_transform("world", "nan_frame", (math.nan, 0, 0)),
    ],
    ids=["empty-child", "empty-parent", "nan"],
)
def test_invalid_transform_is_dropped_and_the_rest_of_the_batch_stored(core, bad):
    buffer = RecordingBuffer()
    with TransformListener(buffer, core.address) as listener, \
            TransformBroadcaster(core.address) as b:
        batch = [make_transform("world", "before"), bad, make_transform("world", "after")]
        # A message is counted once stored, its refusals counted before that.
        send_until(b, batch, lambda: listener.received_messages)
        assert {"before", "after"} <= buffer.children()
        assert listener.stats()["dropped"]["invalid"] >= 1
        # One refusal per message: equal once the copies still in flight are in.
        wait_for(lambda: listener.stats()["dropped"]["invalid"] == listener.received_messages,
                 message=lambda: listener.stats())


def test_unknown_topic_is_ignored_and_counted():
    buffer = RecordingBuffer()
    with fake_core_publisher() as (address, publisher), \
            TransformListener(buffer, address) as listener:
        open_path(lambda: publisher.send_multipart([wire.TOPIC_TF, good_body()]), listener)
        publisher.send_multipart([b"/tfx", good_body("other")])
        publisher.send_multipart([wire.TOPIC_TF, good_body("after")])
        wait_for(lambda: "after" in buffer.children())
        assert "other" not in buffer.children()
        assert listener.stats()["dropped"] == {"topic": 1}


def test_buffer_exception_is_counted_and_listener_goes_on(core):
    class Flaky(RecordingBuffer):
        def before_insert(self, children):
            if children[0] == "boom":
                raise RuntimeError("buffer bug")

    buffer = Flaky()
    with TransformListener(buffer, core.address) as listener, \
            TransformBroadcaster(core.address) as b:
        send_until(b, make_transform("world", "boom"),
                   lambda: listener.stats()["dropped"].get("error"))
        send_until(b, make_transform("world", "fine"), lambda: "fine" in buffer.children())


# -- resources -----------------------------------------------------------------------------


def test_close_leaves_no_threads_and_no_sockets():
    with Core("tcp://127.0.0.1:0") as warm:  # the context's own fds exist from here on
        TransformListener(RecordingBuffer(), warm.address).close()
    before = resources()
    with Core("tcp://127.0.0.1:0") as c:
        listener = TransformListener(RecordingBuffer(), c.address)
        subscriber = TransformSubscriber(c.address, on_batch=lambda batch: None)
        broadcaster = TransformBroadcaster(c.address)
        static = StaticTransformBroadcaster(c.address)
        static.send_transform(make_transform("a", "b"))
        assert tf2py_threads()
        assert resources().fds > before.fds
        for obj in (listener, subscriber, broadcaster, static):
            obj.close()
            obj.close()  # idempotent
    assert tf2py_threads() == []
    # Every file descriptor and native thread (not only Python threads named tf2py*).
    wait_for(lambda: resources() <= before, timeout=5,
             message=f"fds and native threads back to {before}, now {resources()}")


def test_many_objects_dropped_in_a_loop_leak_no_fds_or_native_threads():
    with Core("tcp://127.0.0.1:0") as c:
        TransformListener(RecordingBuffer(), c.address).close()
        before = resources()
        for _ in range(10):
            with TransformListener(RecordingBuffer(), c.address), \
                    StaticTransformBroadcaster(c.address) as s, TransformBroadcaster(c.address):
                s.send_transform(make_transform("a", "b"))
        wait_for(lambda: resources() <= before, timeout=5,
                 message=f"fds and native threads back to {before}, now {resources()}")


def test_threads_are_named_daemons(core):
    with TransformListener(RecordingBuffer(), core.address):
        threads = [t for t in threading.enumerate() if t.name.startswith("tf2py")]
        assert threads and all(t.daemon for t in threads)


@pytest.mark.parametrize("cls", [TransformBroadcaster, StaticTransformBroadcaster])
def test_broadcaster_refuses_an_authority_that_is_not_a_string(core, cls):
    """Listeners would drop every message of such a sender as malformed."""
    with pytest.raises(TypeError, match="authority must be a string, got int"):
        cls(core.address, authority=42)


@pytest.mark.parametrize("cls", [TransformBroadcaster, StaticTransformBroadcaster])
@pytest.mark.parametrize("bad", [None, 5, "map"], ids=["None", "int", "str"])
def test_send_transform_of_something_else_is_a_type_error_saying_what_it_takes(
    core, cls, bad
):
    with cls(core.address) as b:
        with pytest.raises(TypeError, match="takes a TransformStamped or a list of them"):
            b.send_transform(bad)


@pytest.mark.parametrize("not_a_buffer", [None, "buffer", {}], ids=["None", "str", "dict"])
def test_listener_of_something_that_is_not_a_buffer_is_a_type_error(core, not_a_buffer):
    before = tf2py_threads()
    with pytest.raises(TypeError, match="TransformListener fills a Buffer"):
        TransformListener(not_a_buffer, core.address)
    assert tf2py_threads() == before


def test_send_after_close_raises(core):
    b = TransformBroadcaster(core.address)
    b.close()
    with pytest.raises(RuntimeError, match="closed"):
        b.send_transform(make_transform("a", "b"))


# -- slow consumers ------------------------------------------------------------------------


def test_slow_listener_neither_blocks_the_broadcaster_nor_queues_without_bound(core):
    release, entered = threading.Event(), threading.Event()

    class Stuck(RecordingBuffer):
        def before_insert(self, children):
            entered.set()
            release.wait(30)

    buffer = Stuck()
    # Well above what the high-water marks plus the kernel's loopback buffers hold (about
    # 50 000 of these small messages here).
    sent = 200_000
    flood = make_transform("world", "flood", stamp=1.0)
    with TransformListener(buffer, core.address), TransformBroadcaster(core.address) as b:
        # The listener holds the first message, stuck inside its insert.
        send_until(b, make_transform("world", "first"), entered.is_set)
        t0 = time.monotonic()
        for _ in range(sent):
            b.send_transform(flood)
        elapsed = time.monotonic() - t0
        release.set()
        # Everything that fits in the queues arrives; the rest was dropped at the HWMs. The
        # queues keep order, so once an "end" marker sent after the flood is in, every
        # flood message still queued ahead of it is in too: the count is final.
        send_until(b, make_transform("world", "end"), lambda: "end" in buffer.children(),
                   timeout=30)
        received = sum(1 for row in buffer.rows() if row[3] == "flood")
    assert elapsed < 30, f"broadcaster blocked: {elapsed:.1f} s for {sent} sends"
    assert 0 < received < sent, "nothing was dropped: the queues are not bounded"


def test_a_stuck_listener_does_not_hold_back_another_listener(core):
    release, entered = threading.Event(), threading.Event()

    class Stuck(RecordingBuffer):
        def before_insert(self, children):
            entered.set()
            release.wait(30)

    stuck_buffer, buffer = Stuck(), RecordingBuffer()
    try:
        with TransformListener(stuck_buffer, core.address) as stuck, \
                TransformListener(buffer, core.address) as healthy, \
                TransformBroadcaster(core.address) as b:
            probe = [make_transform("world", "p"), make_transform("world", "q")]
            send_until(b, probe, lambda: healthy.received_messages and entered.is_set())
            before = healthy.received_messages
            for i in range(5000):
                b.send_transform([make_transform("world", "x", stamp=i + 1),
                                  make_transform("world", "y", stamp=i + 1)])
            wait_for(lambda: healthy.received_messages >= before + 5000)
            # Still inside its first insert: a message is counted once stored.
            assert stuck.received_messages == 0
            release.set()
    finally:
        release.set()


def test_subscriber_calls_back_with_decoded_batches(core):
    batches = []
    with TransformSubscriber(core.address, on_batch=batches.append), \
            TransformBroadcaster(core.address, authority="me@h:1") as b:
        t = make_transform("world", "x", (1, 2, 3), stamp=7)
        send_until(b, t, lambda: batches)
        batch = batches[0]
        assert batch.authority == "me@h:1" and batch.is_static is False
        assert list(batch.transforms) == [t]
        assert abs(batch.received_ns - time.time_ns()) < 60e9


def test_subscriber_sees_static_batches_flagged_static(core):
    batches = []
    with StaticTransformBroadcaster(core.address) as static:
        static.send_transform(make_transform("map", "odom"))
        with TransformSubscriber(core.address, on_batch=batches.append):
            wait_for(lambda: any(b.is_static for b in batches))


# -- with the real Buffer: the single-transform path and the batch path ----------------------


def real_buffer():
    from tf2py.buffer.buffer import Buffer

    return Buffer()


@pytest.mark.parametrize("batch", [False, True], ids=["single", "batch"])
def test_invalid_transform_into_real_buffer_is_counted_and_good_data_follows(core, batch):
    buffer = real_buffer()
    bad = make_transform("world", "nan_frame", (math.nan, 0, 0), stamp=1)
    good = make_transform("world", "good", (1, 0, 0), stamp=1)
    with TransformListener(buffer, core.address) as listener, \
            TransformBroadcaster(core.address) as b:
        send_until(b, [bad, good] if batch else bad,
                   lambda: listener.stats()["dropped"].get("invalid"))
        send_until(b, good, lambda: buffer.can_transform("world", "good", 0))
        assert "nan_frame" not in buffer.get_frames()
        assert listener.stats()["stored_transforms"] >= 1


def test_real_buffer_records_the_senders_authority(core):
    buffer = real_buffer()
    with TransformListener(buffer, core.address), \
            TransformBroadcaster(core.address, authority="arm@robot:42") as b:
        send_until(b, make_transform("world", "hand", stamp=1),
                   lambda: "hand" in buffer.frames_info())
        assert buffer.frames_info()["hand"]["broadcaster"] == "arm@robot:42"


def test_old_data_is_counted_not_dropped(core):
    buffer = real_buffer()
    with TransformListener(buffer, core.address) as listener, \
            TransformBroadcaster(core.address) as b:
        send_until(b, make_transform("world", "w", stamp=100.0),
                   lambda: listener.stats()["stored_transforms"])
        send_until(b, make_transform("world", "w", stamp=1.0),
                   lambda: listener.stats()["old_transforms"])
        assert listener.stats()["dropped"] == {}


def test_static_into_real_buffer_is_valid_at_any_time(core):
    buffer = real_buffer()
    with StaticTransformBroadcaster(core.address) as static:
        static.send_transform(make_transform("base", "camera", (0, 0, 1)))
        with TransformListener(buffer, core.address):
            t = buffer.lookup_transform("base", "camera", 12345.0, timeout=10.0)
            assert t.transform.translation.z == 1.0


def test_core_latches_per_publisher_and_the_latest_wins_in_a_late_listener(core):
    with StaticTransformBroadcaster(core.address, authority="first@h:1") as first:
        with StaticTransformBroadcaster(core.address, authority="second@h:2") as second:
            first.send_transform(make_transform("map", "shared", (1, 0, 0)))
            wait_for(lambda: core.latched_frames() == ["shared"])
            watcher = RecordingBuffer()
            with TransformListener(watcher, core.address):
                second.send_transform(make_transform("map", "shared", (2, 0, 0)))
                # The core latches before it forwards: once seen here, the core holds it.
                wait_for(lambda: ("second@h:2", True, "map", "shared") in
                         {row[:4] for row in watcher.rows()})
            late = real_buffer()
            with TransformListener(late, core.address):
                wait_for(lambda: late.can_transform("map", "shared", 0))
                # both publishers' sets are replayed, the most recent last: it wins
                wait_for(lambda: late.lookup_transform("map", "shared", 0)
                         .transform.translation.x == 2.0)
                assert late.frames_info()["shared"]["broadcaster"] == "second@h:2"
        # The second publisher is gone: a listener that starts now gets the first's, as
        # ROS 2's per-publisher transient-local durability gives.
        wait_for(lambda: core.stats()["static_publishers"] == 1)
        later = real_buffer()
        with TransformListener(later, core.address):
            wait_for(lambda: later.can_transform("map", "shared", 0))
            assert later.lookup_transform("map", "shared", 0).transform.translation.x == 1.0


def test_static_of_a_future_version_is_passed_on_and_counted_by_the_listener(core):
    buffer = RecordingBuffer()
    publisher = raw_socket(zmq.PUB, core.address)
    try:
        with TransformListener(buffer, core.address) as listener:
            open_path(lambda: publisher.send_multipart(
                [RAW_LATCH, good_body("probe")]), listener)
            publisher.send_multipart([RAW_LATCH, msgpack.packb([7, "future"])])
            wait_for(lambda: listener.stats()["dropped"].get("version") == 1)
            assert core.dropped.snapshot() == {"version": 1}
            assert core.latched_frames() == ["probe"]
    finally:
        publisher.close()


def test_close_while_the_buffer_is_stuck_returns_and_the_thread_ends_later(core, caplog):
    release = threading.Event()
    entered = threading.Event()

    class Stuck(RecordingBuffer):
        def before_insert(self, children):
            entered.set()
            release.wait(30)

    listener = TransformListener(Stuck(), core.address)
    listener.close_timeout = 0.2
    with TransformBroadcaster(core.address) as b:
        send_until(b, [make_transform("w", "a"), make_transform("w", "b")], entered.is_set)
    with caplog.at_level("WARNING", logger="tf2py.transport"):
        listener.close()
    assert "still busy" in caplog.text
    release.set()
    wait_for(lambda: "tf2py-transform-listener" not in tf2py_threads(),
             message="receive thread ends once released")


def _start_interrupted(self):
    """Thread.start cut short by a Ctrl-C before the thread said it had started."""
    raise KeyboardInterrupt


def test_a_subscriber_interrupted_while_its_thread_starts_raises_only_the_interrupt(
        core, monkeypatch):
    monkeypatch.setattr(threading.Thread, "start", _start_interrupted)
    with pytest.raises(KeyboardInterrupt):  # not "cannot join thread before it is started"
        TransformSubscriber(core=core.address, on_batch=lambda batch: None)


def test_a_static_broadcaster_interrupted_while_its_thread_starts_raises_only_the_interrupt(
        core, monkeypatch):
    monkeypatch.setattr(threading.Thread, "start", _start_interrupted)
    with pytest.raises(KeyboardInterrupt):
        StaticTransformBroadcaster(core=core.address)


def test_join_thread_waits_for_a_thread_that_starts_late():
    from tf2py.transport.zmq.sockets import join_thread

    done = threading.Event()
    late = threading.Thread(target=done.set, daemon=True)
    starter = threading.Timer(0.05, late.start)
    starter.start()
    join_thread(late, 10.0)  # a plain join would raise: the thread has not started yet
    assert done.is_set()
    starter.join()


def test_join_thread_gives_up_at_its_deadline_on_a_thread_that_never_starts():
    from tf2py.transport.zmq.sockets import join_thread

    started = time.monotonic()
    join_thread(threading.Thread(target=lambda: None), 0.05)
    assert time.monotonic() - started < 5.0
