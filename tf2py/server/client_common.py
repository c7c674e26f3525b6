"""What the BufferClient's two ways of sending goals share: its exception, the checks of a
lookup's arguments, the wording of its errors, and a goal it waits for."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, NamedTuple

from ..buffer.exceptions import InvalidArgumentException, TimeoutException
from ..buffer.time import duration_to_nanoseconds, to_nanoseconds
from . import protocol

__all__ = ["ServerTimeoutException"]

_MAX_TIMEOUT_NS = 2**63 - 1


class ServerTimeoutException(TimeoutException):
    """The server did not answer within ``timeout + timeout_padding`` (down, unreachable or
    overloaded). A TimeoutException; ``can_transform`` lets it through instead of saying
    False, because it says nothing about the transform."""


def unreachable(address: str) -> str:
    return (f"the BufferServer at {address} is not reachable: too many goals are queued "
            "for it")


def no_answer(address: str, waited_ns: int, timeout_ns: int, padding_ns: int) -> str:
    return (f"The LookupTransform goal sent to the BufferServer at {address} did not come "
            f"back in the specified time ({waited_ns / 1e9:.3f} s: timeout "
            f"{timeout_ns / 1e9:g} s + padding {padding_ns / 1e9:g} s). Something is likely "
            f"wrong with the server: is one running there? Start it with `tf2py server "
            f"--address {address}` (or point TF2PY_SERVER / address= at the one you run).")


def answers_the_goal(transform: Any, goal: protocol.Goal) -> bool:
    """Whether a successful answer is one for the lookup that was asked: the frames it names
    are the frames asked for (and, for a simple lookup at a given time, that time). A server
    that answers another lookup is refused, so no stranger's answer is taken for ours."""
    if (transform.header.frame_id != goal.target_frame
            or transform.child_frame_id != goal.source_frame):
        return False
    if not goal.advanced and goal.source_time_ns != 0:
        return bool(transform.header.stamp.nanoseconds == goal.source_time_ns)
    return True


def refused_answer(address: str) -> str:
    return (f"the BufferServer at {address} answered with a transform for other frames than "
            "the goal asked (refused)")


class PendingGoal(NamedTuple):
    """A goal sent and not yet answered (kept by the client only): the goal and its bytes,
    its future, when it was sent and when the client gives up on it (monotonic ns)."""

    goal: protocol.Goal
    payload: bytes
    future: Future[Any]
    sent_ns: int
    deadline_ns: int


def check_frame(value: Any, name: str) -> str:
    """The frame id, or the InvalidArgumentException a local Buffer raises for it. A frame id
    longer than the protocol carries is refused here, at once (the server would refuse the
    goal, or drop it unanswered when it is over the goal size limit)."""
    if value.__class__ is not str and not isinstance(value, str):
        raise InvalidArgumentException(
            "Invalid argument %r passed to lookupTransform argument %s - frame ids must be "
            "strings" % (value, name)
        )
    if len(value) > protocol.MAX_FRAME_ID_LENGTH:
        raise InvalidArgumentException(
            "Invalid argument %r... passed to lookupTransform argument %s - a frame id sent "
            "to a BufferServer has at most %d characters, this one has %d"
            % (value[:32], name, protocol.MAX_FRAME_ID_LENGTH, len(value))
        )
    return value


def timeout_ns(timeout: Any) -> int:
    """A timeout (seconds or Duration; None or <= 0: do not wait) in int64 nanoseconds."""
    if not timeout:
        return 0
    ns: int = duration_to_nanoseconds(timeout, "timeout")
    return min(max(0, ns), _MAX_TIMEOUT_NS)


def time_ns(value: Any) -> int:
    """Nanoseconds of a Time or seconds; InvalidArgumentException as a local Buffer."""
    try:
        ns: int = to_nanoseconds(value, "time")
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentException(str(exc)) from None
    if not -(2**63) <= ns < 2**63:
        raise InvalidArgumentException(
            f"time {value!r} is out of range: the BufferServer protocol carries times as "
            "int64 nanoseconds (about +-292 years around 1970)"
        )
    return ns


