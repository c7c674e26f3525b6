"""``MessageFilter``: hold messages until their frame can be transformed (tf2_ros's filter).

A message is any object with ``header.frame_id`` and ``header.stamp`` (a ``Time``, seconds,
rclpy's ``Time`` or a ``builtin_interfaces`` ``Time``; rclpy itself is never imported). Each
``add(message)`` asks the buffer for one future per target frame
(``Buffer.wait_for_transform_async``); the insertion that makes the last of them possible
resolves it, and its done-callback passes the message on. No thread of ours runs while
messages merely wait: only with a ``timeout`` does one timer thread exist, and only while
some message is waiting for its deadline.

As in tf2_ros (message_filter.h): a full queue drops its OLDEST message (``"QueueFull"``);
an empty frame id is dropped at once (``"EmptyFrameID"``); a stamp older than the cache
can ever hold again, or a wait that outlived ``timeout``, is dropped as ``"OutTheBack"``;
``"Unknown"`` is a message whose transform went away between its wait and its delivery (the
buffer was cleared), ``"NoTransformFound"`` one no data can ever serve (an invalid frame
id). Unlike tf2_ros, messages of the same frame are passed on in the order they arrived: a
message never overtakes an earlier one of its frame, it waits for it to pass or be dropped.
``clear()`` forgets the queue without drop callbacks, as tf2_ros's does.

Callbacks (``callback`` and the drop callback) run on the thread that made the message
ready: the caller of ``add`` when its transform is already there, else the thread that
inserted the data (a ``TransformListener``'s), or the timer thread for a timeout. They never
run two at a time for one filter, and an exception they raise is counted and logged once,
never passed to the inserting thread. A callback must not wait for new transforms (a lookup
with a timeout): on a listener's thread it would hold up the very insertions it waits for.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from concurrent.futures import CancelledError, Future
from functools import partial
from time import monotonic
from typing import TYPE_CHECKING, Any, cast

from .exceptions import BackwardExtrapolationException
from .message_filter_delivery import (
    _FAILED,
    _READY,
    _WAITING,
    DROP_REASONS,
    Callback,
    DropCallback,
    Wait,
    _Delivery,
    _Entry,
)
from .time import Duration, Time, duration_to_nanoseconds, to_nanoseconds

if TYPE_CHECKING:
    from .buffer import Buffer
    from .messages import TransformStamped

__all__ = ["MessageFilter", "DROP_REASONS"]


def _target_frames(target_frames: str | Iterable[str]) -> tuple[str, ...]:
    frames = (target_frames,) if isinstance(target_frames, str) else tuple(target_frames)
    if not frames:
        raise ValueError("MessageFilter needs at least one target frame")
    out = []
    for frame in frames:
        if not isinstance(frame, str):
            raise TypeError(f"target frames are strings, got {frame!r}")
        frame = frame[1:] if frame.startswith("/") else frame  # tf2_ros strips one '/'
        if not frame:
            raise ValueError("a target frame id cannot be empty")
        out.append(frame)
    return tuple(out)


class MessageFilter(_Delivery):
    """Passes each message to ``callback(message)`` once every frame of ``target_frames`` (a
    frame id or a list of them) can be transformed from the message's ``header.frame_id`` at
    its ``header.stamp`` in ``buffer`` (a ``Buffer``: anything with
    ``wait_for_transform_async`` and ``can_transform``).

    ``queue_size`` bounds the messages waiting (0: no bound, as in tf2_ros); the oldest is
    dropped when a new one would exceed it. ``timeout`` (seconds or a Duration; None: no
    limit) bounds how long one message may wait (0: not at all, as tf2_ros's zero buffer
    timeout: one whose transforms are not there on arrival is dropped, "OutTheBack").
    Dropped messages go to the function given to ``register_drop_callback`` as
    ``on_drop(message, reason)``. As in tf2_ros, ``set_target_frames`` and ``set_tolerance``
    change what is waited for, and ``stats()`` gives the counters. ``close()`` (or leaving a
    ``with`` block) forgets what waits and stops the timer thread.
    """

    def __init__(
        self, buffer: Buffer, target_frames: str | Iterable[str], queue_size: int,
        callback: Callback, timeout: Duration | float | None = None,
    ) -> None:
        if not hasattr(buffer, "wait_for_transform_async"):
            raise TypeError(
                f"MessageFilter needs a Buffer (with wait_for_transform_async), got "
                f"{type(buffer).__name__}"
            )
        if not callable(callback):
            raise TypeError(f"callback must be callable, got {callback!r}")
        if isinstance(queue_size, bool) or not isinstance(queue_size, int) or queue_size < 0:
            raise ValueError(f"queue_size must be an integer >= 0 (0: unbounded), got "
                             f"{queue_size!r}")
        if timeout is None:
            self._timeout_s = None
        else:
            timeout_ns = duration_to_nanoseconds(timeout, "timeout")
            if timeout_ns < 0:
                raise ValueError(f"timeout must be zero or more seconds (or None), got "
                                 f"{timeout!r}")
            self._timeout_s = timeout_ns / 1e9
        # A zero timeout: no wait at all (tf2_ros's zero buffer timeout): a message whose
        # transforms are not there when it arrives is dropped as "OutTheBack" at once.
        self._no_wait = self._timeout_s == 0.0
        self.buffer = buffer
        self.queue_size = queue_size
        self._callback = callback
        self._on_drop = None
        self._targets = _target_frames(target_frames)
        self._tolerance_ns = 0
        self._lock = threading.Lock()
        self._timer_wake = threading.Condition(self._lock)
        self._queue: dict[_Entry, None] = {}  # every queued entry, in arrival order
        self._by_frame: dict[str, deque[_Entry]] = {}  # frame id -> its queued entries, in order
        self._outbox = deque()  # (message, outcome) ready to be called back, in order
        self._to_cancel = []  # futures to cancel once our lock is released
        self._delivering = False
        self._closed = False
        self._timer: threading.Thread | None = None
        self.received = 0
        self.passed = 0
        self.cleared = 0
        self.callback_errors = 0
        self.dropped = dict.fromkeys(DROP_REASONS, 0)
        self._logged = set()

    # -- configuration ------------------------------------------------------------------------

    @property
    def target_frames(self) -> tuple[str, ...]:
        return self._targets

    def set_target_frames(self, target_frames: str | Iterable[str]) -> None:
        """Wait for these frames from now on; messages waiting for the old ones are
        forgotten, as ``clear()`` does."""
        targets = _target_frames(target_frames)
        self.clear()
        with self._lock:
            self._targets = targets

    def set_tolerance(self, tolerance: Duration | float) -> None:
        """Also wait until every target can be transformed at ``stamp + tolerance`` (seconds
        or a Duration; 0: only at the stamp), as tf2_ros's setTolerance. Applies to messages
        added from now on."""
        tolerance_ns = duration_to_nanoseconds(tolerance, "tolerance")
        if tolerance_ns < 0:
            raise ValueError(f"tolerance must be zero or positive, got {tolerance!r}")
        with self._lock:
            self._tolerance_ns = tolerance_ns

    def register_drop_callback(self, on_drop: DropCallback | None) -> None:
        """Call ``on_drop(message, reason)`` for every message dropped from now on (reason:
        one of ``DROP_REASONS``). None removes it."""
        if on_drop is not None and not callable(on_drop):
            raise TypeError(f"the drop callback must be callable, got {on_drop!r}")
        self._on_drop = on_drop

    # -- input --------------------------------------------------------------------------------

    def add(self, message: Any) -> None:
        """Queue ``message`` (any object with ``header.frame_id`` and ``header.stamp``); its
        callback may run before this returns, when its transforms are already there."""
        try:
            header = message.header
            frame_id = header.frame_id
            stamp = header.stamp
        except AttributeError:
            raise TypeError(
                f"MessageFilter.add takes a message with header.frame_id and header.stamp, got "
                f"{type(message).__name__}"
            ) from None
        if not isinstance(frame_id, str):
            raise TypeError(f"header.frame_id must be a string, got {frame_id!r}")
        if stamp.__class__ is not Time:  # a Time is immutable: kept as it is
            stamp = Time.from_nanoseconds(to_nanoseconds(stamp, "header.stamp"))
        if frame_id.startswith("/"):
            frame_id = frame_id[1:]
        targets = self._targets
        ready = False
        if frame_id and not self._by_frame.get(frame_id):
            # Fast path (checked again under the lock): nothing of this frame waits and
            # every transform is there already.
            try:
                if len(targets) == 1 and not self._tolerance_ns:
                    ready = self.buffer.can_transform(targets[0], frame_id, stamp)
                else:
                    can_transform = self.buffer.can_transform
                    for t, at in self._waits(targets, stamp):
                        if not can_transform(t, frame_id, at):
                            break
                    else:
                        ready = True
            except Exception:  # noqa: BLE001 - the futures below report it
                ready = False
        entry = None
        direct = False
        with self._lock:
            if self._closed:
                raise RuntimeError("MessageFilter.add called after close()")
            self.received += 1
            if not frame_id:
                self._drop_locked(_Entry(message, frame_id, stamp, (), None), "EmptyFrameID")
            elif ready and targets is self._targets and not self._by_frame.get(frame_id):
                self.passed += 1
                if self._delivering or self._outbox or self._to_cancel:
                    self._outbox.append((message, None))
                else:  # nothing before it to call back: call back here, delivering
                    direct = self._delivering = True
            else:
                waits = self._waits(self._targets, stamp)  # (the targets now)
                entry = self._enqueue_locked(message, frame_id, waits, stamp)
        if direct:  # _deliver_claimed(self._callback, (message,)), inlined
            try:
                self._callback(message)
            except Exception as exc:  # noqa: BLE001 - counted and logged, as _call does
                self._callback_failed(exc)
            except BaseException:
                with self._lock:
                    self._delivering = False
                raise
            with self._lock:
                if not self._outbox:  # (the usual case)
                    self._delivering = False
                    return
            self._deliver_claimed(None, None)
            return
        if entry is not None:
            self._wait(entry)
        # Whoever puts something in the outbox (or a future in _to_cancel) calls _deliver
        # after it: what others put there is theirs to deliver, what we put is seen here.
        if self._outbox or self._to_cancel:
            self._deliver()

    def _waits(self, targets: tuple[str, ...], stamp: Time) -> tuple[Wait, ...]:
        """(target, time) pairs a message at ``stamp`` waits for: each target at the stamp,
        and at stamp + tolerance when one is set (tf2_ros's setTolerance)."""
        if not self._tolerance_ns:
            if len(targets) == 1:
                return ((targets[0], stamp),)
            return tuple((t, stamp) for t in targets)
        later = Time.from_nanoseconds(stamp.nanoseconds + self._tolerance_ns)
        return tuple(pair for t in targets for pair in ((t, stamp), (t, later)))

    def _enqueue_locked(
        self, message: Any, frame_id: str, waits: tuple[Wait, ...], stamp: Time
    ) -> _Entry:
        if self.queue_size and len(self._queue) >= self.queue_size:
            self._remove_locked(next(iter(self._queue)), "QueueFull")
        deadline = None if self._timeout_s is None or self._no_wait else \
            monotonic() + self._timeout_s
        entry = _Entry(message, frame_id, stamp, waits, deadline)
        self._queue[entry] = None
        self._by_frame.setdefault(frame_id, deque()).append(entry)
        return entry

    def _wait(self, entry: _Entry) -> None:
        """Ask the buffer for one future per target (outside our lock: a future that is done
        already calls back at once)."""
        futures = []
        try:
            for target, at in entry.waits:
                futures.append(self.buffer.wait_for_transform_async(target, entry.frame_id,
                                                                    at))
        except Exception:  # noqa: BLE001 - the buffer refused the request itself
            with self._lock:
                if entry in self._queue and entry.state == _WAITING:
                    self._fail_locked(entry, "NoTransformFound")
            for future in futures:
                future.cancel()
            return
        late = self._no_wait and any(not future.done() for future in futures)
        with self._lock:
            live = entry in self._queue
            if live and late:  # not there on arrival, and it may not wait
                if entry.state == _WAITING:
                    self._fail_locked(entry, "OutTheBack")
                live = False
            elif live:
                entry.futures = futures
                if self._timeout_s is not None and not self._no_wait and self._timer is None:
                    self._start_timer_locked()
        if not live:  # cleared or dropped meanwhile (or just now, above)
            for future in futures:
                future.cancel()
            if late:
                self._deliver()
            return
        on_future = partial(self._on_future, entry)
        for future in futures:
            future.add_done_callback(on_future)
        entry.waited = True  # a later completion comes from an insertion: re-check it

    # -- completion ---------------------------------------------------------------------------

    def _on_future(self, entry: _Entry, future: Future[TransformStamped]) -> None:
        try:
            exc = future.exception()  # (done: it does not wait)
        except CancelledError:
            return
        with self._lock:
            if entry not in self._queue or entry.state != _WAITING:
                return
            if exc is not None:
                reason = "OutTheBack" if isinstance(exc, BackwardExtrapolationException) \
                    else "NoTransformFound"
                self._fail_locked(entry, reason)
            else:
                entry.remaining -= 1
                if entry.remaining > 0:
                    return
                entry.state = _READY
                self._release_locked(entry.frame_id)
            to_cancel, deliver = self._claim_locked()
        self._deliver_from(to_cancel, deliver)

    def _fail_locked(self, entry: _Entry, reason: str) -> None:
        """Drop a message that can no longer pass, at once: a drop does not wait for older
        messages of its frame (only passing on keeps their order)."""
        entry.state = _FAILED
        entry.reason = reason
        self._remove_locked(entry, reason)

    # -- the timeout --------------------------------------------------------------------------

    def _start_timer_locked(self) -> None:
        self._timer = threading.Thread(target=self._run_timer, name="tf2py-message-filter-timer",
                                       daemon=True)
        self._timer.start()

    def _run_timer(self) -> None:
        """Drop messages whose deadline passed; end as soon as none waits (started again by
        the next add that has to wait)."""
        while True:
            with self._lock:
                if self._closed:
                    self._timer = None
                    return
                # Deadlines grow with arrival: the oldest waiting entry is due first.
                head = next((e for e in self._queue if e.state == _WAITING), None)
                if head is None:
                    self._timer = None
                    return
                # (the timer runs only with a timeout: every entry has a deadline)
                remaining = cast(float, head.deadline) - monotonic()
                if remaining > 0:
                    self._timer_wake.wait(remaining)
                    continue
                self._fail_locked(head, "OutTheBack")
            self._deliver()

    # -- state --------------------------------------------------------------------------------

    def __len__(self) -> int:
        """Messages queued (waiting for their transforms or for an earlier one)."""
        with self._lock:
            return len(self._queue)

    def stats(self) -> dict[str, Any]:
        """Counters: received, passed, dropped per reason, cleared, callback errors, queued."""
        with self._lock:
            return {
                "received": self.received,
                "passed": self.passed,
                "dropped": dict(self.dropped),
                "cleared": self.cleared,
                "callback_errors": self.callback_errors,
                "queued": len(self._queue),
            }

    def clear(self) -> None:
        """Forget every queued message (no callbacks, as tf2_ros) and cancel its waits."""
        with self._lock:
            entries = list(self._queue)
            self._queue.clear()
            self._by_frame.clear()
            self.cleared += len(entries)
            for entry in entries:
                self._to_cancel.extend(entry.futures)
            self._timer_wake.notify_all()
        self._deliver()

    def close(self) -> None:
        """``clear()``, refuse further messages and stop the timer thread. Idempotent."""
        with self._lock:
            self._closed = True
            timer = self._timer
        self.clear()
        if timer is not None and timer is not threading.current_thread():
            timer.join(5.0)

    def __enter__(self) -> MessageFilter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"MessageFilter(target_frames={list(self._targets)!r}, "
                f"queue_size={self.queue_size}, queued={len(self._queue)})")
