"""The fleet's ingest: samples of every robot into one Buffer, in batches.

Zenoh's receiving threads only find the robot of a sample (from its key expression, cached)
and queue its bytes on that robot's bounded queue (queues.py). One ingest thread takes a round
of the robots' samples (robots in turn, at most ``CHUNK_BYTES``), and hands it to the kernel
in two calls, one dynamic and one static (``insert_cdr``): the kernel decodes the CDR, names
each frame id with the robot's namespace through the robot's ``FrameIds`` and stores the rows,
the GIL released for all of it. A sample naming a frame id its robot has not brought before
comes back unstored: the ingest admits the new ids within the robot's bounds
(``RobotSlots.name``) and inserts it again.

Answers first (answers.py): a round is small (``CHUNK_BYTES`` of CDR, ~1 600 transforms, well
under a millisecond of kernel work), so a lookup never waits for more than one round's insert
(the kernel's write lock and the Buffer's lock are held for one call only), and between two
rounds the ingest lets the answers already started pass before it goes on.

Bad input never stops it: undecodable samples, samples of another type on the /tf keys, keys
that name no robot, invalid rows, and rows of a robot over its frame bound are dropped and
counted by cause (``stats()``), and logged once per cause.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ...buffer._kernel_ext import CDR_UNKNOWN_FRAMES
from ...buffer.batch import FrameIds, insert_cdr
from ...buffer.errors import check_insert
from ...transport.ros2.cdr import CdrError, cdr_error, decode_tf
from ...transport.wire_common import MAX_FRAME_ID_LENGTH
from ...transport.zenoh.wire import MAX_NAMESPACE_LENGTH
from .answers import AnswerGate
from .names import TF_TYPE, robot_of_data_key
from .queues import RobotQueues
from .slots import MAX_FRAMES_PER_ROBOT, MAX_ROBOTS, RobotSlots

__all__ = ["Ingest", "AUTHORITY", "CHUNK_BYTES", "CHUNK_SAMPLES", "MAX_FRAMES_PER_ROBOT",
           "MAX_ROBOTS"]

_log = logging.getLogger("tf2py.fleet")

#: The authority the fleet's inserts carry (ROS 2's TransformListener cannot tell either).
AUTHORITY = "tf2py fleet"
_MAX_BAD_KEYS = 10_000  # key expressions remembered as naming no robot we hold
_MAX_KEY_LENGTH = 1024  # longer keys cannot name a robot (namespaces are bounded)
#: Bytes of CDR per round, i.e. per kernel insert: what an answer may have to wait for. 32
#: samples of 50 transforms (~1 600 rows): lookups p99 1.5-2.3 ms at 1 000 robots flat out,
#: against 3 ms for 64 samples and 7 ms for 128, the ingest as fast (python -m bench fleet_answers).
CHUNK_BYTES = 32 * 4800
#: Samples per round at most (small samples: fewer kernel calls per transform).
CHUNK_SAMPLES = 1024
#: Seconds the ingest, woken by a sample, waits for the rest of its burst before a round: a
#: wake-up per burst of robots, not per sample (the newest-stamp lag grows by this much).
LINGER_S = 0.002


def _load_malloc_trim() -> Callable[[int], object] | None:
    """glibc's ``malloc_trim`` (None elsewhere)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        trim: object = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None
    if not callable(trim):
        return None
    return lambda pad: trim(pad)


_malloc_trim: list[Callable[[int], object] | None] = []


def _give_back_memory() -> None:
    """Hand the heap that forgotten robots freed back to the system: glibc keeps freed
    memory of the threads' arenas otherwise, and the fleet's RSS would creep up with churn
    (half of it, measured: bench/bench_fleet_attacks.py)."""
    if not _malloc_trim:
        _malloc_trim.append(_load_malloc_trim())
    trim = _malloc_trim[0]
    if trim is not None:
        trim(0)


