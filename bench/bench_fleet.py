"""tf2py fleet under load: N simulated robots x 50 frames x 20 Hz into one fleet process.

    python bench/bench_fleet.py [--sizes 10,100,1000] [--duration 10]
    python bench/bench_fleet.py --ingest-only [SECONDS] [SIZES]   (no Zenoh: the ingest alone)

For each N: a Zenoh router, the fleet (the ``Fleet`` that ``tf2py fleet`` runs, in its own
process, reporting its counters), and a few robot processes (bench/fleet_robots.py) playing
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
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
ROBOTS = os.path.join(HERE, "fleet_robots.py")
FRAMES = 50
RATE = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Child:
    def __init__(self, args: list[str]):
        self.popen = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, start_new_session=True)
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_line(self, prefix: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if line.startswith(prefix):
                    return line
            if self.popen.poll() is not None:
                break
            time.sleep(0.01)
        raise RuntimeError(f"no {prefix!r} from {self.popen.args}: {self.lines[-5:]}")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        self.thread.join(5)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def fleet_child(core: str, n: int) -> int:
    """The fleet process: Fleet (what ``tf2py fleet`` runs) with a world static per robot
    (``world -> robotI/map``, so robots are related), counters on stdout every 0.5 s."""
    from tf2py.server.fleet.service import Fleet
    from tf2py.server.fleet.world import WorldStatic

    world = [WorldStatic("world", f"robot{i}/map", (float(i), 0, 0, 0, 0, 0, 1))
             for i in range(n)]

    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    with Fleet(core, world=world) as fleet:
        print(f"ready {fleet.address}", flush=True)
        while not stop.wait(0.5):
            print("stats " + json.dumps(fleet.stats()), flush=True)
    return 0


def last_stats(child: Child) -> dict:
    for line in reversed(child.lines):
        if line.startswith("stats "):
            return json.loads(line[6:])
    return {}


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


def run_size(core: str, locator: str, n: int, duration: float) -> dict:
    fleet = Child([sys.executable, __file__, "--fleet-child", core, str(n)])
    fleet.wait_line("ready")
    processes = 1 if n <= 10 else 2 if n <= 100 else 4
    per = n // processes
    sims = []
    try:
        for k in range(processes):
            count = per if k < processes - 1 else n - per * (processes - 1)
            sims.append(Child([sys.executable, ROBOTS, "--connect", locator, "--robots",
                               str(count), "--first", str(k * per), "--frames", str(FRAMES),
                               "--rate", str(RATE), "--statics", "2",
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
        rss = rss_mb(pid)
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
        "us_per_transform": (cpu1 - cpu0) / window * 1e6 if window else float("nan"),
        "dropped": final.get("dropped_by_cause", {}),
        "lookups": len(latencies), "lookup_failures": failed,
        "lookup_rate": len(latencies) / (t1 - t0),
        "p50_ms": ok[len(ok) // 2] * 1e3 if ok else float("nan"),
        "p99_ms": ok[min(len(ok) - 1, int(len(ok) * 0.99))] * 1e3 if ok else float("nan"),
    }


def ingest_only(sizes: list[int], seconds: float) -> None:
    """The fleet's own cost without Zenoh: N robots' samples (rmw_zenoh keys, CDR) handed to
    the ingest as Zenoh's callback would, one 20 Hz cycle after another, as fast as it goes;
    CPU of this process per transform (classify + queue + decode + prefix + batch insert)."""
    from fleet_robots import Template, data_key, robot_frames

    from tf2py import Buffer
    from tf2py.server.fleet.ingest import Ingest
    from tf2py.server.fleet.slots import RobotSlots

    parents, children = robot_frames(FRAMES)
    print(f"\ningest only (no Zenoh): {FRAMES} transforms per sample, one thread inserting")
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
        ingest_cpu0 = _thread_cpu(ingest._thread.native_id)
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
        thread_cpu = _thread_cpu(ingest._thread.native_id) - ingest_cpu0
        done = ingest.transforms - first
        ingest.close()
        per = (calls_cpu + thread_cpu) / done * 1e6
        base = base or per
        print(f"  N={n:>5}: {done / wall:>10.0f} transforms/s  {per:6.2f} us CPU per transform "
              f"({calls_cpu / done * 1e6:.2f} on_sample + {thread_cpu / done * 1e6:.2f} ingest "
              f"thread; {per / base:4.2f}x N={sizes[0]}), {ingest.stats()['dropped']} dropped")


def _thread_cpu(native_id: int | None) -> float:
    """CPU seconds (user + system) of one thread of this process, from /proc."""
    with open(f"/proc/self/task/{native_id}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--fleet-child":
        return fleet_child(sys.argv[2], int(sys.argv[3]))
    if len(sys.argv) >= 2 and sys.argv[1] == "--ingest-only":
        sys.path.insert(0, HERE)
        sizes = [int(n) for n in sys.argv[3].split(",")] if len(sys.argv) > 3 else [10, 100, 1000]
        ingest_only(sizes, float(sys.argv[2]) if len(sys.argv) > 2 else 5.0)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--duration", type=float, default=10.0)
    args = parser.parse_args()
    locator = f"tcp/127.0.0.1:{free_port()}"
    config = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bench-fleet-{os.getpid()}.json5")
    with open(config, "w") as f:
        f.write("{ scouting: { multicast: { enabled: false } } }\n")
    core = f"zenoh://{locator}?domain=0&mode=client&config={config}"
    router = Child([sys.executable, ROBOTS, "--router", locator])
    results = []
    try:
        router.wait_line("ready")
        for n in (int(x) for x in args.sizes.split(",")):
            result = run_size(core, locator, n, args.duration)
            results.append(result)
            print(json.dumps(result), flush=True)
    finally:
        router.stop()
        os.unlink(config)
    base = results[0]["us_per_transform"] if results else float("nan")
    print(f"\n{'N':>5} {'tf/s':>9} {'loss':>7} {'cores':>6} {'RSS MB':>7} {'us/tf':>6} "
          f"{'vs N0':>6} {'lookups/s':>9} {'p50 ms':>7} {'p99 ms':>7}")
    for r in results:
        print(f"{r['n']:>5} {r['rate']:>9.0f} {r['loss']:>7.2%} {r['cores']:>6.2f} "
              f"{r['rss_mb']:>7.0f} {r['us_per_transform']:>6.2f} "
              f"{r['us_per_transform'] / base:>6.2f} {r['lookup_rate']:>9.0f} "
              f"{r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
