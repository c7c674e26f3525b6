"""What to tell a user who heard nothing on a bus: its name in messages, and what to check
or start. One wording for the command line and the library (a listener's hint on a failed
lookup); each bus words its own (``Transport.no_data_hint``)."""

from __future__ import annotations

from typing import Any

from .address import core_address
from .interface import transport_for

__all__ = ["bus_name", "no_data_hint", "listener_hint"]


def bus_name(core: Any = None) -> str:
    """``"the core at tcp://..."``, ``"the ROS 2 graph at ros2://..."``, ... for messages."""
    address = core_address(core)
    try:
        transport, address = transport_for(address)
    except (ValueError, ImportError):
        return f"the bus at {address}"
    return f"{transport.bus_kind} at {address}"


def no_data_hint(core: Any = None, broadcasting: bool = True, probe: bool = False) -> str:
    """What to check when nothing was heard on the bus at ``core``, as a question. With
    ``probe``, the bus may try the network (a tf2py core: one handshake, up to 1.5 s) to tell
    a refusal for keys from a core that is not there."""
    try:
        transport, address = transport_for(core)
    except (ValueError, ImportError):
        return "is anything broadcasting there?"
    return transport.no_data_hint(address, broadcasting=broadcasting, probe=probe)


def listener_hint(core: Any, received: Any) -> Any:
    """A lookup hint for a ``Buffer`` that a listener on ``core`` fills (see
    ``BufferCore.add_lookup_hint``): while ``received()`` is 0, the sentence saying which bus
    was heard and what to check; once anything was received, None. Worded on first use."""
    words: list[str] = []

    def hint() -> str | None:
        if received():
            return None
        if not words:
            words.append(f"Nothing was received from {bus_name(core)}: "
                         f"{no_data_hint(core)}")
        return words[0]

    return hint
