"""Benchmark of time and motion: lookup_velocity, the MessageFilter, and /clock's cost.

    python -m bench times [--quick]

- ``lookup_velocity`` (depth 3, 100 Hz history, between samples) against two
  ``lookup_transform`` calls on the same buffer, in the same run (ratio = velocity / two
  lookups: tf2's computation makes three lookups in the default form); the batch form
  ``lookup_velocities`` over 1000 times, per time, against one ``lookup_velocity``.
- MessageFilter overhead per message, against the buffer calls it is built on, in the same
  run: (a) the transform is already there: ``add`` (passed on at once) vs one
  ``Buffer.can_transform``; (b) it arrives later: ``add`` + the insertion that passes 100
  waiting messages, per message, vs ``wait_for_transform_async`` + a done-callback per
  message resolved by the same insertion.
- /clock at 1 kHz: CPU time of a separate process running a ``SimClock`` with a jump callback
  (what ``Buffer(clock=SimClock())`` runs) while this process publishes 1000 ticks/s through
  an in-process core; target < 1 % of a core. The peer is a process with a bare conflating
  ZeroMQ SUB socket on /clock (ZeroMQ's own receive cost, the floor). Idle costs (no ticks)
  are measured too.

Every figure is the best of several repeats (the machine is shared; the minimum is the least
disturbed), except the CPU share, measured over one window with the load printed.
"""

from __future__ import annotations

import argparse
import subprocess
import time

from bench.harness import PY, Run, Table, best_per_op
from tf2py import Buffer, MessageFilter, Time, make_transform

NS = 1_000_000_000
BASE_S = 1_700_000_000.0


_TABLE: dict[str, Table] = {}


def row(name, ours, peer_name, peer, note=""):
    ratio = ours / peer
    _TABLE["t"].add(name, "%.2f" % (ours * 1e6), peer_name, "%.2f" % (peer * 1e6), "%.2fx" % ratio,
                    note, ours_us=ours * 1e6, peer_us=peer * 1e6, ratio=ratio)


def chain_buffer(depth=3, samples=1001):
    buffer = Buffer()
    frames = ["f%d" % i for i in range(depth + 1)]
    for k in range(samples):
        t = BASE_S + k * 0.01
        for i in range(depth):
            yaw = 0.002 * k + 0.3 * i
            buffer.set_transform(make_transform(frames[i], frames[i + 1],
                                                (1.0 + 0.001 * k, 0.5 * i, 0.1),
                                                rpy=(0.1 * (i + 1), 0.0, yaw), stamp=t), "bench")
    return buffer, frames


