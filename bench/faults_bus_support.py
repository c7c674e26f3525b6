"""Helpers of bench/faults_bus.py: listener and static-broadcaster processes, a real core
process, a stalled subscriber and the result rows. /proc and waiting: bench.harness."""

from __future__ import annotations

import zmq

from bench.harness import Child, rss_mib, start_core, wait_until
from tf2py.buffer.buffer import Buffer
from tf2py.transport.listener import TransformListener
from tf2py.transport.zmq import core as core_module

MB = 1024 * 1024
SUB_BOUND_MB = core_module.SUBSCRIBER_HWM * core_module.PIECE_BYTES / MB

LISTENER = r"""
import sys, time
from tf2py.buffer.buffer import Buffer
from tf2py.transport.listener import TransformListener
b = Buffer()
l = TransformListener(b, sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
print("frames", len(b.get_frames()), flush=True)
l.close()
"""

STATIC = r"""
import sys, signal
from tf2py import make_transform
from tf2py.transport.broadcaster import StaticTransformBroadcaster
b = StaticTransformBroadcaster(sys.argv[1])
b.send_transform(make_transform("world", sys.argv[2], (1.0, 2.0, 3.0)))
print("sent", flush=True)
signal.pause()
"""


class CoreProcess:
    """A ``tf2py core`` process (``keys``: a keyed bus); its RSS at start in ``base_mb``."""

    def __init__(self, keys: object = None) -> None:
        self.child: Child = start_core(*(["--keys", str(keys)] if keys else []))
        self.address = self.child.address
        self.pid = self.child.pid
        self.base_mb = rss_mib(self.pid)

    def alive(self) -> bool:
        return self.child.alive()

    def close(self) -> None:
        self.child.stop()


def subscribe_endpoint(address: str) -> str:
    host, port = address.rsplit(":", 1)
    return f"{host}:{int(port) + 1}"


def stalled_sub(address: str):
    s = zmq.Context.instance().socket(zmq.SUB)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RCVHWM, 1)
    s.setsockopt(zmq.RCVBUF, 64 * 1024)
    s.setsockopt(zmq.SUBSCRIBE, b"/tf")
    s.connect(subscribe_endpoint(address))
    return s


ROWS = []


def row(name, tried, crashes, lost, core_mb, listener_mb, bound, note=""):
    ROWS.append((name, tried, crashes, lost, core_mb, listener_mb, bound, note))
    print(f"  done: {name}", flush=True)


def probe_ok(address, child) -> bool:
    """A fresh listener gets static ``child`` from the core (nothing valid lost)."""
    b = Buffer()
    with TransformListener(b, address):
        return wait_until(lambda: b.can_transform("world", child, 0), 30)
