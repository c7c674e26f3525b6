"""A simulated mobile robot broadcasting its frames, for the live demo (``launch/demo.yaml``).

    python -m tf2py.demo [--core ADDRESS] [--rate HZ]

Uses only tf2py's public API (``make_transform``, ``TransformBroadcaster``,
``StaticTransformBroadcaster``), as any program of yours would. Frames:

    map -> odom                slow, bounded drift of the localisation (10 Hz)
    odom -> base_link          driving a circle of radius 2 m at 0.5 m/s (``--rate``, 50 Hz)
    base_link -> left_wheel    wheels spinning about their axle (y), at the same rate
    base_link -> right_wheel
    base_link -> laser         static
    base_link -> camera        static
    camera -> camera_optical   static (z forward, x right, y down)

Distances in metres, angles in radians, stamps from the wall clock.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import time
from collections.abc import Sequence
from types import FrameType
from typing import NoReturn

import tf2py
from tf2py.buffer.messages import TransformStamped
from tf2py.buffer.time import Time

CIRCLE_RADIUS = 2.0  # m
SPEED = 0.5  # m/s
WHEEL_RADIUS = 0.1  # m
WHEEL_SEPARATION = 0.4  # m
MAP_ODOM_RATE = 10.0  # Hz


def static_transforms(stamp: Time | float) -> list[TransformStamped]:
    """The robot's fixed frames: sensors on the body, and the camera's optical frame."""
    return [
        tf2py.make_transform("base_link", "laser", (0.2, 0.0, 0.3), stamp=stamp),
        tf2py.make_transform("base_link", "camera", (0.25, 0.0, 0.4), rpy=(0.0, 0.2, 0.0),
                             stamp=stamp),
        tf2py.make_transform("camera", "camera_optical", rpy=(-math.pi / 2, 0.0, -math.pi / 2),
                             stamp=stamp),
    ]


def map_to_odom(t: float, stamp: Time | float) -> TransformStamped:
    """Localisation drift: a few tens of centimetres and a few degrees, slowly, bounded."""
    return tf2py.make_transform(
        "map", "odom",
        (0.3 * math.sin(2 * math.pi * t / 120.0), 0.2 * math.sin(2 * math.pi * t / 90.0), 0.0),
        rpy=(0.0, 0.0, 0.05 * math.sin(2 * math.pi * t / 100.0)),
        stamp=stamp,
    )


def moving_transforms(t: float, stamp: Time | float) -> list[TransformStamped]:
    """odom -> base_link on a circle (counter-clockwise, starting at the origin facing +x),
    and the wheels, turning at the speed each one covers on its own circle."""
    omega = SPEED / CIRCLE_RADIUS  # rad/s
    heading = omega * t
    base = tf2py.make_transform(
        "odom", "base_link",
        (CIRCLE_RADIUS * math.sin(heading), CIRCLE_RADIUS * (1.0 - math.cos(heading)), 0.0),
        rpy=(0.0, 0.0, math.atan2(math.sin(heading), math.cos(heading))),
        stamp=stamp,
    )
    transforms = [base]
    for side, offset in (("left", 1.0), ("right", -1.0)):
        radius = CIRCLE_RADIUS - offset * WHEEL_SEPARATION / 2  # the left wheel is inside
        angle = (omega * radius * t / WHEEL_RADIUS) % (2 * math.pi)
        transforms.append(tf2py.make_transform(
            "base_link", f"{side}_wheel", (0.0, offset * WHEEL_SEPARATION / 2, WHEEL_RADIUS),
            rpy=(0.0, math.atan2(math.sin(angle), math.cos(angle)), 0.0), stamp=stamp,
        ))
    return transforms


def _stop(signum: int, frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tf2py.demo",
        description="A simulated mobile robot broadcasting map, odom, base_link, wheel, laser "
        "and camera frames on the bus.",
    )
    parser.add_argument("--core", metavar="ADDRESS", default=None,
                        help="the bus (default: $TF2PY_CORE, else tcp://127.0.0.1:7400)")
    parser.add_argument("--rate", type=float, default=50.0, metavar="HZ",
                        help="odom -> base_link and wheel updates per second (default 50)")
    parser.add_argument("--duration", type=float, default=None, metavar="S",
                        help="stop after S seconds (default: run until stopped)")
    args = parser.parse_args(argv)
    if not (args.rate > 0 and math.isfinite(args.rate)):
        parser.error(f"--rate must be a positive number of Hz, got {args.rate}")
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)

    try:
        with tf2py.StaticTransformBroadcaster(core=args.core) as static, \
                tf2py.TransformBroadcaster(core=args.core) as broadcaster:
            static.send_transform(static_transforms(tf2py.Time.now()))
            print(f"tf2py demo: robot driving a circle of {CIRCLE_RADIUS:g} m at {SPEED:g} m/s; "
                  f"odom -> base_link at {args.rate:g} Hz", flush=True)
            start = time.monotonic()
            period = 1.0 / args.rate
            next_map = 0.0
            tick = 0
            while True:
                t = time.monotonic() - start
                if args.duration is not None and t >= args.duration:
                    break
                stamp = tf2py.Time.now()
                transforms = moving_transforms(t, stamp)
                if t >= next_map:
                    transforms.insert(0, map_to_odom(t, stamp))
                    next_map += 1.0 / MAP_ODOM_RATE
                broadcaster.send_transform(transforms)
                tick += 1
                delay = start + tick * period - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                else:  # fell behind (a busy machine): skip the missed ticks
                    tick = int((time.monotonic() - start) / period)
    except KeyboardInterrupt:
        pass
    except ValueError as exc:  # a malformed --core address
        print(f"python -m tf2py.demo: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
