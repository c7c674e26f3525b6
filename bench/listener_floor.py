"""Listener CPU per received transform against the raw pyzmq + msgpack floor, alone.

    python -m bench listener_floor            # batches of 50, 3 rounds, ~1 min
    python -m bench listener_floor --quick    # 1 round, ~15 s
    python -m bench listener_floor --batch 1 --rate 10000

Issue 9's target: a ``TransformListener`` filling a ``Buffer`` spends at most 2x the CPU per
received transform of the floor, a bare pyzmq SUB socket that receives the same messages
and ``msgpack.unpackb``s them (nothing stored), at batches of 50 transforms per message.

Set-up (the ``floor`` section of bench/transport.py, made repeatable and interleaved): a
core process, one broadcaster process sending ``--messages`` messages of ``--batch``
transforms (50 frames, one new sample each) at ``--rate`` messages/s, and in this process
one receiver at a time:

  floor        bare SUB + recv_multipart + msgpack.unpackb (the target's floor)
  tight floor  bare SUB + recv(copy=False) + unpackb (pyzmq's cheapest receive, for reference)
  sink         TransformListener handing each batch to a no-op sink (the transport's share)
  listener     TransformListener filling a real Buffer (what the target is about)

The figure is this process's CPU time (all its threads, libzmq's I/O thread included, as
for every receiver) while the messages arrive, divided by the transforms received. The
receivers take turns within each round, so a burst of load from other processes hits them
alike; the ratio printed is the median over rounds of each round's listener / floor.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from bench.harness import PY, Run, load_average, start_core
from bench.transport import _spawn, receivers
from simulators.bus_processes import SENDER


def measure(sender, make, messages, batch, settle):
    """CPU of this process per received transform, and the transforms received."""
    receiver, count = make()
    try:
        # The new SUB socket's subscription reaches the core asynchronously: wait until it
        # sees traffic would cost messages, so give it a settle time before counting.
        time.sleep(settle)
        n0 = count()
        c0 = time.process_time()
        sender.tell("go %d" % messages)
        sender.wait_line("done", timeout=messages + 60)
        deadline = time.monotonic() + 3.0
        while count() - n0 < messages * batch and time.monotonic() < deadline:
            time.sleep(0.005)
        cpu = time.process_time() - c0
        n = count() - n0
    finally:
        receiver.close()
    return cpu / max(n, 1) * 1e6, n


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=50, help="transforms per message (50)")
    parser.add_argument("--rate", type=int, default=1000, help="messages per second (1000)")
    parser.add_argument("--messages", type=int, default=None,
                        help="messages per measurement (3000; --quick: 1500)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (3; --quick: 1)")
    parser.add_argument("--rotation", default="0,0,0.14943813247359922,0.9887710779360422",
                        help="x,y,z,w of every sent rotation (default: a 0.3 rad yaw, whose "
                        "|q|^2 in floats is 1 - 1e-16, not exactly 1, as in real data, so "
                        "the insert normalizes; bench/transport.py sends the identity 0,0,0,1)")
    parser.add_argument("--settle", type=float, default=0.3,
                        help="seconds for a new receiver's subscription to reach the core")
    args = parser.parse_args(argv)
    messages = args.messages or (500 if run.quick else 3000)
    rounds = args.rounds or (1 if run.quick else 3)

    print("listener CPU per received transform vs raw pyzmq+msgpack floor: batch %d, %d msg/s"
          " (%d transforms/s), rotation %s, %d messages per measurement, %d round(s); python %s,"
          " %d CPUs, %s at the start" % (args.batch, args.rate, args.rate * args.batch,
                                         args.rotation, messages, rounds,
                                         sys.version.split()[0], os.cpu_count() or 0,
                                         "load average " + load_average()))
    core = start_core()
    address = core.address
    sender = None
    figures = {}
    try:
        sender = _spawn([PY, "-c", SENDER, address, str(args.batch), str(args.rate),
                        args.rotation])
        sender.wait_line("ready")
        makers = receivers(address)
        figures = {name: [] for name in makers}
        for r in range(rounds):
            line = []
            for name, make in makers.items():
                us, n = measure(sender, make, messages, args.batch, args.settle)
                figures[name].append((us, n))
                lost = messages * args.batch - n
                line.append("%s %.2f us%s" % (name, us, " (lost %d)" % lost if lost else ""))
            floor = figures["floor"][-1][0]
            print("  round %d: %s; listener/floor %.2fx" % (
                r + 1, ", ".join(line), figures["listener"][-1][0] / floor), flush=True)
    finally:
        if sender is not None:
            sender.stop()
        core.stop()

    def med(name):
        return statistics.median(us for us, _ in figures[name])

    ratios = [lst[0] / fl[0] for lst, fl in zip(figures["listener"], figures["floor"])]
    tight_ratios = [lst[0] / fl[0]
                    for lst, fl in zip(figures["listener"], figures["tight floor"])]
    table = run.table(f"listener CPU per received transform, batches of {args.batch} at "
                      f"{args.rate} messages/s, median of {rounds} round(s)",
                      ["receiver", "µs per transform", "vs floor", "target"], [44, 17, 9, 8])
    for name, label in (("floor", "floor: bare SUB + recv_multipart + unpackb"),
                        ("tight floor", "tight floor (copy=False frames)"),
                        ("sink", "listener -> no-op sink"), ("listener", "listener -> Buffer")):
        vs = statistics.median(a[0] / b[0] for a, b in zip(figures[name], figures["floor"]))
        table.add(label, f"{med(name):.2f}", f"{vs:.2f}x", "≤ 2.0x" if name == "listener" else "",
                  us=med(name), ratio=vs)
    run.note("listener / floor per round: " + " ".join("%.2f" % x for x in ratios)
             + "; listener / tight floor %.2fx" % statistics.median(tight_ratios))
