"""``Joint``: one joint of a robot model, as URDF describes it."""

from __future__ import annotations

from typing import NamedTuple, SupportsIndex, overload

import numpy as np
import numpy.typing as npt

from ..buffer.messages import Transform

__all__ = ["Joint", "Joints", "JointLimits", "JointMimic", "JointSafety", "JOINT_TYPES",
           "MOVING_TYPES"]

#: Every joint type URDF knows.
JOINT_TYPES = ("fixed", "revolute", "continuous", "prismatic", "floating", "planar")
#: The types joint states drive (one position each).
MOVING_TYPES = frozenset(("revolute", "continuous", "prismatic"))


class JointLimits(NamedTuple):
    """A joint's ``<limit>``: positions in radians or metres, velocity per second, effort
    in N·m or N (lower and upper 0 when absent, as urdfdom reads them)."""

    lower: float
    upper: float
    velocity: float
    effort: float


class JointSafety(NamedTuple):
    """A joint's ``<safety_controller>``: its soft limits (None where the element gives none)
    and gains, as written (joint_state_publisher narrows a joint's limits to the soft ones)."""

    soft_lower_limit: float | None
    soft_upper_limit: float | None
    k_position: float | None
    k_velocity: float | None


class JointMimic(NamedTuple):
    """A joint's ``<mimic>``: its position is ``multiplier × position of joint + offset``."""

    joint: str
    multiplier: float
    offset: float


class Joint:
    """One joint: it maps its ``child`` link into its ``parent`` link by ``origin`` followed
    by its motion (a rotation by the position about ``axis`` for revolute and continuous
    joints, a translation along it for prismatic ones).

    ``type`` is one of ``fixed revolute continuous prismatic floating planar``; ``axis`` a
    unit ``(3,)`` array (read-only); ``limits`` a ``JointLimits`` or None; ``mimic`` a
    ``JointMimic`` or None; ``safety`` a ``JointSafety`` or None.
    """

    __slots__ = ("name", "type", "parent", "child", "origin", "axis", "limits", "mimic",
                 "safety")

    def __init__(
        self,
        name: str,
        type: str,
        parent: str,
        child: str,
        origin: Transform | None = None,
        axis: npt.ArrayLike = (1.0, 0.0, 0.0),
        limits: JointLimits | None = None,
        mimic: JointMimic | None = None,
        safety: JointSafety | None = None,
    ) -> None:
        if type not in JOINT_TYPES:
            raise ValueError(f"joint {name!r}: unknown type {type!r} (one of {' '.join(JOINT_TYPES)})")
        unit = np.array(axis, dtype=np.float64).reshape(3)
        largest = float(np.abs(unit).max())
        if largest > 0.0 and np.isfinite(largest):
            unit = unit / largest  # (first: |axis|² of 1e200 or 1e-200 would not be finite)
            unit /= np.linalg.norm(unit)
        unit.flags.writeable = False
        self.name = name
        self.type = type
        self.parent = parent
        self.child = child
        self.origin = Transform() if origin is None else origin
        self.axis: npt.NDArray[np.float64] = unit
        self.limits = limits
        self.mimic = mimic
        self.safety = safety

    def __repr__(self) -> str:
        return (f"Joint({self.name!r}, {self.type!r}, parent={self.parent!r}, "
                f"child={self.child!r})")


class Joints(list[Joint]):
    """A model's joints in document order; also found by name: ``model.joints["elbow"]``,
    ``"elbow" in model.joints``."""

    def __init__(self, joints: list[Joint]) -> None:
        super().__init__(joints)
        self._by_name = {joint.name: joint for joint in joints}

    @overload
    def __getitem__(self, key: SupportsIndex) -> Joint: ...
    @overload
    def __getitem__(self, key: slice) -> list[Joint]: ...
    @overload
    def __getitem__(self, key: str) -> Joint: ...
    def __getitem__(self, key: SupportsIndex | slice | str) -> Joint | list[Joint]:
        if isinstance(key, str):
            try:
                return self._by_name[key]
            except KeyError:
                raise KeyError(f"no joint {key!r}") from None
        return list.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            return key in self._by_name
        return list.__contains__(self, key)
