"""tf2py's transform store against transform-tree (``tf_tree``), same trees, same run.

    .venv/bin/python bench/bench_kernel.py              # full run, ~2 min on a calm machine
    .venv/bin/python bench/bench_kernel.py --quick      # short run, < 30 s
    .venv/bin/python bench/bench_kernel.py --markdown   # also a table for docs/performance.md
    .venv/bin/python bench/bench_kernel.py --only single,batch   # some sections

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
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from functools import partial
from itertools import cycle, islice, repeat

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from tf2py import Buffer, BufferCore, Time, make_transform  # noqa: E402

try:
    import tf_tree
except ImportError:  # pragma: no cover - reported at start-up
    tf_tree = None

NS = 1_000_000_000
BASE_NS = 1_000_000 * NS
PERIOD_NS = 10_000_000  # 100 Hz
SAMPLES = 1000
LATEST_NS = BASE_NS + (SAMPLES - 1) * PERIOD_NS
PEER_CAPACITY = 1024
AUTHORITY = "bench"
pc = time.perf_counter_ns

# ------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------


def frame_names(depth):
    return ["f%d" % i for i in range(depth + 1)]


def link_rows(i, ks):
    """(N, 7) float64 ``[tx, ty, tz, qx, qy, qz, qw]`` of link i at sample indices ``ks``:
    a translation and a yaw drifting with time, a fixed roll per link, so that every
    component is non-trivial. Unit quaternions, w >= 0 (no sign ambiguity at the start)."""
    ks = np.asarray(ks, dtype=np.float64)
    yaw = 0.002 * ks + 0.3 * i
    roll = 0.1 * (i + 1)
    cy, sy = np.cos(yaw / 2), np.sin(yaw / 2)
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    rows = np.empty((len(ks), 7))
    rows[:, 0] = 1.0 + 0.001 * ks
    rows[:, 1] = 0.5 * i - 0.0005 * ks
    rows[:, 2] = 0.1 + 0.01 * i
    rows[:, 3] = cy * sr
    rows[:, 4] = sy * sr
    rows[:, 5] = sy * cr
    rows[:, 6] = cy * cr
    return rows


class Chain:
    """One chain of ``depth`` links stored in both libraries with the same samples.

    ``phase_jitter``: link i's stamps are offset by a phase in [0, period) and each by a
    random jitter of up to +-2 ms (instead of every link sampled at the same instants)."""

    def __init__(self, depth, phase_jitter=False, seed=0, buffer_class=BufferCore,
                 samples=SAMPLES):
        self.depth = depth
        self.frames = frame_names(depth)
        self.target, self.source = self.frames[0], self.frames[-1]
        rng = np.random.default_rng(seed)
        self.core = buffer_class(cache_time=10.0)
        self.tree = None
        self.pubs = []
        if tf_tree is not None:
            edges = [(self.frames[i], self.frames[i + 1]) for i in range(depth)]
            self.tree = tf_tree.build(edges, capacity=PEER_CAPACITY, interp="lerpslerp")
            self.pubs = [self.tree.publisher(self.frames[i + 1], self.frames[i])
                         for i in range(depth)]
        ks = np.arange(samples)
        self.stamps = []  # per link, int64 ns
        for i in range(depth):
            stamps = BASE_NS + ks * PERIOD_NS
            if phase_jitter:
                stamps = stamps + int(rng.integers(0, PERIOD_NS))
                stamps = stamps + rng.integers(-2_000_000, 2_000_001, size=samples)
            stamps = stamps.astype(np.int64)
            rows = link_rows(i, ks)
            n = len(stamps)
            result = self.core.set_transforms([self.frames[i]] * n, [self.frames[i + 1]] * n,
                                              stamps, rows, AUTHORITY)
            assert getattr(result, "stored", n) == n, result
            if self.tree is not None:
                poses = np.column_stack((rows[:, 6], rows[:, 3:6], rows[:, :3]))
                self.pubs[i].push_many(stamps, np.ascontiguousarray(poses))
            self.stamps.append(stamps)
        self.next_k = samples  # the next sample index of live inserts
        self.oldest_common = max(int(s[0]) for s in self.stamps)
        self.newest_common = min(int(s[-1]) for s in self.stamps)
        self.plan = self.tree.plan(self.target, self.source) if self.tree is not None else None

    def newest_common_now(self):
        """The newest stamp every link has now (ns), from the peer's span."""
        return self.tree.span(self.target, self.source)[1]

    # -- live inserts: one new sample per link, the same in both libraries -----------------

    def prepare_live(self, count):
        """``count`` steps of one new sample per link, continuing the chain at 100 Hz:
        [(stamp_ns, stamps array (D,), rows array (D, 7), peer pose lists)]."""
        ks = np.arange(self.next_k, self.next_k + count)
        self.next_k += count
        rows = np.stack([link_rows(i, ks) for i in range(self.depth)], axis=1)  # (count, D, 7)
        poses = rows[:, :, [6, 3, 4, 5, 0, 1, 2]].tolist()  # transform-tree's order
        stamps = (BASE_NS + ks * PERIOD_NS).tolist()
        return [(stamp, np.full(self.depth, stamp, dtype=np.int64), rows[j], poses[j])
                for j, stamp in enumerate(stamps)]

    def insert_ours(self, step):
        _, stamps, rows, _ = step
        self.core.set_transforms(self.frames[:-1], self.frames[1:], stamps, rows, AUTHORITY)

    def insert_peer(self, step):
        stamp, _, _, poses = step
        for pub, pose in zip(self.pubs, poses):
            pub.push(stamp, pose)


