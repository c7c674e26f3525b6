"""The parts of ``Buffer``'s index of waiting requests (``requests.py``) that hold no buffer:
a pending request (its futures and the frames it watches), the watchers of one frame, and
resolving futures once their outcome is known (outside the buffer's lock)."""

from __future__ import annotations

import itertools
import weakref
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, InvalidStateError
from typing import TYPE_CHECKING, Any

from .apply import copy_transform_stamped
from .messages import TransformStamped
from .time import Time

if TYPE_CHECKING:
    from .requests import RequestIndex

__all__ = ["RequestKey", "Outcome", "Ready"]

#: A waiting request's identity: its kind, frames and times (requests for the same lookup share
#: one check).
RequestKey = tuple[object, ...]
#: What a lookup came to: its answer, or the exception no data can cure.
Outcome = TransformStamped | BaseException
#: Futures to resolve (outside the lock) with one outcome.
Ready = list[tuple[Iterable["Future[TransformStamped]"], Outcome]]


class _Request:
    """The futures waiting for one (target, source, times, fixed) lookup."""

    __slots__ = (
        "key", "full", "frames", "times", "pairs", "args", "futures", "watch", "watch_any",
        "earliest_ns", "serial", "watch_parent",
    )

    def __init__(
        self,
        key: RequestKey,
        full: bool,
        frames: Sequence[str],
        times: Sequence[Time],
        pairs: Sequence[tuple[str, str, int]],
        args: tuple[Any, ...],  # the core lookup's positional arguments
    ) -> None:
        self.key = key
        self.full = full
        self.frames = frames  # the frame ids the lookup validates
        self.times = times  # the requested times, as Time
        self.pairs = pairs  # (frame_a, frame_b, time_ns) per lookup half, for the too-old rule
        self.args = args  # the arguments of the core lookup
        # The earliest requested time, or 0 when one is time 0 ("latest", which any new
        # sample on the path can move).
        stamps = [t.nanoseconds for t in times]
        self.earliest_ns = 0 if 0 in stamps else min(stamps)
        self.serial = next(_serials)  # orders requests with equal times in _Watchers.timed
        self.futures: dict[Future[TransformStamped], None] = {}
        # Frames whose new data (as a child) could change the lookup's answer...
        self.watch: frozenset[str] = frozenset()
        # ... and requested frames that do not exist yet (created as a parent or a child).
        self.watch_any: frozenset[str] = frozenset()
        # Frames whose new data can change the answer only by giving them another parent:
        # frame -> its parent when indexed (see RequestIndex._watched_frames).
        self.watch_parent: dict[str, str | None] = {}


_serials = itertools.count()


class _Watchers:
    """The pending requests watching one child frame, split so an insertion finds the ones
    it can affect without visiting the others: ``untimed`` (a requested time is 0, so any
    new sample may move "latest") and ``timed``, sorted by earliest requested time (a
    sample can only help requests whose times the frame's newest sample has reached)."""

    __slots__ = ("untimed", "timed", "parents")

    def __init__(self) -> None:
        self.untimed: set[RequestKey] = set()
        self.timed: list[tuple[int, int, RequestKey]] = []  # (earliest_ns, serial, key), sorted
        # the frame's parent when indexed -> keys (watch_parent)
        self.parents: dict[str | None, set[RequestKey]] = {}

    def add(self, request: _Request) -> None:
        if request.earliest_ns:
            insort(self.timed, (request.earliest_ns, request.serial, request.key))
        else:
            self.untimed.add(request.key)

    def remove(self, request: _Request) -> None:
        if request.earliest_ns:
            timed = self.timed
            i = bisect_left(timed, (request.earliest_ns, request.serial, ()))
            if i < len(timed) and timed[i][1] == request.serial:
                del timed[i]
        else:
            self.untimed.discard(request.key)

    def add_parent(self, request: _Request, parent: str | None) -> None:
        keys = self.parents.get(parent)
        if keys is None:
            keys = self.parents[parent] = set()
        keys.add(request.key)

    def remove_parent(self, request: _Request, parent: str | None) -> None:
        keys = self.parents.get(parent)
        if keys is not None:
            keys.discard(request.key)
            if not keys:
                del self.parents[parent]

    def __bool__(self) -> bool:
        return bool(self.untimed) or bool(self.timed) or bool(self.parents)


def _forget_cancelled(
    index_ref: weakref.ref[RequestIndex], key: RequestKey
) -> Callable[[Future[TransformStamped]], None]:
    """A done-callback that drops a cancelled future from its buffer's pending requests.
    It holds the index weakly, so a pending future never keeps a buffer alive."""

    def on_done(future: Future[TransformStamped]) -> None:
        if future.cancelled():
            index = index_ref()
            if index is not None:
                index.forget(key, future)

    return on_done


def _cancel_all(requests: dict[RequestKey, _Request]) -> None:
    """When a buffer is collected, its pending futures are cancelled rather than left
    waiting for data that can no longer come."""
    for request in list(requests.values()):
        for future in list(request.futures):
            future.cancel()
    requests.clear()


def _copy_exception(exc: BaseException) -> BaseException:
    try:
        return type(exc)(*exc.args)
    except Exception:  # an exception class with an unusual constructor: share it
        return exc


def _resolve(ready: Ready) -> None:
    """Resolve futures (outside the lock: their callbacks may use the buffer). Each future
    gets its own copy of the result, so no two callers share a mutable message."""
    for futures, outcome in ready:
        first = True
        for future in futures:
            try:
                if isinstance(outcome, BaseException):
                    future.set_exception(outcome if first else _copy_exception(outcome))
                else:
                    future.set_result(outcome if first else copy_transform_stamped(outcome))
            except InvalidStateError:  # cancelled by its owner meanwhile
                continue
            first = False