def bench_velocity(repeat, number):
    buffer, frames = chain_buffer()
    at = Time.from_seconds(BASE_S + 5.005)
    target, source = frames[0], frames[-1]
    velocity = best_per_op(lambda: buffer.lookup_velocity(source, target, at, 0.1), number,
                           repeat)
    two = best_per_op(lambda: (buffer.lookup_transform(target, source, at),
                               buffer.lookup_transform(target, source, at)), number, repeat)
    row("lookup_velocity, depth 3", velocity, "two lookup_transform", two)
    full = best_per_op(lambda: buffer.lookup_velocity(source, target, at, 0.1, frames[1],
                                                      (1, 2, 3), frames[2]), number, repeat)
    row("lookup_velocity, full form (4 lookups)", full, "two lookup_transform", two)
    times = [Time.from_seconds(BASE_S + 1.0 + 0.008 * k) for k in range(1000)]
    batch = best_per_op(lambda: buffer.lookup_velocities(source, target, times, 0.1),
                        max(3, number // 1000), repeat) / len(times)
    row("lookup_velocities, 1000 times (per time)", batch, "lookup_velocity", velocity)


class _Msg:
    __slots__ = ("header",)

    def __init__(self, header):
        self.header = header


class _Header:
    __slots__ = ("frame_id", "stamp")

    def __init__(self, frame_id, stamp):
        self.frame_id = frame_id
        self.stamp = stamp


def bench_filter(repeat, number):
    buffer = Buffer()
    buffer.set_transform_static(make_transform("map", "odom"), "bench")
    for k in range(101):
        buffer.set_transform(make_transform("odom", "base", (k, 0, 0), stamp=k * 0.01), "bench")
    passed = []
    f = MessageFilter(buffer, "map", 1000, lambda m: passed.append(1))
    stamp = Time.from_seconds(0.505)
    message = _Msg(_Header("base", stamp))
    ready = best_per_op(lambda: f.add(message), number, repeat)
    peer = best_per_op(lambda: buffer.can_transform("map", "base", stamp), number, repeat)
    row("MessageFilter.add, transform already there", ready, "Buffer.can_transform", peer)
    f.close()

    # Arriving later: 100 messages wait for the next sample, one insertion passes them all.
    batch = 100

    def filter_round(state=[1.0]):  # noqa: B006  (the round's clock, kept between calls)
        t = state[0]
        state[0] = t + 0.01
        for i in range(batch):
            f2.add(_Msg(_Header("base", t + 0.00005 * i)))
        buffer.set_transform(make_transform("odom", "base", stamp=t + 0.01), "bench")

    def future_round(state=[1.0e6]):  # noqa: B006  (the same)
        t = state[0]
        state[0] = t + 0.01
        stamp_time = Time.from_seconds
        for i in range(batch):
            future = buffer2.wait_for_transform_async("map", "base", stamp_time(t + 0.00005 * i))
            future.add_done_callback(lambda fut: passed.append(1))
        buffer2.set_transform(make_transform("odom", "base", stamp=t + 0.01), "bench")

    buffer.set_transform(make_transform("odom", "base", stamp=1.0), "bench")
    f2 = MessageFilter(buffer, "map", 1000, lambda m: passed.append(1))
    buffer2 = Buffer()
    buffer2.set_transform_static(make_transform("map", "odom"), "bench")
    buffer2.set_transform(make_transform("odom", "base", stamp=1.0e6), "bench")
    rounds = max(5, number // batch)
    later = best_per_op(filter_round, rounds, repeat) / batch
    peer_later = best_per_op(future_round, rounds, repeat) / batch
    assert len(f2) == 0 and buffer.pending_request_count == 0
    row("MessageFilter, transform arrives later", later,
        "wait_for_transform_async + callback", peer_later, "(per message, insert included)")
    f2.close()


_CLOCK_CHILD = r"""
import sys, time, resource
import zmq
from tf2py.transport.zmq.address import bus_endpoints
from tf2py.transport.clock import SimClock
mode = sys.argv[2]
if mode == "floor":  # a bare SUB socket on /clock, never read: ZeroMQ's own receive cost
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.CONFLATE, 1)
    sub.setsockopt(zmq.SUBSCRIBE, b"/clock")
    sub.connect(bus_endpoints(sys.argv[1])[1])
else:  # what Buffer(clock=SimClock(...)) runs: a SimClock with a jump callback
    clock = SimClock(sys.argv[1])
    clock.add_jump_callback(lambda jump: None)
print("ready", flush=True)
for line in sys.stdin:
    if line.startswith("cpu"):
        r = resource.getrusage(resource.RUSAGE_SELF)
        now = clock.now().nanoseconds if mode != "floor" else 0
        print("cpu %.6f %d" % (r.ru_utime + r.ru_stime, now), flush=True)
    elif line.startswith("quit"):
        break
"""


def _clock_share(core_address, publisher, mode, seconds):
    """CPU share (of one core) of a child process following /clock at 1 kHz, its idle share,
    and the clock it reads at the end."""
    child = subprocess.Popen([PY, "-c", _CLOCK_CHILD, core_address, mode],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"

        def cpu():
            child.stdin.write("cpu\n")
            child.stdin.flush()
            _, used, now = child.stdout.readline().split()
            return float(used), int(now)

        time.sleep(0.5)
        cpu0, _ = cpu()
        time.sleep(seconds / 2)
        cpu1, _ = cpu()
        idle = (cpu1 - cpu0) / (seconds / 2)
        t_ns = int(BASE_S * NS)
        start = time.monotonic()
        end = start + seconds
        next_tick = start
        cpu0, _ = cpu()
        sent = 0
        while True:
            now = time.monotonic()
            if now >= end:
                break
            if now >= next_tick:
                publisher.publish_ns(t_ns + sent * 1_000_000)
                sent += 1
                next_tick += 0.001
            else:
                time.sleep(min(0.0005, next_tick - now))
        elapsed = time.monotonic() - start
        cpu1, last = cpu()
        child.stdin.write("quit\n")
        child.stdin.flush()
        child.wait(10)
        return (cpu1 - cpu0) / elapsed, idle, sent / elapsed, last - t_ns
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(5)


def bench_clock(seconds):
    from tf2py.transport.clock import ClockPublisher
    from tf2py.transport.zmq.core import Core

    with Core("tcp://127.0.0.1:0") as core, ClockPublisher(core.address) as publisher:
        floor, floor_idle, _, _ = _clock_share(core.address, publisher, "floor", seconds)
        share, idle, rate, last = _clock_share(core.address, publisher, "simclock", seconds)
        _TABLE["t"].add(
            "SimClock (+ jump callback) under /clock 1 kHz", "%.2f %%" % (share * 100),
            "bare ZeroMQ SUB socket", "%.2f %%" % (floor * 100),
            "%.2fx" % (share / floor if floor else float("nan")),
            "%.0f ticks/s sent; idle %.3f %% vs %.3f %%; last tick read %.3f s after the first; "
            "target < 1 %%: %s" % (rate, idle * 100, floor_idle * 100, last / 1e9,
                                  "met" if share < 0.01 else "NOT met"),
            ours_percent=share * 100, peer_percent=floor * 100)


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench times", description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    repeat, number, seconds = (3, 2000, 1.0) if run.quick else (7, 5000, 5.0)
    _TABLE["t"] = run.table("time and motion, best of %d repeats (CPU share: one window of %g s)"
                            % (repeat, seconds), ["figure", "tf2py µs", "against, same run",
                                                  "µs", "ratio", "note"], [46, 9, 36, 9, 7, 10])
    bench_velocity(repeat, number)
    bench_filter(repeat, number)
    bench_clock(seconds)
