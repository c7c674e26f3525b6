"""Helpers of bench_faults_bus.py: listener and static-broadcaster processes, a real core
process, memory and CPU of a process from /proc, waiting, and the result table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import zmq

from tf2py.transport.zmq import core as core_module

PY = sys.executable
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


def status_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_mb(pid: int) -> float:
    return status_kb(pid, "VmRSS") / 1024


def peak_mb(pid: int) -> float:
    return status_kb(pid, "VmHWM") / 1024


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CoreProcess:
    def __init__(self, keys=None):
        args = [PY, "-m", "tf2py.cli.main", "core", "--address", "tcp://127.0.0.1:0"]
        if keys:
            args += ["--keys", str(keys)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, cwd=REPO)
        line = self.proc.stdout.readline()
        if "ready at" not in line:
            raise RuntimeError(f"core did not start: {line}")
        self.address = line.split("ready at ", 1)[1].strip()
        self.pid = self.proc.pid
        self.base_mb = rss_mb(self.pid)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wait(condition, timeout=30.0, interval=0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return False


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


def watch_peak(pid: int, seconds: float) -> float:
    peak = 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        peak = max(peak, rss_mb(pid))
        time.sleep(0.05)
    return peak


ROWS = []


def row(name, tried, crashes, lost, core_mb, listener_mb, bound, note=""):
    ROWS.append((name, tried, crashes, lost, core_mb, listener_mb, bound, note))
    print(f"  done: {name}", flush=True)


def probe_ok(address, child) -> bool:
    """A fresh listener gets static ``child`` from the core (nothing valid lost)."""
    b = Buffer()
    with TransformListener(b, address):
        return wait(lambda: b.can_transform("world", child, 0), 30)
