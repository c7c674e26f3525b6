"""Fleet: one Buffer for every robot on a Zenoh domain, and the lookup service over it.

It opens one Zenoh session on ``core`` and declares, for the whole domain:

- ONE subscriber ``<domain>/**/tf/*/*`` (every namespace's /tf, of any type: samples of
  another type are counted and dropped);
- ONE advanced subscriber ``<domain>/**/tf_static/*/*`` with history (late-joiner statics
  from every transient-local publisher's cache, as rmw_zenoh's subscriptions get them);
- ONE liveliness subscriber ``@ros2_lv/<domain>/**`` with history: the robots' /tf and
  /tf_static publishers (tracking in robots.py).

Samples go through per-robot bounded queues to the ingest thread (ingest.py), which inserts
them, frame ids prefixed with the namespace, in batches. ``--world`` statics are inserted
first and never dropped. A ``BufferServer`` on ``address`` answers lookups on the Buffer.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from ...buffer.buffer import Buffer
from ...transport.zenoh.address import parse_zenoh_address
from ...transport.zenoh.session import SharedSession
from ..server import BufferServer
from .ingest import Ingest
from .names import (LIVELINESS_PREFIX, RobotFilter, is_tf_publisher, robot_label,
                    robot_of_token)
from .robots import JOINED, LEFT, RobotTracker
from .world import WorldStatic, world_columns

__all__ = ["Fleet", "FLEET_CACHE_TIME"]

_log = logging.getLogger("tf2py.fleet")

#: The fleet's Buffer keeps this much history, in seconds (as tf2's buffer_server).
FLEET_CACHE_TIME = 10.0


class Fleet:
    """Hears /tf and /tf_static of every namespace on ``core``'s domain into one Buffer.

    ``core``: a ``zenoh://`` address (the domain is its ``domain=``); ``address``: where the
    lookup service answers (a ``zenoh://`` or ``tcp://`` buffer server address; None: the
    core's address); ``world``: statics (``WorldStatic``) relating robots; ``robots``: an
    fnmatch pattern of the namespaces to keep; ``stale_after``: seconds after which a robot
    that left has its statics dropped; ``on_event(line)``: told one line per join, leave and
    stale robot; ``keys``: a keys folder (else ``$TF2PY_KEYS``): mutual TLS on ``tls/``
    locators. ``.buffer``, ``.address``, ``stats()``, ``robots()``, ``close()``.
    """

    def __init__(self, core: str, address: str | None = None,
                 world: list[WorldStatic] | None = None, robots: str | None = None,
                 stale_after: float = 5.0, on_event: Callable[[str], None] | None = None,
                 cache_time: float = FLEET_CACHE_TIME, buffer: Buffer | None = None,
                 keys: Any = None):
        self._filter = RobotFilter(robots)
        self._tracker = RobotTracker(stale_after)
        self._world = list(world or [])
        self._world_children = {s.child for s in self._world}
        self._on_event = on_event or (lambda line: None)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self._subscribers: list[Any] = []
        self.stale_dropped = 0
        self.buffer = buffer if buffer is not None else Buffer(cache_time=cache_time)
        self._insert_world()
        parsed = parse_zenoh_address(core)
        self._shared = SharedSession.acquire(parsed, keys)
        self._session = self._shared.session
        self.domain = parsed.domain
        self.server: BufferServer | None = None
        self.ingest: Ingest | None = None
        try:
            self.ingest = Ingest(self.buffer, self._filter, self._statics_seen)
            self._declare()
            self._expiry = threading.Thread(target=self._expire_loop, daemon=True,
                                            name="tf2py-fleet-robots")
            self._expiry.start()
            self.server = BufferServer(self.buffer, address=address or core, keys=keys)
        except BaseException:
            self.close()
            raise
        self.address = self.server.address

    def _insert_world(self) -> None:
        if self._world:
            parents, children, stamps, values = world_columns(self._world)
            self.buffer.set_transforms(parents, children, stamps, values, "tf2py fleet --world",
                                       True)

    def _declare(self) -> None:
        from zenoh.ext import HistoryConfig, declare_advanced_subscriber

        ingest = self.ingest
        assert ingest is not None
        on_sample = ingest.on_sample

        def sample(s: Any) -> None:
            on_sample(str(s.key_expr), s.payload.to_bytes())

        domain = self.domain
        session = self._session
        self._subscribers.append(session.declare_subscriber(f"{domain}/**/tf/*/*", sample))
        self._subscribers.append(declare_advanced_subscriber(
            session, f"{domain}/**/tf_static/*/*", sample,
            history=HistoryConfig(detect_late_publishers=True)))
        self._subscribers.append(session.liveliness().declare_subscriber(
            f"{LIVELINESS_PREFIX}/{domain}/**", self._on_token, history=True))

    # -- robots ---------------------------------------------------------------------------

    def _on_token(self, sample: Any) -> None:
        import zenoh

        key = str(sample.key_expr)
        token = robot_of_token(key)
        if token is None or not is_tf_publisher(token) or not self._filter(token.robot):
            return
        now = time.monotonic()
        with self._lock:
            if self._closed:
                return
            if sample.kind == zenoh.SampleKind.PUT:
                events = self._tracker.token_added(token.robot, key, now)
            else:
                events = self._tracker.token_removed(token.robot, key, now)
            if events:
                self._wake.notify()
        for kind, robot in events:
            self._emit(f"robot {robot_label(robot)} {kind}")

    def _statics_seen(self, robot: str, frames: set[str]) -> None:
        with self._lock:
            self._tracker.static_frames_seen(robot, frames - self._world_children)

    def _expire_loop(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                due = self._tracker.next_expiry()
                wait = 1.0 if due is None else max(0.0, min(1.0, due - time.monotonic()))
                if wait > 0:
                    self._wake.wait(wait)
                if self._closed:
                    return
                stale = self._tracker.expire(time.monotonic())
            for _, robot, frames in stale:
                if self.ingest is not None:
                    self.ingest.forget(robot)
                dropped = self.buffer.drop_static(sorted(frames))
                self.stale_dropped += dropped
                self._emit(f"robot {robot_label(robot)} gone for "
                           f"{self._tracker.stale_after:g} s: {dropped} statics dropped")

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
        """The ingest's counters (received, transforms, batches, dropped_by_cause, ...),
        robots alive and statics dropped for stale robots."""
        out = self.ingest.stats() if self.ingest is not None else {}
        out["robots"] = len(self.robots())
        out["stale_statics_dropped"] = self.stale_dropped
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
        for subscriber in self._subscribers:
            try:
                subscriber.undeclare()
            except Exception:
                pass
        self._subscribers.clear()
        if self.ingest is not None:
            self.ingest.close()
        self._shared.release()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# JOINED and LEFT are the words of the lines (API.md); re-exported for tests and tools.
_ = (JOINED, LEFT)
