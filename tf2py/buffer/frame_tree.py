"""``FrameTree``: what a store tells about its frame tree rather than its transforms:
parents, the chain a full lookup passes through, the stored samples, the frame list and
tf2's two frame reports (``allFramesAsString``, ``allFramesAsYAML``).

A ``BufferCore`` holds one (``core.py``), over the same compiled kernel as its lookups, and
answers these calls through it. The two time helpers here are shared by both: a public time
argument to int64 nanoseconds.
"""

from __future__ import annotations

from typing import Any

from . import _kernel_ext
from ._kernel_ext import Kernel
from .errors import STAMP_MAX, STAMP_MIN, query_error, unusable_frame
from .exceptions import InvalidArgumentException
from .report import frames_as_string, frames_as_yaml, frames_info
from .time import Time, to_nanoseconds

__all__ = ["FrameTree", "TimeLike"]

KernelError = _kernel_ext.KernelError
TimeLike = Any  # a Time, or a number of seconds (int or float)


def _time_ns(time: object, name: str = "time") -> int:
    """Integer nanoseconds of a Time or seconds; InvalidArgumentException otherwise."""
    if type(time) is Time:
        return time.nanoseconds
    try:
        return to_nanoseconds(time, name)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentException(str(exc)) from None


def _clamp(t: int) -> int:
    """A time as the kernel takes it: int64 nanoseconds (beyond that, the nearest end;
    messages still name the time asked for)."""
    return STAMP_MAX if t > STAMP_MAX else STAMP_MIN if t < STAMP_MIN else t


class FrameTree:
    """The frame-tree queries of a store, answered by its kernel (each kernel call is atomic:
    the kernel has its own lock)."""

    __slots__ = ("_kernel",)

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel

    def get_parent(self, frame: str, time: TimeLike) -> str | None:
        """The parent frame id of ``frame`` at ``time``, or None (unknown frame, a root, or
        no data at that time). As tf2's ``_getParent``, the name is taken as it is: no leading '/'
        is stripped (a frame stored from ``"//a"`` is ``"/a"`` here)."""
        t = _clamp(_time_ns(time))
        if not isinstance(frame, str):
            return None
        return self._kernel.get_parent(frame, t)


    def chain(
        self, target_frame: str, target_time: TimeLike, source_frame: str, source_time: TimeLike,
        fixed_frame: str,
    ) -> list[str]:
        """The frame ids a full lookup passes through, source first (ROS 1
        ``_chainAsVector``): the path from ``source_frame`` to ``fixed_frame`` at
        ``source_time``, then on to ``target_frame`` at ``target_time``; [] if all equal."""
        st = _time_ns(source_time)
        tt = _time_ns(target_time)
        for name, argument in (
            (target_frame, "target_frame"),
            (source_frame, "source_frame"),
            (fixed_frame, "fixed_frame"),
        ):
            error = unusable_frame(name, argument, "chain", self._kernel.exists)
            if error is not None:
                raise error
        try:  # both halves in one kernel call (one state of the tree)
            return self._kernel.chain(target_frame, _clamp(tt), source_frame, _clamp(st), fixed_frame)
        except KernelError as exc:
            record = exc.args
            first_half = record[5] == source_frame and record[6] == fixed_frame
            t = st if first_half else tt
            half = (fixed_frame, source_frame) if first_half else (target_frame, fixed_frame)
            requested = t if t != _clamp(t) else None
            raise query_error(self, record, half, requested=requested) from None

    def samples(self, frame: str) -> list[tuple[Any, ...]]:
        """Every stored sample of ``frame`` as ``(stamp_ns, (tx, ty, tz, qx, qy, qz, qw),
        parent)``, oldest first (for tests and tools; not a hot path)."""
        return self._kernel.samples(frame) if isinstance(frame, str) else []

    def get_frames(self) -> list[str]:
        """Every known frame id, sorted."""
        return sorted(self._kernel.frames())

    def all_frames_as_string(self) -> str:
        """tf2's allFramesAsString: ``Frame <child> exists with parent <parent>.`` per frame
        that has a cache, in registration order."""
        return frames_as_string(self._kernel.frame_table())

    def frames_info(self) -> dict[str, dict[str, Any]]:
        """Per child frame with data: ``parent``, ``broadcaster`` (authority), ``rate`` (Hz,
        as tf2's yaml), ``most_recent_ns``, ``oldest_ns``, ``buffer_length`` (samples),
        ``buffer_seconds`` (latest - oldest, s, as tf2 computes it; what tf2's yaml calls
        buffer_length) and ``is_static``. In registration order."""
        return frames_info(self._kernel.frame_table())

    def all_frames_as_yaml(self) -> str:
        """tf2's allFramesAsYAML (``[]`` when no frame was ever registered)."""
        if not self._kernel.frames():
            return "[]"
        return frames_as_yaml(self.frames_info())
