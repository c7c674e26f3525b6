"""``tf2py static-transform-publisher``: publish one latched static transform until stopped,
with ROS 2's flags and the old positional forms, and tf2's error messages."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from .common import CommandError, cut, no_data_hint, number, parse_core_argument

NAME = "static-transform-publisher"
HELP = "publish a static transform (latched) until stopped, as ROS 2 static_transform_publisher"

EPILOG = """\
old-style (deprecated, as in ROS):
  x y z yaw pitch roll frame_id child_frame_id
  x y z qx qy qz qw frame_id child_frame_id

examples:
  tf2py static-transform-publisher --x 0.2 --z 0.3 --yaw 1.5708 --frame-id base_link --child-frame-id laser
  tf2py static-transform-publisher 0.2 0 0.3 1.5708 0 0 base_link laser
"""

# The value given to a flag written without a value; tf2's "Not enough arguments for --x".
_MISSING = object()

TRANSLATION_FLAGS = ("x", "y", "z")
QUATERNION_FLAGS = ("qx", "qy", "qz", "qw")
EULER_FLAGS = ("roll", "pitch", "yaw")
NUMBER_FLAGS = TRANSLATION_FLAGS + QUATERNION_FLAGS + EULER_FLAGS
FRAME_FLAGS = ("frame-id", "child-frame-id")


def configure(parser: argparse.ArgumentParser) -> None:
    import argparse

    class Formatter(argparse.RawDescriptionHelpFormatter):
        # The flags take nargs="?" only so that a missing value gets tf2's message; show them
        # as taking one value.
        def _format_args(self, action: argparse.Action, default_metavar: str) -> str:
            if action.const is _MISSING:
                return "%s" % self._metavar_formatter(action, default_metavar)(1)
            return super()._format_args(action, default_metavar)

    parser.formatter_class = Formatter  # the epilog (EPILOG, shown as written) is main's
    units = {"x": "metres", "y": "metres", "z": "metres", "roll": "radians, about x",
             "pitch": "radians, about y", "yaw": "radians, about z"}
    for flag in NUMBER_FLAGS:
        default = "1" if flag == "qw" else "0"
        parser.add_argument(
            f"--{flag}", nargs="?", const=_MISSING, default=None, metavar=flag.upper(),
            help=f"{units.get(flag, 'quaternion component')} (default {default})",
        )
    parser.add_argument("--frame-id", nargs="?", const=_MISSING, default=None, metavar="FRAME",
                        help="the parent frame")
    parser.add_argument("--child-frame-id", nargs="?", const=_MISSING, default=None,
                        metavar="FRAME", help="the child frame")
    parse_core_argument(parser)
    parser.add_argument("positional", nargs="*", metavar="ARG",
                        help="old-style arguments (see below)")


def _float(text: str, flag: str) -> float:
    try:
        value = number(text)
    except (TypeError, ValueError):
        raise CommandError(f"Failed to parse {flag} argument as float") from None
    if not math.isfinite(value):
        raise CommandError(f"Failed to parse {flag} argument as float")
    return value


def normalized_quaternion(q: tuple[float, ...]) -> tuple[float, ...]:
    """``q`` scaled to unit length (tf2 normalizes on insert), computed without overflow or
    underflow: divided by its largest component before squaring, so (1e308, 0, 0, 1) gives
    (1, 0, 0, 1e-308). CommandError for a zero quaternion or one with an infinite or NaN
    component: no rotation."""
    if not all(math.isfinite(c) for c in q):
        raise CommandError(f"the quaternion {tuple(q)} is not a rotation (a component is not "
                           "a finite number)")
    largest = max(abs(c) for c in q)
    if largest == 0.0:
        raise CommandError("the quaternion (0, 0, 0, 0) is not a rotation")
    scaled = [c / largest for c in q]
    norm = math.sqrt(sum(c * c for c in scaled))
    return tuple(c / norm for c in scaled)


#: The longest frame id the bus carries (tf2py.transport.wire.MAX_FRAME_ID_LENGTH).
MAX_FRAME_ID_LENGTH = 4096


def _is_number(text: str) -> bool:
    try:
        number(text)
    except ValueError:
        return False
    return True


def _refuse_ros1_period(positional: list[str]) -> None:
    """ROS 1's static_transform_publisher took a last argument, the period in ms
    (``x y z yaw pitch roll frame child period``, or with a quaternion): say so, rather than
    "Extra unparsed arguments"."""
    n = len(positional)
    frames_at = {9: 6, 10: 7}.get(n)
    if frames_at is None or not _is_number(positional[-1]):
        return
    if _is_number(positional[frames_at]) or _is_number(positional[frames_at + 1]):
        return
    raise CommandError(
        f"the last argument '{cut(positional[-1])}' is ROS 1's publishing period (ms): ROS 2 "
        "and tf2py publish a static transform once, latched on /tf_static; leave it out")


def parse(args: argparse.Namespace) -> tuple[str, str, tuple[float, ...], tuple[float, ...]]:
    """``(frame_id, child_frame_id, (x, y, z), (qx, qy, qz, qw))`` from the parsed arguments,
    or CommandError with tf2's message."""
    from ..buffer.messages import quaternion_from_rpy

    values = {flag: getattr(args, flag.replace("-", "_")) for flag in NUMBER_FLAGS + FRAME_FLAGS}
    for flag, value in values.items():
        if value is _MISSING:
            raise CommandError(f"Not enough arguments for --{flag}")
    saw_flags = any(v is not None for v in values.values())
    saw_quaternion = any(values[f] is not None for f in QUATERNION_FLAGS)
    saw_euler = any(values[f] is not None for f in EULER_FLAGS)
    if saw_quaternion and saw_euler:
        raise CommandError("Cannot specify both quaternion and Euler rotations")
    positional = list(args.positional)
    if saw_flags and positional:
        raise CommandError("Cannot specify both new-style (flags) and old-style (arguments)")

    if positional:
        _refuse_ros1_period(positional)
        if len(positional) not in (8, 9):
            raise CommandError("Extra unparsed arguments on command-line")
        print("Old-style arguments are deprecated; see --help for new-style arguments",
              file=sys.stderr, flush=True)
        names = ["x", "y", "z"]
        if len(positional) == 8:
            names += ["yaw", "pitch", "roll"]  # tf2's old order: yaw pitch roll
        else:
            names += ["qx", "qy", "qz", "qw"]
        numbers = {n: _float(positional[i], n) for i, n in enumerate(names)}
        frame_id, child_frame_id = positional[-2], positional[-1]
    else:
        numbers = {f: _float(values[f], f"--{f}") for f in NUMBER_FLAGS if values[f] is not None}
        frame_id = values["frame-id"] or ""
        child_frame_id = values["child-frame-id"] or ""

    translation = tuple(numbers.get(n, 0.0) for n in TRANSLATION_FLAGS)
    if any(n in numbers for n in EULER_FLAGS):
        rotation: tuple[float, ...] = quaternion_from_rpy(
            *(numbers.get(n, 0.0) for n in EULER_FLAGS))
    else:
        rotation = normalized_quaternion(
            tuple(numbers.get(n, 1.0 if n == "qw" else 0.0) for n in QUATERNION_FLAGS))

    for name, frame in (("frame id", frame_id), ("child frame id", child_frame_id)):
        if len(frame) > MAX_FRAME_ID_LENGTH:
            raise CommandError(f"the {name} '{cut(frame)}' is too long for tf2py's bus (at "
                               f"most {MAX_FRAME_ID_LENGTH} characters)")
    if not frame_id:
        raise CommandError("Frame id must not be empty")
    if not child_frame_id:
        raise CommandError("Child frame id must not be empty")
    if frame_id.lstrip("/") == child_frame_id.lstrip("/"):
        raise CommandError(
            f"cannot publish static transform from '{cut(frame_id)}' to "
            f"'{cut(child_frame_id)}', exiting"
        )
    return frame_id, child_frame_id, translation, rotation


