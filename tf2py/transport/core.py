"""The core: the bus where broadcasters and listeners meet (what ``tf2py core`` runs).

Shape (see docs/protocol.md):

- an XSUB socket bound at the core address ``tcp://HOST:PORT``: publishers connect here;
- an XPUB socket bound at ``PORT + 1``: subscribers connect here;
- a forwarder thread moves /tf from the XSUB to the XPUB and subscriptions back. It keeps
  the core's memory bounded in bytes: every message it queues for subscribers is at most
  ``PIECE_BYTES`` (bigger ones are split into pieces of whole transforms), each subscriber's
  queue holds at most ``SUBSCRIBER_HWM`` of them, and all it forwards within the time a
  stalled subscriber may hold messages (``HOLD_SECONDS``: ZeroMQ heartbeats cut a subscriber
  that reads nothing) is at most ``TOTAL_BYTES``. What does not fit is dropped and counted;
- a latch thread keeps, per static publisher, the latest valid /tf_static transform per
  child frame. Static broadcasters send their set to the core on ``latch/tf_static/<id>/<n>``,
  a heartbeat on ``latch/alive/<id>/<n>`` every second and ``latch/bye/<id>`` on close; the
  set of a publisher that said goodbye or whose heartbeat stopped for ``EXPIRE_SECONDS`` is
  no longer given to listeners that start later. When a subscription that covers
  /tf_static arrives, the latch thread re-publishes the live sets, at most once per
  ``replay interval`` (subscriptions arriving meanwhile share the next replay). All
  /tf_static output comes from that one thread, so replays never overtake updates.
"""

from __future__ import annotations

import collections
import errno
import socket
import threading
import time

import numpy as np
import zmq

from . import wire
from ._sockets import DropCounter, context, inproc_name, logger, make_socket
from .address import core_address, split_tcp_address
from .keys import load_keys, warn_if_exposed

__all__ = ["Core"]

#: Largest message the core queues for subscribers (bigger ones are split by rows).
PIECE_BYTES = 64 * 1024
#: Messages queued per subscriber: SUBSCRIBER_HWM * PIECE_BYTES = 64 MiB per subscriber.
SUBSCRIBER_HWM = 1024
#: Bytes forwarded within HOLD_SECONDS, all subscribers together (messages are shared by
#: the subscribers' queues, not copied).
TOTAL_BYTES = 512 * 1024 * 1024
#: ZeroMQ heartbeat on subscriber connections: one that answers nothing for
#: HEARTBEAT_TIMEOUT_MS is disconnected and its queue freed.
HEARTBEAT_IVL_MS = 1000
HEARTBEAT_TIMEOUT_MS = 10_000
HOLD_SECONDS = (HEARTBEAT_IVL_MS + HEARTBEAT_TIMEOUT_MS) / 1000 + 1.0
#: Messages read ahead from each publisher connection and from the latch thread.
INPUT_HWM = 1000
#: Bytes of latched statics held, all publishers together.
LATCHED_BYTES = 256 * 1024 * 1024
#: A static publisher whose heartbeat stops for this long is forgotten (API: within 5 s).
EXPIRE_SECONDS = 3.5
#: Replays of the latched set: at least this far apart, and further apart for big sets
#: (REPLAY_RATE bytes per second of replay at most).
REPLAY_MIN_INTERVAL = 0.25
REPLAY_RATE = 32 * 1024 * 1024
#: How long a publisher asked to re-send its set is left to do it before asking again.
RESEND_INTERVAL = 2.0

_BIND_ATTEMPTS = 200
_LATCH_PREFIX = b"latch/"
_SET_PREFIX = b"latch/tf_static/"
_ALIVE_PREFIX = b"latch/alive/"
_BYE_PREFIX = b"latch/bye/"
_RESEND_PREFIX = b"latch/resend/"
_ROW_OVERHEAD = 160  # bytes of a latched row besides its two frame ids


class _Publisher:
    """The latched set of one static publisher."""

    __slots__ = ("key", "authority", "rows", "bytes", "version", "seen", "updated",
                 "expires", "asked")

    def __init__(self, key: str, authority: str, expires: bool):
        self.key = key
        self.authority = authority
        self.rows: dict[str, tuple[str, int, np.ndarray]] = {}
        self.bytes = 0
        self.version = None
        self.seen = time.monotonic()
        self.updated = 0
        self.expires = expires
        self.asked = 0.0


