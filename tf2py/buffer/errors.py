"""tf2's messages for what the kernel refuses or cannot answer, and the checks of inserted
data that name the bad field (the slow path; the kernel runs the same checks first).

The kernel returns an error description instead of raising; ``query_error`` turns it into
tf2's exception with tf2's wording (tf2-reference.md §3.3, §4), which users grep for.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from math import sqrt
from typing import TYPE_CHECKING, SupportsFloat, SupportsIndex, cast

from .exceptions import (
    BackwardExtrapolationException,
    ConnectivityException,
    ForwardExtrapolationException,
    InvalidArgumentException,
    LookupException,
    NoDataForExtrapolationException,
    TransformException,
)
from .time import format_seconds

if TYPE_CHECKING:
    from ._kernel_ext import ErrorRecord
    from .frame_tree import FrameTree

#: The seven values of a transform: tx, ty, tz, qx, qy, qz, qw.
Values7 = tuple[float, float, float, float, float, float, float]

__all__ = ["check_insert", "frame_error", "unusable_frame", "can_frame_message", "query_error",
           "cache_error", "add_hints"]

NO_PARENT = "NO_PARENT"  # tf2's reserved name of frame id 0: "no parent"
QUATERNION_TOLERANCE = 0.01  # |x²+y²+z²+w² - 1| must stay below this (ROS 1 rule)
STAMP_MIN = -(2**63)  # stamps are stored as int64 nanoseconds
STAMP_MAX = 2**63 - 1
_FIELDS = (
    "transform.translation.x",
    "transform.translation.y",
    "transform.translation.z",
    "transform.rotation.x",
    "transform.rotation.y",
    "transform.rotation.z",
    "transform.rotation.w",
)
_ARGUMENTS = ("target_frame", "source_frame", "fixed_frame")
# Kernel error codes (binding.cpp / kernel.hpp)
_FRAME, _LOOP, _CONNECTIVITY, _EXTRAPOLATION = 1, 2, 3, 4
_EMPTY, _SINGLE, _FORWARD, _BACKWARD = 1, 2, 3, 4


def _strip_slash(frame_id: str) -> str:
    """tf2 strips exactly one leading '/' from frame ids on insert."""
    return frame_id[1:] if frame_id.startswith("/") else frame_id


def check_insert(
    parent: object, child: object, values: Sequence[object], stamp_ns: object
) -> tuple[str, str, Values7, int]:
    """Raise ``InvalidArgumentException`` naming the bad field; return the stripped
    ``(parent, child, values, stamp_ns)`` with the quaternion normalized."""
    if not isinstance(parent, str):
        raise InvalidArgumentException(
            "frame_id of frame %r must be a str, got %s" % (child, type(parent).__name__)
        )
    if not isinstance(child, str):
        raise InvalidArgumentException(
            "child_frame_id (parent %r) must be a str, got %s" % (parent, type(child).__name__)
        )
    parent = _strip_slash(parent)
    child = _strip_slash(child)
    if not child:
        raise InvalidArgumentException(
            "child_frame_id of transform with parent \"%s\" is empty" % parent
        )
    if not parent:
        raise InvalidArgumentException("frame_id (the parent) of frame \"%s\" is empty" % child)
    if child == parent:
        raise InvalidArgumentException(
            "frame \"%s\" cannot be its own parent (frame_id and child_frame_id are the "
            "same)" % child
        )
    if child == NO_PARENT:
        raise InvalidArgumentException(
            "child_frame_id \"%s\" is tf2's reserved name for \"no parent\" (parent \"%s\")"
            % (child, parent)
        )
    if len(values) != 7:
        raise InvalidArgumentException(
            "transform of frame \"%s\" (parent \"%s\") needs 7 values, got %d"
            % (child, parent, len(values))
        )
    out: list[float] = []
    for name, v in zip(_FIELDS, values):
        try:
            if isinstance(v, (str, bytes)):
                raise TypeError
            f = float(cast("SupportsFloat", v))  # anything float() takes; else TypeError
        except (TypeError, ValueError):
            raise InvalidArgumentException(
                "%s of frame \"%s\" (parent \"%s\") is not a number: %r" % (name, child, parent, v)
            ) from None
        if f != f or f in (float("inf"), float("-inf")):
            raise InvalidArgumentException(
                "%s of frame \"%s\" (parent \"%s\") is %r" % (name, child, parent, f)
            )
        out.append(f)
    qx, qy, qz, qw = out[3:]
    norm2 = qx * qx + qy * qy + qz * qz + qw * qw
    if not abs(norm2 - 1.0) < QUATERNION_TOLERANCE:
        raise InvalidArgumentException(
            "transform.rotation of frame \"%s\" (parent \"%s\") is not a unit quaternion: "
            "(%g, %g, %g, %g) has x²+y²+z²+w² = %g, which must be within %g of 1"
            % (child, parent, qx, qy, qz, qw, norm2, QUATERNION_TOLERANCE)
        )
    if norm2 != 1.0:
        s = 1.0 / sqrt(norm2)
        out[3:] = [qx * s, qy * s, qz * s, qw * s]
    stamp: int
    if type(stamp_ns) is not int:
        try:
            stamp = cast("SupportsIndex", stamp_ns).__index__()  # AttributeError: no integer
        except (AttributeError, TypeError):
            raise InvalidArgumentException(
                "stamp of frame \"%s\" (parent \"%s\") must be integer nanoseconds, got %r"
                % (child, parent, stamp_ns)
            ) from None
    else:
        stamp = stamp_ns
    if not STAMP_MIN <= stamp <= STAMP_MAX:
        raise InvalidArgumentException(
            "stamp of frame \"%s\" (parent \"%s\") is outside 64-bit nanoseconds: %d"
            % (child, parent, stamp)
        )
    return parent, child, (out[0], out[1], out[2], out[3], out[4], out[5], out[6]), stamp


#: Frames compared for a "did you mean" (difflib is quadratic in the name length, linear in
#: the number of frames: bounded so an error on a huge tree stays cheap).
_SUGGEST_MAX_FRAMES = 2000


def did_you_mean_sentence(name: str, frames: Collection[str]) -> str:
    """``"Did you mean 'base_link'?"`` for a frame id close to ``name`` among ``frames``, or
    ``""``. Appended after tf2's own message, which stays intact (users grep for it)."""
    if not isinstance(name, str) or len(name) > 256 or len(frames) > _SUGGEST_MAX_FRAMES:
        return ""
    import difflib

    close = difflib.get_close_matches(name, [f for f in frames if f], n=1, cutoff=0.75)
    return f"Did you mean '{close[0]}'?" if close else ""


