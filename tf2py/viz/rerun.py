"""The frame tree into Rerun (``rerun-sdk``): one entity per frame, its path following the tree.

A frame ``base_link`` whose parent is ``odom``, itself a child of ``map``, is logged at
``/tf/map/odom/base_link``; each sample is an ``rr.Transform3D`` (translation and quaternion,
Rerun's default relation ``ParentFromChild``: the child's pose in its parent, as tf2's
transforms are) on the ``ros_time`` timeline at the transform's stamp; a static transform is
logged once, as static data. A frame that changes parent (or whose ancestor does) moves: its
old entity is cleared (at that stamp, or statically for a static frame) and its latest pose is
logged at the new path, so the viewer never shows a frame twice.

Two ways in: ``log_to_rerun(buffer, recording)`` logs what a ``Buffer`` holds (every stored
sample, statics once), and ``RerunView(core, recording)`` logs the bus live (what
``tf2py rerun`` runs; a bag played on the bus arrives the same way, its stamps on the
timeline). Both follow tf2's insert rules: a leading ``/`` is stripped, quaternions are
normalized, and a transform tf2 would refuse (empty frame id, child equal to parent, NaN or
infinity, a quaternion whose squared norm is off by 0.01 or more) is left out and counted.

Needs ``pip install 'tf2py[viz]'``; without ``rerun-sdk`` a one-line ``VizDependencyError``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..transport.frame_ids import strip_leading_slash
from .errors import INSTALL_HINT, VizDependencyError

if TYPE_CHECKING:
    from ..transport.listener import TransformBatch

__all__ = ["RerunTree", "RerunView", "log_to_rerun", "require_rerun", "DEFAULT_PREFIX",
           "DEFAULT_TIMELINE"]

DEFAULT_PREFIX = "tf"
DEFAULT_TIMELINE = "ros_time"
_MAX_DEPTH = 10_000  # a parent loop (a bad publisher) must not hang the walk up the tree

Parts = tuple[str, ...]


def require_rerun() -> ModuleType:
    """Import ``rerun`` (the ``rerun-sdk`` package), or raise ``VizDependencyError``."""
    try:
        import rerun
    except ImportError:
        raise VizDependencyError(
            f"the Rerun view needs the optional library 'rerun-sdk': {INSTALL_HINT}"
        ) from None
    return rerun


class RerunTree:
    """Logs transforms into one Rerun recording, one entity per frame following the tree.

    ``recording``: an ``rr.RecordingStream`` (None: Rerun's global recording). ``prefix``: the
    entity under which the tree hangs (``tf``); ``timeline``: the timeline of the stamps
    (``ros_time``, a timestamp timeline). ``log(parents, children, stamps_ns, values,
    is_static)`` takes the transport's columns (``values`` (N, 7): tx, ty, tz, qx, qy, qz,
    qw) and returns how many it logged. Thread-safe.
    """

    def __init__(self, recording: Any = None, *, prefix: str = DEFAULT_PREFIX,
                 timeline: str = DEFAULT_TIMELINE) -> None:
        self._rr = require_rerun()
        self.recording = recording
        self.prefix = prefix
        self.timeline = timeline
        self._lock = threading.Lock()
        self._parents: dict[str, str] = {}  # child -> parent, as last heard
        self._children: dict[str, set[str]] = {}  # parent -> children
        self._logged: dict[str, Parts] = {}  # frame -> the path it was last logged at
        self._latest: dict[str, tuple[float, ...]] = {}  # frame -> latest pose logged
        self._static: set[str] = set()
        self._paths: dict[Parts, str] = {}  # escaped entity path strings
        # What one log() call sends, per entity path, in one send_columns each at its end:
        # a call costs ~85 us, a row of a batch ~1 us (rerun-sdk 0.41, measured here).
        self._samples: dict[str, tuple[list[int], list[tuple[float, ...]]]] = {}
        self._clears: dict[str, list[int]] = {}
        self.logged_transforms = 0
        self.left_out: dict[str, int] = {}  # cause -> transforms left out

    # -- paths --------------------------------------------------------------------------

    def _parts(self, frame: str) -> Parts:
        chain = [frame]
        seen = {frame}
        parent = self._parents.get(frame)
        while parent is not None and parent not in seen and len(chain) < _MAX_DEPTH:
            chain.append(parent)
            seen.add(parent)
            parent = self._parents.get(parent)
        chain.append(self.prefix)
        return tuple(reversed(chain))

    def entity_path(self, frame: str) -> str:
        """The entity path of ``frame`` in the tree as it is now (e.g. ``/tf/map/odom``)."""
        with self._lock:
            return self._path_string(self._parts(strip_leading_slash(frame)))

    def _path_string(self, parts: Parts) -> str:
        path = self._paths.get(parts)
        if path is None:
            escape = self._rr.escape_entity_path_part
            path = "/" + "/".join(escape(part) for part in parts)
            if len(self._paths) < 100_000:  # bounded: a tree that keeps moving
                self._paths[parts] = path
        return path

    def frame_count(self) -> int:
        """How many frames were logged so far."""
        return len(self._logged)

    def frames(self) -> dict[str, str]:
        """Every frame logged so far -> its entity path."""
        with self._lock:
            return {frame: self._path_string(parts) for frame, parts in self._logged.items()}

    # -- logging ------------------------------------------------------------------------

    def log(self, parents: Sequence[str], children: Sequence[str],
            stamps_ns: Sequence[int] | npt.NDArray[np.int64], values: npt.ArrayLike,
            is_static: bool) -> int:
        """Log one message's transforms (stamps in int64 nanoseconds); returns how many."""
        rows = np.asarray(values, dtype=np.float64).reshape(-1, 7)
        stamps = np.asarray(stamps_ns, dtype=np.int64).reshape(-1)
        quaternions = rows[:, 3:]
        norm2 = np.einsum("ij,ij->i", quaternions, quaternions)
        finite = np.isfinite(rows).all(axis=1)
        good = finite & (np.abs(norm2 - 1.0) < 0.01)
        rows = rows.copy()
        rows[:, 3:] /= np.sqrt(np.where(good, norm2, 1.0))[:, None]
        logged = 0
        with self._lock:
            for parent, child, ok, stamp, row in zip(
                    parents, children, good.tolist(), stamps.tolist(), rows.tolist()):
                parent, child = strip_leading_slash(parent), strip_leading_slash(child)
                if not ok:
                    self._leave_out("not finite" if not all(np.isfinite(row)) else
                                    "quaternion not unit")
                elif not parent or not child:
                    self._leave_out("empty frame id")
                elif parent == child:
                    self._leave_out("child equals parent")
                else:
                    self._log_one(parent, child, int(stamp), tuple(row), is_static)
                    logged += 1
            self.logged_transforms += logged
            self._send()
        return logged

    def _leave_out(self, cause: str) -> None:
        self.left_out[cause] = self.left_out.get(cause, 0) + 1

    def _log_one(self, parent: str, child: str, stamp: int, pose: tuple[float, ...],
                 is_static: bool) -> None:
        if self._parents.get(child) != parent:
            self._set_parent(child, parent)
            self._move_subtree(child, stamp)
        path = self._logged.get(child)
        if path is None:
            path = self._parts(child)
        if is_static:
            # Statics once: the same pose at the same path again (a latched set re-sent, a
            # bag's statics played twice) logs nothing.
            if child in self._static and self._latest.get(child) == pose \
                    and self._logged.get(child) == path:
                return
            self._static.add(child)
        else:
            self._static.discard(child)
        self._emit(path, pose, stamp, is_static)
        self._logged[child] = path
        self._latest[child] = pose

    def _set_parent(self, child: str, parent: str) -> None:
        old = self._parents.get(child)
        if old is not None:
            self._children.get(old, set()).discard(child)
        self._parents[child] = parent
        self._children.setdefault(parent, set()).add(child)

    def _move_subtree(self, frame: str, stamp: int) -> None:
        # The frame's parent changed: it and every logged descendant may have a new path.
        # Each one logged before is cleared at its old path and shown at the new one.
        todo, seen = [frame], {frame}
        while todo:
            current = todo.pop()
            for below in self._children.get(current, ()):
                if below not in seen:
                    seen.add(below)
                    todo.append(below)
            old = self._logged.get(current)
            if old is None:
                continue
            new = self._parts(current)
            if new == old:
                continue
            static = current in self._static
            self._clear(old, stamp, static)
            self._logged[current] = new
            if current != frame:  # the frame itself is logged by its own new sample
                self._emit(new, self._latest[current], stamp, static)

    def _emit(self, parts: Parts, pose: tuple[float, ...], stamp: int, static: bool) -> None:
        rr = self._rr
        path = self._path_string(parts)
        if static:
            rr.log(path, rr.Transform3D(translation=pose[:3],
                                        quaternion=rr.Quaternion(xyzw=pose[3:])),
                   static=True, recording=self.recording)
            return
        stamps, poses = self._samples.setdefault(path, ([], []))
        stamps.append(stamp)
        poses.append(pose)

    def _clear(self, parts: Parts, stamp: int, static: bool) -> None:
        rr = self._rr
        path = self._path_string(parts)
        if static:
            # Static data is replaced, not cleared: empty components overwrite the pose.
            rr.log(path, rr.Transform3D.cleared(), static=True, recording=self.recording)
        else:
            self._clears.setdefault(path, []).append(stamp)

    def _send(self) -> None:
        """Send what this call logged: per entity path, its samples (and clears) as one
        batch on the timeline. Explicit time columns: logging never touches the caller's
        per-thread time state."""
        rr = self._rr
        samples, self._samples = self._samples, {}
        clears, self._clears = self._clears, {}
        for path, stamps in clears.items():
            rr.send_columns(path, indexes=[self._time(stamps)],
                            columns=rr.Clear.columns(is_recursive=[False] * len(stamps)),
                            recording=self.recording)
        for path, (stamps, poses) in samples.items():
            array = np.array(poses, dtype=np.float64)
            rr.send_columns(path, indexes=[self._time(stamps)],
                            columns=rr.Transform3D.columns(translation=array[:, :3],
                                                           quaternion=array[:, 3:]),
                            recording=self.recording)

    def _time(self, stamps: list[int]) -> Any:
        return self._rr.TimeColumn(self.timeline,
                                   timestamp=np.array(stamps, dtype="datetime64[ns]"))

    def stats(self) -> dict[str, Any]:
        """Transforms logged, frames, and transforms left out per cause."""
        with self._lock:
            return {"logged_transforms": self.logged_transforms, "frames": len(self._logged),
                    "left_out": dict(self.left_out)}


