"""``tf2py play``: a bag's transforms reach listeners on the bus with their stamps and timing."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from collections import Counter

import numpy as np
import pytest

from bagdata import NAV2, TURTLESIM
from helpers import wait_for
from tf2py import make_transform
from tf2py.bag import read_transforms
from tf2py.transport.broadcaster import StaticTransformBroadcaster
from tf2py.transport.listener import TransformSubscriber
from tf2py.transport.zmq.core import Core


class Collector:
    """A subscriber on the bus that keeps every transform it receives, as hashable rows."""

    def __init__(self, address):
        self.lock = threading.Lock()
        self.dynamic: list[tuple] = []
        self.static: set[tuple] = set()
        self.received_ns: list[int] = []
        self.sentinels: set[str] = set()
        self.subscriber = TransformSubscriber(core=address, on_batch=self.on_batch)
        # Prove the subscription is attached at the core: a latched probe comes through.
        with StaticTransformBroadcaster(core=address) as probe:
            probe.send_transform(make_transform("probe", "probe_child"))
            wait_for(lambda: self.has_static_child("probe_child"), timeout=20)

    def on_batch(self, batch):
        rows = [row(t) for t in batch.transforms]
        with self.lock:
            if batch.is_static:
                self.static.update(rows)
                return
            # settle()'s sentinels are kept apart: resent until one is seen, more of them
            # may still be on their way when the test compares what play sent.
            self.sentinels.update(r[1] for r in rows if r[0] == "sentinel_parent")
            rows = [r for r in rows if r[0] != "sentinel_parent"]
            if rows:
                self.dynamic.extend(rows)
                self.received_ns.append(batch.received_ns)

    def has_static_child(self, child):
        with self.lock:
            return any(r[1] == child for r in self.static)

    def dynamic_count(self):
        with self.lock:
            return len(self.dynamic)

    def close(self):
        self.subscriber.close()


def settle(address, collector, child="sentinel"):
    """Wait until everything published before now has reached ``collector``: a dynamic
    sentinel sent after it through the same core comes out behind it."""
    from tf2py.transport.broadcaster import TransformBroadcaster

    def sent_and_seen():
        # A new publisher's first messages are lost until its connection is up: resend.
        sender.send_transform(make_transform("sentinel_parent", child))
        with collector.lock:
            return child in collector.sentinels

    with TransformBroadcaster(core=address) as sender:
        wait_for(sent_and_seen, timeout=20, interval=0.05)


def row(t):
    tr, q = t.transform.translation, t.transform.rotation
    return (t.header.frame_id, t.child_frame_id, t.header.stamp.nanoseconds,
            (tr.x, tr.y, tr.z, q.x, q.y, q.z, q.w))


def bag_rows(data, rows):
    return [row(data.transform(i)) for i in rows]


@pytest.fixture
def bus():
    with Core("tcp://127.0.0.1:0") as core:
        collector = Collector(core.address)
        try:
            yield core.address, collector
        finally:
            collector.close()


def test_play_at_rate_10_delivers_every_transform_of_the_bag(spawn, tf2py_command, bus):
    address, collector = bus
    data = read_transforms(TURTLESIM)
    proc = spawn([*tf2py_command, "play", str(TURTLESIM), "--rate", "10", "--core", address])
    assert proc.wait(timeout=60) == 0, proc.output()
    expected = bag_rows(data, np.flatnonzero(~data.is_static).tolist())
    wait_for(lambda: collector.dynamic_count() >= len(expected), timeout=20,
             message=f"{collector.dynamic_count()} of {len(expected)} transforms arrived")
    with collector.lock:
        assert Counter(collector.dynamic) == Counter(expected)
        assert set(bag_rows(data, np.flatnonzero(data.is_static).tolist())) <= collector.static


def test_play_spreads_messages_over_the_bag_time_divided_by_rate(spawn, tf2py_command, bus):
    address, collector = bus
    data = read_transforms(TURTLESIM)
    proc = spawn([*tf2py_command, "play", str(TURTLESIM), "--rate", "10", "--core", address])
    assert proc.wait(timeout=60) == 0, proc.output()
    expected = int((~data.is_static).sum())
    wait_for(lambda: collector.dynamic_count() >= expected, timeout=20)
    with collector.lock:
        spread_s = (max(collector.received_ns) - min(collector.received_ns)) / 1e9
    scaled_s = data.duration_ns / 1e9 / 10
    # Generous bounds: not all at once, and not at the original speed.
    assert 0.5 * scaled_s < spread_s < 5 * scaled_s


def test_play_start_skips_the_beginning_of_the_bag(spawn, tf2py_command, bus):
    address, collector = bus
    data = read_transforms(TURTLESIM)
    proc = spawn([*tf2py_command, "play", str(TURTLESIM), "--rate", "10", "--start", "20",
                  "--core", address])
    assert proc.wait(timeout=60) == 0, proc.output()
    begin_ns = data.start_ns + 20_000_000_000
    messages = np.flatnonzero(~data.message_static & (data.message_log_ns >= begin_ns))
    rows = [r for k in messages.tolist()
            for r in range(data.message_offsets[k], data.message_offsets[k + 1])]
    expected = bag_rows(data, rows)
    assert 0 < len(expected) < int((~data.is_static).sum()) // 5
    wait_for(lambda: collector.dynamic_count() >= len(expected), timeout=20)
    settle(address, collector)  # nothing beyond the expected may trickle in late
    with collector.lock:
        assert Counter(collector.dynamic) == Counter(expected)


def test_play_loop_starts_over_at_the_end(spawn, tf2py_command, bus):
    address, collector = bus
    data = read_transforms(TURTLESIM)
    proc = spawn([*tf2py_command, "play", str(TURTLESIM), "--rate", "10", "--start", "21",
                  "--loop", "--core", address])
    begin_ns = data.start_ns + 21_000_000_000
    per_pass = int(np.diff(data.message_offsets)[
        ~data.message_static & (data.message_log_ns >= begin_ns)].sum())
    wait_for(lambda: collector.dynamic_count() >= 3 * per_pass, timeout=30)
    assert proc.stop() == 0
    with collector.lock:
        counts = Counter(collector.dynamic)
    assert max(counts.values()) >= 2


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_play_cleanly(spawn, tf2py_command, bus, sig):
    address, collector = bus
    proc = spawn([*tf2py_command, "play", str(NAV2), "--core", address])
    proc.wait_for_line("tf2py play: playing", timeout=30)
    wait_for(lambda: collector.dynamic_count() > 0, timeout=20)
    proc.signal(sig)
    assert proc.wait(timeout=15) == 0
    assert "Traceback" not in proc.output()


def test_progress_line_is_redrawn_in_place_on_a_terminal(tf2py_command, bus, tmp_path):
    address, _ = bus
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [*tf2py_command, "play", str(TURTLESIM), "--rate", "10", "--start", "19", "--core",
         address],
        stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, start_new_session=True,
    )
    os.close(slave)
    output = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            elif proc.poll() is not None:
                break
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    text = output.decode()
    total = f"/ {read_transforms(TURTLESIM).duration_ns / 1e9:.2f} s"
    assert text.count("\r[") >= 2, text
    assert total in text
    assert "tf2py play: done" in text


def test_progress_line_is_left_out_when_not_a_terminal(spawn, tf2py_command, bus):
    address, _ = bus
    proc = spawn([*tf2py_command, "play", str(TURTLESIM), "--rate", "10", "--start", "21",
                  "--core", address])
    assert proc.wait(timeout=60) == 0
    assert "\r" not in proc.output()


@pytest.mark.parametrize("argument", [["--rate", "0"], ["--rate", "fast"], ["--start", "-1"],
                                      ["--start", "1000"]])
def test_bad_play_arguments_are_usage_errors(spawn, tf2py_command, argument):
    proc = spawn([*tf2py_command, "play", str(TURTLESIM), *argument])
    assert proc.wait(timeout=30) == 2
    output = proc.output()
    assert output.count("\n") == 0 and "tf2py play: error:" in output


def test_play_into_record_reproduces_the_bags_transforms(spawn, tf2py_command, bus, tmp_path):
    """Both commands end to end: what play publishes, record writes, and the file read back
    holds exactly the bag's transforms (the recorder's own clock for log times)."""
    address, collector = bus
    out = tmp_path / "replayed.mcap"
    recorder = spawn([*tf2py_command, "record", str(out), "--core", address])
    recorder.wait_for_line("tf2py record: recording to", timeout=30)
    data = read_transforms(TURTLESIM)
    player = spawn([*tf2py_command, "play", str(TURTLESIM), "--rate", "10", "--core", address])
    assert player.wait(timeout=60) == 0, player.output()
    expected = bag_rows(data, np.flatnonzero(~data.is_static).tolist())
    wait_for(lambda: collector.dynamic_count() >= len(expected), timeout=20)
    # The recorder is a second subscriber of the same core: a sentinel that came out behind
    # the bag's messages at the collector was sent to the recorder behind them too.
    settle(address, collector)
    assert recorder.stop() == 0
    replayed = read_transforms(out)
    got = [r for r in bag_rows(replayed, np.flatnonzero(~replayed.is_static).tolist())
           if r[1] != "sentinel"]
    assert Counter(got) == Counter(expected)
    statics = set(bag_rows(replayed, np.flatnonzero(replayed.is_static).tolist()))
    assert set(bag_rows(data, np.flatnonzero(data.is_static).tolist())) <= statics


def test_play_without_a_core_says_so_and_still_finishes(spawn, tf2py_command):
    from helpers import free_address

    proc = spawn([*tf2py_command, "play", str(TURTLESIM), "--rate", "10", "--start", "21",
                  "--core", free_address()])
    assert proc.wait(timeout=60) == 0
    assert "no core answered at" in proc.output()
    assert "tf2py play: done" in proc.output()


def test_play_refuses_a_malformed_core_address_in_one_line(spawn, tf2py_command):
    proc = spawn([*tf2py_command, "play", str(TURTLESIM), "--core", "junk"])
    assert proc.wait(timeout=30) == 2
    assert proc.output().strip() == ("tf2py play: error: invalid address 'junk': expected "
                                     "tcp://HOST:PORT, e.g. tcp://127.0.0.1:7400")


def test_play_warns_when_the_dynamic_topic_has_no_transforms(spawn, tf2py_command, bus):
    address, collector = bus
    proc = spawn([*tf2py_command, "play", str(TURTLESIM), "--tf-topic", "/nope", "--core",
                  address])
    assert proc.wait(timeout=60) == 0
    assert ("tf2py play: warning: turtlesim_example.bag: read 1 transforms in 1 messages; no "
            "transforms on /nope, only the 1 static ones on /tf_static\n") in proc.output()
    wait_for(lambda: collector.has_static_child("carrot"), timeout=20)
