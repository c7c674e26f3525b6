"""Which robots are on the domain: joins, leaves and stale robots, from liveliness tokens.

A robot (a namespace) is *alive* while at least one of its /tf or /tf_static publishers holds a
liveliness token. Its first token makes it join; losing its last token makes it leave; a
robot that has left and not come back within ``stale_after`` seconds is *stale*: the fleet
forgets it whole then (ingest.py: its slot, names, queue, statics and dynamic frames). A robot
coming back before that simply joins again and keeps everything.

The tracker is pure: it is told about tokens and the time (monotonic seconds), and answers with
events; the fleet prints them and acts on them.
"""

from __future__ import annotations

import heapq

__all__ = ["JOINED", "LEFT", "STALE", "RobotTracker"]

JOINED = "joined"
LEFT = "left"
STALE = "stale"


class _Robot:
    __slots__ = ("tokens", "left_at")

    def __init__(self) -> None:
        self.tokens: set[str] = set()
        self.left_at: float | None = None


class RobotTracker:
    """Robot states from token events; ``stale_after`` in seconds (> 0)."""

    def __init__(self, stale_after: float = 5.0):
        if not stale_after > 0:
            raise ValueError(f"--stale-after must be a positive number of seconds, got {stale_after}")
        self.stale_after = float(stale_after)
        self._robots: dict[str, _Robot] = {}
        self._leaving: list[tuple[float, str]] = []  # heap of (left_at, robot)

    def token_added(self, robot: str, token: str, now: float) -> list[tuple[str, str]]:
        """A liveliness token of ``robot`` appeared: ``[(JOINED, robot)]`` if it was not alive."""
        state = self._robots.get(robot)
        if state is None:
            state = self._robots[robot] = _Robot()
        was_alive = bool(state.tokens)
        state.tokens.add(token)
        if was_alive:
            return []
        state.left_at = None
        return [(JOINED, robot)]

    def token_removed(self, robot: str, token: str, now: float) -> list[tuple[str, str]]:
        """A token of ``robot`` went away: ``[(LEFT, robot)]`` if it was its last one."""
        state = self._robots.get(robot)
        if state is None or token not in state.tokens:
            return []
        state.tokens.discard(token)
        if state.tokens:
            return []
        state.left_at = now
        heapq.heappush(self._leaving, (now, robot))
        return [(LEFT, robot)]

    def expire(self, now: float) -> list[tuple[str, str]]:
        """Robots gone for ``stale_after`` by ``now``: ``[(STALE, robot)]``; they are
        forgotten (a later token is a new join)."""
        out = []
        limit = now - self.stale_after
        while self._leaving and self._leaving[0][0] <= limit:
            left_at, robot = heapq.heappop(self._leaving)
            state = self._robots.get(robot)
            if state is None or state.tokens or state.left_at != left_at:
                continue  # came back meanwhile (or left again later: a newer heap entry)
            del self._robots[robot]
            out.append((STALE, robot))
        return out

    def next_expiry(self) -> float | None:
        """The monotonic time of the next possible stale robot, or None."""
        return self._leaving[0][0] + self.stale_after if self._leaving else None

    def alive(self) -> list[str]:
        """The robots alive now, sorted."""
        return sorted(r for r, s in self._robots.items() if s.tokens)

    def is_alive(self, robot: str) -> bool:
        state = self._robots.get(robot)
        return state is not None and bool(state.tokens)
