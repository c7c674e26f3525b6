"""``tf2py foxglove``: serve the bus's frame tree live to Foxglove (WebSocket protocol,
channel ``/tf``, schema ``foxglove.FrameTransforms``, statics included for late clients).
The work is ``tf2py.viz.FoxgloveServer``; this module parses and prints."""

from __future__ import annotations

import argparse
import sys
import threading
from urllib.parse import quote

from .common import CommandError, load_model, parse_core_argument

NAME = "foxglove"
HELP = "serve the frame tree live to Foxglove (WebSocket, channel /tf, foxglove.FrameTransforms)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1, this machine only; "
                        "the protocol has no authentication)")
    parser.add_argument("--port", type=int, default=8765,
                        help="TCP port (default: 8765, Foxglove's; 0 picks a free one)")
    parser.add_argument("--robot", metavar="URDF", default=None,
                        help="also serve this robot (URDF or xacro file) on /robot_description "
                        "for Foxglove's 3D panel (default: the bus's /robot_description, which "
                        "a robot-state-publisher sends on ros2:// and zenoh://)")
    parse_core_argument(parser)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise CommandError(f"--port must be 0..65535, got {args.port}", 2)
    from ..viz.errors import VizDependencyError

    try:
        from ..transport.address import is_loopback
        from ..viz.foxglove import FoxgloveServer
    except VizDependencyError as exc:
        raise CommandError(str(exc)) from None
    from ..viz.subprotocols import SubprotocolFront

    description = None
    if args.robot is not None:
        description = load_model(args.robot, None, NAME).urdf
    try:
        # The SDK's server on a loopback port of its own, behind a front that also accepts
        # the protocol's older name (foxglove.websocket.v1), which the SDK refuses.
        server = FoxgloveServer(core=args.core, host="127.0.0.1", port=0,
                                robot_description=description)
    except VizDependencyError as exc:
        raise CommandError(str(exc)) from None
    except ValueError as exc:
        raise CommandError(str(exc), 2) from None
    except OSError as exc:
        raise CommandError(str(exc)) from None
    front = None
    try:
        try:
            front = SubprotocolFront(args.host, args.port, server.port)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise CommandError(f"cannot serve on {args.host}:{args.port}: {reason}") from None
        if not is_loopback(args.host):
            print(f"tf2py foxglove: warning: serving on {args.host}, reachable from other "
                  "machines, without authentication", file=sys.stderr, flush=True)
        host = f"[{args.host}]" if ":" in args.host and not args.host.startswith("[") else args.host
        url = f"ws://{host}:{front.port}"
        print(f"tf2py foxglove: serving the frame tree of {server.core} on {url}", flush=True)
        print("Open in Foxglove: https://app.foxglove.dev/?ds=foxglove-websocket&ds.url="
              + quote(url, safe=""), flush=True)
        stop = threading.Event()
        while not stop.wait(1.0):  # until Ctrl-C or SIGTERM (a KeyboardInterrupt)
            pass
    except KeyboardInterrupt:
        pass
    finally:
        if front is not None:
            front.close()
        server.close()
    stats = server.stats()
    dropped = sum(stats["dropped"].values())
    print(f"tf2py foxglove: forwarded {stats['forwarded_transforms']} transforms in "
          f"{stats['forwarded_messages']} messages"
          + (f" ({dropped} transforms left out as invalid)" if dropped else ""), flush=True)
    return 0
