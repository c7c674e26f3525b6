"""``BufferCore``: the in-process transform store with tf2's lookup semantics.

A transform stored for (parent P, child C) maps coordinates expressed in C into P.
``lookup_transform(target_frame, source_frame, time)`` returns the transform that maps data
in ``source_frame`` into ``target_frame`` (the pose of ``source_frame`` in ``target_frame``).
Times are integer nanoseconds inside; every public time argument also takes a ``Time`` or
plain seconds. Translations are in the units given (metres in ROS); rotations are unit
quaternions ``(x, y, z, w)``.

The rules followed are tf2's (ROS 2 geometry2, see shared/tf2-reference.md §1-§5) with the
departures of §13.2: invalid input raises ``InvalidArgumentException`` (NaN, infinity and
denormalized quaternions included), a repeated stamp replaces the earlier sample, and
``chain`` follows ROS 1's tested ``_chainAsVector``.

Not thread-safe: ``Buffer`` adds the lock.
"""

from __future__ import annotations

from math import sqrt
from struct import error as _StructError
from typing import NamedTuple

import numpy as np

from .exceptions import (
    ConnectivityException,
    InvalidArgumentException,
    LookupException,
    TransformException,
)
from .messages import Header, Quaternion, Transform, TransformStamped, Vector3
from .time import Time, duration_to_nanoseconds, format_seconds, to_nanoseconds
from .time_cache import (
    _COMPACT_MIN,
    DEFAULT_CACHE_TIME_NS,
    StampSearch,
    StaticCache,
    TimeCache,
)

__all__ = ["BufferCore", "BatchResult", "MAX_GRAPH_DEPTH"]

MAX_GRAPH_DEPTH = 1000  # tf2's MAX_GRAPH_DEPTH: more links than this means a loop
_QUATERNION_TOLERANCE = 0.01  # |x²+y²+z²+w² - 1| must stay below this (ROS 1 rule)
_QUATERNION_TOLERANCE_2 = _QUATERNION_TOLERANCE * _QUATERNION_TOLERANCE
_NO_PARENT = "NO_PARENT"
_FIELDS = (
    "transform.translation.x",
    "transform.translation.y",
    "transform.translation.z",
    "transform.rotation.x",
    "transform.rotation.y",
    "transform.rotation.z",
    "transform.rotation.w",
)
_IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
_INF = float("inf")
_STAMP_MIN = -(2**63)  # stamps are stored as int64 nanoseconds
_STAMP_MAX = 2**63 - 1
_ROW_BYTES = 56  # one row of 7 float64
# Below this many rows set_transforms checks each row in plain Python (numpy's per-call
# costs exceed the per-row savings for small batches).
_SMALL_BATCH = 8
# Picks |q|² out of a row of squared values (one matmul per batch).
_QUATERNION_COLUMNS = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
_new = object.__new__
_setattr = object.__setattr__


class BatchResult(NamedTuple):
    """What ``set_transforms`` did: rows stored, rows refused as too old, and the invalid
    rows as ``(row index, InvalidArgumentException)``."""

    stored: int
    old: int
    invalid: list


# --- rigid-transform math on (tx, ty, tz, qx, qy, qz, qw) tuples ------------------------
# Plain float arithmetic: numpy costs more than it saves on a single 7-vector.


def _compose(a, b):
    """a ∘ b: apply b, then a (both 7-sequences; extra items ignored)."""
    ax, ay, az, aqx, aqy, aqz, aqw = a[0], a[1], a[2], a[3], a[4], a[5], a[6]
    bx, by, bz, bqx, bqy, bqz, bqw = b[0], b[1], b[2], b[3], b[4], b[5], b[6]
    ux = 2.0 * (aqy * bz - aqz * by)
    uy = 2.0 * (aqz * bx - aqx * bz)
    uz = 2.0 * (aqx * by - aqy * bx)
    return (
        ax + bx + aqw * ux + aqy * uz - aqz * uy,
        ay + by + aqw * uy + aqz * ux - aqx * uz,
        az + bz + aqw * uz + aqx * uy - aqy * ux,
        aqw * bqx + aqx * bqw + aqy * bqz - aqz * bqy,
        aqw * bqy - aqx * bqz + aqy * bqw + aqz * bqx,
        aqw * bqz + aqx * bqy - aqy * bqx + aqz * bqw,
        aqw * bqw - aqx * bqx - aqy * bqy - aqz * bqz,
    )


def _inverse(a):
    """The inverse of a rigid transform with a unit quaternion."""
    x, y, z, qx, qy, qz, qw = a[0], a[1], a[2], -a[3], -a[4], -a[5], a[6]
    ux = 2.0 * (qy * z - qz * y)
    uy = 2.0 * (qz * x - qx * z)
    uz = 2.0 * (qx * y - qy * x)
    return (
        -(x + qw * ux + qy * uz - qz * uy),
        -(y + qw * uy + qz * ux - qx * uz),
        -(z + qw * uz + qx * uy - qy * ux),
        qx,
        qy,
        qz,
        qw,
    )


# --- vectorised versions on (7, N) column arrays (one row per component) ---------------


def _compose_many(a, b):
    """Column-wise a ∘ b for (7, N) arrays."""
    ax, ay, az, aqx, aqy, aqz, aqw = a
    bx, by, bz, bqx, bqy, bqz, bqw = b
    ux = 2.0 * (aqy * bz - aqz * by)
    uy = 2.0 * (aqz * bx - aqx * bz)
    uz = 2.0 * (aqx * by - aqy * bx)
    out = np.empty_like(b)
    out[0] = ax + bx + aqw * ux + aqy * uz - aqz * uy
    out[1] = ay + by + aqw * uy + aqz * ux - aqx * uz
    out[2] = az + bz + aqw * uz + aqx * uy - aqy * ux
    out[3] = aqw * bqx + aqx * bqw + aqy * bqz - aqz * bqy
    out[4] = aqw * bqy - aqx * bqz + aqy * bqw + aqz * bqx
    out[5] = aqw * bqz + aqx * bqy - aqy * bqx + aqz * bqw
    out[6] = aqw * bqw - aqx * bqx - aqy * bqy - aqz * bqz
    return out


def _inverse_many(a):
    """Column-wise inverse of rigid transforms with unit quaternions, (7, N)."""
    x, y, z, qx, qy, qz, qw = a
    qx, qy, qz = -qx, -qy, -qz
    ux = 2.0 * (qy * z - qz * y)
    uy = 2.0 * (qz * x - qx * z)
    uz = 2.0 * (qx * y - qy * x)
    out = np.empty_like(a)
    out[0] = -(x + qw * ux + qy * uz - qz * uy)
    out[1] = -(y + qw * uy + qz * ux - qx * uz)
    out[2] = -(z + qw * uz + qx * uy - qy * ux)
    out[3] = qx
    out[4] = qy
    out[5] = qz
    out[6] = qw
    return out