class Core:
    """Runs the bus in background threads of this process.

    ``address`` is ``tcp://HOST:PORT`` (default: ``$TF2PY_CORE``, else tcp://127.0.0.1:7400);
    the core binds PORT (publishers) and PORT + 1 (subscribers). With port 0 it picks a free
    pair and ``.address`` reports it. Give a routable HOST (or 0.0.0.0) to serve other hosts,
    with ``keys`` (a folder made by ``tf2py keygen``; default ``$TF2PY_KEYS``) so that only
    processes holding that site's keys can use it.
    """

    def __init__(self, address: str | None = None, keys=None):
        self._requested = core_address(address)
        host, port = split_tcp_address(self._requested)
        self._host = host
        self._closed = False
        self._lock = threading.Lock()
        self._close_lock = threading.Lock()
        self.dropped = DropCounter("tf2py core")
        self.static_messages = 0
        self.replays = 0
        self.forwarded_messages = 0
        self.forwarded_bytes = 0
        self.split_messages = 0
        self._publishers: dict[str, _Publisher] = {}
        self._asked_unknown: dict[str, float] = {}
        self._latched_bytes = 0
        self._sockets: list[zmq.Socket] = []
        self._keys = load_keys(keys)
        self._keys_held = 0
        self._forward_thread = None
        self._latch_thread = None
        self._bound_ports: list[int] = []
        try:
            self._start(host, port)
        except BaseException:
            self.close()
            raise

    # -- set-up -----------------------------------------------------------------------------

    def _socket(self, kind, **options) -> zmq.Socket:
        sock = make_socket(kind, linger_ms=0, **options)
        self._sockets.append(sock)
        return sock

    def _secure(self, sock) -> None:
        if self._keys is not None:
            self._keys.apply_server(sock, "tf2py core")
            self._keys_held += 1

    def _bind_pair(self, host: str, port: int):
        frontend = self._socket(zmq.XSUB, RCVHWM=INPUT_HWM, MAXMSGSIZE=wire.MAX_MESSAGE_BYTES)
        backend = self._socket(
            zmq.XPUB, SNDHWM=SUBSCRIBER_HWM, XPUB_VERBOSE=1, RCVHWM=INPUT_HWM,
            MAXMSGSIZE=1024, HEARTBEAT_IVL=HEARTBEAT_IVL_MS,
            HEARTBEAT_TIMEOUT=HEARTBEAT_TIMEOUT_MS, HEARTBEAT_TTL=HEARTBEAT_TIMEOUT_MS)
        self._secure(frontend)
        self._secure(backend)
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
        warn_if_exposed(host, self._keys, "tf2py core")
        frontend, backend, port = self._bind_pair(host, port)
        self._bound_ports = [port, port + 1]
        self.port = port
        self.address = f"tcp://{host}:{port}"
        self.subscribe_address = f"tcp://{host}:{port + 1}"

        # The core subscribes (on its XSUB) to what the static broadcasters send it; the
        # listeners' subscriptions (/tf) are forwarded by the forwarder.
        frontend.send(b"\x01" + _LATCH_PREFIX)

        # forwarder -> latch thread: latch messages and /tf_static subscriptions.
        to_latch_name = inproc_name("core-to-latch")
        to_latch = self._socket(zmq.PUSH, SNDHWM=INPUT_HWM)
        to_latch.bind(to_latch_name)
        latch_in = self._socket(zmq.PULL, RCVHWM=INPUT_HWM)
        latch_in.connect(to_latch_name)
        # latch thread -> forwarder: /tf_static messages to publish, resend requests.
        from_latch_name = inproc_name("core-from-latch")
        from_latch = self._socket(zmq.PULL, RCVHWM=INPUT_HWM)
        from_latch.bind(from_latch_name)
        latch_out = self._socket(zmq.PUSH, SNDHWM=INPUT_HWM)
        latch_out.connect(from_latch_name)
        # stop pipes
        stop_name = inproc_name("core-stop")
        stop_in = self._socket(zmq.PULL)
        stop_in.bind(stop_name)
        self._stop = self._socket(zmq.PUSH)
        self._stop.connect(stop_name)
        latch_stop_name = inproc_name("core-latch-stop")
        latch_stop_in = self._socket(zmq.PULL)
        latch_stop_in.bind(latch_stop_name)
        self._latch_stop = self._socket(zmq.PUSH)
        self._latch_stop.connect(latch_stop_name)

        self._forward_thread = threading.Thread(
            target=self._run_forwarder,
            args=(frontend, backend, to_latch, from_latch, stop_in),
            name=f"tf2py-core-forwarder:{port}",
            daemon=True,
        )
        self._latch_thread = threading.Thread(
            target=self._run_latch,
            args=(latch_in, latch_out, latch_stop_in),
            name=f"tf2py-core-latch:{port}",
            daemon=True,
        )
        self._forward_thread.start()
        self._latch_thread.start()

    # -- forwarder --------------------------------------------------------------------------

    def _run_forwarder(self, frontend, backend, to_latch, from_latch, stop) -> None:
        poller = zmq.Poller()
        for sock in (frontend, backend, from_latch, stop):
            poller.register(sock, zmq.POLLIN)
        # Bytes forwarded within HOLD_SECONDS, kept per whole second: [second, bytes] slots.
        slots: collections.deque = collections.deque()
        window_bytes = 0
        slot_second = -1
        slot_bytes = 0
        topic_tf = wire.TOPIC_TF
        topic_static = wire.TOPIC_TF_STATIC
        latch_prefix = _LATCH_PREFIX
        static_subscription = b"\x01" + wire.TOPIC_TF_STATIC
        hold = int(HOLD_SECONDS) + 1
        noblock = zmq.NOBLOCK
        sndmore = zmq.SNDMORE
        recv = frontend.recv
        send = backend.send
        monotonic = time.monotonic

        def advance(now) -> None:
            """Start the slot of second ``now``; forget slots older than the hold time."""
            nonlocal window_bytes, slot_second, slot_bytes
            second = int(now)
            if second == slot_second:
                return
            if slot_bytes:
                slots.append((slot_second, slot_bytes))
            slot_second, slot_bytes = second, 0
            while slots and slots[0][0] <= second - hold:
                window_bytes -= slots.popleft()[1]

        def publish(topic, body) -> None:
            """Forward a message too big for one piece, or from the latch thread."""
            nonlocal window_bytes, slot_bytes
            if len(body) > PIECE_BYTES:
                try:
                    pieces = wire.split_body(body, PIECE_BYTES)
                except wire.FrameIdTooLongError as exc:
                    self.dropped.drop(exc.cause, f"{topic.decode()}: {exc}", n=exc.dropped)
                    return
                except wire.WireError as exc:
                    self.dropped.drop(exc.cause, f"{topic.decode()}: {exc}")
                    return
                self.split_messages += 1
            else:
                pieces = (body,)
            for piece in pieces:
                size = len(piece) + len(topic)
                if window_bytes + size > TOTAL_BYTES:
                    self._over_budget(topic, size)
                    continue
                window_bytes += size
                slot_bytes += size
                send(topic, sndmore)
                send(piece, copy=len(piece) < 4096)
                self.forwarded_messages += 1
                self.forwarded_bytes += size

        try:
            while True:
                events = dict(poller.poll())
                if stop in events:
                    return
                advance(monotonic())
                if backend in events:
                    # Subscriptions of listeners: upstream to the publishers, and those that
                    # cover /tf_static to the latch thread (it replays the latched set).
                    for _ in range(10_000):
                        try:
                            message = backend.recv(noblock)
                        except zmq.Again:
                            break
                        if message[:1] not in (b"\x00", b"\x01"):
                            continue
                        frontend.send(message)
                        if message[:1] == b"\x01" and static_subscription.startswith(message):
                            self._to_latch(to_latch, [b"sub"])
                if from_latch in events:
                    for _ in range(1000):
                        try:
                            frames = from_latch.recv_multipart(noblock)
                        except zmq.Again:
                            break
                        if frames[0] == b"publish":
                            publish(topic_static, frames[1])
                        elif frames[0] == b"subscribe":
                            frontend.send(b"\x01" + frames[1])
                        elif frames[0] == b"unsubscribe":
                            frontend.send(b"\x00" + frames[1])
                if frontend in events:
                    forwarded = forwarded_bytes = 0
                    for _ in range(2000):
                        try:
                            head = recv(noblock, copy=False)
                        except zmq.Again:
                            break
                        if not head.more:
                            # /clock is one frame (topic and body, see wire.py), so that a
                            # follower can keep only the latest tick; it is tiny and passed on.
                            if (len(head) <= wire.CLOCK_FRAME_MAX
                                    and head.bytes.startswith(wire.TOPIC_CLOCK)):
                                send(head, 0, copy=False)
                                continue
                            self.dropped.drop("shape", "a bus message has 2 frames, got 1")
                            continue
                        body = recv(0, copy=False)  # multipart delivery is atomic: it is here
                        if body.more:
                            frames = 3
                            while recv(0, copy=False).more:
                                frames += 1
                            self.dropped.drop("shape", f"a bus message has 2 frames, got {frames}")
                            continue
                        topic = head.bytes
                        if topic == topic_tf:
                            size = len(body) + 3
                            if size > PIECE_BYTES:
                                publish(topic_tf, body.bytes)
                                continue
                            if window_bytes + size > TOTAL_BYTES:
                                self._over_budget(topic, size)
                                continue
                            window_bytes += size
                            slot_bytes += size
                            # the received frames themselves: no copy
                            send(head, sndmore, copy=False)
                            send(body, 0, copy=False)
                            forwarded += 1
                            forwarded_bytes += size
                        elif topic.startswith(latch_prefix):
                            self._to_latch(to_latch, [b"msg", topic, body.bytes])
                        elif topic == topic_static:
                            # Only the core publishes /tf_static: a publisher's own is not
                            # latched, so it is not passed on either.
                            self.dropped.drop(
                                "topic", "a publisher sent /tf_static directly; static "
                                "transforms go through a StaticTransformBroadcaster")
                        else:
                            self.dropped.drop("topic", f"unknown topic {topic[:64]!r}")
                    self.forwarded_messages += forwarded
                    self.forwarded_bytes += forwarded_bytes
        except zmq.ZMQError as exc:
            if exc.errno not in (zmq.ETERM, errno.ENOTSOCK):
                logger.error("tf2py core: forwarder stopped: %s", exc)

    def _over_budget(self, topic: bytes, size: int) -> None:
        self.dropped.drop(
            "total_bytes",
            f"over {TOTAL_BYTES // (1024 * 1024)} MiB forwarded within {HOLD_SECONDS:.0f} s "
            f"(the core's memory bound); a {topic.decode(errors='replace')} message of "
            f"{size} bytes dropped")

    def _to_latch(self, to_latch, frames) -> None:
        try:
            to_latch.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            # The latch thread is behind: a lost set is asked for again on the publisher's
            # next heartbeat (its version will not match), a lost subscription is covered by
            # the replay the queued ones trigger.
            self.dropped.drop("latch_queue", "the latch thread is behind; a latch message "
                              "was dropped (it is asked for again)")

    # -- latch thread -----------------------------------------------------------------------

    def _run_latch(self, latch_in, latch_out, stop) -> None:
        poller = zmq.Poller()
        poller.register(latch_in, zmq.POLLIN)
        poller.register(stop, zmq.POLLIN)
        replay_due = False
        next_replay = 0.0
        try:
            while True:
                timeout = 250
                if replay_due:
                    timeout = max(0, min(timeout, int((next_replay - time.monotonic()) * 1000)))
                events = dict(poller.poll(timeout))
                if stop in events:
                    return
                if latch_in in events:
                    for _ in range(10_000):
                        try:
                            frames = latch_in.recv_multipart(zmq.NOBLOCK)
                        except zmq.Again:
                            break
                        if frames[0] == b"sub":
                            replay_due = True
                            continue
                        try:
                            self._on_latch(frames[1], frames[2], latch_out)
                        except Exception as exc:  # never let bad input stop the core
                            self.dropped.drop("error", f"{type(exc).__name__}: {exc}")
                now = time.monotonic()
                self._expire(now)
                if replay_due and now >= next_replay:
                    replay_due = False
                    sent = self._replay(latch_out)
                    next_replay = time.monotonic() + max(REPLAY_MIN_INTERVAL, sent / REPLAY_RATE)
        except zmq.ZMQError as exc:
            if exc.errno not in (zmq.ETERM, errno.ENOTSOCK):
                logger.error("tf2py core: latch thread stopped: %s", exc)

    def _send(self, latch_out, frames) -> None:
        try:
            latch_out.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            self.dropped.drop("latch_queue", "the forwarder is behind; a /tf_static message "
                              "was dropped (the next replay carries it)")

    def _on_latch(self, topic: bytes, body: bytes, latch_out) -> None:
        if topic.startswith(_ALIVE_PREFIX):
            key, version = _publisher_id(topic[len(_ALIVE_PREFIX):])
            with self._lock:
                publisher = self._publishers.get(key)
                if publisher is not None:
                    publisher.seen = time.monotonic()
            if publisher is None or publisher.version != version:
                self._ask_resend(key, publisher, latch_out)
            return
        if topic.startswith(_BYE_PREFIX):
            key = topic[len(_BYE_PREFIX):].decode("ascii", "replace")
            with self._lock:
                self._forget(key)
            return
        if topic == wire.TOPIC_STATIC_LATCH:
            key, version, expires = None, None, False  # a writer without heartbeats
        elif topic.startswith(_SET_PREFIX):
            key, version = _publisher_id(topic[len(_SET_PREFIX):])
            expires = True
        else:
            self.dropped.drop("topic", f"unknown latch topic {topic[:64]!r}")
            return
        try:
            columns = wire.decode_columns(body)
        except wire.UnknownVersionError as exc:
            # Not latched (we cannot read it), but passed on: newer listeners may.
            self.dropped.drop("version", str(exc))
            self._send(latch_out, [b"publish", body])
            return
        except wire.FrameIdTooLongError as exc:
            self.dropped.drop(exc.cause, str(exc), n=exc.dropped)
            if exc.columns is None:
                return
            columns = exc.columns
            body = wire.encode_arrays(*_column_arrays(columns), columns[0])
        except wire.WireError as exc:
            self.dropped.drop(exc.cause, str(exc))
            return
        authority, parents, children, stamps_bin, values_bin = columns
        if key is None:
            key = "legacy:" + authority
        self.static_messages += 1
        valid = _valid_rows(columns)
        if len(valid) < len(parents):
            self.dropped.drop(
                "invalid", f"{len(parents) - len(valid)} invalid static transform(s) from "
                f"{authority}; the latched ones of those frames are kept",
                n=len(parents) - len(valid))
        stamps = np.frombuffer(stamps_bin, dtype="<i8")
        values = np.frombuffer(values_bin, dtype="<f8").reshape(-1, 7)
        with self._lock:
            publisher = self._publishers.get(key)
            if publisher is None:
                publisher = self._publishers[key] = _Publisher(key, authority, expires)
            publisher.authority = authority
            publisher.version = version
            publisher.seen = time.monotonic()
            publisher.updated = self.static_messages
            full = 0
            for i in valid:
                child = _strip(children[i])
                parent = _strip(parents[i])
                cost = len(child) + len(parent) + _ROW_OVERHEAD
                old = publisher.rows.get(child)
                if old is not None:
                    cost -= len(child) + len(old[0]) + _ROW_OVERHEAD
                if cost > 0 and self._latched_bytes + cost > LATCHED_BYTES:
                    full += 1
                    continue
                publisher.rows[child] = (parent, int(stamps[i]), values[i].copy())
                publisher.bytes += cost
                self._latched_bytes += cost
        if full:
            self.dropped.drop(
                "latched_bytes", f"the latched statics reached {LATCHED_BYTES // 2**20} MiB "
                f"(the core's bound); {full} new static transform(s) from {authority} were "
                "passed on but not latched", n=full)
        self._send(latch_out, [b"publish", body])

    def _ask_resend(self, key: str, publisher, latch_out) -> None:
        """Ask publisher ``key`` to send its whole set again: the core subscribes to
        ``latch/resend/<key>``, which the publisher's XPUB reports to it."""
        now = time.monotonic()
        if publisher is not None:
            if now - publisher.asked < RESEND_INTERVAL:
                return
            publisher.asked = now
        else:
            with self._lock:
                asked = self._asked_unknown.get(key, 0.0)
                if now - asked < RESEND_INTERVAL:
                    return
                if len(self._asked_unknown) > 10_000:
                    self._asked_unknown.clear()
                self._asked_unknown[key] = now
        topic = _RESEND_PREFIX + key.encode("ascii", "replace")
        self._send(latch_out, [b"subscribe", topic])
        self._send(latch_out, [b"unsubscribe", topic])

    def _forget(self, key: str) -> None:
        publisher = self._publishers.pop(key, None)
        if publisher is not None:
            self._latched_bytes -= publisher.bytes

    def _expire(self, now: float) -> None:
        with self._lock:
            gone = [key for key, p in self._publishers.items()
                    if p.expires and now - p.seen > EXPIRE_SECONDS]
            for key in gone:
                self._forget(key)

    def _replay(self, latch_out) -> int:
        """Re-publish every live publisher's latched set, one message per publisher, the
        most recently updated last (its rows win where two publishers latch one frame).
        Returns the bytes sent."""
        with self._lock:
            sets = [(p.updated, p.authority, list(p.rows.items()))
                    for p in self._publishers.values() if p.rows]
        sets.sort(key=lambda s: s[0])
        sent = 0
        for _, authority, rows in sets:
            body = wire.encode_arrays(
                [r[1][0] for r in rows],
                [r[0] for r in rows],
                [r[1][1] for r in rows],
                np.array([r[1][2] for r in rows], dtype=np.float64).reshape(-1, 7),
                authority,
            )
            sent += len(body)
            self._send(latch_out, [b"publish", body])
        if sets:
            self.replays += 1
        return sent

    # -- public -----------------------------------------------------------------------------

    def latched_frames(self) -> list[str]:
        """Child frames of which the core holds a latched static transform, sorted."""
        with self._lock:
            return sorted({c for p in self._publishers.values() for c in p.rows})

    def latched_bytes(self) -> int:
        """Bytes (estimated) of the latched statics held."""
        with self._lock:
            return self._latched_bytes

    def stats(self) -> dict:
        """Counters: forwarded messages and bytes, split messages, latched publishers and
        statics, replays, drops per cause."""
        with self._lock:
            publishers = len(self._publishers)
            latched = sum(len(p.rows) for p in self._publishers.values())
        return {
            "forwarded_messages": self.forwarded_messages,
            "forwarded_bytes": self.forwarded_bytes,
            "split_messages": self.split_messages,
            "static_messages": self.static_messages,
            "static_publishers": publishers,
            "latched_transforms": latched,
            "latched_bytes": self.latched_bytes(),
            "replays": self.replays,
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
        for thread, pipe in ((self._forward_thread, getattr(self, "_stop", None)),
                             (self._latch_thread, getattr(self, "_latch_stop", None))):
            if thread is not None and thread.is_alive():
                try:
                    pipe.send(b"stop")
                except zmq.ZMQError:
                    pass
                thread.join(5)
        for sock in self._sockets:
            sock.close(0)
        self._sockets.clear()
        for _ in range(self._keys_held):
            self._keys.release_server()
        self._keys_held = 0
        # The shared context closes listening sockets in its I/O thread: wait until the
        # ports can be bound again, so a core restarted at once finds them free.
        _wait_ports_free(self._host, self._bound_ports, 5.0)

    def __enter__(self) -> "Core":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "serving"
        return f"Core({getattr(self, 'address', self._requested)!r}, {state})"


def _publisher_id(tail: bytes) -> tuple[str, int | None]:
    key, _, version = tail.partition(b"/")
    try:
        number = int(version) if version else None
    except ValueError:
        number = None
    return key.decode("ascii", "replace"), number


def _strip(frame_id: str) -> str:
    return frame_id[1:] if frame_id.startswith("/") else frame_id


def _column_arrays(columns):
    authority, parents, children, stamps_bin, values_bin = columns
    return (parents, children, np.frombuffer(stamps_bin, dtype="<i8"),
            np.frombuffer(values_bin, dtype="<f8").reshape(-1, 7))


def _valid_rows(columns) -> list[int]:
    """Indices of the rows the buffer itself accepts (its own validation: a scratch
    BufferCore), so the core latches exactly what listeners would store."""
    from ..buffer.core import BufferCore

    authority, parents, children, stamps_bin, values_bin = columns
    n = len(parents)
    if n == 0:
        return []
    scratch = BufferCore()
    result = scratch.set_transforms(*_column_arrays(columns), authority, True)
    bad = {index for index, _ in result.invalid}
    return [i for i in range(n) if i not in bad]


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
