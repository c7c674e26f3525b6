"""bench/kernel.py's memory section: bytes per stored sample, in fresh subprocesses."""

from __future__ import annotations

import json
import subprocess

from bench.harness import PY, REPO
from bench.kernel_trees import header, report

MEMORY_CHILD = r"""
import gc, os, sys, json
import numpy as np
sys.path.insert(0, sys.argv[1])
which, frames, samples = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
PAGE = os.sysconf("SC_PAGE_SIZE")
def rss():
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE
BASE_NS = 1_000_000 * 10**9
PERIOD_NS = 10_000_000
stamps = (BASE_NS + np.arange(samples, dtype=np.int64) * PERIOD_NS)
rows = np.zeros((samples, 7)); rows[:, 0] = np.arange(samples) * 1e-3; rows[:, 6] = 1.0
if which == "tf2py":
    from tf2py import BufferCore, Time
    core = BufferCore(cache_time=2 * samples * PERIOD_NS / 1e9 + 10)
    names = ["f%d" % j for j in range(frames)]
    parents = ["world"] * frames
    batch_rows = np.zeros((frames, 7)); batch_rows[:, 6] = 1.0
    # warm every code path on a throw-away store, so the baseline holds the code's own
    # allocations (imports, caches) and the delta only the stored samples
    warm = BufferCore(cache_time=1000.0)
    for k in range(3):
        warm.set_transforms(parents, names, np.full(frames, stamps[k]), batch_rows, "m")
    warm.lookup_transform("world", "f0", Time())
    del warm
    base = rss()
    # as a listener fills it: one message per period carrying a new sample of every frame
    for k in range(samples):
        batch_rows[:, 0] = rows[k, 0]
        core.set_transforms(parents, names, np.full(frames, stamps[k]), batch_rows, "m")
    core.lookup_transform("world", "f0", Time())
    after = rss()
else:
    import tf_tree
    poses = np.zeros((samples, 7)); poses[:, 0] = 1.0; poses[:, 4] = rows[:, 0]
    small = tf_tree.build([("a", "b")], capacity=16, interp="lerpslerp")
    del small
    base = rss()
    tree = tf_tree.build([("world", "f%d" % j) for j in range(frames)], capacity=samples,
                         interp="lerpslerp")
    for j in range(frames):
        with tree.publisher("f%d" % j, "world") as pub:
            pub.push_many(stamps, poses)
    tree.lookup("world", "f0", int(stamps[-1]))
    after = rss()
print(json.dumps({"bytes": after - base, "samples": frames * samples}))
"""


def memory_of(which, frames, samples):
    out = subprocess.run([PY, "-c", MEMORY_CHILD, str(REPO), which, str(frames),
                          str(samples)], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("memory child (%s) failed:\n%s" % (which, out.stderr))
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return data["bytes"] / data["samples"]


def section_memory(clock):
    frames, samples = (100, 2000) if clock.quick else (100, 10_000)
    header("memory per stored sample: RSS growth in a fresh process, %d frames x %d samples"
           " (tf2py filled as a listener does, %d frames per set_transforms; the peer's"
           " rings hold capacity=%d)" % (frames, samples, frames, samples))
    ours = memory_of("tf2py", frames, samples)
    peer = memory_of("peer", frames, samples)
    report("bytes per stored sample (RSS delta / samples)", ours, peer, target=None, unit="B",
           target_abs=72)


# ------------------------------------------------------------------------------------------