def _matrices(columns):
    """(N, 4, 4) homogeneous matrices from (7, N) columns."""
    x, y, z, w = columns[3], columns[4], columns[5], columns[6]
    n = columns.shape[1]
    norm = x * x + y * y + z * z + w * w
    s = 2.0 / np.where(norm > 0.0, norm, np.inf)
    xs, ys, zs = x * s, y * s, z * s
    xx, yy, zz = x * xs, y * ys, z * zs
    xy, xz, yz = x * ys, x * zs, y * zs
    wx, wy, wz = w * xs, w * ys, w * zs
    # Written straight into the result: one fresh (N, 4, 4) array, no transposing copy
    # (first-touch page faults of a second 16 N array cost more than strided writes).
    m = np.empty((n, 4, 4))
    m[:, 0, 0] = 1.0 - (yy + zz)
    m[:, 0, 1] = xy - wz
    m[:, 0, 2] = xz + wy
    m[:, 0, 3] = columns[0]
    m[:, 1, 0] = xy + wz
    m[:, 1, 1] = 1.0 - (xx + zz)
    m[:, 1, 2] = yz - wx
    m[:, 1, 3] = columns[1]
    m[:, 2, 0] = xz - wy
    m[:, 2, 1] = yz + wx
    m[:, 2, 2] = 1.0 - (xx + yy)
    m[:, 2, 3] = columns[2]
    m[:, 3, :3] = 0.0
    m[:, 3, 3] = 1.0
    return m


def _identity_columns(n):
    out = np.zeros((7, n))
    out[6] = 1.0
    return out


def _time_ns(time, name="time") -> int:
    """Integer nanoseconds of a Time or seconds; InvalidArgumentException otherwise."""
    if time.__class__ is Time:
        return time._ns
    try:
        return to_nanoseconds(time, name)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentException(str(exc)) from None


def _suffix(source_frame, target_frame):
    return ", when looking up transform from frame [%s] to frame [%s]" % (
        source_frame,
        target_frame,
    )


def _strip_slash(frame_id):
    """tf2 strips exactly one leading '/' from frame ids on insert."""
    if frame_id.startswith("/"):
        return frame_id[1:]
    return frame_id



#: Frames compared for a "did you mean" (difflib is quadratic in the name length, linear in
#: the number of frames: bounded so an error on a huge tree stays cheap).
_SUGGEST_MAX_FRAMES = 2000


def did_you_mean_sentence(name: str, frames) -> str:
    """``"Did you mean 'base_link'?"`` for a frame id close to ``name`` among ``frames``, or
    ``""``. Appended after tf2's own message, which stays intact (users grep for it)."""
    if not isinstance(name, str) or len(name) > 256 or len(frames) > _SUGGEST_MAX_FRAMES:
        return ""
    import difflib

    close = difflib.get_close_matches(name, [f for f in frames if f], n=1, cutoff=0.75)
    return f"Did you mean '{close[0]}'?" if close else ""

