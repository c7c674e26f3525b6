"""``Transforms``: N transforms in one object, as scipy's ``Rotation`` holds N rotations.

The one type in which transforms travel as columns: what ``set_transforms`` stores, what a
bus hands to a batch callback, what a bag holds, what a robot model's joints give. Row k maps
data in frame ``children[k]`` into frame ``parents[k]`` at ``stamps_ns[k]`` (int64
nanoseconds); ``values[k]`` is ``[tx, ty, tz, qx, qy, qz, qw]`` (metres, a quaternion).

Rows are carried, not judged: a NaN or an empty frame id is kept here and refused, row by
row, by the buffer that stores them (as tf2 refuses an invalid ``TransformStamped``).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar, overload

import numpy as np
import numpy.typing as npt

from ._kernel_ext import matrix as _matrix
from .messages import TransformStamped, stamped
from .time import Time, to_nanoseconds

__all__ = ["Transforms"]

Names = Sequence[str] | str


def _names(names: object, what: str) -> list[str] | str:
    """A list of frame ids (the caller's list kept, not copied) or one id for every row."""
    if type(names) is str:
        return names
    if type(names) is list:
        listed: list[Any] = names
    elif isinstance(names, np.ndarray):
        listed = names.tolist()
    elif isinstance(names, Sequence) and not isinstance(names, (bytes, bytearray)):
        listed = list(names)
    else:
        raise TypeError(f"Transforms: {what} must be a frame id or a sequence of frame ids, "
                        f"got {type(names).__name__}")
    for name in listed:
        if type(name) is not str:
            raise TypeError(f"Transforms: {what} must be strings, got {name!r}")
    return listed


def _stamps(stamps_ns: object, n: int) -> npt.NDArray[np.int64]:
    """N int64 nanoseconds from an integer array, or one integer for every row."""
    if isinstance(stamps_ns, Time):
        stamps_ns = stamps_ns.nanoseconds
    array = np.asarray(stamps_ns)
    if array.dtype.kind not in "iu" and not (array.size == 0 and array.dtype.kind == "f"):
        raise TypeError(f"Transforms: stamps_ns must be integer nanoseconds, got dtype "
                        f"{array.dtype}")
    if array.dtype.kind == "u" and array.size and int(array.max()) > np.iinfo(np.int64).max:
        raise ValueError("Transforms: stamps_ns beyond int64 nanoseconds")
    if array.ndim == 0:
        return np.full(n, int(array), dtype=np.int64)
    if array.shape != (n,):
        raise ValueError(f"Transforms: {n} rows need stamps_ns of shape ({n},), got "
                         f"{array.shape}")
    return np.ascontiguousarray(array, dtype=np.int64)


def _values(values: object) -> npt.NDArray[np.float64]:
    try:
        array = np.ascontiguousarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"Transforms: values must be numbers, shape (N, 7): {exc}") from None
    if array.ndim == 1 and array.size == 0:
        array = array.reshape(0, 7)
    if array.ndim != 2 or array.shape[1] != 7:
        raise ValueError(f"Transforms: values must have shape (N, 7), rows [tx, ty, tz, qx, "
                         f"qy, qz, qw], got {array.shape}")
    return array


