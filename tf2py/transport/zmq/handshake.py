"""Why a keyed bus refuses a peer, said in one line on each side (ZeroMQ socket monitors).

A process without keys that connects to a core with keys fails the ZeroMQ handshake (the
core speaks CURVE, the client NULL); so does one whose key is not authorised there. ZeroMQ
then delivers nothing and says nothing: the client sees a silent bus. Here:

- the core's side is its connection watch (``connections.py``), which counts and logs each
  refused peer as ``refused_peer``;
- ``handshake_problem(endpoint, keys)``: tries one handshake with ``endpoint`` as this
  process would, and returns the line that says why it failed (``None`` if it succeeded, or
  if nothing answered at all).
"""

from __future__ import annotations

import time

import zmq
from zmq.utils.monitor import recv_monitor_message

from .sockets import make_socket

__all__ = ["handshake_problem", "handshake_refusal"]

_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
           | zmq.EVENT_HANDSHAKE_FAILED_AUTH)


def handshake_problem(endpoint: str, keys: object = None, timeout: float = 2.0,
                      kind: int = zmq.SUB) -> str | None:
    """One line saying why a handshake with the bound socket at ``endpoint`` fails for this
    process with ``keys`` (a ``tf2py.transport.zmq.keys.Keys`` or None), or None when it succeeds
    or nothing answers within ``timeout`` seconds. ``kind``: a socket type that the bound one
    accepts (SUB for a core's subscriber port, DEALER for a buffer server)."""
    sock = make_socket(kind, linger_ms=0)
    monitor = sock.get_monitor_socket(_FAILED | zmq.EVENT_HANDSHAKE_SUCCEEDED)
    try:
        if keys is not None:
            keys.apply_client(sock)  # type: ignore[attr-defined]
        sock.connect(endpoint)
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            if not monitor.poll(int(remaining * 1000) + 1):
                break
            message = recv_monitor_message(monitor)
            event = int(message["event"])
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                return None
            if event & _FAILED:
                if keys is None:
                    return (f"the core at {endpoint} needs keys: pass --keys DIR (or set "
                            "TF2PY_KEYS) with a folder of its site (`tf2py keygen`)")
                if event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                    return (f"the core at {endpoint} refused this process's key: authorise it "
                            "there (`tf2py keygen SITE --add NAME`, then --keys SITE/NAME)")
                return (f"the handshake with {endpoint} failed: it runs without keys, or with "
                        "another site's; use the keys folder of its site, or no --keys")
        return None
    finally:
        try:
            sock.disable_monitor()
        except zmq.ZMQError:
            pass
        monitor.close(0)
        sock.close(0)


def handshake_refusal(address: str) -> str | None:
    """Why the tf2py core at ``address`` refuses this process's handshake (keys it lacks,
    or keys it does not accept), worded with the core's address; None if it does not (or
    nothing answers within 1.5 s)."""
    from .address import bus_endpoints
    from .keys import KeysError, load_keys

    try:
        _, subscribe_endpoint = bus_endpoints(address)
        keys = load_keys()
    except (ValueError, KeysError):
        return None
    problem = handshake_problem(subscribe_endpoint, keys, timeout=1.5)
    if problem is None:
        return None
    return problem.replace(subscribe_endpoint, address)
