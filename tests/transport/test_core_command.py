"""The core as a process (``tf2py core``) and the core's own behaviour: ports, errors, bad
input on the latch topic, restarts, many broadcaster processes."""

from __future__ import annotations

import signal
import socket
import threading

import msgpack
import pytest
import zmq

from helpers import wait_for
from tf2py.transport.listener import TransformListener
from tf2py.transport.zmq.core import Core
from transport_support import (
    DYNAMIC_BROADCASTER,
    RAW_LATCH,
    STATIC_BROADCASTER,
    RecordingBuffer,
    free_port_pair,
    good_body,
    raw_socket,
    resources,
    script_argv,
    tf2py_threads,
)


def ready_address(proc) -> str:
    line = proc.wait_for_line("tf2py core: ready at ")
    return line.split("ready at ", 1)[1].strip()


def test_core_command_prints_ready_line_with_chosen_port(spawn, tf2py_command):
    proc = spawn(tf2py_command + ["core", "--address", "tcp://127.0.0.1:0"])
    address = ready_address(proc)
    assert address.startswith("tcp://127.0.0.1:") and not address.endswith(":0")
    assert proc.lines[0] == f"tf2py core: ready at {address}"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_core_command_stops_cleanly_on_signal(spawn, tf2py_command, sig):
    proc = spawn(tf2py_command + ["core", "--address", "tcp://127.0.0.1:0"])
    ready_address(proc)
    proc.signal(sig)
    assert proc.wait() == 0
    assert "Traceback" not in proc.output()


def test_core_command_uses_tf2py_core_environment(spawn, tf2py_command):
    port = free_port_pair()
    proc = spawn(tf2py_command + ["core"], env={"TF2PY_CORE": f"tcp://127.0.0.1:{port}"})
    assert ready_address(proc) == f"tcp://127.0.0.1:{port}"


def test_core_command_rejects_bad_address_in_one_line(spawn, tf2py_command):
    proc = spawn(tf2py_command + ["core", "--address", "nonsense"])
    assert proc.wait() == 1
    assert proc.output().strip().splitlines() == [
        "tf2py core: error: invalid address 'nonsense': expected tcp://HOST:PORT, "
        "e.g. tcp://127.0.0.1:7400"
    ]


def test_core_on_a_busy_port_raises_naming_the_address():
    with Core("tcp://127.0.0.1:0") as first:
        with pytest.raises(OSError, match=first.address):
            Core(first.address)


def test_core_port_zero_reports_two_consecutive_free_ports():
    with Core("tcp://127.0.0.1:0") as c:
        port = int(c.address.rsplit(":", 1)[1])
        assert c.subscribe_address == f"tcp://127.0.0.1:{port + 1}"


def test_core_close_ends_its_threads():
    Core("tcp://127.0.0.1:0").close()  # the shared context's own threads and fds exist now
    before = resources()
    c = Core("tcp://127.0.0.1:0")
    assert any("core" in name for name in tf2py_threads())
    assert resources().fds > before.fds
    c.close()
    assert tf2py_threads() == []
    # every file descriptor and native thread, not only Python threads named tf2py*
    wait_for(lambda: resources() <= before, timeout=5,
             message=f"back to {before}, now {resources()}")


def test_core_close_frees_its_ports_for_a_core_started_right_after():
    """A core restarted in the same process binds the same ports at once, also while clients
    keep reconnecting to them (ZeroMQ closes sockets asynchronously; close() waits for it)."""
    with Core("tcp://127.0.0.1:0") as first:
        address = first.address
        listener = TransformListener(RecordingBuffer(), core=address)
    try:
        for _ in range(5):
            Core(address).close()
    finally:
        listener.close()


def test_core_closed_from_several_threads_at_once_closes_once():
    c = Core("tcp://127.0.0.1:0")
    start = threading.Barrier(4)
    errors = []

    port = int(c.address.rsplit(":", 1)[1])

    def close():
        start.wait()
        try:
            c.close()
            # Returned: the port must be free (not still held by another closer's close).
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(("127.0.0.1", port))
        except Exception as exc:  # noqa: BLE001 - the test reports any
            errors.append(exc)

    closers = [threading.Thread(target=close) for _ in range(4)]
    for t in closers:
        t.start()
    for t in closers:
        t.join(10)
    assert errors == []
    assert tf2py_threads() == []


def test_core_with_an_unbindable_host_and_port_zero_raises_os_error():
    with pytest.raises(OSError, match="cannot bind tcp://no-such-host.invalid:0"):
        Core("tcp://no-such-host.invalid:0")


@pytest.mark.parametrize(
    "frames,cause",
    [
        ([RAW_LATCH, b"\xc1junk"], "garbage"),
        ([RAW_LATCH, msgpack.packb([1, 2, 3])], "shape"),
        ([RAW_LATCH], "shape"),
    ],
    ids=["garbage", "wrong-shape", "one-frame"],
)
def test_core_drops_bad_static_input_and_keeps_latching(frames, cause):
    with Core("tcp://127.0.0.1:0") as c:
        publisher = raw_socket(zmq.PUB, c.address)
        try:
            def latched_probe():
                publisher.send_multipart([RAW_LATCH, good_body("probe")])
                return c.latched_frames()

            wait_for(latched_probe, interval=0.02)
            publisher.send_multipart(frames)
            publisher.send_multipart([RAW_LATCH, good_body("after")])
            wait_for(lambda: "after" in c.latched_frames())
            assert c.dropped.snapshot() == {cause: 1}
        finally:
            publisher.close()