def run(args: argparse.Namespace) -> int:
    import threading

    from ..buffer.messages import make_transform
    from ..buffer.time import Time
    from ..transport.address import core_address
    from ..transport.broadcaster import StaticTransformBroadcaster
    from .core_check import CONNECT_TIMEOUT_S, statics_echoed

    frame_id, child_frame_id, translation, rotation = parse(args)
    transform = make_transform(frame_id, child_frame_id, translation, rotation, stamp=Time.now())
    try:
        broadcaster = StaticTransformBroadcaster(core=args.core)
    except ValueError as exc:  # a malformed address
        raise CommandError(str(exc), 2) from None
    printed: tuple[Any, ...] = (*translation, *rotation, frame_id, child_frame_id)
    with broadcaster:
        broadcaster.send_transform(transform)
        print(
            "Spinning until stopped - publishing transform\n"
            "translation: ('%f', '%f', '%f')\n"
            "rotation: ('%f', '%f', '%f', '%f')\n"
            "from '%s' to '%s'" % printed,
            flush=True,
        )
        if not statics_echoed(args.core, broadcaster):
            print(f"tf2py static-transform-publisher: no core answered at "
                  f"{core_address(args.core)} within {CONNECT_TIMEOUT_S:g} s "
                  f"({no_data_hint(args.core, broadcasting=False)}); the transform stays latched "
                  "for when one does",
                  file=sys.stderr, flush=True)
        stop = threading.Event()
        while not stop.wait(3600.0):  # until Ctrl-C or SIGTERM (a KeyboardInterrupt)
            pass
    return 0
