"""The tf2 exception hierarchy, and the TF2Error codes the buffer server sends."""

from __future__ import annotations

# The exceptions: what ``tf2py`` exports from here (its ``__all__`` adds this list). The
# TF2Error codes and error_code_of/exception_from_code below are the buffer server's wire
# detail, imported by name where they are used.
__all__ = [
    "TransformException",
    "LookupException",
    "ConnectivityException",
    "ExtrapolationException",
    "BackwardExtrapolationException",
    "ForwardExtrapolationException",
    "NoDataForExtrapolationException",
    "InvalidArgumentException",
    "TimeoutException",
]

# tf2_msgs/TF2Error codes, as the buffer server sends them.
NO_ERROR = 0
LOOKUP_ERROR = 1
CONNECTIVITY_ERROR = 2
EXTRAPOLATION_ERROR = 3
INVALID_ARGUMENT_ERROR = 4
TIMEOUT_ERROR = 5
TRANSFORM_ERROR = 6


class TransformException(Exception):
    """Base of every tf2 error; ``str(exc)`` is tf2's message."""

    code = TRANSFORM_ERROR


class LookupException(TransformException):
    """A frame does not exist, or the tree contains a loop."""

    code = LOOKUP_ERROR


class ConnectivityException(TransformException):
    """The two frames are not part of the same tree."""

    code = CONNECTIVITY_ERROR


class ExtrapolationException(TransformException):
    """The requested time lies outside the data the buffer holds."""

    code = EXTRAPOLATION_ERROR


class BackwardExtrapolationException(ExtrapolationException):
    """The requested time is earlier than the oldest data."""


class ForwardExtrapolationException(ExtrapolationException):
    """The requested time is later than the newest data."""


class NoDataForExtrapolationException(ExtrapolationException):
    """The cache holds a single sample (at another time), or none."""


class InvalidArgumentException(TransformException):
    """An argument can never be valid (empty frame id, NaN, bad quaternion...)."""

    code = INVALID_ARGUMENT_ERROR


class TimeoutException(TransformException):
    """Waiting for an answer ran out of time."""

    code = TIMEOUT_ERROR


_BY_CODE = {
    LOOKUP_ERROR: LookupException,
    CONNECTIVITY_ERROR: ConnectivityException,
    EXTRAPOLATION_ERROR: ExtrapolationException,
    INVALID_ARGUMENT_ERROR: InvalidArgumentException,
    TIMEOUT_ERROR: TimeoutException,
    TRANSFORM_ERROR: TransformException,
}

# The extrapolation subclasses travel as EXTRAPOLATION_ERROR plus a sub-kind, so a remote
# client can raise the same subclass a local Buffer would.
_EXTRAPOLATION_KINDS = {
    "backward": BackwardExtrapolationException,
    "forward": ForwardExtrapolationException,
    "no_data": NoDataForExtrapolationException,
}


def error_code_of(exc: BaseException) -> tuple[int, str]:
    """(TF2Error code, extrapolation kind or "") for an exception."""
    if isinstance(exc, TransformException):
        for kind, cls in _EXTRAPOLATION_KINDS.items():
            if isinstance(exc, cls):
                return EXTRAPOLATION_ERROR, kind
        return exc.code, ""
    return TRANSFORM_ERROR, ""


def exception_from_code(code: int, message: str, kind: str = "") -> TransformException:
    """The exception a TF2Error code (and extrapolation kind) stands for."""
    if code == EXTRAPOLATION_ERROR and kind in _EXTRAPOLATION_KINDS:
        return _EXTRAPOLATION_KINDS[kind](message)
    return _BY_CODE.get(code, TransformException)(message)
