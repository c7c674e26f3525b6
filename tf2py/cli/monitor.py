"""``tf2py monitor [TARGET SOURCE]``: rates and delays per frame and per broadcaster, as tf2's
``tf2_monitor`` reports them; for a pair, also the chain between them and its net delay.

A delay is the receive time (wall clock; the bus's /clock with ``--use-sim-time``) minus the
transform's stamp, in seconds. The report is refreshed in place on a terminal, and appended
when stdout is not a terminal.
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
import time
from collections import deque
from collections.abc import Collection, Sequence
from typing import Any

from .common import CommandError, bus_name, flag_number, no_data_hint, parse_core_argument
from .sim_time import add_use_sim_time_argument, now_ns, require_time, sim_clock

NAME = "monitor"
HELP = "rates, delays and broadcasters per frame, as tf2_monitor reports them"

HISTORY = 1000  # samples kept per frame and per broadcaster, as tf2_monitor
LOWPASS = 0.01  # tf2_monitor's net-delay low-pass factor


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("frames", nargs="*", metavar="FRAME",
                        help="TARGET SOURCE: also report the chain between them and its net "
                        "delay (tf2_monitor's framea frameb)")
    parser.add_argument("--period", metavar="S", default="2.0",
                        help="seconds between reports (default 2; tf2_monitor uses 10)")
    parser.add_argument("--once", action="store_true",
                        help="gather for one period, print one report and exit")
    parse_core_argument(parser)
    add_use_sim_time_argument(parser)


def _g(value: float) -> str:
    """A number as C++'s default ostream prints it (6 significant digits)."""
    return f"{value:g}"


class Statistics:
    """Delays and receive times per child frame and per broadcaster (authority), fed by
    batches from a TransformSubscriber; thread-safe."""

    def __init__(self, buffer: Any = None, clock: Any = None) -> None:
        self.buffer = buffer
        self.clock = clock  # with --use-sim-time: receive times are the bus's /clock
        self.lock = threading.Lock()
        self.frame_authority: dict[str, str] = {}
        self.frame_delays: dict[str, deque[Any]] = {}
        self.frame_received: dict[str, deque[Any]] = {}
        self.frame_static: dict[str, bool] = {}
        self.authority_delays: dict[str, deque[Any]] = {}
        self.authority_received: dict[str, deque[Any]] = {}
        self.authority_static: set[str] = set()  # broadcasters that sent statics
        self.invalid = 0
        self.latest_received_ns = 0

    def forget(self) -> None:
        """Drop the kept samples of dynamic frames and the broadcasters' (after a backward
        jump of the time); static frames, received once, stay."""
        with self.lock:
            for frame, is_static in self.frame_static.items():
                if not is_static:
                    self.frame_delays.pop(frame, None)
                    self.frame_received.pop(frame, None)
            self.authority_delays.clear()
            self.authority_received.clear()

    def on_batch(self, batch: Any) -> None:
        received_ns = batch.received_ns
        if self.clock is not None:
            received_ns = self.clock.now().nanoseconds
        rows = batch.transforms  # columns: no message object per transform
        children = rows.children
        if self.buffer is not None:
            try:
                result = self.buffer.set_transforms(rows.parents, children, rows.stamps_ns,
                                                    rows.values, batch.authority,
                                                    is_static=batch.is_static)
                self.invalid += len(result.invalid)
            except Exception:  # noqa: BLE001 - a bad message is counted, never fatal
                self.invalid += len(children)
        if received_ns == 0:
            return  # --use-sim-time and no /clock yet: no time to measure delays against
        if received_ns < self.latest_received_ns:
            self.forget()  # the /clock jumped back (a bag that loops): start over
        self.latest_received_ns = received_ns
        delays = ((received_ns - rows.stamps_ns) / 1e9).tolist()
        with self.lock:
            for child, delay in zip(children, delays):
                self.frame_authority[child] = batch.authority
                self.frame_static[child] = batch.is_static
                self.frame_delays.setdefault(child, deque(maxlen=HISTORY)).append(delay)
                self.frame_received.setdefault(child, deque(maxlen=HISTORY)).append(received_ns)
            if batch.is_static:
                # A latched static's stamp is when it was made, and it is re-sent to every
                # new subscriber: neither a delay nor a rate means anything for it.
                self.authority_static.add(batch.authority)
                return
            average = sum(delays) / max(1, len(delays))
            self.authority_delays.setdefault(batch.authority, deque(maxlen=HISTORY)).append(average)
            self.authority_received.setdefault(batch.authority, deque(maxlen=HISTORY)).append(
                received_ns)

    @staticmethod
    def rate(received: deque[int]) -> float:
        """Messages per second over the kept receive times (tf2_monitor's formula)."""
        if not received:
            return 0.0
        return float(len(received) / max(0.00001, (received[-1] - received[0]) / 1e9))

    def frame_lines(self, only: Collection[str] | None = None) -> list[str]:
        lines = []
        with self.lock:
            for frame in sorted(self.frame_delays):
                if only is not None and frame not in only:
                    continue
                delays = self.frame_delays[frame]
                received = self.frame_received[frame]
                if self.frame_static[frame]:
                    lines.append(f"Frame: {frame}, published by {self.frame_authority[frame]}, "
                                 "static (latched: no delay or rate)")
                    continue
                if len(received) < 2:
                    rate = "Rate: one sample"
                else:  # intervals between samples, not tf2's count/span (which says
                    # 100000 Hz for a single sample)
                    span = max(0.00001, (received[-1] - received[0]) / 1e9)
                    rate = f"Rate: {_g((len(received) - 1) / span)} Hz"
                lines.append(
                    f"Frame: {frame}, published by {self.frame_authority[frame]}, "
                    f"Average Delay: {_g(sum(delays) / len(delays))}, Max Delay: {_g(max(delays))}"
                    f", {rate}"
                )
        return lines

    def broadcaster_lines(self) -> list[str]:
        lines = []
        with self.lock:
            for authority in sorted(self.authority_delays):
                delays = self.authority_delays[authority]
                lines.append(
                    f"Node: {authority} {_g(self.rate(self.authority_received[authority]))} Hz, "
                    f"Average Delay: {_g(sum(delays) / len(delays))} Max Delay: {_g(max(delays))}"
                    + (", and statics" if authority in self.authority_static else "")
                )
            for authority in sorted(self.authority_static - set(self.authority_delays)):
                lines.append(f"Node: {authority} static (latched: no delay or rate)")
        return lines


