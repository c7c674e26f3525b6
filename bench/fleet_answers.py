"""Answers first: how late the fleet's lookups are while its ingest runs flat out (in process).

    python -m bench fleet_answers [--robots 1000] [--seconds 5] [--variants old,32nogate,32,16]
    python -m bench fleet_answers --quick      (200 robots, 1 s, old and 32)

One Buffer, the fleet's Ingest fed N robots' samples (50 transforms each, rmw_zenoh's CDR) as
fast as it inserts them (the queues kept full), and one thread asking cross-robot lookups the
two ways the fleet's BufferServer asks them, alternately: ``lookup_transform`` with no wait
(the kernel's lookup) and ``wait_for_transform_async`` + ``result()`` (a goal with a timeout:
checked and indexed under the Buffer's lock). Both through the fleet's ``AnsweringBuffer``.
Per variant (``old``: one kernel call per round of up to 4 096 samples and no gate, as before
answers-first; ``K``: rounds of K samples' bytes with the gate; ``Knogate``: without it):
lookup latency p50 / p99 / max of each kind, the ingest's transforms/s and how often it waited.
"""

from __future__ import annotations

import argparse
import random
import threading
import time

from bench.harness import Run, load_average, percentile

TITLE = "fleet: answers while ingesting"
FRAMES = 50


def _pct(values: list[float], q: float) -> float:
    return percentile(values, q * 100) * 1e3


def run_variant(n: int, seconds: float, chunk: int, gate_on: bool) -> dict[str, float]:
    """One variant: lookups' latencies (ms) and the ingest's rate while it runs flat out."""
    from simulators.fleet_robots import Template, data_key, robot_frames
    from tf2py import Buffer, Time
    from tf2py.server.fleet.answers import AnswerGate, AnsweringBuffer
    from tf2py.server.fleet.ingest import Ingest
    from tf2py.server.fleet.slots import RobotSlots
    from tf2py.server.fleet.world import WorldStatic, world_transforms

    buffer = Buffer(cache_time=10.0)
    buffer.set_transforms(world_transforms(
        [WorldStatic("world", f"robot{i}/map", (float(i), 0, 0, 0, 0, 0, 1)) for i in range(n)]),
        "world", True)
    gate = AnswerGate(max_yield_s=0.25 if gate_on else 0.0)
    ingest = Ingest(buffer, lambda robot: True, RobotSlots(1 << 40), 3600.0, set(),
                    lambda robot, statics, names: None, gate=gate, chunk_bytes=chunk * 4800)
    if chunk >= 4096:  # "old": rounds as before answers-first
        ingest.chunk_samples = 4096
    view = AnsweringBuffer(buffer, gate)
    keys = [data_key(0, f"robot{i}", "tf") for i in range(n)]
    template = Template(*robot_frames(FRAMES), 1.0)
    stop = threading.Event()
    stamp = [time.time_ns() - 5_000_000_000]

    def produce() -> None:
        while not stop.is_set():
            if ingest.queues.pending() > n:  # keep about two cycles queued: flat out
                time.sleep(0.0005)
                continue
            stamp[0] += 50_000_000
            payload = template.message(stamp[0])
            for k, key in enumerate(keys):
                ingest.on_sample(key, payload)
                if k % 16 == 15:  # Zenoh's threads hand the GIL back between samples
                    time.sleep(0)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    for i in range(n):  # every robot's frames exist
        while not buffer.can_transform("world", f"robot{i}/link_{FRAMES - 2}", Time()):
            time.sleep(0.01)
    direct: list[float] = []
    waited: list[float] = []

    def ask(out: list[float], wait: bool, seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            a, b = rng.randrange(n), rng.randrange(n)
            target = f"robot{a}/link_{rng.randrange(1, FRAMES - 1)}"
            source = f"robot{b}/base_link"
            started = time.perf_counter()
            if wait:
                view.wait_for_transform_async(target, source, Time()).result(10)
            else:
                view.lookup_transform(target, source, Time())
            out.append(time.perf_counter() - started)
            time.sleep(rng.uniform(0.0005, 0.0015))  # not in step with the rounds

    t0, tf0, batches0 = time.monotonic(), ingest.transforms, ingest.batches
    askers = [threading.Thread(target=ask, args=(direct, False, 7)),
              threading.Thread(target=ask, args=(waited, True, 8))]
    for asker in askers:
        asker.start()
    time.sleep(seconds)
    wall = time.monotonic() - t0
    rate = (ingest.transforms - tf0) / wall
    rounds = ingest.batches - batches0
    stop.set()
    for asker in askers:
        asker.join(10)
    producer.join(5)
    ingest.close()
    return {"direct_p50": _pct(direct, 0.5), "direct_p99": _pct(direct, 0.99),
            "direct_max": _pct(direct, 1.0), "waited_p50": _pct(waited, 0.5),
            "waited_p99": _pct(waited, 0.99), "waited_max": _pct(waited, 1.0),
            "lookups": len(direct) + len(waited), "rate": rate, "rounds_per_s": rounds / wall,
            "yields": gate.yields, "dropped": int(ingest.stats()["dropped"])}


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench fleet_answers",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--robots", type=int, default=200 if run.quick else 1000)
    parser.add_argument("--seconds", type=float, default=1.0 if run.quick else 5.0)
    parser.add_argument("--variants", default="old,32" if run.quick else "old,32nogate,32,16")
    args = parser.parse_args(argv)
    table = run.table(
        f"lookups while the ingest runs flat out: {args.robots} robots x {FRAMES} frames",
        ["variant", "direct p50/p99/max ms", "waited p50/p99/max ms", "lookups", "tf/s",
         "rounds/s", "ingest waits", "load"], [10, 24, 24, 8, 10, 9, 13, 16])
    for variant in args.variants.split(","):
        if variant == "old":
            chunk, gate_on = 1 << 20, False
        else:
            gate_on = not variant.endswith("nogate")
            chunk = int(variant.removesuffix("nogate"))
        r = run_variant(args.robots, args.seconds, chunk, gate_on)
        table.add(variant, f"{r['direct_p50']:.2f} / {r['direct_p99']:.2f} / {r['direct_max']:.1f}",
                  f"{r['waited_p50']:.2f} / {r['waited_p99']:.2f} / {r['waited_max']:.1f}",
                  r["lookups"], f"{r['rate']:.0f}", f"{r['rounds_per_s']:.0f}",
                  r["yields"] if gate_on else "-", load_average(), variant=variant, **r)
