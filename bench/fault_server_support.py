"""Helpers of bench_faults.py (the buffer server's and the tools' fault campaign): the core and
server subprocesses, the 100 Hz stream, a result row, raw DEALER sockets on the server's
protocol, and memory, CPU and percentiles of a process from /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import zmq  # noqa: E402

from tf2py import TransformBroadcaster, make_transform  # noqa: E402
from tf2py.server import protocol  # noqa: E402

PY = sys.executable


def status_kib(pid, field: str) -> int:
    """A memory figure of /proc/PID/status in KiB (``field``: "VmRSS", "VmHWM"), 0 if absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def hwm_kib(pid) -> int:
    return status_kib(pid, "VmHWM")


def rss_kib(pid) -> int:
    return status_kib(pid, "VmRSS")


def cpu_percent(pid, seconds: float) -> float:
    """The process's CPU use (user + system, % of one core) over ``seconds``."""
    def ticks():
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    hz = os.sysconf("SC_CLK_TCK")
    before, t0 = ticks(), time.monotonic()
    time.sleep(seconds)
    return 100.0 * (ticks() - before) / hz / (time.monotonic() - t0)


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


class Proc:
    def __init__(self, args, ready, root=ROOT):
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(root))
        self.popen = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, env=env, stdin=subprocess.DEVNULL,
                                      cwd=str(root))  # `-m` imports from the cwd first
        self.lines = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.popen.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if ready in line:
                self.address = line.split(ready, 1)[1].strip()
                threading.Thread(target=self._drain, daemon=True).start()
                return
        raise RuntimeError(f"{args} did not start: {''.join(self.lines)}")

    def _drain(self):
        for line in self.popen.stdout:
            self.lines.append(line)

    def alive(self):
        return self.popen.poll() is None

    def stop(self):
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


class Stream:
    """map -> base (100 Hz, stamped with the wall clock), plus a static base -> laser; keeps
    every (stamp, wall time sent)."""

    def __init__(self, core):
        self.broadcaster = TransformBroadcaster(core=core)
        self.sent = []
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        k = 0
        next_t = time.monotonic()
        while not self.stop_event.is_set():
            stamp = time.time()
            self.broadcaster.send_transform(
                make_transform("map", "base", (k * 0.01, 0, 0), stamp=stamp))
            self.sent.append((stamp, time.time()))
            k += 1
            next_t += 0.01
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_t = time.monotonic()

    def close(self):
        self.stop_event.set()
        self.thread.join()
        self.broadcaster.close()


class Row:
    def __init__(self, name):
        self.name = name
        self.tried = 0
        self.crashes = 0
        self.lost = 0
        self.note = ""


def dealer(address):
    ctx = zmq.Context.instance()
    d = ctx.socket(zmq.DEALER)
    d.setsockopt(zmq.LINGER, 0)
    d.setsockopt(zmq.RCVTIMEO, 20_000)
    d.connect(address)
    return d


def results(sock, count):
    out = []
    while len(out) < count:
        message = protocol.parse_server_message(sock.recv())
        if message[0] == "result":
            out.append(message)
    return out
