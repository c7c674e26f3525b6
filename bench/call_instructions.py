"""Instructions per call of the store's hot calls, counted by valgrind's callgrind, for two
builds side by side (before and after a change), on machines whose timings cannot be trusted.

    python -m bench call_instructions [--before PYTHON] [--calls 20000]

Each workload (a depth-3 chain of 1 000 samples per link at 100 Hz) runs in a child of each
Python given (this one, and ``--before``: another venv's python with an older tf2py
installed) under callgrind, twice: with ``--calls`` calls and with none; the difference over
the calls is the instructions per call of the whole process, interpreter included (a Python
wrapper's cost counts, as it does for a user). Exact and repeatable (``PYTHONHASHSEED=0``);
not time: a cache miss costs more than an add. Needs ``valgrind`` on PATH.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

if __package__:  # the worker runs as a script (under callgrind), without the harness
    from bench.harness import Missing, Run

WORKLOADS = {
    "core.lookup_transform depth 3, between samples": "core_lookup",
    "same through a Python method over the kernel's lookup (the wrapper of e93c0a3)": "core_wrapped",
    "core.lookup_transform depth 3, time 0": "core_latest",
    "core.can_transform depth 3": "core_can",
    "core.set_transform (prebuilt message), steady stream": "core_set",
    "Buffer.lookup_transform depth 3, between samples": "buffer_lookup",
    "Buffer.can_transform depth 3": "buffer_can",
    "Buffer.set_transform (prebuilt message), steady stream": "buffer_set",
    "core.lookup_transforms, per stamp (1 000 sorted stamps)": "core_batch",
    "make_transform + core.set_transform, per sample": "core_make",
    "transform-tree Publisher.push, per sample (the peer)": "peer_push",
}


def workload(name: str, calls: int, prepared: int) -> None:
    """In the child: build the chain and ``prepared`` messages, then ``calls`` calls."""
    import numpy as np

    import tf2py

    ns = 10**9
    cls = tf2py.Buffer if name.startswith("buffer") else tf2py.BufferCore
    store = cls(cache_time=10.0)
    stamps = (100 * ns + np.arange(1000) * 10_000_000).astype(np.int64)
    rows = np.zeros((1000, 7))
    rows[:, 0] = np.arange(1000) * 0.01
    rows[:, 6] = 1.0
    links = [("map", "odom"), ("odom", "base"), ("base", "cam")]
    for parent, child in links:
        store.set_transforms([parent] * 1000, [child] * 1000, stamps, rows, "bench")
    t = 105.0031
    if name == "peer_push":
        import tf_tree

        tree = tf_tree.build([("map", "odom")], capacity=1024, interp="lerpslerp")
        push = tree.publisher("odom", "map").push
        items = [(110 * ns + k * 10_000_000, (1.0, 0.0, 0.0, 0.0, k * 0.01, 0.0, 0.0))
                 for k in range(prepared)]
        for stamp, pose in items[:calls]:
            push(stamp, pose)
    elif name.endswith("_make"):
        make, set_transform = tf2py.make_transform, store.set_transform
        items = [((k * 0.01, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0),
                  tf2py.Time.from_nanoseconds(110 * ns + k * 10_000_000)) for k in range(prepared)]
        for xyz, q, stamp in items[:calls]:
            set_transform(make("map", "odom", xyz, q, stamp), "bench")
    elif name.endswith("_set"):
        messages = [tf2py.make_transform("map", "odom", (k * 0.01, 0.0, 0.0),
                                         stamp=tf2py.Time.from_nanoseconds(110 * ns + k * 10_000_000))
                    for k in range(prepared)]
        for m in messages[:calls]:
            store.set_transform(m, "bench")
    elif name.endswith("_lookup"):
        for _ in range(calls):
            store.lookup_transform("map", "cam", t)
    elif name.endswith("_wrapped"):  # the shape of BufferCore.lookup_transform at e93c0a3
        stamped_type = tf2py.TransformStamped

        def lookup_transform(self, target_frame, source_frame, time):
            result = self.kernel.lookup_transform(target_frame, source_frame, time)
            if result.__class__ is stamped_type:
                return result
            raise RuntimeError(result)

        for _ in range(calls):
            lookup_transform(store, "map", "cam", t)
    elif name.endswith("_latest"):
        for _ in range(calls):
            store.lookup_transform("map", "cam", 0)
    elif name.endswith("_can"):
        for _ in range(calls):
            store.can_transform("map", "cam", t)
    elif name.endswith("_batch"):
        times = np.linspace(101.0, 109.0, 1000)
        for _ in range(calls // 1000):
            store.lookup_transforms("map", "cam", times)


def instructions(python: str, name: str, calls: int, prepared: int, tmp: str) -> int | None:
    """The process's instruction count, or None when the workload failed in that build (a
    call it does not have)."""
    out = os.path.join(tmp, f"{name}-{calls}-{abs(hash(python))}.out")
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", python, __file__,
         "--worker", name, str(calls), str(prepared)],
        capture_output=True, text=True, cwd=tmp,
        env={**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"})
    if run.returncode:
        return None
    for line in run.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split(":")[-1])
    raise RuntimeError(f"no count from callgrind: {run.stderr[-500:]}")


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench call_instructions",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="another venv's python, with the tf2py to compare")
    parser.add_argument("--calls", type=int, default=2_000 if run.quick else 20_000)
    parser.add_argument("--only", default="core_lookup" if run.quick else "",
                        help="workloads to run, comma-separated (e.g. core_set,buffer_set); "
                        "--quick: core_lookup)")
    opts = parser.parse_args(argv)
    chosen = {t: n for t, n in WORKLOADS.items() if not opts.only or n in opts.only.split(",")}
    if not shutil.which("valgrind"):
        raise Missing("needs valgrind (e.g. apt install valgrind)")
    pythons = [("now", sys.executable)] + ([("before", opts.before)] if opts.before else [])
    table = run.table(f"instructions per call, whole process ({opts.calls} calls; callgrind)",
                      ["call", *(label for label, _ in pythons), *(["ratio"] if opts.before else [])],
                      [58] + [10] * (len(pythons) + bool(opts.before)))
    with tempfile.TemporaryDirectory() as tmp:
        for title, name in chosen.items():
            for _, python in pythons:
                # Once outside valgrind first: a stale .pyc compiled inside one of the two
                # counted runs would add millions of instructions to it. A workload that
                # fails in a build (a call it lacks, a peer not installed) shows as a dash.
                subprocess.run([python, __file__, "--worker", name, "0", "1"], cwd=tmp,
                               capture_output=True, check=False)
            per: list[float | None] = []
            for _, python in pythons:
                full = instructions(python, name, opts.calls, opts.calls, tmp)
                base = instructions(python, name, 0, opts.calls, tmp)
                per.append(None if full is None or base is None else (full - base) / opts.calls)
            cells = ["\u2014" if p is None else f"{p:.0f}" for p in per]
            if opts.before:
                cells.append("\u2014" if None in per else f"{per[0] / per[1]:.2f}")  # type: ignore[operator]
            table.add(title, *cells, **{label: p for (label, _), p in zip(pythons, per)})


if __name__ == "__main__":  # the worker, run under callgrind as a script (by either Python)
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        workload(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit("run it as: python -m bench call_instructions")
