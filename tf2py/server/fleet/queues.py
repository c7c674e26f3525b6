"""Per-robot bounded queues between Zenoh's receiving threads and the fleet's ingest thread.

Each robot has its own queue, bounded in samples and in bytes; a sample over its robot's bound
is dropped and counted for that robot (cause ``"robot_queue_full"``), never for the others.
The ingest thread takes at most ``per_round`` samples of each robot per round, robots in turn,
so a robot that floods gets its fair share of the ingest thread and no more: the others'
samples never wait behind its backlog.
"""

from __future__ import annotations

import threading
from collections import deque

__all__ = ["RobotQueues", "MAX_SAMPLES_PER_ROBOT", "MAX_BYTES_PER_ROBOT"]

#: Samples one robot may have waiting for the ingest thread (a second of 50 Hz /tf and more).
MAX_SAMPLES_PER_ROBOT = 256
#: Bytes one robot may have waiting (a sample of 50 transforms is about 5 KB).
MAX_BYTES_PER_ROBOT = 4 * 1024 * 1024


class RobotQueues:
    """Samples ``(topic, payload)`` per robot; ``put`` from any thread, ``take`` from one."""

    def __init__(self, max_samples: int = MAX_SAMPLES_PER_ROBOT,
                 max_bytes: int = MAX_BYTES_PER_ROBOT, per_round: int = 8):
        self.max_samples = max_samples
        self.max_bytes = max_bytes
        self.per_round = per_round
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._queues: dict[str, deque[tuple[str, bytes]]] = {}
        self._bytes: dict[str, int] = {}
        self._order: deque[str] = deque()  # robots with samples, in turn
        self.dropped: dict[str, int] = {}  # robot -> samples dropped over its bound
        self._closed = False

    def put(self, robot: str, topic: str, payload: bytes) -> bool:
        """Queue a sample; False (and counted) when the robot's queue is full."""
        size = len(payload)
        with self._lock:
            queue = self._queues.get(robot)
            if queue is None:
                queue = self._queues[robot] = deque()
                self._bytes[robot] = 0
            if len(queue) >= self.max_samples or self._bytes[robot] + size > self.max_bytes:
                self.dropped[robot] = self.dropped.get(robot, 0) + 1
                return False
            if not queue:
                self._order.append(robot)
                if len(self._order) == 1:
                    self._ready.notify()
            queue.append((topic, payload))
            self._bytes[robot] += size
            return True

    def take(self, timeout: float | None = None, limit: int = 4096) -> list[tuple[str, str, bytes]]:
        """One round: up to ``per_round`` samples of every robot that has some, robots in
        turn, at most ``limit`` in all; waits up to ``timeout`` for the first. ``[]`` when
        nothing came (or closed)."""
        out: list[tuple[str, str, bytes]] = []
        with self._lock:
            if not self._order and not self._closed:
                self._ready.wait(timeout)
            rounds = len(self._order)
            order = self._order
            for _ in range(rounds):
                if len(out) >= limit:
                    break
                robot = order.popleft()
                queue = self._queues[robot]
                taken = 0
                size = 0
                while queue and taken < self.per_round:
                    topic, payload = queue.popleft()
                    size += len(payload)
                    out.append((robot, topic, payload))
                    taken += 1
                self._bytes[robot] -= size
                if queue:
                    order.append(robot)
        return out

    def pending(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._queues.values())

    def forget(self, robot: str) -> None:
        """Drop a robot's queue (it is stale)."""
        with self._lock:
            queue = self._queues.pop(robot, None)
            self._bytes.pop(robot, None)
            if queue:
                try:
                    self._order.remove(robot)
                except ValueError:
                    pass

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._ready.notify_all()