class Transforms:
    """N transforms: ``parents``, ``children`` (N frame ids each), ``stamps_ns`` (int64
    ``(N,)``) and ``values`` (float64 ``(N, 7)``, rows ``[tx, ty, tz, qx, qy, qz, qw]``).

    ``Transforms(parents, children, stamps_ns, values)``: ``parents`` and ``children`` are
    sequences of N frame ids, or one frame id shared by every row (one frame's trajectory,
    kept as one string); ``stamps_ns`` N integers, or one for every row. Arrays of the right
    type are used as they are, not copied: do not write into them afterwards. Shapes and
    types are checked (``ValueError``, ``TypeError``); the rows' values are not (a buffer
    refuses invalid rows one by one when it stores them).

    ``len``, ``t[k]`` (a ``TransformStamped``), ``t[1:5]``, ``t[index_array]``,
    ``t[bool_mask]`` (a ``Transforms``), iteration as ``TransformStamped``s,
    ``Transforms.concatenate([...])``, ``as_matrices()``, ``from_messages(...)``, ``empty()``.
    """

    __slots__ = ("_parents", "_children", "stamps_ns", "values")

    __hash__: ClassVar[None]  # type: ignore[assignment]  # equal by value, so unhashable

    stamps_ns: npt.NDArray[np.int64]
    values: npt.NDArray[np.float64]

    def __init__(self, parents: Names, children: Names, stamps_ns: npt.ArrayLike | Time,
                 values: npt.ArrayLike) -> None:
        """N transforms; see the class docstring for the argument forms."""
        array = _values(values)
        n = array.shape[0]
        parent_ids = _names(parents, "parents")
        child_ids = _names(children, "children")
        for what, ids in (("parents", parent_ids), ("children", child_ids)):
            if type(ids) is list and len(ids) != n:
                raise ValueError(f"Transforms: {n} rows of values but {len(ids)} {what}")
        self._parents = parent_ids
        self._children = child_ids
        self.stamps_ns = _stamps(stamps_ns, n)
        self.values = array

    @classmethod
    def _of(cls, parents: list[str] | str, children: list[str] | str,
            stamps_ns: npt.NDArray[np.int64], values: npt.NDArray[np.float64]) -> Transforms:
        """Columns already of the right types and lengths (tf2py's decoders): no checks."""
        out = cls.__new__(cls)
        out._parents = parents
        out._children = children
        out.stamps_ns = stamps_ns
        out.values = values
        return out

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def empty(cls) -> Transforms:
        """No transforms."""
        return cls._of([], [], np.zeros(0, dtype=np.int64), np.zeros((0, 7), dtype=np.float64))

    @classmethod
    def from_messages(cls, messages: Iterable[Any]) -> Transforms:
        """The rows of ``TransformStamped``s (or objects of the same shape, such as rclpy's,
        whose stamps have ``sec`` and ``nanosec``)."""
        parents: list[str] = []
        children: list[str] = []
        stamps: list[int] = []
        flat: list[float] = []
        try:
            for message in messages:
                header = message.header
                transform = message.transform
                t = transform.translation
                r = transform.rotation
                parents.append(header.frame_id)
                children.append(message.child_frame_id)
                stamp = header.stamp
                stamps.append(stamp.nanoseconds if type(stamp) is Time else
                              to_nanoseconds(stamp, "stamp"))
                flat.extend((t.x, t.y, t.z, r.x, r.y, r.z, r.w))
        except AttributeError as exc:
            raise TypeError(f"Transforms.from_messages takes TransformStamped objects: {exc}"
                            ) from None
        return cls(parents, children, np.array(stamps, dtype=np.int64),
                   np.array(flat, dtype=np.float64).reshape(-1, 7))

    @classmethod
    def concatenate(cls, parts: Iterable[Transforms]) -> Transforms:
        """The rows of every ``Transforms`` in ``parts``, in order."""
        items = list(parts)
        for item in items:
            if not isinstance(item, Transforms):
                raise TypeError(f"Transforms.concatenate takes Transforms, got "
                                f"{type(item).__name__}")
        if not items:
            return cls.empty()
        if len(items) == 1:
            return items[0]
        return cls._of(
            _joined([item._parents for item in items], [len(item) for item in items]),
            _joined([item._children for item in items], [len(item) for item in items]),
            np.concatenate([item.stamps_ns for item in items]),
            np.concatenate([item.values for item in items]))

    # -- columns ----------------------------------------------------------------------------

    @property
    def parents(self) -> list[str]:
        """The N parent frame ids (a list; built once when one id is shared by every row)."""
        names = self._parents
        if type(names) is str:
            names = self._parents = [names] * len(self.stamps_ns)
        return names  # type: ignore[return-value]  # a list once the str case is handled

    @property
    def children(self) -> list[str]:
        """The N child frame ids (a list; built once when one id is shared by every row)."""
        names = self._children
        if type(names) is str:
            names = self._children = [names] * len(self.stamps_ns)
        return names  # type: ignore[return-value]  # a list once the str case is handled

    @property
    def shared_parent(self) -> str | None:
        """The parent of every row when the rows were given one parent id, else None."""
        names = self._parents
        return names if type(names) is str else None

    @property
    def shared_child(self) -> str | None:
        """The child of every row when the rows were given one child id, else None."""
        names = self._children
        return names if type(names) is str else None

    def __len__(self) -> int:
        return len(self.stamps_ns)

    # -- rows -------------------------------------------------------------------------------

    @overload
    def __getitem__(self, index: int | np.integer[Any]) -> TransformStamped: ...
    @overload
    def __getitem__(self, index: slice | Sequence[int] | npt.NDArray[Any]) -> Transforms: ...

    def __getitem__(self, index: Any) -> TransformStamped | Transforms:
        """Row ``index`` as a ``TransformStamped``; a slice, an integer index array or a
        boolean mask of N as a ``Transforms``."""
        if not isinstance(index, (slice, list, tuple, np.ndarray)):
            try:
                k = operator.index(index)
            except TypeError:
                raise TypeError(f"Transforms indices are integers, slices, integer arrays or "
                                f"boolean masks, not {type(index).__name__}") from None
            n = len(self.stamps_ns)
            if not -n <= k < n:
                raise IndexError(f"row {k} is out of range for {n} transforms")
            return self._message(k % n if k < 0 else k)
        if isinstance(index, slice):
            return Transforms._of(_pick(self._parents, index), _pick(self._children, index),
                                  self.stamps_ns[index], self.values[index])
        rows = np.asarray(index)
        if rows.dtype == bool:
            if rows.shape != self.stamps_ns.shape:
                raise IndexError(f"a boolean mask of {len(self)} transforms has shape "
                                 f"({len(self)},), got {rows.shape}")
            rows = np.flatnonzero(rows)
        elif rows.size == 0:
            rows = rows.astype(np.intp)
        elif rows.dtype.kind not in "iu" or rows.ndim != 1:
            raise IndexError(f"an index array of Transforms is 1-D integers, got {rows.dtype} "
                             f"of shape {rows.shape}")
        picked = rows.tolist()
        return Transforms._of(_pick(self._parents, picked), _pick(self._children, picked),
                              self.stamps_ns[rows], self.values[rows])

    def _message(self, k: int) -> TransformStamped:
        row = self.values[k].tolist()
        row.append(int(self.stamps_ns[k]))
        parents, children = self._parents, self._children
        return stamped(parents if type(parents) is str else parents[k],
                       children if type(children) is str else children[k], row, None)

    def __iter__(self) -> Iterator[TransformStamped]:
        """Every row as a ``TransformStamped``, in order."""
        return iter(self.to_messages())

    def to_messages(self) -> list[TransformStamped]:
        """Every row as a ``TransformStamped``, in order."""
        out = []
        for parent, child, row, stamp in zip(self.parents, self.children, self.values.tolist(),
                                             self.stamps_ns.tolist()):
            row.append(stamp)
            out.append(stamped(parent, child, row, None))
        return out

    def as_matrices(self) -> npt.NDArray[np.float64]:
        """``(N, 4, 4)`` homogeneous matrices: ``as_matrices()[k]`` maps points in
        ``children[k]`` into ``parents[k]`` (quaternions need not be unit: the kernel scales
        by 2/|q|², as tf2 does)."""
        flat = [_matrix(row) for row in self.values.tolist()]
        return np.array(flat, dtype=np.float64).reshape(-1, 4, 4)

    # -- comparing and printing -------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        """Same frame ids, stamps and values row for row (NaN equals NaN)."""
        if not isinstance(other, Transforms):
            return NotImplemented
        return (len(self) == len(other) and self.parents == other.parents
                and self.children == other.children
                and bool(np.array_equal(self.stamps_ns, other.stamps_ns))
                and bool(np.array_equal(self.values, other.values, equal_nan=True)))

    def __repr__(self) -> str:
        n = len(self)
        if not n:
            return "Transforms(0 rows)"
        shown = ", ".join(f"{p}->{c}" for p, c in zip(self.parents[:3], self.children[:3]))
        more = f", ... ({n - 3} more)" if n > 3 else ""
        low, high = int(self.stamps_ns.min()), int(self.stamps_ns.max())
        span = (f"stamp {_seconds(low)} s" if low == high else
                f"stamps {_seconds(low)} .. {_seconds(high)} s")
        return f"Transforms({n} row{'s' if n > 1 else ''}: {shown}{more}; {span})"


def _seconds(ns: int) -> str:
    """Exact seconds of integer nanoseconds (a float would round recent stamps)."""
    sign = "-" if ns < 0 else ""
    sec, nsec = divmod(abs(ns), 1_000_000_000)
    return f"{sign}{sec}.{nsec:09d}"


def _pick(names: list[str] | str, index: slice | list[int]) -> list[str] | str:
    """The frame ids of the rows ``index`` picks (one shared id stays one)."""
    if type(names) is str:
        return names
    if isinstance(index, slice):
        return names[index]
    return [names[k] for k in index]


def _joined(columns: list[list[str] | str], lengths: list[int]) -> list[str] | str:
    """Frame ids of concatenated rows: one shared id when all parts share the same one."""
    first = columns[0]
    if type(first) is str and all(column == first for column in columns):
        return first
    out: list[str] = []
    for column, n in zip(columns, lengths):
        if type(column) is str:
            out.extend([column] * n)
        else:
            out.extend(column)
    return out
