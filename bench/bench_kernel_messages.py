"""bench_kernel's issue-17 sections: messages built and stored per sample, rows from an
(N, 7) array, and batch lookups on two threads."""

from __future__ import annotations

import threading
from functools import partial

import numpy as np

from kernel_harness import (
    AUTHORITY, BASE_NS, PERIOD_NS, PEER_CAPACITY, NS, Chain, SharedSteps, header, link_rows, pc,
    report, same_matrices,
)
from tf2py import BufferCore, Time, make_transform

try:
    import tf_tree
except ImportError:  # pragma: no cover - bench_kernel reports it
    tf_tree = None


def section_messages(clock):
    header("messages: built and stored per sample, and rows from an (N, 7) array")
    chain = Chain(1)
    parent, child = chain.frames

    def prepare(count):
        steps = chain.prepare_live(count)
        return {"ours": [(Time.from_nanoseconds(stamp), tuple(float(v) for v in rows[0][:3]),
                          tuple(float(v) for v in rows[0][3:])) for stamp, _, rows, _ in steps],
                "peer": [(stamp, poses[0]) for stamp, _, _, poses in steps]}

    shared = SharedSteps(prepare, ("ours", "peer"))

    def run_ours(items, set_transform=chain.core.set_transform):
        t0 = pc()
        for stamp, xyz, q in items:
            set_transform(make_transform(parent, child, xyz, q, stamp), AUTHORITY)
        return pc() - t0 + clock.overhead_ns * len(items)

    def run_peer(items, push=chain.pubs[0].push):
        t0 = pc()
        for stamp, pose in items:
            push(stamp, pose)
        return pc() - t0 + clock.overhead_ns * len(items)

    figs = clock.per_call([(partial(shared.take, who="ours"), run_ours),
                           (partial(shared.take, who="peer"), run_peer)])
    report("make_transform + set_transform vs Publisher.push (per sample)", figs[0], figs[1])

    # One frame's trajectory from numpy: (N, 7) rows, N stamps, one parent and child name.
    n = 1000
    state = {"k": 0}

    def prepare_rows(count):
        out = {"ours": [], "peer": []}
        for _ in range(count):
            ks = np.arange(state["k"], state["k"] + n)
            state["k"] += n
            rows = link_rows(0, ks)
            stamps = (BASE_NS + ks * PERIOD_NS).astype(np.int64)
            poses = np.ascontiguousarray(rows[:, [6, 3, 4, 5, 0, 1, 2]])
            out["ours"].append((stamps, rows))
            out["peer"].append((stamps, poses))
        return out

    core = BufferCore(cache_time=10.0)
    tree = tf_tree.build([("world", "robot")], capacity=PEER_CAPACITY, interp="lerpslerp")
    pub = tree.publisher("robot", "world")
    shared_rows = SharedSteps(prepare_rows, ("ours", "peer"))

    def run_rows_ours(batches):
        t0 = pc()
        for stamps, rows in batches:
            core.set_transforms("world", "robot", stamps, rows, AUTHORITY)
        return pc() - t0 + clock.overhead_ns * len(batches)

    def run_rows_peer(batches):
        t0 = pc()
        for stamps, poses in batches:
            pub.push_many(stamps, poses)
        return pc() - t0 + clock.overhead_ns * len(batches)

    figs = clock.per_call([(partial(shared_rows.take, who="ours"), run_rows_ours),
                           (partial(shared_rows.take, who="peer"), run_rows_peer)])
    report("set_transforms from an (%d, 7) array vs push_many (per row)" % n, figs[0] / n,
           figs[1] / n, target=0.5)
    last = BASE_NS + (state["k"] - 1) * PERIOD_NS
    ours = core.lookup_transforms("world", "robot", np.array([last / NS]))
    same_matrices(ours, tree.plan("world", "robot").at(np.array([last], dtype=np.int64)),
                  "rows from an array")


def section_threads(clock):
    header("lookup_transforms over 200 000 stamps: two threads vs one thread doing both",
           peer="one thread", ours="two")
    chain = Chain(3)
    rng = np.random.default_rng(5)
    stamps = np.sort(rng.integers(chain.oldest_common, chain.newest_common + 1, 200_000))
    seconds = stamps / NS
    lookup = partial(chain.core.lookup_transforms, chain.target, chain.source)
    same_matrices(lookup(seconds[:1000]), chain.plan.at(stamps[:1000].astype(np.int64)), "threads")

    def one_thread():
        lookup(seconds)
        lookup(seconds)

    def two_threads():
        worker = threading.Thread(target=lookup, args=(seconds,), name="bench-second")
        worker.start()
        lookup(seconds)
        worker.join()

    figs = clock.loop([two_threads, one_thread])
    report("2 x lookup_transforms, two threads / one thread (speedup = 1 / ratio)", figs[0],
           figs[1], target=1 / 1.6, peer_name="one thread",
           note="(target: speedup >= 1.6 on 2 cores; the machine is shared)")
