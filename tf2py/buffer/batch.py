"""Batch inserts: ``BufferCore.set_transforms``' argument forms, checked and handed to the
kernel, and the wording of the rows it refused; and the batch lookup, ``lookup_transforms``.

The main form is a ``Transforms`` (``store_batch(core, transforms, authority, is_static)``);
the column form (parents, children, stamps_ns, values, authority, is_static) stays. The
common columns go to the kernel as they are: lists of frame ids (or one frame id for every
row), an int64 stamp array and a float64 ``(N, 7)`` row array. Anything else is converted
here first (or refused with an ``InvalidArgumentException`` naming what is wrong).

``insert_cdr``: TFMessage CDR samples (a round of them) decoded and stored by the kernel in one
call; the caller words what it refused (``tf2py.transport.ros2.cdr.cdr_error``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from ._kernel_ext import FrameIds, KernelError, decode_tf_cdr
from .errors import STAMP_MAX, check_insert, frame_error, query_error
from .exceptions import InvalidArgumentException
from .time import times_to_nanoseconds
from .transforms import Transforms

if TYPE_CHECKING:
    from .core import BufferCore

__all__ = ["BatchResult", "CdrInsert", "FrameIds", "batch_frames", "insert_cdr", "store_batch",
           "store_rows"]


class BatchResult(NamedTuple):
    """What ``set_transforms`` did: rows stored, rows refused as too old, and the invalid
    rows as ``(row index, InvalidArgumentException)``."""

    stored: int
    old: int
    invalid: list[tuple[int, InvalidArgumentException]]


def _names(names: Sequence[str] | str, n: int) -> list[str]:
    """A list of N frame ids: the list itself, one name repeated, or any sequence listed."""
    if type(names) is list:
        return names
    if isinstance(names, str):
        return [names] * n
    return list(names)


def _row_count(values: Any, stamps_ns: Any) -> int:
    shape = getattr(values, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(stamps_ns)
    except TypeError:
        return 0


def store_batch(
    core: BufferCore, transforms: Transforms | Sequence[str] | str, *args: Any, **kwargs: Any,
) -> BatchResult:
    """``set_transforms``' work for either form: ``(transforms, authority, is_static=False)``
    with a ``Transforms``, or the columns ``(parents, children, stamps_ns, values, authority,
    is_static=False)``; the caller notifies what was stored."""
    if isinstance(transforms, Transforms):
        return store_transforms(core, transforms, *args, **kwargs)
    return store_rows(core, transforms, *args, **kwargs)


def store_transforms(
    core: BufferCore, transforms: Transforms, authority: Any, is_static: bool = False,
) -> BatchResult:
    """Store the rows of a ``Transforms`` (one shared frame id goes to the kernel as one)."""
    parent = transforms.shared_parent
    child = transforms.shared_child
    return store_rows(core, transforms.parents if parent is None else parent,
                      transforms.children if child is None else child,
                      transforms.stamps_ns, transforms.values, authority, is_static)


def batch_frames(
    transforms: Transforms | Sequence[str] | str, *args: Any, **kwargs: Any,
) -> tuple[Collection[str], Collection[str]]:
    """The parent and child frame ids a ``set_transforms`` call (either form) names, as sets
    (what a ``Buffer`` re-checks its waiting requests against)."""
    if isinstance(transforms, Transforms):
        parent, child = transforms.shared_parent, transforms.shared_child
        return ({parent} if parent is not None else set(transforms.parents),
                {child} if child is not None else set(transforms.children))
    children = args[0] if args else kwargs["children"]
    return (({transforms} if isinstance(transforms, str) else set(transforms)),
            ({children} if isinstance(children, str) else set(children)))


def store_rows(
    core: BufferCore, parents: Sequence[str] | str, children: Sequence[str] | str, stamps_ns: Any,
    values: Any, authority: Any, is_static: bool = False,
) -> BatchResult:
    """``set_transforms``' work for the column form; the caller notifies what was stored."""
    names_p: list[str]
    names_c: list[str]
    if type(parents) is str and type(children) is str:
        # One frame's trajectory (an (N, 7) array with N stamps): its names read once.
        try:
            result: BatchResult = core.kernel.insert_trajectory(
                parents, children, stamps_ns, values, authority, is_static)
        except (TypeError, ValueError):
            pass  # arrays of other types or shapes: converted or refused below
        else:
            return _with_row_errors(result, parents, children, stamps_ns, values)
    if type(parents) is list and type(children) is list:
        names_p, names_c = parents, children
    else:
        n = _row_count(values, stamps_ns)
        names_p, names_c = _names(parents, n), _names(children, n)
    # The listener's, the bag loader's and the array form (lists, int64 and float64 arrays):
    # straight into the kernel, which refuses anything else before storing a row.
    try:
        result = core.kernel.insert_rows(names_p, names_c, stamps_ns, values, authority, is_static)
    except (TypeError, ValueError):
        return _store_converted(core, names_p, names_c, stamps_ns, values, authority, is_static)
    return _with_row_errors(result, names_p, names_c, stamps_ns, values)


