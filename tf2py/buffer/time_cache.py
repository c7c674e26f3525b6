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
from struct import Struct

import numpy as np

from .exceptions import (
    BackwardExtrapolationException,
    ForwardExtrapolationException,
    NoDataForExtrapolationException,
)
from .time import format_seconds

__all__ = ["TimeCache", "StaticCache", "StampSearch", "DEFAULT_CACHE_TIME_NS"]

DEFAULT_CACHE_TIME_NS = 10_000_000_000

# Drop the pruned prefix once it is this long and at least an eighth of the live samples:
# amortised, each insert moves a few bytes, and at most ~12 % of the arrays is dead.
_COMPACT_MIN = 64
_SAMPLE = Struct("7d")  # one sample's values as the bytes array("d") stores
_pack7 = _SAMPLE.pack
_unpack7 = _SAMPLE.unpack


class StampSearch:
    """Where N query stamps fall in a cache's stamps, shared by every link of one batch
    lookup: links whose stamp arrays are equal (frames published together) reuse one
    search, and unsorted queries are sorted once for all the searches that remain."""

    __slots__ = ("ts", "memo", "order", "sorted_ts", "searches", "is_sorted")

    def __init__(self, ts):
        self.ts = ts
        self.memo = []
        self.order = None
        self.sorted_ts = None
        self.searches = 0
        self.is_sorted = None  # computed when a second binary search is needed

    def locate(self, stamps):
        """``(i, ratio, 1 - ratio, ok, at_newer)`` for a sorted int64 ``stamps`` array of
        n >= 2: ``i``/``i + 1`` the older/newer neighbours (a query at the last stamp gets
        i = n - 2, ratio 1), ``ok`` whether the query lies within [first, last]."""
        for known, result in self.memo:
            if known is stamps or (known.shape == stamps.shape and np.array_equal(known, stamps)):
                return result
        ts = self.ts
        n = len(stamps)
        first = int(stamps[0])
        last = int(stamps[-1])
        i = self._guess(stamps, n, first, last) if last > first else None
        if i is None:
            i = self._search(stamps)
            i -= 1
            np.clip(i, 0, n - 2, out=i)
        self.searches += 1
        ok = ts >= first
        ok &= ts <= last
        older = stamps[i]
        newer = stamps[i + 1]
        ratio = (ts - older) / (newer - older)
        r0 = 1.0 - ratio
        at_newer = ts == newer
        result = (i, ratio, r0, ok, at_newer)
        self.memo.append((stamps, result))
        return result

    def _search(self, stamps):
        """searchsorted(stamps, ts, "right"): binary searches, on sorted keys if needed."""
        ts = self.ts
        if self.searches and self.is_sorted is None:
            self.is_sorted = len(ts) < 2 or bool(np.all(ts[1:] >= ts[:-1]))
        if self.searches == 0 or self.is_sorted:
            return np.searchsorted(stamps, ts, side="right")
        # A binary search per key is slow on unsorted keys; sorted keys let numpy narrow
        # each search from the previous one.
        if self.order is None:
            self.order = np.argsort(ts, kind="stable")
            self.sorted_ts = ts[self.order]
        i = np.empty(len(ts), dtype=np.intp)
        i[self.order] = np.searchsorted(stamps, self.sorted_ts, side="right")
        return i

    def _guess(self, stamps, n, first, last):
        """The older-neighbour index of every query, clipped to [0, n - 2], found by
        guessing from the mean sample rate and correcting a few steps (stamps of a
        periodic publisher are close to evenly spaced); binary searches only for the
        queries still off after that. None when guessing does not pay."""
        ts = self.ts
        if n < 16 or len(ts) < 64:
            return None
        g = (ts - first).astype(np.float64)
        g *= (n - 1) / (last - first)
        np.clip(g, 0, n - 2, out=g)
        i = g.astype(np.intp)
        top = n - 2
        for _ in range(3):
            # Move left where stamps[i] > t, right where stamps[i + 1] <= t.
            left = stamps[i] > ts
            left &= i > 0
            right = stamps[i + 1] <= ts
            right &= i < top
            moving = left | right
            if not moving.any():
                return i
            i -= left
            i += right
        left = stamps[i] > ts
        left &= i > 0
        right = stamps[i + 1] <= ts
        right &= i < top
        off = np.nonzero(left | right)[0]
        if len(off):
            found = np.searchsorted(stamps, ts[off], side="right") - 1
            i[off] = np.clip(found, 0, top)
        return i


