"""The fleet's ingest: samples of every robot into one Buffer, in batches.

Zenoh's receiving threads only find the robot of a sample (from its key expression, cached)
and queue its bytes on that robot's bounded queue (queues.py). One ingest thread takes a round
of every robot's samples, decodes their CDR (one ``TfDecoder`` per robot and topic: a robot
repeats the same frames, so after its first message only the numbers are read), prefixes the
frame ids with the robot's namespace (names cached per robot) and inserts the whole round with
two ``Buffer.set_transforms`` calls, one dynamic and one static: the kernel's batch path.

Bad input never stops it: undecodable samples, samples of another type on the /tf keys, keys
that name no robot, invalid rows, and rows of a robot over its frame bound are dropped and
counted by cause (``stats()``), and logged once per cause.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

import numpy as np

from ...transport.ros2.cdr import CdrError, TfDecoder
from .names import TF_TYPE, prefix_frame, robot_of_data_key
from .queues import RobotQueues

__all__ = ["Ingest", "AUTHORITY", "MAX_FRAMES_PER_ROBOT", "MAX_ROBOTS"]

_log = logging.getLogger("tf2py.fleet")

#: The authority the fleet's inserts carry (ROS 2's TransformListener cannot tell either).
AUTHORITY = "tf2py fleet"
#: Distinct frame ids one robot may bring into the fleet's Buffer; more are dropped, counted.
MAX_FRAMES_PER_ROBOT = 10_000
#: Robots (namespaces) the fleet keeps at once; samples of more are dropped, counted.
MAX_ROBOTS = 100_000
_MAX_KEYS = 200_000  # key expressions remembered (one per robot, topic and type)


class _RobotNames:
    """A robot's frame ids as the fleet names them (``robot7/base_link``), cached."""

    __slots__ = ("robot", "names", "full")

    def __init__(self, robot: str):
        self.robot = robot
        self.names: dict[str, str] = {}
        self.full = False

    def prefixed(self, frames: list[str]) -> list[str] | None:
        names = self.names
        try:
            return [names[f] for f in frames]
        except KeyError:
            pass
        out = []
        for f in frames:
            name = names.get(f)
            if name is None:
                if len(names) >= MAX_FRAMES_PER_ROBOT:
                    self.full = True
                    return None
                name = names[f] = prefix_frame(self.robot, f)
            out.append(name)
        return out


