"""``tf2py keygen DIR``: make the keys of an authenticated site (ZeroMQ CURVE)."""

from __future__ import annotations

import argparse

NAME = "keygen"
HELP = "make the keys for an authenticated site"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Make a keys folder for one site: every core, server, broadcaster and listener given "
        "--keys DIR (or TF2PY_KEYS=DIR) encrypts and authenticates its traffic, and refuses "
        "processes without the site's keys. --add NAME makes DIR/NAME, a folder for another "
        "identity (it may connect, not serve), and authorises it."
    )
    parser.add_argument("folder", metavar="DIR", help="the keys folder to make (or add to)")
    parser.add_argument(
        "--add", metavar="NAME", default=None,
        help="add an authorised identity NAME: writes DIR/NAME/ and DIR/authorized/NAME.key")


def run(args: argparse.Namespace) -> int:
    from tf2py.cli.common import CommandError
    from tf2py.transport.keys import KeysError, add_identity, create_site

    try:
        if args.add is None:
            path = create_site(args.folder)
            print(f"tf2py keygen: made site keys in {path}; give --keys {path} (or "
                  f"TF2PY_KEYS={path}) to every process of the site", flush=True)
        else:
            path = add_identity(args.folder, args.add)
            print(f"tf2py keygen: made identity {args.add!r} in {path} and authorised it; "
                  f"give --keys {path} to its processes", flush=True)
    except (KeysError, OSError) as exc:
        raise CommandError(str(exc)) from None
    return 0
