"""The goals of a BufferServer: who waits for which lookup, until when, and the answers.

No index of its own: a goal that has to wait joins a *group* (goals asking the same lookup),
and each group holds one future of the buffer's own index of waiting requests
(``Buffer.wait_for_transform_async``, ``buffer/requests.py``), which knows from the kernel's
walk which frames the lookup watches and is re-checked by the insertion that can answer it.
A resolved future puts its group on the ``ready`` queue (from the inserting thread) and
wakes the server's loop, which answers every member.

Everything here runs on the server's loop thread, except ``_on_future_done``. Answers go out
through ``send(peer, payload) -> bool`` (the link's); ``wake()`` wakes the loop.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from ..buffer.time import Time
from . import protocol
from .limits import (
    BATCH,
    MAX_GOAL_TIMEOUT,
    MAX_GOAL_TIMEOUT_NS,
    MAX_WAITING_GOALS,
    MAX_WAITING_GOALS_PER_CLIENT,
    with_wait,
)
from .protocol import CANCEL, Goal, ProtocolError

__all__ = ["Goals", "Diverter"]

_log = logging.getLogger("tf2py.server")

Key = tuple[Any, int]  # (peer, goal id)
GroupKey = tuple[Any, ...]


class Diverter(Protocol):
    """Takes the goals this server must not answer the usual way (``fleet/split.py``)."""

    def take(self, peer: Any, goal: Goal, send: Callable[[Any, bytes], bool]) -> bool:
        """True: ``goal`` is answered elsewhere, or by the diverter through ``send``."""
        ...

    def forget(self, peer: Any, goal_id: int | None) -> bool:
        """Drop a taken goal of ``peer`` (None: all of them); True if one was waiting."""
        ...


@dataclass(slots=True)
class _Pending:
    """A goal that waits for data: who asked, what, until when (monotonic ns)."""

    peer: Any
    goal: Goal
    group: _Group
    deadline_ns: int
    seq: int
    wait_started_ns: int


class _Group:
    """The waiting goals that ask the same lookup, and the buffer's future for it."""

    __slots__ = ("key", "goal", "members", "future")

    def __init__(self, key: GroupKey, goal: Goal, future: Future[Any]) -> None:
        self.key = key
        self.goal = goal  # a representative goal (the lookup's arguments)
        self.members: dict[Key, _Pending] = {}
        self.future = future


def _group_key(goal: Goal) -> GroupKey:
    if goal.advanced:
        return (True, goal.target_frame, goal.source_frame, goal.target_time_ns,
                goal.source_time_ns, goal.fixed_frame)
    return (False, goal.target_frame, goal.source_frame, goal.source_time_ns)


def _on_future_done(goals_ref: weakref.ref[Goals], group: _Group) -> Callable[[Future[Any]], None]:
    """A future's done-callback: queue its group for answering and wake the loop. Runs on
    the thread that resolved it (an inserting thread); holds the goals weakly."""

    def on_done(future: Future[Any]) -> None:
        goals = goals_ref()
        if goals is None or future.cancelled():
            return
        ready = goals.ready
        ready.append((group, future))
        if len(ready) == 1:  # else the loop has not emptied it yet and will see this one
            goals.wake()

    return on_done


