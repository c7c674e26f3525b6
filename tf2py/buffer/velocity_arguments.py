"""The arguments of ``lookup_velocity`` and ``lookup_velocities``: checked, converted, and
their errors worded.

The velocity itself is computed in the kernel (``_kernel/velocity.hpp``, both the physical
answer and ``tf2_compatible``). ``BufferCore.lookup_velocity`` is the kernel's own method: it
comes here (``velocity_arguments``) only for arguments it does not take as they are, and the
batch form (``lookup_velocities``) converts its times here before one kernel call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _kernel_ext, errors
from . import time as times
from .errors import STAMP_MAX, STAMP_MIN
from .exceptions import InvalidArgumentException
from .messages import VelocityStamped
from .time import Time, duration_to_nanoseconds, to_nanoseconds

__all__ = ["ReferencePointError", "velocity_arguments", "lookup_velocity", "lookup_velocities"]

# (errors.py and time.py are not annotated: typed names for what is used here)
frame_error: Callable[..., Exception] = errors.frame_error
query_error: Callable[..., Exception] = errors.query_error
times_to_nanoseconds: Callable[[Any], tuple[np.ndarray, dict[int, int]]] = times.times_to_nanoseconds


class ReferencePointError(InvalidArgumentException, ValueError):
    """``reference_point`` is not 3 finite numbers (an invalid argument, and a ValueError)."""


def _frame(name: Any, argument: str) -> str:
    if not isinstance(name, str):
        raise frame_error(name, argument, "lookupVelocity")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentException(
            "Invalid argument %r passed to lookupVelocity argument %s - frame ids must be valid "
            "text (this one holds a lone surrogate)" % (name, argument)
        ) from None
    return name


def _interval_ns(averaging_interval: Any) -> int:
    if isinstance(averaging_interval, Time):
        raise InvalidArgumentException(
            "averaging_interval must be a Duration or a number of seconds, got the Time %r"
            % (averaging_interval,)
        )
    try:
        ns = duration_to_nanoseconds(averaging_interval, "averaging_interval")
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentException("averaging_interval: %s" % exc) from None
    if ns <= 0:
        raise InvalidArgumentException(
            "averaging_interval must be a positive duration, got %r (%d ns)" % (averaging_interval, ns)
        )
    if ns > STAMP_MAX:
        raise InvalidArgumentException(
            "averaging_interval must fit in 64-bit nanoseconds, got %r" % (averaging_interval,)
        )
    return ns


def _point(reference_point: Any) -> tuple[float, float, float]:
    if isinstance(reference_point, (str, bytes)):
        raise ReferencePointError("reference_point must be 3 numbers (x, y, z), got %r" % (reference_point,))
    try:
        values = list(reference_point)
    except TypeError:
        raise ReferencePointError(
            "reference_point must be 3 numbers (x, y, z), got %r" % (reference_point,)
        ) from None
    if len(values) != 3:
        raise ReferencePointError(
            "reference_point must be 3 numbers (x, y, z), got %d: %r" % (len(values), reference_point)
        )
    out = []
    for v in values:
        if isinstance(v, (bool, np.bool_, str, bytes)):
            raise ReferencePointError("reference_point holds %r, not a number" % (v,))
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ReferencePointError("reference_point holds %r, not a number" % (v,)) from None
        if not math.isfinite(f):
            raise ReferencePointError("reference_point must be finite, got %r" % (reference_point,))
        out.append(f)
    return out[0], out[1], out[2]


def _flag(tf2_compatible: Any) -> bool:
    if not isinstance(tf2_compatible, (bool, np.bool_)):
        raise InvalidArgumentException("tf2_compatible must be a bool, got %r" % (tf2_compatible,))
    return bool(tf2_compatible)


def _common(
    tracking_frame: Any, observation_frame: Any, averaging_interval: Any, reference_frame: Any,
    reference_point: Any, reference_point_frame: Any, tf2_compatible: Any,
) -> tuple[str, str, str, str, int, tuple[float, float, float], bool]:
    tracking = _frame(tracking_frame, "tracking_frame")
    observation = _frame(observation_frame, "observation_frame")
    reference = observation if reference_frame is None else _frame(reference_frame, "reference_frame")
    point_frame = (
        tracking if reference_point_frame is None
        else _frame(reference_point_frame, "reference_point_frame")
    )
    interval = _interval_ns(averaging_interval)
    return (tracking, observation, reference, point_frame, interval, _point(reference_point),
            _flag(tf2_compatible))


def velocity_arguments(
    tracking_frame: Any, observation_frame: Any, time: Any, averaging_interval: Any,
    reference_frame: Any, reference_point: Any, reference_point_frame: Any, tf2_compatible: Any,
) -> tuple[str, str, str, str, int, int, float, float, float, bool]:
    """``lookup_velocity``'s arguments as the kernel's checked call takes them: ``(tracking,
    observation, reference, point_frame, time_ns, interval_ns, px, py, pz, tf2_compatible)``.
    ``InvalidArgumentException`` (tf2's type for what can never be valid) names a bad one;
    a time beyond 64-bit nanoseconds is taken as the nearest end."""
    tracking, observation, reference, point_frame, interval, point, flag = _common(
        tracking_frame, observation_frame, averaging_interval, reference_frame, reference_point,
        reference_point_frame, tf2_compatible,
    )
    try:
        t = to_nanoseconds(time, "time")
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentException(str(exc)) from None
    t = STAMP_MAX if t > STAMP_MAX else STAMP_MIN if t < STAMP_MIN else t
    return (tracking, observation, reference, point_frame, t, interval, *point, flag)


def lookup_velocity(
    core: Any, tracking_frame: str, observation_frame: str, time: Any, averaging_interval: Any,
    reference_frame: str | None = None, reference_point: Any = (0.0, 0.0, 0.0),
    reference_point_frame: str | None = None, tf2_compatible: bool = False,
) -> VelocityStamped:
    """The VelocityStamped of ``tracking_frame`` seen from ``observation_frame`` around
    ``time`` (API.md "Velocity"; _kernel/velocity.hpp computes it): the angular velocity
    of ``tracking_frame`` and the velocity of its point at ``reference_point`` (given in
    ``reference_point_frame``, default ``tracking_frame``), in ``reference_frame``'s axes
    (default ``observation_frame``); m/s and rad/s. ``tf2_compatible=True``: tf2 0.39's
    numbers. Raises what ``lookup_transform`` raises."""
    # (BufferCore.lookup_velocity is this function: the kernel's plain form first, else the
    # arguments checked and converted here; a failed lookup's error record becomes tf2's
    # exception.)
    result = core.kernel.lookup_velocity_plain(
        tracking_frame, observation_frame, time, averaging_interval, reference_frame,
        reference_point, reference_point_frame, tf2_compatible)
    if result is None:  # arguments Python checks and converts (and names what is wrong)
        result = core.kernel.lookup_velocity(*velocity_arguments(
            tracking_frame, observation_frame, time, averaging_interval, reference_frame,
            reference_point, reference_point_frame, tf2_compatible))
    if result.__class__ is tuple:  # the failed lookup's error record (source, target at 5, 6)
        raise errors.query_error(core._tree, result, (result[6], result[5]))
    velocity: VelocityStamped = result
    return velocity


def lookup_velocities(
    core: Any, tracking_frame: str, observation_frame: str, times: Any, averaging_interval: Any,
    reference_frame: str | None = None, reference_point: Any = (0.0, 0.0, 0.0),
    reference_point_frame: str | None = None, tf2_compatible: bool = False,
) -> np.ndarray:
    """Batch ``lookup_velocity`` over N times (seconds or Times): ``(N, 6)`` rows
    (linear x, y, z in units/s, angular x, y, z in rad/s), in one kernel call."""
    tracking, observation, reference, point_frame, interval, point, flag = _common(
        tracking_frame, observation_frame, averaging_interval, reference_frame, reference_point,
        reference_point_frame, tf2_compatible,
    )
    try:
        ns = np.ascontiguousarray(times_to_nanoseconds(times)[0], dtype=np.int64)  # beyond int64: nearest end
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentException("lookup_velocities: %s" % exc) from None
    try:
        rows: np.ndarray = core.kernel.lookup_velocities(
            tracking, observation, reference, point_frame, ns, interval, *point, flag
        )
    except _kernel_ext.KernelError as exc:
        error = exc.args
        raise query_error(core._tree, error, (error[6], error[5])) from None
    return rows
