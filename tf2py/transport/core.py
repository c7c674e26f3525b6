"""The core: the bus where broadcasters and listeners meet (what ``tf2py core`` runs).

Shape (see docs/protocol.md):

- an XSUB socket bound at the core address ``tcp://HOST:PORT``: publishers connect here;
- an XPUB socket bound at ``PORT + 1``: subscribers connect here;
- ``zmq.proxy_steerable`` forwards between them in C (no Python per /tf message);
- a latch thread keeps the latest /tf_static transform per child frame. Static broadcasters
  send to the core on the ``latch/tf_static`` topic, which subscribers never match; the latch
  thread records each message and re-publishes it as ``/tf_static``; when a subscription that
  covers ``/tf_static`` arrives (XPUB_VERBOSE reports every one), it re-publishes the whole
  latched set, so a listener that joins late still gets every static transform (ZeroMQ's
  slow-joiner loss cannot hit it: the subscription arriving means the pipe is attached).
  All /tf_static output comes from that one thread, so replays never overtake updates.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import zmq

from . import wire
from ._sockets import SEND_HWM, DropCounter, inproc_name, logger, make_socket
from .address import core_address, split_tcp_address

__all__ = ["Core"]

_CORE_SEND_HWM = SEND_HWM
_CORE_RECEIVE_HWM = 100_000
_BIND_ATTEMPTS = 200


class Core:
    """Runs the bus in background threads of this process.

    ``address`` is ``tcp://HOST:PORT`` (default: ``$TF2PY_CORE``, else tcp://127.0.0.1:7400);
    the core binds PORT (publishers) and PORT + 1 (subscribers). With port 0 it picks a free
    pair and ``.address`` reports it. Give a routable HOST (or 0.0.0.0) to serve other hosts.
    """

    def __init__(self, address: str | None = None):
        self._requested = core_address(address)
        host, port = split_tcp_address(self._requested)
        self._host = host
        self._closed = False
        self._lock = threading.Lock()
        self._close_lock = threading.Lock()
        self.dropped = DropCounter("tf2py core")
        self.static_messages = 0
        self.replays = 0
        # child frame -> (parent, stamp_ns, values row (7,), authority)
        self._latched: dict[str, tuple[str, int, np.ndarray, str]] = {}
        self._sockets: list[zmq.Socket] = []
        # Its own context: close() terminates it, which returns only once ZeroMQ has really
        # closed the listening sockets, so the ports are free again when close() returns
        # (a core restarted in the same process binds them at once).
        self._context = zmq.Context()
        self._proxy_thread = None
        self._latch_thread = None
        try:
            self._start(host, port)
        except BaseException:
            self.close()
            raise

    # -- set-up -----------------------------------------------------------------------------

    def _socket(self, kind, **options) -> zmq.Socket:
        sock = make_socket(kind, linger_ms=0, ctx=self._context, **options)
        self._sockets.append(sock)
        return sock

    def _bind_pair(self, host: str, port: int):
        frontend = self._socket(zmq.XSUB, RCVHWM=_CORE_RECEIVE_HWM, MAXMSGSIZE=wire.MAX_MESSAGE_BYTES)
        backend = self._socket(zmq.XPUB, SNDHWM=_CORE_SEND_HWM, XPUB_VERBOSE=1)
        if port != 0:
            try:
                frontend.bind(f"tcp://{host}:{port}")
                backend.bind(f"tcp://{host}:{port + 1}")
            except zmq.ZMQError as exc:
                raise OSError(
                    f"tf2py core cannot bind tcp://{host}:{port} and tcp://{host}:{port + 1}: "
                    f"{exc.strerror}"
                ) from None
            return frontend, backend, port
        last_error = None
        for _ in range(_BIND_ATTEMPTS):
            try:
                frontend.bind(f"tcp://{host}:*")
            except zmq.ZMQError as exc:
                raise OSError(f"tf2py core cannot bind tcp://{host}:0: {exc.strerror}") from None
            endpoint = frontend.getsockopt_string(zmq.LAST_ENDPOINT)
            chosen = int(endpoint.rsplit(":", 1)[1])
            if chosen < 65535:
                try:
                    backend.bind(f"tcp://{host}:{chosen + 1}")
                    return frontend, backend, chosen
                except zmq.ZMQError as exc:
                    last_error = exc
            frontend.unbind(endpoint)
        raise OSError(f"tf2py core found no free port pair on {host}: {last_error}")

    def _start(self, host: str, port: int) -> None:
        frontend, backend, port = self._bind_pair(host, port)
        self.port = port
        self.address = f"tcp://{host}:{port}"
        self.subscribe_address = f"tcp://{host}:{port + 1}"

        # The core itself subscribes to what it must see from publishers: the latch topic
        # (for the latch thread) and /tf_static (so its own re-publications pass the XSUB).
        # Listeners' subscriptions (/tf) are forwarded by the proxy.
        frontend.send(b"\x01" + wire.TOPIC_STATIC_LATCH)
        frontend.send(b"\x01" + wire.TOPIC_TF_STATIC)

        inject_name = inproc_name("core-inject")
        frontend.bind(inject_name)
        capture_name = inproc_name("core-capture")
        capture = self._socket(zmq.PUB, SNDHWM=100_000)
        capture.bind(capture_name)
        control_name = inproc_name("core-control")
        control = self._socket(zmq.PAIR)
        control.bind(control_name)
        self._control = self._socket(zmq.PAIR)
        self._control.connect(control_name)

        # The latch thread's sockets: the capture (latch messages and subscriptions only; the
        # PUB filters /tf out in C), the injector publishing /tf_static into the frontend, and
        # a stop pipe.
        tap = self._socket(zmq.SUB, RCVHWM=100_000)
        tap.setsockopt(zmq.SUBSCRIBE, wire.TOPIC_STATIC_LATCH)
        tap.setsockopt(zmq.SUBSCRIBE, b"\x01")
        tap.connect(capture_name)
        injector = self._socket(zmq.XPUB, SNDHWM=100_000)
        injector.connect(inject_name)
        stop_name = inproc_name("core-latch-stop")
        stop = self._socket(zmq.PAIR)
        stop.bind(stop_name)
        self._latch_stop = self._socket(zmq.PAIR)
        self._latch_stop.connect(stop_name)

        self._proxy_thread = threading.Thread(
            target=self._run_proxy,
            args=(frontend, backend, capture, control),
            name=f"tf2py-core-proxy:{port}",
            daemon=True,
        )
        self._latch_thread = threading.Thread(
            target=self._run_latch,
            args=(tap, injector, stop),
            name=f"tf2py-core-latch:{port}",
            daemon=True,
        )
        self._proxy_thread.start()
        # The injector may publish only once the frontend's /tf_static subscription reached
        # it (the forwarder thread makes the XSUB process the attachment).
        deadline = time.monotonic() + 5.0
        while True:
            if injector.poll(50):
                if injector.recv() == b"\x01" + wire.TOPIC_TF_STATIC:
                    break
            elif time.monotonic() > deadline:
                raise RuntimeError("tf2py core: internal publisher did not connect")
        self._latch_thread.start()

    # -- threads ----------------------------------------------------------------------------

    def _run_proxy(self, frontend, backend, capture, control) -> None:
        try:
            zmq.proxy_steerable(frontend, backend, capture, control)
        except zmq.ZMQError as exc:
            if exc.errno != zmq.ETERM:
                logger.error("tf2py core: forwarder stopped: %s", exc)

    def _run_latch(self, tap, injector, stop) -> None:
        poller = zmq.Poller()
        poller.register(tap, zmq.POLLIN)
        poller.register(injector, zmq.POLLIN)
        poller.register(stop, zmq.POLLIN)
        try:
            while True:
                events = dict(poller.poll())
                if stop in events:
                    return
                if injector in events:
                    while injector.poll(0):
                        injector.recv()  # subscriptions forwarded by the XSUB; nothing to do
                if tap in events:
                    # Subscriptions that arrive together get one replay (after the updates
                    # read with them), so a crowd of listeners joining at once costs one
                    # replay per wake-up, not one per listener.
                    replay = False
                    for _ in range(10_000):
                        if not tap.poll(0):
                            break
                        frames = tap.recv_multipart()
                        try:
                            replay = self._on_tap(frames, injector) or replay
                        except Exception as exc:  # never let bad input stop the core
                            self.dropped.drop("error", f"{type(exc).__name__}: {exc}")
                    if replay and self._latched:
                        self._replay(injector)
        except zmq.ZMQError as exc:
            if exc.errno != zmq.ETERM:
                logger.error("tf2py core: latch thread stopped: %s", exc)

    def _on_tap(self, frames, injector) -> bool:
        """Handle one captured message; True when it is a subscription that needs a replay."""
        first = frames[0]
        if len(frames) == 1 and first[:1] == b"\x01":
            return wire.TOPIC_TF_STATIC.startswith(first[1:])
        if first != wire.TOPIC_STATIC_LATCH:
            return False
        if len(frames) != 2:
            self.dropped.drop("shape", f"a latch message has 2 frames, got {len(frames)}")
            return False
        body = frames[1]
        try:
            arrays = wire.decode_transforms(body)
        except wire.UnknownVersionError as exc:
            # Not latched (we cannot read it), but passed on: newer listeners may.
            self.dropped.drop("version", str(exc))
            injector.send_multipart([wire.TOPIC_TF_STATIC, body])
            return False
        except wire.WireError as exc:
            self.dropped.drop(exc.cause, str(exc))
            return False
        self.static_messages += 1
        with self._lock:
            for i, child in enumerate(arrays.children):
                key = child[1:] if child.startswith("/") else child
                if not key:
                    continue  # invalid; the listener reports it, nothing to latch
                self._latched[key] = (
                    arrays.parents[i],
                    int(arrays.stamps_ns[i]),
                    arrays.values[i].copy(),
                    arrays.authority,
                )
        injector.send_multipart([wire.TOPIC_TF_STATIC, body])
        return False

    def _replay(self, injector) -> None:
        """Re-publish every latched static transform, one message per authority."""
        groups: dict[str, list] = {}
        with self._lock:
            for child, (parent, stamp, row, authority) in self._latched.items():
                groups.setdefault(authority, []).append((parent, child, stamp, row))
        for authority, rows in groups.items():
            body = wire.encode_arrays(
                [r[0] for r in rows],
                [r[1] for r in rows],
                [r[2] for r in rows],
                np.array([r[3] for r in rows], dtype=np.float64).reshape(-1, 7),
                authority,
            )
            injector.send_multipart([wire.TOPIC_TF_STATIC, body])
        self.replays += 1

    # -- public -----------------------------------------------------------------------------

    def latched_frames(self) -> list[str]:
        """Child frames whose latest static transform the core holds, sorted."""
        with self._lock:
            return sorted(self._latched)

    def close(self) -> None:
        """Stop forwarding, end the threads and close every socket; the ports are free when
        it returns. Idempotent, also when called from several threads at once."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._close()

    def _close(self) -> None:
        if self._proxy_thread is not None and self._proxy_thread.is_alive():
            try:
                self._control.send(b"TERMINATE")
            except zmq.ZMQError:
                pass
            self._proxy_thread.join(5)
        if self._latch_thread is not None and self._latch_thread.is_alive():
            try:
                self._latch_stop.send(b"stop")
            except zmq.ZMQError:
                pass
            self._latch_thread.join(5)
        for sock in self._sockets:
            sock.close(0)
        self._sockets.clear()
        self._context.term()

    def __enter__(self) -> "Core":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "serving"
        return f"Core({getattr(self, 'address', self._requested)!r}, {state})"
