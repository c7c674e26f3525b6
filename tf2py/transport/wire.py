"""The one wire format of tf2py: msgpack, versioned, bounded. Used by the bus and the server.

A /tf or /tf_static message body (see docs/protocol.md) is a msgpack array::

    [version: int, authority: str, parents: [str, ...], children: [str, ...],
     stamps: bin (N int64 little-endian, nanoseconds),
     values: bin (N x 7 float64 little-endian: tx, ty, tz, qx, qy, qz, qw)]

Version 2 (what ``TransformBroadcaster`` sends on /tf) appends ``stream: uint`` (the sending
broadcaster's random id) and ``sequence: uint`` (0, 1, 2, ... per stream), so a listener
counts the messages lost on the way (ZeroMQ drops at its queue bounds silently) as gaps.

It is columnar so that a listener decodes it with one ``msgpack.unpackb`` and two
``numpy.frombuffer`` calls into exactly what ``Buffer.set_transforms`` takes: no object per
transform on the listener path.

Generic helpers for other protocols (the buffer server): ``pack``, ``unpack``,
``transform_to_wire``, ``transform_from_wire``; every decoding error is a ``WireError``.
"""

from __future__ import annotations

import struct
import sys
from typing import NamedTuple

import msgpack
import numpy as np

from ..buffer.messages import Header, Quaternion, Transform, TransformStamped, Vector3
from ..buffer.time import Time, to_nanoseconds

__all__ = [
    "WIRE_VERSION",
    "SEQUENCED_VERSION",
    "NEWEST_VERSION",
    "decode_sequenced",
    "sequenced",
    "WireError",
    "UnknownVersionError",
    "MAX_MESSAGE_BYTES",
    "MAX_TRANSFORMS",
    "MAX_FRAME_ID_LENGTH",
    "MAX_PIECE_BYTES",
    "FrameIdTooLongError",
    "check_message_size",
    "split_body",
    "TOPIC_TF",
    "TOPIC_TF_STATIC",
    "TOPIC_STATIC_LATCH",
    "TransformArrays",
    "pack",
    "unpack",
    "transform_to_wire",
    "transform_from_wire",
    "encode_transforms",
    "encode_arrays",
    "decode_columns",
    "decode_transforms",
    "arrays_to_transforms",
    "default_authority",
    "TOPIC_CLOCK",
    "CLOCK_FRAME_MAX",
    "encode_clock",
    "decode_clock",
    "clock_message",
    "decode_clock_message",
]

#: Version of every envelope this module writes; a reader drops messages of a newer version.
WIRE_VERSION = 1
#: A /tf message with its sender's stream id and sequence number appended (what
#: TransformBroadcaster sends, so listeners count messages lost on the way as gaps).
SEQUENCED_VERSION = 2
#: The newest transforms-message version this module reads.
NEWEST_VERSION = SEQUENCED_VERSION

#: Topic frames (the first ZeroMQ frame of a bus message). Subscribers receive /tf and
#: /tf_static; static broadcasters send to the core on TOPIC_STATIC_LATCH, which the core
#: latches and re-publishes as /tf_static (never forwarded as is).
TOPIC_TF = b"/tf"
TOPIC_TF_STATIC = b"/tf_static"
TOPIC_STATIC_LATCH = b"latch/tf_static"

#: Upper bounds: a message larger than this, or holding more transforms, is refused.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_TRANSFORMS = 1_000_000
MAX_STRING = 64 * 1024
#: Largest message body on the bus (the core refuses bigger ones: ZMQ_MAXMSGSIZE): a
#: broadcaster sends a bigger list as several messages of whole transforms (``split_body``).
MAX_PIECE_BYTES = 16 * 1024
#: Longest frame id (and authority) a bus reader accepts, in characters: the buffer server's
#: limit too (tf2py.server.protocol.MAX_FRAME_ID_LENGTH). Longer ids are dropped and counted.
MAX_FRAME_ID_LENGTH = 4096

_LITTLE = sys.byteorder == "little"
_F8 = np.dtype("<f8")
_I8 = np.dtype("<i8")


