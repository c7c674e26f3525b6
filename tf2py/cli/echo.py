"""``tf2py echo TARGET SOURCE``: print a transform repeatedly, as ROS 2 ``tf2_echo`` does.

As in tf2_echo, the first argument is the lookup's target frame: the block printed is the pose
of SOURCE expressed in TARGET (``lookup_transform(TARGET, SOURCE, 0)``, time 0 meaning the
latest time at which the whole chain is known).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from typing import Any

from .common import CommandError, flag_number, no_data_hint, number, parse_core_argument
from .sim_time import add_use_sim_time_argument, now_ns, sim_clock

NAME = "echo"
_LONGEST_SLEEP_S = 3600.0  # time.sleep refuses far longer waits (a rate of 1e-12 Hz, say)
HELP = "print a transform repeatedly, as ROS 2 tf2_echo does"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target_frame", metavar="TARGET",
                        help="the frame the transform maps into (tf2_echo's first argument)")
    parser.add_argument("source_frame", metavar="SOURCE",
                        help="the frame whose pose is printed, expressed in TARGET")
    parser.add_argument("echo_rate", metavar="RATE", nargs="?", default=None,
                        help="blocks printed per second, as tf2_echo's third argument (same as "
                        "--rate)")
    parser.add_argument("--rate", metavar="HZ", default=None,
                        help="blocks printed per second (default 1.0)")
    parser.add_argument("--once", action="store_true",
                        help="print one block as soon as the transform is available, then exit")
    parser.add_argument("--timeout", metavar="S", default=None,
                        help="give up with an error if the transform is not available within "
                        "S seconds (default: wait until stopped)")
    where = parser.add_mutually_exclusive_group()
    parse_core_argument(where)
    where.add_argument("--server", metavar="ADDRESS", default=None,
                       help="ask the buffer server at ADDRESS (see `tf2py server`) instead of "
                       "listening to the bus")
    add_use_sim_time_argument(parser)


def parse_rate(text: str) -> float:
    """The echo rate in Hz; tf2_echo's message for text that is not a number."""
    try:
        rate = number(text)
    except ValueError:
        raise CommandError(
            f"Failed to convert rate argument '{text}' to a floating-point number", 2
        ) from None
    if not math.isfinite(rate) or rate <= 0.0:
        raise CommandError(f"rate must be a positive number of Hz, got '{text}'", 2)
    return rate


def _cell(value: float) -> str:
    return f"{value:.3f}"


def euler_ypr(matrix: Any) -> tuple[float, float, float]:
    """(roll, pitch, yaw) in radians of a 3x3 rotation matrix, as tf2's Matrix3x3::getEulerYPR
    (first solution), so that the RPY lines match tf2_echo digit for digit."""
    m20 = float(matrix[2][0])
    if abs(m20) >= 1.0:
        delta = math.atan2(float(matrix[2][1]), float(matrix[2][2]))
        pitch = math.pi / 2.0 if m20 < 0 else -math.pi / 2.0
        return delta, pitch, 0.0
    pitch = -math.asin(m20)
    cp = math.cos(pitch)
    roll = math.atan2(float(matrix[2][1]) / cp, float(matrix[2][2]) / cp)
    yaw = math.atan2(float(matrix[1][0]) / cp, float(matrix[0][0]) / cp)
    return roll, pitch, yaw


def format_block(transform: Any) -> str:
    """tf2_echo's block for a TransformStamped: At time, Translation, Quaternion, RPY in
    radians and degrees, and the 4x4 matrix (3 decimals; matrix cells 6 wide).

    The stamp is printed as seconds with 9 zero-padded decimals (tf2_echo prints the
    nanoseconds without padding, so 5.05 s would read 5.50000000; we print 5.050000000)."""
    stamp = transform.header.stamp
    t = transform.transform.translation
    q = transform.transform.rotation
    matrix = transform.transform.as_matrix()
    roll, pitch, yaw = euler_ypr(matrix)
    lines = [
        f"At time {stamp.sec}.{stamp.nanosec:09d}",
        f"- Translation: [{_cell(t.x)}, {_cell(t.y)}, {_cell(t.z)}]",
        f"- Rotation: in Quaternion [{_cell(q.x)}, {_cell(q.y)}, {_cell(q.z)}, {_cell(q.w)}]",
        f"- Rotation: in RPY (radian) [{_cell(roll)}, {_cell(pitch)}, {_cell(yaw)}]",
        "- Rotation: in RPY (degree) "
        f"[{_cell(math.degrees(roll))}, {_cell(math.degrees(pitch))}, {_cell(math.degrees(yaw))}]",
        "- Matrix:",
    ]
    for row in matrix:
        lines.append("".join(f" {float(v):6.3f}" for v in row))
    return "\n".join(lines)


