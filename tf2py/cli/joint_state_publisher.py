"""``tf2py joint-state-publisher ROBOT``: every movable joint of a URDF or xacro robot on
``/joint_states`` at a steady rate, as ROS's joint_state_publisher does without its GUI: 0, or
the middle of the joint's limits when 0 is outside them, unless ``--set NAME=VALUE``; mimic
joints follow their masters (``multiplier × master + offset``). The range is narrowed to a
joint's ``<safety_controller>`` soft limits first, as joint_state_publisher does by default."""

from __future__ import annotations

import argparse
import difflib
import math
from typing import Any

from .common import (
    CommandError,
    add_robot_arguments,
    cut,
    flag_number,
    load_model,
    number,
    parse_core_argument,
)

NAME = "joint-state-publisher"
HELP = ("publish default or --set positions of every movable joint, as joint_state_publisher "
        "without its GUI")

EPILOG = """\
examples:
  tf2py joint-state-publisher launch/robots/arm.urdf
  tf2py joint-state-publisher launch/robots/arm.urdf --set joint2=0.5 --set joint4=-1.2 --rate 50
"""


def configure(parser: argparse.ArgumentParser) -> None:
    add_robot_arguments(parser)
    parser.add_argument("--set", metavar="NAME=VALUE", action="append", default=[],
                        help="a joint's position (radians, or metres for a prismatic joint); "
                        "repeat for more")
    parser.add_argument("--rate", metavar="HZ", default="10",
                        help="joint states a second (default 10)")
    parse_core_argument(parser)


def default_position(joint: Any) -> float:
    """joint_state_publisher's start: 0, or the middle of the joint's range when 0 is outside
    it; the range is its limits (-π to π for a continuous joint) narrowed to the soft limits
    of its ``<safety_controller>`` (joint_state_publisher's ``use_smallest_joint_limits``, on
    by default)."""
    limits = joint.limits
    if joint.type == "continuous":
        lower, upper = -math.pi, math.pi
    elif limits is None:
        return 0.0
    else:
        lower, upper = float(limits.lower), float(limits.upper)
    safety = joint.safety
    if safety is not None:
        if safety.soft_lower_limit is not None:
            lower = max(lower, safety.soft_lower_limit)
        if safety.soft_upper_limit is not None:
            upper = min(upper, safety.soft_upper_limit)
    if lower > 0.0 or upper < 0.0:
        return (lower + upper) / 2.0
    return 0.0


def _unknown_joint(name: str, model: Any) -> CommandError:
    joints = {joint.name: joint for joint in model.joints}
    joint = joints.get(name)
    if joint is not None and joint.mimic is not None:
        why = f"joint {cut(name)!r} mimics {joint.mimic[0]!r}: set that one"
    elif joint is not None:
        why = f"joint {cut(name)!r} is {joint.type}, not driven by joint states"
    else:
        close = difflib.get_close_matches(name, model.joint_names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        why = f"robot {model.name!r} has no movable joint {cut(name)!r} ({hint}movable joints: " \
              f"{cut(', '.join(model.joint_names), 300)})"
    return CommandError(f"--set: {why}", 2)


def positions(model: Any, settings: list[str]) -> list[float]:
    """The position of each of ``model.joint_names``: defaults, then ``NAME=VALUE`` settings;
    a one-line CommandError for a malformed setting, an unknown joint or a non-number."""
    by_name = {joint.name: joint for joint in model.joints}
    values = {name: default_position(by_name[name]) for name in model.joint_names}
    for text in settings:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name:
            raise CommandError(f"--set takes NAME=VALUE, got {cut(text)!r}", 2)
        if name not in values:
            raise _unknown_joint(name, model)
        try:
            position = number(value.strip())
        except ValueError:
            position = math.nan
        if not math.isfinite(position):
            raise CommandError(f"--set {cut(name)}: the position must be a finite number, got "
                               f"{cut(value)!r}", 2)
        values[name] = position
    return [values[name] for name in model.joint_names]


def run(args: argparse.Namespace) -> int:
    import time

    from ..buffer.time import Time
    from ..robot.publishers import JointStatePublisher
    from ..transport.address import core_address

    rate = flag_number(args.rate, "--rate", "Hz")
    model = load_model(args.robot, args.xacro_arg, NAME)
    # Every movable joint, mimics included (computed from their masters), in document order,
    # as ROS's joint_state_publisher lists them.
    movable = model.movable_positions(positions(model, args.set))
    names, values = list(movable), list(movable.values())
    try:
        publisher = JointStatePublisher(core=args.core)
    except ValueError as exc:  # a malformed address
        raise CommandError(str(exc), 2) from None
    period = 1.0 / rate
    with publisher:
        shown = ", ".join(f"{n}={v:g}" for n, v in zip(names, values))
        print(f"tf2py joint-state-publisher: robot {model.name!r}: {len(names)} joints at "
              f"{rate:g} Hz on {core_address(args.core)}: {cut(shown, 400)}", flush=True)
        next_due = time.monotonic()
        while True:  # until Ctrl-C or SIGTERM (a KeyboardInterrupt)
            if names:  # (no movable joint: nothing to send, as joint_state_publisher)
                publisher.publish(names, values, stamp=Time.now())
            next_due += period
            delay = next_due - time.monotonic()
            if delay < -period:  # fell behind (a suspended process): no burst to catch up
                next_due = time.monotonic()
            time.sleep(max(0.0, delay))
