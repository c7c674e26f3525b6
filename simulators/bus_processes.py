"""Processes and helpers of the bus benchmarks (bench_transport.py): broadcaster, raw pyzmq
publisher and listener processes as scripts, and spawning, talking to and measuring them."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

PY = sys.executable
CLK_TCK = os.sysconf("SC_CLK_TCK")

# A broadcaster process: connects, waits for "go" on stdin, sends COUNT messages of BATCH
# transforms (children c{ID}_{j}) at RATE messages/s (0 = flat out), prints "done".
BROADCASTER = r"""
import sys, time
from tf2py import make_transform
from tf2py.transport.broadcaster import TransformBroadcaster
address, ident, count, batch, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
stamp_now = len(sys.argv) > 6 and sys.argv[6] == "now"
b = TransformBroadcaster(address)
ts = [make_transform("world", f"c{ident}_{j}", (1.0, 2.0, 3.0)) for j in range(batch)]
time.sleep(1.0)  # connect (bench only: /tf is not latched)
print("ready", flush=True)
sys.stdin.readline()
from tf2py.buffer.time import Time
# Rates up to 2 kHz: one message per period (sleep, then spin the last 0.2 ms for precision).
# Higher rates: a burst every millisecond, then sleep: the sender uses only the CPU it needs.
tick = (1.0 / rate if rate <= 2000 else 0.001) if rate > 0 else 0.0
per_tick = max(1, round(rate * tick)) if rate > 0 else count
t0 = time.perf_counter()
i = 0
k = 0
while i < count:
    if tick:
        k += 1
        target = t0 + k * tick
        while True:
            now = time.perf_counter()
            if now >= target:
                break
            if target - now > 0.0003:
                time.sleep(target - now - 0.0002)
    for _ in range(min(per_tick, count - i)):
        i += 1
        stamp = Time.from_nanoseconds(time.time_ns() if stamp_now else i * 1_000_000)
        for t in ts:
            t.header.stamp = stamp
        b.send_transform(ts if batch > 1 else ts[0])
print("done", time.perf_counter() - t0, flush=True)
sys.stdin.readline()
b.close()
"""

# Bare pyzmq one-way: PUB sends packed time_ns at RATE to ENDPOINT (connect or bind).
RAW_PUB = r"""
import sys, time, zmq, msgpack
endpoint, mode, count, rate, topic = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5].encode()
s = zmq.Context.instance().socket(zmq.PUB)
(s.bind if mode == "bind" else s.connect)(endpoint)
time.sleep(1.0)
print("ready", flush=True)
sys.stdin.readline()
period = 1.0 / rate
t0 = time.perf_counter()
for i in range(1, count + 1):
    target = t0 + i * period
    while True:
        now = time.perf_counter()
        if now >= target:
            break
        if target - now > 0.0003:
            time.sleep(target - now - 0.0002)
    s.send_multipart([topic, msgpack.packb(time.time_ns())])
print("done", flush=True)
sys.stdin.readline()
s.close(0)
"""

# A listener process for fan-out: counts transforms, reports its own CPU over a window.
FANOUT_LISTENER = r"""
import sys, time
from tf2py.buffer.buffer import Buffer
from tf2py.transport.listener import TransformListener
buffer = Buffer()
listener = TransformListener(buffer, sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
c0, n0 = time.process_time(), listener.received_transforms
sys.stdin.readline()
c1, n1 = time.process_time(), listener.received_transforms
print("cpu", c1 - c0, n1 - n0, listener.stats()["dropped"], flush=True)
listener.close()
"""


def spawn(args, stdin=True):
    return subprocess.Popen(
        args, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
        text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True)


def expect(proc, word, timeout=30.0):
    line = proc.stdout.readline()
    if not line.startswith(word):
        raise RuntimeError(f"expected {word!r} from {proc.args[:3]}, got {line!r}")
    return line


def tell(proc, text="go"):
    proc.stdin.write(text + "\n")
    proc.stdin.flush()


def stop(proc):
    if proc.poll() is None:
        try:
            tell(proc, "stop")
        except (BrokenPipeError, OSError):
            pass
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.send_signal(2)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def start_core():
    proc = spawn([PY, "-m", "tf2py.cli.main", "core", "--address", "tcp://127.0.0.1:0"],
                 stdin=False)
    line = proc.stdout.readline()
    address = line.split("ready at ", 1)[1].strip()
    return proc, address


def proc_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def percentile(values, p):
    return float(np.percentile(np.asarray(values), p))


def load_note() -> str:
    with open("/proc/loadavg") as f:
        return "loadavg " + " ".join(f.read().split()[:3])
