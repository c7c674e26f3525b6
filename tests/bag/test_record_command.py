"""``tf2py record``: what is on the bus goes into a complete ROS 2 MCAP, bit for bit, and the
file is finished properly when the recorder is stopped by a signal or by --duration."""

from __future__ import annotations

import signal
import threading
import time

import numpy as np
import pytest

from helpers import free_address, wait_for
from tf2py import make_transform
from tf2py.bag import BagWarning, read_transforms
from tf2py.transport.broadcaster import StaticTransformBroadcaster, TransformBroadcaster
from tf2py.transport.zmq.core import Core

READY = "tf2py record: recording to"


@pytest.fixture
def core():
    with Core("tcp://127.0.0.1:0") as c:
        yield c


class Sender:
    """Broadcasts a stream of transforms with random bits until stopped, remembering each
    one by its stamp, so the test can check whatever part the recorder caught."""

    def __init__(self, address):
        self.sent: dict[int, tuple] = {}
        self._stop = threading.Event()
        self._rng = np.random.default_rng(3)
        self._broadcaster = TransformBroadcaster(core=address)
        self._thread = threading.Thread(target=self._run, name="test-sender", daemon=True)
        self._thread.start()

    def _run(self):
        stamp_ns = 1_700_000_000_000_000_000
        while not self._stop.is_set():
            stamp_ns += 1_234_567
            q = self._rng.normal(size=4)
            q /= np.linalg.norm(q)
            t = tuple(self._rng.normal(size=3) * 1e3)
            ts = make_transform("map", "odom", t, tuple(q), stamp=0)
            ts.header.stamp = type(ts.header.stamp).from_nanoseconds(stamp_ns)
            self.sent[stamp_ns] = t + tuple(q)
            self._broadcaster.send_transform(ts)
            time.sleep(0.002)

    def stop(self):
        self._stop.set()
        self._thread.join(5)
        self._broadcaster.close()


def record(spawn, tf2py_command, out, address, *extra):
    proc = spawn([*tf2py_command, "record", str(out), "--core", address, *extra])
    proc.wait_for_line(READY, timeout=30)
    return proc


def test_record_then_load_keeps_every_transform_bit_for_bit(spawn, tf2py_command, core,
                                                            tmp_path):
    out = tmp_path / "bus.mcap"
    static = make_transform("base_link", "laser", (0.1, 0.2, 0.30000000000000004),
                            (0.0, 0.0, 0.7071067811865476, 0.7071067811865476), stamp=12.5)
    with StaticTransformBroadcaster(core=core.address) as statics:
        statics.send_transform(static)
        sender = Sender(core.address)
        try:
            proc = record(spawn, tf2py_command, out, core.address)
            # Let the recorder catch a good stretch of the stream, then stop it.
            ready = len(sender.sent)
            wait_for(lambda: len(sender.sent) > ready + 250, timeout=30)
            assert proc.stop() == 0
        finally:
            sender.stop()
    data = read_transforms(out)
    dynamic = np.flatnonzero(~data.is_static)
    assert len(dynamic) > 50
    stamps = data.transforms.stamps_ns[dynamic].tolist()
    # Every recorded transform is one that was sent, bit for bit ...
    for row, stamp in zip(dynamic.tolist(), stamps):
        expected = np.array(sender.sent[stamp])
        assert np.array_equal(data.transforms.values[row].view(np.uint64), expected.view(np.uint64))
        assert (data.transforms.parents[row], data.transforms.children[row]) == ("map", "odom")
    # ... and none sent between the first and last recorded one is missing.
    sent_stamps = sorted(sender.sent)
    window = sent_stamps[sent_stamps.index(stamps[0]) : sent_stamps.index(stamps[-1]) + 1]
    assert sorted(stamps) == window
    static_rows = np.flatnonzero(data.is_static).tolist()
    assert any(data.transform(row) == static for row in static_rows)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_leaves_a_complete_mcap_file(spawn, tf2py_command, core, tmp_path, sig):
    from mcap.reader import make_reader

    out = tmp_path / "signal.mcap"
    sender = Sender(core.address)
    try:
        proc = record(spawn, tf2py_command, out, core.address)
        ready = len(sender.sent)
        wait_for(lambda: len(sender.sent) > ready + 150, timeout=30)
        proc.signal(sig)
        assert proc.wait(timeout=30) == 0
    finally:
        sender.stop()
    assert "tf2py record: wrote" in proc.output()
    with open(out, "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()  # needs the footer and summary section
        messages = list(reader.iter_messages())
    assert summary is not None
    assert summary.statistics.message_count == len(messages) > 0
    assert out.read_bytes().endswith(b"\x89MCAP0\r\n")


def test_duration_stops_the_recording_by_itself(spawn, tf2py_command, core, tmp_path):
    out = tmp_path / "short.mcap"
    with StaticTransformBroadcaster(core=core.address) as statics:
        statics.send_transform(make_transform("a", "b", stamp=1.0))
        proc = record(spawn, tf2py_command, out, core.address, "--duration", "1.0")
        assert proc.wait(timeout=30) == 0
    with pytest.warns(BagWarning, match="no transforms on /tf, only the 1 static ones"):
        data = read_transforms(out)
    assert ("a", "b") in set(zip(data.transforms.parents, data.transforms.children))


def test_existing_output_is_not_overwritten_without_force(spawn, tf2py_command, tmp_path):
    out = tmp_path / "keep.mcap"
    out.write_bytes(b"precious")
    proc = spawn([*tf2py_command, "record", str(out), "--duration", "1"])
    assert proc.wait(timeout=30) == 1
    assert "exists; use --force" in proc.output()
    assert out.read_bytes() == b"precious"


def test_bad_duration_is_a_usage_error(spawn, tf2py_command, tmp_path):
    proc = spawn([*tf2py_command, "record", str(tmp_path / "x.mcap"), "--duration", "soon"])
    assert proc.wait(timeout=30) == 2
    assert "--duration must be a number of seconds" in proc.output()
    assert not (tmp_path / "x.mcap").exists()


def test_malformed_core_address_is_a_usage_error_and_creates_no_file(spawn, tf2py_command,
                                                                     tmp_path):
    out = tmp_path / "x.mcap"
    proc = spawn([*tf2py_command, "record", str(out), "--core", "junk"])
    assert proc.wait(timeout=30) == 2
    assert proc.output().strip() == ("tf2py record: error: invalid address 'junk': expected "
                                     "tcp://HOST:PORT, e.g. tcp://127.0.0.1:7400")
    assert not out.exists()


def test_recording_nothing_says_so_and_still_writes_a_valid_file(spawn, tf2py_command,
                                                                 tmp_path):
    from mcap.reader import make_reader

    out = tmp_path / "empty.mcap"
    nowhere = free_address()
    proc = spawn([*tf2py_command, "record", str(out), "--duration", "0.5", "--core", nowhere])
    assert proc.wait(timeout=30) == 0
    assert proc.output().splitlines()[-1] == (
        f"tf2py record: nothing was received from the core at {nowhere} (is `tf2py core` "
        "running there, and is anything broadcasting?)")
    with open(out, "rb") as f:
        assert make_reader(f).get_summary().statistics.message_count == 0
