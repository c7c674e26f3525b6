"""``tf2py doctor``: listen to a bus (or read a bag) and report, one line each with its fix,
what breaks transform trees. The checks live in ``tf2py.doctor``; this module only listens,
reads and prints."""

from __future__ import annotations

import argparse
import json
import math
import threading
import time
from pathlib import Path
from typing import Any

from ..doctor.findings import cut
from .common import CommandError, bus_name, no_data_hint, number, parse_core_argument

NAME = "doctor"
HELP = ("check a live bus (or --from-bag BAG) for the problems that break transform trees "
        "and say how to fix each")


def configure(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--from-bag", metavar="BAG", default=None,
                        help="read a bag (MCAP, ROS 2 folder or ROS 1 .bag) instead of the bus")
    parse_core_argument(source)
    parser.add_argument("--duration", metavar="S", default="5",
                        help="seconds to listen to the bus (default 5; longer finds gaps and "
                        "slow frames more surely)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (the findings and what was heard) instead "
                        "of lines")


def _duration_of(args: argparse.Namespace) -> float:
    try:
        value = number(args.duration)
    except ValueError:
        raise CommandError(f"--duration must be a number of seconds, got "
                           f"{_cut(args.duration)!r}", 2) from None
    if not math.isfinite(value) or value <= 0.0:
        raise CommandError(f"--duration must be more than zero seconds, got "
                           f"{_cut(args.duration)!r}", 2)
    return value


def _cut(text: str) -> str:
    return cut(text)


def _listen(core: str | None, duration: float) -> tuple[Any, float]:
    """Observations of the bus at ``core`` over ``duration`` seconds, and the time listened."""
    from ..doctor import TF, TF_STATIC, Observations
    from ..transport.listener import TransformSubscriber

    observations = Observations()
    lock = threading.Lock()

    def on_batch(batch: Any) -> None:
        arrays = batch.arrays
        with lock:
            observations.add(batch.received_ns, TF_STATIC if batch.is_static else TF,
                             batch.authority, arrays.parents, arrays.children,
                             arrays.stamps_ns.tolist(), arrays.values.tolist())

    try:
        subscriber = TransformSubscriber(core=core, on_batch=on_batch)
    except ValueError as exc:  # a malformed address
        raise CommandError(str(exc), 2) from None
    start = time.monotonic()
    with subscriber:
        end = start + duration
        while (remaining := end - time.monotonic()) > 0:
            time.sleep(min(remaining, 3600.0))  # time.sleep refuses far longer waits
    with lock:
        return observations, time.monotonic() - start


def _read_bag(path: str) -> tuple[Any, float]:
    from ..bag import BagError, read_transforms
    from ..doctor import Observations, observe_bag

    try:
        bag = read_transforms(path, strict=False)
    except BagError as exc:
        raise CommandError(str(exc)) from None
    observations = Observations()
    observe_bag(bag, observations, f"bag:{Path(path).name}")
    return observations, bag.duration_ns / 1e9


def run(args: argparse.Namespace) -> int:
    from ..doctor import diagnose, recording_time_base_s
    from ..transport.address import core_address

    duration = _duration_of(args)
    if args.from_bag is not None:
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            observations, listened = _read_bag(args.from_bag)
        notes = [" ".join(str(w.message).split()) for w in caught]
        where = f"bag {_cut(args.from_bag)}"
    else:
        where = core_address(args.core)
        observations, listened = _listen(args.core, duration)
        notes = []
        if not observations.messages:
            raise CommandError(f"no tf data received from {bus_name(args.core)} in {duration:g} s "
                               f"({no_data_hint(args.core)})")
    recorded = args.from_bag is not None
    if recorded and (base_s := recording_time_base_s(observations)):
        notes.append(f"the bag's stamps are {base_s:+.0f} s from its log times (a robot on "
                     "simulated time recorded on the wall clock): clock offsets are measured "
                     "between its frames")
    findings = diagnose(observations, listened_s=listened, recorded=recorded)
    if args.json:
        print(json.dumps({
            "source": where,
            "listened_s": round(listened, 3),
            "messages": observations.messages,
            "transforms": observations.transforms,
            "frames": len(observations.children),
            "publishers": sorted({*observations.authorities,
                                  *(a for r in observations.children.values()
                                    for a in r.static_authorities)}),
            "notes": notes,
            "findings": [finding.as_dict() for finding in findings],
        }, indent=2), flush=True)
        return 1 if findings else 0
    for note in notes:
        print(f"note: {cut(note, 300)}")
    for finding in findings:
        print(finding.line())
    summary = (f"{observations.messages} messages, {observations.transforms} transforms, "
               f"{len(observations.children)} frames from {_cut(where)} over {listened:.1f} s")
    if findings:
        print(f"tf2py doctor: {len(findings)} problem{'s' if len(findings) != 1 else ''} "
              f"found ({summary})", flush=True)
        return 1
    print(f"tf2py doctor: no problems found ({summary})", flush=True)
    return 0
