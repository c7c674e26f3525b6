"""The trees of the kernel benchmark (bench/kernel.py, kernel_messages.py, kernel_memory.py):
the chains stored in tf2py and transform-tree, the checks that both give the same answer, and
the rows (tf2py against the peer, ratio of back-to-back pairs). See bench/kernel.py for the
method; timing is bench.harness.Clock."""


from __future__ import annotations

import math
from typing import Any

import numpy as np

from bench.harness import Run, fmt_ns, fmt_ratio, median_of, paired_ratio, pc
from tf2py import BufferCore, Time

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


def peer_latest(tree, target, source):
    """transform-tree's answer to tf2's time 0 (the latest time the whole chain is known),
    names in, as tf2py's call: the end of the plan's span, then the lookup there.
    (``Plan.latest()`` composes each link's newest sample, whatever its stamp: the same
    transform only when every link has a sample at the common newest stamp.)"""
    return tree.lookup(target, source, tree.span(target, source)[1])


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


def timed_pushes(push, overhead_ns):
    """``run(items)``: the summed ns of the peer's ``push(stamp, pose)`` over items, the timer's
    cost added back (``Clock.per_call`` subtracts one per item)."""
    def run(items):
        p = push  # a local, as the timed loops of tf2py's side use
        t0 = pc()
        for stamp, pose in items:
            p(stamp, pose)
        return pc() - t0 + overhead_ns * len(items)
    return run


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
# Rows
# ------------------------------------------------------------------------------------------

_OUT: dict[str, Any] = {"run": None, "table": None}


def begin(run: Run) -> None:
    """The run the sections' tables go to."""
    _OUT["run"] = run


def header(title, peer="transform-tree", ours="tf2py"):
    _OUT["table"] = _OUT["run"].table(
        title, ["row (per call unless said)", ours, peer[:14], "ratio", "target", "note"],
        [62, 11, 14, 7, 13, 10])


def report(name, ours, peer, target=1.0, unit="ns", peer_name="transform-tree", note="",
           plan=None, plan_call="at", target_abs=None):
    """One row. ``plan``: the peer's figure through a plan compiled once (``Plan.at`` or
    ``Plan.latest``), for information: the ratio is against ``peer`` (names in).
    ``target_abs``: a bound on tf2py's own figure (in ``unit``) instead of on the ratio."""
    ratio = None if (peer is None or ours is None) else paired_ratio(ours, peer)
    ours, peer, plan = median_of(ours), median_of(peer), median_of(plan)
    if target_abs is not None:
        met = ours <= target_abs
        goal = "\u2264 %s %s" % (target_abs, unit)
    else:
        met = None if ratio is None or target is None else ratio <= target
        goal = "" if target is None else "ratio \u2264 %.2g" % target
    if plan is not None:
        note = ("peer Plan.%s %s (%.1fx)" % (plan_call, fmt_ns(plan), ours / plan)
                + ("; " + note if note else ""))
    _OUT["table"].add(name, fmt_ns(ours, unit), fmt_ns(peer, unit), fmt_ratio(ratio),
                      ("" if met is None else ("ok " if met else "NOT ")) + goal, note,
                      tf2py=ours, peer=peer, ratio=ratio, target=target, met=met, unit=unit,
                      peer_name=peer_name, peer_plan=plan)
