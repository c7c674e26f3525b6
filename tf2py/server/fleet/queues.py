"""Per-robot bounded queues between Zenoh's receiving threads and the fleet's ingest thread.

Each robot has its own queue, bounded in samples and in bytes; a sample over its robot's bound
is dropped and counted for that robot (cause ``"robot_queue_full"``), never for the others;
all robots' queues together stay within ``max_total_bytes`` (cause ``"fleet_budget"``).
The ingest thread takes at most ``per_round`` samples of each robot per round, robots in turn,
so a robot that floods gets its fair share of the ingest thread and no more: the others'
samples never wait behind its backlog.
"""

from __future__ import annotations

import threading
from collections import deque

__all__ = ["RobotQueues", "MAX_SAMPLES_PER_ROBOT", "MAX_BYTES_PER_ROBOT", "MAX_QUEUED_BYTES"]

#: Samples one robot may have waiting for the ingest thread (a second of 50 Hz /tf and more).
MAX_SAMPLES_PER_ROBOT = 256
#: Bytes one robot may have waiting (a sample of 50 transforms is about 5 KB).
MAX_BYTES_PER_ROBOT = 4 * 1024 * 1024
#: Bytes all robots together may have waiting (the queues' share of the fleet's byte budget).
MAX_QUEUED_BYTES = 256 * 1024 * 1024
#: What a queued sample costs beyond its payload (the deque slot, the tuple, the bytes header).
SAMPLE_OVERHEAD = 128


class RobotQueues:
    """Samples ``(topic, payload)`` per robot; ``put`` from any thread, ``take`` from one."""

    def __init__(self, max_samples: int = MAX_SAMPLES_PER_ROBOT,
                 max_bytes: int = MAX_BYTES_PER_ROBOT, per_round: int = 8,
                 max_total_bytes: int = MAX_QUEUED_BYTES):
        self.max_samples = max_samples
        self.max_bytes = max_bytes
        self.max_total_bytes = max_total_bytes
        self.total_bytes = 0
        self.over_budget = 0  # samples refused because all queues together were full
        self.per_round = per_round
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._queues: dict[str, deque[tuple[str, bytes]]] = {}
        self._bytes: dict[str, int] = {}
        self._order: deque[str] = deque()  # robots with samples, in turn
        self.dropped: dict[str, int] = {}  # robot -> samples dropped over its bound
        self._closed = False

    def put(self, robot: str, topic: str, payload: bytes) -> str | None:
        """Queue a sample: None, or why it was dropped (counted): ``"robot_queue_full"``, or
        ``"fleet_budget"`` when all queues together are full."""
        size = len(payload)
        with self._lock:
            if self.total_bytes + size + SAMPLE_OVERHEAD > self.max_total_bytes:
                self.over_budget += 1
                return "fleet_budget"
            queue = self._queues.get(robot)
            if queue is None:
                queue = self._queues[robot] = deque()
                self._bytes[robot] = 0
            if len(queue) >= self.max_samples or self._bytes[robot] + size > self.max_bytes:
                self.dropped[robot] = self.dropped.get(robot, 0) + 1
                return "robot_queue_full"
            if not queue:
                self._order.append(robot)
                if len(self._order) == 1:
                    self._ready.notify()
            queue.append((topic, payload))
            self._bytes[robot] += size
            self.total_bytes += size + SAMPLE_OVERHEAD
            return None

    def take(self, timeout: float | None = None, limit: int = 4096,
             max_bytes: int | None = None, linger: float = 0.0) -> list[tuple[str, str, bytes]]:
        """One round: up to ``per_round`` samples of every robot that has some, robots in
        turn, at most ``limit`` in all and no robot started once ``max_bytes`` of payload
        are taken; waits up to ``timeout`` for the first, and when it had to wait, ``linger``
        seconds more for the samples that come with it (robots send in bursts: one wake-up
        per burst, not per sample). ``[]`` when nothing came (or closed)."""
        out: list[tuple[str, str, bytes]] = []
        with self._lock:
            if not self._order and not self._closed:
                self._ready.wait(timeout)
                if linger > 0 and self._order and not self._closed:
                    self._ready.wait(linger)  # (put notifies only an empty queue: it runs out)
            rounds = len(self._order)
            order = self._order
            budget = max_bytes if max_bytes is not None else -1
            for _ in range(rounds):
                if len(out) >= limit or budget == 0:
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
                self.total_bytes -= size + taken * SAMPLE_OVERHEAD
                if budget > 0:
                    budget = max(0, budget - size)
                if queue:
                    order.append(robot)
                else:  # only robots with samples waiting have a queue: nothing to prune
                    del self._queues[robot]
                    del self._bytes[robot]
        return out

    def pending(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._queues.values())

    def forget(self, robot: str) -> None:
        """Drop a robot's queue and its count of drops (it is forgotten)."""
        with self._lock:
            queue = self._queues.pop(robot, None)
            self.total_bytes -= self._bytes.pop(robot, 0) + SAMPLE_OVERHEAD * len(queue or ())
            self.dropped.pop(robot, None)
            if queue:
                try:
                    self._order.remove(robot)
                except ValueError:
                    pass

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._ready.notify_all()