class Ingest:
    """Samples in (``on_sample`` from any thread), batches into ``buffer`` on its own thread.

    ``accept(robot)`` filters robots (``--robots``); ``slots`` holds the robots (slots.py);
    ``stale_after``: seconds without a token or a sample after which ``forget`` takes a robot
    away; ``keep``: frame ids never dropped (the ``--world`` children); ``on_forgotten(robot,
    statics, names)`` is told, from the ingest thread, what went with each forgotten robot;
    ``gate``: the answers it lets pass between rounds; ``chunk_bytes``: CDR bytes per round.
    """

    def __init__(self, buffer: Any, accept: Callable[[str], bool], slots: RobotSlots,
                 stale_after: float, keep: set[str],
                 on_forgotten: Callable[[str, int, int], None],
                 queues: RobotQueues | None = None, gate: AnswerGate | None = None,
                 chunk_bytes: int = CHUNK_BYTES):
        self.buffer = buffer
        self.accept = accept
        self.slots = slots
        self.stale_after = stale_after
        self.keep = keep
        self.on_forgotten = on_forgotten
        self.queues = queues if queues is not None else RobotQueues()
        self.gate = gate if gate is not None else AnswerGate()
        self.chunk_bytes = max(1, int(chunk_bytes))
        self.chunk_samples = CHUNK_SAMPLES
        self.linger = LINGER_S
        self._keys: dict[str, tuple[str, str]] = {}  # key -> (robot, topic) of held robots
        self._bad_keys: dict[str, str] = {}  # key -> drop cause
        self._frame_ids: dict[str, FrameIds] = {}  # robot -> its admitted frame ids
        self._counts_lock = threading.Lock()
        self._forgets: list[str] = []
        self.dropped: dict[str, int] = {}
        self.received = 0
        self.transforms = 0
        self.batches = 0
        self.forgotten = 0
        self.worst_lag_ns = 0  # the worst newest-stamp lag since stats last took it
        self._logged: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tf2py-fleet-ingest", daemon=True)
        self._thread.start()

    # -- Zenoh's threads ------------------------------------------------------------------

    def on_sample(self, key: str, payload: bytes) -> None:
        """A /tf or /tf_static sample (any type) arrived on ``key``."""
        self.received += 1  # under the GIL; an approximate count is enough for stats
        found = self._keys.get(key)
        if found is None:
            cause = self._bad_keys.get(key)
            if cause is None:
                parsed = self._classify(key)
                if isinstance(parsed, str):
                    if len(self._bad_keys) >= _MAX_BAD_KEYS:
                        self._bad_keys.clear()
                    if len(key) <= _MAX_KEY_LENGTH:
                        self._bad_keys[key] = parsed
                    cause = parsed
                else:
                    found = parsed
            if cause is not None:
                self._drop(cause, f"a sample on {key[:200]!r}")
                return
            assert found is not None
        robot, topic = found
        slot = self.slots.slots.get(robot)
        if slot is None:
            admitted = self.slots.admit(robot, None, time.monotonic())
            if isinstance(admitted, str):
                self._drop(admitted, f"a sample of robot /{robot[:200]}")
                return
            slot = admitted
        if found is not self._keys.get(key):
            self._keys[key] = found
            slot.keys.append(key)
        refused = self.queues.put(robot, topic, payload)
        if refused is not None:
            self._drop(refused, f"a sample of robot /{robot}: its queue, or all queues "
                       "together, are full (the fleet reads slower than robots send)")

    def _classify(self, key: str) -> tuple[str, str] | str:
        if len(key) > _MAX_KEY_LENGTH:
            return "namespace_too_long"
        parsed = robot_of_data_key(key)
        if parsed is None:
            return "bad_key"
        robot, topic, type_name = parsed
        if type_name != TF_TYPE:
            return "wrong_type"
        if len(robot) > MAX_NAMESPACE_LENGTH:
            return "namespace_too_long"
        if not self.accept(robot):
            return "filtered"
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
            if self._forgets:
                self._forget_now()
            batch = self.queues.take(0.2, self.chunk_samples, self.chunk_bytes,
                                     self.linger)
            if batch:
                try:
                    self._insert(batch)
                except Exception:  # never let one bad round stop the fleet
                    _log.exception("tf2py fleet: a round of %d samples failed", len(batch))
                self.gate.let_answers_pass()

    def _insert(self, batch: list[tuple[str, str, bytes]]) -> None:
        rounds: dict[bool, _Round] = {False: _Round(), True: _Round()}
        held = self.slots.slots
        now = time.monotonic()
        for robot, topic, payload in batch:
            slot = held.get(robot)
            if slot is None:  # forgotten since it was queued
                continue
            slot.last_heard = now
            ids = self._frame_ids.get(robot)
            if ids is None:
                ids = self._frame_ids[robot] = FrameIds(f"{robot}/" if robot else "")
            rounds[topic == "tf_static"].add(robot, payload, ids)
        newest: dict[str, int] = {}  # robot -> the stamp of its newest dynamic sample
        for is_static, samples in rounds.items():
            if samples.payloads:
                retry = self._insert_round(samples, is_static, newest, _Round())
                if retry is not None and retry.payloads:  # their new frame ids admitted
                    self._insert_round(retry, is_static, newest, None)
        if newest:  # how far behind the clock the robot furthest behind is, at insert
            lag = time.time_ns() - min(newest.values())
            if lag > self.worst_lag_ns:
                self.worst_lag_ns = lag

    def _insert_round(self, samples: _Round, is_static: bool, newest: dict[str, int],
                      retry: _Round | None) -> _Round | None:
        """One insert_cdr call; the samples that named new frame ids, admitted, in ``retry``."""
        result = insert_cdr(self.buffer, samples.payloads, samples.ids, AUTHORITY, is_static,
                            MAX_FRAME_ID_LENGTH)
        self.batches += 1
        invalid = 0
        first_invalid: tuple[int, int, int] | None = None  # (sample, row, InsertResult)
        for k, record in enumerate(result.samples.tolist()):
            status, count, where, _stored, _old, bad, bad_row, bad_code, first_stamp = record
            robot, payload = samples.robots[k], samples.payloads[k]
            if status == 0:
                self.transforms += count
                if bad:
                    invalid += bad
                    first_invalid = first_invalid or (k, bad_row, bad_code)
                if is_static:
                    slot = self.slots.slots.get(robot)
                    if slot is not None:
                        slot.statics.update(decode_tf(payload, prefix=samples.ids[k].prefix).children)
                elif count:
                    newest[robot] = max(newest.get(robot, first_stamp), first_stamp)
            elif status == CDR_UNKNOWN_FRAMES and retry is not None:
                if self._admit(robot, payload, samples.ids[k]):
                    retry.add(robot, payload, samples.ids[k])
            else:
                topic = "tf_static" if is_static else "tf"
                error = cdr_error(status, where, count, payload, MAX_FRAME_ID_LENGTH) \
                    if status != CDR_UNKNOWN_FRAMES else CdrError("frame ids not admitted")
                self._drop(error.cause, f"a sample of robot /{robot} on {topic}: {error}",
                           count if error.cause == "frame_id_too_long" else 1)
        if invalid:
            self._drop("invalid", self._invalid_message(invalid, samples, first_invalid),
                       invalid)
        return retry

    def _admit(self, robot: str, payload: bytes, ids: FrameIds) -> bool:
        """Admit the new frame ids of a robot's sample within its bounds (``RobotSlots.name``);
        False (the sample dropped, counted) when they are not all admitted."""
        slot = self.slots.slots.get(robot)
        if slot is None:
            return False
        rows = decode_tf(payload)  # (decoded once already)
        frames = list(dict.fromkeys(rows.parents + rows.children))  # each frame id once
        named = self.slots.name(slot, frames)
        if isinstance(named, str):
            self._drop(named, f"{len(rows.parents)} transforms of robot /{robot}: "
                       f"{named.replace('_', ' ')}", len(rows.parents))
            return False
        ids.admit(frames)
        return True

    def _invalid_message(self, invalid: int, samples: _Round,
                         first: tuple[int, int, int] | None) -> str:
        if first is None or "invalid" in self._logged:
            return f"{invalid} invalid transforms"  # (only the first drop of a cause is logged)
        k, row, _code = first
        rows = decode_tf(samples.payloads[k], prefix=samples.ids[k].prefix)
        parents, children, stamps, values = rows.parents, rows.children, rows.stamps_ns, rows.values
        try:
            check_insert(parents[row], children[row], values[row].tolist(), int(stamps[row]))
            error = "invalid"
        except Exception as exc:  # the check that refused it, worded
            error = str(exc)
        return f"{invalid} invalid transforms, the first {children[row]!r}: {error}"

    # -- forgetting -----------------------------------------------------------------------

    def forget(self, robot: str) -> None:
        """Ask the ingest thread to forget ``robot`` if it is still gone (no token, nothing
        heard for ``stale_after``) when it gets there: its slot, names, keys, queue,
        decoders, and its frames in the Buffer, statics and dynamic data alike."""
        with self._counts_lock:
            self._forgets.append(robot)

    def _forget_now(self) -> None:
        with self._counts_lock:
            robots, self._forgets = self._forgets, []
        before = time.monotonic() - self.stale_after
        count = self.forgotten
        for robot in robots:
            slot = self.slots.forget(robot, before)
            if slot is None:
                continue  # back meanwhile, or already forgotten
            for key in slot.keys:
                self._keys.pop(key, None)
            self.queues.forget(robot)
            self._frame_ids.pop(robot, None)
            names = sorted(set(slot.names.values()) - self.keep)
            try:
                statics = self._drop_frames(names, sorted(slot.statics - self.keep))
            except Exception:  # a Buffer that refuses: the robot is forgotten here anyway
                _log.exception("tf2py fleet: dropping the frames of robot /%s failed", robot)
                statics = 0
            self.forgotten += 1
            self.on_forgotten(robot, statics, len(names))
        if self.forgotten != count:
            _give_back_memory()

    def _drop_frames(self, names: list[str], statics: list[str]) -> int:
        """Take ``names`` out of the Buffer whole (``forget_frames``: their statics, their
        dynamic data and the names themselves, so a lookup finds no such frame, as for a
        robot never heard). Returns how many statics of the robot's own were dropped."""
        dropped = int(self.buffer.drop_static(statics)) if statics else 0
        if names:
            self.buffer.forget_frames(names)
        return dropped

    def stats(self) -> dict[str, Any]:
        with self._counts_lock:
            dropped = dict(self.dropped)
        return {"received": self.received, "transforms": self.transforms,
                "batches": self.batches, "pending": self.queues.pending(),
                "answers_first": self.gate.stats(),
                "dropped": sum(dropped.values()), "dropped_by_cause": dropped,
                "robot_queue_drops": dict(self.queues.dropped),
                "robots_forgotten": self.forgotten}

    def close(self) -> None:
        self._stop.set()
        self.queues.close()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)


class _Round:
    """Samples of a round for one insert_cdr call: their robots, bytes and FrameIds."""

    __slots__ = ("robots", "payloads", "ids")

    def __init__(self) -> None:
        self.robots: list[str] = []
        self.payloads: list[bytes] = []
        self.ids: list[FrameIds] = []

    def add(self, robot: str, payload: bytes, ids: FrameIds) -> None:
        self.robots.append(robot)
        self.payloads.append(payload)
        self.ids.append(ids)
