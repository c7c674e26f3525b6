"""What a ``tcp://`` address means to the ZeroMQ bus and the ZeroMQ buffer-server link.

A core address ``tcp://HOST:PORT`` names the port publishers connect to; subscribers connect
to ``PORT + 1`` on the same host (see docs/protocol.md). So the default core uses 7400 and
7401, and the default buffer server 7402.
"""

from __future__ import annotations

import re

from ..address import core_address

__all__ = ["split_tcp_address", "tcp_host", "bus_endpoints", "check_server_address"]

_TCP = re.compile(r"^tcp://(?P<host>\[[^\]]+\]|[^:/\[\]]+):(?P<port>\d+)$")


def split_tcp_address(address: str, max_port: int = 65534) -> tuple[str, int]:
    """``(host, port)`` of ``tcp://HOST:PORT``; raises ValueError naming the address otherwise.
    ``max_port`` is 65534 for a core (it also uses PORT + 1), 65535 for the buffer server."""
    m = _TCP.match(address.strip())
    if not m:
        example = "tcp://127.0.0.1:7400" if max_port == 65534 else "tcp://127.0.0.1:7402"
        raise ValueError(
            f"invalid address {address!r}: expected tcp://HOST:PORT, e.g. {example}"
        )
    port = int(m.group("port"))
    if not 0 <= port <= max_port:
        raise ValueError(f"invalid address {address!r}: port must be 0..{max_port}")
    return m.group("host"), port


def tcp_host(address: str) -> str | None:
    """The host of a ``tcp://HOST:PORT`` address; None for other ZeroMQ endpoints (``ipc://``,
    ``inproc://``) and for what is not an address."""
    m = _TCP.match(address.strip())
    return m.group("host") if m else None


def check_server_address(address: str, to_connect: bool = False) -> str:
    """``address`` if it is a usable buffer server address; a ``tcp://`` address must be
    ``tcp://HOST:PORT`` with PORT 0..65535 (ZeroMQ itself would take port 99999 as 34463),
    and, ``to_connect`` (a client's), neither port 0 nor host ``*`` (only a server binds
    those). Other ZeroMQ transports (ipc://, inproc://) are left to ZeroMQ. Raises
    ValueError."""
    if address.startswith("tcp://"):
        try:
            host, port = split_tcp_address(address, max_port=65535)
        except ValueError as exc:
            raise ValueError(
                str(exc).replace("invalid address", "invalid buffer server address", 1)
            ) from None
        if to_connect and (port == 0 or host == "*"):
            raise ValueError(f"a client needs the server's real address, not {address!r} "
                             "(use BufferServer(...).address)")
    return address


def bus_endpoints(core: str | None = None) -> tuple[str, str]:
    """``(publish_endpoint, subscribe_endpoint)`` of a core: PORT and PORT + 1 of its address."""
    host, port = split_tcp_address(core_address(core))
    if port == 0:
        raise ValueError("a client needs the core's real port, not 0 (use Core(...).address)")
    return f"tcp://{host}:{port}", f"tcp://{host}:{port + 1}"
