"""The bus under faults and floods (issue 11): the core's memory stays bounded in bytes
whatever subscribers do, replays are coalesced, long frame ids and invalid statics are
dropped and counted, statics of publishers that have gone stop being given to late
listeners, oversized sends raise in the sender, one ZeroMQ context per process."""

from __future__ import annotations

import math
import os
import time

import numpy as np
import pytest
import zmq

from helpers import wait_for
from tf2py import make_transform
from tf2py.buffer.buffer import Buffer
from tf2py.transport import wire
from tf2py.transport.broadcaster import StaticTransformBroadcaster, TransformBroadcaster
from tf2py.transport.listener import TransformListener
from tf2py.transport.zmq import core as core_module
from tf2py.transport.zmq import sockets as _sockets
from tf2py.transport.zmq.core import Core
from transport_support import (
    STATIC_BROADCASTER,
    good_body,
    open_path,
    raw_socket,
    resources,
    script_argv,
    subscribe_endpoint,
    tf2py_threads,
)

MB = 1024 * 1024


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid`` in MiB (/proc/PID/status VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def start_core(spawn, tf2py_command):
    proc = spawn(tf2py_command + ["core", "--address", "tcp://127.0.0.1:0"])
    line = proc.wait_for_line("tf2py core: ready at ")
    return proc, line.split("ready at ", 1)[1].strip()


def statics(n: int, prefix="s"):
    return [make_transform("world", f"{prefix}{i}", (i, 0, 0)) for i in range(n)]


def stalled_subscriber(address: str) -> zmq.Socket:
    """A subscriber that never reads (its receive queue is one message)."""
    sock = zmq.Context.instance().socket(zmq.SUB)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVHWM, 1)
    sock.setsockopt(zmq.RCVBUF, 64 * 1024)
    sock.setsockopt(zmq.SUBSCRIBE, wire.TOPIC_TF)
    sock.connect(subscribe_endpoint(address))
    return sock


# -- 1. memory bounded in bytes ------------------------------------------------------------


def test_resubscriptions_with_a_stalled_subscriber_do_not_grow_the_core(spawn, tf2py_command):
    """Issue 11: 100 000 latched statics, one stalled subscriber, 100 re-subscriptions grew
    the core by 752 MB (one full replay queued per subscription). Now replays are coalesced
    and every subscriber's queue is bounded in bytes. (50 000 statics here: 100 replays of
    them would be about 400 MB.)"""
    proc, address = start_core(spawn, tf2py_command)
    pid = proc.popen.pid
    with StaticTransformBroadcaster(address) as static:
        static.send_transform(statics(50_000))
        probe = Buffer()
        with TransformListener(probe, address):
            wait_for(lambda: probe.can_transform("world", "s49999", 0), timeout=30)
        base = rss_mb(pid)
        stalled = stalled_subscriber(address)
        resubscriber = zmq.Context.instance().socket(zmq.SUB)
        resubscriber.setsockopt(zmq.LINGER, 0)
        resubscriber.connect(subscribe_endpoint(address))
        try:
            for _ in range(100):
                # the same subscription again: the core (XPUB_VERBOSE) sees every one
                resubscriber.setsockopt(zmq.SUBSCRIBE, wire.TOPIC_TF)
                resubscriber.setsockopt(zmq.UNSUBSCRIBE, wire.TOPIC_TF)
            time.sleep(0.1)
            peak = base
            deadline = time.monotonic() + 4.0
            while time.monotonic() < deadline:  # watch the core while replays would run
                peak = max(peak, rss_mb(pid))
                time.sleep(0.05)
            # a listener that joins now still gets every static
            late = Buffer()
            with TransformListener(late, address):
                wait_for(lambda: late.can_transform("world", "s49999", 0), timeout=30)
                wait_for(lambda: late.can_transform("world", "s0", 0), timeout=30)
        finally:
            stalled.close(0)
            resubscriber.close(0)
    print(f"core {base:.0f} -> peak {peak:.0f} MiB")
    assert peak - base < 100, f"core grew from {base:.0f} to {peak:.0f} MiB"


