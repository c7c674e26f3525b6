"""The doctor's joint checks: joint states against the robot's model.

robot_state_publisher turns ``/joint_states`` into ``/tf`` for the joints it finds in its
model: a joint state naming a joint the model lacks moves nothing (a renamed joint, another
robot's description, a missing prefix), and a movable joint that no one publishes leaves its
child link, and everything below it, out of the tree. Pure, like the rest of the doctor: fed
one joint state at a time (``JointObservations.add``), checked against the model's joint list
(``diagnose_joints``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .findings import Finding, cut

__all__ = ["JointObservations", "JointWatch", "diagnose_joints", "JOINT_CHECKS"]

#: The checks of this module, as ``Finding.check`` names them.
JOINT_CHECKS = ("unknown_joint", "unpublished_joint", "joint_state_invalid")

#: Joint names quoted in one finding, at most.
_SHOWN = 8


@dataclass
class JointObservations:
    """What was heard on ``/joint_states``: per joint name, per publisher (authority), how
    many messages named it; messages refused, per publisher."""

    names: dict[str, dict[str, int]] = field(default_factory=dict)
    invalid: dict[str, int] = field(default_factory=dict)
    messages: int = 0

    def add(self, authority: str, names: Sequence[str], positions: int) -> None:
        """One joint state from ``authority`` naming ``names`` with ``positions`` positions
        (robot_state_publisher drops a message whose counts differ)."""
        self.messages += 1
        if len(names) != positions:
            self.invalid[authority] = self.invalid.get(authority, 0) + 1
            return
        for name in names:
            by = self.names.setdefault(str(name), {})
            by[authority] = by.get(authority, 0) + 1


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(cut(n) for n in names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def diagnose_joints(observations: JointObservations, model: Any) -> list[Finding]:
    """The joint findings for ``model`` (a ``RobotModel``: ``name``, ``joints``,
    ``joint_names``), in a stable order: joint states naming joints the model lacks (one
    finding per publisher), the movable joints no one publishes, refused joint states."""
    findings: list[Finding] = []
    robot = cut(model.name)
    driven = set(model.joint_names)
    kinds = {joint.name: joint for joint in model.joints}
    unknown: dict[str, list[str]] = {}
    for name, by in observations.names.items():
        if name in driven:
            continue
        joint = kinds.get(name)
        if joint is not None and (joint.mimic is not None or joint.type == "fixed"):
            continue  # the model has it (robot_state_publisher computes it or ignores it)
        for authority in by:
            unknown.setdefault(authority, []).append(name)
    for authority in sorted(unknown):
        names = sorted(unknown[authority])
        findings.append(Finding(
            check="unknown_joint",
            problem=(f"Joint states from {cut(authority) or 'the bus'} name {len(names)} "
                     f"joint{'s' if len(names) != 1 else ''} that robot {robot!r} lacks: "
                     f"{_listed(names)}; robot_state_publisher moves nothing for them."),
            fix=("Publish the model's joint names (a renamed joint or a missing prefix?), or "
                 "give robot_state_publisher the description of the robot that sends these "
                 "joint states."),
            frames=tuple(names), authorities=(authority,),
            details={"joints": names, "robot": model.name}))
    missing = [name for name in model.joint_names if name not in observations.names]
    if missing:
        children = [kinds[name].child for name in missing if name in kinds]
        heard = ("no joint state was heard" if not observations.messages else
                 f"{observations.messages} joint states named none of them")
        findings.append(Finding(
            check="unpublished_joint",
            problem=(f"{len(missing)} movable joint{'s' if len(missing) != 1 else ''} of robot "
                     f"{robot!r} {'are' if len(missing) != 1 else 'is'} published by no one on "
                     f"/joint_states ({heard}): {_listed(missing)}; their child links "
                     f"({_listed(children)}) and everything below them are missing from the "
                     "tree."),
            fix=("Run the driver that publishes these joints, or `tf2py joint-state-publisher "
                 "URDF` (ROS's joint_state_publisher) for joints without encoders, or make them "
                 "fixed joints in the URDF."),
            frames=tuple(children), details={"joints": missing, "robot": model.name}))
    for authority in sorted(observations.invalid):
        count = observations.invalid[authority]
        findings.append(Finding(
            check="joint_state_invalid",
            problem=(f"{count} joint state{'s' if count != 1 else ''} from "
                     f"{cut(authority) or 'the bus'} had name and position lists of different "
                     "lengths; robot_state_publisher drops them."),
            fix="Send one position per joint name in every sensor_msgs/JointState.",
            authorities=(authority,), details={"messages": count}))
    return findings


class JointWatch:
    """Joint states and the robot description as they arrive from a bus, as CDR samples
    (``on_joint_state``, ``on_description``: call them from the bus's threads). Undecodable
    samples are counted in ``undecodable``. Thread-safe; no sockets of its own."""

    def __init__(self, authority: str = "") -> None:
        import threading

        from ..robot.joint_state import JointStateDecoder

        self.authority = authority
        self.observations = JointObservations()
        self.description: str | None = None
        self.undecodable = 0
        self._decoder = JointStateDecoder()
        self._lock = threading.Lock()

    def on_joint_state(self, data: bytes) -> None:
        with self._lock:
            try:
                columns = self._decoder.decode(data)
            except ValueError:
                self.undecodable += 1
                return
            self.observations.add(self.authority, columns.names, len(columns.position))

    def on_description(self, data: bytes) -> None:
        from ..robot.joint_state import decode_string

        try:
            text = decode_string(data)
        except ValueError:
            with self._lock:
                self.undecodable += 1
            return
        with self._lock:
            self.description = text

    def snapshot(self) -> tuple[JointObservations, str | None]:
        """A copy of what was heard so far, and the latest description."""
        with self._lock:
            heard = JointObservations(
                {name: dict(by) for name, by in self.observations.names.items()},
                dict(self.observations.invalid), self.observations.messages)
            return heard, self.description
