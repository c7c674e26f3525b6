"""Several fleet processes on one ``--address`` answering as one (``--robots`` splits a site).

Each fleet process on a ``zenoh://`` address declares, under the address's service prefix
``P`` (zenoh_link.py):

    P/fleet/<zid>/<hex of its --robots pattern, or "all">   liveliness token: "I hold these"
    P/fleet/<zid>/chain                                      queryable: chain samples

Every process hears every goal; exactly one answers it. A frame ``ns/.../name`` belongs to the
processes whose pattern matches one of its namespace prefixes; a frame no pattern claims
(``--world`` frames, unknown names) belongs to all. The answer comes from the smallest zid among
the holders of the target frame (else of the source frame, else of all): the server's usual way
when it holds every frame named, else from a scratch ``BufferCore`` holding its own and its peers'
*chain samples* of those frames, the samples of each frame up to its root that the lookup reads
(``chain_rows``: each cache's oldest and newest and the two around each time asked; for time 0,
around each chain's newest stamp), so results and exceptions are the kernel's own on what one
process holding all would read. A goal with a timeout is asked again every ``_RETRY_S`` until it
is answered or its deadline passes.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ...buffer.core import BufferCore
from ...buffer.errors import did_you_mean_sentence
from ...buffer.exceptions import InvalidArgumentException, LookupException
from ...buffer.time import Time
from ...transport.wire_common import WireError, pack, unpack
from ...transport.zenoh.address import parse_zenoh_address
from .. import protocol
from ..limits import MAX_GOAL_TIMEOUT_NS, with_wait
from ..protocol import Goal
from ..zenoh_link import service_prefix
from .names import RobotFilter

__all__ = ["FleetPeers", "chain_rows", "insert_rows"]

_log = logging.getLogger("tf2py.fleet")

_RETRY_S = 0.05  # a waiting cross-process goal is tried again this often
_QUERY_TIMEOUT_S = 2.0  # a peer that does not give its chain samples within this is skipped
_MAX_CHAIN_FRAMES = 1024  # frames walked up from one asked frame (a tree deeper is cut)
_MAX_ASKED = 8  # frames one chain query may name
_MAX_TIMES = 64  # times one chain query may name
_MAX_QUEUED = 10_000  # cross-process goals waiting at once
_FAR_NS = 2 ** 62
_MAX_LISTED = 2000  # a frame list longer than this gets no "did you mean" (errors.py's bound)
_MISSING = re.compile(r'^("(.*?)" passed to .* does not exist\. )', re.S)


def _is_static(buffer: Any, child: str, parent: str) -> bool:
    """Whether ``child``'s samples are tf2 statics: only a static answers at any time."""
    try:
        return bool(buffer.can_transform(parent, child, Time.from_nanoseconds(1))
                    and buffer.can_transform(parent, child, Time.from_nanoseconds(_FAR_NS)))
    except Exception:
        return False


def _kept(stamps: list[int], times: list[int] | None) -> range | list[int]:
    """Which of a frame's samples (stamps oldest first) a lookup at ``times`` can read: the
    oldest and the newest (the latest common time, the extrapolation messages) and the two
    around each time (the interpolation). None: all of them."""
    n = len(stamps)
    if times is None or n <= 2:
        return range(n)
    keep = {0, n - 1}
    for t in times:
        i = bisect.bisect_left(stamps, t)
        keep.update(j for j in (i - 1, i) if 0 <= j < n)
    return sorted(keep)


