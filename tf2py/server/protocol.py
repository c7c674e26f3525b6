"""The buffer server's messages: lookup goals, acknowledgements, results and cancels.

Every message is one ZeroMQ frame holding a msgpack array (packed with
``tf2py.transport.wire.pack``), ``[PROTOCOL_VERSION, type, goal_id, ...]``:

    goal       client -> server  [1, "goal", id, target_frame, source_frame, source_time_ns,
                                  target_time_ns, fixed_frame, advanced, timeout_ns]
    cancel     client -> server  [1, "cancel", id]
    accepted   server -> client  [1, "accepted", id]            (the goal waits for data)
    result     server -> client  [1, "result", id, code, kind, message, transform-or-nil]
    cancelled  server -> client  [1, "cancelled", id, was_pending]

Times are integer nanoseconds; ``code`` is tf2's TF2Error code (0 = NO_ERROR, then the
transform is ``wire.transform_to_wire`` of the TransformStamped); ``kind`` names the
extrapolation subclass ("backward", "forward", "no_data") or is "". docs/protocol.md (buffer server part)
is the full description, enough to write a client in another language.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..buffer.exceptions import (
    INVALID_ARGUMENT_ERROR,
    NO_ERROR,
    error_code_of,
    exception_from_code,
)
from ..transport.wire import WireError, pack, transform_from_wire, transform_to_wire, unpack

__all__ = [
    "PROTOCOL_VERSION",
    "GOAL",
    "CANCEL",
    "ACCEPTED",
    "RESULT",
    "CANCELLED",
    "MAX_GOAL_BYTES",
    "MAX_FRAME_ID_LENGTH",
    "MAX_GOAL_ID",
    "Goal",
    "ProtocolError",
    "pack_goal",
    "pack_cancel",
    "pack_accepted",
    "pack_result",
    "pack_error_result",
    "pack_invalid_result",
    "pack_cancelled",
    "parse_client_message",
    "parse_server_message",
    "result_outcome",
]

PROTOCOL_VERSION = 1

GOAL = "goal"
CANCEL = "cancel"
ACCEPTED = "accepted"
RESULT = "result"
CANCELLED = "cancelled"

# A goal is a few frame names and numbers; anything much larger is garbage or abuse.
MAX_GOAL_BYTES = 64 * 1024
MAX_FRAME_ID_LENGTH = 4096
MAX_GOAL_ID = 2**64 - 1

_GOAL_LENGTH = 10


class ProtocolError(ValueError):
    """A message that does not follow the protocol. ``goal_id`` is set when the message
    carried a usable goal id, so the server can answer it with INVALID_ARGUMENT."""

    def __init__(self, message: str, goal_id: int | None = None, cause: str = "malformed"):
        super().__init__(message)
        self.goal_id = goal_id
        self.cause = cause  # a short category, for counting and logging once per cause


class Goal(NamedTuple):
    """One lookup goal, as the GOAL message carries it (``pack_goal(*goal)`` is its bytes).
    Times and the timeout in nanoseconds."""

    goal_id: int
    target_frame: str
    source_frame: str
    source_time_ns: int
    target_time_ns: int
    fixed_frame: str
    advanced: bool
    timeout_ns: int


# --- client side -------------------------------------------------------------------------


def pack_goal(
    goal_id: int,
    target_frame: str,
    source_frame: str,
    source_time_ns: int,
    target_time_ns: int,
    fixed_frame: str,
    advanced: bool,
    timeout_ns: int,
) -> bytes:
    """The GOAL message. For the simple form (``advanced`` False) the server uses
    ``target_frame``, ``source_frame`` and ``source_time_ns`` only."""
    return pack(
        [
            PROTOCOL_VERSION,
            GOAL,
            goal_id,
            target_frame,
            source_frame,
            source_time_ns,
            target_time_ns,
            fixed_frame,
            advanced,
            timeout_ns,
        ]
    )


def pack_cancel(goal_id: int) -> bytes:
    """The CANCEL message for a goal."""
    return pack([PROTOCOL_VERSION, CANCEL, goal_id])


def parse_server_message(data: bytes) -> tuple[Any, int, list[Any]]:
    """(type, goal_id, rest) of a message from the server; raises ProtocolError."""
    try:
        msg: Any = unpack(data)
    except WireError as exc:
        raise ProtocolError(f"undecodable server message: {exc}") from None
    if (
        not isinstance(msg, (list, tuple))
        or len(msg) < 3
        or msg[0] != PROTOCOL_VERSION
        or not isinstance(msg[2], int)
    ):
        raise ProtocolError("malformed server message")
    return msg[1], msg[2], list(msg[3:])


def result_outcome(rest: list[Any]) -> tuple[Any, BaseException | None]:
    """(transform, exception) from the fields of a RESULT after its id: exactly one is None.

    The exception is the tf2 exception class the code (and extrapolation kind) stands for,
    with the server's message, so a remote lookup raises what a local one would.
    """
    if len(rest) != 4:
        raise ProtocolError("malformed result")
    code, kind, message, transform = rest
    if code == NO_ERROR:
        try:
            return transform_from_wire(transform), None
        except WireError as exc:
            raise ProtocolError(f"malformed transform in result: {exc}") from None
    if not isinstance(code, int):
        raise ProtocolError("malformed result code")
    return None, exception_from_code(
        code, message if isinstance(message, str) else str(message), kind if isinstance(kind, str) else ""
    )


# --- server side -------------------------------------------------------------------------


def pack_accepted(goal_id: int) -> bytes:
    return pack([PROTOCOL_VERSION, ACCEPTED, goal_id])


def pack_result(goal_id: int, transform: Any) -> bytes:
    """A successful RESULT carrying a TransformStamped."""
    return pack([PROTOCOL_VERSION, RESULT, goal_id, NO_ERROR, "", "", transform_to_wire(transform)])


def pack_error_result(goal_id: int, exc: BaseException) -> bytes:
    """A RESULT carrying the TF2Error code, extrapolation kind and message of ``exc``."""
    code, kind = error_code_of(exc)
    return pack([PROTOCOL_VERSION, RESULT, goal_id, code, kind, str(exc), None])


def pack_invalid_result(goal_id: int, message: str) -> bytes:
    """A RESULT with INVALID_ARGUMENT for a goal the server cannot even read."""
    return pack([PROTOCOL_VERSION, RESULT, goal_id, INVALID_ARGUMENT_ERROR, "", message, None])


def pack_cancelled(goal_id: int, was_pending: bool) -> bytes:
    return pack([PROTOCOL_VERSION, CANCELLED, goal_id, was_pending])


def _goal_id_of(msg: Any) -> int | None:
    if isinstance(msg, (list, tuple)) and len(msg) >= 3:
        goal_id = msg[2]
        if type(goal_id) is int and 0 <= goal_id <= MAX_GOAL_ID:
            return goal_id
    return None


def _check_frame(value: Any, name: str, goal_id: int) -> str:
    if type(value) is not str:
        raise ProtocolError(
            f"malformed goal: {name} must be a string, got {type(value).__name__}", goal_id
        )
    if len(value) > MAX_FRAME_ID_LENGTH:
        raise ProtocolError(
            f"malformed goal: {name} is longer than {MAX_FRAME_ID_LENGTH} characters", goal_id
        )
    return value


def _check_ns(value: Any, name: str, goal_id: int) -> int:
    if type(value) is not int or not -(2**63) <= value < 2**63:
        raise ProtocolError(
            f"malformed goal: {name} must be an integer number of nanoseconds (int64)", goal_id
        )
    return value


def parse_client_message(data: bytes) -> tuple[str, int, Goal | None]:
    """(type, goal_id, Goal-or-None) of a message from a client.

    Raises ProtocolError for anything that is not a well-formed GOAL or CANCEL; its
    ``goal_id`` is the message's id when one could be read (answer it), else None (drop it).
    """
    if len(data) > MAX_GOAL_BYTES:
        raise ProtocolError(
            f"message of {len(data)} bytes exceeds {MAX_GOAL_BYTES}", cause="oversized"
        )
    try:
        msg: Any = unpack(data)
    except WireError as exc:
        raise ProtocolError(f"undecodable message: {exc}", cause="undecodable") from None
    goal_id = _goal_id_of(msg)
    if goal_id is None:
        raise ProtocolError("message without a goal id", cause="no goal id")
    if msg[0] != PROTOCOL_VERSION:
        raise ProtocolError(
            f"unsupported protocol version {msg[0]!r} (this server speaks {PROTOCOL_VERSION})",
            goal_id,
        )
    kind = msg[1]
    if kind == GOAL:
        if len(msg) != _GOAL_LENGTH:
            raise ProtocolError(
                f"malformed goal: {len(msg)} fields instead of {_GOAL_LENGTH}", goal_id
            )
        advanced = msg[8]
        if type(advanced) is not bool:
            raise ProtocolError("malformed goal: advanced must be a boolean", goal_id)
        goal = Goal(
            goal_id,
            _check_frame(msg[3], "target_frame", goal_id),
            _check_frame(msg[4], "source_frame", goal_id),
            _check_ns(msg[5], "source_time", goal_id),
            _check_ns(msg[6], "target_time", goal_id),
            _check_frame(msg[7], "fixed_frame", goal_id),
            advanced,
            _check_ns(msg[9], "timeout", goal_id),
        )
        return GOAL, goal_id, goal
    if kind == CANCEL:
        if len(msg) != 3:
            raise ProtocolError("malformed cancel", goal_id)
        return CANCEL, goal_id, None
    raise ProtocolError(f"unknown message type {kind!r}", goal_id)
