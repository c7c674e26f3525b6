"""``tf2py fleet``: one Buffer and lookup service for every robot on a Zenoh domain."""

from __future__ import annotations

import argparse

from .common import CommandError, number, say

#: Seconds between two tries at a router that a client-mode fleet cannot reach yet.
ROUTER_RETRY_S = 1.0

NAME = "fleet"
HELP = ("one buffer and lookup service for every robot on a Zenoh domain: frame ids carry "
        "the robot's namespace (robot7/base_link)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--core", metavar="ADDRESS", default=None,
        help="the Zenoh domain to hear, e.g. zenoh://tcp/127.0.0.1:7447?domain=0 "
        "(default: $TF2PY_CORE)")
    parser.add_argument(
        "--address", metavar="ADDRESS", default=None,
        help="where BufferClients ask (a zenoh:// or tcp:// buffer server address; default: "
        "the --core address)")
    parser.add_argument(
        "--world", metavar="FILE", default=None,
        help="YAML list of {parent, child, translation: [x, y, z], rotation: [x, y, z, w]} "
        "statics relating the robots, e.g. world -> robot7/map")
    parser.add_argument(
        "--robots", metavar="GLOB", default=None,
        help="only the namespaces matching this pattern, e.g. 'robot*' (default: all); "
        "several fleets with --robots on one --address answer as one")
    parser.add_argument(
        "--stale-after", metavar="SECONDS", default="5",
        help="forget a robot gone (no liveliness token, nothing heard) this long: its "
        "statics, frames and place (default: 5)")
    parser.add_argument(
        "--stats", metavar="SECONDS", default="10",
        help="print one line of what the fleet does every SECONDS: robots, samples and "
        "transforms per second, drops by cause, worst newest-stamp lag, lookup latency "
        "(default: 10; 0: off)")
    parser.add_argument(
        "--json", action="store_true",
        help="print the --stats lines as JSON objects, one per line, for machines")


def _check_fleet_core(core: str) -> None:
    """CommandError (exit 2) unless ``core`` is a good address of a bus that can host a
    fleet (``Transport.hosts_fleet``)."""
    from ..transport.interface import scheme, scheme_entry, transport_for, transports

    hosts = [name for name, transport in transports() if transport.hosts_fleet]
    if scheme(core) not in hosts:
        kinds = " or ".join(f"{name}://" for name in hosts)
        examples = ", ".join(scheme_entry(name).example for name in hosts)
        raise CommandError(f"--core must be a {kinds} address (e.g. {examples}), got {core!r}",
                           2)
    try:
        transport_for(core)
    except ValueError as exc:
        raise CommandError(str(exc), 2) from None


def run(args: argparse.Namespace) -> int:
    import os
    import signal

    core = args.core or os.environ.get("TF2PY_CORE")
    if not core:
        raise CommandError("no --core given and TF2PY_CORE is not set: name the Zenoh domain "
                           "to hear, e.g. --core zenoh://tcp/127.0.0.1:7447", 2)
    _check_fleet_core(core)
    stale_after = _seconds(args.stale_after)
    if not 0 < stale_after < 1e9:
        raise CommandError(f"--stale-after must be a positive number of seconds, got "
                           f"{args.stale_after!r}", 2)
    every = _seconds(args.stats)
    if not 0 <= every < 1e9:
        raise CommandError(f"--stats must be a number of seconds (0: off), got "
                           f"{args.stats!r}", 2)
    from ..server.fleet.names import RobotFilter
    from ..server.fleet.world import WorldError, load_world
    from ..server.link import check_link_address

    try:
        if args.address:
            check_link_address(args.address)
        RobotFilter(args.robots)
        world = load_world(args.world) if args.world else []
    except (ValueError, WorldError) as exc:
        raise CommandError(str(exc), 2) from None
    try:
        import zenoh  # noqa: F401
    except ImportError:
        raise CommandError("zenoh:// addresses need the zenoh extra: "
                           "pip install 'tf2py[zenoh]'") from None
    import json
    import time

    from ..server.fleet.health import stats_line
    from ..server.fleet.service import Fleet

    def event(line: str) -> None:
        say(f"tf2py fleet: {line}")

    fleet = None
    try:
        waited = False
        while fleet is None:
            try:
                fleet = Fleet(core, address=args.address, world=world, robots=args.robots,
                              stale_after=stale_after, on_event=event)
            except ConnectionError:
                # mode=client and no router answers yet: a service waits for its router
                # (a peer session does so inside Zenoh, and the fleet says it the same way)
                if not waited:
                    event(f"router {_locator(core)} unreachable (waiting for it)")
                    waited = True
                time.sleep(ROUTER_RETRY_S)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            except Exception as exc:  # zenoh.ZError and the like: say it in one line
                first_line = str(exc).splitlines()[0] if str(exc) else repr(exc)
                raise CommandError(f"cannot open {core}: {first_line}") from None
        if waited:
            event(f"router {_locator(core)} back")
        say(f"tf2py fleet: ready at {fleet.address}; ask it with "
            f"BufferClient({fleet.address!r})")
        fleet.stats()  # the first line's rates start now
        while True:
            if not every:
                signal.pause()  # SIGINT/SIGTERM raise KeyboardInterrupt here
                continue
            time.sleep(every)
            stats = fleet.stats()
            if args.json:
                say(json.dumps({"stats": stats}, sort_keys=True))
            else:
                say(f"tf2py fleet: {stats_line(stats)}")
    finally:
        if fleet is not None:
            fleet.close()


def _locator(core: str) -> str:
    from ..transport.zenoh.address import parse_zenoh_address

    return str(parse_zenoh_address(core).locator)


def _seconds(text: str) -> float:
    try:
        return number(text)
    except ValueError:
        return float("nan")