@pytest.mark.timeout(400)
def test_frozen_listener_under_large_messages_does_not_grow_the_core(spawn, tf2py_command):
    """Issue 11: a listener frozen while 95 KB messages flow grew the core from 33 MB to
    865 MB (10 000 queued messages). Now messages travel in pieces of at most 16 KiB and
    a subscriber's queue holds at most 4096 of them: 64 MiB."""
    proc, address = start_core(spawn, tf2py_command)
    pid = proc.popen.pid
    stalled = stalled_subscriber(address)
    receiver = Buffer()
    big = [make_transform("world", f"link{i:05d}", (i, 0, 0), stamp=1.0) for i in range(1400)]
    try:
        with TransformListener(receiver, address) as listener, \
                TransformBroadcaster(address) as b:
            open_path(lambda: b.send_transform(big[:1]), listener)
            base = rss_mb(pid)
            peak = base
            body_size = len(wire.encode_transforms(big, "x"))
            assert body_size > 90_000
            # about 115 MB through the core: some 7 000 pieces, over the 4096 a queue may hold
            for i in range(1200):
                b.send_transform(big)
                if i % 50 == 0:
                    peak = max(peak, rss_mb(pid))
                    time.sleep(0.02)  # stay under the core's 512 MiB-per-hold budget
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                peak = max(peak, rss_mb(pid))
                time.sleep(0.05)
            # the live listener got whole transforms, split or not
            wait_for(lambda: receiver.can_transform("world", "link01399", 0))
            assert listener.stats()["dropped"] == {}
    finally:
        stalled.close(0)
    print(f"core {base:.0f} -> peak {peak:.0f} MiB")
    assert peak - base < 110, f"core grew from {base:.0f} to {peak:.0f} MiB"


def test_replays_are_coalesced_and_every_late_listener_still_gets_the_statics(core):
    with StaticTransformBroadcaster(core.address) as static:
        static.send_transform(statics(2000))
        wait_for(lambda: len(core.latched_frames()) == 2000)
        sub = zmq.Context.instance().socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.connect(subscribe_endpoint(core.address))
        try:
            before = core.replays
            for _ in range(200):
                sub.setsockopt(zmq.SUBSCRIBE, wire.TOPIC_TF)
            late = Buffer()
            with TransformListener(late, core.address):
                wait_for(lambda: late.can_transform("world", "s1999", 0))
            # Every replay also reaches ``sub`` ("/tf" prefixes "/tf_static"). It is the one
            # that subscribed 200 times: once it has heard nothing for several of the core's
            # minimum replay intervals, no replay its subscriptions asked for is still due.
            assert sub.poll(30_000), "no replay reached the resubscriber"
            quiet_ms = int(4 * core_module.REPLAY_MIN_INTERVAL * 1000)
            deadline = time.monotonic() + 30
            while sub.poll(quiet_ms):
                sub.recv_multipart()
                assert time.monotonic() < deadline, "replays to the resubscriber never ended"
            # 200 subscriptions within a moment: a handful of replays, not 200
            assert core.replays - before <= 6
        finally:
            sub.close(0)


def test_big_lists_travel_as_pieces_of_whole_transforms(core):
    buffer = Buffer()
    big = [make_transform("world", f"f{i}", (i, 0, 0), stamp=2.0) for i in range(5000)]
    with TransformListener(buffer, core.address) as listener, \
            TransformBroadcaster(core.address) as b:
        open_path(lambda: b.send_transform(big[:1]), listener)
        # Probes still in flight would be counted below: one last message from the same
        # broadcaster arrives after all of them (one publisher's messages stay in order).
        b.send_transform(make_transform("world", "after_probes", stamp=2.0))
        wait_for(lambda: buffer.can_transform("world", "after_probes", 0))
        before = listener.stats()["received_transforms"]
        sent = b.sent_messages
        b.send_transform(big)
        assert b.sent_messages - sent >= 5000 * 70 // wire.MAX_PIECE_BYTES
        wait_for(lambda: buffer.can_transform("world", "f4999", 0))
        for i in (0, 1234, 4999):
            assert buffer.lookup_transform("world", f"f{i}", 0).transform.translation.x == i
        wait_for(lambda: listener.stats()["received_transforms"] - before == 5000)


def test_core_refuses_a_message_over_16_kib(core):
    """Nothing bigger than a piece enters the core (ZMQ_MAXMSGSIZE), so every queue's bytes
    are bounded by its message count."""
    buffer = Buffer()
    publisher = raw_socket(zmq.PUB, core.address)
    try:
        with TransformListener(buffer, core.address) as listener:
            open_path(lambda: publisher.send_multipart([wire.TOPIC_TF, good_body("probe")]),
                      listener)
            big = wire.encode_transforms(
                [make_transform("world", f"big{i}", stamp=1) for i in range(2000)], "raw")
            assert len(big) > wire.MAX_PIECE_BYTES
            publisher.send_multipart([wire.TOPIC_TF, big])
            with TransformBroadcaster(core.address) as b:
                open_path(lambda: b.send_transform(make_transform("world", "after", stamp=1)),
                          listener)
            assert not buffer.can_transform("world", "big0", 0)
    finally:
        publisher.close()


