"""What a ``tcp://`` address means to the ZeroMQ bus and the ZeroMQ buffer-server link.

A core address ``tcp://HOST:PORT`` names the port publishers connect to; subscribers connect
to ``PORT + 1`` on the same host (see docs/protocol.md). So the default core uses 7400 and
7401, and the default buffer server 7402.
"""

from __future__ import annotations

import re

from ..address import core_address

__all__ = ["split_tcp_address", "bus_endpoints", "check_server_address"]

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


def check_server_address(address: str) -> str:
    """``address`` if it is a usable buffer server address; a ``tcp://`` address must be
    ``tcp://HOST:PORT`` with PORT 0..65535 (ZeroMQ itself would take port 99999 as 34463).
    Other ZeroMQ transports (ipc://, inproc://) are left to ZeroMQ. Raises ValueError."""
    if address.startswith("tcp://"):
        try:
            split_tcp_address(address, max_port=65535)
        except ValueError as exc:
            raise ValueError(
                str(exc).replace("invalid address", "invalid buffer server address", 1)
            ) from None
    return address


def bus_endpoints(core: str | None = None) -> tuple[str, str]:
    """``(publish_endpoint, subscribe_endpoint)`` of a core: PORT and PORT + 1 of its address."""
    host, port = split_tcp_address(core_address(core))
    if port == 0:
        raise ValueError("a client needs the core's real port, not 0 (use Core(...).address)")
    return f"tcp://{host}:{port}", f"tcp://{host}:{port + 1}"