class WireError(ValueError):
    """Bytes that are not a valid tf2py message.

    ``cause`` names the kind, for counters: ``"garbage"`` (not msgpack), ``"shape"`` (msgpack
    of the wrong shape or types), ``"too_large"`` (over the bounds), ``"version"``.
    """

    def __init__(self, message: str, cause: str = "shape"):
        super().__init__(message)
        self.cause = cause


class FrameIdTooLongError(WireError):
    """Some rows of a message have a frame id over ``MAX_FRAME_ID_LENGTH`` characters.

    ``dropped`` is how many rows were refused; ``columns`` holds the message without them (as
    ``decode_columns`` returns it), or None when no row is left (or the authority itself is
    too long)."""

    def __init__(self, message: str, dropped: int, columns=None):
        super().__init__(message, cause="frame_id_too_long")
        self.dropped = dropped
        self.columns = columns
        #: (stream, sequence) of the message when it was decoded by ``decode_sequenced``.
        self.sequence: tuple[int | None, int] = (None, 0)


def check_message_size(body, what: str = "message") -> None:
    """Raise ValueError when ``body`` is over ``MAX_MESSAGE_BYTES`` (readers refuse it), so a
    sender learns it at once instead of the message vanishing at the core."""
    if len(body) > MAX_MESSAGE_BYTES:
        raise ValueError(
            f"{what} of {len(body)} bytes exceeds the bus limit of {MAX_MESSAGE_BYTES} bytes "
            f"(64 MiB); send fewer transforms per call"
        )


class UnknownVersionError(WireError):
    """A message written by a newer wire version than this reader knows."""

    def __init__(self, version):
        super().__init__(
            f"message has wire version {version!r}, this tf2py reads up to version "
            f"{WIRE_VERSION}; upgrade tf2py on this host",
            cause="version",
        )
        self.version = version


_packb = msgpack.packb  # default use_bin_type=True: str as str, bytes as bin
_unpackb = msgpack.unpackb  # defaults: raw=False, strict_map_key, lengths bounded by input

_UNPACK_LIMITS = dict(
    raw=False,
    strict_map_key=True,
    use_list=True,
    max_str_len=MAX_STRING,
    max_bin_len=MAX_MESSAGE_BYTES,
    max_array_len=MAX_TRANSFORMS * 10 + 16,
    max_map_len=1_000_000,
    max_ext_len=0,
)


def _undecodable(exc: Exception) -> str:
    detail = str(exc)
    return f"not a msgpack message ({type(exc).__name__}{': ' + detail if detail else ''})"


