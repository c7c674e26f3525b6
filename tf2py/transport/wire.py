"""The one wire format of tf2py: msgpack, versioned, bounded. Used by the bus and the server.

A /tf or /tf_static message body (see docs/protocol.md) is a msgpack array::

    [version: int, authority: str, parents: [str, ...], children: [str, ...],
     stamps: bin (N int64 little-endian, nanoseconds),
     values: bin (N x 7 float64 little-endian: tx, ty, tz, qx, qy, qz, qw)]

Version 2 (what ``TransformBroadcaster`` sends on /tf) appends ``stream: uint`` (the sending
broadcaster's random id) and ``sequence: uint`` (0, 1, 2, ... per stream), so a listener
counts the messages lost on the way (ZeroMQ drops at its queue bounds silently) as gaps.

It is columnar so that a listener decodes it with one ``msgpack.unpackb`` and two
``numpy.frombuffer`` calls into one ``tf2py.Transforms`` (``rows_of``), what
``Buffer.set_transforms`` takes: no object per transform on the listener path.

Generic helpers for other protocols (the buffer server): ``pack``, ``unpack``,
``transform_to_wire``, ``transform_from_wire``; every decoding error is a ``WireError``.

This module holds the transforms-message codec; the versions, topics, bounds, errors and generic
helpers live in ``wire_common`` and are re-exported here. The ZeroMQ bus's /clock codec is
``zmq/wire_clock.py``.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterable
from typing import NoReturn, cast

import numpy as np
import numpy.typing as npt

from ..buffer.messages import TransformStamped
from ..buffer.transforms import Transforms, message_rows
from .wire_common import (
    MAX_FRAME_ID_LENGTH,
    MAX_MESSAGE_BYTES,
    MAX_PIECE_BYTES,
    MAX_STRING,
    MAX_TRANSFORMS,
    NEWEST_VERSION,
    SEQUENCED_VERSION,
    TOPIC_STATIC_LATCH,
    TOPIC_TF,
    TOPIC_TF_STATIC,
    WIRE_VERSION,
    Body,
    FrameIdTooLongError,
    UnknownVersionError,
    WireBlocks,
    WireError,
    check_message_size,
    describe,
    pack,
    packb,
    stamp_ns,
    transform_from_wire,
    transform_to_wire,
    undecodable,
    unpack,
    unpackb,
)

__all__ = [
    "WIRE_VERSION",
    "SEQUENCED_VERSION",
    "NEWEST_VERSION",
    "decode_sequenced",
    "sequenced",
    "pack_uint64",
    "WireError",
    "UnknownVersionError",
    "MAX_MESSAGE_BYTES",
    "MAX_TRANSFORMS",
    "MAX_FRAME_ID_LENGTH",
    "MAX_PIECE_BYTES",
    "MAX_STRING",
    "Body",
    "WireBlocks",
    "FrameIdTooLongError",
    "check_message_size",
    "split_body",
    "TOPIC_TF",
    "TOPIC_TF_STATIC",
    "TOPIC_STATIC_LATCH",
    "pack",
    "unpack",
    "transform_to_wire",
    "transform_from_wire",
    "encode_transforms",
    "encode_arrays",
    "decode_columns",
    "decode_transforms",
    "rows_of",
    "default_authority",
]

_LITTLE = sys.byteorder == "little"
_F8 = np.dtype("<f8")
_I8 = np.dtype("<i8")


_pack_stamp = struct.Struct("<q").pack
_pack_values = struct.Struct("<7d").pack


def _encode_one(ts: TransformStamped, authority: str) -> bytes:
    h = ts.header
    t = ts.transform.translation
    r = ts.transform.rotation
    parent = h.frame_id
    child = ts.child_frame_id
    if parent.__class__ is not str or child.__class__ is not str:
        raise TypeError(f"frame ids must be strings, got {parent!r} and {child!r}")
    if len(parent) > MAX_FRAME_ID_LENGTH or len(child) > MAX_FRAME_ID_LENGTH:
        _long_id(parent, child)
    try:
        stamps_bin = _pack_stamp(stamp_ns(h.stamp))
        values_bin = _pack_values(t.x, t.y, t.z, r.x, r.y, r.z, r.w)
    except struct.error as exc:
        raise TypeError(f"transform values must be numbers and stamps int64 ns: {exc}") from None
    return packb([WIRE_VERSION, authority, [parent], [child], stamps_bin, values_bin])


def _long_id(parent: str, child: str) -> NoReturn:
    name, value = ("frame_id", parent) if len(parent) > MAX_FRAME_ID_LENGTH else (
        "child_frame_id", child)
    raise ValueError(
        f"{name} {value[:32]!r}... has {len(value)} characters, over the bus limit of "
        f"{MAX_FRAME_ID_LENGTH}: listeners would drop it")


def encode_transforms(
    transforms: TransformStamped | Iterable[TransformStamped], authority: str
) -> bytes:
    """One message body holding ``transforms`` (a TransformStamped or an iterable of them)."""
    if type(transforms) is TransformStamped:
        return _encode_one(transforms, authority)
    items: Iterable[TransformStamped]
    # One transform of a subclass, or of a class shaped alike; else an iterable of them.
    if isinstance(transforms, TransformStamped) or hasattr(transforms, "child_frame_id"):
        items = (cast(TransformStamped, transforms),)
    else:
        items = transforms
    parents, children, stamps, flat = message_rows(items, "send_transform")
    n = len(parents)
    for name in parents:
        if name.__class__ is not str:
            raise TypeError(f"frame ids must be strings, got {name!r}")
    for name in children:
        if name.__class__ is not str:
            raise TypeError(f"frame ids must be strings, got {name!r}")
    if n and max(max(map(len, parents)), max(map(len, children))) > MAX_FRAME_ID_LENGTH:
        for parent, child in zip(parents, children):
            if len(parent) > MAX_FRAME_ID_LENGTH or len(child) > MAX_FRAME_ID_LENGTH:
                _long_id(parent, child)
    try:
        stamps_bin = struct.pack(f"<{n}q", *stamps)
        values_bin = struct.pack(f"<{7 * n}d", *flat)
    except struct.error as exc:
        raise TypeError(f"transform values must be numbers and stamps int64 ns: {exc}") from None
    return packb([WIRE_VERSION, authority, parents, children, stamps_bin, values_bin])


def encode_arrays(
    parents: Iterable[str],
    children: Iterable[str],
    stamps_ns: npt.ArrayLike,
    values: npt.ArrayLike,
    authority: str,
) -> bytes:
    """One message body from columns (``values`` (N, 7) float64 rows tx..qw)."""
    parent_list = list(parents)
    child_list = list(children)
    n = len(parent_list)
    stamps = np.ascontiguousarray(stamps_ns, dtype=_I8).reshape(-1)
    vals = np.ascontiguousarray(values, dtype=_F8).reshape(-1, 7)
    if len(child_list) != n or stamps.shape[0] != n or vals.shape[0] != n:
        raise ValueError("parents, children, stamps_ns and values must have the same length")
    return packb(
        [WIRE_VERSION, authority, parent_list, child_list, stamps.tobytes(), vals.tobytes()]
    )


_join = "".join


def decode_columns(data: Body) -> WireBlocks:
    """``(authority, parents, children, stamps_bin, values_bin)`` of a /tf or /tf_static
    message body (version 1, or version 2 with its sequence), validated (types, counts, block
    sizes) but not converted: the raw blocks are N little-endian int64 stamps and N x 7
    little-endian float64 values.

    Raises ``UnknownVersionError`` for a newer version (checked before anything else, so a
    future layout is never misread) and ``WireError`` for anything else that is not a valid
    message. Values are not validated here (NaN, empty ids): the buffer refuses those rows.
    """
    return _columns(_unpack_body(data))


def decode_sequenced(data: Body) -> tuple[WireBlocks, int | None, int]:
    """``(columns, stream, sequence)`` of a message body: ``columns`` as ``decode_columns``
    returns them; ``stream`` and ``sequence`` of a version-2 message (its sender's stream id
    and the message's number in it), ``(None, 0)`` for version 1. Errors as
    ``decode_columns``; a ``FrameIdTooLongError`` carries the pair in ``.sequence``."""
    obj = _unpack_body(data)
    try:
        columns = _columns(obj)
    except FrameIdTooLongError as exc:
        # _columns refused anything but a 6- or 8-item list before looking at frame ids
        items = cast("list[int]", obj)
        exc.sequence = (items[6], items[7]) if len(items) == 8 else (None, 0)
        raise
    items = cast("list[int]", obj)  # a valid message: a list of 6, or 8 ending in two ints
    if len(items) == 8:
        return columns, items[6], items[7]
    return columns, None, 0


_UINT64 = struct.Struct(">BQ").pack


def pack_uint64(value: int) -> bytes:
    """msgpack's uint 64 encoding of ``value`` (always 9 bytes)."""
    return _UINT64(0xCF, value)


def sequenced(body: bytes, stream_packed: bytes, sequence: int) -> bytes:
    """The version-1 ``body`` (as ``encode_transforms``/``encode_arrays``/``split_body`` make
    it) as a version-2 body numbered ``sequence`` in the stream ``stream_packed`` (a
    msgpack-packed unsigned integer, e.g. ``pack_uint64(stream_id)``): the array grows from 6
    to 8 fields and the version byte becomes 2; the rest is copied as is."""
    return b"\x98\x02" + body[2:] + stream_packed + _UINT64(0xCF, sequence)


def _unpack_body(data: Body) -> object:
    if len(data) > MAX_MESSAGE_BYTES:
        raise WireError(
            f"message of {len(data)} bytes exceeds {MAX_MESSAGE_BYTES} bytes", "too_large"
        )
    try:
        # msgpack bounds every length by the size of the input, itself bounded above.
        return unpackb(data)
    except Exception as exc:
        raise WireError(undecodable(exc), "garbage") from None


def _columns(obj: object) -> WireBlocks:
    # Fast path: a well-formed message with one transform (the common /tf case).
    if type(obj) is list and (len(obj) == 6 or len(obj) == 8):
        version, authority, parents, children, stamps_bin, values_bin = obj[:6]
        if (
            (version == 1 and len(obj) == 6 or version == 2 and len(obj) == 8
             and obj[6].__class__ is int and obj[7].__class__ is int
             and obj[6] >= 0 and obj[7] >= 0)  # the checks a longer message gets below
            and version.__class__ is int
            and authority.__class__ is str
            and parents.__class__ is list
            and children.__class__ is list
            and len(parents) == 1
            and len(children) == 1
            and parents[0].__class__ is str
            and children[0].__class__ is str
            and stamps_bin.__class__ is bytes
            and values_bin.__class__ is bytes
            and len(stamps_bin) == 8
            and len(values_bin) == 56
            and len(parents[0]) <= MAX_FRAME_ID_LENGTH
            and len(children[0]) <= MAX_FRAME_ID_LENGTH
            and len(authority) <= MAX_FRAME_ID_LENGTH
        ):
            return authority, parents, children, stamps_bin, values_bin
    if type(obj) is not list or not obj:
        raise WireError(f"a transforms message is a msgpack array, got {describe(obj)}")
    version = obj[0]
    if version.__class__ is not int:
        raise WireError(f"wire version must be an integer, got {type(version).__name__}")
    if version != WIRE_VERSION and version != SEQUENCED_VERSION:
        if version > SEQUENCED_VERSION:
            raise UnknownVersionError(version)
        raise WireError(f"wire version {version} is not supported")
    fields = 6 if version == WIRE_VERSION else 8
    if len(obj) != fields:
        raise WireError(f"a version-{version} transforms message has {fields} fields, "
                        f"got {len(obj)}")
    if fields == 8 and not (obj[6].__class__ is int and obj[7].__class__ is int
                            and obj[6] >= 0 and obj[7] >= 0):
        raise WireError("stream and sequence must be unsigned integers")
    _, authority, parents, children, stamps_bin, values_bin = obj[:6]
    if authority.__class__ is not str:
        raise WireError("authority must be a string")
    if parents.__class__ is not list or children.__class__ is not list:
        raise WireError("parents and children must be arrays of strings")
    n = len(parents)
    if len(children) != n:
        raise WireError(f"{n} parents but {len(children)} children")
    if n > MAX_TRANSFORMS:
        raise WireError(f"{n} transforms exceed the limit of {MAX_TRANSFORMS}")
    if stamps_bin.__class__ is not bytes or values_bin.__class__ is not bytes:
        raise WireError("stamps and values must be binary blocks")
    if len(stamps_bin) != 8 * n or len(values_bin) != 56 * n:
        raise WireError(
            f"{n} transforms need 8*N={8 * n} stamp bytes and 56*N={56 * n} value bytes, "
            f"got {len(stamps_bin)} and {len(values_bin)}"
        )
    try:
        # One C loop per list: str.join refuses anything but strings, and msgpack decodes
        # strings as exactly str (never a subclass).
        _join(parents)
        _join(children)
    except TypeError:
        raise WireError("frame ids must be strings") from None
    if len(authority) > MAX_FRAME_ID_LENGTH:
        raise FrameIdTooLongError(
            f"authority of {len(authority)} characters exceeds {MAX_FRAME_ID_LENGTH}", n)
    if n and max(max(map(len, parents)), max(map(len, children))) > MAX_FRAME_ID_LENGTH:
        return _without_long_ids(authority, parents, children, stamps_bin, values_bin)
    return authority, parents, children, stamps_bin, values_bin


def _without_long_ids(
    authority: str, parents: list[str], children: list[str], stamps_bin: bytes, values_bin: bytes
) -> NoReturn:
    limit = MAX_FRAME_ID_LENGTH
    keep = [i for i in range(len(parents))
            if len(parents[i]) <= limit and len(children[i]) <= limit]
    dropped = len(parents) - len(keep)
    first = next(i for i in range(len(parents))
                 if len(parents[i]) > limit or len(children[i]) > limit)
    message = (f"transform {first} from {authority}: a frame id of "
               f"{max(len(parents[first]), len(children[first]))} characters exceeds "
               f"{limit} ({dropped} such transform(s) dropped)")
    if not keep:
        raise FrameIdTooLongError(message, dropped)
    stamps = np.frombuffer(stamps_bin, dtype=_I8)[keep]
    values = np.frombuffer(values_bin, dtype=_F8).reshape(-1, 7)[keep]
    columns: WireBlocks = (authority, [parents[i] for i in keep], [children[i] for i in keep],
               stamps.tobytes(), values.tobytes())
    raise FrameIdTooLongError(message, dropped, columns)


def decode_transforms(data: Body) -> tuple[str, Transforms]:
    """``(authority, transforms)`` of a /tf or /tf_static message body (see
    ``decode_columns`` for the errors)."""
    return rows_of(decode_columns(data))


def rows_of(blocks: WireBlocks) -> tuple[str, Transforms]:
    """``(authority, transforms)`` of a decoded message's blocks: the stamps and values are
    views of the message's bytes (read-only), nothing is copied."""
    authority, parents, children, stamps_bin, values_bin = blocks
    return authority, Transforms._of(
        parents, children, np.frombuffer(stamps_bin, dtype=_I8),
        np.frombuffer(values_bin, dtype=_F8).reshape(len(parents), 7))


def split_body(data: bytes, max_bytes: int) -> list[bytes]:
    """``data`` (a valid /tf message body) as bodies of at most about ``max_bytes`` each,
    the same rows in the same order, same authority: how the core keeps every message it
    queues for a subscriber small. Returns ``[data]`` when it is small enough already;
    raises ``WireError`` if it cannot be decoded. A single row larger than ``max_bytes``
    raises ``WireError`` (cause ``too_large``)."""
    if len(data) <= max_bytes:
        return [data]
    try:
        authority, parents, children, stamps_bin, values_bin = decode_columns(data)
    except FrameIdTooLongError as exc:
        if exc.columns is None:
            raise
        authority, parents, children, stamps_bin, values_bin = exc.columns
    n = len(parents)
    budget = max_bytes - 64 - len(authority.encode("utf-8", "surrogatepass"))
    out: list[tuple[int, int]] = []
    start = 0
    size = 0
    for i in range(n):
        row = 74 + len(parents[i]) * 4 + len(children[i]) * 4 if not (
            parents[i].isascii() and children[i].isascii()) else (
            74 + len(parents[i]) + len(children[i]))
        if i > start and size + row > budget:
            out.append((start, i))
            start, size = i, 0
        size += row
    out.append((start, n))
    pieces = [
        packb([WIRE_VERSION, authority, parents[a:b], children[a:b],
                stamps_bin[8 * a:8 * b], values_bin[56 * a:56 * b]])
        for a, b in out
    ]
    for (a, _b), piece in zip(out, pieces):
        if len(piece) > max_bytes:
            raise WireError(
                f"transform {a} ({children[a][:32]!r}) alone is {len(piece)} bytes, over the "
                f"bus message limit of {max_bytes} bytes (frame ids too long)", "too_large")
    return pieces


def authority_or_default(authority: object) -> str:
    """The sender name a broadcaster puts on messages: ``authority``, else
    ``default_authority()``. Listeners drop a message whose authority is not a string, so a
    broadcaster refuses one (TypeError)."""
    if authority is None or authority == "":
        return default_authority()
    if not isinstance(authority, str):
        raise TypeError(f"authority must be a string, got {type(authority).__name__}")
    return str(authority)


def default_authority() -> str:
    """``<program>@<host>:<pid>``: who sent a message, as tf2's yaml ``broadcaster`` shows."""
    import os
    import socket

    program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    if program in ("", "-c", "-m"):
        program = "python"
    return f"{program}@{socket.gethostname()}:{os.getpid()}"