class Ingest:
    """Samples in (``on_sample`` from any thread), batches into ``buffer`` on its own thread.

    ``accept(robot)`` filters robots (``--robots``); ``on_statics(robot, frames)`` is told the
    prefixed child frames of each robot's statics (the tracker drops them when it goes stale).
    """

    def __init__(self, buffer: Any, accept: Callable[[str], bool],
                 on_statics: Callable[[str, set[str]], None], queues: RobotQueues | None = None):
        self.buffer = buffer
        self.accept = accept
        self.on_statics = on_statics
        self.queues = queues if queues is not None else RobotQueues()
        self._keys: dict[str, tuple[str, str] | str] = {}  # key -> (robot, topic) or drop cause
        self._robots: dict[str, _RobotNames] = {}
        self._decoders: dict[tuple[str, str], TfDecoder] = {}
        self._counts_lock = threading.Lock()
        self.dropped: dict[str, int] = {}
        self.received = 0
        self.transforms = 0
        self.batches = 0
        self._logged: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tf2py-fleet-ingest", daemon=True)
        self._thread.start()

    # -- Zenoh's threads ------------------------------------------------------------------

    def on_sample(self, key: str, payload: bytes) -> None:
        """A /tf or /tf_static sample (any type) arrived on ``key``."""
        found = self._keys.get(key)
        if found is None:
            found = self._classify(key)
            if len(self._keys) < _MAX_KEYS:
                self._keys[key] = found
        self.received += 1  # under the GIL; an approximate count is enough for stats
        if isinstance(found, str):
            self._drop(found, f"a sample on {key!r}")
            return
        robot, topic = found
        if not self.queues.put(robot, topic, payload):
            self._drop("robot_queue_full", f"robot /{robot} sends faster than the fleet reads")

    def _classify(self, key: str) -> tuple[str, str] | str:
        parsed = robot_of_data_key(key)
        if parsed is None:
            return "bad_key"
        robot, topic, type_name = parsed
        if type_name != TF_TYPE:
            return "wrong_type"
        if not self.accept(robot):
            return "filtered"
        if robot not in self._robots and len(self._robots) >= MAX_ROBOTS:
            return "too_many_robots"
        return robot, topic

    def _drop(self, cause: str, what: str, count: int = 1) -> None:
        with self._counts_lock:
            self.dropped[cause] = self.dropped.get(cause, 0) + count
            first = cause not in self._logged
            self._logged.add(cause)
        if first and cause != "filtered":
            _log.warning("tf2py fleet: dropped %s (%s); further drops of this cause are "
                         "only counted", what, cause)

    # -- the ingest thread ----------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            batch = self.queues.take(timeout=0.2)
            if batch:
                try:
                    self._insert(batch)
                except Exception:  # never let one bad round stop the fleet
                    _log.exception("tf2py fleet: a round of %d samples failed", len(batch))

    def _insert(self, batch: list[tuple[str, str, bytes]]) -> None:
        columns: dict[bool, tuple[list[str], list[str], list[Any], list[Any]]] = {
            False: ([], [], [], []), True: ([], [], [], [])}
        statics: dict[str, set[str]] = {}
        for robot, topic, payload in batch:
            decoder = self._decoders.get((robot, topic))
            if decoder is None:
                decoder = self._decoders[(robot, topic)] = TfDecoder()
            try:
                parents, children, stamps, values = decoder.decode(payload)
            except CdrError as exc:
                self._drop(exc.cause, f"a sample of robot /{robot} on {topic}: {exc}")
                continue
            names = self._robots.get(robot)
            if names is None:
                names = self._robots[robot] = _RobotNames(robot)
            prefixed_parents = names.prefixed(parents)
            prefixed_children = names.prefixed(children)
            if prefixed_parents is None or prefixed_children is None:
                self._drop("robot_frames_full", f"robot /{robot} names over "
                           f"{MAX_FRAMES_PER_ROBOT} frames", len(parents))
                continue
            is_static = topic == "tf_static"
            out = columns[is_static]
            out[0].extend(prefixed_parents)
            out[1].extend(prefixed_children)
            out[2].append(stamps)
            out[3].append(values)
            if is_static:
                statics.setdefault(robot, set()).update(prefixed_children)
        for is_static, (all_parents, all_children, stamp_blocks, value_blocks) in columns.items():
            if not all_parents:
                continue
            result = self.buffer.set_transforms(
                all_parents, all_children,
                np.concatenate(stamp_blocks) if len(stamp_blocks) > 1 else stamp_blocks[0],
                np.concatenate(value_blocks) if len(value_blocks) > 1 else value_blocks[0],
                AUTHORITY, is_static)
            self.batches += 1
            self.transforms += len(all_parents)
            if result.invalid:
                index, error = result.invalid[0]
                self._drop("invalid", f"{len(result.invalid)} invalid transforms, the first "
                           f"{all_children[index]!r}: {error}", len(result.invalid))
        for robot, frames in statics.items():
            self.on_statics(robot, frames)

    def forget(self, robot: str) -> None:
        """A stale robot: its queue and decoders go (its names stay: it may come back)."""
        self.queues.forget(robot)
        for topic in ("tf", "tf_static"):
            self._decoders.pop((robot, topic), None)

    def stats(self) -> dict[str, Any]:
        with self._counts_lock:
            dropped = dict(self.dropped)
        return {"received": self.received, "transforms": self.transforms,
                "batches": self.batches, "pending": self.queues.pending(),
                "dropped": sum(dropped.values()), "dropped_by_cause": dropped,
                "robot_queue_drops": dict(self.queues.dropped)}

    def close(self) -> None:
        self._stop.set()
        self.queues.close()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
