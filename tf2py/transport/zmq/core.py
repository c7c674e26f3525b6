"""The core: the bus where broadcasters and listeners meet (what ``tf2py core`` runs).

Shape (see docs/protocol.md):

- an XSUB socket bound at the core address ``tcp://HOST:PORT``: publishers connect here;
- an XPUB socket bound at ``PORT + 1``: subscribers connect here;
- ``zmq.proxy_steerable`` forwards between them in C (no Python per /tf message);
- the core's memory is bounded in bytes: no message of more than ``PIECE_BYTES`` enters it
  (ZMQ_MAXMSGSIZE; broadcasters send bigger lists as several messages of whole transforms),
  each subscriber's queue holds at most ``SUBSCRIBER_HWM`` of them (64 MiB), and a
  subscriber that stops reading is cut after ``STALL_CUT_MS`` (TCP user timeout), its queue
  freed. Messages are shared between the subscribers' queues, not copied;
- a latch thread keeps, per static publisher, the latest valid /tf_static transform per
  child frame. Static broadcasters send their set to the core on
  ``latch/tf_static/<id>/<version>/<k>/<n>`` (piece k of n), a heartbeat on
  ``latch/alive/<id>/<version>`` every second and ``latch/bye/<id>`` on close; the set of a
  publisher that said goodbye or whose heartbeat stopped for ``EXPIRE_SECONDS`` is no longer
  given to listeners that start later. When a subscription that covers /tf_static arrives,
  the latch thread re-publishes the live sets, at most once per replay interval
  (subscriptions arriving meanwhile share the next replay). All /tf_static output comes
  from that one thread, so replays never overtake updates.
"""

from __future__ import annotations

import errno
import socket
import sys
import threading
import time
from typing import Any

import zmq

from .. import wire
from ..address import core_address
from ..lifetime import ClosingContext
from .address import split_tcp_address
from .connections import MAX_PUBLISHERS, MAX_SUBSCRIBERS, ConnectionWatch
from .keys import load_keys, warn_if_exposed
from .latch import EXPIRE_SECONDS, LATCHED_BYTES, REPLAY_MIN_INTERVAL, REPLAY_RATE, LatchStore
from .sockets import DropCounter, inproc_name, logger, make_socket

__all__ = ["Core", "EXPIRE_SECONDS", "LATCHED_BYTES", "MAX_SUBSCRIBERS", "MAX_PUBLISHERS",
           "MEMORY_BUDGET_BYTES"]

#: Largest message (body) the core accepts and queues (bigger lists travel as several).
PIECE_BYTES = wire.MAX_PIECE_BYTES
#: Messages queued per subscriber: SUBSCRIBER_HWM * PIECE_BYTES = 64 MiB per subscriber.
SUBSCRIBER_HWM = 4096
#: Counters are read from the proxy this often.
STATISTICS_SECONDS = 0.25
#: ZeroMQ heartbeat on subscriber connections: a peer that answers nothing for
#: HEARTBEAT_TIMEOUT_MS is disconnected (a vanished host; a peer that stops reading but whose
#: host still acknowledges TCP is not: its queue stays at its bound until it goes).
HEARTBEAT_IVL_MS = 1000
HEARTBEAT_TIMEOUT_MS = 10_000
#: A subscriber whose connection takes no data for this long (it stopped reading: its TCP
#: window stays shut) is disconnected by the kernel (ZMQ_TCP_MAXRT, TCP_USER_TIMEOUT) and
#: its queue freed; it reconnects by itself once it reads again (and gets the statics
#: replayed). So stalled subscribers cannot pile up memory in the core.
STALL_CUT_MS = 10_000
#: Messages read ahead from the latch thread's sockets.
INPUT_HWM = 1000
#: Messages read ahead from each publisher connection (4 MiB at most).
PUBLISHER_HWM = 256
#: The core's memory bound, all together (messages at their largest, 16 KiB): the subscribers'
#: queues, the publishers' read-ahead and the latched statics. Over MAX_SUBSCRIBERS or
#: MAX_PUBLISHERS connections are refused (counted, logged; see connections.py).
MEMORY_BUDGET_BYTES = (MAX_SUBSCRIBERS * SUBSCRIBER_HWM * PIECE_BYTES
                       + MAX_PUBLISHERS * PUBLISHER_HWM * PIECE_BYTES + LATCHED_BYTES)
_BIND_ATTEMPTS = 200
_LATCH_PREFIX = b"latch/"