class NetDelay:
    """tf2_monitor's net delay of a chain: now minus the stamp of the time-0 lookup, low-pass
    averaged, and its maximum."""

    def __init__(self) -> None:
        self.average: float | None = None
        self.maximum = -math.inf
        self.error: str | None = None

    def sample(self, buffer: Any, target_frame: str, source_frame: str,
               clock: Any = None) -> None:
        from ..buffer.exceptions import TransformException

        try:
            t = buffer.lookup_transform(target_frame, source_frame, 0)
        except TransformException as exc:
            self.error = str(exc)
            return
        self.error = None
        diff = (now_ns(clock) - t.header.stamp.nanoseconds) / 1e9
        if self.average is None:
            self.average = diff
        else:
            self.average = LOWPASS * diff + (1 - LOWPASS) * self.average
        self.maximum = max(self.maximum, diff)


def report(stats: Statistics, pair: Sequence[str] | None, buffer: Any, net: NetDelay) -> str:
    lines = []
    only = None
    if pair:
        target_frame, source_frame = pair
        lines.append(f"RESULTS: for {target_frame} to {source_frame}")
        try:
            chain = buffer.chain(source_frame, 0, target_frame, 0, source_frame)
        except Exception as exc:  # noqa: BLE001 - reported, the monitor carries on
            chain = []
            lines.append(f"Chain is: unknown ({exc})")
        else:
            lines.append("Chain is: " + " -> ".join(chain))
            only = set(chain)
        if net.average is None:
            lines.append(f"Net delay     unavailable: {net.error or 'no data yet'}")
        else:
            lines.append(f"Net delay     avg = {_g(net.average)}: max = {_g(net.maximum)}")
    else:
        lines.append("RESULTS: for all Frames")
    lines.append("Frames:")
    lines.extend(stats.frame_lines(only))
    lines.append("")
    lines.append("All Broadcasters:")
    lines.extend(stats.broadcaster_lines())
    if stats.invalid:
        lines.append(f"({stats.invalid} invalid transforms dropped)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if len(args.frames) not in (0, 2):
        raise CommandError("TF_Monitor: usage: tf2py monitor [TARGET SOURCE]", 2)
    period = flag_number(args.period, "--period", "seconds")
    pair = tuple(args.frames) if args.frames else None
    clock = sim_clock(args)
    try:
        return _monitor(args, period, pair, clock)
    finally:
        if clock is not None:
            clock.close()


def _monitor(args: argparse.Namespace, period: float, pair: Sequence[str] | None,
             clock: Any) -> int:
    from ..buffer.buffer import Buffer
    from ..transport.address import core_address
    from ..transport.listener import TransformSubscriber

    buffer = (Buffer(clock=clock) if clock is not None else Buffer()) if pair else None
    stats = Statistics(buffer, clock)
    net = NetDelay()
    where = core_address(args.core)
    try:
        subscriber = TransformSubscriber(core=args.core, on_batch=stats.on_batch)
    except ValueError as exc:  # a malformed address
        raise CommandError(str(exc), 2) from None
    tty = sys.stdout.isatty()
    subject = f"{pair[0]} -> {pair[1]}" if pair else "all frames"
    print(f"Gathering data on {subject} from {where} for {_g(period)} seconds...", flush=True)
    with subscriber:
        while True:
            end = time.monotonic() + period
            while True:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    break
                time.sleep(min(0.1, remaining))
                if pair:
                    net.sample(buffer, pair[0], pair[1], clock)
            text = report(stats, pair, buffer, net)
            if not stats.frame_delays:
                text += f"\n(no transforms received yet from {where})"
            if tty:
                sys.stdout.write("\x1b[H\x1b[2J" + text + "\n")
            else:
                sys.stdout.write("\n" + text + "\n")
            sys.stdout.flush()
            if args.once:
                require_time(clock, where, period)
                if not stats.frame_delays:  # as `tf2py frames`: nothing heard is an error
                    raise CommandError(
                        f"no tf data received from {bus_name(args.core)} in {_g(period)} s "
                        f"({no_data_hint(args.core)})"
                    )
                return 0
