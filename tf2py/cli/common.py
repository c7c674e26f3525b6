"""What every subcommand shares: clean stops on SIGINT/SIGTERM and one-line errors."""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, NoReturn


class CommandError(Exception):
    """A failure to report as one line on stderr, with a non-zero exit code."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


_say_lock = threading.Lock()


def say(line: str) -> None:
    """Print one whole line on stdout, from any thread: ``print`` writes a line and its
    newline separately, so two threads printing at once can join two lines and leave an empty
    one, which breaks a reader of ``--json`` lines."""
    with _say_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


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


def wait_for_interrupt() -> NoReturn:
    """Block until Ctrl-C or SIGTERM raise KeyboardInterrupt (``install_signal_handlers``):
    what a serving command does once it is ready."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    while True:
        if in_main_thread:
            signal.pause()
        else:
            threading.Event().wait()


#: Listening this long or longer, a command says once on stderr when it starts hearing.
LONG_WAIT_S = 5.0


def wait_or_interrupt(seconds: float, heard: Callable[[], bool] | None = None,
                      hearing: str = "") -> bool:
    """Sleep ``seconds``, or until Ctrl-C or SIGTERM; True when interrupted. For commands that
    listen for a while and then report: a stop request ends the listening, and they report
    what they heard (as ROS's tools do) instead of throwing it away. For a long wait
    (``LONG_WAIT_S`` or more), ``hearing`` is printed on stderr once ``heard()`` first holds,
    with how to report at once."""
    import sys
    import time

    end = time.monotonic() + seconds
    told = heard is None or seconds < LONG_WAIT_S
    try:
        while (remaining := end - time.monotonic()) > 0:
            if not told and heard is not None and heard():
                told = True
                print(f"{hearing}; Ctrl-C reports what was heard now, else in "
                      f"{remaining:.0f} s", file=sys.stderr, flush=True)
            # time.sleep refuses far longer waits; polled while waiting to tell the hearing
            time.sleep(min(remaining, 3600.0 if told else 0.05))
    except KeyboardInterrupt:
        return True
    return False


def parse_core_argument(parser: argparse.ArgumentParser | argparse._ActionsContainer) -> None:
    """Add ``--core ADDRESS`` (else TF2PY_CORE, else the loopback default)."""
    parser.add_argument(
        "--core",
        metavar="ADDRESS",
        default=None,
        help="where the bus is: a tf2py core, tcp://HOST:PORT; a ROS 2 graph over DDS, "
        "ros2:// or ros2://DOMAIN_ID; or Zenoh (rmw_zenoh's wire), zenoh:// (a peer) or "
        "zenoh://tcp/HOST:PORT (a router), with ?namespace=/robot1&domain=N "
        "(default: $TF2PY_CORE, else tcp://127.0.0.1:7400)",
    )


def number(text: str | float) -> float:
    """``float(text)`` for a number typed on a command line, without Python's extensions:
    ``1_0`` is refused (ValueError), not read as 10. ``inf``, ``-inf`` and ``nan`` are numbers
    here; callers refuse what they cannot use, with their own message."""
    if isinstance(text, str) and "_" in text:
        raise ValueError(f"not a number: {text!r}")
    return float(text)


def flag_number(text: str, flag: str, unit: str | None = None, *, zero: bool = False) -> float:
    """The value ``text`` given to ``flag`` (e.g. ``--period``) as a finite number above zero
    (or zero or more, with ``zero``), else a one-line CommandError with exit code 2 that names
    the flag, the ``unit`` (seconds, Hz) and what was typed: "must be a number of seconds"
    for a word, "must be a positive number of seconds" (or "zero or more seconds") for a
    number out of range (negative, zero, infinite or nan)."""
    of_unit = f" of {unit}" if unit else ""
    try:
        value = number(text)
    except ValueError:
        raise CommandError(f"{flag} must be a number{of_unit}, got {cut(text)!r}", 2) from None
    if not math.isfinite(value) or value < 0.0 or (value == 0.0 and not zero):
        wanted = (f"zero or more {unit}" if unit else "a non-negative number") if zero \
            else f"a positive number{of_unit}"
        raise CommandError(f"{flag} must be {wanted}, got {cut(text)!r}", 2)
    return value


# A word that is a negative number (so an option's value, not an option): -1, -.5, -1e-05,
# -inf, -nan. argparse's own pattern knows only -1 and -.5.
NEGATIVE_NUMBER = r"^-(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|infinity|nan)$"


def no_data_hint(core: str | None, broadcasting: bool = True) -> str:
    """What to check when nothing was heard on the bus at ``core`` (the transport's wording,
    which the library's listeners also use); a command may take the time to probe the bus
    (a tf2py core's handshake tells a refusal for keys). ``broadcasting``: also ask whether
    anything broadcasts."""
    from ..transport.hints import no_data_hint as hint

    return hint(core, broadcasting, probe=True)


def bus_name(core: str | None) -> str:
    """"the core at ADDRESS", "the ROS 2 graph at ros2://...", ... for messages."""
    from ..transport.hints import bus_name as name

    return name(core)


def cut(text: str, limit: int = 80) -> str:
    """``text`` on one line and at most ``limit`` characters, for quoting a user's input (a
    frame id, a file's line) in a one-line message."""
    from ..doctor.findings import cut as cut_text

    return cut_text(str(text), limit)


# -- the robot commands (robot-state-publisher, joint-state-publisher, foxglove, doctor) ------


def add_robot_arguments(parser: argparse.ArgumentParser) -> None:
    """ROBOT and ``--xacro-arg NAME:=VALUE`` (robot-state-publisher, joint-state-publisher)."""
    parser.add_argument("robot", metavar="ROBOT", help="the robot's URDF file, or a xacro file "
                        "(.xacro, expanded with the xacro package)")
    parser.add_argument("--xacro-arg", metavar="NAME:=VALUE", action="append", default=[],
                        help="an argument for a xacro file (repeat for more)")


def xacro_arguments(texts: list[str]) -> dict[str, str]:
    """``{name: value}`` from ``NAME:=VALUE`` words, or a one-line CommandError."""
    found: dict[str, str] = {}
    for text in texts:
        name, sep, value = text.partition(":=")
        if not sep or not name.strip():
            raise CommandError(f"--xacro-arg takes NAME:=VALUE, got {cut(text)!r}", 2)
        found[name.strip()] = value
    return found


def load_model(robot: str, xacro_texts: list[str] | None, command: str) -> Any:
    """The ``RobotModel`` of the file ``robot`` (with ``NAME:=VALUE`` xacro arguments), or a
    CommandError holding the model's one-line error. The model's warnings (a mimic of a
    joint it lacks) are printed as one line each, ``tf2py COMMAND: warning: ...``."""
    import sys
    import warnings

    from ..robot.errors import RobotModelError, RobotModelWarning
    from ..robot.model import RobotModel

    xacro_args = xacro_arguments(xacro_texts or [])
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RobotModelWarning)
            model = RobotModel.from_urdf(robot, xacro_args=xacro_args or None)
    except RobotModelError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:  # a folder, a file we may not read
        reason = exc.strerror or str(exc)
        raise CommandError(f"{cut(robot)}: cannot read the robot ({reason})") from None
    for warning in caught:  # one line each, not Python's file:line warning format
        print(f"tf2py {command}: warning: {warning.message}", file=sys.stderr, flush=True)
    return model