def test_static_is_latched_again_after_the_core_restarts(spawn, tf2py_command):
    """The core keeps nothing across a restart: the static broadcaster re-publishes its
    latched set when it reconnects, so a listener that joins afterwards gets it."""
    address = f"tcp://127.0.0.1:{free_port_pair()}"
    first = spawn(tf2py_command + ["core", "--address", address])
    ready_address(first)
    broadcaster = spawn(script_argv(STATIC_BROADCASTER, address, "camera"))
    broadcaster.wait_for_line("sent camera")
    witness = RecordingBuffer()
    with TransformListener(witness, address):
        wait_for(lambda: "camera" in witness.children(is_static=True))
    first.signal(signal.SIGTERM)
    assert first.wait() == 0

    second = spawn(tf2py_command + ["core", "--address", address])
    ready_address(second)
    buffer = RecordingBuffer()
    with TransformListener(buffer, address):
        wait_for(lambda: "camera" in buffer.children(is_static=True), timeout=15)


def test_listener_keeps_receiving_after_the_core_restarts(spawn, tf2py_command):
    address = f"tcp://127.0.0.1:{free_port_pair()}"
    core = spawn(tf2py_command + ["core", "--address", address])
    ready_address(core)
    spawn(script_argv(DYNAMIC_BROADCASTER, address, "wheel"))
    buffer = RecordingBuffer()
    with TransformListener(buffer, address) as listener:
        wait_for(lambda: "wheel" in buffer.children())
        core.signal(signal.SIGTERM)
        assert core.wait() == 0
        count = listener.received_messages
        core = spawn(tf2py_command + ["core", "--address", address])
        ready_address(core)
        wait_for(lambda: listener.received_messages > count + 5, timeout=15)


def test_several_static_broadcaster_processes_are_all_latched(spawn, tf2py_command):
    core = spawn(tf2py_command + ["core", "--address", "tcp://127.0.0.1:0"])
    address = ready_address(core)
    children = {f"sensor{i}" for i in range(3)}
    procs = [spawn(script_argv(STATIC_BROADCASTER, address, child)) for child in children]
    for proc, child in zip(procs, children):
        proc.wait_for_line(f"sent {child}")
    # A listener that joins after all of them were sent gets every one.
    buffer = RecordingBuffer()
    with TransformListener(buffer, address):
        wait_for(lambda: buffer.children(is_static=True) == children, timeout=15)
        authorities = {row[0] for row in buffer.rows()}
    assert len(authorities) == 3  # each kept its own sender's authority


def test_many_broadcaster_processes_reach_one_listener(spawn, tf2py_command):
    core = spawn(tf2py_command + ["core", "--address", "tcp://127.0.0.1:0"])
    address = ready_address(core)
    children = {f"joint{i}" for i in range(5)}
    for child in children:
        spawn(script_argv(DYNAMIC_BROADCASTER, address, child))
    buffer = RecordingBuffer()
    with TransformListener(buffer, address):
        wait_for(lambda: buffer.children() == children, timeout=20)


def test_static_sent_before_the_core_exists_reaches_a_late_listener(spawn, tf2py_command):
    address = f"tcp://127.0.0.1:{free_port_pair()}"
    broadcaster = spawn(script_argv(STATIC_BROADCASTER, address, "early"))
    broadcaster.wait_for_line("sent early")
    core = spawn(tf2py_command + ["core", "--address", address])
    ready_address(core)
    buffer = RecordingBuffer()
    with TransformListener(buffer, address):
        wait_for(lambda: "early" in buffer.children(is_static=True), timeout=15)


def test_dynamic_transform_from_a_process_carries_its_authority(spawn, tf2py_command):
    core = spawn(tf2py_command + ["core", "--address", "tcp://127.0.0.1:0"])
    address = ready_address(core)
    proc = spawn(script_argv(DYNAMIC_BROADCASTER, address, "arm"))
    buffer = RecordingBuffer()
    with TransformListener(buffer, address):
        wait_for(lambda: "arm" in buffer.children())
    authority = buffer.rows()[0][0]
    assert authority.endswith(f":{proc.pid}") and "@" in authority



def test_garbage_sent_to_the_subscriber_port_does_not_stop_the_core():
    from tf2py import make_transform
    from tf2py.transport.broadcaster import StaticTransformBroadcaster

    with Core("tcp://127.0.0.1:0") as c, StaticTransformBroadcaster(c.address) as static:
        rogue = raw_socket(zmq.XSUB, c.subscribe_address)
        try:
            for junk in (b"\xff\x00junk", b"", b"\x01", b"\x00/tf", b"\x01latch/tf_static"):
                rogue.send(junk)
            static.send_transform(make_transform("map", "still_works"))
            buffer = RecordingBuffer()
            with TransformListener(buffer, c.address):
                wait_for(lambda: "still_works" in buffer.children(is_static=True))
        finally:
            rogue.close()
