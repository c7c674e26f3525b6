"""``tf2py robot-state-publisher ROBOT``: a URDF or xacro robot's joints from ``/joint_states``
on ``/tf`` (its fixed joints latched on ``/tf_static``), as ROS's robot_state_publisher. The
work is ``tf2py.RobotStatePublisher``; this module parses and prints."""

from __future__ import annotations

import argparse
from typing import Any

from .common import CommandError, add_robot_arguments, flag_number, load_model, parse_core_argument

NAME = "robot-state-publisher"
HELP = ("publish a URDF/xacro robot's joints from /joint_states, as ROS's "
        "robot_state_publisher")

EPILOG = """\
examples:
  tf2py robot-state-publisher launch/robots/arm.urdf
  tf2py robot-state-publisher panda.urdf.xacro --xacro-arg hand:=true --frame-prefix left/
"""


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


def joint_counts(model: Any) -> tuple[int, int]:
    """(fixed joints, movable joints: the revolute, continuous and prismatic joints it sends
    on /tf, mimics following their masters included; a mimic of a joint the model lacks is
    not sent, and not counted)."""
    fixed = sum(1 for joint in model.joints if joint.type == "fixed")
    return fixed, len(model.movable_joint_names)


def run(args: argparse.Namespace) -> int:
    import threading

    from ..robot.publishers import RobotStatePublisher
    from ..transport.address import core_address

    frequency = flag_number(args.publish_frequency, "--publish-frequency", "Hz")
    model = load_model(args.robot, args.xacro_arg, NAME)
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
