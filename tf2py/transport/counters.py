"""Counting what a bus object drops, per cause, and logging it at a bounded rate (shared by
every bus: ZeroMQ, ROS 2, Zenoh)."""

from __future__ import annotations

import logging
import threading
import time

logger = logging.getLogger("tf2py.transport")

__all__ = ["DropCounter", "logger", "LOG_INTERVAL"]

#: After the first drop of a cause, at most one log line per cause per this many seconds.
LOG_INTERVAL = 60.0


class DropCounter:
    """Counts dropped input per cause. The first drop of each cause is logged with its detail;
    further drops of that cause at most once per ``LOG_INTERVAL`` seconds, with how many came
    since, so bad input can neither flood the log nor go unseen."""

    def __init__(self, owner: str):
        self._owner = owner
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}
        # cause -> (monotonic time of the last line, count at that line)
        self._logged: dict[str, tuple[float, int]] = {}

    def drop(self, cause: str, detail: str, n: int = 1) -> None:
        """Count ``n`` drops of ``cause``; ``detail`` says what and why (for the log)."""
        now = time.monotonic()
        with self._lock:
            count = self.counts[cause] = self.counts.get(cause, 0) + n
            last = self._logged.get(cause)
            if last is not None and now - last[0] < LOG_INTERVAL:
                return
            self._logged[cause] = (now, count)
        if last is None:
            logger.warning("%s: dropped input (%s): %s (further drops of this kind are counted "
                           "and logged at most once a minute)", self._owner, cause, detail)
        else:
            logger.warning("%s: dropped %d more (%s) in the last %.0f s, %d in all; latest: %s",
                           self._owner, count - last[1], cause, now - last[0], count, detail)

    def snapshot(self) -> dict[str, int]:
        """``{cause: count}`` so far."""
        with self._lock:
            return dict(self.counts)
