"""``Buffer``: a thread-safe ``BufferCore`` that can wait for transforms.

Every kernel call is atomic (the kernel has its own lock, which readers share), so many
reader threads and a listener thread inserting data may share a buffer; batch lookups and
batch inserts run without the GIL. The buffer's own lock orders what the kernel does not
know about: waits, the index of waiting requests, the clock, insert listeners. Waiting is
woken by the insertion itself: an insert that may concern a waiting thread or request
(``waiting`` or ``requests`` of the buffer's ``RequestIndex``, read after the insert)
notifies a ``threading.Condition`` (tf2 instead polls every 10 ms in C++ and 20 ms in
Python); a thread counts itself in ``waiting`` before its first check, so no insert between
its check and its wait goes unseen. An insertion refused as too old counts too: tf2 prunes
the cache before refusing, and pruning can change an answer.

Asynchronous requests (``wait_for_transform_async`` and its full form, used by the buffer
server) are futures, re-checked once per insertion call (not per transform), and only when
the insertion can have changed their answer:

- a request naming a frame that does not exist yet waits for that name to be inserted;
- otherwise it watches the child frames its lookup walks through (the requested frames and
  their ancestors at the requested times, at the latest data and at the resolved latest
  common time): data for any other frame cannot change that lookup's answer;
- a request whose times are all non-zero is also skipped while the watched frame's newest
  sample is older than its earliest time (kept sorted per frame, so an insertion finds the
  requests it reached by bisection, whatever else is pending).

Requests for the same frames and times share one check; a re-check tries ``can_transform``
first (no result or message built while it still fails). Futures are resolved outside the
lock, so their callbacks may call back into the buffer; they hold the buffer only weakly.

Backward time jumps: tf2_ros's ``Buffer`` clears itself when its ROS clock jumps back.
``Buffer(clock=...)`` does the same with any object whose ``now()`` returns a ``Time``: each
insertion call reads the clock once and, if it went back since the last reading, forgets
the dynamic data (``clear()``; statics stay) before storing; a clock with
``add_jump_callback(fn)`` also has the buffer cleared at once when it jumps. Without a
clock, whoever replays data in a loop calls ``clear()``.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

from . import lookup_async as _lookup_async
from .apply import as_point_array, transform_function, transform_point_array
from .batch import batch_frames
from .core import BatchResult, BufferCore
from .frame_tree import TimeLike
from .kernel import kernel_entry
from .messages import Header, TransformStamped
from .pending import Ready, _cancel_all, _Request, _resolve
from .requests import RequestIndex
from .time import Duration, Time, to_nanoseconds
from .transforms import Transforms
from .waits import wait_until_can, wait_until_looked_up

__all__ = ["Buffer"]

# The BufferCore implementations Buffer calls under its lock (bound once, not per call).
_core_lookup_transform = BufferCore.lookup_transform
_core_lookup_transform_full = BufferCore.lookup_transform_full
_core_can_transform = BufferCore.can_transform
_core_can_transform_full = BufferCore.can_transform_full

_R = TypeVar("_R")
#: The frame ids an insertion call named: (parents, children).
Named = tuple[Collection[str], Collection[str]]
#: Called after an insertion that stored data with the (parents, children) it named, both
#: None when they could not be told (see Buffer.add_insert_listener).
InsertListener = Callable[[Collection[str] | None, Collection[str] | None], object]
#: A wait's timeout: a Duration or seconds (0: do not wait).
Timeout = Duration | float


class _Stamped(Protocol):
    """Data with a header (frame id and stamp): what ``Buffer.transform`` takes."""

    @property
    def header(self) -> Header: ...


_S = TypeVar("_S", bound=_Stamped)


def _named_by_transform(transform: TransformStamped) -> Callable[[], Named]:
    """``named()`` of an insertion of one TransformStamped: (parents, children)."""
    return lambda: ((transform.header.frame_id,), (transform.child_frame_id,))


def _one_row_per_child(transforms: Transforms | Sequence[str] | str, *args: Any, **kwargs: Any) -> bool:
    """Whether a set_transforms call (either form) has at most one row per child frame."""
    children = transforms.children if isinstance(transforms, Transforms) else (
        args[0] if args else kwargs.get("children", ""))
    return not isinstance(children, str) and len(set(children)) == len(children)


def _on_clock_jump(buffer_ref: weakref.ref[Buffer]) -> Callable[..., None]:
    """A clock's jump callback that clears the buffer (held weakly) at once."""

    def on_jump(*args: object, **kwargs: object) -> None:
        buffer = buffer_ref()
        if isinstance(buffer, Buffer):  # (the reference is always to a Buffer, or dead)
            buffer._clock_jumped()

    return on_jump


