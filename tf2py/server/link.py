"""The links of the buffer server and its client: how goals and answers travel, and nothing
else. The goal logic (``goals.py``, ``server.py``, ``client.py``) speaks only to these two
small interfaces; the address's scheme picks the link, through the one scheme registry
(``transport/interface.py``'s ``register_scheme(..., server_link=...)`` lines):

- ``tcp://``, ``ipc://``, ``inproc://``: ZeroMQ (``zmq_link.py``: a ROUTER on the server, a
  DEALER per client socket);
- ``zenoh://...``: Zenoh (``zenoh_link.py``), when that module is present.

A new link is a module with ``open_server_link(address, keys, on_drop)``,
``open_client_link(address, keys)`` returning objects of the shapes below, and
``check_address(address)`` (ValueError, opening nothing), named as ``server_link`` in its
scheme's registry line. Payloads are the bytes of ``protocol.py``; a link never looks inside
them.

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
from collections.abc import Callable
from typing import Any, Protocol

from ..transport.interface import server_link_module

__all__ = ["ServerLink", "ClientLink", "open_server_link", "open_client_link",
           "check_link_address"]


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

def _module(address: str) -> Any:
    """The link module of ``address``'s scheme; ValueError (one line) if none serves it."""
    scheme, module_name = server_link_module(address)
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(
            f"buffer server address {address!r}: {scheme}:// links are not available here "
            f"({exc})") from None


def check_link_address(address: str) -> str:
    """``address`` if it is a usable buffer server address, else ValueError (one line): the
    link of its scheme checks it, opening nothing."""
    checked: str = _module(address).check_address(address)
    return checked


def open_server_link(address: str, keys: Any, on_drop: OnDrop) -> ServerLink:
    """A listening ``ServerLink`` for ``address``, chosen by its scheme."""
    link: ServerLink = _module(address).open_server_link(address, keys, on_drop)
    return link


def open_client_link(address: str, keys: Any) -> ClientLink:
    """A ``ClientLink`` connecting to ``address``, chosen by its scheme."""
    link: ClientLink = _module(address).open_client_link(address, keys)
    return link
