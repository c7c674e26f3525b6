"""Forward kinematics and joint transforms of a robot description, as arrays.

Everything a joint needs at run time is precomputed once from its origin and axis, so that
a configuration (or N of them) costs a few array operations per joint and no Python loop
over configurations:

- the transform of a moving joint as an ``(x, y, z, qx, qy, qz, qw)`` row: the rotation is
  ``q_origin ⊗ (a sin θ/2, cos θ/2)``, linear in ``(sin θ/2, cos θ/2)``, so it is
  ``sin(θ/2)·U + cos(θ/2)·V`` with U and V fixed per joint; the translation is
  ``t_origin + θ·R_origin·a`` for a prismatic joint and ``t_origin`` otherwise;
- the poses of every link for one or N configurations: ``forward.LinkWalk``, the kernel's
  compiled walk.

Frames: a joint's transform maps its child link into its parent link (tf2's convention for
a ``TransformStamped`` from parent to child); link poses are in the root link.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..buffer.messages import _matrix_from_quaternion
from .forward import PRISMATIC, REVOLUTE, STATIC, LinkWalk
from .joint import Joint
from .urdf import Description

__all__ = ["Kinematics"]

Array = npt.NDArray[np.float64]


def _origin_arrays(joint: Joint) -> tuple[Array, Array, Array]:
    """(translation (3,), quaternion (4,) x y z w, rotation matrix (3, 3)) of the origin."""
    t = joint.origin.translation
    q = joint.origin.rotation
    quaternion = np.array([q.x, q.y, q.z, q.w], dtype=np.float64)
    quaternion /= np.linalg.norm(quaternion)
    return (np.array([t.x, t.y, t.z], dtype=np.float64), quaternion,
            _matrix_from_quaternion(*quaternion.tolist()))


class Kinematics:
    """The arrays of one description: the moving joints' rows and the links' poses."""

    def __init__(self, description: Description) -> None:
        self.links = list(description.links)
        self.link_index = {name: k for k, name in enumerate(self.links)}
        drives = description.drives
        # Moving joints that follow the joint states (driven ones and their mimics), in
        # document order: the joints ``transforms`` publishes.
        self.moving = [j for j in description.joints if j.name in drives]
        self.moving_index = {j.name: k for k, j in enumerate(self.moving)}
        self.moving_names = [j.name for j in self.moving]
        m = len(self.moving)
        # A joint state may give a mimic's own position (robot_state_publisher then uses it):
        # each moving mimic's master among the moving joints, masters before their mimics.
        self.mimic_steps = _mimic_steps(self.moving, self.moving_index)
        self._walk_moving: LinkWalk | None = None
        self.source = np.array([drives[j.name].source for j in self.moving], dtype=np.intp)
        self.multiplier = np.array([drives[j.name].multiplier for j in self.moving])
        self.offset = np.array([drives[j.name].offset for j in self.moving])
        self.plain = bool(np.array_equal(self.source, np.arange(m))) and len(
            description.joint_names) == m
        self.moving_parents = [j.parent for j in self.moving]
        self.moving_children = [j.child for j in self.moving]
        self.half_angle = np.zeros(m)  # 1/2 for revolute and continuous joints, 0 for prismatic
        self.u = np.zeros((m, 4))
        self.v = np.zeros((m, 4))
        self.t = np.zeros((m, 3))
        self.d = np.zeros((m, 3))  # R_origin·axis for prismatic joints
        for k, joint in enumerate(self.moving):
            t, q, r = _origin_arrays(joint)
            a = joint.axis
            self.t[k] = t
            self.v[k] = q
            if joint.type == "prismatic":
                self.d[k] = r @ a
            else:
                self.half_angle[k] = 0.5
                self.u[k, :3] = q[3] * a + np.cross(q[:3], a)
                self.u[k, 3] = -float(q[:3] @ a)
        # Forward kinematics: one step per link, parents first (the root stands at the
        # identity).
        self.root = self.link_index[description.root]
        by_child = {j.child: j for j in description.joints}
        walk: list[tuple[int, int, int, Array, Array, float, float]] = []
        self._walk_joints: list[str] = []  # the joint moving each link ("" for the root)
        for link in self.links:
            moved_by = by_child.get(link)
            self._walk_joints.append("" if moved_by is None else moved_by.name)
            if moved_by is None:  # the root
                walk.append((-1, STATIC, 0, np.eye(4), np.zeros(3), 1.0, 0.0))
                continue
            t, _, r = _origin_arrays(moved_by)
            origin = np.eye(4)
            origin[:3, :3] = r
            origin[:3, 3] = t
            drive = drives.get(moved_by.name)
            kind = STATIC if drive is None else (PRISMATIC if moved_by.type == "prismatic" else REVOLUTE)
            walk.append((self.link_index[moved_by.parent], kind,
                         0 if drive is None else drive.source, origin,
                         np.asarray(moved_by.axis, dtype=np.float64),
                         1.0 if drive is None else drive.multiplier,
                         0.0 if drive is None else drive.offset))
        self.walk = LinkWalk(len(description.joint_names), walk)
        self._steps = walk
        # The fixed joints (published once, on /tf_static).
        statics = [j for j in description.joints if j.type == "fixed"]
        self.static_parents = [j.parent for j in statics]
        self.static_children = [j.child for j in statics]
        self.static_values = np.zeros((len(statics), 7))
        for k, joint in enumerate(statics):
            t, q, _ = _origin_arrays(joint)
            self.static_values[k, :3] = t
            self.static_values[k, 3:] = q

    def moving_positions(self, positions: Array) -> Array:
        """The moving joints' positions ``(..., M)`` from the driven ones ``(..., dof)``."""
        if self.plain:
            return positions
        moved: Array = positions[..., self.source] * self.multiplier + self.offset
        return moved

    def theta_of(self, given: Array) -> Array:
        """The moving joints' positions ``(..., M)`` from those a joint state gives ``(...,
        M)``, NaN where it gives none: a joint given keeps its position (a mimic too, as
        robot_state_publisher takes a mimic's own position when the message has one); a
        mimic not given follows its master, given or followed (``multiplier × master +
        offset``); NaN where neither."""
        theta = np.array(given, dtype=np.float64)
        for joint, master, multiplier, offset in self.mimic_steps:
            own = theta[..., joint]
            missing = np.isnan(own)
            if missing.any():
                theta[..., joint] = np.where(missing, theta[..., master] * multiplier + offset,
                                             own)
        return theta

    def poses_of_theta(self, theta: Array, links: list[int] | None = None,
                       base: int = -1) -> Array:
        """``poses`` for the moving joints' positions ``theta (N, M)`` (finite) rather than
        the driven ones: a walk whose joints each read their own column, built when first
        asked for (a mimic given its own position)."""
        if self._walk_moving is None:
            self._walk_moving = LinkWalk(len(self.moving), [
                (parent, kind, source, origin, axis, multiplier, offset)
                if kind == STATIC else
                (parent, kind, self.moving_index[name], origin, axis, 1.0, 0.0)
                for name, (parent, kind, source, origin, axis, multiplier, offset)
                in zip(self._walk_joints, self._steps)])
        return self._walk_moving.poses(theta, links, base)

    def rows(self, theta: Array) -> Array:
        """The moving joints' transforms ``(M, N, 7)`` for their positions ``theta (N, M)``."""
        half = theta * self.half_angle
        s = np.sin(half).T[:, :, None]
        c = np.cos(half).T[:, :, None]
        out = np.empty((theta.shape[1], theta.shape[0], 7))
        out[:, :, :3] = self.t[:, None, :] + theta.T[:, :, None] * self.d[:, None, :]
        out[:, :, 3:] = s * self.u[:, None, :] + c * self.v[:, None, :]
        return out

    def rows_single(self, theta: Array) -> Array:
        """``rows`` for one configuration: ``(M, 7)`` for the positions ``theta (M,)``
        (the publishers' path, once per joint state: fewer, smaller array operations)."""
        half = theta * self.half_angle
        out = np.empty((len(theta), 7))
        np.multiply(theta[:, None], self.d, out=out[:, :3])
        out[:, :3] += self.t
        np.multiply(np.sin(half)[:, None], self.u, out=out[:, 3:])
        out[:, 3:] += np.cos(half)[:, None] * self.v
        return out

    def poses(self, positions: Array, links: list[int] | None = None, base: int = -1) -> Array:
        """``(N, K, 4, 4)`` poses of ``links`` (default every link, in order) in link ``base``
        (-1: the root) for finite ``positions (N, dof)``."""
        return self.walk.poses(positions, links, base)


def _mimic_steps(moving: list[Joint],
                 index: dict[str, int]) -> list[tuple[int, int, float, float]]:
    """``(joint, master, multiplier, offset)`` for each moving mimic (indices among the
    moving joints), masters before their mimics (a mimic of a mimic after its master's
    step)."""
    by_name = {joint.name: joint for joint in moving}

    def depth(joint: Joint) -> int:
        hops = 0
        while joint.mimic is not None:  # (chains end in a driven joint: the model checked)
            joint = by_name[joint.mimic.joint]
            hops += 1
        return hops

    steps = [(depth(joint), index[joint.name], index[joint.mimic.joint],
              joint.mimic.multiplier, joint.mimic.offset)
             for joint in moving if joint.mimic is not None]
    steps.sort(key=lambda step: (step[0], step[1]))
    return [step[1:] for step in steps]