# ------------------------------------------------------------------------------------------
# Correctness: both libraries must give the same transform
# ------------------------------------------------------------------------------------------


class Mismatch(AssertionError):
    pass


def same_transform(ours_ts, peer_quat, what):
    """``ours_ts``: tf2py's TransformStamped; ``peer_quat``: transform-tree's ``quat``
    layout ``[qw, qx, qy, qz, tx, ty, tz]``."""
    t = ours_ts.transform.translation
    q = ours_ts.transform.rotation
    ours_t = np.array([t.x, t.y, t.z])
    ours_q = np.array([q.w, q.x, q.y, q.z])
    peer_q = np.asarray(peer_quat[:4])
    dt = np.max(np.abs(ours_t - np.asarray(peer_quat[4:])))
    dq = min(np.max(np.abs(ours_q - peer_q)), np.max(np.abs(ours_q + peer_q)))
    if not (dt <= 1e-9 and dq <= 1e-9):
        raise Mismatch("%s: tf2py and transform-tree differ: translation by %.3g, rotation "
                       "by %.3g\n tf2py t=%s q(wxyz)=%s\n peer  t=%s q(wxyz)=%s"
                       % (what, dt, dq, ours_t, ours_q, peer_quat[4:], peer_q))


def same_matrices(ours, peer, what):
    """(N, 4, 4) arrays: the rotation block equal within 1e-9 is the quaternion equal up to
    sign; the translation column within 1e-9."""
    ours = np.asarray(ours)
    peer = np.asarray(peer)
    if ours.shape != peer.shape:
        raise Mismatch("%s: shapes differ, tf2py %s, transform-tree %s"
                       % (what, ours.shape, peer.shape))
    diff = np.abs(ours - peer)
    worst = float(diff.max()) if diff.size else 0.0
    if not worst <= 1e-9:
        k = int(np.unravel_index(np.argmax(diff), diff.shape)[0])
        raise Mismatch("%s: tf2py and transform-tree differ by %.3g (stamp #%d)\n%s\n%s"
                       % (what, worst, k, ours[k], peer[k]))


def check_single(chain, stamps_ns, what):
    for s in stamps_ns:
        s = int(s)
        ours = chain.core.lookup_transform(chain.target, chain.source, Time.from_nanoseconds(s))
        assert ours.header.frame_id == chain.target and ours.child_frame_id == chain.source
        assert ours.header.stamp.nanoseconds == s, (ours.header.stamp, s)
        same_transform(ours, chain.plan.at(s, layout="quat"), "%s at %d ns" % (what, s))
        # The peer's unplanned lookup is what is timed: it must agree with its plan.
        m = chain.tree.lookup(chain.target, chain.source, s)
        same_matrices(m[None], chain.plan.at(np.array([s], dtype=np.int64)), what + " (lookup)")


def check_latest(chain, what, plan_latest=True):
    """tf2py's time 0 against the peer's latest common time (and against ``Plan.latest()``
    where every link has a sample at the newest common stamp, ``plan_latest``)."""
    ours = chain.core.lookup_transform(chain.target, chain.source, Time())
    stamp = ours.header.stamp.nanoseconds
    assert stamp == chain.newest_common_now(), (what, stamp, chain.newest_common_now())
    same_transform(ours, chain.plan.at(stamp, layout="quat"), what)
    mine = ours.transform.as_matrix()[None]
    same_matrices(mine, peer_latest(chain.tree, chain.target, chain.source)[None], what)
    if plan_latest:
        same_matrices(mine, chain.plan.latest()[None], what + " (plan.latest)")


