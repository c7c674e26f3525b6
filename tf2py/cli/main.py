"""The ``tf2py`` command: one subcommand per module of this package.

Each subcommand module defines ``NAME``, ``HELP``, ``configure(parser)`` and
``run(args) -> int``; heavy imports happen inside ``run`` so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys

from .common import NEGATIVE_NUMBER, CommandError, install_signal_handlers

# (module under tf2py.cli, subcommand name); the order is the order of ``tf2py --help``.
COMMANDS = [
    ("core", "core"),
    ("server", "server"),
    ("echo", "echo"),
    ("static_transform_publisher", "static-transform-publisher"),
    ("frames", "frames"),
    ("view_frames", "view-frames"),
    ("monitor", "monitor"),
    ("launch", "launch"),
    ("play", "play"),
    ("record", "record"),
    ("keygen", "keygen"),
    ("foxglove", "foxglove"),
    ("bridge", "bridge"),
    ("router", "router"),
    ("fleet", "fleet"),
]


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # -inf, -1e-05 are numbers (an option's value), not options
        self._negative_number_matcher = re.compile(NEGATIVE_NUMBER)

    def error(self, message):
        # One line on stderr and exit 2, as argparse does, but without the usage dump so the
        # error is the line a user sees.
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    parser = _Parser(
        prog="tf2py",
        description="tf2py: ROS tf2's transforms, broadcasts and tools without ROS.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"tf2py {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<command>", parser_class=_Parser)
    modules = {}
    for module_name, name in COMMANDS:
        try:
            module = importlib.import_module(f"tf2py.cli.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"tf2py.cli.{module_name}":
                continue  # not built yet
            raise
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(p)
        if name != "keygen":
            p.add_argument(
                "--keys", metavar="DIR", default=None,
                help="keys folder made by `tf2py keygen` (default: $TF2PY_KEYS): encrypted, "
                "authenticated traffic that only the site's processes can use")
        modules[name] = module
    return parser, modules


def _env_keys():
    import os

    return os.environ.get("TF2PY_KEYS")


def main(argv=None) -> int:
    # Handlers first: a stop request that arrives while the command modules are still being
    # imported is a clean stop too, not a death by SIGTERM.
    install_signal_handlers()
    try:
        parser, modules = build_parser()
        args, extra = parser.parse_known_args(argv)
    except KeyboardInterrupt:
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    take_extra = getattr(modules[args.command], "take_extra_arguments", None)
    if extra and take_extra is not None:
        extra = take_extra(args, extra)
    if extra:
        # Name the subcommand, whose --help lists what it takes.
        print(
            f"tf2py {args.command}: error: unrecognized arguments: {' '.join(extra)} "
            f"(see tf2py {args.command} --help)",
            file=sys.stderr,
        )
        return 2
    if getattr(args, "keys", None) and hasattr(args, "core"):
        from tf2py.transport.interface import is_ros2

        if is_ros2(args.core):
            print(f"tf2py {args.command}: error: --keys applies to tf2py buses (tcp://, "
                  "ipc://), not to ROS 2 (ros2://), whose traffic is plain DDS", file=sys.stderr)
            return 2
    if getattr(args, "keys", None):
        # Every object the command (and any process it starts) opens picks this up.
        import os

        os.environ["TF2PY_KEYS"] = os.path.abspath(args.keys)
    if args.command != "keygen" and (getattr(args, "keys", None) or _env_keys()):
        from tf2py.transport.keys import KeysError, load_keys

        try:
            load_keys()  # a missing or incomplete folder is a one-line error, now
        except KeysError as exc:
            print(f"tf2py {args.command}: error: {exc}", file=sys.stderr)
            return 2
    try:
        return int(modules[args.command].run(args) or 0)
    except KeyboardInterrupt:
        return 0
    except CommandError as exc:
        print(f"tf2py {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except ImportError as exc:  # an extra that is not installed (e.g. ros2://): one line
        if not getattr(exc, "one_line", False):
            raise
        print(f"tf2py {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
