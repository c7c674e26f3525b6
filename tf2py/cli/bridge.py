"""``tf2py bridge FROM TO [--both]``: relay /tf and /tf_static between two buses."""

from __future__ import annotations

import argparse

NAME = "bridge"
HELP = ("relay /tf and /tf_static from one bus to another, any schemes, e.g. "
        "`tf2py bridge ros2:// tcp://127.0.0.1:7400` or `ros2:// zenoh://` "
        "(statics stay latched)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="FROM",
                        help="the bus to read: tcp://HOST:PORT (a tf2py core), ros2://[DOMAIN] or "
                             "zenoh://[LOCATOR][?namespace=...]")
    parser.add_argument("target", metavar="TO", help="the bus to send to (same forms)")
    parser.add_argument("--both", action="store_true",
                        help="relay both ways (never sending a transform back where it came from)")


def _same_bus(a: str, b: str) -> bool:
    from ..transport.interface import transport_for

    (bus_a, a), (bus_b, b) = transport_for(a), transport_for(b)
    return bus_a is bus_b and bus_a.same_bus(a, b)


def run(args: argparse.Namespace) -> int:
    import sys

    from ..transport.bridge import Bridge
    from ..transport.interface import check_core_address
    from .common import CommandError, wait_for_interrupt

    for address in (args.source, args.target):
        try:
            check_core_address(address)
        except (ValueError, ImportError) as exc:  # a bad address, or a missing extra
            raise CommandError(str(exc), 2) from None
    if _same_bus(args.source, args.target):
        raise CommandError(f"FROM and TO are the same bus ({args.source}, {args.target})", 2)
    bridge = Bridge(args.source, args.target, both=args.both)
    arrow = "<->" if args.both else "->"
    print(f"tf2py bridge: relaying {args.source} {arrow} {args.target}", flush=True)
    try:
        wait_for_interrupt()
    except KeyboardInterrupt:
        pass
    finally:
        stats = bridge.stats()
        bridge.close()
        for direction, (messages, transforms) in stats["relayed"].items():
            print(f"tf2py bridge: {direction}: relayed {messages} messages, "
                  f"{transforms} transforms", flush=True)
        dropped = ", ".join(f"{n} {cause}" for cause, n in sorted(stats["dropped"].items()))
        print(f"tf2py bridge: dropped {sum(stats['dropped'].values())}"
              + (f" ({dropped})" if dropped else ""), file=sys.stdout, flush=True)
    return 0
