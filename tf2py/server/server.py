"""BufferServer: answers lookup goals from many remote clients on one Buffer.

Three parts, each in its own module:

- the *link* (``link.py``; ``zmq_link.py`` for ``tcp://``): sockets only, bytes in and out,
  and "this client's connection is gone" in order after its last message;
- the *goals* (``goals.py``): who waits for which lookup and until when, the limits, the
  answers. A goal that can be answered now is answered at once; one that has to wait joins
  the buffer's own index of waiting requests (``Buffer.wait_for_transform_async``), which is
  re-checked by the insertion that can answer it and resolves the group's future;
- the *loop* (here): one thread that waits on the link and runs, in batches, the messages
  read, the groups the buffer answered, and the goals whose timeout ran out, so waiting goals
  never hold back the answers to others.

Bounds a user never needs to tune (``MAX_WAITING_GOALS_PER_CLIENT``, ``MAX_WAITING_GOALS``,
``MAX_GOAL_TIMEOUT``): a goal over them is refused with INVALID_ARGUMENT naming the limit. A
client whose connection closes (its process ended or was killed) loses its waiting goals as
soon as the link says so, including goals that were still queued behind the close. A goal
whose timeout runs out is answered with the error the lookup raises at that moment.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Any

from ..transport.address import server_address
from ..transport.zmq.keys import load_keys
from .goals import Goals
from .limits import BATCH, MAX_GOAL_TIMEOUT, MAX_WAITING_GOALS, MAX_WAITING_GOALS_PER_CLIENT
from .link import ServerLink, open_server_link

__all__ = ["BufferServer", "MAX_WAITING_GOALS_PER_CLIENT", "MAX_WAITING_GOALS",
           "MAX_GOAL_TIMEOUT"]

_log = logging.getLogger("tf2py.server")
# The longest single wait (s): far deadlines are reached in several waits.
_MAX_WAIT_S = 3600.0


class BufferServer:
    """Answers lookup goals from BufferClients on ``buffer``, each goal with its own timeout.

    ``address`` is where to listen (``tcp://HOST:PORT``; port 0 picks a free port; None means
    ``$TF2PY_SERVER``, else ``tcp://127.0.0.1:7402``; the scheme picks the link, see
    ``link.py``). ``.address`` is the address clients connect to. ``close()`` stops the loop
    thread and closes every socket; also a context manager. A server dropped without
    ``close()`` is closed when it is collected (its thread holds only the inner state, never
    the server object). ``divert`` (a ``goals.Diverter``): the goals it takes are not
    answered here the usual way (fleet processes sharing an address, ``fleet/split.py``).
    """

    def __init__(self, buffer: Any, address: str | None = None, keys: Any = None,
                 divert: Any = None) -> None:
        self._state = _ServerLoop(buffer, address, keys)
        self._state.goals.divert = divert  # the fleet's split between processes (goals.py)
        self.address: str = self._state.address
        self._finalizer = weakref.finalize(self, _ServerLoop.close, self._state)
        self._finalizer.atexit = False

    @property
    def pending_count(self) -> int:
        """How many goals are waiting for data right now."""
        return len(self._state.goals.pending)

    def stats(self) -> dict[str, Any]:
        """Counters since start: goals, answered (at once / on insert / at timeout), waited,
        cancelled, duplicates, invalid_answered (INVALID_ARGUMENT for an unreadable goal),
        refused (goals over a limit), disconnected (waiting goals dropped because their
        client's connection closed), connections_closed (client connections seen to close),
        rechecks (groups the buffer answered), dropped (messages
        without a usable goal id), dropped_by_cause ({cause: count}: "undecodable",
        "oversized", "no goal id", "framing"), pending."""
        return self._state.stats()

    def close(self) -> None:
        """Stop answering: waiting goals are dropped (their clients time out), the loop thread
        ends, every socket is closed."""
        self._finalizer()

    def __enter__(self) -> BufferServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BufferServer(address={self.address!r})"


class _ServerLoop:
    """The loop thread, its link and its goals; the public BufferServer only points at it."""

    def __init__(self, buffer: Any, address: str | None, keys: Any = None) -> None:
        self.closed = False
        self._close_lock = threading.Lock()
        self.logged_causes: set[str] = set()
        self.dropped_by_cause: dict[str, int] = {}
        self.goals = Goals(buffer, self._send, self._wake, self._drop, self._once)
        self.link: ServerLink = open_server_link(
            server_address(address), load_keys(keys), self._drop)
        self.address = self.link.address
        try:
            self.thread = threading.Thread(
                target=self._run, name=f"tf2py-server {self.address}", daemon=True)
            self.thread.start()
        except BaseException:
            self.closed = True
            self.link.close()
            raise

    def _send(self, peer: Any, payload: bytes) -> bool:
        return self.link.send(peer, payload)

    def _wake(self) -> None:
        if not self.closed:
            self.link.wake()

    def _drop(self, cause: str, what: str) -> None:
        self.goals.counts["dropped"] += 1
        self.dropped_by_cause[cause] = self.dropped_by_cause.get(cause, 0) + 1
        if cause not in self.logged_causes:
            self.logged_causes.add(cause)
            _log.warning("tf2py server: dropped %s (logged once per cause)", what)

    def _once(self, cause: str, message: str) -> None:
        if cause not in self.logged_causes:
            self.logged_causes.add(cause)
            _log.warning("%s (logged once)", message)

    def stats(self) -> dict[str, Any]:
        counts = self.goals.stats()
        counts["dropped_by_cause"] = dict(self.dropped_by_cause)
        return counts

    def close(self) -> None:
        with self._close_lock:
            if self.closed:
                return
            self.closed = True
        self.link.wake()
        if self.thread is not threading.current_thread():
            self.thread.join()
        # else: the loop thread closes its link when it returns

    def _run(self) -> None:
        link, goals = self.link, self.goals
        try:
            while not self.closed:
                if goals.ready:
                    timeout: float | None = 0.0  # work left over from the last turn
                else:
                    deadline = goals.next_deadline_ns()
                    timeout = None if deadline is None else min(
                        _MAX_WAIT_S, max(0.0, (deadline - time.monotonic_ns()) / 1e9))
                link.wait(timeout)
                if self.closed:
                    break
                for peer, payload in link.receive(BATCH):
                    if payload is None:
                        goals.peer_gone(peer)
                        continue
                    try:
                        goals.handle(peer, payload)
                    except Exception as exc:  # never let one message stop the server
                        self._drop(f"error {type(exc).__name__}", f"a message that raised {exc!r}")
                if goals.ready:
                    goals.answer_ready()
                deadline = goals.next_deadline_ns()
                if deadline is not None and deadline <= time.monotonic_ns():
                    goals.expire()
        except Exception:  # pragma: no cover - a bug; keep the process alive, say why
            _log.exception("tf2py server loop stopped")
        finally:
            self.closed = True
            goals.clear()
            link.close()