def test_a_subscriber_that_reads_nothing_is_cut_and_its_queue_freed(monkeypatch):
    """What keeps stalled subscribers from piling up: one whose connection takes no data for
    STALL_CUT_MS (10 s; 1 s here) is disconnected by the kernel, its queue freed."""
    from zmq.utils.monitor import recv_monitor_message

    monkeypatch.setattr(core_module, "STALL_CUT_MS", 1000)
    with Core("tcp://127.0.0.1:0") as c:
        stalled = zmq.Context.instance().socket(zmq.SUB)
        stalled.setsockopt(zmq.LINGER, 0)
        stalled.setsockopt(zmq.RCVHWM, 1)
        stalled.setsockopt(zmq.RCVBUF, 64 * 1024)
        stalled.setsockopt(zmq.SUBSCRIBE, wire.TOPIC_TF)
        events = stalled.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
        stalled.connect(subscribe_endpoint(c.address))
        try:
            assert events.poll(10_000)
            assert recv_monitor_message(events)["event"] == zmq.EVENT_CONNECTED
            big = [make_transform("world", f"l{i}", stamp=1) for i in range(600)]
            with TransformBroadcaster(c.address) as b:
                end = time.monotonic() + 4.0
                while time.monotonic() < end:
                    b.send_transform(big)  # fill its queues: it stops taking data
                    time.sleep(0.005)
            # It reads again: its side learns that the core has dropped the connection.
            cut = False
            deadline = time.monotonic() + 20
            while not cut and time.monotonic() < deadline:
                while stalled.poll(0):
                    stalled.recv()
                while events.poll(10):
                    if recv_monitor_message(events)["event"] == zmq.EVENT_DISCONNECTED:
                        cut = True
            assert cut, "the core never cut the stalled subscriber"
        finally:
            stalled.disable_monitor()
            events.close(0)
            stalled.close(0)


# -- 2. frame-id length -------------------------------------------------------------------


def test_long_frame_ids_are_dropped_and_counted_and_the_rest_is_kept(core):
    buffer = Buffer()
    long_id = "x" * (wire.MAX_FRAME_ID_LENGTH + 1)
    publisher = raw_socket(zmq.PUB, core.address)
    try:
        with TransformListener(buffer, core.address) as listener:
            open_path(lambda: publisher.send_multipart([wire.TOPIC_TF, good_body("probe")]),
                      listener)
            for i in range(20):  # distinct long ids: the issue grew a listener by 97 MB
                publisher.send_multipart([wire.TOPIC_TF, wire.encode_arrays(
                    ["world"], [f"{i}" + "y" * 10_000], [1], [[0, 0, 0, 0, 0, 0, 1]], "raw")])
            publisher.send_multipart([wire.TOPIC_TF, wire.encode_arrays(
                ["world", "world", long_id], [long_id, "kept", "orphan"], [1, 1, 1],
                [[0, 0, 0, 0, 0, 0, 1]] * 3, "raw")])
            wait_for(lambda: buffer.can_transform("world", "kept", 0))
            wait_for(lambda: listener.stats()["dropped"].get("frame_id_too_long") == 22)
            frames = buffer.get_frames()
            assert max(len(f) for f in frames) <= wire.MAX_FRAME_ID_LENGTH
            assert "orphan" not in frames
    finally:
        publisher.close()


def test_broadcasters_refuse_a_frame_id_over_the_limit(core):
    long_id = "x" * (wire.MAX_FRAME_ID_LENGTH + 1)
    with TransformBroadcaster(core.address) as b, \
            StaticTransformBroadcaster(core.address) as static:
        for sender in (b, static):
            with pytest.raises(ValueError, match="over the bus limit of 4096"):
                sender.send_transform(make_transform("world", long_id))
            with pytest.raises(ValueError, match="over the bus limit of 4096"):
                sender.send_transform([make_transform("world", "ok"),
                                       make_transform(long_id, "child")])
        assert b.sent_messages == 0


def test_frame_id_at_the_limit_is_accepted(core):
    buffer = Buffer()
    at_limit = "z" * wire.MAX_FRAME_ID_LENGTH
    with TransformListener(buffer, core.address) as listener, \
            TransformBroadcaster(core.address) as b:
        open_path(lambda: b.send_transform(make_transform("world", "probe", stamp=1)),
                  listener)
        b.send_transform(make_transform("world", at_limit, stamp=1))
        wait_for(lambda: buffer.can_transform("world", at_limit, 0))