def frame_error(
    name: object, argument: str | None, function: str = "lookupTransform",
    frames: Callable[[], Collection[str]] | None = None,
) -> TransformException:
    """The exception tf2 raises for a frame id a lookup cannot use or that does not exist
    (``frames()``, if given, lists the known ones for a "did you mean")."""
    error = unusable_frame(name, argument, function, None, frames)
    assert error is not None  # (without ``exists``, every name is unusable)
    return error


def unusable_frame(
    name: object, argument: str | None, function: str,
    exists: Callable[[str], bool] | None, frames: Callable[[], Collection[str]] | None = None,
) -> TransformException | None:
    """The exception tf2 raises for a frame id a lookup cannot use (``exists(name)``
    says whether it is known; ``frames()``, if given, lists the known ones for a "did you
    mean"), or None when it is usable; ``argument`` None names no argument (tf2_py's
    get_latest_common_time)."""
    where = function if argument is None else "%s argument %s" % (function, argument)
    if not isinstance(name, str):
        return InvalidArgumentException(
            "Invalid argument %r passed to %s - frame ids must be strings" % (name, where)
        )
    if not name:
        return InvalidArgumentException(
            'Invalid argument "%s" passed to %s - in tf2 frame_ids cannot be empty' % (name, where)
        )
    if name[0] == "/":
        return InvalidArgumentException(
            "Invalid argument \"%s\" passed to %s - in tf2 frame_ids cannot start with a '/'"
            % (name, where)
        )
    if exists is None or not exists(name):
        suggestion = did_you_mean_sentence(name, frames()) if frames is not None else ""
        return LookupException('"%s" passed to %s does not exist. ' % (name, where) + suggestion)
    return None


