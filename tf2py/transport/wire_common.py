"""The common ground of tf2py's wire format (``tf2py.transport.wire``): versions, topics,
bounds, the errors every decoder raises, and the generic msgpack helpers the buffer server's
protocol uses (``pack``, ``unpack``, ``transform_to_wire``, ``transform_from_wire``).

Import these names from ``tf2py.transport.wire``, which re-exports them all; this module
exists so the codecs (transforms messages in ``wire``, /clock in ``zmq/wire_clock``) share one
definition of the limits and errors.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import TYPE_CHECKING, Any, Union, cast

import msgpack

if TYPE_CHECKING:
    import zmq

from ..buffer.messages import Header, Quaternion, Transform, TransformStamped, Vector3
from ..buffer.time import Time, to_nanoseconds

__all__ = [
    "WIRE_VERSION",
    "SEQUENCED_VERSION",
    "NEWEST_VERSION",
    "TOPIC_TF",
    "TOPIC_TF_STATIC",
    "TOPIC_STATIC_LATCH",
    "MAX_MESSAGE_BYTES",
    "MAX_TRANSFORMS",
    "MAX_STRING",
    "MAX_PIECE_BYTES",
    "MAX_FRAME_ID_LENGTH",
    "Body",
    "WireBlocks",
    "WireError",
    "FrameIdTooLongError",
    "UnknownVersionError",
    "check_message_size",
    "pack",
    "unpack",
    "transform_to_wire",
    "transform_from_wire",
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

#: The blocks of a /tf or /tf_static message as msgpack decodes them, checked but not
#: converted: ``(authority, parents, children, stamps_bin, values_bin)`` (N little-endian int64
#: stamps, N x 7 little-endian float64). The codec's own detail: elsewhere rows travel as one
#: ``tf2py.Transforms`` (``wire.rows_of`` makes one of these blocks).
WireBlocks = tuple[str, list[str], list[str], bytes, bytes]
#: A received message body: bytes, or any buffer msgpack reads (a ZeroMQ frame, a memoryview).
Body = Union[bytes, bytearray, memoryview, "zmq.Frame"]


class WireError(ValueError):
    """Bytes that are not a valid tf2py message.

    ``cause`` names the kind, for counters: ``"garbage"`` (not msgpack), ``"shape"`` (msgpack
    of the wrong shape or types), ``"too_large"`` (over the bounds), ``"version"``.
    """

    def __init__(self, message: str, cause: str = "shape") -> None:
        super().__init__(message)
        self.cause = cause


class FrameIdTooLongError(WireError):
    """Some rows of a message have a frame id over ``MAX_FRAME_ID_LENGTH`` characters.

    ``dropped`` is how many rows were refused; ``columns`` holds the message without them (as
    ``decode_columns`` returns it), or None when no row is left (or the authority itself is
    too long)."""

    def __init__(self, message: str, dropped: int, columns: WireBlocks | None = None) -> None:
        super().__init__(message, cause="frame_id_too_long")
        self.dropped = dropped
        self.columns = columns
        #: (stream, sequence) of the message when it was decoded by ``decode_sequenced``.
        self.sequence: tuple[int | None, int] = (None, 0)


def check_message_size(body: Sized, what: str = "message") -> None:
    """Raise ValueError when ``body`` is over ``MAX_MESSAGE_BYTES`` (readers refuse it), so a
    sender learns it at once instead of the message vanishing at the core."""
    if len(body) > MAX_MESSAGE_BYTES:
        raise ValueError(
            f"{what} of {len(body)} bytes exceeds the bus limit of {MAX_MESSAGE_BYTES} bytes "
            f"(64 MiB); send fewer transforms per call"
        )


class UnknownVersionError(WireError):
    """A message written by a newer wire version than this reader knows."""

    def __init__(self, version: int) -> None:
        super().__init__(
            f"message has wire version {version!r}, this tf2py reads up to version "
            f"{WIRE_VERSION}; upgrade tf2py on this host",
            cause="version",
        )
        self.version = version


#: msgpack's packb with its defaults (use_bin_type=True: str as str, bytes as bin). Cast:
#: msgpack has no annotations, and pyright infers ``bytes | None`` from its pure-Python
#: ``Packer.pack`` (None only with autoreset=False, which packb never uses).
packb = cast("Callable[[object], bytes]", msgpack.packb)
#: msgpack's unpackb with its defaults (raw=False, strict_map_key, lengths bounded by input).
unpackb: Callable[[Body], object] = msgpack.unpackb

_UNPACK_LIMITS: dict[str, Any] = dict(
    raw=False,
    strict_map_key=True,
    use_list=True,
    max_str_len=MAX_STRING,
    max_bin_len=MAX_MESSAGE_BYTES,
    max_array_len=MAX_TRANSFORMS * 10 + 16,
    max_map_len=1_000_000,
    max_ext_len=0,
)


def undecodable(exc: Exception) -> str:
    """The message of a ``WireError`` for bytes msgpack could not decode."""
    detail = str(exc)
    return f"not a msgpack message ({type(exc).__name__}{': ' + detail if detail else ''})"


def pack(obj: object) -> bytes:
    """msgpack bytes of ``obj`` (str as str, bytes as bin)."""
    try:
        data = packb(obj)
    except (TypeError, ValueError, OverflowError) as exc:
        raise WireError(f"cannot encode {type(obj).__name__}: {exc}") from exc
    return data


def unpack(data: bytes) -> object:
    """The object in msgpack ``data``; raises ``WireError`` on garbage or on sizes over the
    bounds (``MAX_MESSAGE_BYTES``, ``MAX_STRING`` per string)."""
    if len(data) > MAX_MESSAGE_BYTES:
        raise WireError(
            f"message of {len(data)} bytes exceeds {MAX_MESSAGE_BYTES} bytes", "too_large"
        )
    try:
        obj: object = msgpack.unpackb(data, **_UNPACK_LIMITS)
    except Exception as exc:  # msgpack raises many types for garbage (ValueError, TypeError, ...)
        raise WireError(undecodable(exc), "garbage") from None
    return obj


def stamp_ns(stamp: object) -> int:
    """Integer nanoseconds of a header stamp (a ``Time``, or anything ``to_nanoseconds`` takes)."""
    return stamp.nanoseconds if type(stamp) is Time else to_nanoseconds(stamp, "stamp")


def transform_to_wire(ts: TransformStamped) -> list[Any]:
    """``[parent, child, stamp_ns, tx, ty, tz, qx, qy, qz, qw]`` for a TransformStamped (a list:
    msgpack's array; its items' types vary by position: str, str, int, then floats)."""
    h = ts.header
    t = ts.transform.translation
    r = ts.transform.rotation
    return [
        h.frame_id,
        ts.child_frame_id,
        stamp_ns(h.stamp),
        float(t.x), float(t.y), float(t.z),
        float(r.x), float(r.y), float(r.z), float(r.w),
    ]


def transform_from_wire(obj: object) -> TransformStamped:
    """The TransformStamped of a ``transform_to_wire`` list; raises ``WireError`` on a wrong
    shape or type (values are not validated: NaN travels, the buffer refuses it)."""
    if type(obj) is not list or len(obj) != 10:
        raise WireError(f"a transform is a list of 10 items, got {describe(obj)}")
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


def describe(obj: object) -> str:
    """A short description of a decoded object of the wrong shape, for error messages."""
    if type(obj) is list:
        return f"a list of {len(obj)} items"
    return type(obj).__name__