class BufferCore:
    """The transform store: per-frame caches, the frame tree and tf2's lookups.

    ``cache_time`` (a ``Duration`` or seconds, default 10 s) is how much history each
    non-static frame keeps.
    """

    def __init__(self, cache_time=10.0):
        cache_time_ns = (
            DEFAULT_CACHE_TIME_NS if cache_time is None else duration_to_nanoseconds(
                cache_time, "cache_time"
            )
        )
        if cache_time_ns < 0:
            raise InvalidArgumentException("cache_time must not be negative")
        self._cache_time_ns = cache_time_ns
        # Frame registry: name -> compact id; id 0 is "no frame / no parent".
        self._frame_ids: dict[str, int] = {}
        self._lookup_ids: dict[str, int] = {}  # names a lookup accepts (no leading '/')
        self._names: list[str] = [_NO_PARENT]
        self._caches: list = [None]
        self._authority: list = [None]

    # ==================================================================================
    # Properties
    # ==================================================================================

    @property
    def cache_time(self):
        """How much history each non-static frame keeps, as a ``Duration``."""
        from .time import Duration

        return Duration.from_nanoseconds(self._cache_time_ns)

    # ==================================================================================
    # Insertion
    # ==================================================================================

    def set_transform(self, transform, authority, is_static=False) -> bool:
        """Store a ``TransformStamped`` (maps data in ``child_frame_id`` into
        ``header.frame_id``).

        Returns True when stored, False when older than the cache window (tf2's
        TF_OLD_DATA). A repeated stamp replaces the earlier sample. Raises
        ``InvalidArgumentException`` for invalid input (nothing stored).
        """
        try:
            header = transform.header
            tr = transform.transform
            t = tr.translation
            q = tr.rotation
            parent = header.frame_id
            child = transform.child_frame_id
            stamp = header.stamp
            values = (t.x, t.y, t.z, q.x, q.y, q.z, q.w)
        except AttributeError as exc:
            raise InvalidArgumentException(
                "set_transform needs a TransformStamped, got %s (%s)"
                % (type(transform).__name__, exc)
            ) from None
        try:
            stamp_ns = stamp._ns if stamp.__class__ is Time else to_nanoseconds(stamp, "stamp")
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentException(
                "header.stamp of frame \"%s\" (parent \"%s\") is invalid: %s"
                % (child, parent, exc)
            ) from None
        stored = self._insert_values(parent, child, stamp_ns, *values, authority, is_static)
        if stored:
            self._notify_new_data()
        return stored

    def set_transform_static(self, transform, authority) -> bool:
        """``set_transform(transform, authority, is_static=True)``: valid at every time;
        only the latest per child frame is kept."""
        return self.set_transform(transform, authority, True)

    def set_transform_values(
        self, parent, child, stamp_ns, tx, ty, tz, qx, qy, qz, qw, authority, is_static=False
    ) -> bool:
        """The fast single insert: same rules as ``set_transform`` without message objects.

        ``stamp_ns`` is an int in nanoseconds; ``(tx, ty, tz)`` the translation of ``child``
        in ``parent``; ``(qx, qy, qz, qw)`` its rotation.
        """
        stored = self._insert_values(
            parent, child, stamp_ns, tx, ty, tz, qx, qy, qz, qw, authority, is_static
        )
        if stored:
            self._notify_new_data()
        return stored

    def _insert_values(
        self, parent, child, stamp_ns, tx, ty, tz, qx, qy, qz, qw, authority, is_static
    ) -> bool:
        """Validate and store one sample, without notification (the hot insert path)."""
        ids = self._lookup_ids
        try:
            # Fast path: both names already known as lookup-able ids (so non-empty and
            # without a leading '/'), different, numbers finite, quaternion near unit.
            child_id = ids.get(child)
            parent_id = ids.get(parent)
            if (
                child_id is not None
                and parent_id is not None
                and child_id != parent_id
                and stamp_ns.__class__ is int
                and _STAMP_MIN <= stamp_ns <= _STAMP_MAX
            ):
                norm2 = qx * qx + qy * qy + qz * qz + qw * qw
                # NaN or ±inf anywhere makes this NaN (inf * 0 = NaN); anything but plain
                # numbers (an array, say) makes it something other than a float.
                check = tx * 0.0 + ty * 0.0 + tz * 0.0 + norm2 * 0.0
                if (
                    check == 0.0
                    and isinstance(check, float)
                    and -_QUATERNION_TOLERANCE < norm2 - 1.0 < _QUATERNION_TOLERANCE
                ):
                    if norm2 != 1.0:
                        scale = 1.0 / sqrt(norm2)
                        qx *= scale
                        qy *= scale
                        qz *= scale
                        qw *= scale
                    cache = self._caches[child_id]
                    if cache is None or (not cache.is_static) != (not is_static):
                        cache = self._new_cache(child_id, is_static)
                    if cache.insert(stamp_ns, tx, ty, tz, qx, qy, qz, qw, parent_id):
                        self._authority[child_id] = authority
                        return True
                    return False
        except (TypeError, ValueError, _StructError):  # unhashable names, non-numbers:
            pass  # the slow path names the cause
        return self._store(
            parent, child, stamp_ns, (tx, ty, tz, qx, qy, qz, qw), authority, is_static
        )

    def _new_cache(self, child_id, is_static):
        # A change of kind (static <-> dynamic) replaces the cache (ROS 2 rule).
        cache = StaticCache() if is_static else TimeCache(self._cache_time_ns)
        self._caches[child_id] = cache
        return cache

    def set_transforms(
        self, parents, children, stamps_ns, values, authority, is_static=False
    ) -> BatchResult:
        """Store N transforms at once; invalid rows are skipped, the rest stored.

        ``parents``/``children``: N frame ids; ``stamps_ns``: N int nanoseconds; ``values``:
        float64 array (N, 7) of ``[tx, ty, tz, qx, qy, qz, qw]``.
        """
        try:
            values = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentException(
                "set_transforms needs a float array of values, shape (N, 7): %s" % exc
            ) from None
        n = len(parents)
        if values.ndim != 2 or values.shape[1] != 7 or values.shape[0] != n:
            raise InvalidArgumentException(
                "set_transforms needs values of shape (N, 7) = (%d, 7), got %s"
                % (n, values.shape)
            )
        if len(children) != n or len(stamps_ns) != n:
            raise InvalidArgumentException(
                "set_transforms needs as many children (%d) and stamps (%d) as parents (%d)"
                % (len(children), len(stamps_ns), n)
            )
        stamps = np.asarray(stamps_ns)
        if n and stamps.dtype.kind not in "iu":
            raise InvalidArgumentException(
                "set_transforms needs integer nanosecond stamps, got dtype %s" % stamps.dtype
            )
        stamp_list = stamps.tolist()
        if n < _SMALL_BATCH or (stamps.dtype.kind == "u" and int(stamps.max()) > _STAMP_MAX):
            # A few rows (plain float checks per row cost less than numpy's fixed costs), or
            # unsigned stamps beyond int64 (the per-row path names them).
            return self._set_rows(
                parents, children, stamp_list, values.tolist(), authority, is_static
            )
        # Vectorised validation, first for the whole batch in a few numpy calls: the sum over
        # rows of (|q|² - 1)² within tolerance² (so every row's |q|² is within tolerance of
        # 1) and the sum of all squared values finite (so every value is). vdot raises no
        # floating-point warnings on NaN, inf or overflow, and once its sum is finite no
        # square can overflow. If that fails (an invalid row, or only a huge one), the exact
        # per-row mask. Few and cheap numpy calls on purpose: a listener wakes once per
        # message with cold caches, where each call costs microseconds (einsum several
        # times what square, @ or vdot cost).
        spread = _INF
        if float(np.vdot(values, values)) < _INF:
            deviation = np.square(values) @ _QUATERNION_COLUMNS - 1.0  # |q|² - 1 per row
            spread = float(deviation @ deviation)
        if spread < _QUATERNION_TOLERANCE_2:
            good = None  # every row
            if spread == 0.0:  # every |q|² exactly 1: nothing to normalize
                normalized = values
            else:
                # |q|² back exactly: within tolerance of 1, |q|² - 1 lost no bits.
                normalized = values.copy()
                normalized[:, 3:] *= (1.0 / np.sqrt(deviation + 1.0))[:, None]
        else:
            quat = values[:, 3:]
            norm2 = np.einsum("ij,ij->i", quat, quat)  # exact: no 0 * inf from translations
            deviation = norm2 - 1.0
            good_rows = np.isfinite(values).all(axis=1)
            good_rows &= np.abs(deviation) < _QUATERNION_TOLERANCE
            good = good_rows.tolist()
            normalized = values.copy()
            normalized[:, 3:] *= (1.0 / np.sqrt(np.where(good_rows, norm2, 1.0)))[:, None]
        # The rows as the bytes the caches store (56 per row, native doubles).
        data = normalized.tobytes()
        stored = old = 0
        invalid = []
        ids = self._lookup_ids
        caches = self._caches
        authorities = self._authority
        window = self._cache_time_ns
        dynamic = not is_static
        try:  # frame ids (None: unknown, or not lookup-able), in one C loop each
            child_ids = list(map(ids.get, children))
            parent_ids = list(map(ids.get, parents))
        except TypeError:  # an unhashable frame id: that row takes the slow path below
            child_ids = [ids.get(c) if c.__class__ is str else None for c in children]
            parent_ids = [ids.get(p) if p.__class__ is str else None for p in parents]
        k = -1
        j = -_ROW_BYTES
        for child_id, parent_id, stamp in zip(child_ids, parent_ids, stamp_list):
            k += 1
            j += _ROW_BYTES
            try:
                # Ids are >= 1, so "known" is plain truth.
                if child_id and parent_id and child_id != parent_id and (good is None or good[k]):
                    # Known lookup-able names, numbers already checked.
                    cache = caches[child_id]
                    if cache.__class__ is TimeCache and dynamic:
                        # TimeCache.insert's common case, inlined: an in-order append that
                        # prunes at most one sample (anything else: insert_packed below).
                        cache_stamps = cache.stamps
                        m = len(cache_stamps)
                        start = cache.start
                        if m > start:
                            latest = cache_stamps[-1]
                            limit = latest - window
                            if stamp > latest and (
                                cache_stamps[start] >= limit or cache_stamps[start + 1] >= limit
                            ):
                                if cache_stamps[start] < limit:
                                    start += 1
                                    cache.start = start
                                    if start >= _COMPACT_MIN and start * 8 >= m - start:
                                        cache._compact()
                                if cache._table is not None or cache._last is not None:
                                    cache._table = cache._last = None
                                cache_stamps.append(stamp)
                                cache.values.frombytes(data[j : j + _ROW_BYTES])
                                cache.parents.append(parent_id)
                                authorities[child_id] = authority
                                stored += 1
                                continue
                    elif cache is None or cache.is_static == dynamic:
                        cache = self._new_cache(child_id, is_static)
                    if cache.insert_packed(stamp, data[j : j + _ROW_BYTES], parent_id):
                        authorities[child_id] = authority
                        stored += 1
                    else:
                        old += 1
                    continue
                # Slow path: new or unusual names, or numbers that failed the check.
                parent = parents[k]
                child = children[k]
                if parent.__class__ is str and child.__class__ is str and (good is None or good[k]):
                    p = parent[1:] if parent[:1] == "/" else parent
                    c = child[1:] if child[:1] == "/" else child
                    row = normalized[k].tolist()
                    if not c or not p or c == p:
                        self._validate_insert(parent, child, row)  # raises
                else:
                    # The exact message for this row (or a str subclass, or a huge row).
                    p, c, row = self._validate_insert(parent, child, values[k].tolist())
                if self._store_valid(p, c, stamp_list[k], row, authority, is_static):
                    stored += 1
                else:
                    old += 1
            except InvalidArgumentException as exc:
                invalid.append((k, exc))
            except TypeError as exc:  # an unhashable frame id
                invalid.append((k, self._invalid_names(parents[k], children[k], exc)))
        if stored:
            self._notify_new_data()
        return BatchResult(stored, old, invalid)

    def _set_rows(self, parents, children, stamps, rows, authority, is_static) -> BatchResult:
        """``set_transforms`` for a few rows (lists of Python values): one
        ``_insert_values`` per row."""
        stored = old = 0
        invalid = []
        insert = self._insert_values
        for k in range(len(rows)):
            try:
                if insert(parents[k], children[k], stamps[k], *rows[k], authority, is_static):
                    stored += 1
                else:
                    old += 1
            except InvalidArgumentException as exc:
                invalid.append((k, exc))
            except TypeError as exc:
                invalid.append((k, self._invalid_names(parents[k], children[k], exc)))
        if stored:
            self._notify_new_data()
        return BatchResult(stored, old, invalid)

    def _invalid_names(self, parent, child, exc):
        """The exception for a row whose frame ids could not be used (unhashable)."""
        try:
            self._validate_insert(parent, child, _IDENTITY)
        except InvalidArgumentException as named:
            return named
        return InvalidArgumentException("frame ids must be strings (%s)" % exc)

    def _notify_new_data(self):
        """Called once at the end of every insert call that stored something; ``Buffer``
        overrides it to wake waiters."""

    def _validate_insert(self, parent, child, values):
        """Raise ``InvalidArgumentException`` naming the bad field; return the stripped
        ``(parent, child, values)`` with the quaternion normalized."""
        if parent.__class__ is not str and not isinstance(parent, str):
            raise InvalidArgumentException(
                "frame_id of frame %r must be a str, got %s" % (child, type(parent).__name__)
            )
        if child.__class__ is not str and not isinstance(child, str):
            raise InvalidArgumentException(
                "child_frame_id (parent %r) must be a str, got %s"
                % (parent, type(child).__name__)
            )
        parent = _strip_slash(parent)
        child = _strip_slash(child)
        if not child:
            raise InvalidArgumentException(
                "child_frame_id of transform with parent \"%s\" is empty" % parent
            )
        if not parent:
            raise InvalidArgumentException(
                "frame_id (the parent) of frame \"%s\" is empty" % child
            )
        if child == parent:
            raise InvalidArgumentException(
                "frame \"%s\" cannot be its own parent (frame_id and child_frame_id are the "
                "same)" % child
            )
        if len(values) != 7:
            raise InvalidArgumentException(
                "transform of frame \"%s\" (parent \"%s\") needs 7 values, got %d"
                % (child, parent, len(values))
            )
        out = []
        for name, v in zip(_FIELDS, values):
            try:
                if isinstance(v, (str, bytes)):
                    raise TypeError
                f = float(v)
            except (TypeError, ValueError):
                raise InvalidArgumentException(
                    "%s of frame \"%s\" (parent \"%s\") is not a number: %r"
                    % (name, child, parent, v)
                ) from None
            if f != f or f in (float("inf"), float("-inf")):
                raise InvalidArgumentException(
                    "%s of frame \"%s\" (parent \"%s\") is %r" % (name, child, parent, f)
                )
            out.append(f)
        qx, qy, qz, qw = out[3:]
        norm2 = qx * qx + qy * qy + qz * qz + qw * qw
        if not abs(norm2 - 1.0) < _QUATERNION_TOLERANCE:
            raise InvalidArgumentException(
                "transform.rotation of frame \"%s\" (parent \"%s\") is not a unit quaternion: "
                "(%g, %g, %g, %g) has x²+y²+z²+w² = %g, which must be within %g of 1"
                % (child, parent, qx, qy, qz, qw, norm2, _QUATERNION_TOLERANCE)
            )
        if norm2 != 1.0:
            s = 1.0 / sqrt(norm2)
            out[3] = qx * s
            out[4] = qy * s
            out[5] = qz * s
            out[6] = qw * s
        return parent, child, out

    def _store(self, parent, child, stamp_ns, values, authority, is_static) -> bool:
        """Validate and store one sample (no notification)."""
        tx, ty, tz, qx, qy, qz, qw = values
        try:
            # NaN or ±inf anywhere makes this NaN; a non-number raises TypeError.
            check = tx * 0.0 + ty * 0.0 + tz * 0.0 + qx * 0.0 + qy * 0.0 + qz * 0.0 + qw * 0.0
            norm2 = qx * qx + qy * qy + qz * qz + qw * qw
            fast = (
                isinstance(check, float)
                and check == 0.0
                and -_QUATERNION_TOLERANCE < norm2 - 1.0 < _QUATERNION_TOLERANCE
                and parent.__class__ is str
                and child.__class__ is str
            )
        except (TypeError, ValueError):
            fast = False
        if fast:
            p = parent[1:] if parent[:1] == "/" else parent
            c = child[1:] if child[:1] == "/" else child
            if not c or not p or c == p:
                self._validate_insert(parent, child, values)  # raises
            parent, child = p, c
            if norm2 != 1.0:
                s = 1.0 / sqrt(norm2)
                values = (tx, ty, tz, qx * s, qy * s, qz * s, qw * s)
        else:
            parent, child, values = self._validate_insert(parent, child, values)
        if stamp_ns.__class__ is not int:
            try:
                stamp_ns = stamp_ns.__index__()
            except (AttributeError, TypeError):
                raise InvalidArgumentException(
                    "stamp of frame \"%s\" (parent \"%s\") must be integer nanoseconds, got %r"
                    % (child, parent, stamp_ns)
                ) from None
        if not _STAMP_MIN <= stamp_ns <= _STAMP_MAX:
            raise InvalidArgumentException(
                "stamp of frame \"%s\" (parent \"%s\") is outside 64-bit nanoseconds: %d"
                % (child, parent, stamp_ns)
            )
        return self._store_valid(parent, child, stamp_ns, values, authority, is_static)

    def _store_valid(self, parent, child, stamp_ns, values, authority, is_static) -> bool:
        """Store one already validated and stripped sample."""
        ids = self._frame_ids
        child_id = ids.get(child)
        if child_id is None:
            child_id = self._register(child)  # child first, then parent, as tf2
        parent_id = ids.get(parent)
        if parent_id is None:
            parent_id = self._register(parent)
        cache = self._caches[child_id]
        if cache is None or (not cache.is_static) != (not is_static):
            cache = self._new_cache(child_id, is_static)
        if cache.insert(stamp_ns, *values, parent_id):
            self._authority[child_id] = authority
            return True
        return False

    def _register(self, name: str) -> int:
        fid = len(self._names)
        self._names.append(name)
        self._caches.append(None)
        self._authority.append(None)
        self._frame_ids[name] = fid
        if not name.startswith("/"):
            self._lookup_ids[name] = fid
        return fid

    def clear(self):
        """Forget all non-static data; frames stay known and static transforms stay."""
        for cache in self._caches:
            if cache is not None:
                cache.clear()

    # ==================================================================================
    # Frame-id validation (tf2's wording)
    # ==================================================================================

    def _frame_error(self, name, argument, function="lookupTransform"):
        """The exception tf2 raises for a frame id a lookup cannot use, or None."""
        if name.__class__ is not str and not isinstance(name, str):
            return InvalidArgumentException(
                "Invalid argument %r passed to %s argument %s - frame ids must be strings"
                % (name, function, argument)
            )
        if not name:
            return InvalidArgumentException(
                'Invalid argument "%s" passed to %s argument %s - in tf2 frame_ids cannot be '
                "empty" % (name, function, argument)
            )
        if name[0] == "/":
            return InvalidArgumentException(
                "Invalid argument \"%s\" passed to %s argument %s - in tf2 frame_ids cannot "
                "start with a '/'" % (name, function, argument)
            )
        if name not in self._lookup_ids:
            return LookupException(
                '"%s" passed to %s argument %s does not exist. ' % (name, function, argument)
                + did_you_mean_sentence(name, self._lookup_ids)
            )
        return None

    def _frame_id(self, name, argument, function="lookupTransform") -> int:
        fid = self._lookup_ids.get(name)
        if fid is None:
            raise self._frame_error(name, argument, function)
        return fid

    def _can_frame_message(self, name, argument):
        """canTransform's non-throwing validation message, or None if ``name`` is usable."""
        if name.__class__ is not str and not isinstance(name, str):
            return 'Invalid frame ID %r passed to canTransform argument %s - frame ids must be strings' % (
                name,
                argument,
            )
        if not name:
            return (
                'Invalid frame ID "" passed to canTransform argument %s - in tf2 frame_ids '
                "cannot be empty" % argument
            )
        if name[0] == "/":
            return (
                "Invalid frame ID \"%s\" passed to canTransform argument %s - in tf2 frame_ids "
                "cannot start with a '/'" % (name, argument)
            )
        if name not in self._lookup_ids:
            return 'Invalid frame ID "%s" passed to canTransform argument %s - frame does not exist' % (
                name,
                argument,
            )
        return None

    # ==================================================================================
    # The walk (tf2's walkToTopParent and getLatestCommonTime)
    # ==================================================================================

    def _loop_error(self):
        return (
            LookupException,
            "The tf tree is invalid because it contains a loop.\n"
            + self.all_frames_as_string()
            + "\n",
        )

    def _connectivity_error(self, target_id, source_id):
        return (
            ConnectivityException,
            "Could not find a connection between '%s' and '%s' because they are not part of "
            "the same tree.Tf has two or more unconnected trees."
            % (self._names[target_id], self._names[source_id]),
        )

    def _common_time(self, target_id, source_id):
        """tf2's getLatestCommonTime: ``(t_ns, None)`` or ``(None, (class, message))``.

        Time 0 means the latest time at which the whole chain is known: the minimum over
        the latest stamps of the dynamic links on the path (static links and samples
        stamped 0 are ignored; links above the common ancestor are not on the path); 0 when
        every link is static.
        """
        caches = self._caches
        if source_id == target_id:
            cache = caches[source_id]
            return (cache.latest_stamp() if cache is not None else 0), None
        source_links = []  # (latest stamp, parent) from source upwards
        frame = source_id
        depth = 0
        common = None
        while frame:
            cache = caches[frame]
            if cache is None:
                break
            stamp, parent = cache.latest()
            if parent == 0:
                break
            if stamp != 0 and (common is None or stamp < common):
                common = stamp
            source_links.append((stamp, parent))
            frame = parent
            if frame == target_id:
                return (0 if common is None else common), None
            depth += 1
            if depth > MAX_GRAPH_DEPTH:
                return None, self._loop_error()
        source_parents = {p for _, p in source_links}
        frame = target_id
        depth = 0
        common = None
        common_parent = 0
        while True:
            cache = caches[frame]
            if cache is None:
                break
            stamp, parent = cache.latest()
            if parent == 0:
                break
            if stamp != 0 and (common is None or stamp < common):
                common = stamp
            if parent in source_parents:
                common_parent = parent
                break
            frame = parent
            if frame == source_id:
                return (0 if common is None else common), None
            depth += 1
            if depth > MAX_GRAPH_DEPTH:
                return None, self._loop_error()
        if common_parent == 0:
            return None, self._connectivity_error(target_id, source_id)
        for stamp, parent in source_links:
            if stamp != 0 and (common is None or stamp < common):
                common = stamp
            if parent == common_parent:
                break
        return (0 if common is None else common), None

    def _walk(self, target_id, source_id, t, chain=None):
        """tf2's walkToTopParent at ``t`` ns (already resolved if it was 0).

        Returns ``(values, None)`` with the 7-tuple of T(target <- source), or
        ``(None, (exception class, message))``. With ``chain`` (a list), it is filled with
        the frame ids passed, source first (for ``chain()``).
        """
        caches = self._caches
        # Source walk: accumulate T(top <- source) in locals (the hot path of every lookup).
        frame = source_id
        top = frame
        depth = 0
        acc = _IDENTITY
        source_error = None
        source_chain = [] if chain is not None else None
        while True:
            if source_chain is not None:
                source_chain.append(frame)
            if frame == target_id:
                # Target is an ancestor of source (tf2 checks this after fetching the
                # target's own link, whose outcome cannot change the result).
                if chain is not None:
                    chain.extend(source_chain)
                return acc, None
            cache = caches[frame]
            if cache is None:
                top = frame  # a root
                break
            link = cache.get(t)
            if link is None:
                # There may still be a path from the target side: remember the error.
                top = frame
                source_error = cache.error(t)
                break
            top = frame
            frame = link[7]
            if acc is _IDENTITY:
                acc = link
            else:
                # acc = link ∘ acc, inlined.
                lx, ly, lz, lqx, lqy, lqz, lqw, _ = link
                ax, ay, az, aqx, aqy, aqz, aqw = acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6]
                ux = 2.0 * (lqy * az - lqz * ay)
                uy = 2.0 * (lqz * ax - lqx * az)
                uz = 2.0 * (lqx * ay - lqy * ax)
                acc = (
                    lx + ax + lqw * ux + lqy * uz - lqz * uy,
                    ly + ay + lqw * uy + lqz * ux - lqx * uz,
                    lz + az + lqw * uz + lqx * uy - lqy * ux,
                    lqw * aqx + lqx * aqw + lqy * aqz - lqz * aqy,
                    lqw * aqy - lqx * aqz + lqy * aqw + lqz * aqx,
                    lqw * aqz + lqx * aqy - lqy * aqx + lqz * aqw,
                    lqw * aqw - lqx * aqx - lqy * aqy - lqz * aqz,
                )
            depth += 1
            if depth > MAX_GRAPH_DEPTH:
                return None, self._loop_error()
        # Target walk: accumulate T(top <- target) until meeting the source's path.
        frame = target_id
        depth = 0
        tacc = _IDENTITY
        target_chain = [] if chain is not None else None
        while frame != top:
            if target_chain is not None:
                target_chain.append(frame)
            if frame == source_id:
                # Source is an ancestor of target.
                if chain is not None:
                    chain.extend(reversed(target_chain))
                return _inverse(tacc), None
            cache = caches[frame]
            if cache is None:
                break
            link = cache.get(t)
            if link is None:
                cls, message = cache.error(t)
                return None, (
                    cls,
                    message + _suffix(self._names[source_id], self._names[target_id]),
                )
            tacc = link if tacc is _IDENTITY else _compose(link, tacc)
            frame = link[7]
            depth += 1
            if depth > MAX_GRAPH_DEPTH:
                return None, self._loop_error()
        if frame != top:
            if source_error is not None:
                cls, message = source_error
                return None, (
                    cls,
                    message + _suffix(self._names[source_id], self._names[target_id]),
                )
            return None, self._connectivity_error(target_id, source_id)
        if chain is not None:
            # Prune the common part above the lowest common ancestor.
            s = source_chain
            tgt = target_chain + [top]
            i = len(s) - 1
            j = len(tgt) - 1
            while i > 0 and j > 0 and s[i - 1] == tgt[j - 1]:
                i -= 1
                j -= 1
            chain.extend(s[: i + 1])
            chain.extend(reversed(tgt[:j]))
        if tacc is _IDENTITY:
            return acc, None
        return _compose(_inverse(tacc), acc), None

    def _reachable(self, target_id, source_id, t) -> bool:
        """Whether ``_walk`` at ``t`` (non-zero) would succeed: the same walk, fetching only
        parents (tf2's CanTransformAccum)."""
        caches = self._caches
        frame = source_id
        top = frame
        depth = 0
        while True:
            if frame == target_id:
                return True
            cache = caches[frame]
            if cache is None:
                top = frame
                break
            parent = cache.parent_at(t)
            top = frame
            if not parent:
                break
            frame = parent
            depth += 1
            if depth > MAX_GRAPH_DEPTH:
                return False
        frame = target_id
        depth = 0
        while frame != top:
            if frame == source_id:
                return True
            cache = caches[frame]
            if cache is None:
                return False
            parent = cache.parent_at(t)
            if not parent:
                return False
            frame = parent
            depth += 1
            if depth > MAX_GRAPH_DEPTH:
                return False
        return True

    def _resolve(self, target_id, source_id, t):
        """``(values, t_used, None)`` or ``(None, t, (class, message))`` for ids."""
        if t == 0:
            t, error = self._common_time(target_id, source_id)
            if error is not None:
                return None, 0, error
        values, error = self._walk(target_id, source_id, t)
        return values, t, error

    # ==================================================================================
    # Lookups
    # ==================================================================================

    def _identity_stamp(self, frame, t):
        """The stamp of an identity lookup (target == source): the frame's latest stamp for
        time 0, else ``t``."""
        if t == 0:
            fid = self._frame_ids.get(frame) if frame.__class__ is str else None
            if fid is not None and self._caches[fid] is not None:
                return self._caches[fid].latest_stamp()
        return t

    @staticmethod
    def _stamped(target_frame, source_frame, t, time, values):
        """A TransformStamped built without the constructors' checks (hot path)."""
        if time.__class__ is not Time or time._ns != t:
            time = _new(Time)
            _setattr(time, "_ns", t)
        header = _new(Header)
        header.stamp = time
        header.frame_id = target_frame
        translation = _new(Vector3)
        translation.x = values[0]
        translation.y = values[1]
        translation.z = values[2]
        rotation = _new(Quaternion)
        rotation.x = values[3]
        rotation.y = values[4]
        rotation.z = values[5]
        rotation.w = values[6]
        transform = _new(Transform)
        transform.translation = translation
        transform.rotation = rotation
        out = _new(TransformStamped)
        out.header = header
        out.child_frame_id = source_frame
        out.transform = transform
        return out

    def lookup_transform(self, target_frame, source_frame, time) -> TransformStamped:
        """The transform that maps data in ``source_frame`` into ``target_frame`` at ``time``
        (a ``Time`` or seconds; zero = the latest common time).

        ``header.stamp`` is the time used (the resolved latest common time for zero).
        Raises ``LookupException``, ``ConnectivityException``, ``ExtrapolationException``
        (Backward/Forward/NoData subclasses) or ``InvalidArgumentException`` with tf2's
        messages.
        """
        t = time._ns if time.__class__ is Time else _time_ns(time)
        if target_frame == source_frame:
            return self._stamped(
                target_frame, source_frame, self._identity_stamp(target_frame, t), time, _IDENTITY
            )
        ids = self._lookup_ids
        target_id = ids.get(target_frame)
        if target_id is None:
            raise self._frame_error(target_frame, "target_frame")
        source_id = ids.get(source_frame)
        if source_id is None:
            raise self._frame_error(source_frame, "source_frame")
        if t == 0:
            t, error = self._common_time(target_id, source_id)
            if error is not None:
                raise error[0](error[1])
        values, error = self._walk(target_id, source_id, t)
        if error is not None:
            raise error[0](error[1])
        return self._stamped(target_frame, source_frame, t, time, values)

    def _lookup_values_full(self, target_frame, target_time, source_frame, source_time, fixed_frame):
        """``(values, stamp_ns)`` of the full lookup; raises as ``lookup_transform_full``."""
        tt = _time_ns(target_time)
        st = _time_ns(source_time)
        target_id = self._frame_id(target_frame, "target_frame")
        source_id = self._frame_id(source_frame, "source_frame")
        fixed_id = self._frame_id(fixed_frame, "fixed_frame")
        # A = T(fixed <- source) at source_time; B = T(target <- fixed) at target_time.
        if fixed_id == source_id:
            a = _IDENTITY
        else:
            a, _, error = self._resolve(fixed_id, source_id, st)
            if error is not None:
                raise error[0](error[1])
        if target_id == fixed_id:
            b = _IDENTITY
            stamp = self._identity_stamp(target_frame, tt)
        else:
            b, stamp, error = self._resolve(target_id, fixed_id, tt)
            if error is not None:
                raise error[0](error[1])
        return _compose(b, a), stamp

    def lookup_transform_full(
        self, target_frame, target_time, source_frame, source_time, fixed_frame
    ) -> TransformStamped:
        """Time travel: data in ``source_frame`` at ``source_time`` mapped into
        ``target_frame`` at ``target_time``, assuming ``fixed_frame`` does not move.

        = T(target <- fixed at target_time) ∘ T(fixed <- source at source_time); the stamp
        is the target side's time.
        """
        values, stamp = self._lookup_values_full(
            target_frame, target_time, source_frame, source_time, fixed_frame
        )
        return self._stamped(target_frame, source_frame, stamp, target_time, values)

    def _can_transform_core(self, target_frame, source_frame, time):
        """``(True, "")`` or ``(False, tf2's error message)``; never raises for missing
        data (like tf2_py's ``can_transform_core``)."""
        if target_frame == source_frame:
            return True, ""
        t = _time_ns(time)
        for name, argument in ((target_frame, "target_frame"), (source_frame, "source_frame")):
            message = self._can_frame_message(name, argument)
            if message is not None:
                return False, message
        ids = self._lookup_ids
        target_id = ids[target_frame]
        source_id = ids[source_frame]
        if t != 0 and self._reachable(target_id, source_id, t):
            return True, ""
        _, _, error = self._resolve(target_id, source_id, t)
        if error is not None:
            return False, error[1]
        return True, ""

    def can_transform(self, target_frame, source_frame, time) -> bool:
        """Whether ``lookup_transform(target_frame, source_frame, time)`` would succeed."""
        if target_frame == source_frame:
            return True
        ids = self._lookup_ids
        target_id = ids.get(target_frame)
        source_id = ids.get(source_frame)
        if target_id is None or source_id is None:
            return False
        t = time._ns if time.__class__ is Time else _time_ns(time)
        if t == 0:
            t, error = self._common_time(target_id, source_id)
            if error is not None:
                return False
        return self._reachable(target_id, source_id, t)

    def _can_transform_full_core(
        self, target_frame, target_time, source_frame, source_time, fixed_frame
    ):
        """``(True, "")`` or ``(False, message)`` for the full form."""
        tt = _time_ns(target_time)
        st = _time_ns(source_time)
        for name, argument in (
            (target_frame, "target_frame"),
            (source_frame, "source_frame"),
            (fixed_frame, "fixed_frame"),
        ):
            message = self._can_frame_message(name, argument)
            if message is not None:
                return False, message
        ids = self._lookup_ids
        target_id, source_id, fixed_id = ids[target_frame], ids[source_frame], ids[fixed_frame]
        for a, b, t in ((target_id, fixed_id, tt), (fixed_id, source_id, st)):
            if a != b:
                _, _, error = self._resolve(a, b, t)
                if error is not None:
                    return False, error[1]
        return True, ""

    def can_transform_full(
        self, target_frame, target_time, source_frame, source_time, fixed_frame
    ) -> bool:
        """Whether ``lookup_transform_full(...)`` would succeed."""
        return self._can_transform_full_core(
            target_frame, target_time, source_frame, source_time, fixed_frame
        )[0]

    def _transform_error(self, target_frame, source_frame, time):
        """The exception ``lookup_transform`` would raise now, or None if it would succeed
        (for ``Buffer``: an ``InvalidArgumentException`` cannot be cured by waiting)."""
        if target_frame == source_frame:
            return None
        t = _time_ns(time)
        ids = self._lookup_ids
        target_id = ids.get(target_frame)
        if target_id is None:
            return self._frame_error(target_frame, "target_frame")
        source_id = ids.get(source_frame)
        if source_id is None:
            return self._frame_error(source_frame, "source_frame")
        _, _, error = self._resolve(target_id, source_id, t)
        return None if error is None else error[0](error[1])

    def _transform_full_error(
        self, target_frame, target_time, source_frame, source_time, fixed_frame
    ):
        """The exception ``lookup_transform_full`` would raise now, or None."""
        try:
            self._lookup_values_full(
                target_frame, target_time, source_frame, source_time, fixed_frame
            )
        except TransformException as exc:
            return exc
        return None

    def get_latest_common_time(self, target_frame, source_frame) -> Time:
        """What time zero resolves to for this pair: the latest time at which every dynamic
        link between the two frames is known (``Time()`` when all are static)."""
        target_id = self._frame_id(target_frame, "target_frame", "get_latest_common_time")
        source_id = self._frame_id(source_frame, "source_frame", "get_latest_common_time")
        t, error = self._common_time(target_id, source_id)
        if error is not None:
            raise error[0](error[1])
        return Time.from_nanoseconds(t)

    def get_parent(self, frame, time):
        """The parent frame id of ``frame`` at ``time``, or None (unknown frame, a root, or
        no data at that time)."""
        fid = self._lookup_ids.get(frame) if isinstance(frame, str) else None
        if fid is None:
            return None
        cache = self._caches[fid]
        if cache is None:
            return None
        parent = cache.parent_at(_time_ns(time))
        return self._names[parent] if parent else None

    # ==================================================================================
    # Batch lookups
    # ==================================================================================

    @staticmethod
    def _times_array(times) -> np.ndarray:
        """int64 nanoseconds from an array of float seconds, or a sequence of Times."""
        if isinstance(times, np.ndarray) and times.dtype.kind in "fiu":
            arr = times
        else:
            try:
                arr = np.asarray(times)
            except (TypeError, ValueError):
                arr = None
            if arr is None or arr.dtype.kind not in "fiu":
                try:
                    return np.fromiter(
                        (to_nanoseconds(t) for t in times), dtype=np.int64, count=len(times)
                    )
                except (TypeError, ValueError) as exc:
                    raise InvalidArgumentException(
                        "lookup_transforms: times must be seconds or Times (%s)" % exc
                    ) from None
        arr = arr.reshape(-1)
        if arr.dtype.kind == "f":
            if not np.isfinite(arr).all():
                raise InvalidArgumentException("lookup_transforms: times must be finite")
            return np.rint(arr * 1e9).astype(np.int64)
        return arr.astype(np.int64) * 1_000_000_000

    def _plan(self, target_id, source_id):
        """The links (child ids with their latest parent) a lookup passes through, judged
        from the latest samples: ``(source_links, target_links)`` or None."""
        caches = self._caches
        source_path = [source_id]
        source_links = []
        frame = source_id
        while frame != target_id:
            cache = caches[frame]
            if cache is None:
                break
            parent = cache.latest()[1]
            if parent == 0 or len(source_links) > MAX_GRAPH_DEPTH:
                return None
            source_links.append((frame, parent))
            frame = parent
            source_path.append(frame)
        index = {f: k for k, f in enumerate(source_path)}
        target_links = []
        frame = target_id
        while frame not in index:
            cache = caches[frame]
            if cache is None:
                return None
            parent = cache.latest()[1]
            if parent == 0 or len(target_links) > MAX_GRAPH_DEPTH:
                return None
            target_links.append((frame, parent))
            frame = parent
        # Links of the source side above the common ancestor are not needed.
        return source_links[: index[frame]], target_links

    def _accumulate_many(self, links, ts, bad, search):
        acc = None
        for frame, parent in links:
            values, parents, ok = self._caches[frame].get_many(ts, search)
            bad |= ~ok
            bad |= parents != parent
            acc = values if acc is None else _compose_many(values, acc)
        return acc

    def lookup_transforms(self, target_frame, source_frame, times) -> np.ndarray:
        """Batch ``lookup_transform``: ``(N, 4, 4)`` matrices mapping data in
        ``source_frame`` into ``target_frame`` at each of N times (float seconds, or Times;
        zero = the latest common time).

        Vectorised over N. Raises what ``lookup_transform`` would raise for the first stamp
        (in the order given) that cannot be looked up.
        """
        ts = self._times_array(times)
        n = len(ts)
        if target_frame == source_frame:
            return np.broadcast_to(np.eye(4), (n, 4, 4)).copy()
        target_id = self._frame_id(target_frame, "target_frame")
        source_id = self._frame_id(source_frame, "source_frame")
        if n == 0:
            return np.zeros((0, 4, 4))
        requested = ts
        zero = ts == 0
        zero_failed = False
        if zero.any():
            # Time 0 means the latest common time; if that cannot be resolved, those stamps
            # go through the one-by-one path below (which raises in stamp order).
            common, error = self._common_time(target_id, source_id)
            zero_failed = error is not None
            ts = np.where(zero, 0 if zero_failed else common, ts)
        plan = self._plan(target_id, source_id)
        if plan is None:
            bad = np.ones(n, dtype=bool)
            values = _identity_columns(n)
        else:
            source_links, target_links = plan
            bad = np.zeros(n, dtype=bool)
            search = StampSearch(ts)
            a = self._accumulate_many(source_links, ts, bad, search)
            b = self._accumulate_many(target_links, ts, bad, search)
            if a is None and b is None:
                values = _identity_columns(n)
            elif b is None:
                values = a
            elif a is None:
                values = _inverse_many(b)
            else:
                values = _compose_many(_inverse_many(b), a)
        if zero_failed:
            bad |= zero
        if bad.any():
            # Stamps the plan does not cover (out of range, or a parent that changed):
            # look them up one by one, in order, so the first failure raises tf2's error.
            values = np.array(values, dtype=np.float64)
            for k in np.nonzero(bad)[0].tolist():
                row, _, error = self._resolve(target_id, source_id, int(requested[k]))
                if error is not None:
                    raise error[0](error[1])
                values[:, k] = row[:7]
        return _matrices(values)

    # ==================================================================================
    # Introspection
    # ==================================================================================

    def chain(self, target_frame, target_time, source_frame, source_time, fixed_frame) -> list:
        """The frame ids a full lookup passes through, source first (ROS 1
        ``_chainAsVector``): the path from ``source_frame`` to ``fixed_frame`` at
        ``source_time``, then on to ``target_frame`` at ``target_time``; [] if all equal."""
        st = _time_ns(source_time)
        tt = _time_ns(target_time)
        target_id = self._frame_id(target_frame, "target_frame", "chain")
        source_id = self._frame_id(source_frame, "source_frame", "chain")
        fixed_id = self._frame_id(fixed_frame, "fixed_frame", "chain")
        first = self._chain_ids(fixed_id, source_id, st)
        second = self._chain_ids(target_id, fixed_id, tt)
        if first and second:
            ids = first + second[1:]
        else:
            ids = first or second
        return [self._names[i] for i in ids]

    def _chain_ids(self, target_id, source_id, t):
        if target_id == source_id:
            return []
        if t == 0:
            t, error = self._common_time(target_id, source_id)
            if error is not None:
                raise error[0](error[1])
        out = []
        _, error = self._walk(target_id, source_id, t, out)
        if error is not None:
            raise error[0](error[1])
        return out

    def get_frames(self) -> list:
        """Every known frame id, sorted."""
        return sorted(self._frame_ids)

    def _frame_exists(self, frame_id) -> bool:
        return frame_id in self._frame_ids

    def all_frames_as_string(self) -> str:
        """tf2's allFramesAsString: ``Frame <child> exists with parent <parent>.`` per frame
        that has a cache, in registration order."""
        lines = []
        names = self._names
        for fid in range(1, len(names)):
            cache = self._caches[fid]
            if cache is None:
                continue
            parent = cache.latest()[1]
            lines.append("Frame %s exists with parent %s.\n" % (names[fid], names[parent]))
        return "".join(lines)

    def frames_info(self) -> dict:
        """Per child frame with data: ``parent``, ``broadcaster`` (authority), ``rate`` (Hz,
        as tf2's yaml), ``most_recent_ns``, ``oldest_ns``, ``buffer_length`` (samples),
        ``buffer_seconds`` (latest - oldest, s; what tf2's yaml calls buffer_length) and
        ``is_static``. In registration order."""
        out = {}
        names = self._names
        for fid in range(1, len(names)):
            cache = self._caches[fid]
            if cache is None or len(cache) == 0:
                continue
            latest = cache.latest_stamp()
            oldest = cache.oldest_stamp()
            span = latest - oldest
            length = len(cache)
            authority = self._authority[fid]
            out[names[fid]] = {
                "parent": names[cache.latest()[1]],
                "broadcaster": "no recorded authority" if authority is None else authority,
                "rate": length / max(span / 1e9, 1e-4),
                "most_recent_ns": latest,
                "oldest_ns": oldest,
                "buffer_length": length,
                "buffer_seconds": span / 1e9,
                "is_static": cache.is_static,
            }
        return out

    def all_frames_as_yaml(self) -> str:
        """tf2's allFramesAsYAML (``[]`` when no frame was ever registered)."""
        if len(self._names) == 1:
            return "[]"
        parts = []
        for child, info in self.frames_info().items():
            parts.append(
                "%s: \n  parent: '%s'\n  broadcaster: '%s'\n  rate: %.3f\n"
                "  most_recent_transform: %s\n  oldest_transform: %s\n  buffer_length: %.3f\n"
                % (
                    child,
                    info["parent"],
                    info["broadcaster"],
                    info["rate"],
                    format_seconds(info["most_recent_ns"]),
                    format_seconds(info["oldest_ns"]),
                    info["buffer_seconds"],
                )
            )
        return "".join(parts)

    def lookup_velocity(self, tracking_frame, observation_frame, time, averaging_interval,
                        reference_frame=None, reference_point=(0.0, 0.0, 0.0),
                        reference_point_frame=None):
        """tf2's lookupVelocity: the twist of ``tracking_frame`` seen from
        ``observation_frame`` (a ``VelocityStamped``); see ``tf2py.buffer.velocity``."""
        from .velocity import lookup_velocity

        return lookup_velocity(self, tracking_frame, observation_frame, time, averaging_interval,
                               reference_frame, reference_point, reference_point_frame)

    def lookup_velocities(self, tracking_frame, observation_frame, times, averaging_interval,
                          reference_frame=None, reference_point=(0.0, 0.0, 0.0),
                          reference_point_frame=None):
        """Batch ``lookup_velocity`` over N times: ``(stamps_ns (N,), twists (N, 6))``; see
        ``tf2py.buffer.velocity.lookup_velocities``."""
        from .velocity import lookup_velocities

        return lookup_velocities(self, tracking_frame, observation_frame, times,
                                 averaging_interval, reference_frame, reference_point,
                                 reference_point_frame)
