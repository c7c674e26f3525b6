"""/clock on the bus: simulated time (``tf2py play --clock``), in tf2py's wire format.

Unlike /tf, a /clock message is ONE ZeroMQ frame: the topic bytes followed at once by the
body, a msgpack array ``[version: int, time_ns: int]`` (the sender's current time, e.g. a
bag's recording time, in integer nanoseconds). One frame lets a follower keep only the
latest tick (ZMQ_CONFLATE works on single-frame messages).
"""

from __future__ import annotations

from ..wire_common import WIRE_VERSION, UnknownVersionError, WireError, describe, packb, unpack

__all__ = [
    "TOPIC_CLOCK",
    "CLOCK_BODY_MAX",
    "CLOCK_FRAME_MAX",
    "encode_clock",
    "decode_clock",
    "clock_message",
    "decode_clock_message",
]

#: The simulated-time stream (the topic bytes that start every /clock frame).
TOPIC_CLOCK = b"/clock"
#: The largest /clock frame (topic and body) that is read or passed on by the core.
CLOCK_BODY_MAX = 64
CLOCK_FRAME_MAX = len(TOPIC_CLOCK) + CLOCK_BODY_MAX

_INT64_MAX = 2**63 - 1


def encode_clock(time_ns: int) -> bytes:
    """The body of one /clock message."""
    time_ns = int(time_ns)
    if not 0 <= time_ns <= _INT64_MAX:
        raise WireError(f"a clock time is 0..2^63-1 nanoseconds, got {time_ns}")
    return packb([WIRE_VERSION, time_ns])


_CLOCK_PREFIX = b"\x92" + bytes([WIRE_VERSION]) + b"\xcf"  # [version, uint64]


def clock_message(time_ns: int) -> bytes:
    """The one frame of a /clock message: topic and body."""
    return TOPIC_CLOCK + encode_clock(time_ns)


def decode_clock_message(frame: bytes) -> int:
    """The time (integer nanoseconds) of a one-frame /clock message."""
    if frame[:len(TOPIC_CLOCK)] != TOPIC_CLOCK:
        raise WireError(f"not a /clock message (starts {bytes(frame[:16])!r})", "topic")
    return decode_clock(frame[len(TOPIC_CLOCK):])


def decode_clock(body: bytes) -> int:
    """The time (integer nanoseconds) of a /clock body; ``WireError`` for anything else."""
    if len(body) == 11 and body[:3] == _CLOCK_PREFIX:  # the usual shape: no msgpack call
        time_ns = int.from_bytes(body[3:], "big")
        if time_ns <= _INT64_MAX:
            return time_ns
    if len(body) > CLOCK_BODY_MAX:
        raise WireError(f"a clock message has at most {CLOCK_BODY_MAX} bytes, got {len(body)}",
                        "too_large")
    obj = unpack(body)
    if type(obj) is not list or len(obj) != 2:
        raise WireError(f"a clock message is [version, time_ns], got {describe(obj)}")
    version, time_ns = obj
    if version.__class__ is not int:
        raise WireError("a clock message's version must be an integer")
    if version != WIRE_VERSION:
        if version > WIRE_VERSION:
            raise UnknownVersionError(version)
        raise WireError(f"unknown wire version {version}", "version")
    if time_ns.__class__ is not int or not 0 <= time_ns <= _INT64_MAX:
        raise WireError(f"a clock time must be integer nanoseconds 0..2^63-1, got {time_ns!r}")
    return int(time_ns)