def _with_row_errors(
    result: BatchResult, parents: Sequence[str] | str, children: Sequence[str] | str,
    stamps_ns: Any, values: Any,
) -> BatchResult:
    """The kernel's result, its invalid list (indices of refused rows) made (index, exception)."""
    stored, old, refused = result
    if not refused:
        return result
    return BatchResult(stored, old, [
        (k, _row_error(parents if isinstance(parents, str) else parents[k],
                       children if isinstance(children, str) else children[k],
                       values[k], stamps_ns[k]))
        for k in cast("list[int]", refused)
    ])


def _store_converted(
    core: BufferCore, parents: Any, children: Any, stamps_ns: Any, values: Any, authority: Any,
    is_static: bool,
) -> BatchResult:
    """Any other form: converted (or refused), then stored."""
    try:
        values = np.ascontiguousarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentException(
            "set_transforms needs a float array of values, shape (N, 7): %s" % exc
        ) from None
    n = len(parents)
    if values.ndim != 2 or values.shape[1] != 7 or values.shape[0] != n:
        raise InvalidArgumentException(
            "set_transforms needs values of shape (N, 7) = (%d, 7), got %s" % (n, values.shape)
        )
    if len(children) != n or len(stamps_ns) != n:
        raise InvalidArgumentException(
            "set_transforms needs as many children (%d) and stamps (%d) as parents (%d)"
            % (len(children), len(stamps_ns), n)
        )
    stamps = np.asarray(stamps_ns)
    if n and stamps.dtype.kind not in "iu":
        raise InvalidArgumentException(
            "set_transforms needs integer nanosecond stamps, got dtype %s" % stamps.dtype
        )
    if n and stamps.dtype.kind == "u" and int(stamps.max()) > STAMP_MAX:
        return _store_one_by_one(core, parents, children, stamps.tolist(), values, authority, is_static)
    stamps = np.ascontiguousarray(stamps, dtype=np.int64)
    codes = np.empty(n, dtype=np.int32)
    parents = parents if parents.__class__ is list else list(parents)
    children = children if children.__class__ is list else list(children)
    stored, old = core.kernel.insert_batch(parents, children, stamps, values, authority, is_static, codes)
    invalid = []
    if stored + old < n:
        for k in np.flatnonzero(codes < 0).tolist():
            invalid.append((k, _row_error(parents[k], children[k], values[k], stamps[k])))
    return BatchResult(stored, old, invalid)


def _store_one_by_one(
    core: BufferCore, parents: Any, children: Any, stamps: list[int], values: np.ndarray,
    authority: Any, is_static: bool,
) -> BatchResult:
    """Row by row (stamps beyond int64 in an unsigned array)."""
    stored = old = 0
    invalid: list[tuple[int, InvalidArgumentException]] = []
    for k, row in enumerate(values.tolist()):
        tx, ty, tz, qx, qy, qz, qw = row  # values is (N, 7): checked by the caller
        try:
            if core._store(parents[k], children[k], stamps[k], tx, ty, tz, qx, qy, qz, qw,
                           authority, is_static):
                stored += 1
            else:
                old += 1
        except InvalidArgumentException as exc:
            invalid.append((k, exc))
    return BatchResult(stored, old, invalid)


def _row_error(parent: Any, child: Any, row: Any, stamp: Any) -> InvalidArgumentException:
    """The exception naming why a batch row was refused."""
    try:
        check_insert(parent, child, np.asarray(row).tolist(), int(stamp))
    except InvalidArgumentException as exc:
        return exc
    return InvalidArgumentException(
        "transform of frame %r (parent %r) is invalid" % (child, parent)
    )


