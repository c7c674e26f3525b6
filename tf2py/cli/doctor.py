"""``tf2py doctor``: listen to a bus (or read a bag) and report, one line each with its fix,
what breaks transform trees. The checks live in ``tf2py.doctor``; this module only listens,
reads and prints."""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path
from typing import Any

from ..doctor.findings import cut
from .common import CommandError, bus_name, flag_number, no_data_hint, parse_core_argument, wait_or_interrupt

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
    parser.add_argument("--robot", metavar="URDF", default=None,
                        help="check /joint_states against this robot (URDF or xacro file); "
                        "default: the /robot_description of the bus (ROS 2, Zenoh) or bag")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (the findings and what was heard) instead "
                        "of lines")


def _cut(text: str) -> str:
    return cut(text)


def _listen(core: str | None, duration: float) -> tuple[Any, float, Any]:
    """Observations of the bus at ``core`` over ``duration`` seconds, the time listened, and
    the joint states and robot description heard (a ``JointWatch``)."""
    from ..doctor import TF, TF_STATIC, Observations
    from ..transport.listener import TransformSubscriber

    observations = Observations()
    lock = threading.Lock()

    def on_batch(batch: Any) -> None:
        rows = batch.transforms
        with lock:
            observations.add(batch.received_ns, TF_STATIC if batch.is_static else TF,
                             batch.authority, rows.parents, rows.children,
                             rows.stamps_ns.tolist(), rows.values.tolist())

    try:
        subscriber = TransformSubscriber(core=core, on_batch=on_batch)
    except ValueError as exc:  # a malformed address
        raise CommandError(str(exc), 2) from None
    start = time.monotonic()
    watch, receivers = _watch_joints(core)
    try:
        with subscriber:
            wait_or_interrupt(  # Ctrl-C: report what was heard so far
                duration, lambda: observations.messages > 0,
                f"tf2py doctor: hearing transforms from {bus_name(core)}")
    finally:
        for receiver in receivers:
            receiver.close()
    with lock:
        return observations, time.monotonic() - start, watch


def _watch_joints(core: str | None) -> tuple[Any, list[Any]]:
    """A ``JointWatch`` fed from /joint_states and /robot_description at ``core``, and its
    subscriptions (none on a bus that carries no typed topics)."""
    from ..doctor.joints import JointWatch
    from ..robot.joint_state import JOINT_STATES_SENSOR, ROBOT_DESCRIPTION
    from ..transport.topics import subscribe_topic

    watch = JointWatch()
    receivers = []
    for topic, on_message in ((JOINT_STATES_SENSOR, watch.on_joint_state),
                              (ROBOT_DESCRIPTION, watch.on_description)):
        try:
            receivers.append(subscribe_topic(topic, on_message, core=core))
        except NotImplementedError:
            pass
    return watch, receivers


def _joint_findings(robot: str | None, heard: Any, description: str | None,
                    notes: list[str]) -> list[Any]:
    """The joint checks against ``--robot``, else the description heard; none (and a note
    when joint states were heard) without a model."""
    from ..doctor.joints import diagnose_joints
    from ..robot.errors import RobotModelError
    from ..robot.model import RobotModel

    try:
        if robot is not None:
            model = RobotModel.from_urdf(robot)
        elif description is not None:
            model = RobotModel.from_urdf_string(description)
        else:
            if heard.messages:
                notes.append(f"{heard.messages} joint states heard, but no robot description "
                             "to check them against: give --robot URDF")
            return []
    except RobotModelError as exc:
        raise CommandError(str(exc)) from None
    return diagnose_joints(heard, model)


def _read_bag(path: str) -> tuple[Any, float, Any]:
    from ..bag import BagError, read_transforms
    from ..bag.robot import read_joint_states
    from ..doctor import Observations, observe_bag
    from ..doctor.joints import JointObservations

    authority = f"bag:{Path(path).name}"
    try:
        states = read_joint_states(path, strict=False)
    except BagError as exc:
        raise CommandError(str(exc)) from None
    heard = JointObservations()
    for k in states.layout_of.tolist():
        names = states.layouts[k]
        heard.add(authority, names, len(names))
    mismatched = states.dropped.get("length_mismatch", 0)  # left out by the reader
    if mismatched:
        heard.invalid[authority] = mismatched
        heard.messages += mismatched
    observations = Observations()
    try:
        bag = read_transforms(path, strict=False)
    except BagError as exc:
        if not len(states):
            raise CommandError(str(exc)) from None
        return observations, (int(states.log_ns[-1]) - int(states.log_ns[0])) / 1e9, (
            heard, states.description)
    observe_bag(bag, observations, authority)
    return observations, bag.duration_ns / 1e9, (heard, states.description)


# What a bag reader's warning says when part of the bag could not be read (tf2py.bag).
_DAMAGE_WORDS = ("corrupt", "truncated", "could not be decoded", "invalid transforms skipped")


def _damaged_bag(note: str) -> Any:
    """A finding for a bag read only in part: what was lost is what doctor could not check."""
    from ..doctor.findings import Finding

    return Finding("damaged_bag", f"the bag is damaged: {note}.",
                   "re-record it, or check the recorder stopped cleanly (a killed recorder "
                   "leaves an MCAP without its end); what was lost was not checked")


def run(args: argparse.Namespace) -> int:
    from ..doctor import diagnose, recording_time_base_s
    from ..transport.address import core_address

    duration = flag_number(args.duration, "--duration", "seconds")
    if args.from_bag is not None:
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            observations, listened, (heard, description) = _read_bag(args.from_bag)
        notes = [" ".join(str(w.message).split()) for w in caught]
        damage = [n for n in notes if any(w in n for w in _DAMAGE_WORDS)]
        notes = [n for n in notes if n not in damage]
        where = f"bag {_cut(args.from_bag)}"
    else:
        where = core_address(args.core)
        observations, listened, watch = _listen(args.core, duration)
        heard, description = watch.snapshot()
        notes, damage = [], []
        if not observations.messages and not heard.messages:
            raise CommandError(f"no tf data received from {bus_name(args.core)} in {duration:g} s "
                               f"({no_data_hint(args.core)})")
    recorded = args.from_bag is not None
    if recorded and (base_s := recording_time_base_s(observations)):
        notes.append(f"the bag's stamps are {base_s:+.0f} s from its log times (a robot on "
                     "simulated time recorded on the wall clock): clock offsets are measured "
                     "between its frames")
    findings = diagnose(observations, listened_s=listened, recorded=recorded)
    if recorded:
        findings[:0] = [_damaged_bag(note) for note in damage]
    findings += _joint_findings(args.robot, heard, description, notes)
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
