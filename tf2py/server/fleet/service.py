"""Fleet: one Buffer for every robot on a Zenoh domain, and the lookup service over it.

It opens a Zenoh session of its own on ``core`` for the robots' /tf (the lookup service,
statics and tokens use the process's shared session: goals never wait behind /tf in one link,
and /tf's session carries no advanced subscriber, which makes every sample dearer) and
declares, for the whole domain:

- ONE subscriber ``<domain>/**/tf/*/*`` (every namespace's /tf, of any type: samples of
  another type are counted and dropped);
- ONE advanced subscriber ``<domain>/**/tf_static/*/*`` with history (late-joiner statics
  from every transient-local publisher's cache, as rmw_zenoh's subscriptions get them);
- ONE liveliness subscriber ``@ros2_lv/<domain>/**`` with history: the robots' /tf and
  /tf_static publishers (tracking in robots.py).

Samples go through per-robot bounded queues to the ingest thread (ingest.py), which inserts
them, frame ids prefixed with the namespace, in small rounds. ``--world`` statics are inserted
first and never dropped. A ``BufferServer`` on ``address`` answers lookups on the Buffer,
ahead of the ingest (answers.py: the ingest lets answers in flight pass between rounds).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ...buffer.buffer import Buffer
from ...transport.interface import scheme
from ...transport.zenoh.address import parse_zenoh_address
from ...transport.zenoh.session import SharedSession, open_session
from ..server import BufferServer
from .answers import AnswerGate, AnsweringBuffer
from .health import FleetHealth
from .ingest import Ingest
from .names import LIVELINESS_PREFIX, RobotFilter, is_tf_publisher, robot_label, robot_of_token
from .queues import RobotQueues
from .robots import JOINED, LEFT, RobotTracker
from .slots import RobotSlots
from .split import FleetPeers
from .world import WorldStatic, world_transforms

__all__ = ["Fleet", "FLEET_CACHE_TIME", "FLEET_BUDGET_BYTES"]

_log = logging.getLogger("tf2py.fleet")

#: The fleet's Buffer keeps this much history, in seconds (as tf2's buffer_server).
FLEET_CACHE_TIME = 10.0
#: Bytes the fleet may hold for its robots: 1/8 names, 1/8 queued samples, the rest the
#: Buffer's caches (when they are over their share, no new robot is taken in).
FLEET_BUDGET_BYTES = 2 * 1024 ** 3
_MAX_TOKEN_LENGTH = 2048  # a liveliness key longer than this names no robot we keep


class Fleet:
    """Hears /tf and /tf_static of every namespace on ``core``'s domain into one Buffer.

    ``core``: a ``zenoh://`` address (the domain is its ``domain=``); ``address``: where the
    lookup service answers (a ``zenoh://`` or ``tcp://`` buffer server address; None: the
    core's address); ``world``: statics (``WorldStatic``) relating robots; ``robots``: an
    fnmatch pattern of the namespaces to keep; ``stale_after``: seconds after which a robot
    gone (no liveliness token, nothing heard) is forgotten whole; ``on_event(line)``: told one
    line per join, leave, forgotten robot and router change; ``keys``: a keys folder (else
    ``$TF2PY_KEYS``): mutual TLS on ``tls/`` locators; ``budget_bytes``: the byte budget
    (``FLEET_BUDGET_BYTES``). ``.buffer``, ``.address``, ``stats()``, ``robots()``,
    ``close()``.
    """

    def __init__(self, core: str, address: str | None = None,
                 world: list[WorldStatic] | None = None, robots: str | None = None,
                 stale_after: float = 5.0, on_event: Callable[[str], None] | None = None,
                 cache_time: float = FLEET_CACHE_TIME, buffer: Buffer | None = None,
                 keys: Any = None, budget_bytes: int = FLEET_BUDGET_BYTES):
        self._filter = RobotFilter(robots)
        self._tracker = RobotTracker(stale_after)
        self._world = list(world or [])
        self._world_children = {s.child for s in self._world}
        self._on_event = on_event or (lambda line: None)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self._subscribers: list[Any] = []
        self._own_session: Any = None
        self.stale_dropped = 0
        self.budget_bytes = int(budget_bytes)
        self.slots = RobotSlots(self.budget_bytes // 8)
        self.buffer = buffer if buffer is not None else Buffer(cache_time=cache_time)
        self._insert_world()
        parsed = parse_zenoh_address(core)
        self._shared = SharedSession.acquire(parsed, keys)  # the lookup service's
        self._session = self._data_session(parsed, keys)
        self.domain = parsed.domain
        self.server: BufferServer | None = None
        self.peers: FleetPeers | None = None
        self.ingest: Ingest | None = None
        gate = AnswerGate()
        try:
            self.ingest = Ingest(self.buffer, self._filter, self.slots, stale_after,
                                 self._world_children, self._forgotten,
                                 RobotQueues(max_total_bytes=self.budget_bytes // 8), gate)
            self.health = FleetHealth(self, parsed.locator)
            self._declare()
            self._expiry = threading.Thread(target=self._expire_loop, daemon=True,
                                            name="tf2py-fleet-robots")
            self._expiry.start()
            served = address or core
            if scheme(served) == scheme(core):  # fleets sharing the bus answer as one
                self.peers = FleetPeers(self._shared.session, self._shared.zid, served, self.buffer,
                                        robots, self._emit)
            self.server = BufferServer(AnsweringBuffer(self.buffer, gate), address=served,
                                       keys=keys, divert=self.peers)
        except BaseException:
            self.close()
            raise
        self.address = self.server.address

    def _data_session(self, parsed: Any, keys: Any) -> Any:
        """The session the robots' /tf comes in on: a session of its own (its own link to
        the router) with that one subscriber, so that goals, on the lookup service's
        session, never queue behind a burst of /tf in one link's receive path (measured: at
        1 000 robots, lookups 0.9-2.7 s late on one session while the server answered each
        in under 1 ms). The shared session when a second one cannot open (a configuration
        that listens on a port)."""
        try:
            session = open_session(parsed, keys)
        except Exception:
            return self._shared.session
        self._own_session = session
        return session

    def _insert_world(self) -> None:
        if self._world:
            self.buffer.set_transforms(world_transforms(self._world), "tf2py fleet --world",
                                       True)

    def _declare(self) -> None:
        from zenoh.ext import HistoryConfig, declare_advanced_subscriber

        ingest = self.ingest
        assert ingest is not None
        on_sample = ingest.on_sample

        def sample(s: Any) -> None:
            on_sample(str(s.key_expr), s.payload.to_bytes())

        domain = self.domain
        kept = self._filter.key_chunks()  # --robots: the router sends only those robots
        self._subscribers.append(
            self._session.declare_subscriber(f"{domain}/{kept}/tf/*/*", sample))
        # Statics and tokens on the other session: an advanced subscriber makes every sample
        # its session receives ~5x dearer in Zenoh's receive thread (a bare /tf subscriber
        # 6 us per 50-transform sample, 31 us with it, 7 us with it on another session).
        other = self._shared.session
        self._subscribers.append(declare_advanced_subscriber(
            other, f"{domain}/{kept}/tf_static/*/*", sample,
            history=HistoryConfig(detect_late_publishers=True)))
        self._subscribers.append(other.liveliness().declare_subscriber(
            f"{LIVELINESS_PREFIX}/{domain}/**", self._on_token, history=True))

    # -- robots ---------------------------------------------------------------------------

    def _on_token(self, sample: Any) -> None:
        import zenoh

        key = str(sample.key_expr)
        if len(key) > _MAX_TOKEN_LENGTH:
            return
        token = robot_of_token(key)
        if token is None or not is_tf_publisher(token) or not self._filter(token.robot):
            return
        now = time.monotonic()
        put = sample.kind == zenoh.SampleKind.PUT
        if put:
            # The session the token names (rmw_zenoh's tokens carry their session's id):
            # a session flooding namespaces fills its own allowance, not the fleet.
            admitted = self.slots.admit(token.robot, token.entity.split("/", 1)[0], now)
            if isinstance(admitted, str):
                if self.ingest is not None:
                    self.ingest._drop(admitted, f"robot /{token.robot[:200]}'s token")
                return
        with self._lock:
            if self._closed:
                return
            if put:
                events = self._tracker.token_added(token.robot, key, now)
            else:
                events = self._tracker.token_removed(token.robot, key, now)
            for kind, robot in events:
                self.slots.set_present(robot, kind == JOINED, now)
            if events:
                self._wake.notify()
        for kind, robot in events:
            self._emit(f"robot {robot_label(robot)} {kind}")

    def _forgotten(self, robot: str, statics: int, names: int) -> None:
        self.stale_dropped += statics
        self._emit(f"robot {robot_label(robot)} gone for {self._tracker.stale_after:g} s: "
                   f"{statics} statics dropped, {names} frames forgotten")

    def _expire_loop(self) -> None:
        stale_after = self._tracker.stale_after
        tick = min(1.0, stale_after / 2)
        next_sweep = 0.0
        while True:
            with self._lock:
                if self._closed:
                    return
                due = self._tracker.next_expiry()
                wait = tick if due is None else max(0.0, min(tick, due - time.monotonic()))
                if wait > 0:
                    self._wake.wait(wait)
                if self._closed:
                    return
                now = time.monotonic()
                stale = [robot for _, robot in self._tracker.expire(now)]
            ingest = self.ingest
            if ingest is None:
                continue
            if now >= next_sweep:  # robots heard without a token, now silent
                next_sweep = now + tick
                stale.extend(self.slots.silent(now - stale_after))
                self.health.check()
            for robot in dict.fromkeys(stale):
                ingest.forget(robot)

    def _emit(self, line: str) -> None:
        try:
            self._on_event(line)
        except Exception:
            _log.exception("tf2py fleet: the event callback failed")

    def robots(self) -> list[str]:
        """The robots alive now (namespaces without the leading slash), sorted."""
        with self._lock:
            return self._tracker.alive()

    def stats(self) -> dict[str, Any]:
        """What the fleet does (the ``--stats`` line's numbers): ``robots`` (alive),
        ``robots_held``, ``samples_per_s`` and ``transforms_per_s`` since the last call,
        ``dropped_by_cause``, ``worst_lag_s`` (the worst newest-stamp lag since the last
        call), ``lookup_ms`` (p50/p99/count of the lookups answered since the last call),
        ``bytes`` (names, queued, caches, budget), ``names`` (the robots' frame ids held),
        and the ingest's counters (received,
        transforms, batches, pending, robots_forgotten, ``answers_first``: answers through the
        gate and the ingest's waits for them, ...); on a ``zenoh://`` address also
        ``peer_fleets`` (other fleet processes on it) and ``answered_between`` (lookups it
        answered with a peer's chain samples, since start)."""
        out = self.ingest.stats() if self.ingest is not None else {}
        out["robots"] = len(self.robots())
        out["stale_statics_dropped"] = self.stale_dropped
        if self.peers is not None:  # other fleet processes on the address (split.py)
            out["peer_fleets"] = len(self.peers.peers())
            out["answered_between"] = self.peers.cross_answered
        out.update(self.health.stats())
        return out

    def close(self) -> None:
        """Stop hearing the domain and serving lookups; leaves no thread or session."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._wake.notify_all()
        if self.server is not None:
            self.server.close()
        if self.peers is not None:
            self.peers.close()
        for subscriber in self._subscribers:
            try:
                subscriber.undeclare()
            except Exception:
                pass
        self._subscribers.clear()
        if self.ingest is not None:
            self.ingest.close()
        if self._own_session is not None:
            try:
                self._own_session.close()
            except Exception:  # its runtime already gone at exit
                pass
        self._shared.release()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# JOINED and LEFT are the words of the lines (API.md); re-exported for tests and tools.
_ = (JOINED, LEFT)