def check_snapshot(chain, what):
    """A returned transform is the answer at the time of the call: data inserted afterwards
    (which changes the answer at time 0) must not change it, however lazily the result is
    built. Inserts one sample per link."""
    before = chain.core.lookup_transform(chain.target, chain.source, Time())
    expected = chain.core.lookup_transform(chain.target, chain.source,
                                           Time.from_nanoseconds(chain.newest_common_now()))
    step = chain.prepare_live(1)[0]
    chain.insert_ours(step)
    chain.insert_peer(step)
    after = chain.core.lookup_transform(chain.target, chain.source, Time())
    assert after.header.stamp.nanoseconds == step[0], (what, after.header.stamp)
    same_matrices(before.transform.as_matrix()[None], expected.transform.as_matrix()[None],
                  what + ": a time-0 result changed when newer data arrived")
    if np.abs(after.transform.as_matrix() - before.transform.as_matrix()).max() < 1e-6:
        raise Mismatch(what + ": time 0 did not move to the newly inserted sample")


def check_batch(chain, stamps_ns, seconds, what, sample=25):
    ours = chain.core.lookup_transforms(chain.target, chain.source, seconds)
    peer = chain.plan.at(stamps_ns)
    same_matrices(ours, peer, what)
    # and the batch agrees with the single lookup (tf2's answer) on a sample of stamps
    idx = np.linspace(0, len(stamps_ns) - 1, sample).astype(int)
    for k in idx:
        single = chain.core.lookup_transform(chain.target, chain.source,
                                             Time.from_nanoseconds(int(stamps_ns[k])))
        same_matrices(ours[k][None], single.transform.as_matrix()[None],
                      what + " batch vs single lookup_transform")


# ------------------------------------------------------------------------------------------
# Timing
# ------------------------------------------------------------------------------------------


class Runs(list):
    """One case's figure per repeat (ns per call), in the order the repeats ran."""

    @property
    def median(self):
        return statistics.median(self)

    def __truediv__(self, k):
        return Runs(v / k for v in self)


def median_of(x):
    return x.median if isinstance(x, Runs) else x


def paired_ratio(ours, peer):
    """tf2py / peer: the median of the per-repeat ratios when both cases ran in the same
    repeats (each pair measured back to back, so a change of the machine's load between
    repeats cancels), else the ratio of the medians."""
    if isinstance(ours, Runs) and isinstance(peer, Runs) and len(ours) == len(peer):
        return statistics.median(a / b for a, b in zip(ours, peer))
    return median_of(ours) / median_of(peer)


class Clock:
    def __init__(self, quick, repeat=None):
        self.quick = quick
        # Many short repeats rather than a few long ones: on a shared machine a burst of
        # load then spoils a few repeats of one case, which the median discards.
        self.repeat = repeat or (7 if quick else 15)
        self.budget_ns = 10_000_000 if quick else 50_000_000  # per repeat per case
        self.overhead_ns = self._timer_overhead()

    @staticmethod
    def _timer_overhead():
        """Cost of ``t0 = pc(); acc += pc() - t0`` with nothing between (the least of several
        runs: load only adds to it, and over-subtracting would flatter the timed call)."""
        runs = []
        for _ in range(7):
            acc = 0
            for _ in repeat(None, 20000):
                t0 = pc()
                acc += pc() - t0
            runs.append(acc / 20000)
        return min(runs)

    @staticmethod
    def _run(case, n):
        """ns for n calls of a case: ``fn`` (called with no argument) or ``(fn, args)``
        (called with each of ``args`` in turn, cycling)."""
        if callable(case):
            gc.disable()
            t0 = pc()
            for _ in repeat(None, n):
                case()
            dt = pc() - t0
            gc.enable()
            return dt
        fn, args = case
        calls = list(islice(cycle(args), n))
        gc.disable()
        t0 = pc()
        for a in calls:
            fn(a)
        dt = pc() - t0
        gc.enable()
        return dt

    def calibrate(self, case):
        """How many calls of a case fill one repeat's budget."""
        n = 1
        while True:
            dt = self._run(case, n)
            if dt > self.budget_ns / 10 or n >= 1_000_000:
                return max(1, int(n * self.budget_ns / max(dt, 1)))
            n *= 4

    def loop(self, cases):
        """ns per call of each case (None skipped) per repeat, the repeats interleaved.
        A case is ``fn`` or ``(fn, args)``, see ``_run``."""
        numbers = [self.calibrate(c) if c is not None else 0 for c in cases]
        runs = [[] for _ in cases]
        for _ in range(self.repeat):
            for k, case in enumerate(cases):
                if case is not None:
                    runs[k].append(self._run(case, numbers[k]) / numbers[k])
        return [Runs(r) if r else None for r in runs]

    def per_call(self, cases):
        """``cases``: [(prepare(n) -> steps, run(steps) -> summed ns, or a tuple of sums)]
        (or None); median ns per step of each sum, the timer's cost subtracted. The cases
        take their steps in turn: ``prepare`` may hand each case the same steps."""
        runs = [[] for _ in cases]
        numbers = []
        for case in cases:
            if case is None:
                numbers.append(0)
                continue
            prepare, run = case
            steps = prepare(50)
            t0 = pc()
            run(steps)
            per = max((pc() - t0) / len(steps), 1)
            numbers.append(max(20, min(20000, int(self.budget_ns / per))))
        for _ in range(self.repeat):
            for k, case in enumerate(cases):
                if case is None:
                    continue
                prepare, run = case
                steps = prepare(numbers[k])
                gc.disable()
                total = run(steps)
                gc.enable()
                totals = total if isinstance(total, tuple) else (total,)
                runs[k].append([t / len(steps) - self.overhead_ns for t in totals])
        out = []
        for r in runs:
            if not r:
                out.append(None)
                continue
            columns = [Runs(col) for col in zip(*r)]
            out.append(tuple(columns) if len(columns) > 1 else columns[0])
        return out


