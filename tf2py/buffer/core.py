"""``BufferCore``: the in-process transform store with tf2's lookup semantics.

A transform stored for (parent P, child C) maps coordinates expressed in C into P.
``lookup_transform(target_frame, source_frame, time)`` returns the transform that maps data
in ``source_frame`` into ``target_frame`` (the pose of ``source_frame`` in ``target_frame``).
Times are integer nanoseconds inside; every public time argument also takes a ``Time`` or
plain seconds. Translations are in the units given (metres in ROS); rotations are unit
quaternions ``(x, y, z, w)``.

A store holds its compiled kernel (``_kernel/``, C++; the table of its calls is in
``kernel.py``) and a ``FrameTree`` over it as members: the kernel holds the frames, their time
caches and the one walk of the tree every query uses; this class keeps the contract (API.md):
argument conversion, messages and tf2's exceptions (``errors.py``). Its public
``lookup_transform``, ``can_transform`` and ``set_transform`` are the kernel's own entries
(``kernel.kernel_entry``), so a call that succeeds runs no Python frame; what the kernel does
not answer comes back to this class through ``kernel.py``'s fallbacks.

The rules followed are tf2's (ROS 2 geometry2, tf2-reference.md §1-§5) with the departures
of §13.2: invalid input raises ``InvalidArgumentException`` (NaN, infinity and denormalized
quaternions included), a repeated stamp replaces the earlier sample, and ``chain`` follows
ROS 1's tested ``_chainAsVector``.

Every kernel call is atomic (the kernel has its own lock); ``Buffer`` adds waits and its lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, overload

from . import _kernel_ext
from .batch import BatchResult, store_batch
from .batch import lookup_transforms as _lookup_transforms
from .errors import can_frame_message, check_insert, frame_error, query_error, unusable_frame
from .exceptions import InvalidArgumentException, TransformException
from .frame_tree import FrameTree, TimeLike, _clamp, _time_ns
from .kernel import Kernel, configure_kernel, kernel_entry
from .messages import TransformStamped, stamped
from .time import Duration, Time, duration_to_nanoseconds, to_nanoseconds
from .transforms import Transforms
from .velocity_arguments import lookup_velocities as _lookup_velocities
from .velocity_arguments import lookup_velocity as _lookup_velocity

__all__ = ["BufferCore", "BatchResult", "MAX_GRAPH_DEPTH"]

MAX_GRAPH_DEPTH = _kernel_ext.MAX_GRAPH_DEPTH  # tf2's: more links than this means a loop
DEFAULT_CACHE_TIME_NS = 10_000_000_000
KernelError = _kernel_ext.KernelError
_NAME_TYPE = _kernel_ext.NAME_TYPE
_IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
_NS_PER_S = 1_000_000_000


class BufferCore:
    """The transform store: per-frame caches, the frame tree and tf2's lookups.

    ``cache_time`` (a ``Duration`` or seconds, default 10 s) is how much history each
    non-static frame keeps.
    """

    # The kernel in a slot: the kernel's entries read it through CPython's member API.
    __slots__ = ("_kernel", "__dict__", "__weakref__")

    def __init__(self, cache_time: Duration | float | None = 10.0) -> None:
        cache_time_ns = (DEFAULT_CACHE_TIME_NS if cache_time is None
                         else duration_to_nanoseconds(cache_time, "cache_time"))
        if cache_time_ns < 0:
            raise InvalidArgumentException("cache_time must not be negative")
        configure_kernel()
        self._kernel = Kernel(_clamp(cache_time_ns), self)
        self._tree = FrameTree(self._kernel)
        self._cache_time_ns = cache_time_ns
        #: Callables ``() -> str | None`` whose sentences end a failed ``lookup_transform``'s
        #: message (a listener that has heard nothing says so); see ``add_lookup_hint``.
        self._lookup_hints: tuple[Callable[[], str | None], ...] = ()
        if type(self)._notify_new_data is not BufferCore._notify_new_data:
            self._kernel.set_insert_mode(1)  # a subclass hears every insert that stored data

    @property
    def kernel(self) -> Kernel:
        """The compiled kernel this store holds, for tf2py's batch paths (``kernel.py``)."""
        return self._kernel

    def add_lookup_hint(self, hint: Callable[[], str | None]) -> None:
        """Have ``hint()`` (a sentence, or None for nothing to add) end the message of every
        failed ``lookup_transform`` that data could cure (not an invalid argument). Asked
        only when a lookup fails: a lookup that succeeds never calls it."""
        self._lookup_hints = (*self._lookup_hints, hint)

    def remove_lookup_hint(self, hint: Callable[[], str | None]) -> None:
        """Stop adding ``hint`` (no error if it was not added)."""
        self._lookup_hints = tuple(h for h in self._lookup_hints if h is not hint)

    @property
    def cache_time(self) -> Duration:
        """How much history each non-static frame keeps, as a ``Duration``."""
        return Duration.from_nanoseconds(self._cache_time_ns)

    # -- insertion ----------------------------------------------------------------------

    # set_transform is the kernel's own function (kernel_entry; what it does not store comes
    # back through kernel.py's fallbacks): the body is the same call, through Python.
    @kernel_entry("set_transform")
    def set_transform(self, transform: TransformStamped, authority: str, is_static: bool = False) -> bool:
        """Store a TransformStamped (it maps data in ``child_frame_id`` into
        ``header.frame_id``): True when stored, False when older than the cache window
        (tf2's TF_OLD_DATA); a repeated stamp replaces the earlier sample.
        ``InvalidArgumentException`` for invalid input (nothing stored). Also any object
        of that shape (rclpy's messages)."""
        return self._kernel.set_transform(transform, authority, is_static)

    def _after_direct_insert(self, transform: Any, stored: bool) -> None:
        """After a kernel insert when the insert mode is not 0 (``Buffer`` overrides it)."""
        if stored:
            self._notify_new_data()

    def _set_transform_slow(self, transform: TransformStamped, authority: str,
                            is_static: bool = False) -> bool:
        """``set_transform`` for what the kernel does not read itself, and its refusals."""
        try:
            header = transform.header
            tr = transform.transform
            t = tr.translation
            q = tr.rotation
            parent = header.frame_id
            child = transform.child_frame_id
            stamp = header.stamp
            values = (t.x, t.y, t.z, q.x, q.y, q.z, q.w)
        except AttributeError as exc:
            raise InvalidArgumentException(
                "set_transform needs a TransformStamped, got %s (%s)"
                % (type(transform).__name__, exc)
            ) from None
        try:
            stamp_ns = stamp.nanoseconds if stamp.__class__ is Time else to_nanoseconds(stamp, "stamp")
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentException(
                "header.stamp of frame \"%s\" (parent \"%s\") is invalid: %s" % (child, parent, exc)
            ) from None
        if self._store(parent, child, stamp_ns, *values, authority, is_static):
            self._notify_new_data()
            return True
        return False

    def set_transform_static(self, transform: TransformStamped, authority: str) -> bool:
        """``set_transform(transform, authority, is_static=True)``: valid at every time;
        only the latest per child frame is kept."""
        return self.set_transform(transform, authority, True)

    def set_transform_values(
        self, parent: str, child: str, stamp_ns: int, tx: float, ty: float, tz: float,
        qx: float, qy: float, qz: float, qw: float, authority: str, is_static: bool = False,
    ) -> bool:
        """The fast single insert: same rules as ``set_transform`` without message objects.

        ``stamp_ns`` is an int in nanoseconds; ``(tx, ty, tz)`` the translation of ``child``
        in ``parent``; ``(qx, qy, qz, qw)`` its rotation.
        """
        if self._store(parent, child, stamp_ns, tx, ty, tz, qx, qy, qz, qw, authority, is_static):
            self._notify_new_data()
            return True
        return False

    def _store(self, parent: object, child: object, stamp_ns: object, tx: object, ty: object, tz: object,
               qx: object, qy: object, qz: object, qw: object, authority: object, is_static: bool) -> bool:
        """Check and store one sample (no notification): True if stored, False if too old."""
        r = self._kernel.insert(
            parent, child, stamp_ns, tx, ty, tz, qx, qy, qz, qw, authority, is_static
        )
        if r < 0:
            # Refused, or unusual types: the checks in Python name the cause (or convert).
            parent, child, values, stamp_ns = check_insert(
                parent, child, (tx, ty, tz, qx, qy, qz, qw), stamp_ns
            )
            r = self._kernel.insert(parent, child, stamp_ns, *values, authority, is_static)
            if r < 0:  # the kernel's own checks (its tolerance) refused what Python let pass
                raise InvalidArgumentException(
                    "transform of frame \"%s\" (parent \"%s\") is invalid (%d)" % (child, parent, r)
                )
        return r > 0

    @overload
    def set_transforms(self, transforms: Transforms, authority: str,
                       is_static: bool = False) -> BatchResult: ...
    @overload
    def set_transforms(self, transforms: Sequence[str] | str, children: Sequence[str] | str, stamps_ns: Any,
                       values: Any, authority: str, is_static: bool = False) -> BatchResult: ...

    def set_transforms(self, transforms: Transforms | Sequence[str] | str, *args: Any,
                       **kwargs: Any) -> BatchResult:
        """Store N transforms at once; invalid rows are skipped, the rest stored.

        ``set_transforms(transforms, authority, is_static=False)`` with a ``Transforms``, or
        the same as columns: ``set_transforms(parents, children, stamps_ns, values, authority,
        is_static=False)``, ``values`` an ``(N, 7)`` array of rows ``[tx, ty, tz, qx, qy, qz,
        qw]`` (each maps data in its child frame into its parent), ``stamps_ns`` N int
        nanoseconds, ``parents`` / ``children`` N frame ids or one for every row (a
        trajectory of one frame). Returns ``BatchResult(stored, old, invalid)``.
        """
        result = store_batch(self, transforms, *args, **kwargs)
        if result.stored:
            self._notify_new_data()
        return result

    def _notify_new_data(self) -> None:
        """Called once at the end of every insert call that stored something; ``Buffer``
        overrides it to wake waiters."""

    def clear(self) -> None:
        """Forget all non-static data; frames stay known and static transforms stay."""
        self._kernel.clear()

    def drop_static(self, frames: Iterable[str]) -> int:
        """Forget the static transforms whose child frame is one of ``frames`` (dynamic data
        and other frames are untouched; the names stay known); returns how many were dropped.
        ``tf2py fleet`` calls it for the statics of a robot that has gone for good."""
        return int(self._kernel.drop_static([f for f in frames if isinstance(f, str)]))

    def forget_frames(self, frames: Iterable[str]) -> int:
        """Forget ``frames`` whole: their transforms, static or dynamic, and their names, so
        that a lookup naming one fails as for a frame never heard (LookupException) and
        ``get_frames`` no longer lists it; a frame named again later starts afresh. (tf2
        never forgets a name; ``tf2py fleet`` forgets a robot gone for good.) Returns how
        many were forgotten. On a ``Buffer``, requests waiting for a forgotten frame go on
        waiting (it may be heard again); the kernel's own lock makes the call atomic."""
        return int(self._kernel.forget([f for f in frames if isinstance(f, str)]))

    # -- lookups --------------------------------------------------------------------------

    # These two are the kernel's own functions (kernel_entry; what they do not answer comes
    # back through kernel.py's fallbacks): the bodies are the same calls, through Python.
    @kernel_entry("lookup_transform")
    def lookup_transform(self, target_frame: str, source_frame: str, time: TimeLike) -> TransformStamped:
        """The TransformStamped that maps data in ``source_frame`` into ``target_frame``
        at ``time`` (a Time or seconds; zero = the latest common time); ``header.stamp``
        is the time used. Raises LookupException, ConnectivityException,
        ExtrapolationException (Backward/Forward/NoData) or InvalidArgumentException
        with tf2's messages."""
        return self._kernel.lookup_transform(target_frame, source_frame, time)

    @kernel_entry("can_transform")
    def can_transform(self, target_frame: str, source_frame: str, time: TimeLike) -> bool:
        """Whether ``lookup_transform(target_frame, source_frame, time)`` would succeed."""
        return self._kernel.can_transform(target_frame, source_frame, time)

    def _lookup_transform_fallback(
        self, target_frame: str, source_frame: str, time: TimeLike, timeout: Any, result: object,
    ) -> TransformStamped:
        """What the kernel's lookup_transform did not answer (a BufferCore never waits)."""
        return self._lookup_transform_other(target_frame, source_frame, time, result)

    def _can_transform_fallback(self, target_frame: str, source_frame: str, time: TimeLike,
                                timeout: Any) -> bool:
        """What the kernel's can_transform did not answer: arguments Python converts."""
        return self._can_transform_slow(target_frame, source_frame, time)

    def _lookup_transform_other(self, target_frame: str, source_frame: str, time: TimeLike,
                                result: object) -> TransformStamped:
        """What the kernel's lookup handed back: an error record to word, or None for
        arguments Python converts."""
        if result is None:
            return self._lookup_transform_slow(target_frame, source_frame, time)
        raise query_error(self._tree, result, (target_frame, source_frame))

    def _lookup_transform_slow(self, target_frame: str, source_frame: str,
                               time: TimeLike) -> TransformStamped:
        """``lookup_transform`` for arguments the kernel does not take as they are: frame
        ids that are not str, times of other types or beyond 64-bit nanoseconds."""
        t = _time_ns(time)
        if target_frame == source_frame:
            if t == 0 and isinstance(target_frame, str) and self._kernel.exists(target_frame):
                t = self._kernel.common_time(target_frame, target_frame)
            return stamped(target_frame, source_frame, (*_IDENTITY, t), time)
        for name, argument in ((target_frame, "target_frame"), (source_frame, "source_frame")):
            if not isinstance(name, str):
                raise frame_error(name, argument)
        try:
            r = self._kernel.lookup(target_frame, source_frame, _clamp(t))
        except KernelError as exc:
            raise query_error(
                self._tree, exc.args, (target_frame, source_frame), requested=None if t == _clamp(t) else t
            ) from None
        return stamped(target_frame, source_frame, r if t == _clamp(t) else (*r[:7], t), time)

    def _can_transform_slow(self, target_frame: str, source_frame: str, time: TimeLike) -> bool:
        """``can_transform`` for arguments the kernel does not take as they are."""
        t = _time_ns(time)
        if target_frame == source_frame:
            return True
        if not isinstance(target_frame, str) or not isinstance(source_frame, str):
            return False
        return self._kernel.can(target_frame, source_frame, _clamp(t))

    def lookup_transform_full(
        self, target_frame: str, target_time: TimeLike, source_frame: str, source_time: TimeLike,
        fixed_frame: str,
    ) -> TransformStamped:
        """Time travel: data in ``source_frame`` at ``source_time`` mapped into
        ``target_frame`` at ``target_time``, assuming ``fixed_frame`` does not move.

        = T(target <- fixed at target_time) ∘ T(fixed <- source at source_time); the stamp
        is the target side's time.
        """
        return stamped(
            target_frame,
            source_frame,
            self._lookup_full_values(target_frame, target_time, source_frame, source_time, fixed_frame),
            target_time,
        )

    def _lookup_full_values(self, target_frame: str, target_time: TimeLike, source_frame: str,
                            source_time: TimeLike, fixed_frame: str) -> tuple[float, ...]:
        tt = _time_ns(target_time)
        st = _time_ns(source_time)
        frames = (target_frame, source_frame, fixed_frame)
        for name, argument in zip(frames, ("target_frame", "source_frame", "fixed_frame")):
            if not isinstance(name, str):
                raise frame_error(name, argument)
        try:
            r = self._kernel.lookup_full(target_frame, _clamp(tt), source_frame, _clamp(st), fixed_frame)
        except KernelError as exc:
            error = exc.args
            # Which half failed is in the error's frames: the target half names target_frame.
            requested = tt if error[6] == target_frame and tt != _clamp(tt) else (
                st if st != _clamp(st) else None
            )
            raise query_error(self._tree, error, frames, requested=requested) from None
        if r[7] != _clamp(tt) or tt == _clamp(tt):
            return r
        return (*r[:7], tt)

    def can_transform_full(
        self, target_frame: str, target_time: TimeLike, source_frame: str, source_time: TimeLike,
        fixed_frame: str,
    ) -> bool:
        """Whether ``lookup_transform_full(...)`` would succeed."""
        return self._can_transform_full_core(
            target_frame, target_time, source_frame, source_time, fixed_frame
        )[0]

    def _can_transform_core(self, target_frame: str, source_frame: str, time: TimeLike) -> tuple[bool, str]:
        """``(True, "")`` or ``(False, tf2's error message)``; never raises for missing
        data (like tf2_py's ``can_transform_core``)."""
        if target_frame == source_frame:
            return True, ""
        _time_ns(time)  # an invalid time raises, as in tf2_py
        for name, argument in ((target_frame, "target_frame"), (source_frame, "source_frame")):
            message = can_frame_message(name, argument, self._kernel.exists)
            if message is not None:
                return False, message
        error = self._transform_error(target_frame, source_frame, time)
        return (True, "") if error is None else (False, str(error))

    def _can_transform_full_core(self, target_frame: str, target_time: TimeLike, source_frame: str,
                                 source_time: TimeLike, fixed_frame: str) -> tuple[bool, str]:
        """``(True, "")`` or ``(False, message)`` for the full form."""
        _time_ns(target_time)
        _time_ns(source_time)
        for name, argument in (
            (target_frame, "target_frame"),
            (source_frame, "source_frame"),
            (fixed_frame, "fixed_frame"),
        ):
            message = can_frame_message(name, argument, self._kernel.exists)
            if message is not None:
                return False, message
        error = self._transform_full_error(
            target_frame, target_time, source_frame, source_time, fixed_frame
        )
        return (True, "") if error is None else (False, str(error))

    def _transform_error(self, target_frame: str, source_frame: str,
                         time: TimeLike) -> TransformException | None:
        """The exception ``lookup_transform`` would raise now, or None if it would succeed
        (for ``Buffer``: an ``InvalidArgumentException`` cannot be cured by waiting)."""
        try:
            self.lookup_transform(target_frame, source_frame, time)
        except TransformException as exc:
            return exc
        return None

    def _transform_full_error(self, target_frame: str, target_time: TimeLike, source_frame: str,
                              source_time: TimeLike, fixed_frame: str) -> TransformException | None:
        """The exception ``lookup_transform_full`` would raise now, or None."""
        try:
            self._lookup_full_values(target_frame, target_time, source_frame, source_time, fixed_frame)
        except TransformException as exc:
            return exc
        return None

    def get_latest_common_time(self, target_frame: str, source_frame: str) -> Time:
        """What time zero resolves to for this pair: the latest time at which every dynamic
        link between the two frames is known (``Time()`` when all are static)."""
        for name in (target_frame, source_frame):
            if not isinstance(name, str) or not self._kernel.exists(name):
                error = unusable_frame(name, None, "get_latest_common_time", self._kernel.exists)
                if error is not None:  # (None only if the frame appeared meanwhile)
                    raise error
        try:
            t = self._kernel.common_time(target_frame, source_frame)
        except KernelError as exc:
            raise query_error(self._tree, exc.args, (target_frame, source_frame)) from None
        return Time.from_nanoseconds(t)

    # -- the frame tree (FrameTree, the store's member) -------------------------------------

    def get_parent(self, frame: str, time: TimeLike) -> str | None:
        """The parent of ``frame`` at ``time`` or None (``FrameTree.get_parent``)."""
        return self._tree.get_parent(frame, time)

    def chain(
        self, target_frame: str, target_time: TimeLike, source_frame: str, source_time: TimeLike,
        fixed_frame: str,
    ) -> list[str]:
        """The frame ids a full lookup passes through, source first (``FrameTree.chain``)."""
        return self._tree.chain(target_frame, target_time, source_frame, source_time, fixed_frame)

    def samples(self, frame: str) -> list[tuple[Any, ...]]:
        """Every stored sample of ``frame``, oldest first (``FrameTree.samples``)."""
        return self._tree.samples(frame)

    def get_frames(self) -> list[str]:
        """Every known frame id, sorted."""
        return self._tree.get_frames()

    def all_frames_as_string(self) -> str:
        """tf2's allFramesAsString: ``Frame <child> exists with parent <parent>.`` per frame."""
        return self._tree.all_frames_as_string()

    def all_frames_as_yaml(self) -> str:
        """tf2's allFramesAsYAML (``[]`` when no frame was ever registered)."""
        return self._tree.all_frames_as_yaml()

    def frames_info(self) -> dict[str, dict[str, Any]]:
        """Per child frame with data: its parent, rate, stamps... (``FrameTree.frames_info``)."""
        return self._tree.frames_info()

    # -- batch lookups --------------------------------------------------------------------

    # batch.py's and velocity_arguments.py's functions are these methods (the store is their
    # first argument).
    lookup_transforms = _lookup_transforms
    lookup_velocity = _lookup_velocity
    lookup_velocities = _lookup_velocities
