"""``--use-sim-time``: commands that take ages, delays and "now" from the bus's /clock
(what ``tf2py play --clock`` publishes) instead of the wall clock, as ROS's use_sim_time."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .common import CommandError


def add_use_sim_time_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--use-sim-time", action="store_true",
                        help="take the time from the bus's /clock (e.g. `tf2py play --clock`) "
                        "instead of the wall clock, as ROS's use_sim_time")


def sim_clock(args: argparse.Namespace) -> Any:
    """A SimClock on the command's bus when --use-sim-time was given, else None."""
    if not getattr(args, "use_sim_time", False):
        return None
    from ..transport.clock import SimClock

    try:
        return SimClock(core=args.core)
    except (ValueError, RuntimeError) as exc:  # a malformed address, ros2:// unavailable
        raise CommandError(str(exc), 2) from None


def now_ns(clock: Any) -> int:
    """The command's "now" in nanoseconds: the bus's /clock with --use-sim-time, else the
    wall clock."""
    return time.time_ns() if clock is None else clock.now().nanoseconds


def require_time(clock: Any, where: str, waited_s: float) -> None:
    """A CommandError if --use-sim-time was given and no /clock tick arrived."""
    if clock is not None and clock.now().nanoseconds == 0:
        raise CommandError(
            f"--use-sim-time: no /clock received from the core at {where} in {waited_s:g} s "
            "(is `tf2py play BAG --clock` running there?)"
        )
