"""``tf2py core``: run the bus that broadcasters and listeners meet on."""

from __future__ import annotations

import argparse

NAME = "core"
HELP = "run the bus (broadcasters and listeners meet here)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--address",
        metavar="ADDRESS",
        default=None,
        help="tcp://HOST:PORT to serve; subscribers use PORT+1 (default: $TF2PY_CORE, else "
        "tcp://127.0.0.1:7400; port 0 picks free ports; a routable HOST or 0.0.0.0 serves "
        "other hosts)",
    )


def run(args: argparse.Namespace) -> int:
    from tf2py.cli.common import CommandError, wait_for_interrupt
    from tf2py.transport.zmq.core import Core

    try:
        core = Core(args.address)
    except (OSError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    try:
        print(f"tf2py core: ready at {core.address}", flush=True)
        wait_for_interrupt()
    finally:
        core.close()
    return 0
