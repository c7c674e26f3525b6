"""Per-frame transform history, one frame on its own: ``TimeCache`` (a sliding window of
samples) and ``StaticCache`` (one sample, valid at every time).

The caches live in the compiled kernel (``_kernel/time_cache.hpp``), which ``BufferCore``
uses; these classes give one of them a Python face for tests and tools. A sample stored for
child frame C with parent P maps coordinates in C into P. Values are
``(tx, ty, tz, qx, qy, qz, qw)``; stamps integer nanoseconds; parents plain integer ids.

tf2 rules kept (tf2-reference.md §3, with the §13.2 departure for equal stamps): insert
prunes first, relative to the latest stamp before the insert, dropping samples with
``stamp + cache_time < latest``, then refuses (returns False) a stamp older than
``latest - cache_time``; a repeated stamp replaces the sample; ``t == 0`` is the latest
sample; exact stamps match; a single sample matches only its own stamp; between two samples
lerp + shortest-path slerp, unless their parents differ (the older sample wins).
"""

from __future__ import annotations

from typing import Any

from . import _kernel_ext
from .errors import cache_error
from .exceptions import TransformException

__all__ = ["TimeCache", "StaticCache", "DEFAULT_CACHE_TIME_NS"]

DEFAULT_CACHE_TIME_NS = 10_000_000_000


class TimeCache:
    """The history of one child frame over a sliding window of ``cache_time_ns``."""

    __slots__ = ("_cache",)
    _static = False

    def __init__(self, cache_time_ns: int = DEFAULT_CACHE_TIME_NS):
        self._cache = _kernel_ext.TimeCache(cache_time_ns, self._static)

    @property
    def is_static(self) -> bool:
        return self._static

    def insert(
        self, stamp: int, tx: float, ty: float, tz: float, qx: float, qy: float, qz: float,
        qw: float, parent: int,
    ) -> bool:
        """Store one sample; False if it is older than the window (tf2's TF_OLD_DATA)."""
        return self._cache.insert(stamp, tx, ty, tz, qx, qy, qz, qw, parent)

    def get(self, t: int) -> tuple[Any, ...] | None:
        """``(tx, ty, tz, qx, qy, qz, qw, parent)`` at ``t`` ns, or None (see ``error``)."""
        return self._cache.get(t)

    def parent_at(self, t: int) -> int:
        """The parent id at ``t``, or 0 when ``get(t)`` would fail."""
        return self._cache.parent_at(t)

    def error(self, t: int) -> tuple[type[TransformException], str]:
        """``(exception class, tf2 message)`` explaining why ``get(t)`` failed."""
        kind, stamp = self._cache.error(t)
        return cache_error(kind, t, stamp)

    def latest(self) -> tuple[int, int]:
        """``(latest stamp, its parent)``, or ``(0, 0)`` when empty."""
        return self._cache.latest()

    def latest_stamp(self) -> int:
        return self._cache.latest_stamp()

    def oldest_stamp(self) -> int:
        return self._cache.oldest_stamp()

    def clear(self) -> None:
        """Forget every sample (tf2's clearList); a static cache keeps its sample."""
        self._cache.clear()

    def __len__(self) -> int:
        return len(self._cache)

    def samples(self) -> list[tuple[Any, ...]]:
        """Every stored sample as ``(stamp, (tx, ty, tz, qx, qy, qz, qw), parent)``, oldest
        first."""
        return self._cache.samples()


class StaticCache(TimeCache):
    """One sample, valid at every time; the latest insert wins; ``clear()`` keeps it."""

    __slots__ = ()
    _static = True

    def __init__(self) -> None:
        super().__init__(0)