class Goals:
    """The server's goals on ``buffer``; answers through ``send``, wakes its loop by ``wake``."""

    def __init__(self, buffer: Any, send: Callable[[Any, bytes], bool],
                 wake: Callable[[], None], drop: Callable[[str, str], None],
                 once: Callable[[str, str], None]) -> None:
        self.buffer = buffer
        self._send_link = send
        self.wake = wake
        self._drop = drop
        self._once = once
        self.pending: dict[Key, _Pending] = {}
        self.by_peer: dict[Any, set[int]] = {}  # peer -> goal ids waiting
        self.groups: dict[GroupKey, _Group] = {}
        self.deadlines: list[tuple[int, int, Key]] = []  # heap; stale entries skipped
        self.ready: deque[tuple[_Group, Future[Any]]] = deque()
        self.peak_pending = 0
        self._seq = itertools.count()
        self._self_ref: weakref.ref[Goals] = weakref.ref(self)
        # Goals answered elsewhere than here the usual way (fleet processes sharing an
        # address: fleet/split.py). None: every goal is answered here.
        self.divert: Diverter | None = None
        self.counts = {
            "goals": 0, "answered": 0, "answered_at_once": 0, "answered_on_insert": 0,
            "answered_at_timeout": 0, "waited": 0, "cancelled": 0, "duplicates": 0,
            "invalid_answered": 0, "refused": 0, "disconnected": 0, "rechecks": 0,
            "dropped": 0, "connections_closed": 0,
        }

    # --- messages ---------------------------------------------------------------------------

    def handle(self, peer: Any, data: bytes) -> None:
        """One message from ``peer``: a goal or a cancel."""
        try:
            kind, goal_id, goal = protocol.parse_client_message(data)
        except ProtocolError as exc:
            if exc.goal_id is None:
                self._drop(exc.cause, f"an unreadable message ({exc})")
            else:
                self.counts["invalid_answered"] += 1
                self._once("invalid", f"tf2py server: answered a malformed goal: {exc}")
                self._send(peer, protocol.pack_invalid_result(exc.goal_id, str(exc)))
            return
        if goal is not None:  # a GOAL
            self._handle_goal(peer, goal)
        elif kind == CANCEL:
            self._handle_cancel(peer, goal_id)

    def peer_gone(self, peer: Any) -> None:
        """``peer``'s connection closed: drop its waiting goals; nobody is left to answer."""
        self.counts["connections_closed"] += 1
        if self.divert is not None:
            self.divert.forget(peer, None)
        goal_ids = self.by_peer.get(peer)
        if not goal_ids:
            return
        for goal_id in list(goal_ids):
            if self._forget((peer, goal_id)) is not None:
                self.counts["disconnected"] += 1
        self._compact()

    # --- goals ------------------------------------------------------------------------------

    def _lookup(self, goal: Goal) -> Any:
        """The lookup the goal asks for, on the buffer, now (raises tf2's exceptions)."""
        if goal.advanced:
            return self.buffer.lookup_transform_full(
                goal.target_frame, Time.from_nanoseconds(goal.target_time_ns),
                goal.source_frame, Time.from_nanoseconds(goal.source_time_ns),
                goal.fixed_frame)
        return self.buffer.lookup_transform(
            goal.target_frame, goal.source_frame, Time.from_nanoseconds(goal.source_time_ns))

    def _wait_future(self, goal: Goal) -> Future[Any]:
        """The buffer's future for the goal's lookup (its wait index)."""
        if goal.advanced:
            future: Future[Any] = self.buffer.wait_for_transform_full_async(
                goal.target_frame, Time.from_nanoseconds(goal.target_time_ns),
                goal.source_frame, Time.from_nanoseconds(goal.source_time_ns),
                goal.fixed_frame)
        else:
            future = self.buffer.wait_for_transform_async(
                goal.target_frame, goal.source_frame, Time.from_nanoseconds(goal.source_time_ns))
        return future

    def _handle_goal(self, peer: Any, goal: Goal) -> None:
        if self.divert is not None and self.divert.take(peer, goal, self._send_link):
            return
        self.counts["goals"] += 1
        goal_id = goal.goal_id
        key = (peer, goal_id)
        waiting = self.pending.get(key)
        if waiting is not None:
            if self._over_timeout(peer, goal):
                return
            # The same goal again (a client that sets its own routing id, re-sending after a
            # reconnect with the time it has left): keep the earlier of the two deadlines.
            self.counts["duplicates"] += 1
            deadline_ns = time.monotonic_ns() + max(0, goal.timeout_ns)
            if deadline_ns < waiting.deadline_ns:
                waiting.deadline_ns = deadline_ns
                waiting.seq = next(self._seq)
                heapq.heappush(self.deadlines, (deadline_ns, waiting.seq, key))
            self._send(peer, protocol.pack_accepted(goal_id))
            return
        gkey = _group_key(goal)
        group = self.groups.get(gkey)
        if group is None:
            if goal.timeout_ns <= 0:  # no wait: the kernel's lookup, now
                try:
                    self._answer(peer, goal_id, self._lookup(goal), "answered_at_once")
                except Exception as exc:
                    self._answer_error(peer, goal_id, exc, "answered_at_once")
                return
            # The buffer's index checks it and, if it has to wait, indexes it, in one step
            # under the buffer's lock (an insertion in between cannot be missed).
            try:
                future = self._wait_future(goal)
            except Exception as exc:  # e.g. a frame id of the wrong type
                self._answer_error(peer, goal_id, exc, "answered_at_once")
                return
            if future.done():  # possible now, or no data can make it possible
                self._answer_future(peer, goal_id, future, "answered_at_once")
                return
            if self._over_limits(peer, goal):
                future.cancel()
                return
            group = self.groups[gkey] = _Group(gkey, goal, future)
            future.add_done_callback(_on_future_done(self._self_ref, group))
        elif goal.timeout_ns <= 0:
            # Waiting for others, so not possible at its last check: answer with why now.
            try:
                self._answer(peer, goal_id, self._lookup(goal), "answered_at_once")
            except Exception as exc:
                self._answer_error(peer, goal_id, exc, "answered_at_once")
            return
        elif self._over_limits(peer, goal):
            return
        now = time.monotonic_ns()
        seq = next(self._seq)
        pending = _Pending(peer, goal, group, now + goal.timeout_ns, seq, now)
        group.members[key] = pending
        self.pending[key] = pending
        if len(self.pending) > self.peak_pending:
            self.peak_pending = len(self.pending)
        ids = self.by_peer.get(peer)
        if ids is None:
            ids = self.by_peer[peer] = set()
        ids.add(goal_id)
        heapq.heappush(self.deadlines, (pending.deadline_ns, seq, key))
        self.counts["waited"] += 1
        self._send(peer, protocol.pack_accepted(goal_id))

    def _over_timeout(self, peer: Any, goal: Goal) -> bool:
        """Refuse (and say so) a goal that would wait longer than a goal may."""
        if goal.timeout_ns <= MAX_GOAL_TIMEOUT_NS:
            return False
        self._refuse(
            peer, goal.goal_id,
            f"goal refused: its timeout of {goal.timeout_ns / 1e9:g} s is over the "
            f"BufferServer's limit on a goal's timeout ({MAX_GOAL_TIMEOUT:g} s); ask again "
            "for longer waits", "timeout limit")
        return True

    def _over_limits(self, peer: Any, goal: Goal) -> bool:
        """Refuse (and say so) a goal that would wait: over a goal's timeout, or over the
        per-client or the total limit of waiting. (A goal answerable now, or never, comes
        not here: the limits bound waiting, as a local Buffer has none.)"""
        if self._over_timeout(peer, goal):
            return True
        goal_id = goal.goal_id
        if len(self.by_peer.get(peer, ())) >= MAX_WAITING_GOALS_PER_CLIENT:
            self._refuse(
                peer, goal_id,
                f"goal refused: this client already has {MAX_WAITING_GOALS_PER_CLIENT} goals "
                "waiting, the BufferServer's limit of waiting goals per client", "client limit")
            return True
        if len(self.pending) >= MAX_WAITING_GOALS:
            self._refuse(
                peer, goal_id,
                f"goal refused: the BufferServer already has {MAX_WAITING_GOALS} goals "
                "waiting, its limit of waiting goals for all clients together", "total limit")
            return True
        return False

    def _handle_cancel(self, peer: Any, goal_id: int) -> None:
        pending = self._forget((peer, goal_id))
        if pending is None and self.divert is not None and self.divert.forget(peer, goal_id):
            self.counts["cancelled"] += 1
            self._send(peer, protocol.pack_cancelled(goal_id, True))
            return
        if pending is not None:
            self.counts["cancelled"] += 1
            self._compact()
        self._send(peer, protocol.pack_cancelled(goal_id, pending is not None))

    # --- answers ----------------------------------------------------------------------------

    def _send(self, peer: Any, payload: bytes) -> None:
        if not self._send_link(peer, payload):
            self._drop("send queue full", "an answer to a client that does not read them")

    def _answer(self, peer: Any, goal_id: int, transform: Any, how: str) -> None:
        self.counts["answered"] += 1
        self.counts[how] += 1
        self._send(peer, protocol.pack_result(goal_id, transform))

    def _answer_error(self, peer: Any, goal_id: int, exc: BaseException, how: str) -> None:
        self.counts["answered"] += 1
        self.counts[how] += 1
        self._send(peer, protocol.pack_error_result(goal_id, exc))

    def _answer_future(self, peer: Any, goal_id: int, future: Future[Any], how: str) -> None:
        exc = future.exception()
        if exc is None:
            self._answer(peer, goal_id, future.result(), how)
        else:
            self._answer_error(peer, goal_id, exc, how)

    def _refuse(self, peer: Any, goal_id: int, message: str, cause: str) -> None:
        self.counts["refused"] += 1
        self.counts["answered"] += 1
        self._once(cause, f"tf2py server: refused a goal: {message}")
        self._send(peer, protocol.pack_invalid_result(goal_id, message))

    def answer_ready(self) -> None:
        """Answer (a batch of) the groups whose future the buffer resolved."""
        ready = self.ready
        for _ in range(min(len(ready), BATCH)):
            group, future = ready.popleft()
            if group.future is not future or not group.members:
                continue
            self.counts["rechecks"] += 1
            exc = future.exception()
            transform = future.result() if exc is None else None
            for key, pending in list(group.members.items()):
                self._forget(key)
                if exc is None:
                    self._answer(pending.peer, pending.goal.goal_id, transform,
                                 "answered_on_insert")
                else:
                    self._answer_error(pending.peer, pending.goal.goal_id, exc,
                                       "answered_on_insert")
        self._compact()

    def next_deadline_ns(self) -> int | None:
        return self.deadlines[0][0] if self.deadlines else None

    def expire(self) -> None:
        """Answer (a batch of) the goals whose timeout ran out, with the error the lookup
        raises now (tf2's real reason), worded with how long they waited."""
        now = time.monotonic_ns()
        deadlines = self.deadlines
        budget = BATCH  # the rest are due at once on the next turn, after the socket is read
        while deadlines and deadlines[0][0] <= now and budget:
            _, seq, key = heapq.heappop(deadlines)
            pending = self.pending.get(key)
            if pending is None or pending.seq != seq:
                continue
            self._forget(key)
            budget -= 1
            goal = pending.goal
            try:
                transform = self._lookup(goal)
            except Exception as exc:
                waited = with_wait(exc, now - pending.wait_started_ns, goal.timeout_ns)
                self._answer_error(pending.peer, goal.goal_id, waited, "answered_at_timeout")
            else:
                self._answer(pending.peer, goal.goal_id, transform, "answered_at_timeout")
        self._compact()

    # --- removing goals ---------------------------------------------------------------------

    def _forget(self, key: Key) -> _Pending | None:
        """Take one goal out of every table (its deadline entry goes stale); a group left
        without goals cancels its future, which leaves the buffer's index."""
        pending = self.pending.pop(key, None)
        if pending is None:
            return None
        peer = key[0]
        ids = self.by_peer.get(peer)
        if ids is not None:
            ids.discard(key[1])
            if not ids:
                del self.by_peer[peer]
        group = pending.group
        group.members.pop(key, None)
        if not group.members:
            if self.groups.get(group.key) is group:
                del self.groups[group.key]
            group.future.cancel()
        return pending

    def clear(self) -> None:
        """Drop every goal (the server is closing): their clients time out."""
        for group in list(self.groups.values()):
            group.future.cancel()
        self.pending.clear()
        self.by_peer.clear()
        self.groups.clear()
        self.deadlines.clear()
        self.ready.clear()

    def _compact(self) -> None:
        # Answered and cancelled goals leave their deadline entries until they pop; rebuild
        # when those outnumber the live ones, so memory stays bounded by what waits. Dicts
        # never shrink by deletion: copy them once they hold far fewer goals than at peak.
        pending = self.pending
        peak = self.peak_pending
        if len(pending) > peak:
            self.peak_pending = len(pending)
        elif peak > 1024 and len(pending) < peak // 4:
            self.pending = dict(pending)
            self.groups = dict(self.groups)
            self.by_peer = dict(self.by_peer)
            self.peak_pending = len(self.pending)
        if len(self.deadlines) > 2 * len(self.pending) + 1024:
            self.deadlines = [(p.deadline_ns, p.seq, k) for k, p in self.pending.items()]
            heapq.heapify(self.deadlines)

    def stats(self) -> dict[str, Any]:
        counts: dict[str, Any] = dict(self.counts)
        counts["pending"] = len(self.pending)
        return counts

