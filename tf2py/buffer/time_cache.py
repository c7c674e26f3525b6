"""Per-frame transform history: ``TimeCache`` (a sliding window of samples) and
``StaticCache`` (one sample, valid at every time).

A sample stored for child frame C with parent P maps coordinates in C into P. Values are
``(tx, ty, tz, qx, qy, qz, qw)``: translation in metres, rotation as a unit quaternion.
Stamps are integer nanoseconds. Parents are the integer frame ids of ``BufferCore``.

Storage is three flat arrays kept sorted by stamp, oldest first (no object per sample):
``stamps`` (int64), ``values`` (7 float64 per sample) and ``parents`` (int32). Pruning
moves a start offset; the dead prefix is dropped now and then, so an in-order insert is an
append and a lookup is a binary search (``bisect``), never a scan.

tf2 rules kept here (tf2-reference.md §3, with the §13.2 departure for equal stamps):

- insert prunes first, relative to the latest stamp *before* the insert, dropping samples
  with ``stamp + cache_time < latest`` (strict, so one exactly ``cache_time`` older stays);
  then refuses (returns False) a stamp older than ``latest - cache_time``;
- a sample whose stamp is already stored replaces it;
- a lookup at ``t == 0`` returns the latest sample; exact stamps (also the first and the
  last) match; a single sample matches only its own stamp; between two samples the
  translation is interpolated linearly and the rotation by shortest-path slerp, unless the
  two have different parents, in which case the older sample wins.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from math import acos, sin

import numpy as np

from .exceptions import (
    BackwardExtrapolationException,
    ForwardExtrapolationException,
    NoDataForExtrapolationException,
)
from .time import format_seconds

__all__ = ["TimeCache", "StaticCache", "DEFAULT_CACHE_TIME_NS", "interpolate"]

DEFAULT_CACHE_TIME_NS = 10_000_000_000

# Drop the pruned prefix once it is this long and at least an eighth of the live samples:
# amortised, each insert moves a few bytes, and at most ~12 % of the arrays is dead.
_COMPACT_MIN = 64


def interpolate(a, b, ratio):
    """Blend two samples ``(tx, ty, tz, qx, qy, qz, qw)`` at ``ratio`` in [0, 1].

    Translation: linear. Rotation: slerp along the shortest path, as tf2 does (if the dot
    product is negative the second quaternion is negated; if the angle is zero the first
    quaternion is returned). The result is not re-normalized.
    """
    ax, ay, az, aqx, aqy, aqz, aqw = a
    bx, by, bz, bqx, bqy, bqz, bqw = b
    r0 = 1.0 - ratio
    dot = aqx * bqx + aqy * bqy + aqz * bqz + aqw * bqw
    if dot < 0.0:
        dot = -dot
        bqx = -bqx
        bqy = -bqy
        bqz = -bqz
        bqw = -bqw
    theta = acos(dot) if dot < 1.0 else 0.0
    if theta != 0.0:
        d = 1.0 / sin(theta)
        s0 = sin(r0 * theta) * d
        s1 = sin(ratio * theta) * d
        qx = aqx * s0 + bqx * s1
        qy = aqy * s0 + bqy * s1
        qz = aqz * s0 + bqz * s1
        qw = aqw * s0 + bqw * s1
    else:
        qx, qy, qz, qw = aqx, aqy, aqz, aqw
    return (
        r0 * ax + ratio * bx,
        r0 * ay + ratio * by,
        r0 * az + ratio * bz,
        qx,
        qy,
        qz,
        qw,
    )


def _slerp_many(q0, q1, ratio):
    """Vectorised shortest-path slerp of (N, 4) quaternion rows at (N,) ratios."""
    dot = np.einsum("ij,ij->i", q0, q1)
    sign = np.where(dot < 0.0, -1.0, 1.0)
    dot = np.minimum(np.abs(dot), 1.0)
    theta = np.arccos(dot)
    moving = theta != 0.0
    out = q0.copy()
    if moving.any():
        th = theta[moving]
        r = ratio[moving]
        d = 1.0 / np.sin(th)
        s0 = np.sin((1.0 - r) * th) * d
        s1 = np.sin(r * th) * d * sign[moving]
        out[moving] = q0[moving] * s0[:, None] + q1[moving] * s1[:, None]
    return out


class TimeCache:
    """The history of one child frame over a sliding window of ``cache_time_ns``."""

    __slots__ = ("cache_time_ns", "stamps", "values", "parents", "start")

    is_static = False

    def __init__(self, cache_time_ns: int = DEFAULT_CACHE_TIME_NS):
        self.cache_time_ns = cache_time_ns
        self.stamps = array("q")
        self.values = array("d")
        self.parents = array("i")
        self.start = 0

    # --- insertion -------------------------------------------------------------------

    def insert(self, stamp, tx, ty, tz, qx, qy, qz, qw, parent) -> bool:
        """Store one sample; False if it is older than the window (tf2's TF_OLD_DATA)."""
        stamps = self.stamps
        n = len(stamps)
        start = self.start
        if n > start:
            latest = stamps[-1]
            # Prune relative to the latest stamp before this insert (strict <).
            limit = latest - self.cache_time_ns
            if stamps[start] < limit:
                start = bisect_right(stamps, limit - 1, start, n)
                # bisect_right(limit - 1) = first index with stamp >= limit, i.e. the first
                # sample that is kept (stamp + cache_time >= latest).
                self.start = start
                if start >= _COMPACT_MIN and start * 8 >= n - start:
                    self._compact()
                    stamps = self.stamps
                    n = len(stamps)
                    start = 0
            if stamp < limit:
                return False
            if stamp > latest:
                stamps.append(stamp)
                self.values.extend((tx, ty, tz, qx, qy, qz, qw))
                self.parents.append(parent)
                return True
            i = bisect_right(stamps, stamp, start, n)
            if i > start and stamps[i - 1] == stamp:
                # A repeated stamp replaces the earlier sample (tf2py departure, §13.2).
                j = (i - 1) * 7
                self.values[j : j + 7] = array("d", (tx, ty, tz, qx, qy, qz, qw))
                self.parents[i - 1] = parent
                return True
            stamps.insert(i, stamp)
            j = i * 7
            self.values[j:j] = array("d", (tx, ty, tz, qx, qy, qz, qw))
            self.parents.insert(i, parent)
            return True
        if start:
            self._reset()
        self.stamps.append(stamp)
        self.values.extend((tx, ty, tz, qx, qy, qz, qw))
        self.parents.append(parent)
        return True

    def _compact(self):
        start = self.start
        del self.stamps[:start]
        del self.values[: start * 7]
        del self.parents[:start]
        self.start = 0

    def _reset(self):
        self.stamps = array("q")
        self.values = array("d")
        self.parents = array("i")
        self.start = 0

    def clear(self):
        """Forget every sample (tf2's clearList)."""
        self._reset()

    # --- single lookups --------------------------------------------------------------

    def get(self, t):
        """``(tx, ty, tz, qx, qy, qz, qw, parent)`` at ``t`` ns, or None (see ``error``)."""
        stamps = self.stamps
        n = len(stamps)
        start = self.start
        if n == start:
            return None
        last = stamps[-1]
        if t == last or t == 0:
            j = n * 7 - 7
            return (*self.values[j : j + 7], self.parents[-1])
        if t > last or n - start == 1:
            return None
        first = stamps[start]
        if t <= first:
            if t < first:
                return None
            j = start * 7
            return (*self.values[j : j + 7], self.parents[start])
        i = bisect_right(stamps, t, start, n) - 1
        older = stamps[i]
        j = i * 7
        parents = self.parents
        if older == t or parents[i] != parents[i + 1]:
            # Exact stamp, or a change of parent: no interpolation, the older sample wins.
            return (*self.values[j : j + 7], parents[i])
        ratio = (t - older) / (stamps[i + 1] - older)
        ax, ay, az, aqx, aqy, aqz, aqw, bx, by, bz, bqx, bqy, bqz, bqw = self.values[j : j + 14]
        r0 = 1.0 - ratio
        dot = aqx * bqx + aqy * bqy + aqz * bqz + aqw * bqw
        if dot < 0.0:
            dot = -dot
            bqx = -bqx
            bqy = -bqy
            bqz = -bqz
            bqw = -bqw
        if dot < 1.0:
            theta = acos(dot)
            d = 1.0 / sin(theta)
            s0 = sin(r0 * theta) * d
            s1 = sin(ratio * theta) * d
            return (
                r0 * ax + ratio * bx,
                r0 * ay + ratio * by,
                r0 * az + ratio * bz,
                aqx * s0 + bqx * s1,
                aqy * s0 + bqy * s1,
                aqz * s0 + bqz * s1,
                aqw * s0 + bqw * s1,
                parents[i],
            )
        return (
            r0 * ax + ratio * bx,
            r0 * ay + ratio * by,
            r0 * az + ratio * bz,
            aqx,
            aqy,
            aqz,
            aqw,
            parents[i],
        )

    def parent_at(self, t) -> int:
        """The parent id at ``t`` (the older neighbour's), or 0 when ``get(t)`` would fail."""
        stamps = self.stamps
        n = len(stamps)
        start = self.start
        if n == start:
            return 0
        last = stamps[-1]
        if t == last or t == 0:
            return self.parents[-1]
        if t > last or n - start == 1 or t < stamps[start]:
            return 0
        return self.parents[bisect_right(stamps, t, start, n) - 1]

    def error(self, t):
        """``(exception class, tf2 message)`` explaining why ``get(t)`` failed."""
        stamps = self.stamps
        n = len(stamps)
        start = self.start
        if n == start:
            return (
                NoDataForExtrapolationException,
                "Lookup would require extrapolation at time %s, but only time 0.000000 is "
                "in the buffer" % format_seconds(t),
            )
        if n - start == 1:
            return (
                NoDataForExtrapolationException,
                "Lookup would require extrapolation at time %s, but only time %s is in the "
                "buffer" % (format_seconds(t), format_seconds(stamps[start])),
            )
        if t > stamps[-1]:
            return (
                ForwardExtrapolationException,
                "Lookup would require extrapolation into the future.  Requested time %s but "
                "the latest data is at time %s" % (format_seconds(t), format_seconds(stamps[-1])),
            )
        return (
            BackwardExtrapolationException,
            "Lookup would require extrapolation into the past.  Requested time %s but the "
            "earliest data is at time %s" % (format_seconds(t), format_seconds(stamps[start])),
        )

    # --- vectorised lookups ----------------------------------------------------------

    def get_many(self, ts):
        """Vectorised ``get`` over an int64 array of stamps.

        Returns ``(values (N, 7), parents (N,), ok (N,) bool)``; rows where ``ok`` is False
        are garbage (``get`` would have returned None there).
        """
        start = self.start
        n = len(self.stamps) - start
        count = len(ts)
        if n == 0:
            return (
                np.zeros((count, 7)),
                np.zeros(count, dtype=np.int64),
                np.zeros(count, dtype=bool),
            )
        stamps = np.frombuffer(self.stamps, dtype=np.int64)[start:]
        values = np.frombuffer(self.values, dtype=np.float64).reshape(-1, 7)[start:]
        parents = np.frombuffer(self.parents, dtype=np.int32)[start:]
        last = stamps[-1]
        latest = ts == 0
        if n == 1:
            ok = (ts == last) | latest
            return (
                np.broadcast_to(values[0], (count, 7)).copy(),
                np.full(count, parents[0], dtype=np.int64),
                ok,
            )
        q = np.where(latest, last, ts)
        ok = (q >= stamps[0]) & (q <= last)
        i = np.searchsorted(stamps, q, side="right") - 1
        np.clip(i, 0, n - 1, out=i)
        j = np.minimum(i + 1, n - 1)
        older = stamps[i]
        p_old = parents[i].astype(np.int64)
        span = stamps[j] - older
        blend = (q != older) & (parents[j] == parents[i]) & ok & (span > 0)
        out = values[i].copy()
        if blend.any():
            idx = np.nonzero(blend)[0]
            ii = i[idx]
            jj = j[idx]
            ratio = (q[idx] - older[idx]) / span[idx]
            a = values[ii]
            b = values[jj]
            out[idx, :3] = a[:, :3] + (b[:, :3] - a[:, :3]) * ratio[:, None]
            out[idx, 3:] = _slerp_many(a[:, 3:], b[:, 3:], ratio)
        return out, p_old, ok

    # --- introspection ---------------------------------------------------------------

    def latest(self):
        """``(latest stamp, its parent)``, or ``(0, 0)`` when empty."""
        if len(self.stamps) == self.start:
            return 0, 0
        return self.stamps[-1], self.parents[-1]

    def latest_stamp(self) -> int:
        return self.stamps[-1] if len(self.stamps) > self.start else 0

    def oldest_stamp(self) -> int:
        return self.stamps[self.start] if len(self.stamps) > self.start else 0

    def __len__(self):
        return len(self.stamps) - self.start

    def samples(self):
        """Every stored sample as ``(stamp, (tx, ty, tz, qx, qy, qz, qw), parent)``, oldest
        first (for tests and tools; not a hot path)."""
        out = []
        for k in range(self.start, len(self.stamps)):
            out.append((self.stamps[k], tuple(self.values[k * 7 : k * 7 + 7]), self.parents[k]))
        return out


class StaticCache:
    """One sample, valid at every time; the latest insert wins; ``clear()`` keeps it."""

    __slots__ = ("data",)

    is_static = True

    def __init__(self):
        self.data = None  # (tx, ty, tz, qx, qy, qz, qw, parent)

    def insert(self, stamp, tx, ty, tz, qx, qy, qz, qw, parent) -> bool:
        self.data = (tx, ty, tz, qx, qy, qz, qw, parent)
        return True

    def clear(self):
        """Static transforms survive ``BufferCore.clear()``, as in tf2."""

    def get(self, t):
        return self.data

    def parent_at(self, t) -> int:
        return 0 if self.data is None else self.data[7]

    def error(self, t):
        return (
            NoDataForExtrapolationException,
            "Lookup would require extrapolation at time %s, but only time 0.000000 is in the "
            "buffer" % format_seconds(t),
        )

    def get_many(self, ts):
        count = len(ts)
        if self.data is None:
            return (
                np.zeros((count, 7)),
                np.zeros(count, dtype=np.int64),
                np.zeros(count, dtype=bool),
            )
        return (
            np.broadcast_to(np.array(self.data[:7]), (count, 7)).copy(),
            np.full(count, self.data[7], dtype=np.int64),
            np.ones(count, dtype=bool),
        )

    def latest(self):
        return (0, 0) if self.data is None else (0, self.data[7])

    def latest_stamp(self) -> int:
        return 0

    def oldest_stamp(self) -> int:
        return 0

    def __len__(self):
        return 0 if self.data is None else 1

    def samples(self):
        if self.data is None:
            return []
        return [(0, tuple(self.data[:7]), self.data[7])]
