"""Forward kinematics of N configurations at once: every link's 4×4 pose, computed by the
kernel's compiled walk (``tf2py.buffer._kernel_ext.ForwardKinematics``, the maths in
``buffer/_kernel/forward.hpp``) straight into an ``(N, L, 4, 4)`` array.

This module turns a description's joints into the walk's tables (per link, parents first:
the parent's index, the joint's origin ``[R | t]``, how it moves, its unit axis, and the
configuration column driving it, with a mimic's multiplier and offset) and allocates the
result; the kernel checks the tables and the arrays it is given, and computes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..buffer._kernel_ext import ForwardKinematics

__all__ = ["LinkWalk", "STATIC", "REVOLUTE", "PRISMATIC", "twist_for"]

Array = npt.NDArray[np.float64]

#: How a joint moves in the walk: not at all (fixed, floating, planar, undriven), by turning
#: (revolute, continuous), by sliding (prismatic). The kernel's codes.
STATIC, REVOLUTE, PRISMATIC = 0, 1, 2


def twist_for(axis: Array) -> Array:
    """A rotation Q whose third column is the unit ``axis`` (Q·z = axis); exact signed
    permutations for axes along ±x, ±y, ±z. (The numpy walk turned every joint about z with
    it; the compiled walk turns about any axis directly and no longer needs it.)"""
    a = np.asarray(axis, dtype=np.float64)
    exact: dict[tuple[float, ...], tuple[tuple[int, int, int], tuple[int, int, int]]] = {
        (0.0, 0.0, 1.0): ((1, 0, 0), (0, 1, 0)), (0.0, 0.0, -1.0): ((1, 0, 0), (0, -1, 0)),
        (1.0, 0.0, 0.0): ((0, 1, 0), (0, 0, 1)), (-1.0, 0.0, 0.0): ((0, -1, 0), (0, 0, 1)),
        (0.0, 1.0, 0.0): ((0, 0, 1), (1, 0, 0)), (0.0, -1.0, 0.0): ((0, 0, -1), (1, 0, 0))}
    key = tuple(float(v) for v in a)
    if key in exact:
        u = np.array(exact[key][0], dtype=np.float64)
        v = np.array(exact[key][1], dtype=np.float64)
    else:
        helper = np.eye(3)[int(np.argmin(np.abs(a)))]
        u = np.cross(a, helper)
        u /= np.linalg.norm(u)
        v = np.cross(a, u)
    q: Array = np.column_stack([u, v, a]).astype(np.float64)
    return q


class LinkWalk:
    """The compiled walk of one robot and the arrays it writes (see the module's docstring)."""

    def __init__(self, dof: int,
                 links: Sequence[tuple[int, int, int, Array, Array, float, float]]) -> None:
        """``links``: per link, parents first, ``(parent, kind, source, origin (4, 4), axis (3,),
        multiplier, offset)``: the parent's index (-1 for the root), the joint's kind and the
        configuration column moving it (with the mimic's multiplier and offset; ignored when
        it stands still)."""
        count = len(links)
        self.link_count = count
        origins = np.zeros((count, 3, 4))
        axes = np.zeros((count, 3))
        for k, (_, _, _, origin, axis, _, _) in enumerate(links):
            origins[k] = origin[:3]
            axes[k] = axis
        self.walk = ForwardKinematics(
            np.array([link[0] for link in links], dtype=np.int64), origins,
            np.array([link[1] for link in links], dtype=np.int64), axes,
            np.array([link[2] for link in links], dtype=np.int64),
            np.array([link[5] for link in links], dtype=np.float64),
            np.array([link[6] for link in links], dtype=np.float64), dof)

    def poses(self, positions: Array, links: list[int] | None = None, base: int = -1) -> Array:
        """``(N, K, 4, 4)`` poses of ``links`` (default all, in order) in link ``base`` (-1:
        the root) for ``positions (N, dof)``, finite float64."""
        configurations = np.ascontiguousarray(positions, dtype=np.float64)
        n = configurations.shape[0]
        if links is None and base < 0:
            out = np.empty((n, self.link_count, 4, 4))
            self.walk.poses(configurations, out)
            return out
        chosen = np.arange(self.link_count, dtype=np.int64) if links is None else np.array(
            links, dtype=np.int64)
        out = np.empty((n, len(chosen), 4, 4))
        self.walk.poses_of(configurations, out, chosen, base)
        return out
