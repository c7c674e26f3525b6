"""Benchmark of the transform store (BufferCore) against pytransform3d's
TemporalTransformManager on the same trees, in the same run.

    python -m bench buffer [--quick]

Trees: a chain root f0 <- f1 <- ... <- fD (depth D links), 10 s of history at 100 Hz per
link (1001 samples), a slowly turning rotation per link. Every figure is the best of several
repeats (the machine is shared, the minimum is the least disturbed), printed as a cost per
operation or a rate, with pytransform3d's figure and the ratio (>1 means tf2py is faster).
"""

from __future__ import annotations

import argparse
import gc
import math
import time
import tracemalloc

import numpy as np

from bench.harness import Missing, Run, Table, best_of_interleaved, best_per_op
from tf2py import Time, make_transform
from tf2py.buffer.core import BufferCore

NS = 1_000_000_000
BASE_NS = 1_700_000_000 * NS
PERIOD_NS = 10_000_000  # 100 Hz
SAMPLES = 1001  # 10 s inclusive
LATEST_NS = BASE_NS + (SAMPLES - 1) * PERIOD_NS


def names(depth):
    return ["f%d" % i for i in range(depth + 1)]


def link_values(k, i):
    """(tx, ty, tz, qx, qy, qz, qw) of link i at sample k: a translation and a yaw that
    drift with time, plus a fixed roll so that every component is non-trivial."""
    yaw = 0.002 * k + 0.3 * i
    roll = 0.1 * (i + 1)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    # q = yaw(z) * roll(x)
    return (1.0 + 0.001 * k, 0.5 * i, 0.1, cy * sr, sy * sr, sy * cr, cy * cr)


def build_core(depth):
    core = BufferCore()
    frames = names(depth)
    for k in range(SAMPLES):
        stamp = BASE_NS + k * PERIOD_NS
        for i in range(depth):
            core.set_transform_values(frames[i], frames[i + 1], stamp, *link_values(k, i), "bench")
    return core


def build_pt3d(depth):
    from pytransform3d.transform_manager import NumpyTimeseriesTransform, TemporalTransformManager

    manager = TemporalTransformManager(strict_check=False, check=False)
    frames = names(depth)
    times = (BASE_NS + np.arange(SAMPLES) * PERIOD_NS - BASE_NS) / NS  # seconds from BASE
    for i in range(depth):
        rows = np.array([link_values(k, i) for k in range(SAMPLES)])
        # pytransform3d's pq is (x, y, z, qw, qx, qy, qz).
        pqs = np.column_stack((rows[:, :3], rows[:, 6], rows[:, 3:6]))
        manager.add_transform(frames[i + 1], frames[i], NumpyTimeseriesTransform(times, pqs))
    return manager


_TABLE: dict[str, Table] = {}


def row(name, ours, theirs, unit, target=None, lower_is_better=True):
    """Record and print one figure; ``theirs`` may be None (no equivalent)."""
    if theirs is None:
        ratio = "n/a"
    elif lower_is_better:
        ratio = "%.1fx" % (theirs / ours)
    else:
        ratio = "%.1fx" % (ours / theirs)
    met = ""
    if target is not None:
        ok = ours <= target if lower_is_better else ours >= target
        met = ("met" if ok else "NOT met") + " (target %s %s)" % (
            "<=" if lower_is_better else ">=",
            fmt(target, unit),
        )
    _TABLE["t"].add(name, fmt(ours, unit), "-" if theirs is None else fmt(theirs, unit), ratio, met,
                    ours=ours, peer=theirs, unit=unit)


def fmt(value, unit):
    if unit == "us":
        return "%.2f us" % (value * 1e6)
    if unit == "/s":
        return "%.0f /s" % value
    if unit == "B":
        return "%.1f B" % value
    return str(value)


