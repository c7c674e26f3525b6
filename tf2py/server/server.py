"""BufferServer: answers lookup goals from many remote clients on one Buffer.

One loop thread owns the ROUTER socket. A goal that can be answered now is answered at once.
A goal that has to wait is handed to the Buffer as a transformable request
(``wait_for_transform_async`` / ``wait_for_transform_full_async``): the insertion that makes it
possible resolves the request's future on the inserting thread, which queues the goal and
wakes the loop through an inproc PUSH/PULL pair (ZeroMQ sockets are not thread-safe, so only
the loop thread touches the ROUTER). Timeouts are a heap of deadlines; the loop's poll timeout
is the time to the next one. A goal whose timeout runs out is answered with the error the
lookup raises at that moment (tf2's real reason), never with an empty result. A finished or
cancelled goal leaves nothing behind.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
import time
from collections import deque

import zmq

from ..buffer.buffer import _waited_message  # the same wording as a local Buffer's wait
from ..buffer.exceptions import InvalidArgumentException, TransformException
from ..buffer.time import Time
from ..transport.address import check_server_address, server_address
from ..transport.keys import load_keys, warn_if_exposed
from . import protocol
from .protocol import CANCEL, GOAL, ProtocolError

__all__ = ["BufferServer"]

_log = logging.getLogger("tf2py.server")

# ZeroMQ refuses (and disconnects) peers sending frames larger than this; goals over
# protocol.MAX_GOAL_BYTES but under this are read, dropped and counted.
_MAX_FRAME_BYTES = 1024 * 1024
# Messages handled per socket per loop turn, so a flood on one socket cannot starve the
# answers of waiting goals or the deadlines.
_BATCH = 256
# The longest single poll (ms): far deadlines are reached in several polls.
_MAX_POLL_MS = 3_600_000

_instance_ids = itertools.count()


class _Pending:
    """A goal that waits for data: who asked, what, until when (monotonic ns)."""

    __slots__ = ("identity", "goal", "future", "deadline_ns", "seq", "wait_started_ns")

    def __init__(self, identity, goal, deadline_ns, seq, wait_started_ns):
        self.identity = identity
        self.goal = goal
        self.future = None
        self.deadline_ns = deadline_ns
        self.seq = seq
        self.wait_started_ns = wait_started_ns


class BufferServer:
    """Answers lookup goals from BufferClients on ``buffer``, each goal with its own timeout.

    ``address`` is where to listen (``tcp://HOST:PORT``; port 0 picks a free port; None means
    ``$TF2PY_SERVER``, else ``tcp://127.0.0.1:7402``). ``.address`` is the address clients
    connect to. ``close()`` stops the loop thread and closes every socket; also a context
    manager.
    """

    def __init__(self, buffer, address: str | None = None, keys=None):
        self._buffer = buffer
        self._pending: dict = {}
        self._deadlines: list = []  # heap of (deadline_ns, seq, key); stale entries skipped
        self._seq = itertools.count()
        self._ready: deque = deque()
        self._wake_lock = threading.Lock()
        self._closed = False
        self._logged_causes: set = set()
        self._dropped_by_cause: dict = {}
        self._counts = {
            "goals": 0,
            "answered": 0,
            "answered_at_once": 0,
            "answered_on_insert": 0,
            "answered_at_timeout": 0,
            "waited": 0,
            "cancelled": 0,
            "duplicates": 0,
            "invalid_answered": 0,
            "dropped": 0,
        }
        requested = check_server_address(server_address(address))  # ValueError: say so now
        self._keys = load_keys(keys)  # keys folder, else $TF2PY_KEYS, else plain
        self._keyed = False
        self._context = zmq.Context()
        self._router = None
        self._wake_pull = None
        self._wake_push = None
        self._thread = None
        try:
            self._router = self._context.socket(zmq.ROUTER)
            self._router.setsockopt(zmq.LINGER, 0)
            # A client keeps its routing id across reconnects; the new connection wins.
            self._router.setsockopt(zmq.ROUTER_HANDOVER, 1)
            self._router.setsockopt(zmq.MAXMSGSIZE, _MAX_FRAME_BYTES)
            self._router.setsockopt(zmq.SNDHWM, 100_000)
            self._router.setsockopt(zmq.RCVHWM, 100_000)
            if self._keys is not None:
                self._keys.apply_server(self._router, "tf2py server")
                self._keyed = True
            if requested.startswith("tcp://"):
                warn_if_exposed(requested[6:].rsplit(":", 1)[0], self._keys, "tf2py server")
            try:
                self._router.bind(requested)
            except zmq.ZMQError as exc:
                if exc.errno != zmq.EINVAL:
                    raise  # e.g. the address is in use
                raise ValueError(
                    f"invalid buffer server address {requested!r}: {exc.strerror} "
                    "(expected e.g. tcp://127.0.0.1:7402)"
                ) from None
            self.address = self._router.getsockopt(zmq.LAST_ENDPOINT).decode()
            wake = f"inproc://tf2py-server-wake-{next(_instance_ids)}"
            self._wake_pull = self._context.socket(zmq.PULL)
            self._wake_pull.setsockopt(zmq.LINGER, 0)
            self._wake_pull.bind(wake)
            self._wake_push = self._context.socket(zmq.PUSH)
            self._wake_push.setsockopt(zmq.LINGER, 0)
            self._wake_push.setsockopt(zmq.SNDHWM, 16)
            self._wake_push.connect(wake)
            self._thread = threading.Thread(
                target=self._run, name=f"tf2py-server {self.address}", daemon=True
            )
            self._thread.start()
        except BaseException:
            self._closed = True
            for sock in (self._router, self._wake_pull, self._wake_push):
                if sock is not None:
                    sock.close(linger=0)
            self._release_keys()
            self._context.term()
            raise

    # --- public ----------------------------------------------------------------------------

    @property
    def pending_count(self) -> int:
        """How many goals are waiting for data right now."""
        return len(self._pending)

    def stats(self) -> dict:
        """Counters since start: goals, answered (at once / on insert / at timeout), waited,
        cancelled, duplicates, invalid_answered (INVALID_ARGUMENT for an unreadable goal),
        dropped (messages without a usable goal id), dropped_by_cause ({cause: count}: "undecodable",
        "oversized", "no goal id", "framing"), pending."""
        counts = dict(self._counts)
        counts["pending"] = len(self._pending)
        counts["dropped_by_cause"] = dict(self._dropped_by_cause)
        return counts

    def close(self) -> None:
        """Stop answering: waiting goals are dropped (their clients time out), the loop thread
        ends, every socket is closed."""
        with self._wake_lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._wake_push.send(b"", zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
        if self._thread is not threading.current_thread():
            self._thread.join()
        self._wake_push.close(linger=0)
        self._release_keys()
        self._context.term()

    def _release_keys(self) -> None:
        if self._keyed:
            self._keyed = False
            self._keys.release_server(self._context)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if not self._closed:
                self.close()
        except Exception:
            pass

    def __repr__(self):
        return f"BufferServer(address={getattr(self, 'address', None)!r})"

    # --- the loop thread -------------------------------------------------------------------

    def _run(self) -> None:
        router = self._router
        wake = self._wake_pull
        poller = zmq.Poller()
        poller.register(router, zmq.POLLIN)
        poller.register(wake, zmq.POLLIN)
        try:
            while not self._closed:
                if self._ready:
                    timeout = 0  # answers left over from the last turn
                elif self._deadlines:
                    wait_ms = (self._deadlines[0][0] - time.monotonic_ns()) / 1e6
                    timeout = min(max(0, math.ceil(wait_ms)), _MAX_POLL_MS)
                else:
                    timeout = None
                events = poller.poll(timeout)
                if self._closed:
                    break
                for sock, _ in events:
                    if sock is wake:
                        self._drain_wake()
                    else:
                        self._drain_router()
                if self._ready:
                    self._answer_ready()
                if self._deadlines and self._deadlines[0][0] <= time.monotonic_ns():
                    self._expire()
        except Exception:  # pragma: no cover - a bug; keep the process alive, say why
            _log.exception("tf2py server loop stopped")
        finally:
            for pending in self._pending.values():
                if pending.future is not None:
                    pending.future.cancel()
            self._pending.clear()
            self._deadlines.clear()
            router.close(linger=0)
            wake.close(linger=0)

    def _drain_wake(self) -> None:
        wake = self._wake_pull
        try:
            for _ in range(_BATCH):
                wake.recv(zmq.NOBLOCK)
        except zmq.Again:
            pass

    def _drain_router(self) -> None:
        router = self._router
        for _ in range(_BATCH):
            try:
                frames = router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) != 2:
                self._drop("framing", f"a message of {len(frames) - 1} frames (expected 1)")
                continue
            identity, data = frames
            try:
                self._handle(identity, data)
            except Exception as exc:  # never let one message stop the server
                self._drop(f"error {type(exc).__name__}", f"a message that raised {exc!r}")

    def _drop(self, cause: str, what: str) -> None:
        self._counts["dropped"] += 1
        self._dropped_by_cause[cause] = self._dropped_by_cause.get(cause, 0) + 1
        if cause not in self._logged_causes:
            self._logged_causes.add(cause)
            _log.warning("tf2py server: dropped %s (logged once per cause)", what)

    def _send(self, identity: bytes, payload: bytes) -> None:
        self._router.send_multipart((identity, payload))

    def _handle(self, identity: bytes, data: bytes) -> None:
        try:
            kind, goal_id, goal = protocol.parse_client_message(data)
        except ProtocolError as exc:
            if exc.goal_id is None:
                self._drop(exc.cause, f"an unreadable message ({exc})")
            else:
                self._counts["invalid_answered"] += 1
                if "invalid" not in self._logged_causes:
                    self._logged_causes.add("invalid")
                    _log.warning("tf2py server: answered a malformed goal: %s (logged once)", exc)
                self._send(identity, protocol.pack_invalid_result(exc.goal_id, str(exc)))
            return
        if kind == GOAL:
            self._handle_goal(identity, goal)
        elif kind == CANCEL:
            self._handle_cancel(identity, goal_id)

    def _lookup(self, goal):
        """The lookup the goal asks for, on the buffer, now (raises tf2's exceptions)."""
        if goal.advanced:
            return self._buffer.lookup_transform_full(
                goal.target_frame,
                Time.from_nanoseconds(goal.target_time_ns),
                goal.source_frame,
                Time.from_nanoseconds(goal.source_time_ns),
                goal.fixed_frame,
            )
        return self._buffer.lookup_transform(
            goal.target_frame, goal.source_frame, Time.from_nanoseconds(goal.source_time_ns)
        )

    def _handle_goal(self, identity: bytes, goal) -> None:
        self._counts["goals"] += 1
        key = (identity, goal.goal_id)
        waiting = self._pending.get(key)
        if waiting is not None:
            # The same goal again: a client re-sending after reconnecting, with the time it
            # has left. It already waits; keep the earlier of the two deadlines.
            self._counts["duplicates"] += 1
            deadline_ns = time.monotonic_ns() + max(0, goal.timeout_ns)
            if deadline_ns < waiting.deadline_ns:
                waiting.deadline_ns = deadline_ns
                waiting.seq = next(self._seq)
                heapq.heappush(self._deadlines, (deadline_ns, waiting.seq, key))
            self._send(identity, protocol.pack_accepted(goal.goal_id))
            return
        try:
            transform = self._lookup(goal)
        except InvalidArgumentException as exc:
            # No data can cure this one: answer at once, as a local Buffer raises at once.
            self._answer_error(identity, goal.goal_id, exc, "answered_at_once")
            return
        except TransformException as exc:
            if goal.timeout_ns <= 0:
                self._answer_error(identity, goal.goal_id, exc, "answered_at_once")
                return
        except Exception as exc:
            self._answer_error(identity, goal.goal_id, exc, "answered_at_once")
            return
        else:
            self._counts["answered"] += 1
            self._counts["answered_at_once"] += 1
            self._send(identity, protocol.pack_result(goal.goal_id, transform))
            return
        self._wait(identity, key, goal)

    def _wait(self, identity: bytes, key, goal) -> None:
        now = time.monotonic_ns()
        seq = next(self._seq)
        pending = _Pending(identity, goal, now + goal.timeout_ns, seq, now)
        try:
            if goal.advanced:
                future = self._buffer.wait_for_transform_full_async(
                    goal.target_frame,
                    Time.from_nanoseconds(goal.target_time_ns),
                    goal.source_frame,
                    Time.from_nanoseconds(goal.source_time_ns),
                    goal.fixed_frame,
                )
            else:
                future = self._buffer.wait_for_transform_async(
                    goal.target_frame,
                    goal.source_frame,
                    Time.from_nanoseconds(goal.source_time_ns),
                )
        except Exception as exc:
            self._answer_error(identity, goal.goal_id, exc, "answered_at_once")
            return
        if future.done():
            # Decided at once after all: an error no data can cure (a time older than the
            # cache window), or data that arrived since the first try.
            self._answer_future(identity, goal.goal_id, future, "answered_at_once")
            return
        pending.future = future
        self._pending[key] = pending
        heapq.heappush(self._deadlines, (pending.deadline_ns, seq, key))
        self._counts["waited"] += 1
        self._send(identity, protocol.pack_accepted(goal.goal_id))
        # Registered last: if the future is already done the callback runs here, and the
        # goal is answered on the next loop turn.
        future.add_done_callback(lambda f, p=pending: self._on_ready(p, f))

    def _on_ready(self, pending, future) -> None:
        """On the inserting thread: queue the goal for the loop and wake it."""
        if future.cancelled():
            return
        self._ready.append(pending)
        with self._wake_lock:
            if self._closed:
                return
            try:
                self._wake_push.send(b"", zmq.NOBLOCK)
            except zmq.Again:
                pass  # wake-ups already queued: the loop will see this one too

    def _answer_ready(self) -> None:
        ready = self._ready
        pending_goals = self._pending
        # At most a batch per turn, so new goals are read between batches of answers.
        for _ in range(min(len(ready), _BATCH)):
            pending = ready.popleft()
            key = (pending.identity, pending.goal.goal_id)
            if pending_goals.get(key) is not pending:
                continue  # cancelled or timed out meanwhile
            del pending_goals[key]
            self._answer_future(
                pending.identity, pending.goal.goal_id, pending.future, "answered_on_insert"
            )
        self._compact_deadlines()

    def _answer_future(self, identity, goal_id, future, how: str) -> None:
        exc = future.exception()
        if exc is None:
            self._counts["answered"] += 1
            self._counts[how] += 1
            self._send(identity, protocol.pack_result(goal_id, future.result()))
        else:
            self._answer_error(identity, goal_id, exc, how)

    def _expire(self) -> None:
        now = time.monotonic_ns()
        deadlines = self._deadlines
        pending_goals = self._pending
        # At most a batch of lookups per turn (many goals may share a deadline); the rest
        # are due at once on the next turn, after the sockets are read.
        budget = _BATCH
        while deadlines and deadlines[0][0] <= now and budget:
            _, seq, key = heapq.heappop(deadlines)
            pending = pending_goals.get(key)
            if pending is None or pending.seq != seq:
                continue
            del pending_goals[key]
            budget -= 1
            pending.future.cancel()
            # tf2 answers a goal whose time ran out with the reason the lookup fails now.
            try:
                transform = self._lookup(pending.goal)
            except Exception as exc:
                exc = _with_wait(exc, now - pending.wait_started_ns, pending.goal.timeout_ns)
                self._answer_error(
                    pending.identity, pending.goal.goal_id, exc, "answered_at_timeout"
                )
            else:
                self._counts["answered"] += 1
                self._counts["answered_at_timeout"] += 1
                self._send(pending.identity, protocol.pack_result(pending.goal.goal_id, transform))

    def _compact_deadlines(self) -> None:
        # Cancelled and answered goals leave their deadline in the heap until it pops; rebuild
        # it when those outnumber the live ones, so memory stays bounded by what waits.
        if len(self._deadlines) > 2 * len(self._pending) + 1024:
            self._deadlines = [
                (p.deadline_ns, p.seq, key) for key, p in self._pending.items()
            ]
            heapq.heapify(self._deadlines)

    def _answer_error(self, identity, goal_id, exc, how: str) -> None:
        self._counts["answered"] += 1
        self._counts[how] += 1
        self._send(identity, protocol.pack_error_result(goal_id, exc))

    def _handle_cancel(self, identity: bytes, goal_id: int) -> None:
        pending = self._pending.pop((identity, goal_id), None)
        if pending is not None:
            pending.future.cancel()
            self._counts["cancelled"] += 1
            self._compact_deadlines()
        self._send(identity, protocol.pack_cancelled(goal_id, pending is not None))


def _with_wait(exc: BaseException, waited_ns: int, timeout_ns: int) -> BaseException:
    """The lookup's exception, its message saying how long the goal waited, worded as a
    local Buffer's timed-out lookup words it."""
    if not isinstance(exc, TransformException) or isinstance(exc, InvalidArgumentException):
        return exc
    exc.args = (_waited_message(exc, waited_ns / 1e9, timeout_ns / 1e9),)
    return exc
