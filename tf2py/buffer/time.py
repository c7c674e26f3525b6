"""Time points and durations as integer nanoseconds, as tf2 keeps them.

Every public argument that takes a time also takes a plain ``int`` or ``float`` number of
seconds; every argument that takes a duration also takes seconds. ``to_nanoseconds`` and
``duration_to_nanoseconds`` are the one place where that conversion happens.
"""

from __future__ import annotations

import time as _time
from functools import total_ordering
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

if TYPE_CHECKING:
    from collections.abc import Iterable

    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Time",
    "Duration",
    "to_nanoseconds",
    "duration_to_nanoseconds",
    "seconds_to_nanoseconds",
    "format_seconds",
    "seconds_tf2",
    "times_to_nanoseconds",
]

_NS_PER_S = 1_000_000_000


def seconds_to_nanoseconds(seconds: float) -> int:
    """Round a number of seconds to the nearest nanosecond (tf2's durationFromSec)."""
    if isinstance(seconds, int):
        return seconds * _NS_PER_S
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        raise ValueError(f"time must be a finite number of seconds, got {seconds!r}")
    return round(seconds * _NS_PER_S)


def _split(ns: int) -> tuple[int, int]:
    sec, nanosec = divmod(ns, _NS_PER_S)
    return sec, nanosec


@total_ordering
class _Nanoseconds:
    """An immutable integer number of nanoseconds; the common part of Time and Duration.

    A Time never equals a Duration, and the two do not order against each other.
    """

    __slots__ = ("nanoseconds",)
    #: The value, in integer nanoseconds (read-only).
    nanoseconds: int

    def __init__(self, sec: int = 0, nanosec: int = 0):
        if not isinstance(sec, int) or not isinstance(nanosec, int):
            name = type(self).__name__
            raise TypeError(
                f"{name}(sec, nanosec) takes integers; use {name}.from_seconds(x) for a float"
            )
        object.__setattr__(self, "nanoseconds", sec * _NS_PER_S + nanosec)

    @classmethod
    def from_nanoseconds(cls: type[_N], nanoseconds: int) -> _N:
        """From an integer number of nanoseconds."""
        value = object.__new__(cls)
        object.__setattr__(value, "nanoseconds", int(nanoseconds))
        return value

    @classmethod
    def from_seconds(cls: type[_N], seconds: float) -> _N:
        """From seconds, rounded to the nearest nanosecond."""
        return cls.from_nanoseconds(seconds_to_nanoseconds(seconds))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return (type(self).from_nanoseconds, (self.nanoseconds,))

    @property
    def sec(self) -> int:
        return _split(self.nanoseconds)[0]

    @property
    def nanosec(self) -> int:
        return _split(self.nanoseconds)[1]

    def to_seconds(self) -> float:
        return self.nanoseconds / _NS_PER_S

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Nanoseconds) and other.__class__ is self.__class__:
            return self.nanoseconds == other.nanoseconds
        return NotImplemented

    def __lt__(self, other: object) -> bool:
        if isinstance(other, _Nanoseconds) and other.__class__ is self.__class__:
            return self.nanoseconds < other.nanoseconds
        return NotImplemented

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.nanoseconds))

    def __bool__(self) -> bool:
        return self.nanoseconds != 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(sec={self.sec}, nanosec={self.nanosec})"

    def __str__(self) -> str:
        return format_seconds(self.nanoseconds)


_N = TypeVar("_N", bound="_Nanoseconds")


class Time(_Nanoseconds):
    """A time point, stored as integer nanoseconds since the epoch of its clock.

    ``Time()`` (zero) passed as a lookup time means "the latest time at which the whole chain
    is known", exactly as in tf2.
    """

    __slots__ = ()

    @classmethod
    def now(cls) -> Time:
        """The wall-clock time now."""
        return cls.from_nanoseconds(_time.time_ns())

    def __add__(self, other: object) -> Time:
        if isinstance(other, Duration):
            return Time.from_nanoseconds(self.nanoseconds + other.nanoseconds)
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return Time.from_nanoseconds(self.nanoseconds + seconds_to_nanoseconds(other))
        return NotImplemented

    __radd__ = __add__

    @overload
    def __sub__(self, other: Time) -> Duration: ...

    @overload
    def __sub__(self, other: Duration | float) -> Time: ...

    def __sub__(self, other: object) -> Time | Duration:
        if isinstance(other, Time):
            return Duration.from_nanoseconds(self.nanoseconds - other.nanoseconds)
        if isinstance(other, Duration):
            return Time.from_nanoseconds(self.nanoseconds - other.nanoseconds)
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return Time.from_nanoseconds(self.nanoseconds - seconds_to_nanoseconds(other))
        return NotImplemented