class SharedSteps:
    """Hands every consumer the same steps, in lock-step: the first to ask when its queue
    is empty has ``make(n)`` called and every consumer's queue filled with the result."""

    def __init__(self, make, consumers):
        self.make = make
        self.queues = {c: [] for c in consumers}

    def take(self, n, who):
        if not self.queues[who]:
            steps = self.make(n)
            for c in self.queues:
                self.queues[c].append(steps[c] if isinstance(steps, dict) else steps)
        return self.queues[who].pop(0)


# ------------------------------------------------------------------------------------------
# Output
# ------------------------------------------------------------------------------------------

RESULTS = []


def fmt_ns(ns, unit="ns"):
    if ns is None:
        return "\u2014"
    if unit == "B":
        return "%.1f B" % ns
    if ns >= 10_000:
        return "%.1f \u00b5s" % (ns / 1000)
    if ns >= 1000:
        return "%.2f \u00b5s" % (ns / 1000)
    return "%.0f ns" % ns


def report(name, ours, peer, target=1.0, unit="ns", peer_name="transform-tree", note="",
           plan=None, plan_call="at"):
    """One row. ``plan``: the peer's figure through a plan compiled once (``Plan.at`` or
    ``Plan.latest``), for information: the ratio is against ``peer`` (names in)."""
    ratio = None if (peer is None or ours is None) else paired_ratio(ours, peer)
    ours, peer, plan = median_of(ours), median_of(peer), median_of(plan)
    met = None if ratio is None or target is None else ratio <= target
    if plan is not None:
        note = ("peer Plan.%s %s (%.1fx)" % (plan_call, fmt_ns(plan), ours / plan)
                + ("; " + note if note else ""))
    RESULTS.append({"row": name, "tf2py": ours, "peer": peer, "ratio": ratio,
                    "target": target, "met": met, "unit": unit, "peer_name": peer_name,
                    "peer_plan": plan, "note": note})
    print("%-62s %11s %11s %7s  %-12s%s" % (
        name, fmt_ns(ours, unit), fmt_ns(peer, unit),
        "\u2014" if ratio is None else "%.2f" % ratio,
        "" if met is None else ("ok " if met else "NOT ") + "(<= %.2g)" % target,
        ("  " + note) if note else ""), flush=True)


def header(title, peer="transform-tree", ours="tf2py"):
    print("\n== %s" % title)
    print("%-62s %11s %11s %7s  %s" % ("row (per call unless said)", ours, peer[:11],
                                       "ratio", "target"))


# ------------------------------------------------------------------------------------------
# Sections
# ------------------------------------------------------------------------------------------


