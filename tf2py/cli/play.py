"""``tf2py play BAG``: publish a bag's ``/tf`` and ``/tf_static`` on the bus, as
``ros2 bag play`` does for those topics.

The static transforms are latched at once (latest per child frame) with a
StaticTransformBroadcaster; the dynamic messages follow with their original spacing in the
recording (log time) divided by ``--rate``. Every transform keeps its recorded stamp. On a
terminal a progress line (bag time played / total) is redrawn in place.

With ``--clock [HZ]`` the bag's time (its recording time, from ``--start``, advancing at
``--rate``) is also published on the bus's ``/clock`` stream HZ times a second (default 100),
as ``ros2 bag play --clock`` does; listeners with ``--use-sim-time`` (or a
``Buffer(clock=SimClock())``) then take ages, delays and "now" from it. With ``--loop`` each
new pass first sends the jump back to its start on /clock and gives listeners a moment to
see it (so their buffers forget the previous pass) before the pass's transforms follow.

With ``--robot [URDF]`` the bag's ``/joint_states`` are played too, as the robot's transforms
that robot_state_publisher would have sent (``tf2py.bag.robot``): its fixed joints latched with
the statics, then per joint state the joints it names at its stamp and log time. The robot is
URDF's, else the bag's latest ``/robot_description``.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .common import CommandError, flag_number, no_data_hint, parse_core_argument
from .core_check import CONNECT_TIMEOUT_S as _CONNECT_TIMEOUT_S
from .core_check import statics_echoed

NAME = "play"
HELP = "publish a bag's /tf and /tf_static on the bus with their original timing"

# Longest single sleep while waiting for the next message, so the progress line stays live.
_TICK_S = 0.1
_CONNECT_GRACE_S = 0.25
# Around a loop's jump back on /clock: the /clock and /tf streams reach a listener on
# different sockets and threads, so the last pass's final /tf must be in before its clock
# sees the reset (else it lands in the cleared buffer and makes the new pass look old), and
# the reset must be seen before the new pass's /tf.
_JUMP_GRACE_S = 0.3
_DEFAULT_CLOCK_HZ = "100"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bag", metavar="BAG",
                        help="an MCAP file, a ROS 2 bag folder or a ROS 1 .bag file")
    parser.add_argument("--rate", metavar="R", default="1.0",
                        help="playback speed factor (default 1.0; 10 plays ten times faster)")
    parser.add_argument("--loop", action="store_true",
                        help="start again from the beginning (or --start) at the end")
    parser.add_argument("--start", metavar="S", default="0",
                        help="skip the first S seconds of the bag (default 0)")
    parser.add_argument("--tf-topic", default="/tf", help="the bag's dynamic topic (/tf)")
    parser.add_argument("--tf-static-topic", default="/tf_static",
                        help="the bag's static topic (/tf_static)")
    parser.add_argument("--clock", metavar="HZ", nargs="?", const=_DEFAULT_CLOCK_HZ,
                        default=None,
                        help="also publish the bag's time on the bus's /clock stream, HZ "
                        f"times a second (default {_DEFAULT_CLOCK_HZ}), as ros2 bag play "
                        "--clock (put it after BAG)")
    parser.add_argument("--robot", metavar="URDF", nargs="?", const=True, default=None,
                        help="also publish the bag's /joint_states as the robot's transforms, as "
                        "robot_state_publisher would: the robot of URDF (a URDF or xacro file), "
                        "else of the bag's /robot_description (put it after BAG)")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.add_argument("--lenient", action="store_true",
                        help="play the readable part of a damaged or truncated recording "
                             "(as tf2py.bag.load(..., strict=False)) instead of refusing it")
    parse_core_argument(parser)


class _Progress:
    """The ``elapsed / total`` line, redrawn in place on a terminal, at most 10 times/s."""

    def __init__(self, total_s: float, enabled: bool):
        self.total_s = total_s
        self.enabled = enabled
        self._last = 0.0
        self._drawn = False

    def draw(self, bag_s: float, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        width = 30
        frac = 0.0 if self.total_s <= 0 else min(1.0, max(0.0, bag_s / self.total_s))
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        sys.stdout.write(f"\r[{bar}] {bag_s:8.2f} / {self.total_s:.2f} s ")
        sys.stdout.flush()
        self._drawn = True

    def end(self) -> None:
        if self._drawn:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self._drawn = False


def _latest_statics(data: Any) -> list[Any]:
    """The bag's static transforms, the latest per child frame (as a latched topic holds)."""
    latest: dict[str, int] = {}
    children = data.transforms.children
    for row in range(len(data)):
        if data.is_static[row]:
            latest[children[row]] = row
    return [data.transform(row) for row in sorted(latest.values())]


def _core_address(core: str | None) -> str:
    from ..transport.address import core_address

    return core_address(core)


def _wait_for_core(core: str | None, static_broadcaster: Any, has_statics: bool) -> bool:
    """Wait until the core is up and our connections to it are, since /tf is not latched and
    what a publisher sends before the core's subscription reaches it is lost.

    With statics, the proof is seeing them come back from the core on a subscriber of our own
    (the /tf socket connected alongside the static one, so a short grace covers it); False if
    they do not within the timeout, i.e. no core answered. Without statics there is nothing
    to echo, and only the grace is given."""
    if not has_statics:
        time.sleep(2 * _CONNECT_GRACE_S)
        return True
    answered = statics_echoed(core, static_broadcaster, _CONNECT_TIMEOUT_S)
    time.sleep(_CONNECT_GRACE_S)
    return answered


