"""The delivery half of ``MessageFilter`` (``message_filter.py``): the per-frame lines of
queued messages, the outbox, and the callbacks run in arrival order, one thread at a time,
never under the filter's lock."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, cast

from .time import Time, format_seconds

if TYPE_CHECKING:
    from .buffer import Buffer
    from .messages import TransformStamped

__all__ = ["DROP_REASONS"]

logger = logging.getLogger("tf2py.message_filter")

#: tf2_ros's FilterFailureReason names, and what each means.
DROP_REASONS = {
    "Unknown": "unknown",
    "OutTheBack": "the timestamp on the message is earlier than all the data in the "
                  "transform cache (or its wait ran out)",
    "EmptyFrameID": "the frame id of the message is empty",
    "NoTransformFound": "did not find a valid transform",
    "QueueFull": "discarding message because the queue is full",
}

_WAITING, _READY, _FAILED = 0, 1, 2

#: A (target frame, time) pair a message waits for.
Wait = tuple[str, Time]
#: The user's callbacks: ``callback(message)`` and ``on_drop(message, reason)``. Messages are
#: the caller's own objects (anything with a header), so their type is the caller's.
Callback = Callable[[Any], object]
DropCallback = Callable[[Any, str], object]


class _Entry:
    """One queued message: its futures and how far they got."""

    __slots__ = ("message", "frame_id", "stamp", "futures", "waits", "remaining", "state",
                 "reason", "deadline", "waited")

    def __init__(
        self, message: Any, frame_id: str, stamp: Time, waits: tuple[Wait, ...],
        deadline: float | None,
    ) -> None:
        self.message = message
        self.frame_id = frame_id
        self.stamp = stamp
        self.futures: list[Future[TransformStamped]] = []
        self.waits = waits  # (target frame, time) pairs that must all become possible
        self.remaining = len(waits)
        self.state = _WAITING
        self.reason: str | None = None
        self.deadline = deadline
        self.waited = False  # made ready by a later insertion (re-checked before delivery)


#: What became of a message in the outbox: its entry (to re-check, then pass on), None (pass
#: on), or the reason it is dropped.
_Outcome = _Entry | str | None


class _Delivery:
    """The filter's queue bookkeeping and callbacks (a part of ``MessageFilter``, whose
    ``__init__`` creates the attributes used here)."""

    buffer: Buffer
    passed: int
    callback_errors: int
    dropped: dict[str, int]
    _lock: threading.Lock
    _targets: tuple[str, ...]
    _callback: Callback
    _on_drop: DropCallback | None
    _queue: dict[_Entry, None]
    _by_frame: dict[str, deque[_Entry]]
    _outbox: deque[tuple[Any, _Outcome]]
    _to_cancel: list[Future[TransformStamped]]
    _delivering: bool
    _logged: set[str]

    def _release_locked(self, frame_id: str) -> None:
        """Move the finished entries at the head of a frame's line to the outbox."""
        line = self._by_frame.get(frame_id)
        while line and line[0].state != _WAITING:
            entry = line.popleft()
            del self._queue[entry]
            if entry.state == _FAILED:
                self._drop_locked(entry, cast(str, entry.reason))  # set by _fail_locked
            else:
                self._outbox.append((entry.message, entry))
        if line is not None and not line:
            del self._by_frame[frame_id]

    def _remove_locked(self, entry: _Entry, reason: str) -> None:
        """Drop a queued entry now, wherever it is in its line."""
        del self._queue[entry]
        line = self._by_frame[entry.frame_id]
        line.remove(entry)
        self._to_cancel.extend(entry.futures)  # its other waits (cancelled once unlocked)
        self._drop_locked(entry, reason)
        if line:
            self._release_locked(entry.frame_id)  # the next ones may be ready
        else:
            del self._by_frame[entry.frame_id]

    def _drop_locked(self, entry: _Entry, reason: str) -> None:
        self._note_drop_locked(entry, reason)
        self._outbox.append((entry.message, reason))

    def _note_drop_locked(self, entry: _Entry, reason: str) -> None:
        """Count a drop; log the first one of each reason."""
        self.dropped[reason] += 1
        if reason not in self._logged:
            self._logged.add(reason)
            logger.warning(
                "MessageFilter [target=%s]: dropping message: frame '%s' at time %s for reason "
                "'%s' (%s); further drops for this reason are only counted",
                " ".join(self._targets), entry.frame_id, format_seconds(entry.stamp.nanoseconds),
                reason, DROP_REASONS[reason],
            )

    def _deliver(self) -> None:
        """Cancel the waits no longer needed, then call back what is in the outbox, in
        order, on one thread at a time (never under our lock)."""
        with self._lock:
            to_cancel, deliver = self._claim_locked()
        self._deliver_from(to_cancel, deliver)

    def _claim_locked(self) -> tuple[Iterable[Future[TransformStamped]], bool]:
        """Take the futures to cancel, and the delivery unless another thread has it."""
        to_cancel: Iterable[Future[TransformStamped]] = self._to_cancel
        if to_cancel:
            self._to_cancel = []
        else:
            to_cancel = ()
        if self._delivering:
            return to_cancel, False  # the thread delivering now also delivers ours, in order
        self._delivering = True
        return to_cancel, True

    def _deliver_from(self, to_cancel: Iterable[Future[TransformStamped]], deliver: bool) -> None:
        """The unlocked half of ``_deliver``: cancel, then deliver if claimed."""
        for future in to_cancel:
            future.cancel()  # its done-callback sees it cancelled and returns
        if deliver:
            self._deliver_claimed(None, None)

    def _deliver_claimed(
        self, function: Callable[..., object] | None, args: tuple[Any, ...] | None
    ) -> None:
        """The delivery loop of the thread that set ``_delivering``: ``function(*args)``
        first when given (a message passed on with nothing queued before it), then the
        outbox until it is empty."""
        try:
            if function is not None and args is not None:
                self._call(function, args)
            while True:
                with self._lock:
                    if not self._outbox:
                        self._delivering = False
                        return
                    message, outcome = self._outbox.popleft()
                if isinstance(outcome, _Entry):
                    # tf2_ros re-checks before passing on: the data may be gone by now.
                    if outcome.waited and not self._still_possible(outcome):
                        with self._lock:
                            self._note_drop_locked(outcome, "Unknown")
                        outcome = "Unknown"
                    else:
                        with self._lock:
                            self.passed += 1
                        outcome = None
                if outcome is None:
                    function, args = self._callback, (message,)
                else:
                    function, args = self._on_drop, (message, outcome)
                if function is not None:
                    self._call(function, args)
        except BaseException:
            with self._lock:
                self._delivering = False
            raise

    def _call(self, function: Callable[..., object], args: tuple[Any, ...]) -> None:
        """A callback; what it raises is counted and logged once, never passed on."""
        try:
            function(*args)
        except Exception as exc:  # noqa: BLE001 - never into the inserting thread
            self._callback_failed(exc)

    def _callback_failed(self, exc: Exception) -> None:
        """Count a callback's exception; log the first (called in its except block)."""
        with self._lock:
            self.callback_errors += 1
            first = self.callback_errors == 1
        if first:
            logger.error("MessageFilter: a callback raised %s (further errors "
                         "are only counted)", type(exc).__name__, exc_info=exc)

    def _still_possible(self, entry: _Entry) -> bool:
        try:
            can_transform = self.buffer.can_transform
            frame_id = entry.frame_id
            for t, at in entry.waits:
                if not can_transform(t, frame_id, at):
                    return False
            return True
        except Exception:  # noqa: BLE001
            return False