def log_to_rerun(buffer: Any, recording: Any = None, *, prefix: str = DEFAULT_PREFIX,
                 timeline: str = DEFAULT_TIMELINE) -> int:
    """Log every transform ``buffer`` holds into Rerun; returns how many were logged.

    ``buffer``: a ``Buffer`` or ``BufferCore``. ``recording``: an ``rr.RecordingStream``
    (None: Rerun's global one, as after ``rr.init(...)``). Each frame becomes the entity
    ``/<prefix>/<root>/.../<frame>`` following the tree; static transforms are logged once as
    static data, every stored sample of the others as an ``rr.Transform3D`` at its stamp on the
    ``timeline`` (a timestamp timeline), oldest first, so a frame that changed parent moves
    in the viewer at the stamp it did. Raises ``VizDependencyError`` without ``rerun-sdk``.
    """
    tree = RerunTree(recording, prefix=prefix, timeline=timeline)
    info = buffer.frames_info()
    statics: list[tuple[str, str, int, Sequence[float]]] = []
    samples: list[tuple[int, str, str, Sequence[float]]] = []
    for child, frame in info.items():
        stored = buffer.samples(child)
        if frame.get("is_static"):
            statics.extend((parent, child, stamp, pose) for stamp, pose, parent in stored)
        else:
            samples.extend((stamp, parent, child, pose) for stamp, pose, parent in stored)
    # Each frame's first parent is known before anything is logged, so a child logged
    # before its parent's first sample is already at its path in the tree.
    for _stamp, parent, child, _ in sorted(samples, key=lambda s: s[0], reverse=True):
        tree._set_parent(child, parent)
    for parent, child, _, _ in statics:
        tree._set_parent(child, parent)
    logged = 0
    if statics:
        logged += tree.log([s[0] for s in statics], [s[1] for s in statics],
                           [s[2] for s in statics], [s[3] for s in statics], True)
    samples.sort(key=lambda s: s[0])  # stable: one frame's samples stay in their order
    if samples:
        logged += tree.log([s[1] for s in samples], [s[2] for s in samples],
                           [s[0] for s in samples], [s[3] for s in samples], False)
    return logged