def _clock_publisher(core: str | None, clock_hz: float | None) -> Any:
    """A ClockPublisher on the bus when --clock was given, else a stand-in None."""
    import contextlib

    if clock_hz is None:
        return contextlib.nullcontext()
    from ..transport.clock import ClockPublisher

    return ClockPublisher(core)


def _read(args: argparse.Namespace) -> Any:
    """The bag's transforms (``BagTransforms``), with ``--robot`` its joint states' too."""
    from ..bag import read_transforms

    if args.robot is None:
        return read_transforms(args.bag, args.tf_topic, args.tf_static_topic,
                               strict=not args.lenient)
    from ..bag.robot import read_with_robot
    from ..robot.errors import RobotModelError

    try:
        return read_with_robot(args.bag, args.robot, args.tf_topic, args.tf_static_topic,
                               strict=not args.lenient)
    except RobotModelError as exc:
        raise CommandError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    rate = flag_number(args.rate, "--rate")
    start_s = flag_number(args.start, "--start", zero=True)
    clock_hz = None if args.clock is None else flag_number(args.clock, "--clock")
    from ..transport.interface import check_core_address

    try:
        check_core_address(args.core)  # a malformed address: refused before reading the bag
    except ValueError as exc:
        raise CommandError(str(exc), 2) from None

    import warnings

    from ..bag import BagError, BagWarning

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", BagWarning)
            data = _read(args)
    except BagError as exc:
        message = str(exc)
        if not args.lenient and ("truncated" in message or "could not be decoded" in message):
            message += " (--lenient plays the readable part)"
        raise CommandError(message) from None
    for warning in caught:  # one line each, not Python's file:line warning format
        print(f"tf2py play: warning: {warning.message}", file=sys.stderr, flush=True)

    import numpy as np

    from ..transport.broadcaster import StaticTransformBroadcaster, TransformBroadcaster

    total_s = data.duration_ns / 1e9
    if start_s > total_s:
        raise CommandError(f"--start {start_s:g} is past the end of the bag ({total_s:.3f} s)", 2)
    begin_ns = data.start_ns + int(round(start_s * 1e9))
    dynamic = np.flatnonzero(~data.message_static & (data.message_log_ns >= begin_ns)).tolist()
    log_ns = data.message_log_ns
    statics = _latest_statics(data)
    progress = _Progress(total_s, enabled=sys.stdout.isatty() and not args.quiet)

    sent_messages = 0
    sent_transforms = 0
    end_ns = data.start_ns + data.duration_ns
    with StaticTransformBroadcaster(core=args.core) as static_broadcaster, \
            TransformBroadcaster(core=args.core) as broadcaster, \
            _clock_publisher(args.core, clock_hz) as clock:
        if statics:
            static_broadcaster.send_transform(statics)
        if not _wait_for_core(args.core, static_broadcaster, bool(statics)):
            print(f"tf2py play: no core answered at {_core_address(args.core)} "
                  f"within {_CONNECT_TIMEOUT_S:g} s ({no_data_hint(args.core)}); publishing "
                  "anyway", file=sys.stderr,
                  flush=True)
        print(
            f"tf2py play: playing {data.name}: {len(data)} transforms "
            f"({len(statics)} static) over {total_s:.3f} s at rate {rate:g}"
            + (f", /clock at {clock_hz:g} Hz" if clock is not None else ""),
            flush=True,
        )
        period_s = 0.0 if clock is None or not clock_hz else 1.0 / clock_hz
        first_pass = True
        try:
            while True:
                if clock is not None and not first_pass:
                    time.sleep(_JUMP_GRACE_S)
                    clock.publish_ns(begin_ns)  # the jump back: listeners forget the last pass
                    time.sleep(_JUMP_GRACE_S)
                first_pass = False
                t0 = time.monotonic()
                next_tick = t0
                for k in dynamic:
                    due = t0 + (int(log_ns[k]) - begin_ns) / 1e9 / rate
                    while True:
                        now = time.monotonic()
                        if clock is not None and now >= next_tick:
                            clock.publish_ns(min(end_ns, begin_ns + int((now - t0) * rate * 1e9)))
                            next_tick += period_s
                            if next_tick <= now:  # fell behind: no burst to catch up
                                next_tick = now + period_s
                        progress.draw(start_s + (now - t0) * rate)
                        if now >= due:
                            break
                        wake = due if clock is None else min(due, next_tick)
                        time.sleep(max(0.0, min(_TICK_S, wake - now)))
                    transforms = data.message_transforms(k)
                    broadcaster.send_transform(transforms)
                    sent_messages += 1
                    sent_transforms += len(transforms)
                if clock is not None:
                    last_ns = int(log_ns[dynamic[-1]]) if dynamic else begin_ns
                    clock.publish_ns(max(last_ns, begin_ns))
                progress.draw(total_s, force=True)
                if not args.loop or not dynamic:
                    break
        finally:
            progress.end()
    print(
        f"tf2py play: done, sent {sent_transforms} transforms in {sent_messages} messages "
        f"and {len(statics)} static",
        flush=True,
    )
    return 0
