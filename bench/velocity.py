"""lookup_velocity against lookup_transform on the same chain and times, in one run.

    python -m bench velocity            # ~30 s
    python -m bench velocity --quick    # seconds

Chain ``f0 <- f1 <- f2 <- f3`` (3 moving links, 1000 samples each at 100 Hz, stamps from
1 000 000 s), queried between samples: ``lookup_velocity("f3", "f0", t, 0.1)`` against
``lookup_transform("f0", "f3", t)`` (issue 17's target: ratio <= 2.0), on a ``BufferCore``
and on a ``Buffer`` (its lock taken); the full form (a reference frame and point) and
``tf2_compatible=True`` for information. Batch: ``lookup_velocities`` over N times, per row,
against ``lookup_transforms`` over the same times, per row.

Every figure is the median over repeats of the time per call of a loop (the garbage collector
paused, as ``timeit`` does); the repeats of both sides of a ratio are interleaved and the
ratio is the median of the per-repeat ratios, steadier on a shared machine.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from bench.harness import Run, back_to_back
from tf2py import Buffer
from tf2py.buffer.core import BufferCore

T0 = 1_000_000.0
SAMPLES = 1000
DEPTH = 3


def fill(core: BufferCore) -> None:
    """DEPTH moving links, SAMPLES each at 100 Hz, every link turning and moving."""
    stamps = (T0 * 1e9 + np.arange(SAMPLES) * 10_000_000).astype(np.int64)
    for link in range(DEPTH):
        t = np.arange(SAMPLES) * 0.01
        yaw = 0.3 * t + link
        rows = np.zeros((SAMPLES, 7))
        rows[:, 0] = np.cos(0.5 * t + link)
        rows[:, 1] = 0.2 * t
        rows[:, 5] = np.sin(yaw / 2)
        rows[:, 6] = np.cos(yaw / 2)
        names = [f"f{link}"] * SAMPLES, [f"f{link + 1}"] * SAMPLES
        core.set_transforms(names[0], names[1], stamps, rows, "bench")


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench velocity",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=0, help="repeats per figure")
    args = parser.parse_args(argv)
    number = 2000 if run.quick else 20000
    repeat = args.repeat or (5 if run.quick else 9)
    batch = 10_000

    rows: list[tuple[str, float, str, float, float, str]] = []
    at = float(T0 + 5.005)  # between samples
    for name, core in (("BufferCore", BufferCore()), ("Buffer", Buffer())):
        fill(core)
        cases = [
            ("lookup_velocity", lambda c=core: c.lookup_velocity("f3", "f0", at, 0.1)),
            ("lookup_velocity, full form", lambda c=core: c.lookup_velocity(
                "f3", "f0", at, 0.1, "f1", (0.5, -0.2, 1.0), "f2")),
            ("lookup_velocity, tf2_compatible", lambda c=core: c.lookup_velocity(
                "f3", "f0", at, 0.1, tf2_compatible=True)),
        ]
        def transform(c: BufferCore = core) -> object:
            return c.lookup_transform("f0", "f3", at)

        for label, call in cases:
            ours, peer, ratio = back_to_back(call, transform, number, repeat)
            rows.append((f"{name}.{label}", ours, "lookup_transform", peer, ratio,
                         "<= 2.0" if label == "lookup_velocity" else ""))
        stamps = T0 + 1.0 + np.sort(np.random.default_rng(2).uniform(0.0, 8.0, batch))
        def velocities(c: BufferCore = core) -> object:
            return c.lookup_velocities("f3", "f0", stamps, 0.1)

        def transforms(c: BufferCore = core) -> object:
            return c.lookup_transforms("f0", "f3", stamps)

        ours, peer, ratio = back_to_back(velocities, transforms, max(1, number // 1000), repeat)
        rows.append((f"{name}.lookup_velocities ({batch} times), per row", ours / batch,
                     "lookup_transforms, per row", peer / batch, ratio, ""))

    table = run.table(f"chain depth {DEPTH}, {SAMPLES} samples/link at 100 Hz; {number} calls x "
                      f"{repeat} repeats", ["figure", "tf2py µs", "against, same run", "µs",
                                            "ratio", "target"], [52, 9, 28, 9, 6, 12])
    for label, ours, peer_label, peer, ratio, target in rows:
        met = "" if not target else (target + (" met" if ratio <= 2.0 else " NOT met"))
        table.add(label, f"{ours * 1e6:.3f}", peer_label, f"{peer * 1e6:.3f}", f"{ratio:.2f}", met,
                  ours_us=ours * 1e6, peer_us=peer * 1e6, ratio=ratio)
    if math.isnan(rows[0][4]):
        raise SystemExit(1)
