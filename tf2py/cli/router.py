"""``tf2py router``: run a Zenoh router, as ``rmw_zenohd`` does for ROS 2."""

from __future__ import annotations

from typing import Any

NAME = "router"
HELP = "run a Zenoh router"
DESCRIPTION = (
    "Run a Zenoh router (as rmw_zenohd does for ROS 2) for hosts that have none: "
    "zenoh:// peers and clients, tf2py's and ROS 2's rmw_zenoh nodes alike, find each "
    "other and reach other hosts through it. With --keys, links are mutual TLS and need "
    "tls/ locators. Prints the addresses to use once it listens.")


def configure(parser: Any) -> None:
    parser.add_argument(
        "--listen", metavar="LOCATOR", action="append", default=None,
        help="where to listen, PROTOCOL/HOST:PORT (tcp, udp, tls, quic; port 0 picks one); "
        "repeatable (default: tcp/[::]:7447, as rmw_zenohd)")
    parser.add_argument(
        "--connect", metavar="LOCATOR", action="append", default=[],
        help="another router to connect to (e.g. another site's), repeatable")
    parser.add_argument(
        "--config", metavar="FILE", default=None,
        help="a Zenoh configuration file, applied first")


def run(args: Any) -> int:
    from tf2py.cli.common import CommandError, wait_for_interrupt

    try:
        from tf2py.transport.zenoh.router import DEFAULT_LISTEN, Router

        router = Router(args.listen or [DEFAULT_LISTEN], args.connect, args.keys,
                        args.config)
    except (ImportError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    try:
        print(f"tf2py router: ready, listening on {', '.join(router.locators)}; use "
              f"--core {router.addresses()[0]}", flush=True)
        wait_for_interrupt()
    finally:
        router.close()
    return 0
