"""Where the bus (core) and the buffer server are: argument, else environment, else default.

A core address ``tcp://HOST:PORT`` names the port publishers connect to; subscribers connect
to ``PORT + 1`` on the same host (see docs/protocol.md). So the default core uses 7400 and
7401, and the default buffer server 7402.
"""

from __future__ import annotations

import os
import re

__all__ = [
    "DEFAULT_CORE_ADDRESS",
    "DEFAULT_SERVER_ADDRESS",
    "core_address",
    "server_address",
    "split_tcp_address",
    "bus_endpoints",
]

DEFAULT_CORE_ADDRESS = "tcp://127.0.0.1:7400"
DEFAULT_SERVER_ADDRESS = "tcp://127.0.0.1:7402"

_TCP = re.compile(r"^tcp://(?P<host>\[[^\]]+\]|[^:/\[\]]+):(?P<port>\d+)$")


def core_address(core=None) -> str:
    """The bus address: ``core`` if given (a string, or a running ``Core``), else
    ``$TF2PY_CORE``, else tcp://127.0.0.1:7400."""
    if core is not None and not isinstance(core, str) and hasattr(core, "address"):
        return str(core.address)
    if core:
        return str(core)
    return os.environ.get("TF2PY_CORE") or DEFAULT_CORE_ADDRESS


def server_address(address: str | None = None) -> str:
    """The buffer server address: ``address``, else ``$TF2PY_SERVER``, else tcp://127.0.0.1:7402."""
    if address:
        return str(address)
    return os.environ.get("TF2PY_SERVER") or DEFAULT_SERVER_ADDRESS


def split_tcp_address(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``tcp://HOST:PORT``; raises ValueError naming the address otherwise."""
    m = _TCP.match(address.strip())
    if not m:
        raise ValueError(
            f"invalid address {address!r}: expected tcp://HOST:PORT, e.g. tcp://127.0.0.1:7400"
        )
    port = int(m.group("port"))
    if not 0 <= port <= 65534:
        raise ValueError(f"invalid address {address!r}: port must be 0..65534")
    return m.group("host"), port


def bus_endpoints(core: str | None = None) -> tuple[str, str]:
    """``(publish_endpoint, subscribe_endpoint)`` of a core: PORT and PORT + 1 of its address."""
    host, port = split_tcp_address(core_address(core))
    if port == 0:
        raise ValueError("a client needs the core's real port, not 0 (use Core(...).address)")
    return f"tcp://{host}:{port}", f"tcp://{host}:{port + 1}"