class Core(ClosingContext):
    """Runs the bus in background threads of this process.

    ``address`` is ``tcp://HOST:PORT`` (default: ``$TF2PY_CORE``, else tcp://127.0.0.1:7400);
    the core binds PORT (publishers) and PORT + 1 (subscribers). With port 0 it picks a free
    pair and ``.address`` reports it. Give a routable HOST (or 0.0.0.0) to serve other hosts,
    with ``keys`` (a folder made by ``tf2py keygen``; default ``$TF2PY_KEYS``) so that only
    processes holding that site's keys can use it.
    """

    def __init__(self, address: str | None = None, keys: Any = None):
        self._requested = core_address(address)
        host, port = split_tcp_address(self._requested)
        self._host = host
        self._closed = False
        self._close_lock = threading.Lock()
        self.dropped = DropCounter("tf2py core")
        self._latch = LatchStore(self.dropped, self._ask_resend)
        self.forwarded_messages = 0
        self.forwarded_bytes = 0
        self._sockets: list[zmq.Socket[bytes]] = []
        self._keys = load_keys(keys)
        self._keys_held = 0
        self._forward_thread: threading.Thread | None = None
        self._latch_thread: threading.Thread | None = None
        self._watch: ConnectionWatch | None = None
        self._bound_ports: list[int] = []
        try:
            self._start(host, port)
        except BaseException:
            self.close()
            raise

    # -- set-up -----------------------------------------------------------------------------

    def _socket(self, kind: int, **options: int) -> zmq.Socket[bytes]:
        sock = make_socket(kind, linger_ms=0, **options)
        self._sockets.append(sock)
        return sock

    def _secure(self, sock: zmq.Socket[bytes]) -> None:
        if self._keys is not None:
            self._keys.apply_server(sock, "tf2py core")
            self._keys_held += 1

    def _bind_pair(self, host: str,
                   port: int) -> tuple[zmq.Socket[bytes], zmq.Socket[bytes], int]:
        frontend = self._socket(zmq.XSUB, RCVHWM=PUBLISHER_HWM, MAXMSGSIZE=PIECE_BYTES)
        backend = self._socket(
            zmq.XPUB, SNDHWM=SUBSCRIBER_HWM, XPUB_VERBOSE=1, RCVHWM=INPUT_HWM,
            MAXMSGSIZE=1024, TCP_MAXRT=STALL_CUT_MS, HEARTBEAT_IVL=HEARTBEAT_IVL_MS,
            HEARTBEAT_TIMEOUT=HEARTBEAT_TIMEOUT_MS, HEARTBEAT_TTL=HEARTBEAT_TIMEOUT_MS)
        self._secure(frontend)
        self._secure(backend)
        if port != 0:
            try:
                frontend.bind(f"tcp://{host}:{port}")
                backend.bind(f"tcp://{host}:{port + 1}")
            except zmq.ZMQError as exc:
                raise OSError(
                    f"cannot bind tcp://{host}:{port} and tcp://{host}:{port + 1}: "
                    f"{exc.strerror}"
                ) from None
            return frontend, backend, port
        last_error = None
        for _ in range(_BIND_ATTEMPTS):
            try:
                frontend.bind(f"tcp://{host}:*")
            except zmq.ZMQError as exc:
                raise OSError(f"cannot bind tcp://{host}:0: {exc.strerror}") from None
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
        warn_if_exposed(host, self._keys, "tf2py core")
        frontend, backend, port = self._bind_pair(host, port)
        self._bound_ports = [port, port + 1]
        self.port = port
        shown = "0.0.0.0" if host == "*" else host  # (bound on every interface: an address
        self.address = f"tcp://{shown}:{port}"        # to connect to, as BufferServer's)
        self.subscribe_address = f"tcp://{shown}:{port + 1}"
        self._watch = ConnectionWatch(frontend, backend, self.dropped,
                                      f"tf2py core {self.address}")

        # The core itself subscribes to what it must see from publishers: the latch topics
        # (for the latch thread) and /tf_static (so its own re-publications pass the XSUB).
        # Listeners' subscriptions (/tf) are forwarded by the proxy.
        frontend.send(b"\x01" + _LATCH_PREFIX)
        frontend.send(b"\x01" + wire.TOPIC_TF_STATIC)

        inject_name = inproc_name("core-inject")
        frontend.bind(inject_name)
        # The latch thread's subscriber on the XPUB: its subscriptions go up to publishers.
        backend_name = inproc_name("core-backend")
        backend.bind(backend_name)
        self._resend_sub = self._socket(zmq.SUB, RCVHWM=16)
        self._resend_sub.connect(backend_name)
        capture_name = inproc_name("core-capture")
        capture = self._socket(zmq.PUB, SNDHWM=INPUT_HWM)
        capture.bind(capture_name)
        control_name = inproc_name("core-control")
        control = self._socket(zmq.PAIR)
        control.bind(control_name)
        steer = self._socket(zmq.PAIR)
        steer.connect(control_name)
        self._steer = steer

        # The latch thread's sockets: the capture (latch messages and subscriptions only; the
        # PUB filters /tf out in C), the injector publishing /tf_static into the frontend,
        # the proxy's control (statistics, terminate) and a stop pipe.
        tap = self._socket(zmq.SUB, RCVHWM=INPUT_HWM)
        tap.setsockopt(zmq.SUBSCRIBE, _LATCH_PREFIX)
        tap.setsockopt(zmq.SUBSCRIBE, b"\x01")
        tap.connect(capture_name)
        injector = self._socket(zmq.XPUB, SNDHWM=INPUT_HWM)
        injector.connect(inject_name)
        stop_name = inproc_name("core-latch-stop")
        stop = self._socket(zmq.PAIR)
        stop.bind(stop_name)
        self._latch_stop = self._socket(zmq.PAIR)
        self._latch_stop.connect(stop_name)

        self._forward_thread = threading.Thread(
            target=self._run_proxy,
            args=(frontend, backend, capture, control),
            name=f"tf2py-core-proxy:{port}",
            daemon=True,
        )
        self._latch_thread = threading.Thread(
            target=self._run_latch,
            args=(tap, injector, steer, stop, self._watch),
            name=f"tf2py-core-latch:{port}",
            daemon=True,
        )
        self._forward_thread.start()
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

    # -- forwarder --------------------------------------------------------------------------

    def _run_proxy(self, frontend: zmq.Socket[bytes], backend: zmq.Socket[bytes],
                   capture: zmq.Socket[bytes], control: zmq.Socket[bytes]) -> None:
        try:
            zmq.proxy_steerable(frontend, backend, capture, control)
        except zmq.ZMQError as exc:
            if exc.errno not in (zmq.ETERM, errno.ENOTSOCK):
                logger.error("tf2py core: forwarder stopped: %s", exc)

    def _read_statistics(self, steer: zmq.Socket[bytes]) -> None:
        """The proxy's counters (messages and bytes out to subscribers, each message once)."""
        steer.send(b"STATISTICS")
        if not steer.poll(1000):
            return
        frames = steer.recv_multipart()
        if len(frames) == 8:
            stats = [int.from_bytes(f, sys.byteorder) for f in frames]
            self.forwarded_messages, self.forwarded_bytes = stats[6], stats[7]

    # -- latch thread -----------------------------------------------------------------------

    def _run_latch(self, tap: zmq.Socket[bytes], injector: zmq.Socket[bytes],
                   steer: zmq.Socket[bytes], stop: zmq.Socket[bytes],
                   watch: ConnectionWatch) -> None:
        poller = zmq.Poller()
        poller.register(tap, zmq.POLLIN)
        poller.register(injector, zmq.POLLIN)
        poller.register(stop, zmq.POLLIN)
        for monitor in watch.monitors():
            poller.register(monitor, zmq.POLLIN)
        replay_due = False
        next_replay = 0.0
        next_check = 0.0
        try:
            while True:
                now = time.monotonic()
                timeout = max(0.0, min(next_check - now, 0.25))
                if replay_due:
                    timeout = max(0.0, min(timeout, next_replay - now))
                events = dict(poller.poll(int(timeout * 1000)))
                if stop in events:
                    steer.send(b"TERMINATE")
                    return
                for monitor in watch.monitors():
                    if monitor in events:
                        watch.handle(monitor)
                if injector in events:
                    while injector.poll(0):
                        injector.recv()  # subscriptions forwarded by the XSUB; nothing to do
                if tap in events:
                    for _ in range(10_000):
                        try:
                            frames = tap.recv_multipart(zmq.NOBLOCK)
                        except zmq.Again:
                            break
                        first = frames[0]
                        if len(frames) == 1 and first[:1] == b"\x01":
                            if wire.TOPIC_TF_STATIC.startswith(first[1:]):
                                replay_due = True
                            continue
                        if len(frames) != 2:
                            self.dropped.drop(
                                "shape", f"a latch message has 2 frames, got {len(frames)}")
                            continue
                        try:
                            self._latch.on_latch(first, frames[1], injector)
                        except Exception as exc:  # never let bad input stop the core
                            self.dropped.drop("error", f"{type(exc).__name__}: {exc}")
                now = time.monotonic()
                if now >= next_check:
                    next_check = now + STATISTICS_SECONDS
                    self._read_statistics(steer)
                    self._latch.expire(now)
                if replay_due and now >= next_replay:
                    replay_due = False
                    sent = self._latch.replay(injector)
                    next_replay = time.monotonic() + max(REPLAY_MIN_INTERVAL, sent / REPLAY_RATE)
        except zmq.ZMQError as exc:
            if exc.errno not in (zmq.ETERM, errno.ENOTSOCK):
                logger.error("tf2py core: latch thread stopped: %s", exc)

    # -- public -----------------------------------------------------------------------------

    def _ask_resend(self, topic: bytes) -> None:
        # Through the core's own subscriber on the XPUB: the proxy passes the subscription up
        # to every publisher, and the one it names re-sends its set. (Latch thread only.)
        self._resend_sub.setsockopt(zmq.SUBSCRIBE, topic)
        self._resend_sub.setsockopt(zmq.UNSUBSCRIBE, topic)

    def _forget(self, key: str) -> None:
        """Drop static publisher ``key``'s latched set (as if it had said goodbye)."""
        self._latch.forget_publisher(key)

    def latched_frames(self) -> list[str]:
        """Child frames of which the core holds a latched static transform, sorted."""
        return self._latch.latched_frames()

    def latched_bytes(self) -> int:
        """Bytes (estimated) of the latched statics held."""
        return self._latch.latched_bytes()

    @property
    def static_messages(self) -> int:
        return self._latch.static_messages

    @property
    def replays(self) -> int:
        return self._latch.replays

    def stats(self) -> dict[str, Any]:
        """Counters: forwarded messages and bytes, latched publishers and statics, replays,
        drops per cause."""
        publishers, latched = self._latch.counts()
        return {
            "forwarded_messages": self.forwarded_messages,
            "forwarded_bytes": self.forwarded_bytes,
            "static_messages": self._latch.static_messages,
            "static_publishers": publishers,
            "latched_transforms": latched,
            "latched_bytes": self._latch.latched_bytes(),
            "replays": self._latch.replays,
            **(self._watch.stats() if self._watch is not None else {}),
            "dropped": self.dropped.snapshot(),
        }

    def close(self) -> None:
        """Stop forwarding, end the threads and close every socket; the ports are free when
        it returns. Idempotent, also when called from several threads at once."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._close()

    def _close(self) -> None:
        # The latch thread owns the proxy's control socket: told to stop, it terminates the
        # proxy too.
        if self._latch_thread is not None and self._latch_thread.is_alive():
            try:
                self._latch_stop.send(b"stop")
            except zmq.ZMQError:
                pass
            self._latch_thread.join(5)
        elif self._forward_thread is not None and self._forward_thread.is_alive():
            try:  # the latch thread never started: its control socket is free
                self._steer.send(b"TERMINATE")
            except zmq.ZMQError:
                pass
        if self._forward_thread is not None:
            self._forward_thread.join(5)
        if self._watch is not None:
            self._watch.close()  # first: the watched sockets' monitors stop before they close
        for sock in self._sockets:
            sock.close(0)
        self._sockets.clear()
        for _ in range(self._keys_held):
            if self._keys is not None:
                self._keys.release_server()
        self._keys_held = 0
        # The shared context closes listening sockets in its I/O thread: wait until the
        # ports can be bound again, so a core restarted at once finds them free.
        _wait_ports_free(self._host, self._bound_ports, 5.0)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "serving"
        return f"Core({getattr(self, 'address', self._requested)!r}, {state})"


def _wait_ports_free(host: str, ports: list[int], timeout: float) -> None:
    if not ports:
        return
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    bind_host = host.strip("[]")
    if bind_host in ("*", ""):
        bind_host = "0.0.0.0"
    deadline = time.monotonic() + timeout
    for port in ports:
        while True:
            probe = socket.socket(family, socket.SOCK_STREAM)
            try:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind((bind_host, port))
                break
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                    break
            finally:
                probe.close()
            time.sleep(0.005)