class CdrInsert(NamedTuple):
    """What ``insert_cdr`` did: rows stored, rows refused as too old, and one record per
    sample, int64 ``(S, 9)``: ``[status, transforms, where, stored, old, invalid, first invalid
    row, its InsertResult, first row's stamp]``. Status 0: decoded (its valid rows stored);
    ``CDR_UNKNOWN_FRAMES``: a row names a frame id its ``FrameIds`` has not admitted (row
    ``where``; nothing of it stored); else the decoder's refusal (``cdr_error`` words it)."""

    stored: int
    old: int
    samples: npt.NDArray[np.int64]


def insert_cdr(
    core: BufferCore, samples: Sequence[Any], frame_ids: Sequence[FrameIds | None],
    authority: str, is_static: bool = False, max_chars: int = 0,
) -> CdrInsert:
    """Decode TFMessage CDR samples (bytes, header included) and store their rows, the GIL
    released for all of it. ``frame_ids[k]``: sample k's frame ids as a ``FrameIds`` (only
    the ids it admitted, prefixed with its prefix, as the fleet names a robot's frames) or
    None (the ids as sent). ``max_chars``: samples with a longer frame id are refused.
    On a ``Buffer``: under its lock, waking the waits and requests the rows satisfy."""
    args = (list(samples), list(frame_ids), authority, is_static, max_chars)
    locked = getattr(core, "_insert", None)  # a Buffer's (buffer.py): its lock and waiters
    if locked is None:
        return _store_cdr(core, *args)
    return cast(CdrInsert, locked(_store_cdr, args, lambda: _cdr_frames(samples, frame_ids)))


def _store_cdr(
    core: BufferCore, samples: list[Any], frame_ids: list[FrameIds | None], authority: str,
    is_static: bool, max_chars: int,
) -> CdrInsert:
    stored, old, records = core.kernel.insert_cdr(samples, frame_ids, authority, is_static, max_chars)
    if stored:
        core._notify_new_data()
    return CdrInsert(stored, old, records)


def _cdr_frames(
    samples: Sequence[Any], frame_ids: Sequence[FrameIds | None],
) -> tuple[Collection[str], Collection[str]]:
    """The frame ids the samples name, as stored, for Buffer's requests and listeners: every
    name their FrameIds admitted (a superset: it only re-checks more requests), else decoded."""
    if all(ids is not None for ids in frame_ids):
        names: set[str] = set()
        seen: set[int] = set()
        for ids in frame_ids:
            if id(ids) not in seen:
                seen.add(id(ids))
                names.update(cast(FrameIds, ids).names())
        return names, names
    parents: set[str] = set()
    children: set[str] = set()
    for data, ids in zip(samples, frame_ids):
        decoded = decode_tf_cdr(data, 0, None, None if ids is None else ids.prefix)
        if len(decoded) == 4:
            parents.update(decoded[0])
            children.update(decoded[1])
    return parents, children


def lookup_transforms(
    core: BufferCore, target_frame: str, source_frame: str, times: Any,
) -> npt.NDArray[np.float64]:
    """Batch ``lookup_transform``: ``(N, 4, 4)`` matrices mapping data in
    ``source_frame`` into ``target_frame`` at each of N times (seconds as float or int,
    or Times; zero = the latest common time).

    One compiled walk per stamp, the same as ``lookup_transform``'s. Raises what
    ``lookup_transform`` would raise for the first stamp (in the order given) that
    cannot be looked up; times beyond 64-bit nanoseconds are never wrapped.
    """
    if times.__class__ is np.ndarray and times.dtype == np.float64 and times.ndim == 1:
        # Float seconds, the common form: converted in the kernel as it goes.
        try:
            return core.kernel.lookup_many_seconds(target_frame, source_frame, times)
        except KernelError as exc:
            raise query_error(core._tree, exc.args, (target_frame, source_frame)) from None
        except (TypeError, ValueError):
            pass  # not finite, beyond int64 ns, not contiguous: converted below
    try:
        ts, huge = times_to_nanoseconds(times)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentException("lookup_transforms: %s" % exc) from None
    for name, argument in ((target_frame, "target_frame"), (source_frame, "source_frame")):
        if not isinstance(name, str):
            raise frame_error(name, argument)
    try:
        return core.kernel.lookup_many(target_frame, source_frame, ts)
    except KernelError as exc:
        raise query_error(
            core._tree, exc.args, (target_frame, source_frame), requested=huge.get(exc.args[7])
        ) from None