def test_decode_refuses_a_long_authority():
    body = wire.encode_transforms([make_transform("a", "b")], "p" * 5000)
    with pytest.raises(wire.FrameIdTooLongError) as info:
        wire.decode_columns(body)
    assert info.value.columns is None and info.value.cause == "frame_id_too_long"


def test_long_static_frame_ids_are_not_latched(core):
    publisher = raw_socket(zmq.PUB, core.address)
    try:
        body = wire.encode_arrays(["world", "world"], ["ok", "q" * 5000], [1, 1],
                                  [[0, 0, 0, 0, 0, 0, 1]] * 2, "raw")
        wait_for(lambda: publisher.send_multipart([b"latch/tf_static/raw2/1", body])
                 or core.latched_frames() == ["ok"], interval=0.05)
        assert core.stats()["dropped"].get("frame_id_too_long", 0) >= 1
    finally:
        publisher.close()


# -- 4. an invalid static never replaces a valid one ---------------------------------------


@pytest.mark.parametrize("bad", [
    make_transform("world", "cam", (math.nan, 0, 0)),
    make_transform("", "cam", (0, 0, 0)),
    make_transform("world", "cam", (0, 0, 0), (0.0, 0.0, 0.0, 0.5)),
    make_transform("cam", "cam", (0, 0, 0)),
], ids=["nan", "empty-parent", "bad-quaternion", "own-parent"])
def test_invalid_static_does_not_replace_the_latched_valid_one(core, bad):
    with StaticTransformBroadcaster(core.address) as static:
        static.send_transform(make_transform("world", "cam", (1, 2, 3)))
        wait_for(lambda: core.latched_frames() == ["cam"])
        static.send_transform(bad)  # refused by the broadcaster's set: never latched
        assert static.dropped.snapshot() == {"invalid": 1}
        late = Buffer()
        with TransformListener(late, core.address):
            wait_for(lambda: late.can_transform("world", "cam", 0))
            t = late.lookup_transform("world", "cam", 0)
            assert (t.transform.translation.x, t.transform.translation.z) == (1.0, 3.0)


def test_invalid_static_from_a_raw_publisher_is_not_latched(core):
    publisher = raw_socket(zmq.PUB, core.address)
    try:
        good = good_body("cam", authority="raw")
        bad = wire.encode_arrays(["world"], ["cam"], [1], [[np.nan, 0, 0, 0, 0, 0, 1]], "raw")
        wait_for(lambda: publisher.send_multipart([b"latch/tf_static/raw1/1", good])
                 or core.latched_frames() == ["cam"], interval=0.05)
        publisher.send_multipart([b"latch/tf_static/raw1/2", bad])
        wait_for(lambda: core.stats()["dropped"].get("invalid", 0) >= 1)
        late = Buffer()
        with TransformListener(late, core.address):
            wait_for(lambda: late.can_transform("world", "cam", 0))
            assert late.lookup_transform("world", "cam", 0).transform.translation.x == 1.0
    finally:
        publisher.close()


# -- 5. statics of publishers that have gone -----------------------------------------------


def test_statics_of_a_closed_publisher_are_not_given_to_later_listeners(core):
    holder = Buffer()
    with TransformListener(holder, core.address):
        with StaticTransformBroadcaster(core.address) as static:
            static.send_transform(make_transform("world", "gone"))
            wait_for(lambda: holder.can_transform("world", "gone", 0))
        # goodbye on close: forgotten at once
        wait_for(lambda: core.latched_frames() == [], timeout=5)
        with StaticTransformBroadcaster(core.address) as other:
            other.send_transform(make_transform("world", "alive"))
            wait_for(lambda: core.latched_frames() == ["alive"])
            later = Buffer()
            with TransformListener(later, core.address):
                # the replay that brings "alive" would bring "gone" too if it were latched
                wait_for(lambda: later.can_transform("world", "alive", 0))
                assert not later.can_transform("world", "gone", 0)
        # a listener that already held it keeps it, as tf2 does
        assert holder.can_transform("world", "gone", 0)


def test_statics_of_a_killed_publisher_expire_within_5_s(core, spawn):
    proc = spawn(script_argv(STATIC_BROADCASTER, core.address, "killed"))
    proc.wait_for_line("sent killed")
    wait_for(lambda: core.latched_frames() == ["killed"])
    time.sleep(1.5)  # heartbeats keep it while the publisher lives
    assert core.latched_frames() == ["killed"]
    proc.popen.kill()  # SIGKILL: no goodbye
    killed_at = time.monotonic()
    wait_for(lambda: core.latched_frames() == [], timeout=10)
    assert time.monotonic() - killed_at < 5.0