class _LocalSource:
    """Lookups on a Buffer filled by a TransformListener on the bus."""

    def __init__(self, core: str | None, clock: Any = None) -> None:
        from ..buffer.buffer import Buffer
        from ..transport.address import core_address
        from ..transport.interface import is_ros2
        from ..transport.listener import TransformListener

        self.where = (f"the ROS 2 graph at {core_address(core)}" if is_ros2(core) else
                      f"the core at {core_address(core)}")
        self.core = core
        self._no_data_hint: str | None = None
        # With --use-sim-time: forget the data when the bus's /clock jumps back (a looping bag).
        self.buffer = Buffer(clock=clock) if clock is not None else Buffer()
        try:
            self.listener = TransformListener(self.buffer, core=core)
        except ValueError as exc:  # a malformed address
            raise CommandError(str(exc), 2) from None

    def wait(self, target_frame: str, source_frame: str, timeout: float) -> str | None:
        """None once the transform is available, else tf2's reason why not (after waiting up
        to ``timeout`` seconds for it)."""
        if self.buffer.can_transform(target_frame, source_frame, 0, timeout=timeout):
            return None
        # tf2_echo prints canTransform's reason; BufferCore keeps that text (tf2_py's
        # can_transform_core) behind a private name, so fall back to the lookup's own error.
        can_transform_core = getattr(self.buffer, "_can_transform_core", None)
        if can_transform_core is not None:
            with getattr(self.buffer, "_lock", contextlib.nullcontext()):
                possible, reason = can_transform_core(target_frame, source_frame, 0)
            if not possible and reason:
                return self._suggest(reason, target_frame, source_frame)
        try:
            self.buffer.lookup_transform(target_frame, source_frame, 0)
        except Exception as exc:  # noqa: BLE001 - the reason is what we print
            return str(exc)
        return None

    def _suggest(self, reason: str, target_frame: str, source_frame: str) -> str:
        """tf2's canTransform reason, with "Did you mean ...?" appended for a frame that does
        not exist but is close to one that does (a typo)."""
        if not reason.endswith("frame does not exist"):
            return reason
        from ..buffer.errors import did_you_mean_sentence

        frames = self.buffer.get_frames()
        for frame in (target_frame, source_frame):
            if f'"{frame}"' in reason:
                sentence = did_you_mean_sentence(frame, frames)
                if sentence:
                    return f"{reason}. {sentence}"
        return reason

    def lookup(self, target_frame: str, source_frame: str) -> Any:
        return self.buffer.lookup_transform(target_frame, source_frame, 0)

    def failure_details(self) -> str:
        return "The current list of frames is:\n" + self.buffer.all_frames_as_string()

    def hint(self) -> str:
        if not self.buffer.get_frames():
            return f" (no transforms received at all: {self.no_data_hint()})"
        return ""

    def no_data_hint(self) -> str:
        if self._no_data_hint is None:  # asked once: it may try a handshake with the core
            self._no_data_hint = no_data_hint(self.core)
        return self._no_data_hint

    def silence(self, seconds: float) -> str | None:
        """The one-time notice that nothing at all has arrived, or None."""
        if self.buffer.get_frames():
            return None
        return (f"tf2py echo: no transforms received at all from {self.where} in "
                f"{seconds:.0f} s: {self.no_data_hint()}")

    def close(self) -> None:
        self.listener.close()


class _ServerSource:
    """Lookups through a BufferClient on a buffer server."""

    def __init__(self, address: str | None) -> None:
        import zmq

        from ..server.client import BufferClient
        from ..transport.address import server_address

        self.address = server_address(address)
        self.where = f"the buffer server at {self.address}"
        self.answered = False
        try:
            self.client: Any = BufferClient(self.address, timeout_padding=1.0)
        except (ValueError, zmq.ZMQError) as exc:  # a malformed address (ZeroMQ refuses it)
            raise CommandError(f"invalid address {self.address!r}: {exc}", 2) from None

    def wait(self, target_frame: str, source_frame: str, timeout: float) -> str | None:
        from ..buffer.exceptions import TimeoutException, TransformException

        try:
            self.client.lookup_transform(target_frame, source_frame, 0, timeout=timeout)
            self.answered = True
            return None
        except TimeoutException as exc:
            # Either the server waited out our timeout (it answered) or it never answered.
            text = str(exc)
            return text or f"no answer from the buffer server at {self.address}"
        except TransformException as exc:
            self.answered = True
            return str(exc)

    def lookup(self, target_frame: str, source_frame: str) -> Any:
        return self.client.lookup_transform(target_frame, source_frame, 0, timeout=0.0)

    def failure_details(self) -> str:
        return ""

    def hint(self) -> str:
        if not self.answered:
            return " (is `tf2py server` running there?)"
        return ""

    def silence(self, seconds: float) -> str | None:
        if self.answered:
            return None
        return (f"tf2py echo: no answer at all from {self.where} in {seconds:.0f} s: is "
                "`tf2py server` running there?")

    def close(self) -> None:
        self.client.close()


