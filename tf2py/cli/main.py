"""The ``tf2py`` command: one subcommand per module of this package.

Each subcommand module defines ``NAME``, ``HELP``, ``configure(parser)`` and
``run(args) -> int``, and may define ``DESCRIPTION`` (the paragraph of its ``--help``; else
``HELP``) and ``EPILOG`` (text shown as written after the options: examples, file formats).
Heavy imports happen inside ``run`` so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import sys
from types import ModuleType
from typing import Any, NoReturn

from .common import NEGATIVE_NUMBER, CommandError, cut, install_signal_handlers

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
    ("rerun", "rerun"),
    ("bridge", "bridge"),
    ("router", "router"),
    ("fleet", "fleet"),
    ("doctor", "doctor"),
    ("robot_state_publisher", "robot-state-publisher"),
    ("joint_state_publisher", "joint-state-publisher"),
]


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # -inf, -1e-05 are numbers (an option's value), not options
        self._negative_number_matcher = re.compile(NEGATIVE_NUMBER)

    def error(self, message: str) -> NoReturn:
        # One line on stderr and exit 2, as argparse does, but without the usage dump so the
        # error is the line a user sees; a mistyped command gets the close one.
        hint = ""
        choice = re.match(r"argument <command>: invalid choice: '(.*?)'", message)
        if choice:
            close = difflib.get_close_matches(choice.group(1), [n for _, n in COMMANDS], n=1)
            hint = f"did you mean `{self.prog} {close[0]}`? " if close else ""
            message = f"argument <command>: invalid choice: '{cut(choice.group(1))}'"
        self.exit(2, f"{self.prog}: error: {cut(message, 300)} ({hint}see --help)\n")


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    parser = _Parser(
        prog="tf2py",
        description="tf2py: ROS tf2's transforms, broadcasts and tools without ROS.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"tf2py {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<command>", parser_class=_Parser)
    modules: dict[str, ModuleType] = {}
    for module_name, name in COMMANDS:
        try:
            module = importlib.import_module(f"tf2py.cli.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"tf2py.cli.{module_name}":
                continue  # not built yet
            raise
        epilog = getattr(module, "EPILOG", None)
        p = sub.add_parser(name, help=module.HELP,
                           description=getattr(module, "DESCRIPTION", module.HELP), epilog=epilog,
                           formatter_class=argparse.RawDescriptionHelpFormatter if epilog
                           else argparse.HelpFormatter)
        module.configure(p)
        if name != "keygen":
            p.add_argument(
                "--keys", metavar="DIR", default=None,
                help="keys folder made by `tf2py keygen` (default: $TF2PY_KEYS): encrypted, "
                "authenticated traffic that only the site's processes can use")
        modules[name] = module
    return parser, modules


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's parser, by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def suggestion(parser: argparse.ArgumentParser, extra: list[str]) -> str:
    """"did you mean --frame-id" for the first unknown flag in ``extra`` that is close to one
    of ``parser``'s: ROS 1's underscores (``--frame_id``), a single dash, or a typo."""
    flags = [s for action in parser._actions for s in action.option_strings if s.startswith("--")]
    for word in extra:
        if not word.startswith("-") or word in ("-", "--"):
            continue
        name = word.split("=", 1)[0]
        dashed = "--" + name.lstrip("-").replace("_", "-")
        if dashed in flags:
            return f"did you mean {dashed}?"
        close = difflib.get_close_matches(dashed, flags, n=1, cutoff=0.75)
        if close:
            return f"did you mean {close[0]}?"
    return ""


def _env_keys() -> str | None:
    import os

    return os.environ.get("TF2PY_KEYS")


def main(argv: list[str] | None = None) -> int:
    # Handlers first: a stop request that arrives while the command modules are still being
    # imported is a clean stop too, not a death by SIGTERM.
    install_signal_handlers()
    try:
        parser, modules = build_parser()
        parsers = subparsers(parser)
        args, extra = parser.parse_known_args(argv)
    except KeyboardInterrupt:
        return 0
    if args.command is None:
        if extra:  # tf2py --bogus: one line, as any command's unknown flag
            print(f"tf2py: error: unrecognized arguments: {cut(' '.join(extra))} (see tf2py "
                  "--help)", file=sys.stderr)
        else:  # tf2py alone: what it can do, and one line saying a command is missing
            parser.print_help()
            print("tf2py: error: no command given (tf2py --help lists them)", file=sys.stderr)
        return 2
    take_extra = getattr(modules[args.command], "take_extra_arguments", None)
    if extra and take_extra is not None:
        extra = take_extra(args, extra)
    if extra:
        # Name the subcommand, whose --help lists what it takes, and the flag meant.
        words = cut(" ".join(extra))
        hint = suggestion(parsers[args.command], extra)
        print(
            f"tf2py {args.command}: error: unrecognized arguments: {words} "
            f"({hint + '; ' if hint else ''}see tf2py {args.command} --help)",
            file=sys.stderr,
        )
        return 2
    if getattr(args, "keys", None) and hasattr(args, "core"):
        from tf2py.transport.interface import transport_for

        try:
            transport, _ = transport_for(args.core)
        except (ValueError, ImportError):
            transport = None  # the command itself says what is wrong with the address
        try:
            if transport is not None:
                transport.refuse_keys(args.keys, "--keys")
        except ValueError as exc:
            print(f"tf2py {args.command}: error: {exc}", file=sys.stderr)
            return 2
    if getattr(args, "keys", None):
        # Every object the command (and any process it starts) opens picks this up.
        import os

        os.environ["TF2PY_KEYS"] = os.path.abspath(args.keys)
    if args.command != "keygen" and (getattr(args, "keys", None) or _env_keys()):
        from tf2py.transport.zmq.keys import KeysError, load_keys

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
        # Messages quote their inputs cut already; this bounds any that does not.
        print(f"tf2py {args.command}: error: {cut(str(exc), 1000)}", file=sys.stderr)
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
