"""Instructions per stored row, counted by valgrind's callgrind: tf2py's inserts against
transform-tree's in the same run, for machines whose timings cannot be trusted.

    python -m bench insert_instructions [--rows 1000] [--batches 10]

A steady stream of one frame (100 Hz, a 10 s window already full, so every row prunes one):
``set_transforms(parent, child, stamps, (N, 7) rows)`` and the same rows given as name lists,
against ``Publisher.push_many``. Each workload runs twice under callgrind (warm-up batches
only, then the measured batches too); the difference, divided by the measured rows, is the
instructions executed per row inside the store's compiled code and libc's memcpy/memmove
(the interpreter's own work, the same for both, is left out). Needs ``valgrind`` on PATH.
Counts are exact and repeatable on a loaded VM where timings swing 40x; they are not time
(a cache miss costs more than an add), so the timed ``bench/kernel.py`` remains the figure of
record on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

if __package__:  # the worker runs as a script (under callgrind), without the harness
    from bench.harness import Missing, Run

NS = 10**9
PERIOD_NS = 10_000_000
WARMUP = 2
OBJECTS = re.compile(r"_kernel_ext|tf_tree/_core|memcpy_avx|memmove_avx")


def workload(which: str, rows: int, batches: int) -> None:
    """Run in a child under callgrind: WARMUP + batches batches of ``rows`` rows."""
    import numpy as np

    def batch(k: int):
        ks = np.arange(k, k + rows)
        values = np.zeros((rows, 7))
        values[:, 0] = ks * 1e-3
        values[:, 5] = np.sin(ks * 1e-3)
        values[:, 6] = np.cos(ks * 1e-3)
        return (1000 * NS + ks * PERIOD_NS).astype(np.int64), values

    data = [batch(k * rows) for k in range(WARMUP + batches)]
    if which == "peer":
        import tf_tree

        tree = tf_tree.build([("world", "robot")], capacity=rows, interp="lerpslerp")
        pub = tree.publisher("robot", "world")
        poses = [(s, np.ascontiguousarray(v[:, [6, 3, 4, 5, 0, 1, 2]])) for s, v in data]
        for s, p in poses:
            pub.push_many(s, p)
        return
    from tf2py import BufferCore

    core = BufferCore(cache_time=rows * PERIOD_NS / NS)
    if which == "trajectory":
        for s, v in data:
            core.set_transforms("world", "robot", s, v, "bench")
    else:
        parents, children = ["world"] * rows, ["robot"] * rows
        for s, v in data:
            core.set_transforms(parents, children, s, v, "bench")


def count(which: str, rows: int, batches: int, tmp: str) -> int:
    """Instructions in the stores' code and memcpy for one run of the workload."""
    out = os.path.join(tmp, f"{which}-{batches}.out")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    sys.executable, __file__, "--worker", which, str(rows), str(batches)],
                   check=True, capture_output=True, env={**os.environ, "PYTHONHASHSEED": "0",
                        "OPENBLAS_NUM_THREADS": "1"})
    report = subprocess.run(["callgrind_annotate", "--threshold=100", out], check=True,
                            capture_output=True, text=True).stdout
    total = 0
    for line in report.splitlines():
        if OBJECTS.search(line):
            total += int(line.split()[0].replace(",", ""))
    return total


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench insert_instructions",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100 if run.quick else 1000,
                        help="rows per batch (the window)")
    parser.add_argument("--batches", type=int, default=2 if run.quick else 10,
                        help="measured batches")
    opts = parser.parse_args(argv)
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        raise Missing("needs valgrind (e.g. apt install valgrind)")
    # --quick: one of tf2py's workloads, no peer (each counted run is seconds under valgrind)
    kinds = ("trajectory",) if run.quick else ("peer", "trajectory", "lists")
    measured = opts.rows * opts.batches
    per_row = {}
    with tempfile.TemporaryDirectory() as tmp:
        for which in kinds:
            base = count(which, opts.rows, 0, tmp)
            full = count(which, opts.rows, opts.batches, tmp)
            per_row[which] = (full - base) / measured
    peer = per_row.get("peer")
    table = run.table(f"instructions per stored row (steady stream, {opts.rows}-row window, "
                      f"{measured} rows measured; compiled code + memcpy)",
                      ["store call", "instructions", "ratio"], [52, 13, 6])
    if peer is not None:
        table.add("transform-tree Publisher.push_many", f"{peer:.0f}", "", instructions=peer)
    for which, name in (("trajectory", "set_transforms(parent, child, (N, 7) array)"),
                        ("lists", "set_transforms(parents, children, rows)")):
        if which in per_row:
            ratio = per_row[which] / peer if peer else None
            table.add("tf2py " + name, f"{per_row[which]:.0f}",
                      "" if ratio is None else f"{ratio:.2f}", instructions=per_row[which],
                      ratio=ratio)


if __name__ == "__main__":  # the worker, run under callgrind as a script
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        workload(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit("run it as: python -m bench insert_instructions")
