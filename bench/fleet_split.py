"""Two `tf2py fleet --robots` processes on one --address, answering one BufferClient.

    python -m bench fleet_split [--robots 50] [--duration 8] [--one]   (--quick: 5 robots, 2 s)

A Zenoh router; fleet A (`--robots 'a*'`) and fleet B (`--robots 'b*'`), both answering on
the router's address with one --world (world -> aI/map, world -> bI/map); robot processes
(simulators/fleet_robots.py) playing ``--robots`` robots a0.. and as many b0.., 50 frames x 20 Hz
each. During the window one BufferClient asks lookups (time 0) alternately within one
process's robots (aI -> aJ) and between the two processes (aI -> bJ). Printed: per fleet
process its CPU (cores) and transforms/s; per kind of lookup p50 / p99 latency and count.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time

from bench.fleet import FRAMES, ROBOTS
from bench.harness import PY, Child, Run, cpu_seconds, free_port, percentile, tf2py_command


def _ms(values: list[float], q: float) -> float:
    """The q-th percentile of the answered lookups' seconds, in ms."""
    return percentile([v * 1e3 for v in values if v != float("inf")], q)


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench fleet_split", description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", type=int, default=5 if run.quick else 50, help="robots per fleet process")
    parser.add_argument("--duration", type=float, default=2.0 if run.quick else 8.0)
    parser.add_argument("--one", action="store_true",
                        help="the reference: one fleet process holding every robot")
    args = parser.parse_args(argv)
    n = args.robots
    locator = f"tcp/127.0.0.1:{free_port()}"
    folder = tempfile.mkdtemp(prefix="tf2py-split-")
    config = os.path.join(folder, "zenoh.json5")
    with open(config, "w") as f:
        f.write("{ scouting: { multicast: { enabled: false } } }\n")
    world = os.path.join(folder, "world.yaml")
    with open(world, "w") as f:
        for prefix in "ab":
            for i in range(n):
                f.write(f"- {{parent: world, child: {prefix}{i}/map, "
                        f"translation: [{i}, {ord(prefix) - 96}, 0]}}\n")
    core = f"zenoh://{locator}?domain=0&mode=client&config={config}"
    cli = tf2py_command()
    router = Child(cli + ["router", "--listen", locator])
    children = [router]
    try:
        router.wait_line("tf2py router: ready")
        split = ["a*", "b*"] if not args.one else ["*"]
        fleets = {p: Child(cli + ["fleet", "--core", core, "--world", world, "--robots",
                                  p, "--stats", "1", "--json"]) for p in split}
        children += fleets.values()
        for fleet in fleets.values():
            fleet.wait_line("tf2py fleet: ready", 120)
        sims = [Child([PY, ROBOTS, "--connect", locator, "--prefix", p,
                       "--robots", str(n), "--frames", str(FRAMES), "--rate", "20"])
                for p in "ab"]
        children += sims
        for sim in sims:
            sim.wait_line("ready", 120)
        from tf2py import Time
        from tf2py.server.client import BufferClient

        client = BufferClient(core)
        client.lookup_transform("a0/base_link", f"b{n - 1}/base_link", Time(), timeout=60)
        time.sleep(2.0)  # warm-up: every robot's statics and first messages
        pids = {p: fleet.popen.pid for p, fleet in fleets.items()}
        cpu0, t0 = {p: cpu_seconds(pid) for p, pid in pids.items()}, time.monotonic()
        latencies: dict[str, list[float]] = {"within": [], "between": []}
        rng = random.Random(7)
        end = t0 + args.duration
        while time.monotonic() < end:
            for kind, other in (("within", "a"), ("between", "b")):
                target = f"a{rng.randrange(n)}/link_{rng.randrange(1, FRAMES - 1)}"
                source = f"{other}{rng.randrange(n)}/base_link"
                started = time.perf_counter()
                try:
                    client.lookup_transform(target, source, Time(), timeout=1.0)
                except Exception:
                    latencies[kind].append(float("inf"))
                else:
                    latencies[kind].append(time.perf_counter() - started)
        t1 = time.monotonic()
        cores = {p: (cpu_seconds(pid) - cpu0[p]) / (t1 - t0) for p, pid in pids.items()}
        client.close()
        table = run.table(f"fleet processes: {n} robots a*, {n} robots b*, {args.duration:.0f} s",
                          ["fleet", "robots", "cores", "transforms/s", "dropped"],
                          [8, 8, 7, 14, 30])
        for p, fleet in fleets.items():
            stats = [json.loads(line)["stats"] for line in fleet.lines
                     if line.startswith('{"stats"')]
            rates = [s["transforms_per_s"] for s in stats[-int(args.duration) + 1:]]
            rate = sum(rates) / max(1, len(rates))
            table.add(p, n * (3 - len(fleets)), f"{cores[p]:.2f}", f"{rate:,.0f}",
                      stats[-1]["dropped_by_cause"] if stats else "?",
                      cores=cores[p], rate=rate)
        lookups = run.table("lookups by one BufferClient (time 0)",
                            ["kind", "asked", "failed", "p50 ms", "p99 ms"], [10, 8, 8, 9, 9])
        for kind, values in latencies.items():
            failed = sum(1 for v in values if v == float("inf"))
            p50, p99 = _ms(values, 50), _ms(values, 99)
            lookups.add(kind, len(values), failed, f"{p50:.2f}", f"{p99:.2f}",
                        asked=len(values), failed=failed, p50_ms=p50, p99_ms=p99)
    finally:
        for child in reversed(children):
            child.stop()
