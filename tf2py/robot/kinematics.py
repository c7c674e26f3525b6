"""Forward kinematics and joint transforms of a robot description, as arrays.

Everything a joint needs at run time is precomputed once from its origin and axis, so that
a configuration (or N of them) costs a few array operations per joint and no Python loop
over configurations:

- the transform of a moving joint as an ``(x, y, z, qx, qy, qz, qw)`` row: the rotation is
  ``q_origin ⊗ (a sin θ/2, cos θ/2)``, linear in ``(sin θ/2, cos θ/2)``, so it is
  ``sin(θ/2)·U + cos(θ/2)·V`` with U and V fixed per joint; the translation is
  ``t_origin + θ·R_origin·a`` for a prismatic joint and ``t_origin`` otherwise;
- the poses of every link for N configurations: ``forward.BatchForward`` (one BLAS
  product per joint over all configurations).

Frames: a joint's transform maps its child link into its parent link (tf2's convention for
a ``TransformStamped`` from parent to child); link poses are in the root link.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from ..buffer.messages import _matrix_from_quaternion
from .forward import PRISMATIC, REVOLUTE, STATIC, BatchForward
from .joint import Joint
from .urdf import Description

__all__ = ["Kinematics", "JointRows"]

Array = npt.NDArray[np.float64]

class JointRows(NamedTuple):
    """Joint transforms as the kernel's batch insert takes them: row k maps ``children[k]``
    into ``parents[k]`` at ``stamps_ns[k]`` (int64 nanoseconds); ``values`` is ``(R, 7)``
    ``[tx, ty, tz, qx, qy, qz, qw]`` in metres."""

    parents: list[str]
    children: list[str]
    stamps_ns: npt.NDArray[np.int64]
    values: Array


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
        m = len(self.moving)
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
        # Forward kinematics: one step per link but the root, parents first.
        self.root = self.link_index[description.root]
        by_child = {j.child: j for j in description.joints}
        batch: list[tuple[int, int, int, int, Array, Array, Array]] = []
        self.single_steps: list[tuple[int, int, int, Array]] = []
        for link in self.links[1:]:
            joint = by_child[link]
            t, q, r = _origin_arrays(joint)
            k = self.moving_index.get(joint.name, -1)
            kind = STATIC if k < 0 else (PRISMATIC if joint.type == "prismatic" else REVOLUTE)
            origin = np.eye(4)
            origin[:3, :3] = r
            origin[:3, 3] = t
            parent = self.link_index[joint.parent]
            child = self.link_index[link]
            batch.append((parent, child, kind, k, origin, np.asarray(joint.axis), r @ joint.axis))
            # One configuration: the parent's pose times this local pose (the origin, or the
            # moving joint's row k as a matrix), a 4×4 product per joint.
            self.single_steps.append((parent, child, k, origin))
        self.batch = BatchForward(len(self.links), self.root, batch)
        self._scratch: list[Array] = []
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

    def poses(self, positions: Array, out: Array | None = None) -> Array:
        """Every link's 4×4 pose in the root for ``positions (N, dof)``, configurations
        last: ``(L, 4, 4, N)`` (into ``out`` when given)."""
        return self.batch.poses(np.ascontiguousarray(self.moving_positions(positions).T), out)

    def scratch(self, n: int) -> Array | None:
        """A kept ``(L, 4, 4, n)`` array for ``poses``, or None: the walk's array is
        reused between calls (a fresh one costs its page faults, as much as the walk)."""
        pool = self._scratch
        try:
            array = pool.pop()  # (atomic: a concurrent call takes another or none)
        except IndexError:
            return None
        return array if array.shape[3] == n else None

    def keep(self, array: Array) -> None:
        """Give ``poses``' array back for the next call (up to 64 MB is kept)."""
        if array.nbytes <= 64 << 20 and not self._scratch:
            self._scratch.append(array)

    def poses_single(self, positions: Array) -> Array:
        """Every link's 4×4 pose in the root for one configuration ``(dof,)``: ``(L, 4, 4)``,
        by 4×4 products along the tree (fewer, larger steps than ``poses`` takes for N)."""
        theta = self.moving_positions(positions)
        rows = self.rows_single(theta)
        x, y, z, w = rows[:, 3], rows[:, 4], rows[:, 5], rows[:, 6]
        local = np.zeros((len(rows), 4, 4))
        local[:, 0, 0] = 1.0 - 2.0 * (y * y + z * z)
        local[:, 0, 1] = 2.0 * (x * y - z * w)
        local[:, 0, 2] = 2.0 * (x * z + y * w)
        local[:, 1, 0] = 2.0 * (x * y + z * w)
        local[:, 1, 1] = 1.0 - 2.0 * (x * x + z * z)
        local[:, 1, 2] = 2.0 * (y * z - x * w)
        local[:, 2, 0] = 2.0 * (x * z - y * w)
        local[:, 2, 1] = 2.0 * (y * z + x * w)
        local[:, 2, 2] = 1.0 - 2.0 * (x * x + y * y)
        local[:, :3, 3] = rows[:, :3]
        local[:, 3, 3] = 1.0
        poses = np.empty((len(self.links), 4, 4))
        poses[self.root] = np.eye(4)
        matmul = np.matmul
        for parent, child, k, origin in self.single_steps:
            matmul(poses[parent], origin if k < 0 else local[k], out=poses[child])
        return poses
