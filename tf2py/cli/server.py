"""``tf2py server``: a full listener on the bus answering remote lookups (tf2's buffer_server)."""

from __future__ import annotations

import argparse

from .common import CommandError, number, parse_core_argument, wait_for_interrupt
from .sim_time import add_use_sim_time_argument, sim_clock

# The longest cache a Buffer holds: int64 nanoseconds (about 292 years).
_MAX_CACHE_TIME_S = (2**63 - 1) / 1e9

NAME = "server"
HELP = "run the buffer server: a full listener on the bus answering remote lookup_transform goals"


def configure(parser: argparse.ArgumentParser) -> None:
    parse_core_argument(parser)
    parser.add_argument(
        "--address",
        metavar="ADDRESS",
        default=None,
        help="where to serve, e.g. tcp://127.0.0.1:7402; port 0 picks a free port "
        "(default: $TF2PY_SERVER, else tcp://127.0.0.1:7402)",
    )
    parser.add_argument(
        "--cache-time",
        metavar="SECONDS",
        default="120",
        help="how many seconds of transforms the server's buffer keeps (default: 120, "
        "as tf2's buffer_server)",
    )
    add_use_sim_time_argument(parser)


def run(args: argparse.Namespace) -> int:
    import zmq

    from ..buffer.buffer import Buffer
    from ..server.server import BufferServer
    from ..transport.listener import TransformListener

    try:
        cache_time = number(args.cache_time)
    except ValueError:
        cache_time = float("nan")
    if not 0 < cache_time <= _MAX_CACHE_TIME_S:
        raise CommandError(
            f"--cache-time must be a positive number of seconds up to {_MAX_CACHE_TIME_S:.3g}, "
            f"got {args.cache_time!r}", 2
        )
    clock = sim_clock(args)  # with --use-sim-time: a jump back of /clock clears the buffer
    try:
        buffer = Buffer(cache_time=cache_time, clock=clock)
    except (ValueError, OverflowError) as exc:
        if clock is not None:
            clock.close()
        raise CommandError(f"--cache-time {args.cache_time!r}: {exc}", 2) from None
    listener = server = None
    try:
        try:
            listener = TransformListener(buffer, core=args.core)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        try:
            server = BufferServer(buffer, address=args.address)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        except (OSError, zmq.ZMQError) as exc:
            raise CommandError(f"cannot serve at {args.address or 'the default address'}: "
                               f"{exc.strerror if isinstance(exc, OSError) else exc}") from None
        print(f"tf2py server: ready at {server.address}", flush=True)
        wait_for_interrupt()
    finally:
        if server is not None:
            server.close()
        if listener is not None:
            listener.close()
        if clock is not None:
            clock.close()
