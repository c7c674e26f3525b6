"""Forward kinematics of N configurations at once: every link's 4×4 pose in the root.

The poses are kept configurations-last, ``H (L, 4, 4, N)``: row i of a link's pose for all
N configurations is a ``(4, N)`` block, so a joint's step is one BLAS product, the parent's
rows times the joint's constant 4×4 ``G`` (``H_c[i] = H_p[i]·G``, for every i and
configuration at once), then a few element-wise operations for the motion; at the end one
transposed copy gives the ``(N, L, 4, 4)`` result.

Revolute joints turn about z: each link whose joint turns about an axis a is stored
"twisted", as ``R·Q`` with Q a fixed rotation taking z to a (Q = I when a is z), so that
``Rot(a, θ) = Q·Rz(θ)·Qᵀ`` needs only ``col0 = c·m0 + s·m1``, ``col1 = c·m1 − s·m0`` on
the columns of ``R_p·G``; the ``Qᵀ`` goes into the children's G, and a twisted link is
untwisted (``R = (R·Q)·Qᵀ``) once, after the walk.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["BatchForward", "STATIC", "REVOLUTE", "PRISMATIC", "twist_for"]

Array = npt.NDArray[np.float64]

#: How a joint moves in the walk: not at all (fixed, floating, planar, undriven), by turning
#: (revolute, continuous), by sliding (prismatic).
STATIC, REVOLUTE, PRISMATIC = 0, 1, 2


def twist_for(axis: Array) -> Array:
    """A rotation Q whose third column is the unit ``axis`` (Q·z = axis); exact signed
    permutations for axes along ±x, ±y, ±z."""
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


class BatchForward:
    """The walk down the tree for N configurations (see the module's docstring)."""

    def __init__(self, link_count: int, root: int,
                 joints: list[tuple[int, int, int, int, Array, Array, Array]]) -> None:
        """``joints``: per link but the root, parents first: ``(parent, child, kind, k,
        origin (4, 4), axis (3,), translation d (3,) along the prismatic axis in the parent)``
        with k the joint's index in the moving positions (-1 if it stands still)."""
        self.link_count = link_count
        self.root = root
        twist = [np.eye(3) for _ in range(link_count)]
        self.twisted: list[tuple[int, Array]] = []
        self.steps: list[tuple[int, int, int, int, Array]] = []
        self.turning: dict[int, int] = {}  # moving joint k -> its row in the sines
        for parent, child, kind, k, origin, axis, shift in joints:
            undo = np.eye(4)
            undo[:3, :3] = twist[parent].T  # the parent is stored as R_p·Q_p
            g = undo @ origin
            if kind == REVOLUTE:
                q = twist_for(axis)
                twist[child] = q
                g[:3, :3] = g[:3, :3] @ q
                if not np.array_equal(q, np.eye(3)):
                    self.twisted.append((child, q))
            weights = g.T  # rows: what each column of H_c is, as a mix of H_p's columns
            if kind == PRISMATIC:
                direction = np.zeros(4)
                direction[:3] = twist[parent].T @ shift
                weights = np.vstack([weights, direction])
            if kind == REVOLUTE:  # its row in the sines and cosines (of turning joints only)
                k = self.turning.setdefault(k, len(self.turning))
            self.steps.append((parent, child, kind, k, np.ascontiguousarray(weights)))
        self.turning_rows = np.fromiter(self.turning, dtype=np.intp, count=len(self.turning))

    def poses(self, theta: Array, out: Array | None = None) -> Array:
        """``(L, 4, 4, N)`` link poses in the root for the moving joints' positions
        ``theta (M, N)``, written into ``out`` when given (an array of that shape)."""
        n = theta.shape[1]
        # cos θ and sin θ from t = tan(θ/2): one transcendental call instead of two (they
        # were a third of the time), within an ulp of np.cos and np.sin.
        t = np.tan(theta[self.turning_rows] * 0.5)
        t_squared = t * t
        inverse = np.add(t_squared, 1.0)
        np.divide(1.0, inverse, out=inverse)
        cos = np.subtract(1.0, t_squared, out=t_squared)
        cos *= inverse
        sin = np.multiply(t, 2.0, out=t)
        sin *= inverse
        h = np.empty((self.link_count, 4, 4, n)) if out is None else out
        h[:, 3, :3] = 0.0
        h[:, 3, 3] = 1.0
        h[self.root, :3] = np.eye(3, 4)[:, :, None]
        matmul, multiply = np.matmul, np.multiply
        scratch = np.empty((2, 3, n))
        for parent, child, kind, k, weights in self.steps:
            rows = h[child, :3]
            if kind == PRISMATIC:
                product = matmul(weights, h[parent, :3])  # (3, 5, N): G's columns and R_p·d
                rows[...] = product[:, :4]
                multiply(product[:, 4], theta[k], out=scratch[0])
                rows[:, 3] += scratch[0]
                continue
            matmul(weights, h[parent, :3], out=rows)
            if kind == REVOLUTE:  # (m0, m1) <- (c·m0 + s·m1, c·m1 − s·m0)
                m0, m1 = rows[:, 0], rows[:, 1]
                s, c = sin[k], cos[k]
                multiply(m1, s, out=scratch[0])
                multiply(m0, s, out=scratch[1])
                m0 *= c
                m0 += scratch[0]
                m1 *= c
                m1 -= scratch[1]
        for child, q in self.twisted:  # R = (R·Q)·Qᵀ
            h[child, :3, :3] = matmul(q, h[child, :3, :3])
        return h
