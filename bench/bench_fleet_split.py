"""Two `tf2py fleet --robots` processes on one --address, answering one BufferClient.

    python bench/bench_fleet_split.py [--robots 50] [--duration 8] [--one]

A Zenoh router; fleet A (`--robots 'a*'`) and fleet B (`--robots 'b*'`), both answering on
the router's address with one --world (world -> aI/map, world -> bI/map); robot processes
(bench/fleet_robots.py) playing ``--robots`` robots a0.. and as many b0.., 50 frames x 20 Hz
each. During the window one BufferClient asks lookups (time 0) alternately within one
process's robots (aI -> aJ) and between the two processes (aI -> bJ). Printed: per fleet
process its CPU (cores) and transforms/s; per kind of lookup p50 / p99 latency and count.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))

from bench_fleet import ROBOTS, Child, cpu_seconds, free_port  # noqa: E402

FRAMES = 50


def percentile(values: list[float], q: float) -> float:
    ok = sorted(v for v in values if v != float("inf"))
    return ok[min(len(ok) - 1, int(len(ok) * q))] * 1e3 if ok else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", type=int, default=50, help="robots per fleet process")
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--one", action="store_true",
                        help="the reference: one fleet process holding every robot")
    args = parser.parse_args()
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
    cli = [sys.executable, "-m", "tf2py.cli.main"]
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
        sims = [Child([sys.executable, ROBOTS, "--connect", locator, "--prefix", p,
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
        for p, fleet in fleets.items():
            stats = [json.loads(line)["stats"] for line in fleet.lines
                     if line.startswith('{"stats"')]
            rates = [s["transforms_per_s"] for s in stats[-int(args.duration) + 1:]]
            print(f"fleet {p}: {n * (3 - len(fleets))} robots, {cores[p]:.2f} cores, "
                  f"{sum(rates) / max(1, len(rates)):,.0f} transforms/s, "
                  f"dropped {stats[-1]['dropped_by_cause'] if stats else '?'}")
        for kind, values in latencies.items():
            failed = sum(1 for v in values if v == float("inf"))
            print(f"lookups {kind:8s}: {len(values)} asked, {failed} failed, "
                  f"p50 {percentile(values, 0.5):.2f} ms, p99 {percentile(values, 0.99):.2f} ms")
    finally:
        for child in reversed(children):
            child.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
