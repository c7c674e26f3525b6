"""The index of waiting requests of ``Buffer``: futures from ``wait_for_transform_async``
(and its full form) and the frames each one watches, so that an insertion re-checks only
the requests it can have affected (see the rules in ``buffer.py``'s docstring); and what
the kernel's ``set_transform`` must do with an insert while threads wait or requests are
pending (its insert mode).

``RequestIndex`` is a member of ``Buffer``, sharing its lock: every method here runs under
that lock (``request`` and ``forget`` take it), and futures are resolved outside it. It holds
its buffer weakly (pending futures never keep a buffer alive) and asks it the core lookups.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from bisect import bisect_right
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import Future
from typing import TypeVar

from .core import BufferCore, KernelError
from .errors import _CONNECTIVITY
from .exceptions import (
    BackwardExtrapolationException,
    ConnectivityException,
    InvalidArgumentException,
    TransformException,
)
from .frame_tree import _clamp
from .kernel import Kernel
from .messages import TransformStamped
from .pending import (
    Outcome,
    Ready,
    RequestKey,
    _forget_cancelled,
    _Request,
    _resolve,
    _Watchers,
)
from .time import format_seconds, to_nanoseconds

__all__ = ["RequestIndex"]

_INF = float("inf")
_core_lookup_transform = BufferCore.lookup_transform  # (a Buffer's without the wait)
_core_lookup_transform_full = BufferCore.lookup_transform_full
_core_can_transform = BufferCore.can_transform
_core_can_transform_full = BufferCore.can_transform_full
_core_get_latest_common_time = BufferCore.get_latest_common_time


_Entry = TypeVar("_Entry", _Watchers, set[RequestKey])


def _discard(index: dict[str, _Entry], name: str, remove: Callable[[_Entry], object]) -> None:
    """``remove`` the request from ``index[name]``, if indexed; forget the name once empty."""
    entry = index.get(name)
    if entry is not None:
        remove(entry)
        if not entry:
            del index[name]


def _watchers_of(index: dict[str, _Watchers], name: str) -> _Watchers:
    """``index[name]``, made empty first if missing."""
    watchers = index.get(name)
    if watchers is None:
        watchers = index[name] = _Watchers()
    return watchers


class RequestIndex:
    """The pending requests of a ``Buffer`` (``requests``), the frames they watch, and the
    threads waiting on it (``waiting``)."""

    def __init__(self, store: BufferCore, kernel: Kernel, lock: threading.RLock, window_ns: int) -> None:
        self._store = weakref.ref(store)
        self._kernel = kernel
        self._lock = lock
        self._window_ns = window_ns  # for the too-old rule of requests
        self.requests: dict[RequestKey, _Request] = {}
        # frame id -> keys of the requests watching it (see _Request.watch / watch_any)
        self._watch: dict[str, _Watchers] = {}
        self._watch_any: dict[str, set[RequestKey]] = {}
        self._self_ref: weakref.ref[RequestIndex] = weakref.ref(self)
        self._rechecks = 0  # pending requests re-checked by insertions (see recheck_count)
        #: Threads in a timed wait or registering a request (see Buffer.set_transform).
        self.waiting = 0
        #: Inserts may skip the buffer's lock: no clock, no insert listener (Buffer sets it).
        self.direct = True

    @property
    def _core(self) -> BufferCore:
        """The buffer (alive whenever its index is used: the buffer calls it)."""
        store = self._store()
        assert store is not None, "a request index outlived its buffer"
        return store

    def sync_insert_mode(self) -> None:
        """Under the lock, after ``requests``, ``waiting`` or ``direct`` changed: tell the
        kernel's set_transform what it must do with an insert (core.py: 2 through
        ``_set_transform_slow`` when requests are pending or the insert needs the lock, 1
        then ``_after_direct_insert`` when a thread waits, 0 alone)."""
        self._kernel.set_insert_mode(2 if self.requests or not self.direct else 1 if self.waiting else 0)

    def wait_begins(self) -> None:
        """Under the lock, before a thread's first check: count it in ``waiting`` (an insert
        after this notifies it)."""
        self.waiting += 1
        self.sync_insert_mode()

    def wait_ends(self) -> None:
        """Under the lock: the thread counted by ``wait_begins`` no longer waits."""
        self.waiting -= 1
        self.sync_insert_mode()

    @property
    def recheck_count(self) -> int:
        """How many times an insertion re-checked a waiting request (the index's work: a
        request is only re-checked by an insertion that can have changed its answer)."""
        return self._rechecks

    def request(self, new: _Request) -> Future[TransformStamped]:
        """A future of ``new``'s lookup, sharing the check of a pending request for the same
        frames and times (``new`` itself is indexed only when none is pending)."""
        for frame in new.frames:
            if not isinstance(frame, str):
                raise TypeError(f"frame ids are strings, got {frame!r}")
        key = new.key
        future: Future[TransformStamped] = Future()
        ready: Ready | None
        with self._lock:
            request = self.requests.get(key)
            if request is None:
                # Not pending yet, so it has not been checked against the current data.
                request = new
                outcome = self._attempt(request)
                if outcome is not None:
                    ready = [((future,), outcome)]
                else:
                    self.requests[key] = request
                    self._index(request)
                    self.sync_insert_mode()
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

    def _attempt(self, request: _Request) -> Outcome | None:
        """Under the lock: the lookup's TransformStamped, an exception no data can cure, or
        None while it is still worth waiting."""
        try:
            if request.full:
                return _core_lookup_transform_full(self._core, *request.args)
            return _core_lookup_transform(self._core, *request.args)
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

    def _recheck_one(self, request: _Request) -> Outcome | None:
        """``_attempt`` for a pending request, cheaper while it still fails: can_transform
        builds neither a result nor an exception message. Only a request that may have
        become too old (its times are all non-zero) needs the exception's kind."""
        try:
            if request.full:
                possible = _core_can_transform_full(self._core, *request.args)
            else:
                possible = _core_can_transform(self._core, *request.args)
        except Exception:  # let _attempt report it
            possible = True
        if not possible and (not request.earliest_ns or self._too_old(request) is None):
            return None
        return self._attempt(request)

    def _failure_kind(self, request: _Request) -> type[TransformException] | None:
        """Why a request whose frames all exist still fails, told without building an
        error: ConnectivityException when a pair has no common ancestor, else, for a simple
        lookup at time 0, BackwardExtrapolationException (time 0 resolves to the latest
        common time, which no frame's newest data is behind), else None (not told)."""
        for frame_a, frame_b, _ in request.pairs:
            try:
                self._kernel.common_time(frame_a, frame_b)
            except TypeError:
                return ConnectivityException
            except KernelError as exc:
                # Only a pair with no common ancestor is disconnected; a loop elsewhere in
                # the tree (tf2 refuses the walk) says nothing of what new data may answer.
                if exc.args and exc.args[0] == _CONNECTIVITY:
                    return ConnectivityException
                return None
        if not request.full and request.earliest_ns == 0:
            return BackwardExtrapolationException
        return None

    def _too_old(self, request: _Request) -> tuple[int, int] | None:
        """tf2's rule for a request that can never succeed: its time is more than the cache
        time older than the latest common time of its frames (new data that old is refused)."""
        for frame_a, frame_b, time_ns in request.pairs:
            if time_ns == 0:
                continue
            try:
                latest_ns = to_nanoseconds(_core_get_latest_common_time(self._core, frame_a, frame_b))
            except TransformException:
                continue
            if latest_ns != 0 and time_ns + self._window_ns < latest_ns:
                return time_ns, latest_ns
        return None

    def _frame_usable(self, frame_id: object) -> bool:
        """Whether a lookup accepts this frame id now."""
        return isinstance(frame_id, str) and self._kernel.exists(frame_id)

    def _watched_frames(
        self, request: _Request
    ) -> tuple[frozenset[str], frozenset[str], dict[str, str | None]]:
        """``(watch, watch_any, watch_parent)`` for a request whose lookup just failed.

        While a requested frame does not exist, nothing but its creation can help: watch
        only for that name (as a parent or a child). Otherwise the lookup's answer depends
        only on the frames its walks visit, so new data for any other child frame cannot
        change it: the requested frames and their ancestors at each requested time, at the
        latest data (time 0 resolves through the latest samples) and at the resolved latest
        common time. Of those, some can only matter by getting another parent
        (``watch_parent``, re-checked only when that parent changes):

        - all of them while the frames are not connected (ConnectivityException);
        - for a lookup at time 0 that fails because the latest common time (the oldest of
          the path's newest stamps) is held back by an old frame (backward extrapolation):
          all but the frames holding it back, whose new data moves it.
        """
        if request.watch_any or not (request.watch or request.watch_parent):
            missing = frozenset(f for f in request.frames if not self._frame_usable(f))
            if missing:
                return frozenset(), missing, {}
        # (frame names are never removed, so frames that existed still exist)
        times = {t.nanoseconds for t in request.times}
        times.add(0)
        latest = []
        for frame_a, frame_b, time_ns in request.pairs:
            if time_ns == 0:
                try:
                    common = self._kernel.common_time(frame_a, frame_b)
                except (KernelError, TypeError):
                    continue
                times.add(common)
                latest.append(common)
        names = set(request.frames)
        frames = [f for f in request.frames if isinstance(f, str)]
        for time_ns in times:
            # The kernel's walk upwards from each frame, as the lookup would walk.
            names.update(self._kernel.ancestors(frames, _clamp(time_ns)))
        failure = self._failure_kind(request)
        if failure is ConnectivityException:
            held: set[str] = names
        elif failure is BackwardExtrapolationException and latest and latest[0] > 0:
            held = {f for f in names if not 0 < self._newest_ns(f) <= latest[0]}
        else:
            return frozenset(names), frozenset(), {}
        get_parent = self._kernel.get_parent
        watch_parent = {f: get_parent(f, 0) for f in held}
        return frozenset(names - held), frozenset(), watch_parent

    def _newest_ns(self, frame: str) -> int:
        """The newest stamp of ``frame``'s own link (0: static, a root, or unknown)."""
        try:
            return _core_get_latest_common_time(self._core, frame, frame).nanoseconds
        except TransformException:
            return 0

    def _index(self, request: _Request) -> None:
        self._reindex(request, *self._watched_frames(request))

    def _unindex(self, request: _Request) -> None:
        empty: frozenset[str] = frozenset()
        self._reindex(request, empty, empty, {})

    def _reindex(self, request: _Request, watch: frozenset[str], watch_any: frozenset[str],
                 watch_parent: dict[str, str | None]) -> None:
        """Move ``request`` in the watch indexes from the frames it watched to these."""
        index = self._watch
        if watch_parent != request.watch_parent:
            for name, parent in request.watch_parent.items():
                # (_discard calls it at once, in this iteration)
                _discard(index, name, lambda watchers: watchers.remove_parent(request, parent))  # noqa: B023
            for name, parent in watch_parent.items():
                _watchers_of(index, name).add_parent(request, parent)
            request.watch_parent = watch_parent
        if watch != request.watch:
            for name in request.watch - watch:
                _discard(index, name, lambda watchers: watchers.remove(request))
            for name in watch - request.watch:
                _watchers_of(index, name).add(request)
            request.watch = watch
        if watch_any != request.watch_any:
            any_index = self._watch_any
            key = request.key
            for name in request.watch_any - watch_any:
                _discard(any_index, name, lambda keys: keys.discard(key))
            for name in watch_any - request.watch_any:
                any_index.setdefault(name, set()).add(key)
            request.watch_any = watch_any

    def recheck(
        self,
        touched: tuple[Iterable[str], Collection[str]] | None,
        static_before: frozenset[str] = frozenset(),
        newest_before: Mapping[str, int] | None = None,
    ) -> Ready:
        """Under the lock, after an insertion naming ``touched`` = (parents, children) (None:
        unknown): try the pending requests it can have affected; return those now done."""
        keys: Iterable[RequestKey]
        if touched is None:
            keys = list(self.requests)
        else:
            keys = self._affected(touched[0], touched[1], static_before, newest_before)
        ready: Ready = []
        for key in keys:
            request = self.requests.get(key)
            if request is None:
                continue
            self._rechecks += 1
            outcome = self._recheck_one(request)
            if outcome is None:
                self._index(request)  # the tree may have changed shape
                continue
            del self.requests[key]
            self._unindex(request)
            ready.append((list(request.futures), outcome))
        if ready:
            self.sync_insert_mode()
        return ready

    def static_before(self, children: Iterable[str]) -> frozenset[str]:
        """Before an insertion: the touched children that timed requests watch and that hold
        a static sample (or one stamped 0) now. Such a frame answers at every time before the
        insertion; if it becomes dynamic, its new samples' stamps say nothing about what
        changed, so the stamp bound of ``_affected`` must not skip its watchers."""
        watch = self._watch
        if not watch:
            return frozenset()
        static: set[str] = set()
        for name in children:
            if name and name[0] == "/":
                name = name[1:]
            watchers = watch.get(name)
            if watchers is None or not watchers.timed:
                continue
            try:
                latest = _core_get_latest_common_time(self._core, name, name).nanoseconds
                if latest == 0 and BufferCore.get_parent(self._core, name, 0) is not None:
                    static.add(name)
            except TransformException:
                static.add(name)  # cannot tell: do not skip
        return frozenset(static)

    def newest_before(self, children: Iterable[str]) -> dict[str, int]:
        """Before an insertion of at most one sample per child: the newest stamp (0 when
        static) of each touched child that requests watch for a new parent. An insertion
        that does not move that stamp forward (an older sample, one of the same stamp, a
        static) can change what such a frame answers at earlier times, so ``_affected``
        re-checks those requests then."""
        watch = self._watch
        out: dict[str, int] = {}
        for name in children:
            if name and name[0] == "/":
                name = name[1:]
            watchers = watch.get(name)
            if watchers is not None and watchers.parents:
                out[name] = self._newest_ns(name)
        return out

    def _affected(
        self,
        parents: Iterable[str],
        children: Iterable[str],
        static_before: frozenset[str] = frozenset(),
        newest_before: Mapping[str, int] | None = None,
    ) -> set[RequestKey]:
        """Keys of the pending requests an insertion of these (parent, child) frame ids can
        have made possible.

        Requests with a missing frame are re-checked when it is named. The others watch the
        child frames their lookup walks through; of those, a request whose times are all
        non-zero is skipped while every touched child it watches is dynamic and still has no
        sample at or after its earliest time, and was not static before (``static_before``):
        that frame's cache could not answer at those times before this insertion and cannot
        after it, and the frames above it are not reached (the walk fails there, or it is
        the common ancestor, whose own link is never needed). A request that waits for a
        frame's new parent is also re-checked when an insertion did not move that frame's
        newest stamp forward (``newest_before``; None: not known, so always).
        """
        watch, watch_any = self._watch, self._watch_any
        keys: set[RequestKey] = set()
        named_parents: set[str] | None = None  # the insertion's parent ids, '/'-stripped
        for name in children:
            if name and name[0] == "/":  # BufferCore strips one leading '/'
                name = name[1:]
            watchers = watch.get(name)
            if watchers is not None:
                keys |= watchers.untimed
                if watchers.parents:  # re-checked only if this frame's parent changed
                    # (its latest parent, or its parent at some other time: a sample under
                    # another parent, even older than the latest, may connect a lookup at
                    # that time)
                    now = self._kernel.get_parent(name, 0)
                    if named_parents is None:
                        named_parents = {p[1:] if p and p[0] == "/" else p for p in parents}
                    earlier = (newest_before is None or name not in newest_before
                               or self._newest_ns(name) <= newest_before[name])
                    for parent, held in watchers.parents.items():
                        if earlier or parent != now or any(p != parent for p in named_parents):
                            keys |= held
                timed = watchers.timed
                if timed:
                    try:  # the child's newest stamp (0 when static)
                        latest = _core_get_latest_common_time(self._core, name, name).nanoseconds
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

    def forget(self, key: RequestKey, future: Future[TransformStamped]) -> None:
        """Drop a cancelled future; the request goes when its last future does."""
        with self._lock:
            request = self.requests.get(key)
            if request is None:
                return
            request.futures.pop(future, None)
            if not request.futures:
                del self.requests[key]
                self._unindex(request)
                self.sync_insert_mode()