def pack(obj) -> bytes:
    """msgpack bytes of ``obj`` (str as str, bytes as bin)."""
    try:
        return msgpack.packb(obj, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise WireError(f"cannot encode {type(obj).__name__}: {exc}") from exc


def unpack(data) -> object:
    """The object in msgpack ``data``; raises ``WireError`` on garbage or on sizes over the
    bounds (``MAX_MESSAGE_BYTES``, ``MAX_STRING`` per string)."""
    if len(data) > MAX_MESSAGE_BYTES:
        raise WireError(
            f"message of {len(data)} bytes exceeds {MAX_MESSAGE_BYTES} bytes", "too_large"
        )
    try:
        return msgpack.unpackb(data, **_UNPACK_LIMITS)
    except Exception as exc:  # msgpack raises many types for garbage (ValueError, TypeError, ...)
        raise WireError(_undecodable(exc), "garbage") from None


def _stamp_ns(stamp) -> int:
    return stamp._ns if stamp.__class__ is Time else to_nanoseconds(stamp, "stamp")


def transform_to_wire(ts: TransformStamped) -> list:
    """``[parent, child, stamp_ns, tx, ty, tz, qx, qy, qz, qw]`` for a TransformStamped."""
    h = ts.header
    t = ts.transform.translation
    r = ts.transform.rotation
    return [
        h.frame_id,
        ts.child_frame_id,
        _stamp_ns(h.stamp),
        float(t.x), float(t.y), float(t.z),
        float(r.x), float(r.y), float(r.z), float(r.w),
    ]


def transform_from_wire(obj) -> TransformStamped:
    """The TransformStamped of a ``transform_to_wire`` list; raises ``WireError`` on a wrong
    shape or type (values are not validated: NaN travels, the buffer refuses it)."""
    if obj.__class__ is not list or len(obj) != 10:
        raise WireError(f"a transform is a list of 10 items, got {_describe(obj)}")
    parent, child, stamp = obj[0], obj[1], obj[2]
    if parent.__class__ is not str or child.__class__ is not str:
        raise WireError("transform frame ids must be strings")
    if stamp.__class__ is not int:
        raise WireError("transform stamp must be integer nanoseconds")
    try:
        v = [float(x) for x in obj[3:]]
    except (TypeError, ValueError):
        raise WireError("transform values must be numbers") from None
    for x in obj[3:]:
        if x.__class__ is bool:
            raise WireError("transform values must be numbers")
    return TransformStamped(
        Header(Time.from_nanoseconds(stamp), parent),
        child,
        Transform(Vector3(v[0], v[1], v[2]), Quaternion(v[3], v[4], v[5], v[6])),
    )


def _describe(obj) -> str:
    if obj.__class__ is list:
        return f"a list of {len(obj)} items"
    return type(obj).__name__


class TransformArrays(NamedTuple):
    """A decoded /tf or /tf_static message, columnar: what ``Buffer.set_transforms`` takes."""

    authority: str
    parents: list  # list[str], N
    children: list  # list[str], N
    stamps_ns: np.ndarray  # int64 (N,)
    values: np.ndarray  # float64 (N, 7): tx, ty, tz, qx, qy, qz, qw


_pack_stamp = struct.Struct("<q").pack
_pack_values = struct.Struct("<7d").pack


def _encode_one(ts, authority: str) -> bytes:
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
        stamps_bin = _pack_stamp(_stamp_ns(h.stamp))
        values_bin = _pack_values(t.x, t.y, t.z, r.x, r.y, r.z, r.w)
    except struct.error as exc:
        raise TypeError(f"transform values must be numbers and stamps int64 ns: {exc}") from None
    return _packb([WIRE_VERSION, authority, [parent], [child], stamps_bin, values_bin])


def _long_id(parent: str, child: str):
    name, value = ("frame_id", parent) if len(parent) > MAX_FRAME_ID_LENGTH else (
        "child_frame_id", child)
    raise ValueError(
        f"{name} {value[:32]!r}... has {len(value)} characters, over the bus limit of "
        f"{MAX_FRAME_ID_LENGTH}: listeners would drop it")


def encode_transforms(transforms, authority: str) -> bytes:
    """One message body holding ``transforms`` (a TransformStamped or an iterable of them)."""
    if transforms.__class__ is TransformStamped:
        return _encode_one(transforms, authority)
    if hasattr(transforms, "child_frame_id"):  # one transform of a TransformStamped-like class
        transforms = (transforms,)
    parents = []
    children = []
    stamps = []
    flat = []
    add_parent = parents.append
    add_child = children.append
    add_stamp = stamps.append
    add_values = flat.extend
    try:
        for ts in transforms:
            h = ts.header
            transform = ts.transform
            t = transform.translation
            r = transform.rotation
            add_parent(h.frame_id)
            add_child(ts.child_frame_id)
            stamp = h.stamp
            add_stamp(stamp._ns if stamp.__class__ is Time else _stamp_ns(stamp))
            add_values((t.x, t.y, t.z, r.x, r.y, r.z, r.w))
    except AttributeError as exc:
        raise TypeError(f"send_transform takes TransformStamped objects: {exc}") from None
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
    return _packb([WIRE_VERSION, authority, parents, children, stamps_bin, values_bin])


def encode_arrays(parents, children, stamps_ns, values, authority: str) -> bytes:
    """One message body from columns (``values`` (N, 7) float64 rows tx..qw)."""
    parents = list(parents)
    children = list(children)
    n = len(parents)
    stamps = np.ascontiguousarray(stamps_ns, dtype=_I8).reshape(-1)
    vals = np.ascontiguousarray(values, dtype=_F8).reshape(-1, 7)
    if len(children) != n or stamps.shape[0] != n or vals.shape[0] != n:
        raise ValueError("parents, children, stamps_ns and values must have the same length")
    return msgpack.packb(
        [WIRE_VERSION, authority, parents, children, stamps.tobytes(), vals.tobytes()],
        use_bin_type=True,
    )


_join = "".join


def decode_columns(data) -> tuple[str, list, list, bytes, bytes]:
    """``(authority, parents, children, stamps_bin, values_bin)`` of a /tf or /tf_static
    message body (version 1, or version 2 with its sequence), validated (types, counts, block
    sizes) but not converted: the raw blocks are N little-endian int64 stamps and N x 7
    little-endian float64 values.

    Raises ``UnknownVersionError`` for a newer version (checked before anything else, so a
    future layout is never misread) and ``WireError`` for anything else that is not a valid
    message. Values are not validated here (NaN, empty ids): the buffer refuses those rows.
    """
    return _columns(_unpack_body(data))


def decode_sequenced(data) -> tuple[tuple[str, list, list, bytes, bytes], int | None, int]:
    """``(columns, stream, sequence)`` of a message body: ``columns`` as ``decode_columns``
    returns them; ``stream`` and ``sequence`` of a version-2 message (its sender's stream id
    and the message's number in it), ``(None, 0)`` for version 1. Errors as
    ``decode_columns``; a ``FrameIdTooLongError`` carries the pair in ``.sequence``."""
    obj = _unpack_body(data)
    try:
        columns = _columns(obj)
    except FrameIdTooLongError as exc:
        exc.sequence = (obj[6], obj[7]) if len(obj) == 8 else (None, 0)
        raise
    if len(obj) == 8:
        return columns, obj[6], obj[7]
    return columns, None, 0


def sequenced(body: bytes, stream_packed: bytes, sequence: int) -> bytes:
    """The version-1 ``body`` (as ``encode_transforms``/``encode_arrays``/``split_body`` make
    it) as a version-2 body numbered ``sequence`` in the stream ``stream_packed`` (a
    msgpack-packed unsigned integer, ``pack(stream_id)``): the array grows from 6 to 8 fields
    and the version byte becomes 2; the rest is copied as is."""
    return b"\x98\x02" + body[2:] + stream_packed + _packb(sequence)


def _unpack_body(data) -> object:
    if len(data) > MAX_MESSAGE_BYTES:
        raise WireError(
            f"message of {len(data)} bytes exceeds {MAX_MESSAGE_BYTES} bytes", "too_large"
        )
    try:
        # msgpack bounds every length by the size of the input, itself bounded above.
        return _unpackb(data)
    except Exception as exc:
        raise WireError(_undecodable(exc), "garbage") from None


def _columns(obj) -> tuple[str, list, list, bytes, bytes]:
    # Fast path: a well-formed message with one transform (the common /tf case).
    if obj.__class__ is list and (len(obj) == 6 or len(obj) == 8):
        version, authority, parents, children, stamps_bin, values_bin = obj[:6]
        if (
            (version == 1 and len(obj) == 6 or version == 2 and len(obj) == 8
             and obj[6].__class__ is int and obj[7].__class__ is int)
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
    if obj.__class__ is not list or not obj:
        raise WireError(f"a transforms message is a msgpack array, got {_describe(obj)}")
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


def _without_long_ids(authority, parents, children, stamps_bin, values_bin):
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
    columns = (authority, [parents[i] for i in keep], [children[i] for i in keep],
               stamps.tobytes(), values.tobytes())
    raise FrameIdTooLongError(message, dropped, columns)


def decode_transforms(data) -> TransformArrays:
    """The columns of a /tf or /tf_static message body as arrays (see ``decode_columns``
    for the errors): stamps int64 (N,), values float64 (N, 7)."""
    authority, parents, children, stamps_bin, values_bin = decode_columns(data)
    return TransformArrays(
        authority,
        parents,
        children,
        np.frombuffer(stamps_bin, dtype=_I8),
        np.frombuffer(values_bin, dtype=_F8).reshape(len(parents), 7),
    )


def split_body(data, max_bytes: int) -> list:
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
    out = []
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
        _packb([WIRE_VERSION, authority, parents[a:b], children[a:b],
                stamps_bin[8 * a:8 * b], values_bin[56 * a:56 * b]])
        for a, b in out
    ]
    for (a, b), piece in zip(out, pieces):
        if len(piece) > max_bytes:
            raise WireError(
                f"transform {a} ({children[a][:32]!r}) alone is {len(piece)} bytes, over the "
                f"bus message limit of {max_bytes} bytes (frame ids too long)", "too_large")
    return pieces


def arrays_to_transforms(arrays: TransformArrays) -> list[TransformStamped]:
    """TransformStamped objects of decoded columns (for tools, not the listener's hot path)."""
    out = []
    stamps = arrays.stamps_ns.tolist()
    rows = arrays.values.tolist()
    for parent, child, stamp, v in zip(arrays.parents, arrays.children, stamps, rows):
        out.append(
            TransformStamped(
                Header(Time.from_nanoseconds(stamp), parent),
                child,
                Transform(Vector3(v[0], v[1], v[2]), Quaternion(v[3], v[4], v[5], v[6])),
            )
        )
    return out


def authority_or_default(authority) -> str:
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


# -- /clock: simulated time (``tf2py play --clock``) -------------------------------------------

#: The simulated-time stream. Unlike /tf, a /clock message is ONE ZeroMQ frame: the topic
#: bytes followed at once by the body, a msgpack array ``[version: int, time_ns: int]`` (the
#: sender's current time, e.g. a bag's recording time, in integer nanoseconds). One frame
#: lets a follower keep only the latest tick (ZMQ_CONFLATE works on single-frame messages).
TOPIC_CLOCK = b"/clock"
#: The largest /clock frame (topic and body) that is read or passed on by the core.
CLOCK_BODY_MAX = 64
CLOCK_FRAME_MAX = len(TOPIC_CLOCK) + CLOCK_BODY_MAX

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def encode_clock(time_ns: int) -> bytes:
    """The body of one /clock message."""
    time_ns = int(time_ns)
    if not 0 <= time_ns <= _INT64_MAX:
        raise WireError(f"a clock time is 0..2^63-1 nanoseconds, got {time_ns}")
    return _packb([WIRE_VERSION, time_ns])


_CLOCK_PREFIX = b"\x92" + bytes([WIRE_VERSION]) + b"\xcf"  # [version, uint64]


def clock_message(time_ns: int) -> bytes:
    """The one frame of a /clock message: topic and body."""
    return TOPIC_CLOCK + encode_clock(time_ns)


def decode_clock_message(frame) -> int:
    """The time (integer nanoseconds) of a one-frame /clock message."""
    if frame[:len(TOPIC_CLOCK)] != TOPIC_CLOCK:
        raise WireError(f"not a /clock message (starts {bytes(frame[:16])!r})", "topic")
    return decode_clock(frame[len(TOPIC_CLOCK):])


def decode_clock(body) -> int:
    """The time (integer nanoseconds) of a /clock body; ``WireError`` for anything else."""
    if len(body) == 11 and body[:3] == _CLOCK_PREFIX:  # the usual shape: no msgpack call
        time_ns = int.from_bytes(body[3:], "big")
        if time_ns <= _INT64_MAX:
            return time_ns
    if len(body) > CLOCK_BODY_MAX:
        raise WireError(f"a clock message has at most {CLOCK_BODY_MAX} bytes, got {len(body)}",
                        "too_large")
    obj = unpack(body)
    if obj.__class__ is not list or len(obj) != 2:
        raise WireError(f"a clock message is [version, time_ns], got {_describe(obj)}")
    version, time_ns = obj
    if version.__class__ is not int:
        raise WireError("a clock message's version must be an integer")
    if version != WIRE_VERSION:
        if version > WIRE_VERSION:
            raise UnknownVersionError(version)
        raise WireError(f"unknown wire version {version}", "version")
    if time_ns.__class__ is not int or not 0 <= time_ns <= _INT64_MAX:
        raise WireError(f"a clock time must be integer nanoseconds 0..2^63-1, got {time_ns!r}")
    return time_ns