def bench_single(quick):
    repeat = 4 if quick else 15
    number = 2000 if quick else 4000
    targets = {
        (3, "between"): 10e-6,
        (3, "zero"): 6e-6,
        (10, "between"): 30e-6,
        (10, "zero"): 30e-6,
        (10, "back"): 30e-6,
    }
    labels = {
        "between": "between the two newest samples",
        "zero": "at time 0 (latest)",
        "back": "5 s back",
    }
    for depth in (1, 3, 10):
        core = build_core(depth)
        manager = build_pt3d(depth)
        frames = names(depth)
        root, leaf = frames[0], frames[-1]
        cases = {
            "between": LATEST_NS - PERIOD_NS // 2,
            "zero": 0,
            "back": LATEST_NS - 5 * NS - PERIOD_NS // 2,
        }
        stamps = {case: Time.from_nanoseconds(t_ns) for case, t_ns in cases.items()}
        fns = [
            (lambda t=t: core.lookup_transform(root, leaf, t)) for t in stamps.values()
        ]
        between = stamps["between"]
        fns.append(lambda: core.can_transform(root, leaf, between))
        ours = best_of_interleaved(fns, number, repeat)
        for k, (case, t_ns) in enumerate(cases.items()):
            t_pt = ((LATEST_NS if t_ns == 0 else t_ns) - BASE_NS) / NS
            theirs = best_per_op(
                lambda: manager.get_transform_at_time(leaf, root, t_pt), max(20, number // 100), 3
            )
            row(
                "lookup_transform depth %d, %s" % (depth, labels[case]),
                ours[k],
                theirs,
                "us",
                targets.get((depth, case), 30e-6 if depth == 10 else None),
            )
        row("can_transform depth %d" % depth, ours[-1], None, "us")
        # Sanity: both libraries agree on the transform.
        ours_m = core.lookup_transform(root, leaf, between).transform.as_matrix()
        theirs_m = manager.get_transform_at_time(leaf, root, (cases["between"] - BASE_NS) / NS)
        assert np.allclose(ours_m, theirs_m, atol=1e-6), (ours_m, theirs_m)


def bench_inserts(quick):
    count = 20000 if quick else 100000
    repeat = 3 if quick else 5
    stamps = [BASE_NS + k * PERIOD_NS for k in range(count)]
    rows = [link_values(k, 0) for k in range(count)]
    messages = [
        make_transform("odom", "base_link", r[:3], r[3:], Time.from_nanoseconds(s))
        for s, r in zip(stamps, rows)
    ]

    def run_messages():
        core = BufferCore()
        st = core.set_transform
        t0 = time.perf_counter()
        for m in messages:
            st(m, "bench")
        return time.perf_counter() - t0

    def run_values():
        core = BufferCore()
        sv = core.set_transform_values
        t0 = time.perf_counter()
        for s, r in zip(stamps, rows):
            sv("odom", "base_link", s, r[0], r[1], r[2], r[3], r[4], r[5], r[6], "bench")
        return time.perf_counter() - t0

    array_rows = np.array(rows)
    array_stamps = np.array(stamps, dtype=np.int64)
    batch = 50  # a /tf message of 50 transforms, as a listener inserts it

    def run_batches():
        core = BufferCore()
        t0 = time.perf_counter()
        for start in range(0, count, batch):
            end = start + batch
            core.set_transforms(
                ["odom"] * batch,
                ["base_link"] * batch,
                array_stamps[start:end],
                array_rows[start:end],
                "bench",
            )
        return time.perf_counter() - t0

    runs = (
        ("set_transform (TransformStamped) inserts", run_messages),
        ("set_transform_values inserts", run_values),
        ("set_transforms inserts (50 rows per call)", run_batches),
    )
    best = [float("inf")] * len(runs)
    for _ in range(repeat):  # interleaved, as in bench_single
        for k, (_, fn) in enumerate(runs):
            best[k] = min(best[k], fn())
    for (name, _), elapsed in zip(runs, best):
        row(name, count / elapsed, None, "/s", 300_000, lower_is_better=False)


def bench_insert_rows(quick):
    """Per-row cost of the listener's insert: one call per message of N transforms, each
    row for a different child frame (``c0..c{N-1}`` under ``world``), stamps 10 ms apart
    per message, at steady state (every cache already holds 10 s, so each row also prunes
    one sample). Values and stamps are read-only arrays from ``np.frombuffer``, as the
    listener passes them; ``Buffer`` is what the listener fills (lock + wrapper included).
    N = 1 also shows ``set_transform_values`` (what the listener calls for one transform).
    """
    from tf2py.buffer.buffer import Buffer

    messages = 400 if quick else 2000
    repeat = 3 if quick else 7
    warm = SAMPLES  # 10 s at 100 Hz: the caches are full before timing

    def make(n, count, first):
        values = []
        stamps = []
        for m in range(count):
            k = first + m
            values.append(
                np.frombuffer(
                    np.array([link_values(k, i) for i in range(n)], dtype="<f8").tobytes(),
                    dtype="<f8",
                ).reshape(n, 7)
            )
            stamps.append(
                np.frombuffer(
                    np.full(n, BASE_NS + k * PERIOD_NS, dtype="<i8").tobytes(), dtype="<i8"
                )
            )
        return values, stamps

    def case(cls, n, single):
        store = cls()
        parents = ["world"] * n
        children = ["c%d" % i for i in range(n)]
        values, stamps = make(n, warm, 0)
        for v, s in zip(values, stamps):
            store.set_transforms(parents, children, s, v, "bench")
        state = {"next": warm}

        def run():
            values, stamps = make(n, messages, state["next"])
            state["next"] += messages
            gc.disable()
            if single:
                sv = store.set_transform_values
                rows = [v[0].tolist() for v in values]
                firsts = [int(s[0]) for s in stamps]
                t0 = time.perf_counter()
                for r, s in zip(rows, firsts):
                    sv("world", "c0", s, *r, "bench")
                elapsed = time.perf_counter() - t0
            else:
                st = store.set_transforms
                t0 = time.perf_counter()
                for v, s in zip(values, stamps):
                    st(parents, children, s, v, "bench")
                elapsed = time.perf_counter() - t0
            gc.enable()
            return elapsed / (messages * n)

        return run

    cases = []
    for cls in (BufferCore, Buffer):
        cases.append(("%s.set_transform_values, N=1" % cls.__name__, case(cls, 1, True)))
        for n in (1, 50, 100):
            cases.append(("%s.set_transforms, N=%d, per row" % (cls.__name__, n), case(cls, n, False)))
    best = [float("inf")] * len(cases)
    for _ in range(repeat):
        for k, (_, fn) in enumerate(cases):
            best[k] = min(best[k], fn())
    for (name, _), per_row in zip(cases, best):
        row(name, per_row, None, "us")


def bench_batch(quick):
    from pytransform3d.transform_manager import TemporalTransformManager  # noqa: F401

    n = 100_000
    repeat = 3 if quick else 9
    rng = np.random.default_rng(0)
    for depth in (3, 10):
        core = build_core(depth)
        manager = build_pt3d(depth)
        frames = names(depth)
        root, leaf = frames[0], frames[-1]
        offsets = rng.uniform(0.0, 10.0, n)
        times = (BASE_NS + offsets * NS) / NS  # float seconds (ns resolution ~0.2 us)
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            ours_m = core.lookup_transforms(root, leaf, times)
            best = min(best, time.perf_counter() - t0)
        theirs_best = float("inf")
        for _ in range(max(1, repeat - 2)):
            t0 = time.perf_counter()
            theirs_m = manager.get_transform_at_time(leaf, root, offsets)
            theirs_best = min(theirs_best, time.perf_counter() - t0)
        assert np.allclose(ours_m, theirs_m, atol=1e-5)
        row(
            "lookup_transforms N=100000 depth %d" % depth,
            n / best,
            n / theirs_best,
            "/s",
            3_000_000 if depth == 3 else None,
            lower_is_better=False,
        )


def bench_memory(quick):
    frames = 100 if quick else 1000
    samples = 1000
    stamps = BASE_NS + np.arange(samples, dtype=np.int64) * PERIOD_NS
    values = np.array([link_values(k, 0) for k in range(samples)])
    parents = ["root"] * samples
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    core = BufferCore()
    for f in range(frames):
        core.set_transforms(parents, ["frame%d" % f] * samples, stamps, values, "bench")
    ours = (tracemalloc.get_traced_memory()[0] - before) / (frames * samples)
    tracemalloc.stop()
    del core
    gc.collect()

    from pytransform3d.transform_manager import NumpyTimeseriesTransform, TemporalTransformManager

    times = (stamps - BASE_NS) / NS
    pqs = np.column_stack((values[:, :3], values[:, 6], values[:, 3:6]))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    manager = TemporalTransformManager(strict_check=False, check=False)
    for f in range(frames):
        manager.add_transform("frame%d" % f, "root", NumpyTimeseriesTransform(times.copy(), pqs.copy()))
    theirs = (tracemalloc.get_traced_memory()[0] - before) / (frames * samples)
    tracemalloc.stop()
    del manager
    row("memory per stored sample (%d frames x %d)" % (frames, samples), ours, theirs, "B", 100)


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench buffer", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", choices=("single", "inserts", "insert-rows", "batch", "memory"), help="run one group"
    )
    args = parser.parse_args(argv)
    try:
        import pytransform3d
    except ImportError:
        raise Missing("needs the peer pytransform3d (pip install pytransform3d, the bench extra)") from None
    run.peer("pytransform3d", pytransform3d.__version__)
    _TABLE["t"] = run.table("tf2py's store against pytransform3d (ratio > 1: tf2py faster)",
                            ["figure", "tf2py", "pytransform3d", "ratio", "target"],
                            [44, 14, 16, 8, 10])
    groups = {
        "single": bench_single,
        "inserts": bench_inserts,
        "insert-rows": bench_insert_rows,
        "batch": bench_batch,
        "memory": bench_memory,
    }
    for name, fn in groups.items():
        if args.only in (None, name):
            fn(run.quick)

