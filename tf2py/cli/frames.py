"""``tf2py frames``: listen to the bus for a while, then print the frames as an indented tree,
each edge with its parent, broadcaster, rate and age, and an alert when the frames form
several unconnected trees (lookups between them fail with ConnectivityException)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .common import CommandError, bus_name, flag_number, no_data_hint, parse_core_argument, wait_or_interrupt
from .sim_time import add_use_sim_time_argument, now_ns, require_time, sim_clock

NAME = "frames"
HELP = "list the frames on the bus as a tree, with parents, broadcasters, rates and ages"


def add_wait_time_argument(parser: argparse.ArgumentParser, default: float) -> None:
    parser.add_argument("-t", "--wait-time", metavar="S", default=str(default),
                        help=f"seconds to listen before reporting (default {default})")


def configure(parser: argparse.ArgumentParser) -> None:
    add_wait_time_argument(parser, 2.0)
    parse_core_argument(parser)
    add_use_sim_time_argument(parser)


def wait_time_of(args: argparse.Namespace) -> float:
    return flag_number(args.wait_time, "--wait-time", "seconds", zero=True)


def listen(core: str | None, wait_time: float, clock: Any = None,
           command: str = "frames") -> tuple[Any, float, bool]:
    """``(buffer, seconds, interrupted)``: a Buffer filled by listening to the bus at ``core``
    for ``wait_time`` seconds, or until Ctrl-C or SIGTERM (``interrupted``: what was heard
    until then is kept); it forgets what it heard before a backward jump of ``clock``."""
    from ..buffer.buffer import Buffer
    from ..transport.listener import TransformListener

    buffer = Buffer(clock=clock) if clock is not None else Buffer()
    try:
        listener = TransformListener(buffer, core=core)
    except ValueError as exc:  # a malformed address
        raise CommandError(str(exc), 2) from None
    start = time.monotonic()
    with listener:
        interrupted = wait_or_interrupt(
            wait_time, lambda: listener.received_messages > 0,
            f"tf2py {command}: hearing transforms from {bus_name(core)}")
    return buffer, time.monotonic() - start, interrupted


def frame_trees(info: dict[str, Any]) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """``(roots, children, looped)`` of the frame graph in ``frames_info()`` form: roots are
    parents that are not children themselves (sorted), children maps a frame to its sorted
    child frames, looped lists frames that never reach a root (a loop in the tree)."""
    children: dict[str, list[str]] = {}
    for child, entry in info.items():
        children.setdefault(entry["parent"], []).append(child)
    for kids in children.values():
        kids.sort()
    roots = sorted(p for p in children if p not in info)
    reached = set()
    stack = list(roots)
    while stack:
        frame = stack.pop()
        if frame in reached:
            continue
        reached.add(frame)
        stack.extend(children.get(frame, ()))
    looped = sorted(f for f in info if f not in reached)
    return roots, children, looped


def _edge_text(entry: dict[str, Any], now_ns: int) -> str:
    parts = [f"parent {entry['parent']}", f"broadcaster {entry['broadcaster']}"]
    if entry.get("is_static"):
        parts.append("static")
    else:
        age = (now_ns - entry["most_recent_ns"]) / 1e9
        parts.append(f"{entry['rate']:.2f} Hz")
        parts.append(f"{age:.3f} s old")
    return "(" + ", ".join(parts) + ")"


def format_tree(info: dict[str, Any], now_ns: int) -> str:
    """The indented tree of ``frames_info()``, roots at the left margin, and the alerts."""
    roots, children, looped = frame_trees(info)
    lines: list[str] = []

    def walk(frame: str, prefix: str, last: bool, depth: int) -> None:
        if depth == 0:
            lines.append(frame)
            child_prefix = ""
        else:
            lines.append(f"{prefix}{'`-- ' if last else '+-- '}{frame}  "
                         f"{_edge_text(info[frame], now_ns)}")
            child_prefix = prefix + ("    " if last else "|   ")
        kids = children.get(frame, [])
        for i, kid in enumerate(kids):
            walk(kid, child_prefix, i == len(kids) - 1, depth + 1)

    for root in roots:
        walk(root, "", True, 0)
    if len(roots) > 1:
        lines.append("")
        lines.append(
            f"ALERT: the frames form {len(roots)} unconnected trees (roots: {', '.join(roots)}); "
            "a lookup between frames of different trees fails with ConnectivityException."
        )
    if looped:
        lines.append("")
        lines.append(f"ALERT: frames in a loop, not connected to any root: {', '.join(looped)}")
        for frame in looped:
            lines.append(f"  {frame}  {_edge_text(info[frame], now_ns)}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ..transport.address import core_address

    wait_time = wait_time_of(args)
    clock = sim_clock(args)
    try:
        buffer, listened, interrupted = listen(args.core, wait_time, clock)
        now = now_ns(clock)
    finally:
        if clock is not None:
            clock.close()
    info = buffer.frames_info()
    where = core_address(args.core)
    require_time(clock, where, wait_time)
    seconds = f"{listened:.1f} s (stopped early)" if interrupted else f"{wait_time:g} s"
    if not info:
        nothing = (f"no tf data received from {bus_name(args.core)} in {seconds} "
                   f"({no_data_hint(args.core)})")
        if interrupted:  # a stop asked for is a clean stop: say what was heard, exit 0
            print(f"tf2py frames: {nothing}", file=sys.stderr, flush=True)
            return 0
        raise CommandError(nothing)
    n = len(info)
    print(f"{n} frame{'s' if n != 1 else ''} with a parent, heard on {where} in {seconds}:")
    print(format_tree(info, now), flush=True)
    return 0
