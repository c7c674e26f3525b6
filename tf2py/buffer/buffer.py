"""``Buffer``: a thread-safe ``BufferCore`` that can wait for transforms.

Every public ``BufferCore`` call runs under one re-entrant lock, so many reader threads and
a listener thread inserting data may share a buffer. Waiting is woken by the insertion
itself: ``BufferCore`` calls ``_notify_new_data`` once at the end of every insertion call
that stored something, and that notifies a ``threading.Condition`` (tf2 instead polls every
10 ms in C++ and 20 ms in Python). An insertion refused as too old counts too: tf2 prunes the
cache before refusing, and pruning can change an answer.

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

Backward time jumps: tf2_ros's ``Buffer`` clears itself when its ROS clock jumps back (C++:
any jump back; Python: more than 1 s). ``Buffer(clock=...)`` does the same with any clock
(``tf2py.SimClock`` follows the bus's /clock): it forgets all non-static data on every jump
back, so a bag played in a loop is accepted again on every pass. Without a clock, whoever
replays data in a loop calls ``clear()``.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import types
import weakref
from bisect import bisect_left, bisect_right, insort
from concurrent.futures import Future, InvalidStateError
from time import monotonic

from .apply import (
    as_point_array,
    copy_transform_stamped,
    transform_function,
    transform_point_array,
)
from .core import BufferCore
from .exceptions import (
    BackwardExtrapolationException,
    InvalidArgumentException,
    TransformException,
)
from .time import Time, duration_to_nanoseconds, format_seconds, to_nanoseconds

__all__ = ["Buffer"]

_NS_PER_S = 1_000_000_000
# tf2's walk gives up after this many links (a loop); the watch walks stop there too.
_MAX_GRAPH_DEPTH = 1000
_INF = float("inf")
_TIME_ZERO = Time()

# The BufferCore implementations Buffer calls under its lock (bound once, not per call).
_core_lookup_transform = BufferCore.lookup_transform
_core_lookup_transform_full = BufferCore.lookup_transform_full
_core_can_transform = BufferCore.can_transform
_core_can_transform_full = BufferCore.can_transform_full
_core_get_parent = BufferCore.get_parent
_core_get_latest_common_time = BufferCore.get_latest_common_time
_core_clear = BufferCore.clear


def _is_invalid_frame_id(frame_id) -> bool:
    """True for a frame id no data can ever make valid (tf2's InvalidArgument rule)."""
    return not isinstance(frame_id, str) or not frame_id or frame_id[0] == "/"


def _timeout_seconds(timeout) -> float:
    """A timeout (Duration or seconds; None means none) in seconds; <= 0 means do not wait."""
    if not timeout:
        return 0.0
    return duration_to_nanoseconds(timeout, "timeout") / _NS_PER_S


def _waited_message(exc: BaseException, elapsed: float, timeout: float) -> str:
    """tf2's message with the wait appended, as tf2_ros's C++ Buffer appends it."""
    base = str(exc).rstrip()
    if base.endswith("."):
        base = base[:-1]
    return f"{base}. canTransform returned after {elapsed:g} timeout was {timeout:g}."


class _Request:
    """The futures waiting for one (target, source, times, fixed) lookup."""

    __slots__ = (
        "key", "full", "frames", "times", "pairs", "args", "futures", "watch", "watch_any",
        "earliest_ns", "serial",
    )

    def __init__(self, key, full, frames, times, pairs, args):
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
        self.futures: dict[Future, None] = {}
        # Frames whose new data (as a child) could change the lookup's answer...
        self.watch: frozenset[str] = frozenset()
        # ... and requested frames that do not exist yet (created as a parent or a child).
        self.watch_any: frozenset[str] = frozenset()


_serials = itertools.count()


class _Watchers:
    """The pending requests watching one child frame, split so an insertion finds the ones
    it can affect without visiting the others: ``untimed`` (a requested time is 0, so any
    new sample may move "latest") and ``timed``, sorted by earliest requested time (a
    sample can only help requests whose times the frame's newest sample has reached)."""

    __slots__ = ("untimed", "timed")

    def __init__(self):
        self.untimed: set = set()
        self.timed: list = []  # (earliest_ns, serial, key), sorted

    def add(self, request):
        if request.earliest_ns:
            insort(self.timed, (request.earliest_ns, request.serial, request.key))
        else:
            self.untimed.add(request.key)

    def remove(self, request):
        if request.earliest_ns:
            timed = self.timed
            i = bisect_left(timed, (request.earliest_ns, request.serial))
            if i < len(timed) and timed[i][1] == request.serial:
                del timed[i]
        else:
            self.untimed.discard(request.key)

    def __bool__(self):
        return bool(self.untimed) or bool(self.timed)


def _forget_cancelled(buffer_ref, key):
    """A done-callback that drops a cancelled future from its buffer's pending requests.
    It holds the buffer weakly, so a pending future never keeps a buffer alive."""

    def on_done(future):
        if future.cancelled():
            buffer = buffer_ref()
            if buffer is not None:
                buffer._forget(key, future)

    return on_done


def _cancel_all(requests: dict):
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


def _resolve(ready):
    """Resolve futures (outside the lock: their callbacks may use the buffer). Each future
    gets its own copy of the result, so no two callers share a mutable message."""
    for futures, outcome in ready:
        failed = isinstance(outcome, BaseException)
        first = True
        for future in futures:
            value = outcome if first else (
                _copy_exception(outcome) if failed else copy_transform_stamped(outcome)
            )
            try:
                if failed:
                    future.set_exception(value)
                else:
                    future.set_result(value)
            except InvalidStateError:  # cancelled by its owner meanwhile
                continue
            first = False


def _frames_named_by_transform(args, kwargs):
    """(parent ids, child ids) an insertion call names."""
    transform = args[0] if args else kwargs["transform"]
    return (transform.header.frame_id,), (transform.child_frame_id,)


def _frames_named_by_values(args, kwargs):
    parent = args[0] if len(args) > 0 else kwargs["parent"]
    child = args[1] if len(args) > 1 else kwargs["child"]
    return (parent,), (child,)


def _frames_named_by_batch(args, kwargs):
    parents = args[0] if len(args) > 0 else kwargs["parents"]
    children = args[1] if len(args) > 1 else kwargs["children"]
    return set(parents), set(children)


def _inserting(function, frames_named):
    """Wrap a BufferCore insertion: run it under the lock and, if it stored something,
    re-check the pending requests that name a touched frame; resolve them after unlocking."""

    @functools.wraps(function)
    def insert(self, *args, **kwargs):
        if self._insert_listeners:
            return _insert_and_tell(self, _locked_insert, frames_named, args, kwargs)
        return _locked_insert(self, *args, **kwargs)

    def _locked_insert(self, *args, **kwargs):
        with self._lock:
            if self._inserting:  # BufferCore calling one of its own insertions
                return function(self, *args, **kwargs)
            if self._clock is not None and self._clock_check:
                self._check_clock()
            touched = static_before = None
            if self._requests:
                try:
                    touched = frames_named(args, kwargs)
                except Exception:  # an unusual call form: re-check everything
                    pass
                else:
                    static_before = self._static_before(touched[1])
            self._inserting = True
            try:
                result = function(self, *args, **kwargs)
            finally:
                self._inserting = False
            if not self._new_data:
                # Refused as older than the cache window (tf2's TF_OLD_DATA): nothing stored,
                # but the cache was pruned first, as tf2 prunes, and a pruned sample can have
                # been what made a lookup fail (a loop through old data).
                if not (result is False or getattr(result, "old", 0)):
                    return result
                if self._waiting:
                    self._condition.notify_all()
            self._new_data = False
            if not self._requests:
                return result
            ready = self._recheck(touched, static_before)
        if ready:
            _resolve(ready)
        return result

    return insert


def _insert_and_tell(buffer, locked_insert, frames_named, args, kwargs):
    """Insert-listener hook (see Buffer.add_insert_listener): run the insertion, then tell
    each listener the frame ids it named, outside the lock. A listener that raises is
    logged and kept."""
    local = buffer._listener_local
    depth = getattr(local, "depth", 0)
    local.depth = depth + 1
    try:
        with buffer._lock:
            before = buffer._stored_serial
        result = locked_insert(buffer, *args, **kwargs)
        stored = buffer._stored_serial != before
    finally:
        local.depth = depth
    if stored and not depth:  # a nested call (BufferCore calling itself): the outer tells
        try:
            parents, children = frames_named(args, kwargs)
        except Exception:
            parents = children = None  # an unusual call form: "anything may have changed"
        for listener in tuple(buffer._insert_listeners):
            try:
                listener(parents, children)
            except Exception:  # a listener's bug must not stop inserts
                logging.getLogger("tf2py.buffer").exception("insert listener failed")
    return result


def _locked(function):
    """Wrap a BufferCore method so that it runs under the buffer's lock."""

    @functools.wraps(function)
    def method(self, *args, **kwargs):
        with self._lock:
            return function(self, *args, **kwargs)

    return method


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

    def __init__(self, cache_time=10.0, clock=None):
        # Everything _notify_new_data and the wrappers use exists before BufferCore starts.
        self._clock = None  # see _follow_clock
        self._lock = threading.RLock()
        self._condition = threading.Condition(self._lock)
        self._waiting = 0  # threads in a timed wait (notified only when there are some)
        self._new_data = False  # set by _notify_new_data, consumed by the insert wrapper
        self._inserting = False
        self._requests: dict[tuple, _Request] = {}
        # frame id -> keys of the requests watching it (see _Request.watch / watch_any)
        self._watch: dict[str, _Watchers] = {}
        self._watch_any: dict[str, set[tuple]] = {}
        self._self_ref = weakref.ref(self)
        self._insert_listeners: tuple = ()  # see add_insert_listener
        self._stored_serial = 0  # counts insertion calls that stored data
        self._listener_local = threading.local()
        finalizer = weakref.finalize(self, _cancel_all, self._requests)
        finalizer.atexit = False
        super().__init__(cache_time)
        self._window_ns = self.cache_time.nanoseconds  # for the too-old rule of requests
        if clock is not None:
            self._follow_clock(clock)

    # -- a clock that can jump back (simulated time) -------------------------------------------

    def _follow_clock(self, clock):
        """Forget dynamic data when ``clock`` (anything with ``now()``) goes backwards, as
        tf2_ros's Buffer does on a /clock reset: told by ``clock.add_jump_callback(fn)`` when
        it has one, else noticed by comparing ``clock.now()`` at every insertion."""
        if not callable(getattr(clock, "now", None)):
            raise TypeError(f"clock must have now(), got {type(clock).__name__}")
        self._clock = clock
        self._clock_last_ns = to_nanoseconds(clock.now(), "clock.now()")
        add_jump_callback = getattr(clock, "add_jump_callback", None)
        if add_jump_callback is not None:
            buffer_ref = weakref.ref(self)

            def on_jump(jump=None):
                buffer = buffer_ref()
                if buffer is not None:
                    buffer.clear()

            add_jump_callback(on_jump)
            self._clock_check = False
        else:
            self._clock_check = True

    def _check_clock(self):
        """Under the lock, before an insertion: clear if the clock went backwards."""
        now_ns = to_nanoseconds(self._clock.now(), "clock.now()")
        if now_ns < self._clock_last_ns:
            self.clear()
        self._clock_last_ns = now_ns

    # -- the hook BufferCore calls ---------------------------------------------------------

    def _notify_new_data(self):
        """Called by BufferCore once at the end of every insertion call that stored data."""
        self._new_data = True
        self._stored_serial += 1
        if self._waiting:
            with self._condition:  # re-entrant: the inserting thread already holds it
                self._condition.notify_all()

    # -- insert listeners (used by BufferServer's goal index) ------------------------------

    def add_insert_listener(self, listener) -> None:
        """Call ``listener(parents, children)`` after every insertion call that stored data,
        outside the buffer's lock, on the inserting thread: the frame ids the call named as
        parents and as children (collections; both None when they could not be told). It
        must be quick and must not block (BufferServer only records the names and wakes its
        own thread)."""
        with self._lock:
            self._insert_listeners = self._insert_listeners + (listener,)

    def remove_insert_listener(self, listener) -> None:
        """Stop calling ``listener`` (no error if it was not added)."""
        with self._lock:
            self._insert_listeners = tuple(
                fn for fn in self._insert_listeners if fn is not listener)

    # -- lookups that wait -----------------------------------------------------------------

    def lookup_transform(self, target_frame, source_frame, time, timeout=0.0):
        """The ``TransformStamped`` that maps data in ``source_frame`` into ``target_frame`` at
        ``time`` (Time or seconds; 0 = the latest common time), waiting up to ``timeout``
        seconds (or a Duration) for the data to arrive."""
        if not timeout:
            with self._lock:
                return _core_lookup_transform(self, target_frame, source_frame, time)
        return self._wait_for_lookup(
            _core_lookup_transform, (target_frame, source_frame, time), timeout
        )

    def lookup_transform_full(
        self, target_frame, target_time, source_frame, source_time, fixed_frame, timeout=0.0
    ):
        """The time-travel lookup: data in ``source_frame`` at ``source_time`` into
        ``target_frame`` at ``target_time``, through ``fixed_frame`` (assumed constant over
        time); waits up to ``timeout`` like ``lookup_transform``."""
        args = (target_frame, target_time, source_frame, source_time, fixed_frame)
        if not timeout:
            with self._lock:
                return _core_lookup_transform_full(self, *args)
        return self._wait_for_lookup(_core_lookup_transform_full, args, timeout)

    def can_transform(self, target_frame, source_frame, time, timeout=0.0) -> bool:
        """Whether ``lookup_transform`` would succeed, waiting up to ``timeout`` for it to;
        never raises for missing data, and returns False at once for an invalid frame id."""
        if not timeout:
            with self._lock:
                return _core_can_transform(self, target_frame, source_frame, time)
        return self._wait_for_can(
            _core_can_transform, (target_frame, source_frame, time),
            (target_frame, source_frame), timeout,
        )

    def can_transform_full(
        self, target_frame, target_time, source_frame, source_time, fixed_frame, timeout=0.0
    ) -> bool:
        """Whether ``lookup_transform_full`` would succeed, waiting up to ``timeout``."""
        args = (target_frame, target_time, source_frame, source_time, fixed_frame)
        if not timeout:
            with self._lock:
                return _core_can_transform_full(self, *args)
        return self._wait_for_can(
            _core_can_transform_full, args, (target_frame, source_frame, fixed_frame), timeout
        )

    def _wait_for_lookup(self, lookup, args, timeout):
        timeout_s = _timeout_seconds(timeout)
        start = monotonic()
        deadline = start + timeout_s
        condition = self._condition
        with condition:
            while True:
                try:
                    return lookup(self, *args)
                except InvalidArgumentException:
                    raise  # no data can cure it: do not wait
                except TransformException as exc:
                    remaining = deadline - monotonic()
                    if remaining <= 0.0:
                        if timeout_s > 0.0:
                            exc.args = (_waited_message(exc, monotonic() - start, timeout_s),)
                        raise
                self._waiting += 1
                try:
                    condition.wait(remaining)
                finally:
                    self._waiting -= 1

    def _wait_for_can(self, can, args, frames, timeout) -> bool:
        timeout_s = _timeout_seconds(timeout)
        deadline = monotonic() + timeout_s
        condition = self._condition
        with condition:
            if can(self, *args):
                return True
            if any(_is_invalid_frame_id(frame) for frame in frames):
                return False  # no data can cure it: do not wait
            while True:
                remaining = deadline - monotonic()
                if remaining <= 0.0:
                    return False
                self._waiting += 1
                try:
                    condition.wait(remaining)
                finally:
                    self._waiting -= 1
                if can(self, *args):
                    return True

    # -- asynchronous requests -------------------------------------------------------------

    def wait_for_transform_async(self, target_frame, source_frame, time) -> Future:
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
        return self._request(
            key,
            False,
            (target_frame, source_frame),
            (stamp,),
            ((target_frame, source_frame, time_ns),),
            (target_frame, source_frame, stamp),
        )

    def wait_for_transform_full_async(
        self, target_frame, target_time, source_frame, source_time, fixed_frame
    ) -> Future:
        """The time-travel form of ``wait_for_transform_async``: resolved with
        ``lookup_transform_full(target_frame, target_time, source_frame, source_time,
        fixed_frame)`` as soon as it is possible."""
        target_ns = to_nanoseconds(target_time, "target_time")
        source_ns = to_nanoseconds(source_time, "source_time")
        key = ("full", target_frame, target_ns, source_frame, source_ns, fixed_frame)
        target_stamp = Time.from_nanoseconds(target_ns)
        source_stamp = Time.from_nanoseconds(source_ns)
        return self._request(
            key,
            True,
            (target_frame, source_frame, fixed_frame),
            (target_stamp, source_stamp),
            ((target_frame, fixed_frame, target_ns), (fixed_frame, source_frame, source_ns)),
            (target_frame, target_stamp, source_frame, source_stamp, fixed_frame),
        )

    @property
    def pending_request_count(self) -> int:
        """How many futures from ``wait_for_transform*_async`` are still waiting."""
        with self._lock:
            return sum(len(request.futures) for request in self._requests.values())

    def _request(self, key, full, frames, times, pairs, args) -> Future:
        for frame in frames:
            if not isinstance(frame, str):
                raise TypeError(f"frame ids are strings, got {frame!r}")
        future = Future()
        with self._lock:
            request = self._requests.get(key)
            if request is None:
                # Not pending yet, so it has not been checked against the current data.
                request = _Request(key, full, frames, times, pairs, args)
                outcome = self._attempt(request)
                if outcome is not None:
                    ready = [((future,), outcome)]
                else:
                    self._requests[key] = request
                    self._index(request)
                    ready = None
            else:
                # Pending: it failed at its last check and nothing it watches changed since.
                ready = None
            if ready is None:
                request.futures[future] = None
                future.add_done_callback(_forget_cancelled(self._self_ref, key))
        if ready:
            _resolve(ready)
        return future

    def _attempt(self, request: _Request):
        """Under the lock: the lookup's TransformStamped, an exception no data can cure, or
        None while it is still worth waiting."""
        try:
            if request.full:
                return _core_lookup_transform_full(self, *request.args)
            return _core_lookup_transform(self, *request.args)
        except InvalidArgumentException as exc:
            return exc
        except BackwardExtrapolationException as exc:
            too_old = self._too_old(request)
            if too_old is None:
                return None
            time_ns, latest_ns = too_old
            exc.args = (
                f"{str(exc).rstrip()} No data can make this transform available: the "
                f"requested time {format_seconds(time_ns)} is more than the cache time "
                f"({format_seconds(self._window_ns)} s) older than the latest common time "
                f"{format_seconds(latest_ns)}.",
            )
            return exc
        except TransformException:
            return None
        except Exception as exc:  # a bug must fail its future, never the inserting thread
            return exc

    def _recheck_one(self, request: _Request):
        """``_attempt`` for a pending request, cheaper while it still fails: can_transform
        builds neither a result nor an exception message. Only a request that may have
        become too old (its times are all non-zero) needs the exception's kind."""
        try:
            if request.full:
                possible = _core_can_transform_full(self, *request.args)
            else:
                possible = _core_can_transform(self, *request.args)
        except Exception:  # let _attempt report it
            possible = True
        if not possible and (not request.earliest_ns or self._too_old(request) is None):
            return None
        return self._attempt(request)

    def _too_old(self, request: _Request):
        """tf2's rule for a request that can never succeed: its time is more than the cache
        time older than the latest common time of its frames (new data that old is refused)."""
        for frame_a, frame_b, time_ns in request.pairs:
            if time_ns == 0:
                continue
            try:
                latest_ns = to_nanoseconds(_core_get_latest_common_time(self, frame_a, frame_b))
            except TransformException:
                continue
            if latest_ns != 0 and time_ns + self._window_ns < latest_ns:
                return time_ns, latest_ns
        return None

    def _frame_exists(self, frame_id) -> bool:
        try:
            _core_get_latest_common_time(self, frame_id, frame_id)  # validates the name
        except TransformException:
            return False
        return True

    def _watched_frames(self, request: _Request):
        """``(watch, watch_any)`` for a request whose lookup just failed.

        While a requested frame does not exist, nothing but its creation can help: watch
        only for that name (as a parent or a child). Otherwise the lookup's answer depends
        only on the caches of the frames its walks visit, so new data for any other child
        frame cannot change it: watch the requested frames and their ancestors at each
        requested time, at the latest data (time 0 resolves through the latest samples) and
        at the resolved latest common time.
        """
        if request.watch_any or not request.watch:  # new, or a frame was missing: look
            missing = frozenset(f for f in request.frames if not self._frame_exists(f))
            if missing:
                return frozenset(), missing
        # (frame names are never removed, so frames that existed still exist)
        times = set(request.times)
        times.add(Time())
        for frame_a, frame_b, time_ns in request.pairs:
            if time_ns == 0:
                try:
                    times.add(_core_get_latest_common_time(self, frame_a, frame_b))
                except TransformException:
                    pass
        names = set(request.frames)
        for time in times:
            visited: set = set()
            for frame in request.frames:
                depth = 0
                while frame not in visited and depth <= _MAX_GRAPH_DEPTH:
                    visited.add(frame)
                    try:
                        frame = _core_get_parent(self, frame, time)
                    except Exception:  # no data at that time
                        break
                    if frame is None:
                        break
                    depth += 1
            names |= visited
        return frozenset(names), frozenset()

    def _index(self, request: _Request):
        watch, watch_any = self._watched_frames(request)
        if watch != request.watch:
            index = self._watch
            for name in request.watch - watch:
                watchers = index.get(name)
                if watchers is not None:
                    watchers.remove(request)
                    if not watchers:
                        del index[name]
            for name in watch - request.watch:
                watchers = index.get(name)
                if watchers is None:
                    watchers = index[name] = _Watchers()
                watchers.add(request)
            request.watch = watch
        if watch_any != request.watch_any:
            index = self._watch_any
            key = request.key
            for name in request.watch_any - watch_any:
                keys = index.get(name)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[name]
            for name in watch_any - request.watch_any:
                index.setdefault(name, set()).add(key)
            request.watch_any = watch_any

    def _unindex(self, request: _Request):
        empty = frozenset()
        for name in request.watch:
            watchers = self._watch.get(name)
            if watchers is not None:
                watchers.remove(request)
                if not watchers:
                    del self._watch[name]
        for name in request.watch_any:
            keys = self._watch_any.get(name)
            if keys is not None:
                keys.discard(request.key)
                if not keys:
                    del self._watch_any[name]
        request.watch = request.watch_any = empty

    def _recheck(self, touched, static_before=frozenset()):
        """Under the lock, after an insertion naming ``touched`` = (parents, children) (None:
        unknown): try the pending requests it can have affected; return those now done."""
        if touched is None:
            keys = list(self._requests)
        else:
            keys = self._affected(touched[0], touched[1], static_before)
        ready = []
        for key in keys:
            request = self._requests.get(key)
            if request is None:
                continue
            outcome = self._recheck_one(request)
            if outcome is None:
                self._index(request)  # the tree may have changed shape
                continue
            del self._requests[key]
            self._unindex(request)
            ready.append((list(request.futures), outcome))
        return ready

    def _static_before(self, children) -> frozenset:
        """Before an insertion: the touched children that timed requests watch and that hold
        a static sample (or one stamped 0) now. Such a frame answers at every time before the
        insertion; if it becomes dynamic, its new samples' stamps say nothing about what
        changed, so the stamp bound of ``_affected`` must not skip its watchers."""
        watch = self._watch
        if not watch:
            return frozenset()
        static = set()
        for name in children:
            if name and name[0] == "/":
                name = name[1:]
            watchers = watch.get(name)
            if watchers is None or not watchers.timed:
                continue
            try:
                latest = _core_get_latest_common_time(self, name, name).nanoseconds
                if latest == 0 and _core_get_parent(self, name, _TIME_ZERO) is not None:
                    static.add(name)
            except TransformException:
                static.add(name)  # cannot tell: do not skip
        return frozenset(static)

    def _affected(self, parents, children, static_before=frozenset()) -> set:
        """Keys of the pending requests an insertion of these (parent, child) frame ids can
        have made possible.

        Requests with a missing frame are re-checked when it is named. The others watch the
        child frames their lookup walks through; of those, a request whose times are all
        non-zero is skipped while every touched child it watches is dynamic and still has no
        sample at or after its earliest time, and was not static before (``static_before``):
        that frame's cache could not answer at those times before this insertion and cannot
        after it, and the frames above it are not reached (the walk fails there, or it is
        the common ancestor, whose own link is never needed).
        """
        watch, watch_any = self._watch, self._watch_any
        keys: set = set()
        for name in children:
            if name and name[0] == "/":  # BufferCore strips one leading '/'
                name = name[1:]
            watchers = watch.get(name)
            if watchers is not None:
                keys |= watchers.untimed
                timed = watchers.timed
                if timed:
                    try:  # the child's newest stamp (0 when static)
                        latest = _core_get_latest_common_time(self, name, name).nanoseconds
                    except TransformException:
                        latest = 0
                    if latest == 0 or name in static_before:
                        end = len(timed)
                    else:
                        end = bisect_right(timed, (latest, _INF))
                    keys.update(entry[2] for entry in itertools.islice(timed, end))
            if watch_any:
                keys |= watch_any.get(name, set())
        if watch_any:
            for name in parents:
                if name and name[0] == "/":
                    name = name[1:]
                keys |= watch_any.get(name, set())
        return keys

    def _forget(self, key, future):
        """Drop a cancelled future; the request goes when its last future does."""
        with self._lock:
            request = self._requests.get(key)
            if request is None:
                return
            request.futures.pop(future, None)
            if not request.futures:
                del self._requests[key]
                self._unindex(request)

    # -- clearing --------------------------------------------------------------------------

    def clear(self):
        """Forget all non-static data (static transforms stay), as tf2 does; call this after a
        backward time jump (a bag that loops) so older stamps are accepted again."""
        with self._lock:
            _core_clear(self)
            if self._waiting:
                self._condition.notify_all()
            ready = self._recheck(None) if self._requests else None
        if ready:
            _resolve(ready)

    def lookup_velocity(self, *args, **kwargs):
        """``BufferCore.lookup_velocity`` under the lock (all its lookups see one state)."""
        with self._lock:
            return BufferCore.lookup_velocity(self, *args, **kwargs)

    def lookup_velocities(self, *args, **kwargs):
        """``BufferCore.lookup_velocities`` under the lock."""
        with self._lock:
            return BufferCore.lookup_velocities(self, *args, **kwargs)

    # -- applying transforms ---------------------------------------------------------------

    def transform(self, obj, target_frame, timeout=0.0):
        """``obj`` (a PointStamped, Vector3Stamped, PoseStamped or TransformStamped, in
        ``obj.header.frame_id`` at ``obj.header.stamp``) expressed in ``target_frame``: a new
        object of the same type whose header is (target_frame, the lookup's stamp). A
        Vector3Stamped is only rotated. For a TransformStamped the result maps
        ``obj.child_frame_id`` into ``target_frame``. Waits up to ``timeout`` for the data."""
        apply = transform_function(obj)  # TypeError before any lookup or wait
        header = obj.header
        transform = self.lookup_transform(target_frame, header.frame_id, header.stamp, timeout)
        return apply(obj, transform)

    def transform_points(self, points, target_frame, source_frame, time, timeout=0.0):
        """Points ``(N, 3)`` in ``source_frame`` at ``time``, expressed in ``target_frame``: a
        new float64 ``(N, 3)`` array (one lookup, vectorised over the points). Waits up to
        ``timeout`` for the data; ``ValueError`` for any other shape."""
        array = as_point_array(points)  # ValueError before any lookup or wait
        transform = self.lookup_transform(target_frame, source_frame, time, timeout)
        return transform_point_array(array, transform)


# Insertions: under the lock, then the pending requests they can have affected.
for _name, _frames_named in (
    ("set_transform", _frames_named_by_transform),
    ("set_transform_static", _frames_named_by_transform),
    ("set_transform_values", _frames_named_by_values),
    ("set_transforms", _frames_named_by_batch),
):
    if hasattr(BufferCore, _name):
        setattr(Buffer, _name, _inserting(getattr(BufferCore, _name), _frames_named))


def _public_core_functions():
    seen = set()
    for cls in BufferCore.__mro__:
        if cls is object:
            continue
        for name, value in vars(cls).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(value, types.FunctionType):
                yield name, getattr(BufferCore, name)


# Every other public BufferCore method (get_parent, chain, all_frames_as_yaml, get_frames,
# lookup_transforms, frames_info, ...) runs under the lock too.
for _name, _function in list(_public_core_functions()):
    if _name not in Buffer.__dict__:
        setattr(Buffer, _name, _locked(_function))