def can_frame_message(name: object, argument: str, exists: Callable[[str], bool]) -> str | None:
    """canTransform's non-throwing validation message, or None if ``name`` is usable."""
    if not isinstance(name, str):
        return (
            "Invalid frame ID %r passed to canTransform argument %s - frame ids must be strings"
            % (name, argument)
        )
    if not name:
        return (
            'Invalid frame ID "" passed to canTransform argument %s - in tf2 frame_ids cannot '
            "be empty" % argument
        )
    if name[0] == "/":
        return (
            "Invalid frame ID \"%s\" passed to canTransform argument %s - in tf2 frame_ids "
            "cannot start with a '/'" % (name, argument)
        )
    if not exists(name):
        return (
            'Invalid frame ID "%s" passed to canTransform argument %s - frame does not exist'
            % (name, argument)
        )
    return None


def cache_error(kind: int, t: int, stamp: int) -> tuple[type[TransformException], str]:
    """``(exception class, message)`` of a cache that cannot answer at ``t`` ns."""
    if kind == _FORWARD:
        return (
            ForwardExtrapolationException,
            "Lookup would require extrapolation into the future.  Requested time %s but the "
            "latest data is at time %s" % (format_seconds(t), format_seconds(stamp)),
        )
    if kind == _BACKWARD:
        return (
            BackwardExtrapolationException,
            "Lookup would require extrapolation into the past.  Requested time %s but the "
            "earliest data is at time %s" % (format_seconds(t), format_seconds(stamp)),
        )
    return (
        NoDataForExtrapolationException,
        "Lookup would require extrapolation at time %s, but only time %s is in the buffer"
        % (format_seconds(t), format_seconds(stamp if kind == _SINGLE else 0)),
    )


def query_error(
    core: FrameTree,
    error: object,  # the kernel's error record (an ErrorRecord)
    frames: Sequence[object],
    function: str = "lookupTransform",
    requested: int | None = None,
) -> TransformException:
    """tf2's exception for the kernel's ``error()`` tuple after a query on ``frames``
    (target, source[, fixed]). ``requested``: the time asked for when it was clamped to
    int64 for the kernel (the message names it)."""
    code, argument, kind, t, stamp, source, target, _ = cast("ErrorRecord", error)
    if code == _FRAME:
        name = frames[argument]
        kernel = core._kernel
        refused = unusable_frame(name, _ARGUMENTS[argument], function, kernel.exists, kernel.frames)
        if refused is not None:
            return refused
        # Another thread added the frame after the kernel looked: the answer stands as of
        # the query (the frame did not exist then), worded as for any missing frame.
        return frame_error(name, _ARGUMENTS[argument], function)
    if code == _LOOP:
        return LookupException(
            "The tf tree is invalid because it contains a loop.\n"
            + core.all_frames_as_string()
            + "\n"
        )
    if code == _CONNECTIVITY:
        return ConnectivityException(
            "Could not find a connection between '%s' and '%s' because they are not part of "
            "the same tree.Tf has two or more unconnected trees." % (target, source)
        )
    if code == _EXTRAPOLATION:
        if requested is not None:
            t = requested
        cls, message = cache_error(kind, t, stamp)
        return cls(
            message
            + ", when looking up transform from frame [%s] to frame [%s]" % (source, target)
        )
    return TransformException("unknown kernel error %r" % (error,))


def add_hints(exc: TransformException, hints: tuple[Callable[[], str | None], ...]) -> None:
    """End ``exc``'s message with the sentences of ``hints`` (tf2's own message stays first:
    users grep for it). A hint that fails adds nothing: the lookup's error is what matters.
    Sentences a retried lookup already added inside the message move to its end."""
    sentences = []
    for hint in hints:
        try:
            sentence = hint()
        except Exception:
            sentence = None
        if sentence:
            sentences.append(sentence)
    if sentences and exc.args:
        added = " ".join(sentences)
        message = str(exc.args[0]).replace(f" {added}", "", 1).rstrip()
        exc.args = (f"{message} {added}", *exc.args[1:])
