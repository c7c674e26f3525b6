"""A ``Buffer``'s blocking waits: a lookup retried whenever an insert may have made it
possible, until it succeeds or its timeout runs out (tf2_ros polls instead)."""

from __future__ import annotations

from collections.abc import Callable
from time import monotonic
from typing import Any, TypeVar

from .exceptions import InvalidArgumentException, TransformException
from .time import duration_to_nanoseconds

__all__ = ["wait_until_can", "wait_until_looked_up", "waited_message"]

_R = TypeVar("_R")

_NS_PER_S = 1_000_000_000


def _is_invalid_frame_id(frame_id: Any) -> bool:
    """True for a frame id no data can ever make valid (tf2's InvalidArgument rule)."""
    return not isinstance(frame_id, str) or not frame_id or frame_id[0] == "/"


def _timeout_seconds(timeout: Any) -> float:
    """A timeout (Duration or seconds; None means none) in seconds; <= 0 means do not wait."""
    if not timeout:
        return 0.0
    return duration_to_nanoseconds(timeout, "timeout") / _NS_PER_S


def waited_message(exc: BaseException, elapsed: float, timeout: float) -> str:
    """tf2's message with the wait appended, as tf2_ros's C++ Buffer appends it (the one
    wording of every timed-out lookup: local, asynchronous and the buffer server's)."""
    base = str(exc).rstrip()
    if base.endswith("?"):  # a "Did you mean ...?" hint ends the message
        return f"{base} canTransform returned after {elapsed:g} timeout was {timeout:g}."
    if base.endswith("."):
        base = base[:-1]
    return f"{base}. canTransform returned after {elapsed:g} timeout was {timeout:g}."


def wait_until_looked_up(
    buffer: Any, lookup: Callable[..., _R], args: tuple[Any, ...], timeout: Any
) -> _R:
    """``lookup(buffer, *args)`` until it succeeds or ``timeout`` (a Duration or seconds) runs
    out: then tf2's exception, its message saying how long it waited. Woken by inserts
    (under the buffer's condition, counted in its index's ``waiting``)."""
    timeout_s = _timeout_seconds(timeout)
    start = monotonic()
    deadline = start + timeout_s
    condition = buffer._condition
    with condition:
        buffer._index.wait_begins()  # before the first check: an insert after it notifies
        try:
            while True:
                try:
                    return lookup(buffer, *args)
                except InvalidArgumentException:
                    raise  # no data can cure it: do not wait
                except TransformException as exc:
                    remaining = deadline - monotonic()
                    if remaining <= 0.0:
                        if timeout_s > 0.0:
                            exc.args = (waited_message(exc, monotonic() - start, timeout_s),)
                        raise
                condition.wait(remaining)
        finally:
            buffer._index.wait_ends()


def wait_until_can(
    buffer: Any, can: Callable[..., bool], args: tuple[Any, ...], frames: tuple[Any, ...], timeout: Any
) -> bool:
    """``can(buffer, *args)`` until it is True or ``timeout`` runs out (then False); False at
    once for a frame id no data can make valid."""
    timeout_s = _timeout_seconds(timeout)
    deadline = monotonic() + timeout_s
    condition = buffer._condition
    with condition:
        buffer._index.wait_begins()  # before the first check: an insert after it notifies
        try:
            if can(buffer, *args):
                return True
            if any(_is_invalid_frame_id(frame) for frame in frames):
                return False  # no data can cure it: do not wait
            while True:
                remaining = deadline - monotonic()
                if remaining <= 0.0:
                    return False
                condition.wait(remaining)
                if can(buffer, *args):
                    return True
        finally:
            buffer._index.wait_ends()
