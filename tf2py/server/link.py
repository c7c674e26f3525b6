"""The links of the buffer server and its client: how goals and answers travel, and nothing
else. The goal logic (``goals.py``, ``server.py``, ``client.py``) speaks only to these two
small interfaces; the address's scheme picks the link:

- ``tcp://``, ``ipc://``, ``inproc://``: ZeroMQ (``zmq_link.py``: a ROUTER on the server, a
  DEALER per client socket);
- ``zenoh://...``: Zenoh (``zenoh_link.py``), when that module is present.

A new link is a module with ``open_server_link(address, keys, on_drop)`` and
``open_client_link(address, keys)`` returning objects of the shapes below, registered in
``_SCHEMES``. Payloads are the bytes of ``protocol.py``; a link never looks inside them.

``ServerLink`` (one per BufferServer; used by its loop thread only, except ``wake``):

- ``address``: the address clients connect to (the bound port when 0 was asked);
- ``receive(limit)``: up to ``limit`` events without blocking, in arrival order, each
  ``(peer, payload)``: ``peer`` an opaque hashable id of one client *connection*, ``payload``
  the message's bytes, or ``None`` once that connection is gone (closed, killed, unreachable).
  ``None`` comes after every message that came over that connection, and no message with
  that ``peer`` follows it: the server drops the peer's waiting goals then, and they never
  come back. A peer id is never reused by another connection;
- ``send(peer, payload) -> bool``: queue an answer without blocking; False if it cannot be
  queued (peer gone, or its queue full);
- ``wait(timeout)``: block until ``receive`` may have something, ``wake()`` was called, or
  ``timeout`` seconds passed (None: no limit);
- ``wake()``: from any thread, make a ``wait`` in progress (or the next one) return; a no-op
  once the link is closed;
- ``close()``: stop listening, release the address (a new server may bind it at once) and
  every socket and thread. Called by the loop thread when it ends.

``on_drop(cause, what)`` is how a server link reports a message it could not deliver as
``(peer, payload)`` (e.g. ``"framing"``: a ZeroMQ message of several frames).

``ClientLink`` (one per client socket; used by one thread at a time, except ``wake``):

- ``address``; ``send(payload) -> bool`` (False: cannot be queued now, the server is not
  there and too much is queued for it); ``receive(limit) -> list[bytes]`` without blocking;
- ``wait(timeout)``: as the server's; ``wake()``: as the server's;
- ``reconnected() -> bool``: True if the connection came back after a drop since the last
  call (the client then sends its waiting goals again: the server dropped them with the old
  connection, or is a new server);
- ``close(linger=0.0)``: close, letting queued messages go out for up to ``linger`` seconds.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Protocol

__all__ = ["ServerLink", "ClientLink", "open_server_link", "open_client_link", "link_scheme"]


class ServerLink(Protocol):
    """The socket side of a BufferServer (see the module docstring)."""

    address: str

    def receive(self, limit: int) -> list[tuple[Any, bytes | None]]: ...

    def send(self, peer: Any, payload: bytes) -> bool: ...

    def wait(self, timeout: float | None) -> None: ...

    def wake(self) -> None: ...

    def close(self) -> None: ...


class ClientLink(Protocol):
    """The socket side of a BufferClient (see the module docstring)."""

    address: str

    def send(self, payload: bytes) -> bool: ...

    def receive(self, limit: int) -> list[bytes]: ...

    def wait(self, timeout: float | None) -> None: ...

    def wake(self) -> None: ...

    def reconnected(self) -> bool: ...

    def close(self, linger: float = 0.0) -> None: ...


OnDrop = Callable[[str, str], None]

# scheme -> module with open_server_link / open_client_link
_SCHEMES = {
    "tcp": "tf2py.server.zmq_link",
    "ipc": "tf2py.server.zmq_link",
    "inproc": "tf2py.server.zmq_link",
    "zenoh": "tf2py.server.zenoh_link",
}


def link_scheme(address: str) -> str:
    """The scheme of a server address (``tcp`` of ``tcp://...``); ValueError if unknown."""
    scheme, sep, _ = address.partition("://")
    if not sep and address.startswith("zenoh:"):
        scheme, sep = "zenoh", ":"
    if not sep or scheme not in _SCHEMES:
        known = ", ".join(f"{s}://" for s in _SCHEMES)
        raise ValueError(
            f"invalid buffer server address {address!r}: expected one of {known} "
            "(e.g. tcp://127.0.0.1:7402)")
    return scheme


def _module(address: str) -> Any:
    scheme = link_scheme(address)
    try:
        return importlib.import_module(_SCHEMES[scheme])
    except ImportError as exc:
        raise ValueError(
            f"buffer server address {address!r}: {scheme}:// links are not available here "
            f"({exc})") from None


def open_server_link(address: str, keys: Any, on_drop: OnDrop) -> ServerLink:
    """A listening ``ServerLink`` for ``address``, chosen by its scheme."""
    link: ServerLink = _module(address).open_server_link(address, keys, on_drop)
    return link


def open_client_link(address: str, keys: Any) -> ClientLink:
    """A ``ClientLink`` connecting to ``address``, chosen by its scheme."""
    link: ClientLink = _module(address).open_client_link(address, keys)
    return link