class Buffer(BufferCore):
    """A ``BufferCore`` that is safe to share between threads and can wait for data.

    Every ``BufferCore`` method is available and runs under one lock. Lookups and
    ``can_transform`` take a ``timeout`` (a ``Duration`` or seconds; 0 = do not wait): the
    call waits until the transform can be computed, woken by the insertion that makes it
    possible, and re-resolves time 0 ("latest common time") at every check. When the wait
    runs out the underlying tf2 exception is raised (``LookupException``,
    ``ConnectivityException`` or an ``ExtrapolationException`` subclass), its message
    extended with how long it waited. An ``InvalidArgumentException`` (empty frame id, a
    leading '/') is raised at once, since no data can cure it.
    """

    def __init__(self, cache_time: Duration | float | None = 10.0, clock: Any = None) -> None:
        if clock is not None and not callable(getattr(clock, "now", None)):
            raise TypeError("Buffer(clock=...) needs an object with now(), got %r" % (clock,))
        self._lock = threading.RLock()
        self._condition = threading.Condition(self._lock)
        self._new_data = False  # set by _notify_new_data, consumed by _insert
        super().__init__(cache_time)
        # The waiting requests and threads, and the kernel's insert mode that follows them.
        self._index = RequestIndex(self, self._kernel, self._lock, self.cache_time.nanoseconds)
        finalizer = weakref.finalize(self, _cancel_all, self._index.requests)
        finalizer.atexit = False
        self._clock: Any = clock
        self._clock_last: int | None = None  # the clock's last reading, ns
        self._insert_listeners: tuple[InsertListener, ...] = ()  # see add_insert_listener
        self._index.direct = clock is None  # inserts skip the lock: no clock, no insert listener
        self._index.sync_insert_mode()
        if clock is not None:
            add_jump_callback = getattr(clock, "add_jump_callback", None)
            if callable(add_jump_callback):
                add_jump_callback(_on_clock_jump(weakref.ref(self)))

    # -- the hook BufferCore calls ---------------------------------------------------------

    def _notify_new_data(self) -> None:
        """Called by BufferCore once at the end of every insertion call that stored data."""
        self._new_data = True
        if self._index.waiting:
            with self._condition:  # re-entrant: the inserting thread already holds it
                self._condition.notify_all()

    # -- insertion: under the lock, then the pending requests it can have affected ----------

    # set_transform is BufferCore's, the kernel's own function: it stores a plain message
    # without the lock, then calls _after_direct_insert when a thread waits; with requests
    # pending, a clock or an insert listener it calls _set_transform_slow, whose _insert sees
    # before the insert which touched frames were static, so the stamp bound skips the
    # requests it cannot help. RequestIndex.sync_insert_mode tells the kernel which (requests.py).

    def _after_direct_insert(self, transform: Any, stored: bool) -> None:
        touched = ((transform.header.frame_id,), (transform.child_frame_id,))
        children = frozenset(c[1:] if c[:1] == "/" else c for c in touched[1])
        index = self._index
        with self._lock:
            if index.waiting:
                self._condition.notify_all()
            # static_before = every touched child: the stamp bound never skips a request here.
            # An insert refused as too old stored nothing but pruned first (as tf2 does), and a
            # pruned sample can be what made a lookup fail (a loop through old data): then
            # every pending request is re-checked (rare: old data only).
            ready = (index.recheck(touched if stored else None, children)
                     if index.requests else None)
        if ready:
            _resolve(ready)

    def _set_transform_slow(self, transform: TransformStamped, authority: str,
                            is_static: bool = False) -> bool:
        return self._insert(BufferCore._set_transform_slow, (transform, authority, is_static),
                            _named_by_transform(transform), True)

    def set_transform_static(self, transform: TransformStamped, authority: str) -> bool:
        """``BufferCore.set_transform_static`` under the lock; wakes the waits it can satisfy."""
        return self._insert(BufferCore._set_transform_slow, (transform, authority, True),
                            _named_by_transform(transform), True)

    def set_transform_values(
        self, parent: str, child: str, stamp_ns: int, tx: float, ty: float, tz: float,
        qx: float, qy: float, qz: float, qw: float, authority: str, is_static: bool = False,
    ) -> bool:
        """``BufferCore.set_transform_values`` under the lock; wakes the waits it can satisfy."""
        return self._insert(
            BufferCore.set_transform_values,
            (parent, child, stamp_ns, tx, ty, tz, qx, qy, qz, qw, authority, is_static),
            lambda: ((parent,), (child,)), True,
        )

    def set_transforms(self, transforms: Transforms | Sequence[str] | str, *args: Any,
                       **kwargs: Any) -> BatchResult:
        """``BufferCore.set_transforms`` (either form, the same overloads) under the lock; wakes
        the waits it serves."""
        return self._insert(lambda store: BufferCore.set_transforms(store, transforms, *args, **kwargs), (),
                            lambda: batch_frames(transforms, *args, **kwargs),
                            lambda: _one_row_per_child(transforms, *args, **kwargs))

    def _insert(self, function: Callable[..., _R], args: tuple[Any, ...], named: Callable[[], Named],
                one_row: bool | Callable[[], bool] = False) -> _R:
        """Run a BufferCore insertion under the lock and, if it stored something, re-check
        the pending requests that name a touched frame (``named()`` = (parents, children));
        resolve them, and tell the insert listeners, after unlocking. ``one_row``: at most
        one sample per child (see RequestIndex.newest_before)."""
        # The clock is read before the lock: a clock's now() may report a jump through the
        # jump callback, which clears and resolves requests (outside the lock, as always).
        now_ns = self._clock_ns() if self._clock is not None else None
        index = self._index
        with self._lock:
            ready = None if now_ns is None else self._clock_moved(now_ns)
            touched: Named | None = None
            static_before: frozenset[str] = frozenset()  # (unused while touched is None)
            newest_before: dict[str, int] | None = None  # (None: not known)
            if index.requests:
                try:
                    touched = named()
                except Exception:  # an unusual call form: re-check everything
                    touched = None
                else:
                    static_before = index.static_before(touched[1])
                    if one_row is True or (callable(one_row) and one_row()):
                        newest_before = index.newest_before(touched[1])
            self._new_data = False
            result = function(self, *args)
            stored = self._new_data
            if not stored:
                # Refused as older than the cache window (tf2's TF_OLD_DATA): nothing stored,
                # but the cache was pruned first, as tf2 prunes, and a pruned sample can have
                # been what made a lookup fail (a loop through old data).
                outcome: object = result  # a bool, or a BatchResult (with .old)
                if not (outcome is False or bool(getattr(outcome, "old", 0))):
                    if ready:
                        _resolve(ready)
                    return result
                if index.waiting:
                    self._condition.notify_all()
            self._new_data = False
            if index.requests:
                ready = (ready or []) + index.recheck(touched, static_before, newest_before)
            listeners = self._insert_listeners if stored else ()
        if ready:
            _resolve(ready)
        if listeners:
            self._tell_insert_listeners(listeners, named)
        return result

    # -- insert listeners (BufferServer's goal index) --------------------------------------

    def add_insert_listener(self, listener: InsertListener) -> None:
        """Call ``listener(parents, children)`` after every insertion call that stored data,
        outside the buffer's lock, on the inserting thread: the frame ids the call named as
        parents and as children (collections; both None when they could not be told). It
        must be quick and must not block (BufferServer only records the names and wakes its
        own thread)."""
        with self._lock:
            self._insert_listeners = self._insert_listeners + (listener,)
            self._index.direct = False
            self._index.sync_insert_mode()

    def remove_insert_listener(self, listener: InsertListener) -> None:
        """Stop calling ``listener`` (no error if it was not added)."""
        with self._lock:
            self._insert_listeners = tuple(
                fn for fn in self._insert_listeners if fn is not listener)
            self._index.direct = self._clock is None and not self._insert_listeners
            self._index.sync_insert_mode()

    @staticmethod
    def _tell_insert_listeners(listeners: tuple[InsertListener, ...], named: Callable[[], Named]) -> None:
        parents: Collection[str] | None
        children: Collection[str] | None
        try:
            parents, children = named()
        except Exception:  # an unusual call form: "anything may have changed"
            parents = children = None
        for listener in listeners:
            try:
                listener(parents, children)
            except Exception:  # a listener's bug must not stop inserts
                logging.getLogger("tf2py.buffer").exception("insert listener failed")

    # -- a clock that jumps back -----------------------------------------------------------

    def _clock_ns(self) -> int:
        now = self._clock.now()
        return now.nanoseconds if hasattr(now, "nanoseconds") else to_nanoseconds(now, "clock")

    def _clock_moved(self, now_ns: int) -> Ready | None:
        """Under the lock, before an insertion: clear if the clock went back since the last
        reading. Returns the requests that clearing resolved (to resolve after unlocking)."""
        last = self._clock_last
        self._clock_last = now_ns
        if last is not None and now_ns < last:
            return self._clear_locked()
        return None

    def _clock_jumped(self) -> None:
        """The clock's jump callback: forget the dynamic data now, unless an insertion since
        the jump already saw the new time (and cleared): that data is of the new time."""
        now_ns = self._clock_ns()
        with self._lock:
            last = self._clock_last
            if last is not None and last <= now_ns:
                return
            self._clock_last = None
            ready = self._clear_locked()
        if ready:
            _resolve(ready)

    # -- lookups that wait -----------------------------------------------------------------

    # The kernel's own functions (kernel_entry, as BufferCore's); waits come back through the
    # fallbacks below.
    @kernel_entry("lookup_transform_waiting")
    def lookup_transform(
        self, target_frame: str, source_frame: str, time: TimeLike, timeout: Timeout = 0.0,
    ) -> TransformStamped:
        """``BufferCore.lookup_transform``, waiting up to ``timeout`` (seconds or a Duration)
        for the data, woken by its insertion; then tf2's exception, the wait in its message."""
        return self._kernel.lookup_transform_waiting(target_frame, source_frame, time, timeout)

    @kernel_entry("can_transform_waiting")
    def can_transform(
        self, target_frame: str, source_frame: str, time: TimeLike, timeout: Timeout = 0.0,
    ) -> bool:
        """Whether ``lookup_transform`` would succeed, waiting up to ``timeout`` for it to."""
        return self._kernel.can_transform_waiting(target_frame, source_frame, time, timeout)

    def _lookup_transform_fallback(
        self, target_frame: str, source_frame: str, time: Any, timeout: Any, result: object,
    ) -> TransformStamped:
        """What the kernel's lookup_transform did not answer: a wait, an error to word,
        arguments to convert."""
        if timeout:
            looked_up: TransformStamped = wait_until_looked_up(
                self, _core_lookup_transform, (target_frame, source_frame, time), timeout
            )
            return looked_up
        return self._lookup_transform_other(target_frame, source_frame, time, result)

    def _can_transform_fallback(self, target_frame: str, source_frame: str, time: Any, timeout: Any) -> bool:
        """What the kernel's can_transform did not answer: a wait, arguments to convert."""
        if timeout:
            return wait_until_can(self,
                _core_can_transform, (target_frame, source_frame, time),
                (target_frame, source_frame), timeout,
            )
        return self._can_transform_slow(target_frame, source_frame, time)

    def lookup_transform_full(
        self, target_frame: str, target_time: TimeLike, source_frame: str,
        source_time: TimeLike, fixed_frame: str, timeout: Timeout = 0.0,
    ) -> TransformStamped:
        """The time-travel lookup: data in ``source_frame`` at ``source_time`` into
        ``target_frame`` at ``target_time``, through ``fixed_frame`` (assumed constant over
        time); waits up to ``timeout`` like ``lookup_transform``."""
        args = (target_frame, target_time, source_frame, source_time, fixed_frame)
        if not timeout:
            return _core_lookup_transform_full(self, *args)
        return wait_until_looked_up(self, _core_lookup_transform_full, args, timeout)

    def can_transform_full(
        self, target_frame: str, target_time: TimeLike, source_frame: str,
        source_time: TimeLike, fixed_frame: str, timeout: Timeout = 0.0,
    ) -> bool:
        """Whether ``lookup_transform_full`` would succeed, waiting up to ``timeout``."""
        args = (target_frame, target_time, source_frame, source_time, fixed_frame)
        if not timeout:
            return _core_can_transform_full(self, *args)
        return wait_until_can(self,
            _core_can_transform_full, args, (target_frame, source_frame, fixed_frame), timeout
        )

    # -- asynchronous requests -------------------------------------------------------------

    def wait_for_transform_async(
        self, target_frame: str, source_frame: str, time: TimeLike
    ) -> Future[TransformStamped]:
        """A ``concurrent.futures.Future`` resolved with the ``TransformStamped`` of
        ``lookup_transform(target_frame, source_frame, time)``: at once if it is possible
        now, else by the first insertion that makes it possible. Errors no data can cure (an
        invalid frame id, a time older than the cache window) are set as its exception.
        ``future.cancel()`` drops the request at once. There is no timeout: use
        ``future.result(timeout)`` (and cancel), or ``lookup_transform(..., timeout)``.
        Futures hold the buffer only weakly; if the buffer is garbage-collected, its pending
        futures are cancelled."""
        time_ns = to_nanoseconds(time, "time")
        key = ("simple", target_frame, source_frame, time_ns)
        stamp = Time.from_nanoseconds(time_ns)
        return self._registered_request(_Request(
            key, False, (target_frame, source_frame), (stamp,),
            ((target_frame, source_frame, time_ns),), (target_frame, source_frame, stamp),
        ))

    def wait_for_transform_full_async(
        self, target_frame: str, target_time: TimeLike, source_frame: str,
        source_time: TimeLike, fixed_frame: str,
    ) -> Future[TransformStamped]:
        """The time-travel form of ``wait_for_transform_async``: resolved with
        ``lookup_transform_full(target_frame, target_time, source_frame, source_time,
        fixed_frame)`` as soon as it is possible."""
        target_ns = to_nanoseconds(target_time, "target_time")
        source_ns = to_nanoseconds(source_time, "source_time")
        key = ("full", target_frame, target_ns, source_frame, source_ns, fixed_frame)
        target_stamp = Time.from_nanoseconds(target_ns)
        source_stamp = Time.from_nanoseconds(source_ns)
        return self._registered_request(_Request(
            key, True, (target_frame, source_frame, fixed_frame), (target_stamp, source_stamp),
            ((target_frame, fixed_frame, target_ns), (fixed_frame, source_frame, source_ns)),
            (target_frame, target_stamp, source_frame, source_stamp, fixed_frame),
        ))

    def _registered_request(self, request: _Request) -> Future[TransformStamped]:
        """``RequestIndex.request``, counted in ``waiting`` meanwhile: an insert that skipped
        the lock (see set_transform) re-checks it once it is indexed."""
        with self._lock:
            self._index.wait_begins()
        try:
            return self._index.request(request)
        finally:
            with self._lock:
                self._index.wait_ends()

    # Coroutines awaited from asyncio (lookup_async.py): woken by the insertion, cancelled
    # with their task.
    lookup_transform_async = _lookup_async.lookup_transform_async
    lookup_transform_full_async = _lookup_async.lookup_transform_full_async

    @property
    def pending_request_count(self) -> int:
        """How many futures from ``wait_for_transform*_async`` are still waiting."""
        with self._lock:
            return sum(len(request.futures) for request in self._index.requests.values())

    @property
    def recheck_count(self) -> int:
        """How many times an insertion re-checked a waiting request (the index's work: a
        request is only re-checked by an insertion that can have changed its answer)."""
        return self._index.recheck_count

    # -- clearing --------------------------------------------------------------------------

    def clear(self) -> None:
        """Forget all non-static data (static transforms stay), as tf2 does; call this after a
        backward time jump (a bag that loops) so older stamps are accepted again."""
        with self._lock:
            ready = self._clear_locked()
        if ready:
            _resolve(ready)

    def drop_static(self, frames: Iterable[str]) -> int:
        """``BufferCore.drop_static`` under the lock (nothing waiting can become answerable)."""
        with self._lock:
            return BufferCore.drop_static(self, frames)

    def _clear_locked(self) -> Ready | None:
        BufferCore.clear(self)
        if self._index.waiting:
            self._condition.notify_all()
        return self._index.recheck(None) if self._index.requests else None

    # -- applying transforms ---------------------------------------------------------------

    def transform(self, obj: _S, target_frame: str, timeout: Timeout = 0.0) -> _S:
        """``obj`` (a PointStamped, Vector3Stamped, PoseStamped or TransformStamped, in
        ``obj.header.frame_id`` at ``obj.header.stamp``) expressed in ``target_frame``: a new
        object of the same type whose header is (target_frame, the lookup's stamp). A
        Vector3Stamped is only rotated. For a TransformStamped the result maps
        ``obj.child_frame_id`` into ``target_frame``. Waits up to ``timeout`` for the data."""
        apply = transform_function(obj)  # TypeError before any lookup or wait
        header = obj.header
        transform = self.lookup_transform(target_frame, header.frame_id, header.stamp, timeout)
        return apply(obj, transform)

    def transform_points(
        self, points: npt.ArrayLike, target_frame: str, source_frame: str, time: TimeLike,
        timeout: Timeout = 0.0,
    ) -> npt.NDArray[np.float64]:
        """Points ``(N, 3)`` in ``source_frame`` at ``time``, expressed in ``target_frame``: a
        new float64 ``(N, 3)`` array (one lookup, vectorised over the points). Waits up to
        ``timeout`` for the data; ``ValueError`` for any other shape."""
        array = as_point_array(points)  # ValueError before any lookup or wait
        transform = self.lookup_transform(target_frame, source_frame, time, timeout)
        return transform_point_array(array, transform)