def check_frame_id(frame: str, which: str) -> None:
    """Refuse at once a frame id no lookup can ever accept (tf2's InvalidArgument text), rather
    than wait for it forever: empty, or with a leading '/' (which broadcasts have stripped)."""
    if not frame:
        raise CommandError(f'Invalid frame ID "" passed to lookupTransform argument {which} - '
                           "in tf2 frame_ids cannot be empty", 2)
    if frame.startswith("/"):
        hint = f" (write {frame.lstrip('/')!r})" if frame.lstrip("/") else ""
        raise CommandError(f'Invalid frame ID "{frame}" passed to lookupTransform argument '
                           f"{which} - in tf2 frame_ids cannot start with a '/'{hint}", 2)


#: After this long with nothing received at all, echo says so (once), timeout or not.
SILENCE_NOTICE_S = 3.0


def wait_until_available(source: Any, target_frame: str, source_frame: str,
                         deadline: float | None,
                         timeout_text: str | None, period: float = 1.0) -> None:
    """Return once ``source`` can look the transform up; meanwhile print tf2_echo's waiting
    line with tf2's reason, at most once per ``period`` seconds even when the source answers
    at once (a server's immediate error, say). CommandError at ``deadline`` (monotonic s),
    whose message gives the wait as ``timeout_text`` (None only with no deadline).
    After ``SILENCE_NOTICE_S`` with nothing received at all, say so once."""
    began = time.monotonic()
    noticed = False
    while True:
        started = time.monotonic()
        wait = period if deadline is None else max(0.0, min(period, deadline - started))
        reason = source.wait(target_frame, source_frame, wait)
        if reason is None:
            return
        if deadline is not None and time.monotonic() >= deadline:
            raise CommandError(
                f"no transform {target_frame} -> {source_frame} from {source.where} within "
                f"{timeout_text} s: {reason}{source.hint()}"
            )
        print(f"Waiting for transform {target_frame} ->  {source_frame}: {reason}",
              file=sys.stderr, flush=True)
        waited = time.monotonic() - began
        if not noticed and waited >= SILENCE_NOTICE_S:
            noticed = True
            notice = source.silence(waited)
            if notice:
                print(notice, file=sys.stderr, flush=True)
        # Pace the loop: the source may have answered before its wait was up.
        end = started + period if deadline is None else min(started + period, deadline)
        remaining = end - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)


def run(args: argparse.Namespace) -> int:
    if args.rate is not None and args.echo_rate is not None:
        raise CommandError("give the rate once: as the third argument or as --rate", 2)
    rate = parse_rate(args.rate or args.echo_rate or "1.0")
    deadline = None
    if args.timeout is not None:
        deadline = time.monotonic() + flag_number(args.timeout, "--timeout", "seconds")
    target_frame, source_frame = args.target_frame, args.source_frame

    for which, frame in (("target_frame", target_frame), ("source_frame", source_frame)):
        check_frame_id(frame, which)

    if args.use_sim_time and args.server is not None:
        raise CommandError("--use-sim-time goes with --core (the buffer server has its own "
                           "clock: run `tf2py server --use-sim-time`)", 2)
    clock = sim_clock(args)
    try:
        source = _ServerSource(args.server) if args.server is not None else \
            _LocalSource(args.core, clock)
    except BaseException:
        if clock is not None:
            clock.close()
        raise
    try:
        wait_until_available(source, target_frame, source_frame, deadline, args.timeout)
        # Seconds as floats: a tiny rate gives a huge (even infinite) period, slept in pieces.
        period_s = 1.0 / rate
        next_s = time.monotonic()
        while True:
            try:
                transform = source.lookup(target_frame, source_frame)
            except Exception as exc:  # noqa: BLE001 - tf2_echo reports and carries on
                from ..buffer.exceptions import TransformException

                if not isinstance(exc, TransformException):
                    raise
                print(f"Failure at {now_ns(clock) / 1e9:.9f}", flush=True)
                print(f"Exception thrown:{exc}", flush=True)
                details = source.failure_details()
                if details:
                    print(details, end="" if details.endswith("\n") else "\n", flush=True)
                if args.once:
                    raise CommandError(f"lookup {target_frame} -> {source_frame} failed: {exc}") from None
            else:
                print(format_block(transform), flush=True)
                if args.once:
                    return 0
            next_s += period_s
            if next_s <= time.monotonic():
                next_s = time.monotonic()  # fell behind: no burst to catch up
            while (delay := next_s - time.monotonic()) > 0:
                time.sleep(min(delay, _LONGEST_SLEEP_S))
    finally:
        source.close()
        if clock is not None:
            clock.close()
