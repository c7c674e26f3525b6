"""Helpers for the transport tests: an in-process core, a recording buffer, raw sockets, and
scripts for broadcaster subprocesses."""

from __future__ import annotations

import contextlib
import os
import sys
import textwrap
import threading
from typing import NamedTuple

import pytest
import zmq

from helpers import InsertHookBuffer, free_port_pair, wait_for
from tf2py import make_transform
from tf2py.transport import wire
from tf2py.transport.zmq.core import Core


class RecordingBuffer(InsertHookBuffer):
    """The real Buffer, recording what it stored: each insert call as
    ``(authority, is_static, rows)`` with the rows the Buffer accepted (its own refusal rules,
    not a copy of them), each row ``(parent, child, stamp_ns, [tx..qw])`` as sent. Its
    ``before_insert`` runs first in every insert call (tests override it to stall or fail)."""

    def __init__(self):
        super().__init__(cache_time=3600.0)
        self.calls = []
        self.lock = threading.Lock()

    def set_transforms(self, parents, children, stamps_ns, values, authority, is_static=False):
        result = super().set_transforms(parents, children, stamps_ns, values, authority,
                                        is_static)
        refused = {index for index, _ in result.invalid}
        rows = [(parents[i], children[i], int(stamps_ns[i]), [float(v) for v in values[i]])
                for i in range(len(parents)) if i not in refused]
        with self.lock:
            self.calls.append((authority, bool(is_static), rows))
        return result

    def set_transform_values(self, parent, child, stamp_ns, tx, ty, tz, qx, qy, qz, qw,
                             authority, is_static=False):
        stored = super().set_transform_values(parent, child, stamp_ns, tx, ty, tz, qx, qy, qz,
                                              qw, authority, is_static)
        with self.lock:
            self.calls.append((authority, bool(is_static),
                               [(parent, child, int(stamp_ns), [tx, ty, tz, qx, qy, qz, qw])]))
        return stored

    def children(self, is_static=None) -> set:
        with self.lock:
            return {
                r[1] for a, s, rows in self.calls for r in rows if is_static in (None, s)
            }

    def rows(self) -> list:
        with self.lock:
            return [(a, s) + r for a, s, rows in self.calls for r in rows]


@pytest.fixture
def core():
    with Core("tcp://127.0.0.1:0") as c:
        yield c


@contextlib.contextmanager
def fake_core_publisher():
    """``(address, xpub)``: an XPUB bound where a core's subscriber port would be, so a
    listener given ``address`` receives exactly what the test sends on ``xpub``."""
    port = free_port_pair()
    sock = zmq.Context.instance().socket(zmq.XPUB)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.bind(f"tcp://127.0.0.1:{port + 1}")
        yield f"tcp://127.0.0.1:{port}", sock
    finally:
        sock.close(0)


def raw_socket(kind, endpoint: str) -> zmq.Socket:
    sock = zmq.Context.instance().socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    return sock


def publish_endpoint(core_address: str) -> str:
    return core_address


def subscribe_endpoint(core_address: str) -> str:
    host, port = core_address.rsplit(":", 1)
    return f"{host}:{int(port) + 1}"


#: A raw static set's topic (version 2: per publisher; without heartbeats it expires in 3.5 s).
RAW_LATCH = b"latch/tf_static/raw-test/1"


def good_body(child="probe", authority="test", n=1) -> bytes:
    return wire.encode_transforms(
        [make_transform("world", child if n == 1 else f"{child}{i}", (1, 2, 3), stamp=1)
         for i in range(n)],
        authority,
    )


def open_path(send, listener, timeout=10.0):
    """Send probe messages with ``send()`` until ``listener`` received one (ZeroMQ drops what
    a PUB sends before its subscriber is connected), so what is sent next arrives in order."""
    before = listener.received_messages

    def arrived():
        send()
        return listener.received_messages > before

    wait_for(arrived, timeout, interval=0.02, message="a first message through the core")


def python_script(source: str) -> list[str]:
    """argv running ``source`` with this interpreter."""
    return [sys.executable, "-c", textwrap.dedent(source)]


def tf2py_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("tf2py"))


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class Resources(NamedTuple):
    """Open file descriptors and native threads of this process (/proc/self)."""

    fds: int
    native_threads: int

    def __le__(self, other):
        return self.fds <= other.fds and self.native_threads <= other.native_threads


def resources() -> Resources:
    return Resources(open_fds(), len(os.listdir("/proc/self/task")))


STATIC_BROADCASTER = """
import sys, signal
from tf2py import make_transform
from tf2py.transport.broadcaster import StaticTransformBroadcaster
core, child = sys.argv[1], sys.argv[2]
b = StaticTransformBroadcaster(core)
b.send_transform(make_transform("world", child, (1.0, 2.0, 3.0)))
print("sent", child, flush=True)
try:
    signal.pause()
except KeyboardInterrupt:
    pass
b.close()
"""

DYNAMIC_BROADCASTER = """
import sys, time
from tf2py import make_transform
from tf2py.transport.broadcaster import TransformBroadcaster
core, child = sys.argv[1], sys.argv[2]
b = TransformBroadcaster(core)
print("started", child, flush=True)
i = 0
try:
    while True:
        i += 1
        b.send_transform(make_transform("world", child, (i, 0, 0), stamp=i))
        time.sleep(0.01)
except KeyboardInterrupt:
    pass
b.close()
"""


def script_argv(script: str, *args) -> list[str]:
    return [sys.executable, "-c", script, *args]
