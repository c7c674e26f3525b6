"""``tf2py rerun``: the bus's frame tree live into the Rerun viewer, or saved as ``.rrd``.
The work is ``tf2py.viz.rerun.RerunView``; this module parses, opens the sink and prints."""

from __future__ import annotations

import argparse
import math
import os
from typing import Any
from urllib.parse import urlsplit

from .common import CommandError, parse_core_argument, say, wait_or_interrupt

NAME = "rerun"
HELP = "stream the frame tree to the Rerun viewer, or save it as .rrd"
DESCRIPTION = (
    "Log the bus's frame tree into Rerun: one entity per frame following the tree "
    "(/tf/map/odom/base_link), a Transform3D per sample on the ros_time timeline at its "
    "stamp, statics once. A bag played on the bus (tf2py play) arrives the same way. "
    "Needs the viz extra: pip install 'tf2py[viz]'.")
DEFAULT_URL = "rerun+http://127.0.0.1:9876/proxy"
SPAWN_PORT = 9876  # where a viewer that --spawn starts listens (Rerun's own default)
SPAWN_WATCH_S = 1.0  # how long a spawned viewer must keep listening before logging starts


def configure(parser: argparse.ArgumentParser) -> None:
    sink = parser.add_mutually_exclusive_group()
    sink.add_argument("--spawn", action="store_true",
                      help="start a Rerun viewer and stream to it (the default)")
    sink.add_argument("--connect", metavar="URL", nargs="?", const=DEFAULT_URL, default=None,
                      help="stream to a running viewer or server (default URL: "
                      f"{DEFAULT_URL}, where `rerun` listens)")
    sink.add_argument("--save", metavar="FILE.rrd", default=None,
                      help="write a recording file instead, for `rerun FILE.rrd` later")
    parse_core_argument(parser)


def _unreachable(host: str, port: int) -> str | None:
    """Why nothing listens at host:port, or None when something does."""
    import socket

    try:
        socket.create_connection((host, port), timeout=2.0).close()
    except OSError as exc:
        return str(exc.strerror or exc)
    return None


def _check_reachable(url: str) -> None:
    """A one-line error now, rather than Rerun's retries and a log line at exit, when nothing
    listens at the URL's host and port."""
    parts = urlsplit(url)
    if not parts.scheme.startswith("rerun"):
        raise CommandError(f"--connect {url!r}: expected rerun+http://HOST:PORT/proxy "
                           "(or rerun://, rerun+https://)", 2)
    try:
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise CommandError(f"--connect {url!r}: {exc}", 2) from None
    if not host:
        raise CommandError(f"--connect {url!r}: no host", 2)
    port = port or (443 if parts.scheme.endswith("https") else 9876)
    why = _unreachable(host, port)
    if why is not None:
        raise CommandError(f"no Rerun viewer answers at {url} ({why}): start one with "
                           "`rerun`, or use --spawn or --save FILE.rrd")


def _open_sink(rr: Any, recording: Any, args: argparse.Namespace) -> str:
    """Point the recording at its sink; returns where, for the ready line."""
    if args.save is not None:
        path = os.path.abspath(str(args.save))
        try:
            recording.save(path)
        except RuntimeError as exc:
            raise CommandError(f"cannot write {args.save}: {exc}") from None
        return path
    if args.connect is not None:
        _check_reachable(args.connect)
        try:
            recording.connect_grpc(args.connect)
        except RuntimeError as exc:
            raise CommandError(f"--connect {args.connect!r}: {exc}", 2) from None
        return str(args.connect)
    return _spawn_viewer(rr, recording)


def _spawn_viewer(rr: Any, recording: Any) -> str:
    """Start a Rerun viewer on this machine and point the recording at it; a one-line error
    when there is no screen for it or it exits at once."""
    import shutil
    import sys
    import time

    elsewhere = ("use --save FILE.rrd and open it where a viewer runs, or --connect URL to "
                 "a viewer on another machine")
    if sys.platform.startswith("linux") and not any(
            os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET")):
        raise CommandError(f"cannot start the Rerun viewer here: no display (DISPLAY and "
                           f"WAYLAND_DISPLAY are not set); {elsewhere}")
    # The viewer that rerun-sdk installed beside this Python, also when its folder is not on
    # PATH (a virtualenv used without activating it).
    beside = os.path.join(os.path.dirname(sys.executable), "rerun")
    viewer = beside if os.access(beside, os.X_OK) else shutil.which("rerun")
    try:
        rr.spawn(port=SPAWN_PORT, recording=recording, executable_path=viewer)
    except Exception as exc:  # the viewer's executable missing, or it failed to start
        raise CommandError(f"cannot start the Rerun viewer: {exc} ({elsewhere})") from None
    # rerun-sdk only warns when the viewer it started is gone (a display it cannot open):
    # then every sample would be retried and lost, so say it now, in one line. Such a viewer
    # listens first and exits a few milliseconds later, so it is watched for a moment.
    watch_until = time.monotonic() + SPAWN_WATCH_S
    why = _unreachable("127.0.0.1", SPAWN_PORT)
    while why is None and time.monotonic() < watch_until:
        time.sleep(0.1)
        why = _unreachable("127.0.0.1", SPAWN_PORT)
    if why is not None:
        recording.disconnect()
        raise CommandError(f"the Rerun viewer started but does not answer on port "
                           f"{SPAWN_PORT} ({why}; a display it cannot open?); {elsewhere}")
    return "a new Rerun viewer"


def run(args: argparse.Namespace) -> int:
    from ..viz.errors import VizDependencyError

    try:
        from ..viz.rerun import RerunView, require_rerun

        rr = require_rerun()
    except VizDependencyError as exc:
        raise CommandError(str(exc)) from None
    recording = rr.RecordingStream("tf2py")
    where = _open_sink(rr, recording, args)

    def announce(frame: str, path: str) -> None:
        say(f"tf2py rerun: {frame} at {path}")

    try:
        view = RerunView(core=args.core, recording=recording, on_new_frame=announce)
    except ValueError as exc:
        raise CommandError(str(exc), 2) from None
    except OSError as exc:
        raise CommandError(str(exc)) from None
    try:
        say(f"tf2py rerun: logging the frame tree of {view.core} to {where} (Ctrl-C to stop)")
        wait_or_interrupt(math.inf)  # until Ctrl-C or SIGTERM
    finally:
        view.close()
        recording.disconnect()
    if view.flush_error is not None:
        say(f"tf2py rerun: warning: the last samples did not reach {where}: {view.flush_error}")
    stats = view.stats()
    left_out = sum(stats["left_out"].values())
    print(f"tf2py rerun: logged {stats['logged_transforms']} transforms of {stats['frames']} "
          "frames" + (f" ({left_out} left out as invalid)" if left_out else ""), flush=True)
    return 0