class RerunView:
    """The bus at ``core`` logged live into a Rerun recording (what ``tf2py rerun`` runs).

    ``recording``: an ``rr.RecordingStream`` whose sink the caller chose (``save``,
    ``spawn``, ``connect_grpc``). ``on_new_frame(frame, entity_path)`` is called (on the bus's
    receive thread) the first time a frame is logged. ``close()`` stops listening and flushes
    the recording; a context manager. Needs ``pip install 'tf2py[viz]'``.
    """

    def __init__(self, core: Any = None, recording: Any = None, *, keys: Any = None,
                 prefix: str = DEFAULT_PREFIX, timeline: str = DEFAULT_TIMELINE,
                 on_new_frame: Any = None) -> None:
        from ..transport.address import core_address
        from ..transport.listener import TransformSubscriber

        self.tree = RerunTree(recording, prefix=prefix, timeline=timeline)
        self.recording = recording
        self.core = core_address(core)
        self._on_new_frame = on_new_frame
        self._announced: set[str] = set()
        self.received_messages = 0
        self.flush_error: str | None = None  # why close() could not flush, if it could not
        self._subscriber: Any = TransformSubscriber(core=core, on_batch=self._on_batch,
                                                    keys=keys)

    def _on_batch(self, batch: TransformBatch) -> None:
        rows = batch.transforms
        self.tree.log(rows.parents, rows.children, rows.stamps_ns, rows.values, batch.is_static)
        self.received_messages += 1
        if self._on_new_frame is not None and self.tree.frame_count() > len(self._announced):
            for frame, path in self.tree.frames().items():
                if frame not in self._announced:
                    self._announced.add(frame)
                    self._on_new_frame(frame, path)

    def stats(self) -> dict[str, Any]:
        """The tree's counters, messages received, and the bus subscriber's counters."""
        stats = self.tree.stats()
        stats["received_messages"] = self.received_messages
        stats["bus"] = self._subscriber.stats() if self._subscriber is not None else {}
        return stats

    def close(self) -> None:
        """Stop listening to the bus, then flush the recording. Idempotent. A sink that
        cannot take what is left (a viewer that went away) does not raise: ``flush_error``
        says why."""
        subscriber, self._subscriber = self._subscriber, None
        if subscriber is not None:
            subscriber.close()
            recording = self.recording
            if recording is not None:
                try:
                    recording.flush()
                except RuntimeError as exc:  # rerun-sdk: the gRPC sink never connected
                    self.flush_error = str(exc).splitlines()[0] if str(exc) else repr(exc)

    def __enter__(self) -> RerunView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