def chain_rows(buffer: Any, frames: list[str], times: list[int] | None = None,
               with_newest: bool = False) -> dict[str, Any]:
    """The stored samples of ``frames`` and of the frames above them up to their roots that
    a lookup at ``times`` (ns) reads (``_kept``; None: every sample; ``with_newest``: also at
    each of these frames' newest stamps, where a latest common time may fall), as columns:
    ``p`` parents, ``c`` children, ``s`` stamps (ns), ``v`` float64 bytes of the ``(N, 7)``
    rows, ``st`` whether each row is a static."""
    parents: list[str] = []
    children: list[str] = []
    stamps: list[int] = []
    values: list[tuple[float, ...]] = []
    statics: list[bool] = []
    seen: set[str] = set()
    walked: list[tuple[str, list[tuple[Any, ...]], dict[str, bool]]] = []
    todo = [f for f in frames if isinstance(f, str)]
    while todo and len(seen) < _MAX_CHAIN_FRAMES * max(1, len(frames)):
        frame = todo.pop()
        if frame in seen:
            continue
        seen.add(frame)
        samples = buffer.samples(frame)
        static_of: dict[str, bool] = {}
        for _, _, parent in samples:
            if parent not in static_of:
                static_of[parent] = _is_static(buffer, frame, parent)
                todo.append(parent)
        walked.append((frame, samples, static_of))
    if with_newest and times is not None:
        times = times + [int(got[-1][0]) for _, got, marks in walked
                         if got and not marks[got[-1][2]]]
    for frame, samples, static_of in walked:
        for i in _kept([int(s[0]) for s in samples], times):
            stamp, row, parent = samples[i]
            static = static_of[parent]
            parents.append(parent)
            children.append(frame)
            stamps.append(int(stamp))
            values.append(tuple(row))
            statics.append(static)
    data = np.asarray(values, dtype=np.float64).reshape(-1, 7)
    return {"p": parents, "c": children, "s": stamps, "v": data.tobytes(), "st": statics}


def newest_stamps(rows: dict[str, Any]) -> list[int]:
    """The newest stamp of each dynamic frame of ``chain_rows`` columns."""
    newest: dict[str, int] = {}
    for child, stamp, static in zip(rows["c"], rows["s"], rows["st"]):
        if not static and stamp > newest.get(child, -2 ** 63):
            newest[child] = stamp
    return list(newest.values())


def insert_rows(core: BufferCore, rows: dict[str, Any]) -> None:
    """Insert ``chain_rows`` columns into ``core``, statics as statics."""
    values = np.frombuffer(rows["v"], dtype=np.float64).reshape(-1, 7)
    flags = np.asarray(rows["st"], dtype=bool)
    parents, children = list(rows["p"]), list(rows["c"])
    stamps = np.asarray(rows["s"], dtype=np.int64)
    for static in (True, False):
        pick = np.flatnonzero(flags == static)
        if len(pick):
            core.set_transforms([parents[i] for i in pick], [children[i] for i in pick],
                                stamps[pick], values[pick], "tf2py fleet peer", static)


def _rows_of(payload: bytes) -> dict[str, Any] | None:
    try:
        rows: Any = unpack(payload)
    except WireError:
        return None
    if not isinstance(rows, dict) or set(rows) != {"p", "c", "s", "v", "st"}:
        return None
    n = len(rows["p"])
    if not (len(rows["c"]) == len(rows["s"]) == len(rows["st"]) == n
            and isinstance(rows["v"], bytes) and len(rows["v"]) == 56 * n):
        return None
    return rows


