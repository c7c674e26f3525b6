"""Benchmark: what the thread-safe Buffer adds on top of BufferCore.

    .venv/bin/python bench/bench_buffer_threaded.py [--repeat N]

Tree: map -> odom -> base -> laser (depth 3), 10 s of history at 100 Hz per link. Every
figure is the best of N runs (default 5) of a timed loop; costs are per call.

Rows:
- lookup_transform between two samples / at time 0 / can_transform: BufferCore vs Buffer,
  and the difference (the lock and the wrapper).
- insert (set_transform_values) per call: BufferCore, Buffer, Buffer with 500 pending async
  requests on other frames (skipped by the index), Buffer with 500 pending requests on the
  inserted frame that stay pending (each insertion re-checks them; 500 distinct stamps in
  the future), and with 500 identical pending requests (one shared check).
- set_transforms of 100 transforms per call with 500 pending requests on other frames.
- wake-up latency: a thread waits in lookup_transform(timeout=...) and another inserts the
  sample it waits for; time from just before the insert to the waiter's return (median and
  p90 over 200 rounds).
- async: wait_for_transform_async resolved by an insertion, cost per request created and
  resolved.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import threading
import time

import numpy as np

from tf2py.buffer.buffer import Buffer
from tf2py.buffer.core import BufferCore
from tf2py.buffer.time import Time

HZ = 100
SECONDS = 10
STEP_NS = 1_000_000_000 // HZ
CHAIN = ("map", "odom", "base", "laser")


def fill(core, n=SECONDS * HZ, chain=CHAIN):
    for k in range(1, n + 1):
        ns = k * STEP_NS
        for parent, child in zip(chain, chain[1:]):
            core.set_transform_values(parent, child, ns, 0.01 * k, 0, 0.1, 0, 0, 0, 1.0, "b")
    return n * STEP_NS


def per_call(function, loops, repeat):
    """Best-of-``repeat`` seconds per call of ``function()`` over ``loops`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(loops):
            function()
        best = min(best, (time.perf_counter() - start) / loops)
    return best


def us(seconds):
    return f"{seconds * 1e6:8.2f} µs"


def bench_lookups(repeat):
    rows = []
    core = BufferCore()
    buffer = Buffer()
    latest = fill(core)
    fill(buffer)
    between = Time.from_nanoseconds(latest - 5 * STEP_NS - STEP_NS // 2)
    for label, make in (
        ("lookup_transform between samples (depth 3)",
         lambda b: (lambda: b.lookup_transform("map", "laser", between))),
        ("lookup_transform at time 0 (depth 3)",
         lambda b: (lambda: b.lookup_transform("map", "laser", 0))),
        ("can_transform (depth 3)",
         lambda b: (lambda: b.can_transform("map", "laser", between))),
        ("get_parent (the cheapest call: lock cost shows)",
         lambda b: (lambda: b.get_parent("laser", between))),
    ):
        c = b = float("inf")
        for _ in range(repeat):  # interleaved, so both see the same machine load
            c = min(c, per_call(make(core), 20000, 1))
            b = min(b, per_call(make(buffer), 20000, 1))
        rows.append((label, c, b))
    print("\n== single calls: BufferCore vs Buffer ==")
    print(f"{'call':48s} {'BufferCore':>12s} {'Buffer':>12s} {'added':>12s}")
    for label, c, b in rows:
        print(f"{label:48s} {us(c):>12s} {us(b):>12s} {us(b - c):>12s}")


def bench_inserts(repeat):
    print("\n== insert cost per call (set_transform_values, one transform) ==")
    def run(make_target, setup=None, n=20000):
        best = float("inf")
        for _ in range(repeat):
            target = make_target()
            if setup:
                setup(target)
            start = time.perf_counter()
            insert = target.set_transform_values
            for k in range(1, n + 1):
                insert("map", "odom", k * STEP_NS, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, "b")
            best = min(best, (time.perf_counter() - start) / n)
        return best

    def pending_elsewhere(b):
        for i in range(500):
            b.wait_for_transform_async("map", f"robot{i}", 1.0)

    far = 10 ** 6  # seconds: never reached, so these stay pending and are re-checked

    def pending_here_distinct(b):
        for i in range(500):
            b.wait_for_transform_async("map", "odom", far + i)

    def pending_here_same(b):
        for _ in range(500):
            b.wait_for_transform_async("map", "odom", far)

    rows = [
        ("BufferCore", run(BufferCore)),
        ("Buffer", run(Buffer)),
        ("Buffer, 500 pending requests on other frames", run(Buffer, pending_elsewhere)),
        # each insertion re-checks 500 distinct lookups here: time fewer of them
        ("Buffer, 500 pending on this frame, 500 stamps", run(Buffer, pending_here_distinct, 200)),
        ("Buffer, 500 identical pending on this frame", run(Buffer, pending_here_same)),
    ]
    for label, cost in rows:
        print(f"{label:56s} {us(cost)}  ({1 / cost:,.0f} calls/s)")

    print("\n== set_transforms, 100 transforms per call ==")
    batch = 100
    values = np.tile([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], (batch, 1))
    parents = ["map"] * batch
    children = [f"frame{i}" for i in range(batch)]

    def run_batch(make_target, setup=None):
        best = float("inf")
        calls = 500
        for _ in range(repeat):
            target = make_target()
            if setup:
                setup(target)
            start = time.perf_counter()
            for k in range(1, calls + 1):
                stamps = np.full(batch, k * STEP_NS, dtype=np.int64)
                target.set_transforms(parents, children, stamps, values, "b")
            best = min(best, (time.perf_counter() - start) / calls)
        return best

    for label, cost in (
        ("BufferCore", run_batch(BufferCore)),
        ("Buffer", run_batch(Buffer)),
        ("Buffer, 500 pending requests on other frames", run_batch(Buffer, pending_elsewhere)),
    ):
        print(f"{label:56s} {us(cost)} per call  ({us(cost / batch)} per transform)")


def bench_wakeup(rounds=200):
    buffer = Buffer()
    fill(buffer, n=10)
    latencies = []
    ready = threading.Event()
    for k in range(11, 11 + rounds):
        ns = k * STEP_NS
        done = threading.Event()
        box = {}

        def waiter():
            ready.set()
            buffer.lookup_transform("map", "laser", Time.from_nanoseconds(ns), timeout=5.0)
            box["end"] = time.perf_counter()
            done.set()

        ready.clear()
        thread = threading.Thread(target=waiter, daemon=True, name="bench-waiter")
        thread.start()
        ready.wait(5.0)
        while buffer._waiting == 0:  # make sure it is waiting, not still checking
            time.sleep(0.0002)
        start = time.perf_counter()
        buffer.set_transforms(
            ["map", "odom", "base"], ["odom", "base", "laser"], np.full(3, ns),
            np.tile([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], (3, 1)), "b",
        )
        done.wait(5.0)
        thread.join(5.0)
        latencies.append(box["end"] - start)
    latencies.sort()
    print("\n== wake-up latency: insert -> waiting lookup returns (another thread) ==")
    print(f"median {us(statistics.median(latencies))}   p90 {us(latencies[int(0.9 * rounds)])}"
          f"   (tf2 polls: 10 ms C++, 20 ms Python)")


def bench_async(repeat):
    n = 2000
    best = float("inf")
    for _ in range(repeat):
        b = Buffer()
        last = fill(b, n=10)
        start = time.perf_counter()
        futures = [
            b.wait_for_transform_async("map", "odom", Time.from_nanoseconds(last + i * 1000))
            for i in range(1, n + 1)
        ]
        b.set_transform_values("map", "odom", last + (n + 1) * 1000, 0, 0, 0, 0, 0, 0, 1, "b")
        assert all(f.done() for f in futures)
        best = min(best, (time.perf_counter() - start) / n)
    print("\n== async requests: create + resolve, 2000 distinct pending, one insertion ==")
    print(f"per request {us(best)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"tf2py Buffer vs BufferCore  |  {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.2f}")
    bench_lookups(args.repeat)
    bench_inserts(args.repeat)
    bench_wakeup()
    bench_async(args.repeat)


if __name__ == "__main__":
    main()
