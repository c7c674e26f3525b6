"""The BufferClient's futures (``lookup_transform_async``): one link owned by a background I/O
thread. Calling threads register a future for a new goal id and hand the goal id to the
thread through a queue (waking its link); the thread sends it, reads the results, resolves
the futures, and fails with ``ServerTimeoutException`` those the server has not answered
within ``timeout + timeout_padding``. ``future.cancel()`` sends CANCEL.

When the connection comes back after a drop, every goal still waiting is sent again with the
time it has left (the server dropped the goals of the old connection, or is a new server).
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from functools import partial
from queue import Empty, SimpleQueue
from typing import Any

from ..buffer.exceptions import TimeoutException
from . import protocol
from .client_common import PendingGoal, ServerTimeoutException, answers_the_goal, no_answer, unreachable
from .limits import BATCH
from .link import ClientLink, open_client_link
from .protocol import RESULT, ProtocolError

__all__ = ["FutureIO"]

_GOAL, _CANCEL, _CLOSE = 0, 1, 2
_MAX_WAIT_S = 3600.0


class FutureIO:
    """The I/O thread of a client's futures, and its link to ``address``."""

    def __init__(self, address: str, keys: Any, padding_ns: int,
                 refuse_answer: Callable[[], None]) -> None:
        self.address = address
        self.padding_ns = padding_ns
        self.refuse_answer = refuse_answer
        self.goals: dict[int, PendingGoal] = {}
        self._requests: SimpleQueue[tuple[int, int]] = SimpleQueue()
        self._lock = threading.Lock()
        self.closed = False
        self.link: ClientLink = open_client_link(address, keys)
        try:
            self.thread = threading.Thread(
                target=self._run, name=f"tf2py-client {address}", daemon=True)
            self.thread.start()
        except BaseException:
            self.closed = True
            self.link.close()
            raise

    # --- calling threads -------------------------------------------------------------------

    def submit(self, goal_id: int, goal: PendingGoal) -> Future[Any]:
        future = goal.future
        self.goals[goal_id] = goal
        with self._lock:
            if self.closed:
                self.goals.pop(goal_id, None)
                raise RuntimeError("BufferClient is closed")
            self._requests.put((_GOAL, goal_id))
        self.link.wake()
        future.add_done_callback(partial(self._on_done, goal_id))
        return future

    def _on_done(self, goal_id: int, future: Future[Any]) -> None:
        if not future.cancelled():
            return
        # Cancelled by the caller: forget it here and tell the server to forget it too.
        if self.goals.pop(goal_id, None) is None:
            return
        with self._lock:
            if self.closed:
                return
            self._requests.put((_CANCEL, goal_id))
        self.link.wake()

    def close(self) -> None:
        """Cancel the goals still waiting (on the server too), end the thread, close the link.
        From a future's done callback (on the thread itself) the thread ends after it."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self._requests.put((_CLOSE, 0))
        self.link.wake()
        if self.thread is not threading.current_thread():
            self.thread.join()

    # --- the I/O thread --------------------------------------------------------------------

    def _run(self) -> None:
        link = self.link
        deadlines: list[tuple[int, int]] = []  # heap of (deadline_ns, goal_id)
        running = True
        try:
            while running:
                timeout = None
                if deadlines:
                    timeout = min(_MAX_WAIT_S,
                                  max(0.0, (deadlines[0][0] - time.monotonic_ns()) / 1e9))
                link.wait(timeout)
                running = self._drain_requests(deadlines)
                self._drain_answers()
                if link.reconnected():
                    self._resend()
                if deadlines and deadlines[0][0] <= time.monotonic_ns():
                    self._expire(deadlines)
                if len(deadlines) > 2 * len(self.goals) + 1024:
                    deadlines[:] = [(g.deadline_ns, i) for i, g in list(self.goals.items())]
                    heapq.heapify(deadlines)
        finally:
            self._shutdown()

    def _drain_requests(self, deadlines: list[tuple[int, int]]) -> bool:
        requests, goals = self._requests, self.goals
        while True:
            try:
                op, goal_id = requests.get_nowait()
            except Empty:
                return True
            if op == _CLOSE:
                return False
            if op == _GOAL:
                goal = goals.get(goal_id)
                if goal is None:
                    continue  # cancelled before it left
                heapq.heappush(deadlines, (goal.deadline_ns, goal_id))
                self._send(goal.payload, goal_id)
            else:
                self._send(protocol.pack_cancel(goal_id), None)

    def _send(self, payload: bytes, goal_id: int | None) -> None:
        if not self.link.send(payload) and goal_id is not None:
            # Tens of thousands of goals queued for a server that is not there.
            self._fail(goal_id, ServerTimeoutException(unreachable(self.address)))

    def _drain_answers(self) -> None:
        goals = self.goals
        while True:
            batch = self.link.receive(BATCH)
            for data in batch:
                try:
                    kind, goal_id, rest = protocol.parse_server_message(data)
                    if kind != RESULT:
                        continue  # ACCEPTED / CANCELLED: nothing to do for the caller
                    goal = goals.get(goal_id)
                    if goal is None:
                        continue  # cancelled, timed out, or a duplicate answer after a re-send
                    transform, exc = protocol.result_outcome(rest)
                except ProtocolError:
                    continue  # not from a tf2py server we understand; nothing to resolve
                if exc is None and not answers_the_goal(transform, goal.goal):
                    self.refuse_answer()
                    continue
                goals.pop(goal_id, None)
                try:
                    if exc is None:
                        goal.future.set_result(transform)
                    else:
                        goal.future.set_exception(exc)
                except InvalidStateError:
                    pass  # cancelled by the caller meanwhile
            if len(batch) < BATCH:
                return

    def _resend(self) -> None:
        """After a reconnect: send every waiting goal again with the time it has left."""
        now = time.monotonic_ns()
        for goal_id, goal in list(self.goals.items()):
            remaining = max(0, goal.sent_ns + goal.goal.timeout_ns - now)
            self._send(protocol.pack_goal(*goal.goal._replace(timeout_ns=remaining)), goal_id)

    def _expire(self, deadlines: list[tuple[int, int]]) -> None:
        now = time.monotonic_ns()
        while deadlines and deadlines[0][0] <= now:
            deadline_ns, goal_id = heapq.heappop(deadlines)
            goal = self.goals.get(goal_id)
            if goal is None or goal.deadline_ns != deadline_ns:
                continue
            self._fail(goal_id, ServerTimeoutException(
                no_answer(self.address, now - goal.sent_ns, goal.goal.timeout_ns, self.padding_ns)))
            self._send(protocol.pack_cancel(goal_id), None)

    def _fail(self, goal_id: int, exc: BaseException) -> None:
        goal = self.goals.pop(goal_id, None)
        if goal is None:
            return
        try:
            goal.future.set_exception(exc)
        except InvalidStateError:
            pass

    def _shutdown(self) -> None:
        for goal_id in list(self.goals):
            self.link.send(protocol.pack_cancel(goal_id))
            self._fail(goal_id, TimeoutException(
                "the BufferClient was closed before the server answered"))
        # A moment for the cancels to leave, so the server forgets those goals now.
        self.link.close(linger=0.1)
