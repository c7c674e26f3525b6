"""BufferServer: answers lookup goals from many remote clients on one Buffer.

One loop thread owns the ROUTER socket. A goal that can be answered now is answered at once.
A goal that has to wait joins a *group* (goals asking the same lookup share one re-check) and
the group is indexed by what could change its answer, found from the error its lookup raised:

- a frame that does not exist yet: the group waits for that frame id to be inserted;
- frames that are not connected: the group watches the parents of the frames on both chains
  (up to their roots) and is re-checked only when one of those parents changes;
- data not there yet for time T (forward extrapolation): the group sits in the heap, keyed by
  T, of one frame on its path whose newest stamp is older than T; it is re-checked only when
  that frame's newest stamp reaches T (then, if another frame still lags, it moves there);
- time 0 held back by an old frame (the latest common time is the oldest of the path's
  newest stamps): re-checked when a frame holding it back gets new data, not on the others';
- anything else (data older than the oldest kept): re-checked when a frame on its path gets
  new data.

Every group also watches the parents on its chains: a new path can change any answer.

The Buffer tells the server which frames each insertion named (``Buffer.add_insert_listener``);
the inserting thread only adds the names to a set and wakes the loop when the set was empty,
so a burst of insertions is one wake-up and one pass over the index, and each group is
re-checked at most once per pass. Re-checks, answers and deadlines run in batches between
reads of the socket, so waiting goals never hold back the answers to others.

Bounds a user never needs to tune (``MAX_WAITING_GOALS_PER_CLIENT``, ``MAX_WAITING_GOALS``,
``MAX_GOAL_TIMEOUT``): a goal over them is refused with INVALID_ARGUMENT naming the limit. A
client whose connection closes (its process ended or was killed) loses its waiting goals at
once. Timeouts are a heap of deadlines; a goal whose timeout runs out is answered with the
error the lookup raises at that moment (tf2's real reason).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import threading
import time
import weakref
from collections import deque

import zmq
from zmq.utils.monitor import parse_monitor_message

from ..buffer.exceptions import (
    BackwardExtrapolationException,
    ConnectivityException,
    ExtrapolationException,
    InvalidArgumentException,
    LookupException,
    TransformException,
)
from ..buffer.time import Time, format_seconds
from ..transport._sockets import context
from ..transport.address import check_server_address, server_address
from ..transport.keys import load_keys, warn_if_exposed
from . import protocol
from .protocol import CANCEL, GOAL, ProtocolError

__all__ = ["BufferServer", "MAX_WAITING_GOALS_PER_CLIENT", "MAX_WAITING_GOALS",
           "MAX_GOAL_TIMEOUT"]

_log = logging.getLogger("tf2py.server")

#: Goals one client (one connection) may have waiting at once. A program rarely has more than
#: a few dozen; a client over this is looping without waiting for its answers.
MAX_WAITING_GOALS_PER_CLIENT = 10_000
#: Goals all clients together may have waiting (about 1 KB each: ~100 MB at the limit).
MAX_WAITING_GOALS = 100_000
#: The longest timeout a goal may ask for, in seconds (tf2 users wait seconds; ask again for
#: longer).
MAX_GOAL_TIMEOUT = 3600.0
_MAX_GOAL_TIMEOUT_NS = int(MAX_GOAL_TIMEOUT * 1e9)

# ZeroMQ refuses (and disconnects) peers sending frames larger than this; goals over
# protocol.MAX_GOAL_BYTES but under this are read, dropped and counted.
_MAX_FRAME_BYTES = 1024 * 1024
# Messages handled per socket per loop turn, and groups re-checked per turn, so a flood on
# one side cannot starve the other.
_BATCH = 256
# The longest single poll (ms): far deadlines are reached in several polls.
_MAX_POLL_MS = 3_600_000
# Dead peers on other hosts (no FIN/RST): ZeroMQ heartbeats find them.
_HEARTBEAT_IVL_MS = 2_000
_HEARTBEAT_TIMEOUT_MS = 10_000
_MAX_GRAPH_DEPTH = 1000
_TIME_ZERO = Time()

_instance_ids = itertools.count()
_serials = itertools.count()


def _waited_message(exc: BaseException, elapsed: float, timeout: float) -> str:
    """tf2's message with the wait appended, as tf2_ros's C++ Buffer appends it."""
    base = str(exc).rstrip()
    if base.endswith("."):
        base = base[:-1]
    return f"{base}. canTransform returned after {elapsed:g} timeout was {timeout:g}."


class _Pending:
    """A goal that waits for data: who asked, what, until when (monotonic ns)."""

    __slots__ = ("identity", "goal", "group", "deadline_ns", "seq", "wait_started_ns")

    def __init__(self, identity, goal, group, deadline_ns, seq, wait_started_ns):
        self.identity = identity
        self.goal = goal
        self.group = group
        self.deadline_ns = deadline_ns
        self.seq = seq
        self.wait_started_ns = wait_started_ns


class _Group:
    """The waiting goals that ask the same lookup, and where the group is indexed."""

    __slots__ = ("key", "goal", "members", "serial", "version", "sets", "future", "queued")

    def __init__(self, key, goal):
        self.key = key
        self.goal = goal  # a representative goal (the lookup's arguments)
        self.members: dict = {}  # (identity, goal_id) -> _Pending
        self.serial = next(_serials)
        self.version = 0  # bumped at every (re)index: heap entries of older versions are stale
        self.sets: list = []  # the index sets this group is in (removed from exactly)
        self.future = None  # fallback for buffers without insert listeners
        self.queued = False  # in the re-check queue


def _group_key(goal):
    if goal.advanced:
        return (True, goal.target_frame, goal.source_frame, goal.target_time_ns,
                goal.source_time_ns, goal.fixed_frame)
    return (False, goal.target_frame, goal.source_frame, goal.source_time_ns)


class BufferServer:
    """Answers lookup goals from BufferClients on ``buffer``, each goal with its own timeout.

    ``address`` is where to listen (``tcp://HOST:PORT``; port 0 picks a free port; None means
    ``$TF2PY_SERVER``, else ``tcp://127.0.0.1:7402``). ``.address`` is the address clients
    connect to. ``close()`` stops the loop thread and closes every socket; also a context
    manager. A server dropped without ``close()`` is closed when it is collected (its thread
    holds only the inner state, never the server object).
    """

    def __init__(self, buffer, address: str | None = None, keys=None):
        address = server_address(address)
        link = None
        if address.startswith("zenoh://"):
            # Zenoh clients reach the same loop through a bridge on an inproc ROUTER.
            from .zenoh_link import ZenohServerLink

            self._state = _ServerState(
                buffer, f"inproc://tf2py-server-zenoh-{id(self):x}-{next(_instance_ids)}")
            try:
                link = ZenohServerLink(address, self._state.address)
            except BaseException:
                self._state.close()
                raise
            self.address = address
        else:
            self._state = _ServerState(buffer, address, keys)
            self.address = self._state.address
        self._link = link
        self._finalizer = weakref.finalize(self, _close_server, self._state, link)
        self._finalizer.atexit = False

    @property
    def pending_count(self) -> int:
        """How many goals are waiting for data right now."""
        return len(self._state.pending)

    def stats(self) -> dict:
        """Counters since start: goals, answered (at once / on insert / at timeout), waited,
        cancelled, duplicates, invalid_answered (INVALID_ARGUMENT for an unreadable goal),
        refused (goals over a limit), disconnected (waiting goals dropped because their
        client's connection closed), rechecks (group re-checks run), dropped (messages without
        a usable goal id), dropped_by_cause ({cause: count}: "undecodable", "oversized",
        "no goal id", "framing"), pending."""
        return self._state.stats()

    def close(self) -> None:
        """Stop answering: waiting goals are dropped (their clients time out), the loop thread
        ends, every socket is closed."""
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"BufferServer(address={self.address!r})"


def _close_server(state, link) -> None:
    if link is not None:
        link.close()
    state.close()


class _ServerState:
    """Everything the loop thread uses; the public BufferServer only points at it."""

    def __init__(self, buffer, address, keys=None):
        self.buffer = buffer
        self.pending: dict = {}  # (identity, goal_id) -> _Pending
        self.groups: dict = {}  # group key -> _Group
        self.per_client: dict = {}  # identity -> number of waiting goals
        self.peer_fd: dict = {}  # identity -> fd of its connection (clients with waiting goals)
        self.fd_peers: dict = {}  # fd -> set of identities
        self.deadlines: list = []  # heap of (deadline_ns, seq, key); stale entries skipped
        self.seq = itertools.count()
        # The index (see the module doc): frame id -> set of groups / {parent: set} / heap.
        self.on_create: dict = {}
        self.on_parent: dict = {}
        self.on_touch: dict = {}
        self.on_stamp: dict = {}  # frame -> heap of (needed_ns, serial, version, group)
        self.heap_entries = 0
        self.peak_pending = 0  # most goals waiting since the tables were last rebuilt
        self.recheck_queue: deque = deque()
        self.ready: deque = deque()  # fallback: groups whose future is done
        self.touch_lock = threading.Lock()
        self.touched_parents: set = set()
        self.touched_children: set = set()
        self.touched_all = False
        # True while the loop reads goals: a goal looked up then may miss an insertion that
        # lands between its lookup and its indexing, so insertions are noted while it is set.
        self.handling = False
        self.known_frames = None  # the buffer's frame ids, cached for one batch
        self.closed = False
        self.logged_causes: set = set()
        self.dropped_by_cause: dict = {}
        self.counts = {
            "goals": 0, "answered": 0, "answered_at_once": 0, "answered_on_insert": 0,
            "answered_at_timeout": 0, "waited": 0, "cancelled": 0, "duplicates": 0,
            "invalid_answered": 0, "refused": 0, "disconnected": 0, "rechecks": 0,
            "dropped": 0,
        }
        self.listening = hasattr(buffer, "add_insert_listener")
        requested = check_server_address(server_address(address))  # ValueError: say so now
        self.keys = load_keys(keys)  # keys folder, else $TF2PY_KEYS, else plain
        self.keyed = False
        self.context = context()
        self.router = self.wake_pull = self.wake_push = self.monitor = None
        self.thread = None
        try:
            self.router = self.context.socket(zmq.ROUTER)
            self.router.setsockopt(zmq.LINGER, 0)
            # A client keeps its routing id across reconnects; the new connection wins.
            self.router.setsockopt(zmq.ROUTER_HANDOVER, 1)
            self.router.setsockopt(zmq.MAXMSGSIZE, _MAX_FRAME_BYTES)
            self.router.setsockopt(zmq.SNDHWM, 100_000)
            self.router.setsockopt(zmq.RCVHWM, 100_000)
            self.router.setsockopt(zmq.HEARTBEAT_IVL, _HEARTBEAT_IVL_MS)
            self.router.setsockopt(zmq.HEARTBEAT_TIMEOUT, _HEARTBEAT_TIMEOUT_MS)
            self.monitor = self.router.get_monitor_socket(
                zmq.EVENT_DISCONNECTED | zmq.EVENT_CLOSED)
            if self.keys is not None:
                self.keys.apply_server(self.router, "tf2py server")
                self.keyed = True
            if requested.startswith("tcp://"):
                warn_if_exposed(requested[6:].rsplit(":", 1)[0], self.keys, "tf2py server")
            try:
                self.router.bind(requested)
            except zmq.ZMQError as exc:
                if exc.errno != zmq.EINVAL:
                    raise  # e.g. the address is in use
                raise ValueError(
                    f"invalid buffer server address {requested!r}: {exc.strerror} "
                    "(expected e.g. tcp://127.0.0.1:7402)"
                ) from None
            self.address = self.router.getsockopt(zmq.LAST_ENDPOINT).decode()
            wake = f"inproc://tf2py-server-wake-{id(self):x}-{next(_instance_ids)}"
            self.wake_pull = self.context.socket(zmq.PULL)
            self.wake_pull.setsockopt(zmq.LINGER, 0)
            self.wake_pull.bind(wake)
            self.wake_push = self.context.socket(zmq.PUSH)
            self.wake_push.setsockopt(zmq.LINGER, 0)
            self.wake_push.setsockopt(zmq.SNDHWM, 16)
            self.wake_push.connect(wake)
            if self.listening:
                self.listener = self._on_insert
                buffer.add_insert_listener(self.listener)
            self.thread = threading.Thread(
                target=self._run, name=f"tf2py-server {self.address}", daemon=True
            )
            self.thread.start()
        except BaseException:
            self.closed = True
            if self.listening and getattr(self, "listener", None) is not None:
                buffer.remove_insert_listener(self.listener)
            if self.router is not None and self.monitor is not None:
                try:
                    self.router.disable_monitor()
                except zmq.ZMQError:
                    pass
            for sock in (self.monitor, self.router, self.wake_pull, self.wake_push):
                if sock is not None:
                    sock.close(linger=0)
            self._release_keys()
            raise

    def _release_keys(self) -> None:
        """Give back the keys' authenticator (once, after the router is closed)."""
        if self.keyed:
            self.keyed = False
            self.keys.release_server(self.context)

    # --- public ----------------------------------------------------------------------------

    def stats(self) -> dict:
        counts = dict(self.counts)
        counts["pending"] = len(self.pending)
        counts["dropped_by_cause"] = dict(self.dropped_by_cause)
        return counts

    def close(self) -> None:
        with self.touch_lock:
            if self.closed:
                return
            self.closed = True
            try:
                self.wake_push.send(b"", zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
        if self.listening:
            self.buffer.remove_insert_listener(self.listener)
        if self.thread is not threading.current_thread():
            self.thread.join()
            self.wake_push.close(linger=0)
        # else: the loop thread closes its own sockets when it returns

    # --- the inserting threads -------------------------------------------------------------

    def _on_insert(self, parents, children) -> None:
        """Called by the Buffer after each insertion: note the frames, wake the loop once per
        burst (only when nothing was noted since the loop last looked)."""
        if not (self.pending or self.handling):
            # Nothing waits and no goal is being read: any goal read from now on is looked up
            # after this insertion and sees it. No wake-up for a server with nothing waiting.
            return
        with self.touch_lock:
            if self.closed:
                return
            first = not (self.touched_children or self.touched_parents or self.touched_all)
            if children is None:
                self.touched_all = True
            else:
                self.touched_parents.update(parents)
                self.touched_children.update(children)
            if first:
                try:
                    self.wake_push.send(b"", zmq.NOBLOCK)
                except zmq.Again:
                    pass  # wake-ups already queued

    # --- the loop thread -------------------------------------------------------------------

    def _run(self) -> None:
        router = self.router
        wake = self.wake_pull
        monitor = self.monitor
        poller = zmq.Poller()
        poller.register(router, zmq.POLLIN)
        poller.register(wake, zmq.POLLIN)
        poller.register(monitor, zmq.POLLIN)
        try:
            while not self.closed:
                if self.ready or self.recheck_queue:
                    timeout = 0  # work left over from the last turn
                elif self.deadlines:
                    wait_ms = (self.deadlines[0][0] - time.monotonic_ns()) / 1e6
                    timeout = min(max(0, math.ceil(wait_ms)), _MAX_POLL_MS)
                else:
                    timeout = None
                events = dict(poller.poll(timeout))
                if self.closed:
                    break
                # Disconnections first, so a goal from a new connection that got the fd of
                # a closed one is never taken for the closed one's.
                if monitor in events:
                    self._drain_monitor()
                if wake in events:
                    self._drain_wake()
                if router in events:
                    self.handling = True
                    try:
                        self._drain_router()
                    finally:
                        self.handling = False
                        self.known_frames = None
                self._take_touched()
                if self.recheck_queue:
                    try:
                        self._recheck_some()
                    finally:
                        self.known_frames = None
                if self.ready:
                    self._answer_ready()
                if self.deadlines and self.deadlines[0][0] <= time.monotonic_ns():
                    self._expire()
        except Exception:  # pragma: no cover - a bug; keep the process alive, say why
            _log.exception("tf2py server loop stopped")
        finally:
            for group in self.groups.values():
                if group.future is not None:
                    group.future.cancel()
            self.pending.clear()
            self.groups.clear()
            self.deadlines.clear()
            self.on_create.clear()
            self.on_parent.clear()
            self.on_touch.clear()
            self.on_stamp.clear()
            self._unbind()
            try:
                router.disable_monitor()
            except zmq.ZMQError:
                pass
            # Under the lock that every wake-up sender holds: a sender still inside its
            # send() on the inproc pipe (close() sets `closed` and sends in one locked step)
            # finishes before the receiving end goes away.
            with self.touch_lock:
                monitor.close(linger=0)
                router.close(linger=0)
                wake.close(linger=0)
            self._release_keys()
            if self.thread is threading.current_thread() and self.closed:
                try:
                    self.wake_push.close(linger=0)
                except Exception:
                    pass

    def _unbind(self) -> None:
        """Stop listening and wait (up to 2 s) until the port is really released: the context
        is shared, so no term() waits for it, and a server restarted on the same port right
        after close() must be able to bind it."""
        try:
            self.router.unbind(self.address)
        except zmq.ZMQError:
            return
        if self.address.startswith("inproc://"):
            return  # no port to wait for (and no close event comes)
        deadline = time.monotonic() + 2.0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.monitor.poll(int(remaining * 1000) + 1):
                return
            try:
                event = parse_monitor_message(self.monitor.recv_multipart(zmq.NOBLOCK))
            except zmq.Again:
                continue
            if event["event"] == zmq.EVENT_CLOSED:
                return

    def _drain_wake(self) -> None:
        wake = self.wake_pull
        try:
            for _ in range(_BATCH):
                wake.recv(zmq.NOBLOCK)
        except zmq.Again:
            pass

    def _drain_monitor(self) -> None:
        monitor = self.monitor
        while True:
            try:
                event = parse_monitor_message(monitor.recv_multipart(zmq.NOBLOCK))
            except zmq.Again:
                return
            if event["event"] == zmq.EVENT_DISCONNECTED:
                self._peer_gone(event["value"])

    def _peer_gone(self, fd: int) -> None:
        """A connection closed (its client ended, was killed, or its host is unreachable):
        drop the waiting goals that came over it; nobody is left to answer."""
        identities = self.fd_peers.pop(fd, None)
        if not identities:
            return
        for identity in identities:
            if self.peer_fd.get(identity) != fd:
                continue
            del self.peer_fd[identity]
            if not self.per_client.get(identity):
                continue
            for key in [k for k in self.pending if k[0] == identity]:
                self._forget(key)
                self.counts["disconnected"] += 1
        self._compact()

    def _drain_router(self) -> None:
        router = self.router
        for _ in range(_BATCH):
            try:
                frames = router.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            if len(frames) != 2:
                self._drop("framing", f"a message of {len(frames) - 1} frames (expected 1)")
                continue
            identity = frames[0].bytes
            try:
                self._handle(identity, frames[1])
            except Exception as exc:  # never let one message stop the server
                self._drop(f"error {type(exc).__name__}", f"a message that raised {exc!r}")

    def _drop(self, cause: str, what: str) -> None:
        self.counts["dropped"] += 1
        self.dropped_by_cause[cause] = self.dropped_by_cause.get(cause, 0) + 1
        if cause not in self.logged_causes:
            self.logged_causes.add(cause)
            _log.warning("tf2py server: dropped %s (logged once per cause)", what)

    def _once(self, cause: str, message: str, *args) -> None:
        if cause not in self.logged_causes:
            self.logged_causes.add(cause)
            _log.warning(message + " (logged once)", *args)

    def _send(self, identity: bytes, payload: bytes) -> None:
        try:
            self.router.send_multipart((identity, payload), zmq.NOBLOCK)
        except zmq.Again:
            self._drop("send queue full", "an answer to a client that does not read them")

    def _handle(self, identity: bytes, frame) -> None:
        data = frame.bytes
        try:
            kind, goal_id, goal = protocol.parse_client_message(data)
        except ProtocolError as exc:
            if exc.goal_id is None:
                self._drop(exc.cause, f"an unreadable message ({exc})")
            else:
                self.counts["invalid_answered"] += 1
                self._once("invalid", "tf2py server: answered a malformed goal: %s", exc)
                self._send(identity, protocol.pack_invalid_result(exc.goal_id, str(exc)))
            return
        if kind == GOAL:
            self._handle_goal(identity, goal, frame)
        elif kind == CANCEL:
            self._handle_cancel(identity, goal_id)

    def _lookup(self, goal):
        """The lookup the goal asks for, on the buffer, now (raises tf2's exceptions)."""
        if goal.advanced:
            return self.buffer.lookup_transform_full(
                goal.target_frame,
                Time.from_nanoseconds(goal.target_time_ns),
                goal.source_frame,
                Time.from_nanoseconds(goal.source_time_ns),
                goal.fixed_frame,
            )
        return self.buffer.lookup_transform(
            goal.target_frame, goal.source_frame, Time.from_nanoseconds(goal.source_time_ns)
        )

    def _refuse(self, identity, goal_id, message: str, cause: str) -> None:
        self.counts["refused"] += 1
        self.counts["answered"] += 1
        self._once(cause, "tf2py server: refused a goal: %s", message)
        self._send(identity, protocol.pack_invalid_result(goal_id, message))

    def _handle_goal(self, identity: bytes, goal, frame) -> None:
        self.counts["goals"] += 1
        key = (identity, goal.goal_id)
        if goal.timeout_ns > _MAX_GOAL_TIMEOUT_NS:
            self._refuse(
                identity, goal.goal_id,
                f"goal refused: its timeout of {goal.timeout_ns / 1e9:g} s is over the "
                f"BufferServer's limit on a goal's timeout ({MAX_GOAL_TIMEOUT:g} s); ask again "
                "for longer waits", "timeout limit")
            return
        waiting = self.pending.get(key)
        if waiting is not None:
            # The same goal again: a client re-sending after reconnecting, with the time it
            # has left. It already waits; keep the earlier of the two deadlines.
            self.counts["duplicates"] += 1
            deadline_ns = time.monotonic_ns() + max(0, goal.timeout_ns)
            if deadline_ns < waiting.deadline_ns:
                waiting.deadline_ns = deadline_ns
                waiting.seq = next(self.seq)
                heapq.heappush(self.deadlines, (deadline_ns, waiting.seq, key))
            self._note_peer(identity, frame)
            self._send(identity, protocol.pack_accepted(goal.goal_id))
            return
        try:
            transform = self._lookup(goal)
        except InvalidArgumentException as exc:
            # No data can cure this one: answer at once, as a local Buffer raises at once.
            self._answer_error(identity, goal.goal_id, exc, "answered_at_once")
            return
        except TransformException as exc:
            if goal.timeout_ns <= 0 or self._too_old(goal, exc):
                self._answer_error(identity, goal.goal_id, exc, "answered_at_once")
                return
            error = exc
        except Exception as exc:
            self._answer_error(identity, goal.goal_id, exc, "answered_at_once")
            return
        else:
            self.counts["answered"] += 1
            self.counts["answered_at_once"] += 1
            self._send(identity, protocol.pack_result(goal.goal_id, transform))
            return
        if self.per_client.get(identity, 0) >= MAX_WAITING_GOALS_PER_CLIENT:
            self._refuse(
                identity, goal.goal_id,
                f"goal refused: this client already has {MAX_WAITING_GOALS_PER_CLIENT} goals "
                "waiting, the BufferServer's limit of waiting goals per client",
                "client limit")
            return
        if len(self.pending) >= MAX_WAITING_GOALS:
            self._refuse(
                identity, goal.goal_id,
                f"goal refused: the BufferServer already has {MAX_WAITING_GOALS} goals "
                "waiting, its limit of waiting goals for all clients together",
                "total limit")
            return
        self._wait(identity, key, goal, error, frame)

    def _too_old(self, goal, exc) -> bool:
        """tf2's rule for a goal no data can answer: its time is more than the cache time older
        than the latest common time of its frames (data that old is refused). If so, say it in
        ``exc``'s message and return True."""
        if not isinstance(exc, BackwardExtrapolationException):
            return False
        if goal.advanced:
            halves = ((goal.source_frame, goal.fixed_frame, goal.source_time_ns),
                      (goal.target_frame, goal.fixed_frame, goal.target_time_ns))
        else:
            halves = ((goal.target_frame, goal.source_frame, goal.source_time_ns),)
        try:
            window_ns = self.buffer.cache_time.nanoseconds
        except Exception:  # pragma: no cover - a buffer without cache_time
            return False
        for frame_a, frame_b, time_ns in halves:
            if time_ns == 0:
                continue
            try:
                latest_ns = self.buffer.get_latest_common_time(frame_a, frame_b).nanoseconds
            except TransformException:
                continue
            if latest_ns != 0 and time_ns + window_ns < latest_ns:
                exc.args = (
                    f"{str(exc).rstrip()} No data can make this transform available: the "
                    f"requested time {format_seconds(time_ns)} is more than the cache time "
                    f"({format_seconds(window_ns)} s) older than the latest common time "
                    f"{format_seconds(latest_ns)}.",
                )
                return True
        return False

    def _note_peer(self, identity: bytes, frame) -> None:
        try:
            fd = frame.get(zmq.SRCFD)
        except zmq.ZMQError:  # pragma: no cover - transports without an fd
            return
        old = self.peer_fd.get(identity)
        if old == fd:
            return
        if old is not None:
            peers = self.fd_peers.get(old)
            if peers is not None:
                peers.discard(identity)
                if not peers:
                    del self.fd_peers[old]
        self.peer_fd[identity] = fd
        self.fd_peers.setdefault(fd, set()).add(identity)

    def _wait(self, identity: bytes, key, goal, error, frame) -> None:
        now = time.monotonic_ns()
        seq = next(self.seq)
        gkey = _group_key(goal)
        group = self.groups.get(gkey)
        new_group = group is None
        if new_group:
            group = self.groups[gkey] = _Group(gkey, goal)
        pending = _Pending(identity, goal, group, now + goal.timeout_ns, seq, now)
        group.members[key] = pending
        self.pending[key] = pending
        if len(self.pending) > self.peak_pending:
            self.peak_pending = len(self.pending)
        self.per_client[identity] = self.per_client.get(identity, 0) + 1
        self._note_peer(identity, frame)
        heapq.heappush(self.deadlines, (pending.deadline_ns, seq, key))
        self.counts["waited"] += 1
        self._send(identity, protocol.pack_accepted(goal.goal_id))
        if new_group:
            self._index(group, error)

    # --- the index -------------------------------------------------------------------------

    def _index(self, group: _Group, error) -> None:
        """Index ``group`` by what can change the answer its lookup gave (``error``)."""
        group.version += 1
        if not self.listening:
            self._watch_with_future(group)
            return
        try:
            self._index_by_error(group, error)
        except Exception:  # pragma: no cover - a buffer raising something odd: be safe
            goal = group.goal
            for frame in {goal.target_frame, goal.source_frame, goal.fixed_frame} - {""}:
                self._add_to(self.on_touch, frame, group)

    def _index_by_error(self, group: _Group, error) -> None:
        goal = group.goal
        buffer = self.buffer
        if goal.advanced:
            names = (goal.target_frame, goal.source_frame, goal.fixed_frame)
            halves = ((goal.source_frame, goal.fixed_frame, goal.source_time_ns),
                      (goal.target_frame, goal.fixed_frame, goal.target_time_ns))
        else:
            names = (goal.target_frame, goal.source_frame)
            halves = ((goal.source_frame, goal.target_frame, goal.source_time_ns),)
        if isinstance(error, LookupException):
            known = self.known_frames
            if known is None:  # once per batch of goals: frames are only ever added
                known = self.known_frames = set(buffer.get_frames())
            missing = [f for f in names if f not in known]
            if missing:
                for frame in missing:
                    self._add_to(self.on_create, frame, group)
                return
            self._queue(group)  # created since the lookup: look again
            return
        # A parent that changes on either chain can change any answer (another path, or a
        # connection): watched for every group, it costs nothing while parents stay.
        seen = set()
        for frame in names:
            for child, parent in self._chain(frame):
                if child not in seen:
                    seen.add(child)
                    self._add_parent_watch(child, parent, group)
        if isinstance(error, ConnectivityException):
            return  # only a parent change can connect the trees
        touch = set()
        if isinstance(error, ExtrapolationException):
            for a, b, needed in halves:
                path = self._path(a, b)
                if needed:
                    # Forward: the data for time T is not there yet. Wait in the stamp heap of
                    # one lagging frame; its newer samples below T cost nothing.
                    for frame in path:
                        newest = self._newest(frame)
                        if newest and newest < needed:
                            heapq.heappush(self.on_stamp.setdefault(frame, []),
                                           (needed, group.serial, group.version, group))
                            self.heap_entries += 1
                            return
                    touch.update(path or (a, b))  # older than kept: new data may change it
                else:
                    # Time 0 is the latest common time, the oldest of the path's newest
                    # stamps: only new data on the frames that hold it back can move it.
                    try:
                        latest = self.buffer.get_latest_common_time(a, b).nanoseconds
                    except TransformException:
                        latest = 0
                    behind = [f for f in path if 0 < self._newest(f) <= latest] if latest else []
                    touch.update(behind or path or (a, b))
        else:
            for a, b, _ in halves:
                touch.update(self._path(a, b) or (a, b))
        # Re-checked when one of these frames gets new data (at most once per burst).
        for frame in touch:
            self._add_to(self.on_touch, frame, group)

    def _newest(self, frame) -> int:
        """The newest stamp (ns) of ``frame``'s link to its parent; 0 for a static link, a
        root or an unknown frame."""
        buffer = self.buffer
        parent = buffer.get_parent(frame, _TIME_ZERO)
        if parent is None:
            return 0
        try:
            return buffer.get_latest_common_time(frame, parent).nanoseconds
        except TransformException:
            return 0

    def _chain(self, frame):
        """(child, parent) from ``frame`` up to its root (parent None), by the latest data."""
        get_parent = self.buffer.get_parent
        out = []
        seen = set()
        for _ in range(_MAX_GRAPH_DEPTH):
            if frame in seen:
                break
            seen.add(frame)
            parent = get_parent(frame, _TIME_ZERO)
            out.append((frame, parent))
            if parent is None:
                break
            frame = parent
        return out

    def _path(self, a: str, b: str) -> list:
        """The frames whose own link a lookup between ``a`` and ``b`` uses: each side's chain
        up to (not including) their common ancestor."""
        chain_a = [child for child, _ in self._chain(a)]
        chain_b = [child for child, _ in self._chain(b)]
        in_b = set(chain_b)
        for i, frame in enumerate(chain_a):
            if frame in in_b:
                return chain_a[:i] + chain_b[:chain_b.index(frame)]
        return chain_a + chain_b

    def _add_to(self, index: dict, frame, group: _Group) -> None:
        members = index.get(frame)
        if members is None:
            members = index[frame] = set()
        members.add(group)
        group.sets.append((index, frame, members, None, None))

    def _add_parent_watch(self, child, parent, group: _Group) -> None:
        by_parent = self.on_parent.get(child)
        if by_parent is None:
            by_parent = self.on_parent[child] = {}
        members = by_parent.get(parent)
        if members is None:
            members = by_parent[parent] = set()
        members.add(group)
        group.sets.append((by_parent, parent, members, self.on_parent, child))

    def _unindex(self, group: _Group) -> None:
        for index, frame, members, outer, outer_key in group.sets:
            members.discard(group)
            if not members and index.get(frame) is members:
                del index[frame]
                if outer is not None and not index and outer.get(outer_key) is index:
                    del outer[outer_key]
        group.sets.clear()
        group.version += 1  # heap entries go stale
        if group.future is not None:
            group.future.cancel()
            group.future = None

    def _queue(self, group: _Group) -> None:
        if not group.queued:
            group.queued = True
            self.recheck_queue.append(group)

    def _take_touched(self) -> None:
        """Find the groups the insertions since the last turn may have answered."""
        with self.touch_lock:
            if not (self.touched_children or self.touched_parents or self.touched_all):
                return
            parents, self.touched_parents = self.touched_parents, set()
            children, self.touched_children = self.touched_children, set()
            everything, self.touched_all = self.touched_all, False
        if everything:
            for group in list(self.groups.values()):
                self._queue(group)
            return
        buffer = self.buffer
        on_create, on_parent, on_touch, on_stamp = (
            self.on_create, self.on_parent, self.on_touch, self.on_stamp)
        for frame in parents:
            groups = on_create.get(frame)
            if groups:
                for group in groups:
                    self._queue(group)
        for frame in children:
            groups = on_create.get(frame)
            if groups:
                for group in groups:
                    self._queue(group)
            groups = on_touch.get(frame)
            if groups:
                for group in groups:
                    self._queue(group)
            by_parent = on_parent.get(frame)
            if by_parent:
                now_parent = buffer.get_parent(frame, _TIME_ZERO)
                for parent, groups in by_parent.items():
                    if parent != now_parent:
                        for group in groups:
                            self._queue(group)
            heap = on_stamp.get(frame)
            if heap:
                try:
                    parent = buffer.get_parent(frame, _TIME_ZERO)
                    newest = (buffer.get_latest_common_time(frame, parent).nanoseconds
                              if parent is not None else 0) or 2**63
                except TransformException:
                    newest = 2**63  # cannot tell: re-check them all
                while heap and heap[0][0] <= newest:
                    _, _, version, group = heapq.heappop(heap)
                    self.heap_entries -= 1
                    if version == group.version and group.members:
                        self._queue(group)
                if not heap:
                    del on_stamp[frame]

    def _recheck_some(self) -> None:
        """Re-check at most a batch of queued groups (the socket is read between batches)."""
        queue = self.recheck_queue
        for _ in range(min(len(queue), _BATCH)):
            group = queue.popleft()
            group.queued = False
            if not group.members:
                continue
            self.counts["rechecks"] += 1
            self._unindex(group)
            try:
                transform = self._lookup(group.goal)
            except InvalidArgumentException as exc:
                self._finish_group(group, None, exc)
            except TransformException as exc:
                if self._too_old(group.goal, exc):
                    self._finish_group(group, None, exc)
                else:
                    self._index(group, exc)
            except Exception as exc:
                self._finish_group(group, None, exc)
            else:
                self._finish_group(group, transform, None)
        self._compact()

    def _finish_group(self, group: _Group, transform, exc) -> None:
        payload = None
        for key, pending in list(group.members.items()):
            self._forget(key)
            goal_id = pending.goal.goal_id
            if exc is None:
                self.counts["answered"] += 1
                self.counts["answered_on_insert"] += 1
                self._send(pending.identity, protocol.pack_result(goal_id, transform))
            else:
                self._answer_error(pending.identity, goal_id, exc, "answered_on_insert")
        del payload

    # --- buffers without insert listeners: one wait_for_transform_async per group -----------

    def _watch_with_future(self, group: _Group) -> None:
        goal = group.goal
        if goal.advanced:
            future = self.buffer.wait_for_transform_full_async(
                goal.target_frame, Time.from_nanoseconds(goal.target_time_ns),
                goal.source_frame, Time.from_nanoseconds(goal.source_time_ns),
                goal.fixed_frame)
        else:
            future = self.buffer.wait_for_transform_async(
                goal.target_frame, goal.source_frame, Time.from_nanoseconds(goal.source_time_ns))
        group.future = future
        state_ref = weakref.ref(self)

        def on_done(f, group=group):
            state = state_ref()
            if state is None or f.cancelled():
                return
            state.ready.append((group, f))
            with state.touch_lock:
                if not state.closed:
                    try:
                        state.wake_push.send(b"", zmq.NOBLOCK)
                    except zmq.Again:
                        pass

        future.add_done_callback(on_done)

    def _answer_ready(self) -> None:
        ready = self.ready
        for _ in range(min(len(ready), _BATCH)):
            group, future = ready.popleft()
            if group.future is not future or not group.members:
                continue
            group.future = None
            exc = future.exception()
            self._finish_group(group, None if exc is not None else future.result(), exc)
        self._compact()

    # --- removing goals --------------------------------------------------------------------

    def _forget(self, key) -> _Pending | None:
        """Take one goal out of every table (its deadline entry goes stale)."""
        pending = self.pending.pop(key, None)
        if pending is None:
            return None
        identity = pending.identity
        left = self.per_client.get(identity, 1) - 1
        if left > 0:
            self.per_client[identity] = left
        else:
            self.per_client.pop(identity, None)
            fd = self.peer_fd.pop(identity, None)
            if fd is not None:
                peers = self.fd_peers.get(fd)
                if peers is not None:
                    peers.discard(identity)
                    if not peers:
                        del self.fd_peers[fd]
        group = pending.group
        group.members.pop(key, None)
        if not group.members:
            self._unindex(group)
            if self.groups.get(group.key) is group:
                del self.groups[group.key]
        return pending

    def _expire(self) -> None:
        now = time.monotonic_ns()
        deadlines = self.deadlines
        pending_goals = self.pending
        # At most a batch of lookups per turn (many goals may share a deadline); the rest
        # are due at once on the next turn, after the sockets are read.
        budget = _BATCH
        while deadlines and deadlines[0][0] <= now and budget:
            _, seq, key = heapq.heappop(deadlines)
            pending = pending_goals.get(key)
            if pending is None or pending.seq != seq:
                continue
            self._forget(key)
            budget -= 1
            # tf2 answers a goal whose time ran out with the reason the lookup fails now.
            try:
                transform = self._lookup(pending.goal)
            except Exception as exc:
                exc = _with_wait(exc, now - pending.wait_started_ns, pending.goal.timeout_ns)
                self._answer_error(
                    pending.identity, pending.goal.goal_id, exc, "answered_at_timeout"
                )
            else:
                self.counts["answered"] += 1
                self.counts["answered_at_timeout"] += 1
                self._send(pending.identity, protocol.pack_result(pending.goal.goal_id, transform))
        self._compact()

    def _compact(self) -> None:
        # Answered and cancelled goals leave their deadline (and stamp-heap) entries until
        # they pop; rebuild when those outnumber the live ones, so memory stays bounded by
        # what waits and is returned after a mass cancel. Dicts never shrink by deletion:
        # copy them once they hold far fewer goals than at their peak.
        peak = self.peak_pending
        if len(self.pending) > peak:
            self.peak_pending = len(self.pending)
        elif peak > 1024 and len(self.pending) < peak // 4:
            self.pending = dict(self.pending)
            self.groups = dict(self.groups)
            self.per_client = dict(self.per_client)
            self.peer_fd = dict(self.peer_fd)
            self.fd_peers = dict(self.fd_peers)
            for index in (self.on_create, self.on_parent, self.on_touch, self.on_stamp):
                refreshed = dict(index)
                index.clear()
                index.update(refreshed)
            self.peak_pending = len(self.pending)
        if len(self.deadlines) > 2 * len(self.pending) + 1024:
            self.deadlines = [(p.deadline_ns, p.seq, key) for key, p in self.pending.items()]
            heapq.heapify(self.deadlines)
        if self.heap_entries > 2 * len(self.groups) + 1024:
            total = 0
            for frame in list(self.on_stamp):
                heap = [e for e in self.on_stamp[frame] if e[2] == e[3].version and e[3].members]
                if heap:
                    heapq.heapify(heap)
                    self.on_stamp[frame] = heap
                    total += len(heap)
                else:
                    del self.on_stamp[frame]
            self.heap_entries = total

    def _answer_error(self, identity, goal_id, exc, how: str) -> None:
        self.counts["answered"] += 1
        self.counts[how] += 1
        self._send(identity, protocol.pack_error_result(goal_id, exc))

    def _handle_cancel(self, identity: bytes, goal_id: int) -> None:
        pending = self._forget((identity, goal_id))
        if pending is not None:
            self.counts["cancelled"] += 1
            self._compact()
        self._send(identity, protocol.pack_cancelled(goal_id, pending is not None))


def _with_wait(exc: BaseException, waited_ns: int, timeout_ns: int) -> BaseException:
    """The lookup's exception, its message saying how long the goal waited, worded as a
    local Buffer's timed-out lookup words it."""
    if not isinstance(exc, TransformException) or isinstance(exc, InvalidArgumentException):
        return exc
    exc.args = (_waited_message(exc, waited_ns / 1e9, timeout_ns / 1e9),)
    return exc
