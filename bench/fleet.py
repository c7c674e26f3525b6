"""tf2py fleet under load: N simulated robots x 50 frames x 20 Hz into one fleet process.

    python -m bench fleet [--sizes 10,100,1000] [--duration 10] [--ingest-only SECONDS]
    python -m bench fleet --quick        (N = 10, 2 s; ingest alone for 1 s)

``--ingest-only SECONDS``: no Zenoh, the ingest alone (``--sizes`` robots).

For each N: a Zenoh router, the fleet (the ``Fleet`` that ``tf2py fleet`` runs, in its own
process, reporting its counters), and a few robot processes (simulators/fleet_robots.py) playing
N robots between them, each robot one TFMessage of 50 transforms per cycle at 20 Hz (rmw_zenoh's
key expressions and CDR). Measured over the steady window: loss (transforms sent that the fleet
did not insert), CPU of the fleet process (cores), its memory (RSS), CPU per transform (must
stay flat as N grows: printed as a ratio to N = 10), and lookups asked by a BufferClient over
Zenoh during the load (cross-robot, time 0): p50 / p99 latency and their rate.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
from typing import Any

from bench.harness import (
    PY,
    REPO,
    Child,
    Run,
    cpu_seconds,
    free_port,
    rss_mib,
    thread_cpu_seconds,
    threads_cpu,
    version_of,
)

ROBOTS = str(REPO / "simulators" / "fleet_robots.py")
FRAMES = 50
RATE = 20.0


def fleet_child(core: str, n: int, old_rounds: bool = False) -> int:
    """The fleet process: Fleet (what ``tf2py fleet`` runs) with a world static per robot
    (``world -> robotI/map``, so robots are related), counters on stdout every 0.5 s.
    ``old_rounds``: rounds as before answers-first (up to 4 096 samples in one kernel call,
    the ingest never waiting for answers), for comparison in the same conditions."""
    from tf2py.server.fleet.service import Fleet
    from tf2py.server.fleet.world import WorldStatic

    world = [WorldStatic("world", f"robot{i}/map", (float(i), 0, 0, 0, 0, 0, 1))
             for i in range(n)]

    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    with Fleet(core, world=world) as fleet:
        if old_rounds and fleet.ingest is not None:
            fleet.ingest.chunk_bytes, fleet.ingest.chunk_samples = 1 << 40, 4096
            fleet.ingest.gate.max_yield_s, fleet.ingest.linger = 0.0, 0.0
        print(f"ready {fleet.address}", flush=True)
        while not stop.wait(0.5):
            stats = fleet.stats()
            stats["python_threads_cpu_s"] = {  # CPU of each Python thread so far, by name
                t.name: thread_cpu_seconds(t.native_id) for t in threading.enumerate()
                if t.native_id is not None}
            print("stats " + json.dumps(stats), flush=True)
    return 0


def last_stats(child: Child) -> dict[str, Any]:
    for line in reversed(child.lines):
        if line.startswith("stats "):
            return json.loads(line[6:])
    return {}


def window_stats(child: Child, first: dict[str, Any], last: dict[str, Any]) -> list[dict[str, Any]]:
    """The fleet's stats lines from ``first`` to ``last`` (its 0.5 s reports in the window)."""
    lines = [json.loads(line[6:]) for line in list(child.lines) if line.startswith("stats ")]
    inside = [st for st in lines
              if first.get("received", 0) <= st.get("received", 0) <= last.get("received", 0)]
    return inside


def ask_lookups(client: object, n: int, stop: threading.Event, out: list[float]) -> None:
    from tf2py import Time

    rng = random.Random(7)
    if True:
        while not stop.is_set():
            a, b = rng.randrange(n), rng.randrange(n)
            started = time.perf_counter()
            try:
                client.lookup_transform(f"robot{a}/link_{rng.randrange(1, FRAMES - 1)}",  # type: ignore[attr-defined]
                                        f"robot{b}/base_link", Time(), timeout=1.0)
            except Exception:
                out.append(float("inf"))
            else:
                out.append(time.perf_counter() - started)
            stop.wait(0.005)