def peer_latest(tree, target, source):
    """transform-tree's answer to tf2's time 0 (the latest time the whole chain is known),
    names in, as tf2py's call: the end of the plan's span, then the lookup there.
    (``Plan.latest()`` composes each link's newest sample, whatever its stamp: the same
    transform only when every link has a sample at the common newest stamp.)"""
    return tree.lookup(target, source, tree.span(target, source)[1])


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
        for stamp, _, rows, poses in steps:
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

    def run_peer(items, push=chain.pubs[0].push):
        t0 = pc()
        for stamp, pose in items:
            push(stamp, pose)
        return pc() - t0 + clock.overhead_ns * len(items)

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


# -- memory, in fresh subprocesses -----------------------------------------------------------

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
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, REPO, which, str(frames),
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
           note="(target: tf2py <= 72 B)")
    RESULTS[-1]["met"] = ours <= 72
    RESULTS[-1]["target_abs"] = 72


# ------------------------------------------------------------------------------------------


def conditions():
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import tf2py

    where = os.path.dirname(os.path.dirname(os.path.abspath(tf2py.__file__)))
    try:
        commit = subprocess.run(["git", "-C", where, "describe", "--always", "--dirty"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    commit = "%s (%s)" % (commit or "?", where)
    peer = getattr(tf_tree, "__version__", "not installed") if tf_tree else "not installed"
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": "%s, %d CPUs" % (cpu, os.cpu_count() or 0),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "transform-tree": peer,
        "tf2py": commit,
        "load": "%.2f %.2f %.2f" % os.getloadavg(),
    }


SECTIONS = {
    "single": section_single,
    "batch": section_batch,
    "inserts": section_inserts,
    "buffer": section_buffer,
    "memory": section_memory,
}


def markdown(cond, args):
    lines = ["Measured %s, %s, Python %s, numpy %s, transform-tree %s, tf2py %s, load average "
             "%s at the start, %s at the end; `python bench/bench_kernel.py%s`." % (
                 cond["date"], cond["cpu"], cond["python"], cond["numpy"],
                 cond["transform-tree"], cond["tf2py"], cond["load"], cond["load_end"],
                 " --quick" if args.quick else ""),
             "",
             "| row | tf2py | against | ratio | target | met |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in RESULTS:
        against = "%s %s" % (r["peer_name"], fmt_ns(r["peer"], r["unit"])) \
            if r["peer"] is not None else "\u2014"
        if r.get("target_abs") is not None:
            target = "\u2264 %s B" % r["target_abs"]
        elif r["target"] is None:
            target = "\u2014"
        else:
            target = "ratio \u2264 %.2g" % r["target"]
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            r["row"], fmt_ns(r["tf2py"], r["unit"]), against,
            "\u2014" if r["ratio"] is None else "%.2f" % r["ratio"], target,
            "\u2014" if r["met"] is None else ("yes" if r["met"] else "**no**")))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short run (< 30 s)")
    parser.add_argument("--markdown", action="store_true",
                        help="also print a markdown table for docs/performance.md")
    parser.add_argument("--only", default="",
                        help="comma-separated sections: " + ",".join(SECTIONS))
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--repeat", type=int, default=None,
                        help="repeats per figure (default 15; --quick: 7)")
    args = parser.parse_args(argv)
    if tf_tree is None:
        sys.exit("bench_kernel needs transform-tree: pip install -e '.[bench]'")
    chosen = [s for s in args.only.split(",") if s] or list(SECTIONS)
    for name in chosen:
        if name not in SECTIONS:
            sys.exit("unknown section %r (choose from %s)" % (name, ", ".join(SECTIONS)))
    cond = conditions()
    print("tf2py vs transform-tree: %s" % ", ".join("%s %s" % kv for kv in cond.items()))
    clock = Clock(args.quick, args.repeat)
    print("median of %d repeats; ratio = median over repeats of tf2py / peer measured back to "
          "back (<= target is met); timer cost %.0f ns"
          % (clock.repeat, clock.overhead_ns))
    started = time.monotonic()
    for name in chosen:
        SECTIONS[name](clock)
    cond["load_end"] = "%.2f %.2f %.2f" % os.getloadavg()
    print("\n%d rows in %.0f s; load average at the end %s" % (
        len(RESULTS), time.monotonic() - started, cond["load_end"]))
    missed = [r["row"] for r in RESULTS if r["met"] is False]
    print("targets met: %d of %d" % (sum(r["met"] is True for r in RESULTS),
                                     sum(r["met"] is not None for r in RESULTS)))
    if args.markdown:
        print("\n" + markdown(cond, args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"conditions": cond, "rows": RESULTS}, f, indent=1)


if __name__ == "__main__":
    main()