def test_two_bags_played_in_turn_do_not_merge_their_statics(core):
    """As `tf2py play` does: a static broadcaster per run, closed at the end. The second
    run's tree reverses the first's: merged, they would make a loop."""
    with StaticTransformBroadcaster(core.address) as first_run:
        first_run.send_transform([make_transform("map", "odom"),
                                  make_transform("odom", "base")])
        wait_for(lambda: core.latched_frames() == ["base", "odom"])
    with StaticTransformBroadcaster(core.address) as second_run:
        second_run.send_transform([make_transform("base", "odom"),
                                   make_transform("odom", "map")])
        wait_for(lambda: core.latched_frames() == ["map", "odom"])
        late = Buffer()
        with TransformListener(late, core.address):
            wait_for(lambda: late.can_transform("base", "map", 0))
            info = late.frames_info()
            assert info["odom"]["parent"] == "base" and info["map"]["parent"] == "odom"
            assert "base" not in info


def test_a_publisher_the_core_lost_is_asked_to_send_its_set_again(core):
    publisher = zmq.Context.instance().socket(zmq.XPUB)
    publisher.setsockopt(zmq.LINGER, 0)
    publisher.setsockopt(zmq.XPUB_VERBOSE, 1)
    publisher.connect(core.address)
    try:
        wait_for(lambda: publisher.poll(100) and publisher.recv() == b"\x01latch/")
        # a heartbeat of a set the core never got (lost at a high-water mark, say)
        publisher.send_multipart([b"latch/alive/feed/3", b""])
        wait_for(lambda: publisher.poll(100) and
                 publisher.recv() == b"\x01latch/resend/feed")
    finally:
        publisher.close(0)


def test_static_broadcaster_restores_a_set_the_core_lost(core):
    with StaticTransformBroadcaster(core.address) as static:
        static.send_transform(make_transform("world", "kept"))
        wait_for(lambda: core.latched_frames() == ["kept"])
        core._latch.forget_publisher(static.publisher_id)  # as if the set had been lost
        assert core.latched_frames() == []
        wait_for(lambda: core.latched_frames() == ["kept"], timeout=10)


# -- 6. oversized sends raise in the sender ------------------------------------------------


def test_send_transform_over_64_mib_raises_in_the_sender(core):
    rows = [make_transform("p" * 4000, f"{i}" + "c" * 4000) for i in range(8500)]
    assert len(wire.encode_transforms(rows, "x")) > wire.MAX_MESSAGE_BYTES
    with TransformBroadcaster(core.address) as b:
        with pytest.raises(ValueError, match="exceeds the bus limit"):
            b.send_transform(rows)
        assert b.sent_messages == 0
    with StaticTransformBroadcaster(core.address) as static:
        static.send_transform(make_transform("world", "small"))
        with pytest.raises(ValueError, match="over the bus limit"):
            static.send_transform(rows)
        # the set stays what it was, and is still latched
        wait_for(lambda: core.latched_frames() == ["small"])


# -- 9. one ZeroMQ context per process ----------------------------------------------------


def test_core_broadcasters_and_listeners_share_one_context_and_close_frees_ports():
    shared = _sockets.context()
    with Core("tcp://127.0.0.1:0") as warm:
        TransformListener(Buffer(), warm.address).close()
    before = resources()
    c = Core("tcp://127.0.0.1:0")
    listener = TransformListener(Buffer(), c.address)
    b = TransformBroadcaster(c.address)
    static = StaticTransformBroadcaster(c.address)
    try:
        assert all(s.context is shared for s in c._sockets)
        assert listener._sub.context is shared and b._socket.context is shared
        assert static._socket.context is shared
        # no context of their own: the only new native threads are their Python threads
        python_threads = len(tf2py_threads())
        assert resources().native_threads - before.native_threads == python_threads
    finally:
        for obj in (listener, b, static):
            obj.close()
        c.close()
    # the ports are free the moment close() returns: a core binds them again at once
    with Core(c.address):
        pass
    wait_for(lambda: resources() <= before, timeout=5)


def test_core_memory_bounds_are_stated():
    assert core_module.SUBSCRIBER_HWM * core_module.PIECE_BYTES == 64 * MB
    assert core_module.PIECE_BYTES == wire.MAX_PIECE_BYTES == 16 * 1024
    assert core_module.EXPIRE_SECONDS + 1.0 < 5.0
    assert os.path.exists("/proc/self/task")