def run_size(core: str, locator: str, n: int, duration: float, router_pid: int,
             old_rounds: bool = False) -> dict[str, Any]:
    fleet = Child([PY, "-m", "bench.fleet", "--fleet-child", core, str(n)]
                  + (["old"] if old_rounds else []), ready="ready")
    processes = max(1, -(-n // 500))  # one Zenoh session per 500 robots
    per = n // processes
    sims = []
    try:
        for k in range(processes):
            count = per if k < processes - 1 else n - per * (processes - 1)
            sims.append(Child([PY, ROBOTS, "--connect", locator, "--robots",
                               str(count), "--first", str(k * per), "--frames", str(FRAMES),
                               "--rate", str(RATE), "--statics", "2", "--wait-matched", "30",
                               "--duration", str(duration + 4)]))
        for sim in sims:
            sim.wait_line("ready", 120)
        from tf2py import Time
        from tf2py.server.client import BufferClient

        client = BufferClient(core)  # opened (and its first answer had) before the window
        try:
            client.lookup_transform("robot0/base_link", "robot0/map", Time(), timeout=60)
        except Exception as exc:
            print(f"warm-up lookup failed: {exc}", flush=True)
        time.sleep(2.0)  # warm-up: every robot's first messages and statics
        world = [f"robot{i}" for i in range(n)]
        with_frames = last_stats(fleet)
        pid = fleet.popen.pid
        others = [router_pid] + [sim.popen.pid for sim in sims]  # the router, the simulators
        others0 = [cpu_seconds(p) for p in others]
        threads0 = threads_cpu(pid)
        cpu0, t0, stats0 = cpu_seconds(pid), time.monotonic(), last_stats(fleet)
        latencies: list[float] = []
        stop = threading.Event()
        asker = threading.Thread(target=ask_lookups, args=(client, n, stop, latencies))
        asker.start()
        time.sleep(duration)
        stop.set()
        asker.join(30)
        client.close()
        cpu1, t1, stats1 = cpu_seconds(pid), time.monotonic(), last_stats(fleet)
        others1 = [cpu_seconds(p) for p in others]
        threads1 = threads_cpu(pid)
        load = os.getloadavg()[0]
        rss = rss_mib(pid)
        for sim in sims:
            sim.wait_line("sent", duration + 60)
        time.sleep(1.5)  # the fleet drains what is queued
        final = last_stats(fleet)
        sent = sum(int(sim.wait_line("sent").split()[3]) for sim in sims)
    finally:
        for sim in sims:
            sim.stop()
        fleet.stop()
    inserted = final.get("transforms", 0)
    window = stats1.get("transforms", 0) - stats0.get("transforms", 0)
    cores = (cpu1 - cpu0) / (t1 - t0)
    ok = sorted(x for x in latencies if x != float("inf"))
    failed = len(latencies) - len(ok)
    _ = (world, with_frames)
    return {
        "n": n, "processes": processes, "sent": sent, "inserted": inserted,
        "loss": max(0.0, 1 - inserted / sent) if sent else float("nan"),
        "rate": window / (t1 - t0), "cores": cores, "rss_mb": rss,
        "router_cores": (others1[0] - others0[0]) / (t1 - t0),
        "sim_cores": sum(b - a for a, b in zip(others0[1:], others1[1:])) / (t1 - t0),
        "threads_cores": {name: round((threads1[name] - threads0.get(name, 0.0)) / (t1 - t0), 3)
                          for name in threads1},
        "python_threads_cores": {
            name: round((cpu - stats0.get("python_threads_cpu_s", {}).get(name, 0.0)) / (t1 - t0), 3)
            for name, cpu in stats1.get("python_threads_cpu_s", {}).items()},
        "rounds_per_s": (stats1.get("batches", 0) - stats0.get("batches", 0)) / (t1 - t0),
        "server_p99_ms": max((float(st.get("lookup_ms", {}).get("p99", 0.0))
                              for st in window_stats(fleet, stats0, stats1)), default=0.0),
        "load": load, "worst_lag_s": max((float(st.get("worst_lag_s", 0.0))
                                          for st in window_stats(fleet, stats0, stats1)),
                                         default=0.0),
        "us_per_transform": (cpu1 - cpu0) / window * 1e6 if window else float("nan"),
        "dropped": final.get("dropped_by_cause", {}),
        "lookups": len(latencies), "lookup_failures": failed,
        "lookup_rate": len(latencies) / (t1 - t0),
        "p50_ms": ok[len(ok) // 2] * 1e3 if ok else float("nan"),
        "p99_ms": ok[min(len(ok) - 1, int(len(ok) * 0.99))] * 1e3 if ok else float("nan"),
    }


def ingest_only(run: Run, sizes: list[int], seconds: float) -> None:
    """The fleet's own cost without Zenoh: N robots' samples (rmw_zenoh keys, CDR) handed to
    the ingest as Zenoh's callback would, one 20 Hz cycle after another, as fast as it goes;
    CPU of this process per transform (classify + queue + decode + prefix + batch insert)."""
    from simulators.fleet_robots import Template, data_key, robot_frames
    from tf2py import Buffer
    from tf2py.server.fleet.ingest import Ingest
    from tf2py.server.fleet.slots import RobotSlots

    parents, children = robot_frames(FRAMES)
    table = run.table(f"ingest only (no Zenoh): {FRAMES} transforms per sample, one thread inserting",
                      ["N robots", "transforms/s", "µs CPU per transform", "on_sample µs",
                       "ingest thread µs", f"vs N={sizes[0]}", "dropped"], [9, 13, 21, 13, 17, 9, 8])
    base = None
    for n in sizes:
        buffer = Buffer(cache_time=10.0)
        ingest = Ingest(buffer, lambda robot: True, RobotSlots(1 << 40), 3600.0, set(),
                        lambda robot, statics, names: None)
        keys = [data_key(0, f"robot{i}", "tf") for i in range(n)]
        template = Template(parents, children, 1.0)
        stamp = 1_700_000_000_000_000_000
        for _ in range(2):  # warm-up: each robot's first sample is decoded the slow way
            stamp += 50_000_000
            payload = template.message(stamp)
            for key in keys:
                ingest.on_sample(key, payload)
            while ingest.queues.pending() or ingest.transforms < len(keys) * FRAMES:
                time.sleep(0.001)
        first = ingest.transforms
        cycles = 0
        # CPU of our code only: the callers' on_sample calls (this thread, timed around them)
        # and the ingest thread (from /proc). Not the waits between cycles: on this VM every
        # wake-up from a sleep is charged hundreds of microseconds of CPU.
        ingest_cpu0 = thread_cpu_seconds(ingest._thread.native_id)
        calls_cpu, wall0 = 0.0, time.monotonic()
        while time.monotonic() - wall0 < seconds:
            stamp += 50_000_000
            payload = template.message(stamp)
            t0 = time.thread_time()
            for key in keys:
                ingest.on_sample(key, payload)
            calls_cpu += time.thread_time() - t0
            cycles += 1
            while ingest.queues.pending():
                time.sleep(0.0005)
        while ingest.queues.pending():
            time.sleep(0.0005)
        time.sleep(0.01)
        wall = time.monotonic() - wall0
        thread_cpu = thread_cpu_seconds(ingest._thread.native_id) - ingest_cpu0
        done = ingest.transforms - first
        ingest.close()
        per = (calls_cpu + thread_cpu) / done * 1e6
        base = base or per
        dropped = ingest.stats()["dropped"]
        table.add(n, f"{done / wall:.0f}", f"{per:.2f}", f"{calls_cpu / done * 1e6:.2f}",
                  f"{thread_cpu / done * 1e6:.2f}", f"{per / base:.2f}", dropped,
                  n=n, rate=done / wall, us_per_transform=per, dropped=dropped)


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench fleet", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10" if run.quick else "10,100,1000")
    parser.add_argument("--duration", type=float, default=2.0 if run.quick else 10.0)
    parser.add_argument("--ingest-only", type=float, metavar="SECONDS", default=None,
                        help="only the ingest, no Zenoh, for SECONDS per size")
    parser.add_argument("--old-rounds", action="store_true",
                        help="the fleet's rounds as before answers-first (for comparison)")
    args = parser.parse_args(argv)
    run.peer("eclipse-zenoh", version_of("eclipse-zenoh"))
    sizes = [int(x) for x in args.sizes.split(",")]
    if args.ingest_only is not None:
        ingest_only(run, sizes, args.ingest_only)
        return
    locator = f"tcp/127.0.0.1:{free_port()}"
    config = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bench-fleet-{os.getpid()}.json5")
    with open(config, "w") as f:
        f.write("{ scouting: { multicast: { enabled: false } } }\n")
    core = f"zenoh://{locator}?domain=0&mode=client&config={config}"
    router = Child([PY, ROBOTS, "--router", locator])
    results = []
    try:
        router.wait_line("ready")
        for n in sizes:
            result = run_size(core, locator, n, args.duration, router.popen.pid,
                              args.old_rounds)
            results.append(result)
            print(json.dumps(result), flush=True)
    finally:
        router.stop()
        os.unlink(config)
    base = results[0]["us_per_transform"] if results else float("nan")
    table = run.table(f"fleet: N robots x {FRAMES} frames x {RATE:.0f} Hz over Zenoh, "
                      f"{args.duration:.0f} s window",
                      ["N", "transforms/s", "loss", "cores", "RSS MiB", "µs/transform",
                       f"vs N={sizes[0]}", "lookups/s", "p50 ms", "p99 ms", "lag s",
                       "sims cores", "router cores", "rounds/s", "server p99 ms", "load"],
                      [6, 13, 8, 6, 8, 13, 8, 10, 8, 8, 7, 11, 13, 9, 14, 6])
    for r in results:
        table.add(r["n"], f"{r['rate']:.0f}", f"{r['loss']:.2%}", f"{r['cores']:.2f}",
                  f"{r['rss_mb']:.0f}", f"{r['us_per_transform']:.2f}",
                  f"{r['us_per_transform'] / base:.2f}", f"{r['lookup_rate']:.0f}",
                  f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}", f"{r['worst_lag_s']:.3f}",
                  f"{r['sim_cores']:.2f}", f"{r['router_cores']:.2f}",
                  f"{r['rounds_per_s']:.0f}", f"{r['server_p99_ms']:.1f}", f"{r['load']:.1f}",
                  **{k: v for k, v in r.items() if not isinstance(v, dict)})
    if run.quick:  # the ingest alone as well: a second figure for the smoke run's seconds
        ingest_only(run, sizes, 1.0)


if __name__ == "__main__":
    if len(sys.argv) in (4, 5) and sys.argv[1] == "--fleet-child":
        sys.exit(fleet_child(sys.argv[2], int(sys.argv[3]), sys.argv[4:] == ["old"]))
    sys.exit("run it as: python -m bench fleet")
