"""Where the bus (core) and the buffer server are: argument, else environment, else default.

The scheme of the address picks the bus (``interface.transport_for``); what a ``tcp://``
address means to the ZeroMQ bus is ``zmq/address.py``.
"""

from __future__ import annotations

import ipaddress
import os

__all__ = [
    "DEFAULT_CORE_ADDRESS",
    "DEFAULT_SERVER_ADDRESS",
    "core_address",
    "server_address",
    "is_loopback",
]

DEFAULT_CORE_ADDRESS = "tcp://127.0.0.1:7400"
DEFAULT_SERVER_ADDRESS = "tcp://127.0.0.1:7402"


def core_address(core: object = None) -> str:
    """The bus address: ``core`` if given (a string, or a running ``Core``), else
    ``$TF2PY_CORE``, else tcp://127.0.0.1:7400."""
    if core is not None and not isinstance(core, str) and hasattr(core, "address"):
        return str(getattr(core, "address"))  # a Core, or anything with an address
    if core:
        return str(core)
    return os.environ.get("TF2PY_CORE") or DEFAULT_CORE_ADDRESS


def server_address(address: str | None = None) -> str:
    """The buffer server address: ``address``, else ``$TF2PY_SERVER``, else tcp://127.0.0.1:7402."""
    if address:
        return str(address)
    return os.environ.get("TF2PY_SERVER") or DEFAULT_SERVER_ADDRESS


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 possibly in brackets) is loopback;
    ``localhost`` counts."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
