"""``tf2py keygen DIR``: make the keys of an authenticated site (ZeroMQ CURVE, and TLS
certificates for zenoh:// when the zenoh extra is installed)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

NAME = "keygen"
HELP = "make the keys for an authenticated site"
DESCRIPTION = (
    "Make a keys folder for one site: every core, server, broadcaster and listener given "
    "--keys DIR (or TF2PY_KEYS=DIR) encrypts and authenticates its traffic, and refuses "
    "processes without the site's keys. --add NAME makes DIR/NAME, a folder for another "
    "identity (it may connect, not serve; with --serve it may also run a core, a server "
    "or a fleet, and clients accept its answers), and authorises it.")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", metavar="DIR", help="the keys folder to make (or add to)")
    parser.add_argument(
        "--add", metavar="NAME", default=None,
        help="add an authorised identity NAME: writes DIR/NAME/ and DIR/authorized/NAME.key")
    parser.add_argument(
        "--serve", action="store_true",
        help="with --add: the identity may serve (run a core, a lookup server or a fleet); "
        "without it, clients refuse answers signed by it")


def run(args: argparse.Namespace) -> int:
    from tf2py.cli.common import CommandError
    from tf2py.transport.zmq.keys import KeysError, add_identity, create_site

    if args.serve and args.add is None:
        raise CommandError("--serve goes with --add NAME (the site's own identity may "
                           "always serve)", 2)
    try:
        if args.add is None:
            path = create_site(args.folder)
            tls = _zenoh_tls(lambda t: t.create_site_tls(path))
            print(f"tf2py keygen: made site keys{tls} in {path}; give --keys {path} (or "
                  f"TF2PY_KEYS={path}) to every process of the site", flush=True)
        else:
            path = add_identity(args.folder, args.add, serve=args.serve)
            tls = _zenoh_tls(lambda t: t.add_identity_tls(args.folder, args.add, path,
                                                          serve=args.serve)
                             if t.has_tls(args.folder) else None)
            role = "may serve" if args.serve else "may connect, not serve"
            print(f"tf2py keygen: made identity {args.add!r}{tls} in {path} ({role}) and "
                  f"authorised it; give --keys {path} to its processes", flush=True)
    except (KeysError, OSError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    return 0


def _zenoh_tls(make: Callable[[Any], object]) -> str:
    """Make the TLS part (keys on zenoh://) with ``make(tls module)``; the words to add to the
    report, or a note when the zenoh extra (its ``cryptography``) is missing."""
    from tf2py.transport.zenoh import tls

    try:
        made = make(tls)
    except ImportError:
        return " (no TLS certificates for zenoh://: pip install 'tf2py[zenoh]' first)"
    return "" if made is None else " and TLS certificates"