class FleetPeers:
    """This fleet process among the others on its ``address`` (see the module docstring).

    ``session``: the fleet's Zenoh session (``zid`` its id); ``buffer``: the fleet's Buffer;
    ``robots``: its ``--robots`` pattern; ``on_event(line)``: told when a peer comes or goes.
    It is the server's ``Diverter`` (goals.py): ``take`` takes the goals this process must
    not answer the usual way, ``forget`` drops them when cancelled or their client goes."""

    def __init__(self, session: Any, zid: str, address: str, buffer: Any,
                 robots: str | None, on_event: Callable[[str], None]):
        import zenoh

        self._zenoh = zenoh
        self._session = session
        self._buffer = buffer
        self.zid = zid
        self._prefix = f"{service_prefix(parse_zenoh_address(address))}/fleet"
        self._filter = RobotFilter(robots)
        self._on_event = on_event
        self._lock = threading.Lock()
        self._peers: dict[str, RobotFilter] = {}
        self._queue: list[tuple[int, int, Any, Goal, int, int, Callable[[Any, bytes], Any]]] = []
        self._seq = itertools.count()
        self._live: set[tuple[Any, int]] = set()  # (peer, goal id) of the goals taken here
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self.cross_answered = 0
        self._entities: list[Any] = []
        mine = robots.strip().lstrip("/").encode().hex() if robots else "all"
        self._entities.append(session.liveliness().declare_subscriber(
            f"{self._prefix}/*/*", self._on_token, history=True))
        self._chain_key = f"{self._prefix}/{zid}/chain"
        self._entities.append(session.declare_queryable(self._chain_key, self._on_query))
        self._entities.append(session.liveliness().declare_token(f"{self._prefix}/{zid}/{mine}"))
        # The processes already there, before this one answers any goal (the subscriber's
        # history comes later, on Zenoh's threads).
        for reply in session.liveliness().get(f"{self._prefix}/*/*", timeout=_QUERY_TIMEOUT_S):
            if reply.ok is not None:
                self._on_token(reply.ok)
        self._thread = threading.Thread(target=self._run, daemon=True, name="tf2py-fleet-split")
        self._thread.start()

    # -- who holds what -------------------------------------------------------------------

    def _on_token(self, sample: Any) -> None:
        parts = str(sample.key_expr)[len(self._prefix) + 1:].split("/")
        if len(parts) != 2 or parts[0] == self.zid or parts[1] == "chain":
            return
        zid, pattern = parts
        if sample.kind == self._zenoh.SampleKind.DELETE:
            with self._lock:
                gone = self._peers.pop(zid, None) is not None
            if gone:
                self._on_event(f"peer fleet {zid} left")
            return
        try:
            text = None if pattern == "all" else bytes.fromhex(pattern).decode()
            peer_filter = RobotFilter(text)
        except ValueError:
            return
        with self._lock:
            known = self._peers.get(zid)
            self._peers[zid] = peer_filter
        if known is None:
            self._on_event(f"peer fleet {zid} joined (robots {text or '*'})")

    def peers(self) -> list[str]:
        """The zids of the other fleet processes on this address, sorted."""
        with self._lock:
            return sorted(self._peers)

    def _holders(self, frame: str, everyone: dict[str, RobotFilter]) -> list[str]:
        """The processes holding ``frame`` (a namespace prefix their pattern matches);
        [] when none claims it (a world frame, or a frame nobody has)."""
        parts = frame.strip("/").split("/")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts))]
        return sorted(zid for zid, keep in everyone.items()
                      if keep.pattern is None or any(keep(p) for p in prefixes))

    # -- the server's hook ----------------------------------------------------------------

    def take(self, peer: Any, goal: Goal, send: Callable[[Any, bytes], bool]) -> bool:
        """True when this process does not answer ``goal`` the server's usual way: another
        process answers it, or it is answered here from chain samples of the peers."""
        with self._lock:
            if not self._peers or self._closed:
                return False
            everyone = dict(self._peers)
        everyone[self.zid] = self._filter
        frames = [goal.target_frame, goal.source_frame]
        if goal.advanced:
            frames.append(goal.fixed_frame)
        holders = [self._holders(f, everyone) for f in frames]
        first = holders[0] or holders[1] or sorted(everyone)
        if first[0] != self.zid:
            return True  # another process answers it
        if all(not h or self.zid in h for h in holders) or goal.timeout_ns > MAX_GOAL_TIMEOUT_NS:
            return False  # every frame it names is here (or the server refuses it)
        now = time.monotonic_ns()
        with self._lock:
            if (peer, goal.goal_id) in self._live:
                return True  # the same goal again (a client re-sending): it is on its way
            if len(self._live) >= _MAX_QUEUED:
                send(peer, protocol.pack_invalid_result(
                    goal.goal_id, f"goal refused: {_MAX_QUEUED} goals between fleet "
                    "processes are already waiting"))
                return True
            heapq.heappush(self._queue, (now, next(self._seq), peer, goal, now,
                                         now + max(0, goal.timeout_ns), send))
            self._live.add((peer, goal.goal_id))
            self._wake.notify()
        if goal.timeout_ns > 0:  # as the server says of a goal that may wait
            send(peer, protocol.pack_accepted(goal.goal_id))
        return True

    def forget(self, peer: Any, goal_id: int | None) -> bool:
        """Drop ``peer``'s goal ``goal_id`` (None: all its goals): cancelled, or its client
        went. True if one was waiting here. Entries of the queue left behind are skipped."""
        with self._lock:
            if goal_id is not None:
                if (peer, goal_id) not in self._live:
                    return False
                self._live.discard((peer, goal_id))
                return True
            mine = {key for key in self._live if key[0] == peer}
            self._live -= mine
            return bool(mine)

    # -- answering from chain samples -----------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._closed and (
                        not self._queue or self._queue[0][0] > time.monotonic_ns()):
                    wait = None if not self._queue else \
                        (self._queue[0][0] - time.monotonic_ns()) / 1e9
                    self._wake.wait(wait)
                if self._closed:
                    return
                _, _, peer, goal, started, deadline, send = heapq.heappop(self._queue)
                if (peer, goal.goal_id) not in self._live:
                    continue  # cancelled, or its client went
            try:
                self._try(peer, goal, started, deadline, send)
            except Exception:  # one goal never stops the others
                _log.exception("tf2py fleet: a goal between fleet processes failed")

    def _try(self, peer: Any, goal: Goal, started: int, deadline: int,
             send: Callable[[Any, bytes], Any]) -> None:
        try:
            transform = self._lookup(goal)
        except Exception as error:
            exc: BaseException = error
            now = time.monotonic_ns()
            if now + _RETRY_S * 1e9 < deadline and \
                    not isinstance(exc, InvalidArgumentException):  # data cannot fix those
                with self._lock:
                    if (peer, goal.goal_id) not in self._live:
                        return
                    heapq.heappush(self._queue, (now + int(_RETRY_S * 1e9), next(self._seq),
                                                 peer, goal, started, deadline, send))
                return
            if goal.timeout_ns > 0:
                exc = with_wait(exc, now - started, goal.timeout_ns)
            send(peer, protocol.pack_error_result(goal.goal_id, exc))
        else:
            send(peer, protocol.pack_result(goal.goal_id, transform))
        with self._lock:
            self._live.discard((peer, goal.goal_id))
        self.cross_answered += 1

    def _lookup(self, goal: Goal) -> Any:
        """The goal's lookup on a scratch core holding the chain samples of its frames."""
        with self._lock:
            everyone = dict(self._peers)
        everyone[self.zid] = self._filter
        frames = [goal.target_frame, goal.source_frame]
        if goal.advanced:
            frames.append(goal.fixed_frame)
        asked: dict[str, list[str]] = {}
        for frame in dict.fromkeys(frames):
            holders = self._holders(frame, everyone) or [self.zid]
            zid = self.zid if self.zid in holders else holders[0]
            asked.setdefault(zid, []).append(frame)
        try:
            scratch = self._scratch_for(goal, asked)
            if goal.advanced:
                return scratch.lookup_transform_full(
                    goal.target_frame, Time.from_nanoseconds(goal.target_time_ns),
                    goal.source_frame, Time.from_nanoseconds(goal.source_time_ns),
                    goal.fixed_frame)
            return scratch.lookup_transform(goal.target_frame, goal.source_frame,
                                            Time.from_nanoseconds(goal.source_time_ns))
        except LookupException as exc:
            missing = _MISSING.match(str(exc))
            if missing is not None:  # "did you mean" among the site's frames, not scratch's
                listed = self._site_frames(everyone)
                hint = "" if listed is None else did_you_mean_sentence(missing.group(2), listed)
                exc.args = (missing.group(1) + hint,)
            raise

    def _scratch(self, asked: dict[str, list[str]], times: list[int]) -> BufferCore:
        """A core holding the chain samples of the frames ``asked`` of each process that a
        lookup at ``times`` reads."""
        scratch = BufferCore(cache_time=self._buffer.cache_time)
        for zid, names in asked.items():
            rows = chain_rows(self._buffer, names, times) if zid == self.zid else \
                self._ask(zid, names, times)
            if rows is not None:
                insert_rows(scratch, rows)
        return scratch

    def _scratch_for(self, goal: Goal, asked: dict[str, list[str]]) -> BufferCore:
        """The scratch core for the goal's lookup. With one peer and a time 0, in one round
        trip: the latest common time is one of the chains' newest stamps, so each side sends
        the samples around all of them (its own and the other's)."""
        halves = self._halves(goal)
        given = [t for _, _, t in halves if t != 0]
        peers = [zid for zid in asked if zid != self.zid]
        if len(given) == len(halves) or len(peers) != 1:
            return self._scratch(asked, given if len(given) == len(halves) else
                                 self._times(goal, asked))
        own = asked.get(self.zid, [])
        own_newest = newest_stamps(chain_rows(self._buffer, own, [])) if own else []
        if len(given) + len(own_newest) > _MAX_TIMES:
            return self._scratch(asked, self._times(goal, asked))
        scratch = BufferCore(cache_time=self._buffer.cache_time)
        rows = self._ask(peers[0], asked[peers[0]], given + own_newest, True)
        if rows is not None:
            insert_rows(scratch, rows)
        if own:
            theirs = newest_stamps(rows) if rows is not None else []
            insert_rows(scratch, chain_rows(self._buffer, own, given + theirs, True))
        return scratch

    @staticmethod
    def _halves(goal: Goal) -> list[tuple[str, str, int]]:
        """The goal's lookups as (target, source, time ns): one, or a full lookup's two."""
        if goal.advanced:
            return [(goal.target_frame, goal.fixed_frame, goal.target_time_ns),
                    (goal.fixed_frame, goal.source_frame, goal.source_time_ns)]
        return [(goal.target_frame, goal.source_frame, goal.source_time_ns)]

    def _times(self, goal: Goal, asked: dict[str, list[str]]) -> list[int]:
        """The times (ns) the goal's lookup reads: the ones it names, and for a time 0 the
        latest common time, found on the chains' oldest and newest samples (all it depends
        on); a lookup that cannot find it raises its own error from those."""
        halves = self._halves(goal)
        times = [t for _, _, t in halves if t != 0]
        if len(times) == len(halves):
            return times
        ends = self._scratch(asked, [])
        for target, source, t in halves:
            if t == 0:
                try:
                    times.append(ends.get_latest_common_time(target, source).nanoseconds)
                except Exception:
                    ends.lookup_transform(target, source, Time())  # the lookup's own error
                    raise
        return times

    def _site_frames(self, everyone: dict[str, Any]) -> set[str] | None:
        """Every frame id of every process on the address (None: over ``_MAX_LISTED``, or a
        process did not say), as one process holding all would list them."""
        listed = set(self._buffer.get_frames())
        for zid in everyone:
            if zid == self.zid:
                continue
            theirs = self._query(zid, {"frames": True})
            if not isinstance(theirs, list) or len(listed) > _MAX_LISTED:
                return None
            listed.update(f for f in theirs if isinstance(f, str))
        return listed if len(listed) <= _MAX_LISTED else None

    def _ask(self, zid: str, frames: list[str], times: list[int], with_newest: bool = False
             ) -> dict[str, Any] | None:
        """Peer ``zid``'s ``chain_rows`` of ``frames`` for a lookup at ``times`` (None if it
        does not answer)."""
        answer = self._query(zid, [frames, times, with_newest])
        return _rows_of(answer) if isinstance(answer, bytes) else None

    def _query(self, zid: str, request: Any) -> Any:
        """Peer ``zid``'s answer to ``request`` (``[frames, times, with_newest]``: the chain
        samples' bytes; ``{"frames": True}``: its frame list), None if it does not answer
        within ``_QUERY_TIMEOUT_S``."""
        replies = self._session.get(f"{self._prefix}/{zid}/chain", payload=pack(request),
                                    timeout=_QUERY_TIMEOUT_S)
        for reply in replies:
            if reply.ok is not None:
                data = reply.ok.payload.to_bytes()
                if isinstance(request, dict):
                    try:
                        return unpack(data)
                    except WireError:
                        return None
                return data
        return None

    def _on_query(self, query: Any) -> None:
        payload = query.payload
        try:
            frames: Any = unpack(payload.to_bytes()) if payload is not None else None
        except WireError:
            return
        if isinstance(frames, dict) and len(frames) == 1 and frames.get("frames") is True:
            # its frame list, for a site-wide "did you mean"
            names = self._buffer.get_frames()
            query.reply(self._chain_key, pack(names if len(names) <= _MAX_LISTED else None))
            return
        if not isinstance(frames, list) or len(frames) != 3:
            return
        names, times, with_newest = frames
        if not isinstance(names, list) or not 0 < len(names) <= _MAX_ASKED or \
                not all(isinstance(f, str) for f in names) or not isinstance(times, list) or \
                len(times) > _MAX_TIMES or not all(type(t) is int for t in times) or \
                type(with_newest) is not bool:
            return
        query.reply(self._chain_key, pack(chain_rows(self._buffer, names, times, with_newest)))

    def close(self) -> None:
        """Stop answering goals between processes and leave the address."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.clear()
            self._live.clear()
            self._wake.notify_all()
        for entity in reversed(self._entities):
            try:
                entity.undeclare()
            except Exception:
                pass
        self._entities.clear()
        if self._thread is not threading.current_thread():
            self._thread.join()
