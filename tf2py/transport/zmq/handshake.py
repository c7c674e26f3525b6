"""Why a keyed bus refuses a peer, said in one line on each side (ZeroMQ socket monitors).

A process without keys that connects to a core with keys fails the ZeroMQ handshake (the
core speaks CURVE, the client NULL); so does one whose key is not authorised there. ZeroMQ
then delivers nothing and says nothing: the client sees a silent bus. Here:

- ``RefusalLog``: watches a keyed core's (or server's) bound sockets and logs one warning per
  kind of refusal (further refusals are counted), naming the fix.
- ``handshake_problem(endpoint, keys)``: tries one handshake with ``endpoint`` as this
  process would, and returns the line that says why it failed (``None`` if it succeeded, or
  if nothing answered at all).
"""

from __future__ import annotations

import threading
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

from .sockets import logger, make_socket

__all__ = ["RefusalLog", "handshake_problem"]

_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
           | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
#: libzmq's ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH: one side has keys, the other not.
_MECHANISM_MISMATCH = int(getattr(zmq, "PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH", 0x11000002))


def _refusal(event: int, value: int) -> str:
    """The kind of refusal of a handshake-failed monitor event, seen from the keyed side."""
    if event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
        return "its key is not authorised here"
    if event == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL and value == _MECHANISM_MISMATCH:
        return "it has no keys"
    return "its handshake failed (no keys, another site's keys, or not a tf2py peer)"


class RefusalLog:
    """Logs, once per kind, the peers refused by ``sockets`` (bound, keyed) of ``what``
    ("tf2py core"): a named daemon thread reads their monitors until ``close()``."""

    def __init__(self, sockets: list[zmq.Socket[bytes]], what: str):
        self.what = what
        self.refused = 0
        self._said: set[str] = set()
        self._stop = threading.Event()
        self._monitors: list[tuple[zmq.Socket[bytes], zmq.Socket[bytes]]] = []
        for sock in sockets:
            self._monitors.append((sock, sock.get_monitor_socket(_FAILED)))
        self._thread = threading.Thread(target=self._run, name="tf2py-refusal-log", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        poller = zmq.Poller()
        endpoints = {}
        for sock, monitor in self._monitors:
            poller.register(monitor, zmq.POLLIN)
            endpoints[monitor] = sock
        try:
            while not self._stop.is_set():
                for monitor, _ in poller.poll(200):
                    try:
                        message = recv_monitor_message(monitor, zmq.NOBLOCK)
                    except zmq.ZMQError:
                        continue
                    event = int(message["event"])
                    if not event & _FAILED:
                        continue
                    self.refused += 1
                    kind = _refusal(event, int(message["value"]))
                    if kind in self._said:
                        continue
                    self._said.add(kind)
                    endpoint = message["endpoint"].decode(errors="replace")
                    logger.warning(
                        "%s: refused a peer on %s: %s; it needs this site's keys (--keys DIR "
                        "or TF2PY_KEYS, with its identity under DIR/authorized: `tf2py keygen "
                        "DIR --add NAME`). Further refusals of this kind are only counted.",
                        self.what, endpoint, kind)
        except zmq.ZMQError:
            pass  # the context is ending
        finally:
            for _, monitor in self._monitors:
                monitor.close(0)

    def close(self) -> None:
        """Stop watching (before the watched sockets close). Idempotent."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        for sock, _ in self._monitors:
            try:
                sock.disable_monitor()
            except zmq.ZMQError:
                pass


def handshake_problem(endpoint: str, keys: object = None, timeout: float = 2.0,
                      kind: int = zmq.SUB) -> str | None:
    """One line saying why a handshake with the bound socket at ``endpoint`` fails for this
    process with ``keys`` (a ``tf2py.transport.keys.Keys`` or None), or None when it succeeds
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
