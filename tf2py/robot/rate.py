"""What RobotStatePublisher keeps between joint states: where each named joint goes in the
model's configuration, and when each joint was last published (robot_state_publisher's rate
limit). Both are keyed on the names list itself: ``JointStateDecoder`` hands back the same
list while a stream names the same joints, so a 500 Hz stream costs one dictionary walk, not
500 a second.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["JointIndex", "PublishTimes", "MAX_NAMES"]

#: Joint names remembered by the rate limit; past this (names made up on the wire), it
#: forgets them all and starts again, so memory stays bounded.
MAX_NAMES = 65_536

_Ints = npt.NDArray[np.intp]


class JointIndex:
    """Maps a message's (names, positions) onto the model's ``movable_joint_names`` (``(M,)``,
    NaN for the joints it does not name; positions ``(N, len(names))`` of N messages naming
    the same joints give ``(N, M)``); names the model lacks are ignored. A name given twice:
    the first position counts (robot_state_publisher's map keeps the first)."""

    def __init__(self, joint_names: Sequence[str]):
        self._index = {name: k for k, name in enumerate(joint_names)}
        self._dof = len(joint_names)  # (columns: the movable joints)
        self._names: Sequence[str] | None = None
        self._source: _Ints = np.zeros(0, dtype=np.intp)
        self._target: _Ints = np.zeros(0, dtype=np.intp)

    def configuration(self, names: Sequence[str],
                      positions: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if names is not self._names:
            pairs = []
            seen: set[str] = set()
            for i, name in enumerate(names):
                if name in self._index and name not in seen:
                    seen.add(name)
                    pairs.append((i, self._index[name]))
            self._source = np.array([p[0] for p in pairs], dtype=np.intp)
            self._target = np.array([p[1] for p in pairs], dtype=np.intp)
            self._names = names
        out = np.full(positions.shape[:-1] + (self._dof,), np.nan)
        out[..., self._target] = positions[..., self._source]
        return out


class PublishTimes:
    """robot_state_publisher's rate limit: a message is due when its stamp is at least
    ``interval_ns`` after the least recently published joint it names (a joint never
    published counts as 0), the wall clock capping that time; a wall clock that goes
    backwards forgets every joint's time."""

    def __init__(self, interval_ns: int):
        self.interval_ns = int(interval_ns)
        self._slot: dict[str, int] = {}
        self._last = np.zeros(64, dtype=np.int64)
        self._last_callback_ns = 0
        self._names: list[str] | None = None
        self._slots: _Ints = np.zeros(0, dtype=np.intp)

    def _slots_of(self, names: list[str]) -> _Ints:
        if names is self._names:
            return self._slots
        if len(self._slot) + len(names) > MAX_NAMES:
            self._slot.clear()
            self._last[:] = 0
        slots = []
        for name in names:
            slot = self._slot.get(name)
            if slot is None:
                slot = self._slot[name] = len(self._slot)
                if slot >= len(self._last):
                    self._last = np.concatenate([self._last, np.zeros_like(self._last)])
            slots.append(slot)
        self._names = names
        self._slots = np.array(slots, dtype=np.intp)
        return self._slots

    def due(self, names: list[str], stamp_ns: int, now_ns: int, always: bool) -> bool:
        """Whether a message naming ``names`` stamped ``stamp_ns`` is published (``always``:
        yes); if so, its joints' times become ``stamp_ns``."""
        if now_ns < self._last_callback_ns:
            self._last[:] = 0  # moved backwards in time (a bag looped): publish again
        self._last_callback_ns = now_ns
        slots = self._slots_of(names)
        last = min(now_ns, int(self._last[slots].min())) if len(slots) else now_ns
        if always or stamp_ns >= last + self.interval_ns:
            self._last[slots] = stamp_ns
            return True
        return False
