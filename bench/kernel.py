"""tf2py's transform store against transform-tree (``tf_tree``), same trees, same run.

    python -m bench kernel              # full run, ~2 min on a calm machine
    python -m bench kernel --quick      # short run, seconds
    python -m bench kernel --save       # bench/results/kernel.json, for docs/performance.md
    python -m bench kernel --only single,batch   # some sections

Needs the bench extra (``pip install -e '.[bench]'``, which brings ``transform-tree``).
Written against tf2py's public API only (``BufferCore``, ``Buffer``, ``lookup_transform``,
``can_transform``, ``lookup_transforms``, ``set_transform``, ``set_transforms``), so it
runs on any implementation of the store.

Trees: chains ``f0 <- f1 <- ... <- fD`` (D links), 1000 samples per link at 100 Hz, every
link turning and moving; lookups go from the leaf to the root, ``lookup_transform("f0",
"fD", t)`` against ``tree.lookup("f0", "fD", t_ns)``. transform-tree is built with
``interp="lerpslerp"`` (tf2's interpolation: lerp of the translation, slerp of the
rotation, per link), so both libraries must return the same transform; the benchmark
asserts they do (translation within 1e-9, quaternion within 1e-9 up to sign) on a sample of
every kind of query before it times anything.

Stamps start at 1 000 000 s (a steady or simulated clock's range): there float seconds,
which ``lookup_transforms`` takes, stand for whole nanoseconds exactly, so both libraries
are asked about the same instants. (At a wall-clock epoch a float second is only good to
~240 ns, whatever the store does.)

Every figure is the median of several repeats, the repeats of tf2py and of the peer
interleaved so that a burst of load on a shared machine hits both alike (the garbage
collector paused during each timed loop, as ``timeit`` does). The ratio is
tf2py / transform-tree, the median over repeats of the ratio of the two figures measured back
to back in that repeat (steadier than the ratio of the medians when the load changes): <= 1.0
means tf2py is as fast or faster (issue 9's target).

Peer calls: names in, as tf2py's calls are: ``tree.lookup(target, source, t_ns)`` (which
caches its compiled plan per thread) for a stamp; for time 0 (tf2's latest common time)
``tree.lookup(target, source, tree.span(target, source)[1])``, the peer's way to that same
answer. ``Plan.latest()`` is not it: it composes each link's newest sample whatever its stamp,
which differs from tf2's answer as soon as the links' newest stamps differ. The peer's figure
through a plan compiled once (``Plan.at``, ``Plan.latest``) is printed beside, for
information; the ratio is against the names-in call.

The "live" rows insert one new sample per link before every time-0 lookup, as a listener
does, and time the lookup alone (per call, the timer's own cost subtracted), so a store
cannot answer from a cache of the previous answer.

Batch lookups: tf2py's ``lookup_transforms`` (float seconds in) against ``plan.at`` (int64
ns in), per stamp. Inserts: ``set_transform`` of a prebuilt message against
``Publisher.push``; ``set_transforms`` of a 50-frame batch (one new sample per frame, as one
/tf message) against 50 ``Publisher.push`` (the peer has no batch across edges). Memory: RSS
growth per stored sample in a fresh process (tracemalloc would miss C++ allocations).
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np

from bench.harness import Clock, Missing, Run, pc, version_of
from bench.kernel_memory import section_memory
from bench.kernel_messages import section_messages, section_threads
from bench.kernel_trees import (
    AUTHORITY,
    BASE_NS,
    LATEST_NS,
    NS,
    PEER_CAPACITY,
    PERIOD_NS,
    SAMPLES,
    Chain,
    SharedSteps,
    begin,
    check_batch,
    check_latest,
    check_single,
    check_snapshot,
    header,
    link_rows,
    peer_latest,
    report,
    same_matrices,
    same_transform,
    tf_tree,
    timed_pushes,
)
from tf2py import Buffer, BufferCore, Time, make_transform


def section_single(clock):
    header("single lookups, chains of 1000 samples per link at 100 Hz")
    for depth in (1, 3, 10):
        chain = Chain(depth)
        live = Chain(depth)
        t, s = chain.target, chain.source
        # Each timed row cycles through 64 different stamps (so that no store can answer
        # from a cache of its previous answer): between the two newest samples of every
        # link, and between two samples 5 s before that.
        rng = np.random.default_rng(depth)
        newest_ns = (LATEST_NS - PERIOD_NS + rng.integers(1, PERIOD_NS, 64)).tolist()
        back_ns = (LATEST_NS - 5 * NS - PERIOD_NS + rng.integers(1, PERIOD_NS, 64)).tolist()
        sample = np.sort(rng.integers(chain.oldest_common, chain.newest_common + 1, 40))
        check_single(chain, [*newest_ns, *back_ns, chain.newest_common, chain.oldest_common,
                             *sample], "depth %d" % depth)
        check_latest(chain, "depth %d time 0" % depth)
        check_snapshot(live, "depth %d" % depth)
        for step in live.prepare_live(3):  # the live case, checked before it is timed
            live.insert_ours(step)
            live.insert_peer(step)
            check_latest(live, "depth %d time 0 after a live insert" % depth)
        check_single(live, [live.newest_common_now() - PERIOD_NS // 2], "depth %d live" % depth)

        core, tree, plan = chain.core, chain.tree, chain.plan
        t_newest = [Time.from_nanoseconds(x) for x in newest_ns]
        t_back = [Time.from_nanoseconds(x) for x in back_ns]
        t_zero = Time()
        figs = clock.loop([(partial(core.lookup_transform, t, s), t_newest),
                           (partial(tree.lookup, t, s), newest_ns),
                           (plan.at, newest_ns),
                           (partial(core.lookup_transform, t, s), t_back),
                           (partial(tree.lookup, t, s), back_ns),
                           (plan.at, back_ns),
                           partial(core.lookup_transform, t, s, t_zero),
                           partial(peer_latest, tree, t, s),
                           plan.latest])
        report("lookup_transform depth %d, between the newest samples" % depth, figs[0],
               figs[1], plan=figs[2])
        report("lookup_transform depth %d, 5 s back" % depth, figs[3], figs[4], plan=figs[5])
        report("lookup_transform depth %d, time 0, static data" % depth, figs[6], figs[7],
               plan=figs[8], plan_call="latest")

        def run_ours(steps, live=live, t=t, s=s):
            insert, lookup = live.insert_ours, live.core.lookup_transform
            acc = 0
            for step in steps:
                insert(step)
                t0 = pc()
                lookup(t, s, t_zero)
                acc += pc() - t0
            return acc

        def run_peer(steps, live=live, t=t, s=s):
            insert, lookup, span, latest = (live.insert_peer, live.tree.lookup, live.tree.span,
                                            live.plan.latest)
            acc = acc_plan = 0
            for step in steps:
                insert(step)
                t0 = pc()
                lookup(t, s, span(t, s)[1])
                t1 = pc()
                latest()
                t2 = pc()
                acc += t1 - t0
                acc_plan += t2 - t1
            return acc, acc_plan

        shared = SharedSteps(live.prepare_live, ("ours", "peer"))
        ours, (peer, peer_plan) = clock.per_call([(partial(shared.take, who="ours"), run_ours),
                                                  (partial(shared.take, who="peer"), run_peer)])
        report("lookup_transform depth %d, time 0, live (1 new sample/link)" % depth, ours,
               peer, plan=peer_plan, plan_call="latest")
        check_latest(live, "depth %d time 0 after the live run" % depth)

        if depth == 3:
            fig = clock.loop([(partial(core.can_transform, t, s), t_newest)])
            assert all(core.can_transform(t, s, x) for x in t_newest + t_back)
            assert not core.can_transform(t, s, Time.from_nanoseconds(LATEST_NS + NS))
            report("can_transform depth 3, between the newest samples", fig[0], None,
                   target=None, note="(transform-tree has no can_transform)")


def section_batch(clock):
    n = 100_000
    header("lookup_transforms over %d random sorted stamps (per stamp)" % n)
    for depth in (3, 10):
        for jitter in (False, True):
            chain = Chain(depth, phase_jitter=jitter, seed=depth)
            rng = np.random.default_rng(100 + depth)
            stamps = np.sort(rng.integers(chain.oldest_common, chain.newest_common + 1, n))
            stamps = stamps.astype(np.int64)
            seconds = stamps / NS  # float seconds; exact to the nanosecond at this epoch
            assert np.array_equal(np.rint(seconds * 1e9).astype(np.int64), stamps)
            what = "batch depth %d %s" % (depth, "phase+jitter" if jitter else "periodic")
            check_batch(chain, stamps, seconds, what)
            check_latest(chain, what + " time 0", plan_latest=not jitter)
            figs = clock.loop([partial(chain.core.lookup_transforms, chain.target, chain.source,
                                       seconds),
                               partial(chain.plan.at, stamps)])
            report("lookup_transforms depth %d, %s stamps" % (
                depth, "per-link phase+jitter" if jitter else "identical periodic"),
                figs[0] / n, figs[1] / n)


def section_inserts(clock):
    header("inserts (steady state: full 10 s caches, 100 Hz)")
    # set_transform of a prebuilt message, one link; the peer pushes a prebuilt pose list.
    chain = Chain(1)
    parent, child = chain.frames

    def prepare(count, chain=chain):
        steps = chain.prepare_live(count)
        msgs = []
        for stamp, _, rows, _poses in steps:
            tx, ty, tz, qx, qy, qz, qw = (float(v) for v in rows[0])
            msgs.append(make_transform(parent, child, (tx, ty, tz), (qx, qy, qz, qw),
                                       stamp=Time.from_nanoseconds(stamp)))
        return {"ours": msgs, "peer": [(stamp, poses[0]) for stamp, _, _, poses in steps]}

    shared = SharedSteps(prepare, ("ours", "peer"))

    def run_ours(msgs, set_transform=chain.core.set_transform):
        t0 = pc()
        for m in msgs:
            set_transform(m, AUTHORITY)
        return pc() - t0 + clock.overhead_ns * len(msgs)  # per_call subtracts one timer

    run_peer = timed_pushes(chain.pubs[0].push, clock.overhead_ns)

    figs = clock.per_call([(partial(shared.take, who="ours"), run_ours),
                           (partial(shared.take, who="peer"), run_peer)])
    report("set_transform (prebuilt message) vs Publisher.push", figs[0], figs[1])
    check_latest(chain, "after the inserts")

    # set_transforms, batches of 50: one new sample for each of 50 frames (a listener's
    # message); the peer has no batch across edges, so it pushes each of the 50.
    frames = 50
    star = ["c%d" % j for j in range(frames)]
    core = BufferCore(cache_time=10.0)
    tree = tf_tree.build([("world", c) for c in star], capacity=PEER_CAPACITY,
                         interp="lerpslerp")
    pubs = [tree.publisher(c, "world") for c in star]
    parents = ["world"] * frames
    state = {"k": 0}

    def prepare_batches(count):
        ks = np.arange(state["k"], state["k"] + count)
        state["k"] += count
        rows = np.stack([link_rows(j, ks) for j in range(frames)], axis=1)  # (count, 50, 7)
        poses = rows[:, :, [6, 3, 4, 5, 0, 1, 2]].tolist()  # transform-tree's order
        stamps = (BASE_NS + ks * PERIOD_NS).tolist()
        return {"ours": [(np.full(frames, stamp, dtype=np.int64), rows[j])
                         for j, stamp in enumerate(stamps)],
                "peer": list(zip(stamps, poses))}

    # Fill the 10 s caches first (steady state).
    fill = prepare_batches(SAMPLES)
    fill_ours, fill_peer = fill["ours"], fill["peer"]
    for stamps, rows in fill_ours:
        core.set_transforms(parents, star, stamps, rows, AUTHORITY)
    for stamp, poses in fill_peer:
        for pub, pose in zip(pubs, poses):
            pub.push(stamp, pose)

    shared2 = SharedSteps(prepare_batches, ("ours", "peer"))

    def run_ours2(batches, set_transforms=core.set_transforms):
        t0 = pc()
        for stamps, rows in batches:
            set_transforms(parents, star, stamps, rows, AUTHORITY)
        return pc() - t0 + clock.overhead_ns * len(batches)

    def run_peer2(batches):
        t0 = pc()
        for stamp, poses in batches:
            for pub, pose in zip(pubs, poses):
                pub.push(stamp, pose)
        return pc() - t0 + clock.overhead_ns * len(batches)

    figs = clock.per_call([(partial(shared2.take, who="ours"), run_ours2),
                           (partial(shared2.take, who="peer"), run_peer2)])
    report("set_transforms, batches of 50 frames (per transform)", figs[0] / frames,
           figs[1] / frames, note="(peer: 50 Publisher.push)")
    # what was stored is what the peer holds
    last = BASE_NS + (state["k"] - 1) * PERIOD_NS
    for c in (star[0], star[-1]):
        ours = core.lookup_transform("world", c, Time.from_nanoseconds(last))
        same_transform(ours, tree.plan("world", c).at(last, layout="quat"),
                       "batch insert, frame " + c)


def section_buffer(clock):
    header("Buffer (with its lock) vs BufferCore, depth 3", peer="BufferCore", ours="Buffer")
    plain = Chain(3)
    locked = Chain(3, buffer_class=Buffer)
    t, s = plain.target, plain.source
    rng = np.random.default_rng(7)
    newest = [Time.from_nanoseconds(x)
              for x in (LATEST_NS - PERIOD_NS + rng.integers(1, PERIOD_NS, 64)).tolist()]
    for x in newest[:8]:
        a = locked.core.lookup_transform(t, s, x).transform.as_matrix()
        b = plain.core.lookup_transform(t, s, x).transform.as_matrix()
        same_matrices(a[None], b[None], "Buffer vs BufferCore")
    figs = clock.loop([(partial(locked.core.lookup_transform, t, s), newest),
                       (partial(plain.core.lookup_transform, t, s), newest),
                       partial(locked.core.lookup_transform, t, s, Time()),
                       partial(plain.core.lookup_transform, t, s, Time()),
                       (partial(locked.core.can_transform, t, s), newest),
                       (partial(plain.core.can_transform, t, s), newest)])
    vs_core = dict(target=1.2, peer_name="BufferCore")
    report("Buffer / BufferCore: lookup_transform, between the newest samples", figs[0],
           figs[1], **vs_core)
    report("Buffer / BufferCore: lookup_transform, time 0", figs[2], figs[3], **vs_core)
    report("Buffer / BufferCore: can_transform", figs[4], figs[5], **vs_core)

    def prepare(chain, count):
        out = []
        for stamp, _, rows, _ in chain.prepare_live(count):
            tx, ty, tz, qx, qy, qz, qw = (float(v) for v in rows[0])
            out.append(make_transform("f0", "f1", (tx, ty, tz), (qx, qy, qz, qw),
                                      stamp=Time.from_nanoseconds(stamp)))
        return out

    def run(msgs, core):
        set_transform = core.set_transform
        t0 = pc()
        for m in msgs:
            set_transform(m, AUTHORITY)
        return pc() - t0 + clock.overhead_ns * len(msgs)

    figs = clock.per_call([(partial(prepare, locked), partial(run, core=locked.core)),
                           (partial(prepare, plain), partial(run, core=plain.core))])
    report("Buffer / BufferCore: set_transform (prebuilt message)", figs[0], figs[1], target=1.2,
           peer_name="BufferCore")




SECTIONS = {
    "single": section_single,
    "batch": section_batch,
    "inserts": section_inserts,
    "buffer": section_buffer,
    "memory": section_memory,
    "messages": section_messages,
    "threads": section_threads,
}


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench kernel", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="",
                        help="comma-separated sections: " + ",".join(SECTIONS))
    parser.add_argument("--repeat", type=int, default=None,
                        help="repeats per figure (default 15; --quick: 5)")
    args = parser.parse_args(argv)
    if tf_tree is None:
        raise Missing("needs the peer transform-tree: pip install transform-tree==0.0.9 (the bench extra)")
    chosen = [s for s in args.only.split(",") if s] or list(SECTIONS)
    for name in chosen:
        if name not in SECTIONS:
            raise SystemExit("unknown section %r (choose from %s)" % (name, ", ".join(SECTIONS)))
    run.peer("transform-tree", version_of("transform-tree"))
    begin(run)
    clock = Clock(run.quick, args.repeat)
    run.note("median of %d repeats; ratio = median over repeats of tf2py / peer measured back to "
             "back (<= target is met); timer cost %.0f ns" % (clock.repeat, clock.overhead_ns))
    started = time.monotonic()
    for name in chosen:
        SECTIONS[name](clock)
    rows = [r["figures"] for t in run.tables for r in t.rows]
    print("\n%d rows in %.0f s; targets met: %d of %d" % (
        len(rows), time.monotonic() - started, sum(r["met"] is True for r in rows),
        sum(r["met"] is not None for r in rows)))