class Duration(_Nanoseconds):
    """A span of time, stored as integer nanoseconds (may be negative)."""

    __slots__ = ()

    @overload
    def __add__(self, other: Duration) -> Duration: ...

    @overload
    def __add__(self, other: Time) -> Time: ...

    def __add__(self, other: object) -> Time | Duration:
        if isinstance(other, Duration):
            return Duration.from_nanoseconds(self.nanoseconds + other.nanoseconds)
        if isinstance(other, Time):
            return Time.from_nanoseconds(self.nanoseconds + other.nanoseconds)
        return NotImplemented

    def __sub__(self, other: object) -> Duration:
        if isinstance(other, Duration):
            return Duration.from_nanoseconds(self.nanoseconds - other.nanoseconds)
        return NotImplemented

    def __neg__(self) -> Duration:
        return Duration.from_nanoseconds(-self.nanoseconds)


def to_nanoseconds(value: object, name: str = "time") -> int:
    """Integer nanoseconds from a ``Time``, or a plain number of seconds.

    Also accepts anything with ``nanoseconds`` (rclpy's Time) or ``sec``/``nanosec``
    (builtin_interfaces' Time), as tf2_py does.
    """
    if type(value) is Time:
        return value.nanoseconds
    if type(value) is float or type(value) is int:
        return seconds_to_nanoseconds(value)
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a Time or a number of seconds, got a bool")
    if isinstance(value, (Time, Duration)):
        return value.nanoseconds
    if isinstance(value, (int, float)):
        return seconds_to_nanoseconds(value)
    try:
        import numbers

        if isinstance(value, numbers.Real):
            return seconds_to_nanoseconds(float(value)) if not isinstance(
                value, numbers.Integral
            ) else int(value) * _NS_PER_S
    except (TypeError, ValueError):
        pass
    ns = getattr(value, "nanoseconds", None)
    if isinstance(ns, int):
        return ns
    sec = getattr(value, "sec", None)
    nanosec = getattr(value, "nanosec", None)
    if isinstance(sec, int) and isinstance(nanosec, int):
        return sec * _NS_PER_S + nanosec
    raise TypeError(f"{name} must be a Time or a number of seconds, got {value!r}")


def duration_to_nanoseconds(value: object, name: str = "duration") -> int:
    """Integer nanoseconds from a ``Duration``, or a plain number of seconds."""
    if type(value) is Duration:
        return value.nanoseconds
    return to_nanoseconds(value, name)


def seconds_tf2(ns: int) -> float:
    """Seconds as tf2 computes them for its messages (durationToSec): whole seconds plus
    ``1e-9 * nanoseconds``, two roundings, so 5.500000500 s gives 5.500001 at ``%.6f``."""
    sec = -(-ns // _NS_PER_S) if ns < 0 else ns // _NS_PER_S  # truncated, as C++ does
    return float(sec) + 1e-9 * float(ns - sec * _NS_PER_S)


def format_seconds(ns: int) -> str:
    """Seconds with six decimals, as tf2 prints times in its messages (``%.6f``)."""
    return "%.6f" % seconds_tf2(ns)


_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def _clamp_int64(v: int) -> int:
    return _INT64_MAX if v > _INT64_MAX else _INT64_MIN if v < _INT64_MIN else v


def times_to_nanoseconds(times: object) -> tuple[npt.NDArray[np.int64], dict[int, int]]:
    """``(int64 array, {index: ns})`` from N times (an array of float or int seconds, or a
    sequence of Times or seconds): nanoseconds, with the times beyond int64 clamped in the
    array and given exactly in the dict (never wrapped). TypeError / ValueError for a
    time that is not a finite number."""
    import numpy as np

    arr = times if isinstance(times, np.ndarray) else None
    if arr is None:
        try:
            arr = np.asarray(times)
        except (TypeError, ValueError):
            arr = None
    if arr is None or arr.dtype.kind not in "fiub":
        exact = [to_nanoseconds(t, "times") for t in cast("Iterable[object]", times)]
        huge = {k: v for k, v in enumerate(exact) if not _INT64_MIN <= v <= _INT64_MAX}
        return np.array([_clamp_int64(v) for v in exact], dtype=np.int64), huge
    arr = arr.reshape(-1)
    if arr.dtype.kind == "b":
        raise TypeError("times must be seconds, not bools")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError("times must be finite")
        scaled = np.rint(arr.astype(np.float64) * 1e9)
        out_of_range = (scaled >= 2.0**63) | (scaled < -(2.0**63))
        huge = {k: int(round(float(arr[k]) * 1e9)) for k in np.flatnonzero(out_of_range).tolist()}
        scaled[out_of_range] = 0.0
        ns = scaled.astype(np.int64)
    else:
        limit = _INT64_MAX // _NS_PER_S
        out_of_range = (arr > limit) | (arr < -limit)
        huge = {k: int(arr[k]) * _NS_PER_S for k in np.flatnonzero(out_of_range).tolist()}
        ns = np.where(out_of_range, 0, arr).astype(np.int64) * _NS_PER_S
    for k, v in huge.items():
        ns[k] = _clamp_int64(v)
    return ns, huge
