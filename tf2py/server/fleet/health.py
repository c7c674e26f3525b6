"""How the fleet is doing: rates, drops, lag, lookup latency, bytes, and its router.

``FleetHealth.check()`` runs on the fleet's timer (about once a second): it measures the
Buffer's caches against their share of the byte budget (over it, no new robot is taken in)
and watches the Zenoh session's links, telling the fleet's lines when its router is
unreachable, lost, and back. ``stats()`` is the ``--stats`` line's numbers.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .service import Fleet

__all__ = ["FleetHealth", "stats_line"]


class FleetHealth:
    """The fleet's health; ``locator``: the router the fleet connects to (None: none)."""

    def __init__(self, fleet: Fleet, locator: str | None):
        self._fleet = fleet
        self._locator = locator
        self._lock = threading.Lock()
        self._mark = (time.monotonic(), 0, 0)  # (when, received, transforms) at last stats
        self._connected: bool | None = None
        self.cache_bytes = 0

    def check(self) -> None:
        """Measure the caches against their share of the budget; watch the router."""
        fleet = self._fleet
        self.cache_bytes = int(fleet.buffer.kernel.memory_bytes())  # the kernel's own count
        fleet.slots.caches_full = self.cache_bytes > fleet.budget_bytes * 3 // 4
        if self._locator is not None:
            self._watch_router()

    def _watch_router(self) -> None:
        info = self._fleet._session.info
        ours = {self._fleet._shared.zid}  # the process's other session is no router
        try:
            connected = bool(info.routers_zid()) or any(
                str(zid) not in ours for zid in info.peers_zid())
        except Exception:  # the session is closing
            return
        before, self._connected = self._connected, connected
        if connected == before:
            return
        if not connected:
            word = "unreachable (waiting for it)" if before is None else "lost (waiting for it)"
            self._fleet._emit(f"router {self._locator} {word}")
        elif before is not None:
            self._fleet._emit(f"router {self._locator} back")

    def stats(self) -> dict[str, Any]:
        """Rates since the last call, the worst lag and lookup latencies since then, bytes."""
        fleet = self._fleet
        ingest = fleet.ingest
        now = time.monotonic()
        out: dict[str, Any] = {"robots_held": len(fleet.slots)}
        with self._lock:
            when, received, transforms = self._mark
            if ingest is not None:
                self._mark = (now, ingest.received, ingest.transforms)
                span = max(now - when, 1e-9)
                out["samples_per_s"] = (ingest.received - received) / span
                out["transforms_per_s"] = (ingest.transforms - transforms) / span
                lag, ingest.worst_lag_ns = ingest.worst_lag_ns, 0
                out["worst_lag_s"] = lag / 1e9
        out["lookup_ms"] = self._lookups()
        queued = ingest.queues.total_bytes if ingest is not None else 0
        out["bytes"] = {"names": fleet.slots.name_bytes, "queued": queued,
                        "caches": self.cache_bytes, "budget": fleet.budget_bytes}
        # The robots' frame ids, counted as they are named (listing the Buffer's frames
        # would hold the GIL 30 ms per 50 000 frames: lookups would wait).
        out["names"] = fleet.slots.name_count
        out["router"] = {None: "none", True: "connected", False: "unreachable"}[
            self._connected if self._locator is not None else None]
        return out

    def _lookups(self) -> dict[str, float]:
        server = self._fleet.server
        link = getattr(getattr(server, "_state", None), "link", None)  # the server's link
        take = getattr(link, "take_latencies", None)
        samples = sorted(take()) if take is not None else []
        if not samples:
            return {"count": 0}
        n = len(samples)
        return {"count": n, "p50": samples[n // 2] * 1e3,
                "p99": samples[min(n - 1, (n * 99) // 100)] * 1e3}


def stats_line(stats: dict[str, Any]) -> str:
    """One line of ``Fleet.stats()``: what ``tf2py fleet --stats`` prints."""
    drops = stats.get("dropped_by_cause") or {}
    dropped = ", ".join(f"{cause} {n}" for cause, n in sorted(drops.items())) or "none"
    lookups = stats.get("lookup_ms") or {}
    answered = (f"{lookups['count']} lookups p50 {lookups['p50']:.1f} ms p99 "
                f"{lookups['p99']:.1f} ms") if lookups.get("count") else "0 lookups"
    return (f"stats: {stats.get('robots', 0)} robots, "
            f"{stats.get('samples_per_s', 0.0):.0f} samples/s, "
            f"{stats.get('transforms_per_s', 0.0):.0f} transforms/s, worst lag "
            f"{stats.get('worst_lag_s', 0.0):.3f} s, {answered}, dropped: {dropped}")
