"""The processes of the bus benchmarks (bench/transport.py, listener_floor.py, foxglove_view.py)
as scripts for ``python -c`` (with the repository on PYTHONPATH): broadcasters, a raw pyzmq
publisher and a fan-out listener, paced by ``sleep_until``. Each talks in turns: "ready" on
stdout, then a line on stdin starts it; bench.harness.Child starts, talks to and stops them."""

from __future__ import annotations

import time


def sleep_until(target: float) -> None:
    """Waits until ``time.perf_counter()`` reaches ``target`` (s): a sleep, then a spin for the
    last 0.2 ms, so that a paced sender keeps its rate without taking a core."""
    while True:
        now = time.perf_counter()
        if now >= target:
            return
        if target - now > 0.0003:
            time.sleep(target - now - 0.0002)


# A broadcaster process: connects, waits for "go" on stdin, sends COUNT messages of BATCH
# transforms (children c{ID}_{j}) at RATE messages/s (0 = flat out), prints "done".
BROADCASTER = r"""
import sys, time
from simulators.bus_processes import sleep_until
from tf2py import make_transform
from tf2py.transport.broadcaster import TransformBroadcaster
address, ident = sys.argv[1], sys.argv[2]
count, batch, rate = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
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
        sleep_until(t0 + k * tick)
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
from simulators.bus_processes import sleep_until
endpoint, mode, count, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
topic = sys.argv[5].encode()
s = zmq.Context.instance().socket(zmq.PUB)
(s.bind if mode == "bind" else s.connect)(endpoint)
time.sleep(1.0)
print("ready", flush=True)
sys.stdin.readline()
period = 1.0 / rate
t0 = time.perf_counter()
for i in range(1, count + 1):
    sleep_until(t0 + i * period)
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

# A broadcaster that stays up: on each line "go N" it sends N messages of BATCH transforms
# (children c_j, one new stamp per message, stamps increasing across rounds) at RATE
# messages/s and prints "done"; on "stop" (or end of input) it closes.
SENDER = r"""
import sys, time
from simulators.bus_processes import sleep_until
from tf2py import make_transform
from tf2py.buffer.time import Time
from tf2py.transport.broadcaster import TransformBroadcaster
address, batch, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rotation = tuple(float(v) for v in sys.argv[4].split(","))
b = TransformBroadcaster(address)
ts = [make_transform("world", "c%d" % j, (1.0, 2.0, 3.0), rotation) for j in range(batch)]
print("ready", flush=True)
period = 1.0 / rate
stamp_ms = 0
for line in sys.stdin:
    words = line.split()
    if not words or words[0] != "go":
        break
    count = int(words[1])
    t0 = time.perf_counter()
    for i in range(1, count + 1):
        sleep_until(t0 + i * period)
        stamp_ms += 1
        stamp = Time.from_nanoseconds(1_000_000_000_000 + stamp_ms * 1_000_000)
        for t in ts:
            t.header.stamp = stamp
        b.send_transform(ts if batch > 1 else ts[0])
    print("done", flush=True)
b.close()
"""
