"""``tf2py robot-state-publisher ROBOT``: a URDF or xacro robot's joints from ``/joint_states``
on ``/tf`` (its fixed joints latched on ``/tf_static``), as ROS's robot_state_publisher. The
work is ``tf2py.RobotStatePublisher``; this module parses and prints."""

from __future__ import annotations

import argparse
from typing import Any

from .common import CommandError, cut, flag_number, parse_core_argument

NAME = "robot-state-publisher"
HELP = ("publish a URDF/xacro robot's joints from /joint_states, as ROS's "
        "robot_state_publisher")

EPILOG = """\
examples:
  tf2py robot-state-publisher launch/robots/arm.urdf
  tf2py robot-state-publisher panda.urdf.xacro --xacro-arg hand:=true --frame-prefix left/
"""


def add_robot_arguments(parser: argparse.ArgumentParser) -> None:
    """ROBOT and ``--xacro-arg NAME:=VALUE`` (shared by the robot commands)."""
    parser.add_argument("robot", metavar="ROBOT", help="the robot's URDF file, or a xacro file "
                        "(.xacro, expanded with the xacro package)")
    parser.add_argument("--xacro-arg", metavar="NAME:=VALUE", action="append", default=[],
                        help="an argument for a xacro file (repeat for more)")


def configure(parser: argparse.ArgumentParser) -> None:
    add_robot_arguments(parser)
    parser.add_argument("--frame-prefix", metavar="P", default="",
                        help="put P before every link's frame id (e.g. left/), for several "
                        "robots of one model on one bus")
    parser.add_argument("--publish-frequency", metavar="HZ", default="20",
                        help="at most this many /tf updates a second per joint (default 20)")
    parser.add_argument("--ignore-timestamp", action="store_true",
                        help="stamp /tf with the time a joint state arrives, not its own stamp")
    parse_core_argument(parser)


def xacro_arguments(texts: list[str]) -> dict[str, str]:
    """``{name: value}`` from ``NAME:=VALUE`` words, or a one-line CommandError."""
    found: dict[str, str] = {}
    for text in texts:
        name, sep, value = text.partition(":=")
        if not sep or not name.strip():
            raise CommandError(f"--xacro-arg takes NAME:=VALUE, got {cut(text)!r}", 2)
        found[name.strip()] = value
    return found


def load_model(robot: str, xacro_texts: list[str] | None = None,
               command: str = NAME) -> Any:
    """The ``RobotModel`` of the file ``robot`` (with ``NAME:=VALUE`` xacro arguments), or a
    CommandError holding the model's one-line error. The model's warnings (a mimic of a
    joint it lacks) are printed as one line each, ``tf2py COMMAND: warning: ...``."""
    import sys
    import warnings

    from ..robot.errors import RobotModelError, RobotModelWarning
    from ..robot.model import RobotModel

    xacro_args = xacro_arguments(xacro_texts or [])
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RobotModelWarning)
            model = RobotModel.from_urdf(robot, xacro_args=xacro_args or None)
    except RobotModelError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:  # a folder, a file we may not read
        reason = exc.strerror or str(exc)
        raise CommandError(f"{cut(robot)}: cannot read the robot ({reason})") from None
    for warning in caught:  # one line each, not Python's file:line warning format
        print(f"tf2py {command}: warning: {warning.message}", file=sys.stderr, flush=True)
    return model


def joint_counts(model: Any) -> tuple[int, int]:
    """(fixed joints, movable joints: revolute, continuous and prismatic, mimics included)."""
    fixed = sum(1 for joint in model.joints if joint.type == "fixed")
    movable = sum(1 for joint in model.joints
                  if joint.type in ("revolute", "continuous", "prismatic"))
    return fixed, movable


def run(args: argparse.Namespace) -> int:
    import threading

    from ..robot.publishers import RobotStatePublisher
    from ..transport.address import core_address

    frequency = flag_number(args.publish_frequency, "--publish-frequency", "Hz")
    model = load_model(args.robot, args.xacro_arg)
    try:
        publisher = RobotStatePublisher(model, core=args.core, frame_prefix=args.frame_prefix,
                                        publish_frequency=frequency,
                                        ignore_timestamp=args.ignore_timestamp)
    except ValueError as exc:  # a malformed address or frame prefix
        raise CommandError(str(exc), 2) from None
    fixed, movable = joint_counts(model)
    with publisher:
        print(f"tf2py robot-state-publisher: robot {model.name!r}: {fixed} fixed and "
              f"{movable} movable joints ({len(model.joint_names)} driven by /joint_states), "
              f"publishing on {core_address(args.core)}", flush=True)
        stop = threading.Event()
        while not stop.wait(3600.0):  # until Ctrl-C or SIGTERM (a KeyboardInterrupt)
            pass
    return 0
