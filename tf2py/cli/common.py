"""What every subcommand shares: clean stops on SIGINT/SIGTERM and one-line errors."""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import NoReturn


class CommandError(Exception):
    """A failure to report as one line on stderr, with a non-zero exit code."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


def _raise_interrupt(signum: int, frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt


def install_signal_handlers() -> None:
    """Make SIGTERM stop a command the way Ctrl-C does (a KeyboardInterrupt in the main
    thread), so every command has one clean shutdown path.

    SIGINT is handled even when it was inherited as ignored (a command started in the
    background of a script): `tf2py launch` stops its processes with SIGINT first, so every
    command must answer it."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupt)
        signal.signal(signal.SIGINT, _raise_interrupt)


def parse_core_argument(parser: argparse.ArgumentParser | argparse._ActionsContainer) -> None:
    """Add ``--core ADDRESS`` (else TF2PY_CORE, else the loopback default)."""
    parser.add_argument(
        "--core",
        metavar="ADDRESS",
        default=None,
        help="where the bus is, e.g. tcp://127.0.0.1:7400, or a ROS 2 graph: ros2:// or "
        "ros2://DOMAIN_ID (default: $TF2PY_CORE, else tcp://127.0.0.1:7400)",
    )


def number(text: str | float) -> float:
    """``float(text)`` for a number typed on a command line, without Python's extensions:
    ``1_0`` is refused (ValueError), not read as 10. ``inf``, ``-inf`` and ``nan`` are numbers
    here; callers refuse what they cannot use, with their own message."""
    if isinstance(text, str) and "_" in text:
        raise ValueError(f"not a number: {text!r}")
    return float(text)


# A word that is a negative number (so an option's value, not an option): -1, -.5, -1e-05,
# -inf, -nan. argparse's own pattern knows only -1 and -.5.
NEGATIVE_NUMBER = r"^-(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|infinity|nan)$"


def no_data_hint(core: str | None, broadcasting: bool = True) -> str:
    """What to check when nothing was heard on the bus at ``core``: for a ROS 2 graph, ROS 2's
    discovery; for a tf2py bus, the core (and, when its handshake refuses us, its keys).
    ``broadcasting``: also ask whether anything broadcasts."""
    import os

    from ..transport.interface import is_ros2

    if is_ros2(core):
        return ("is a ROS 2 node publishing /tf on that domain? Check ROS_DOMAIN_ID, "
                "ROS_LOCALHOST_ONLY / ROS_AUTOMATIC_DISCOVERY_RANGE and ROS_STATIC_PEERS on "
                "both sides, and that multicast discovery reaches this host")
    refusal = handshake_refusal(core)
    if refusal:
        return refusal
    keys = " with the same --keys" if os.environ.get("TF2PY_KEYS") else ""
    if not broadcasting:
        return f"is `tf2py core` running there{keys}?"
    return f"is `tf2py core` running there{keys}, and is anything broadcasting?"


def bus_name(core: str | None) -> str:
    """"the core at ADDRESS", or "the ROS 2 graph at ros2://..." for messages."""
    from ..transport.address import core_address
    from ..transport.interface import is_ros2

    kind = "the ROS 2 graph" if is_ros2(core) else "the core"
    return f"{kind} at {core_address(core)}"


def handshake_refusal(core: str | None) -> str | None:
    """Why the tf2py core at ``core`` refuses this process's handshake (keys it lacks, or
    keys it does not accept), or None if it does not (or nothing answers)."""
    from ..transport.address import bus_endpoints
    from ..transport.zmq.handshake import handshake_problem
    from ..transport.keys import KeysError, load_keys

    try:
        _, subscribe_endpoint = bus_endpoints(core)
        keys = load_keys()
    except (ValueError, KeysError):
        return None
    problem = handshake_problem(subscribe_endpoint, keys, timeout=1.5)
    if problem is None:
        return None
    return problem.replace(subscribe_endpoint, core_address_of(core))


def core_address_of(core: str | None) -> str:
    from ..transport.address import core_address

    return str(core_address(core))


def cut(text: str, limit: int = 80) -> str:
    """``text`` on one line and at most ``limit`` characters, for quoting a user's input (a
    frame id, a file's line) in a one-line message."""
    from ..doctor.findings import cut as cut_text

    return cut_text(str(text), limit)