class TimeCache:
    """The history of one child frame over a sliding window of ``cache_time_ns``."""

    __slots__ = ("cache_time_ns", "stamps", "values", "parents", "start", "_table", "_last")

    is_static = False

    def __init__(self, cache_time_ns: int = DEFAULT_CACHE_TIME_NS):
        self.cache_time_ns = cache_time_ns
        self.stamps = array("q")
        self.values = array("d")
        self.parents = array("i")
        self.start = 0
        self._table = None  # per-interval slerp table for batch lookups (see _slerp_table)
        self._last = None  # the latest sample as a get() result, built on first use

    # --- insertion -------------------------------------------------------------------

    def insert(self, stamp, tx, ty, tz, qx, qy, qz, qw, parent) -> bool:
        """Store one sample; False if it is older than the window (tf2's TF_OLD_DATA)."""
        # Packed first: a value struct cannot take raises before anything changed.
        data = _pack7(tx, ty, tz, qx, qy, qz, qw)
        stamps = self.stamps
        n = len(stamps)
        start = self.start
        if n > start:
            latest = stamps[-1]
            if stamp > latest:
                # The common case, inlined: an in-order append that prunes at most one.
                limit = latest - self.cache_time_ns
                if stamps[start] < limit:
                    start += 1
                    if start < n and stamps[start] < limit:
                        return self.insert_packed(stamp, data, parent)
                    self.start = start
                    if start >= _COMPACT_MIN and start * 8 >= n - start:
                        self._compact()
                if self._table is not None or self._last is not None:
                    self._table = self._last = None
                stamps.append(stamp)
                self.values.frombytes(data)
                self.parents.append(parent)
                return True
        return self.insert_packed(stamp, data, parent)

    def insert_packed(self, stamp, data, parent) -> bool:
        """``insert`` with the 7 values as 56 bytes of native doubles (``struct`` "7d")."""
        self._table = self._last = None
        stamps = self.stamps
        n = len(stamps)
        start = self.start
        if n > start:
            latest = stamps[-1]
            # Prune relative to the latest stamp before this insert (strict <).
            limit = latest - self.cache_time_ns
            if stamps[start] < limit:
                start += 1
                if start < n and stamps[start] < limit:
                    # bisect_right(limit - 1) = first index with stamp >= limit, i.e. the
                    # first sample that is kept (stamp + cache_time >= latest).
                    start = bisect_right(stamps, limit - 1, start, n)
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
                self.values.frombytes(data)
                self.parents.append(parent)
                return True
            i = bisect_right(stamps, stamp, start, n)
            if i > start and stamps[i - 1] == stamp:
                # A repeated stamp replaces the earlier sample (tf2py departure, §13.2).
                j = (i - 1) * 7
                self.values[j : j + 7] = array("d", data)
                self.parents[i - 1] = parent
                return True
            stamps.insert(i, stamp)
            j = i * 7
            self.values[j:j] = array("d", data)
            self.parents.insert(i, parent)
            return True
        if start:
            self._reset()
        self.stamps.append(stamp)
        self.values.frombytes(data)
        self.parents.append(parent)
        return True

    def _compact(self):
        start = self.start
        del self.stamps[:start]
        del self.values[: start * 7]
        del self.parents[:start]
        self.start = 0

    def _reset(self):
        self._table = self._last = None
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
            result = self._last
            if result is None:
                j = n * 7 - 7
                result = self._last = (*self.values[j : j + 7], self.parents[-1])
            return result
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
        # tf2's interpolation, inlined for the single-lookup hot path: lerp the translation,
        # slerp the rotation along the shortest path (negate the newer quaternion when the dot
        # product is negative; equal rotations give the older one); no re-normalization.
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

    def _slerp_table(self):
        """Per pair of neighbouring samples k, k+1 (cached until the next insert): the live
        samples as (7, n) columns; the newer sample of each pair as (7, n - 1) columns with
        its quaternion negated where the pair's dot product is negative (shortest path);
        the angle and 1/sin(angle) of the slerp; where that angle is zero; and the parent
        id if every sample has the same one (else None)."""
        table = self._table
        if table is None:
            start = self.start
            # Slicing the array.array copies it: numpy never holds a view on the cache's own
            # arrays (an exported buffer would make the next insert fail to resize them).
            live = np.frombuffer(self.values[start * 7 :], dtype=np.float64)
            columns = live.reshape(-1, 7).T.copy()
            newer = columns[:, 1:].copy()
            qa = columns[3:, :-1]
            qb = newer[3:]
            dot = np.einsum("ij,ij->j", qa, qb)
            negative = dot < 0.0
            qb[:, negative] *= -1.0
            theta = np.arccos(np.minimum(np.abs(dot), 1.0))
            still = theta == 0.0  # tf2 returns the first quaternion when the angle is zero
            inv = 1.0 / np.sin(np.where(still, 1.0, theta))
            inv[still] = 0.0
            parents = np.frombuffer(self.parents[start:], dtype=np.int32)
            uniform = int(parents[0]) if parents.min() == parents.max() else None
            table = self._table = (columns, newer, theta, inv, still if still.any() else None, uniform)
        return table

    def get_many(self, ts, search=None):
        """Vectorised ``get`` over an int64 array of N stamps (``search``: a StampSearch
        over the same stamps, shared between caches).

        Returns ``(values (7, N), parents, ok (N,) bool)``, one column per stamp; columns
        where ``ok`` is False are garbage (``get`` would have returned None there).
        ``parents`` is an (N,) int64 array, or one int when every sample has that parent.
        """
        start = self.start
        n = len(self.stamps) - start
        count = len(ts)
        if n == 0:
            return (
                np.zeros((7, count)),
                np.zeros(count, dtype=np.int64),
                np.zeros(count, dtype=bool),
            )
        columns, newer, theta, inv, still, uniform = self._slerp_table()
        # A copy (array slice), never a view on the cache's array: see _slerp_table.
        stamps = np.frombuffer(self.stamps[start:], dtype=np.int64)
        last = stamps[-1]
        latest = ts == 0
        if n == 1:
            ok = (ts == last) | latest
            return np.repeat(columns, count, axis=1), uniform, ok
        if latest.any():
            search = StampSearch(np.where(latest, last, ts))
        elif search is None:
            search = StampSearch(ts)
        i, ratio, r0, ok, at_newer = search.locate(stamps)
        if uniform is not None:
            parent = uniform
        else:
            parents = np.frombuffer(self.parents[start:], dtype=np.int32)
            p_old = parents[i]
            p_new = parents[i + 1]
            changed = p_old != p_new
            parent = np.where(at_newer, p_new, p_old).astype(np.int64)
            if changed.any():
                # Different parents: no interpolation; the older sample wins, the newer
                # only at its exact stamp.
                ratio = np.where(changed, np.where(at_newer, 1.0, 0.0), ratio)
                r0 = 1.0 - ratio
        out = np.take(columns, i, axis=1)
        b = np.take(newer, i, axis=1)
        # Translation: linear.
        t = out[:3]
        t *= r0
        b[:3] *= ratio
        t += b[:3]
        # Rotation: shortest-path slerp with the per-interval angle.
        th = theta[i]
        k = inv[i]
        s0 = r0 * th
        np.sin(s0, out=s0)
        s0 *= k
        s1 = ratio * th
        np.sin(s1, out=s1)
        s1 *= k
        if still is not None:
            fixed = still[i]
            s0[fixed] = 1.0
            s1[fixed] = 0.0
        q = out[3:]
        q *= s0
        qb = b[3:]
        qb *= s1
        q += qb
        return out, parent, ok

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

    def insert_packed(self, stamp, data, parent) -> bool:
        self.data = (*_unpack7(data), parent)
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

    def get_many(self, ts, search=None):
        count = len(ts)
        if self.data is None:
            return (
                np.zeros((7, count)),
                np.zeros(count, dtype=np.int64),
                np.zeros(count, dtype=bool),
            )
        return (
            np.repeat(np.array(self.data[:7], dtype=np.float64)[:, None], count, axis=1),
            self.data[7],
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
