"""The robots the fleet holds now: their slots, the bounds on them, and their names.

A robot gets a *slot* when it is first heard (a sample or a /tf publisher's liveliness token)
and keeps it until it is forgotten (gone for ``--stale-after``). Everything the fleet keeps of
a robot hangs off its slot (its frame names, the key expressions that lead to it) and goes
with it; the Buffer's frames go through the ingest thread (ingest.py).

The bounds, each counted by cause when it refuses (docs/reliability.md lists them):

- robots present: ``MAX_ROBOTS`` slots at once (``"too_many_robots"``);
- per Zenoh session: a session (the id in its robots' liveliness tokens) holds at most
  ``MAX_ROBOTS_PER_SESSION`` slots (``"session_robots_full"``); namespaces heard without any
  token share one such allowance, ``MAX_UNANNOUNCED_ROBOTS`` (``"unannounced_robots_full"``),
  so one process flooding namespaces cannot crowd out robots that announce themselves;
- names: a frame id over ``MAX_FRAME_ID_LENGTH`` characters (the ZeroMQ bus's limit) is
  dropped (``"frame_id_too_long"``), a robot names at most ``MAX_FRAMES_PER_ROBOT`` frames
  (``"robot_frames_full"``), and all names together stay within ``names_budget`` bytes
  (``"fleet_budget"``).
"""

from __future__ import annotations

import threading

from ...transport.wire_common import MAX_FRAME_ID_LENGTH
from .names import prefix_frame

__all__ = ["RobotSlots", "Slot", "MAX_ROBOTS", "MAX_ROBOTS_PER_SESSION",
           "MAX_UNANNOUNCED_ROBOTS", "MAX_FRAMES_PER_ROBOT", "UNANNOUNCED", "NAME_OVERHEAD"]

#: Robots (namespaces) the fleet holds at once; a new robot beyond it is refused, counted.
MAX_ROBOTS = 20_000
#: Robots one Zenoh session (as its liveliness tokens name it) may bring.
MAX_ROBOTS_PER_SESSION = 5_000
#: Robots heard before (or without) any liveliness token, all sessions together.
MAX_UNANNOUNCED_ROBOTS = 1_000
#: Distinct frame ids one robot may bring into the fleet's Buffer.
MAX_FRAMES_PER_ROBOT = 10_000
#: The session a robot heard without a token is counted under.
UNANNOUNCED = ""
#: Bytes a name costs beyond its characters (the dict entries here, the kernel's index).
NAME_OVERHEAD = 200


class Slot:
    """One robot held by the fleet: its names (frame id as sent -> the fleet's id), the
    children it sent statics for, the key expressions that name it, its session."""

    __slots__ = ("robot", "session", "names", "name_bytes", "statics", "keys", "tokens",
                 "last_heard")

    def __init__(self, robot: str, session: str, now: float):
        self.robot = robot
        self.session = session
        self.names: dict[str, str] = {}
        self.name_bytes = 0
        self.statics: set[str] = set()
        self.keys: list[str] = []
        self.tokens = 0  # its /tf publishers' liveliness tokens alive now
        self.last_heard = now


class RobotSlots:
    """The slots, under one lock (Zenoh's threads admit robots, the ingest thread names
    frames, the fleet's expiry thread forgets)."""

    def __init__(self, names_budget: int):
        self.names_budget = names_budget
        self.lock = threading.Lock()
        self.slots: dict[str, Slot] = {}
        self.per_session: dict[str, int] = {}
        self.name_bytes = 0
        self.name_count = 0  # frame ids named by the robots held
        self.caches_full = False  # the Buffer's caches are over their share (health.py)

    def admit(self, robot: str, session: str | None, now: float) -> Slot | str:
        """The robot's slot, made if there is room: ``session`` is the session of a token
        (None: a sample, which keeps whatever session the robot has). A drop cause when the
        robot cannot be held."""
        with self.lock:
            slot = self.slots.get(robot)
            if slot is not None:
                if session is not None and slot.session != session:
                    if self._full(session):
                        return "session_robots_full"
                    self._count(slot.session, -1)  # announced now: its own session's robot
                    slot.session = session
                    self._count(session, 1)
                return slot
            if len(self.slots) >= MAX_ROBOTS:
                return "too_many_robots"
            if self.caches_full:
                return "fleet_budget"
            owner = UNANNOUNCED if session is None else session
            if self._full(owner):
                return "unannounced_robots_full" if owner == UNANNOUNCED else \
                    "session_robots_full"
            slot = self.slots[robot] = Slot(robot, owner, now)
            self._count(owner, 1)
            return slot

    def _full(self, session: str) -> bool:
        bound = MAX_UNANNOUNCED_ROBOTS if session == UNANNOUNCED else MAX_ROBOTS_PER_SESSION
        return self.per_session.get(session, 0) >= bound

    def _count(self, session: str, delta: int) -> None:
        left = self.per_session.get(session, 0) + delta
        if left > 0:
            self.per_session[session] = left
        else:
            self.per_session.pop(session, None)

    def name(self, slot: Slot, frames: list[str]) -> list[str] | str:
        """The fleet's ids of a robot's ``frames`` (``robot7/base_link``), naming new ones;
        a drop cause when one cannot be named."""
        names = slot.names
        try:
            return [names[f] for f in frames]
        except KeyError:
            pass
        with self.lock:
            held = self.slots.get(slot.robot) is slot  # (not forgotten meanwhile)
            # each new frame id once, in order (a sample names its parents again and again)
            for f in dict.fromkeys(f for f in frames if f not in names):
                if len(f) > MAX_FRAME_ID_LENGTH:
                    return "frame_id_too_long"
                if len(names) >= MAX_FRAMES_PER_ROBOT:
                    return "robot_frames_full"
                name = prefix_frame(slot.robot, f)
                cost = len(f) + len(name) + NAME_OVERHEAD
                if self.name_bytes + cost > self.names_budget:
                    return "fleet_budget"
                if held:
                    slot.name_bytes += cost
                    self.name_bytes += cost
                    self.name_count += 1
                names[f] = name
            return [names[f] for f in frames]

    def forget(self, robot: str, before: float | None = None) -> Slot | None:
        """Take a robot's slot away (its names and keys go with it); the slot, or None. With
        ``before``: only if it holds no token and was last heard before then."""
        with self.lock:
            slot = self.slots.get(robot)
            if slot is not None and before is not None and (slot.tokens or
                                                            slot.last_heard > before):
                return None
            slot = self.slots.pop(robot, None)
            if slot is not None:
                self._count(slot.session, -1)
                self.name_bytes -= slot.name_bytes
                self.name_count -= len(slot.names)
            return slot

    def set_present(self, robot: str, present: bool, now: float) -> None:
        """The robot's tokens came (``present``) or all went (last heard ``now``)."""
        with self.lock:
            slot = self.slots.get(robot)
            if slot is not None:
                slot.tokens = 1 if present else 0
                slot.last_heard = now

    def silent(self, before: float) -> list[str]:
        """Robots without a token now that were last heard before ``before``."""
        with self.lock:
            return [r for r, s in self.slots.items() if not s.tokens and s.last_heard < before]

    def __len__(self) -> int:
        return len(self.slots)
