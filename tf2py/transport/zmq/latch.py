"""The core's latch: per static publisher, the latest valid /tf_static transform per child
frame, kept while the publisher's heartbeat comes, given to every subscriber that joins
(see docs/protocol.md, "Latching"). Driven by the core's latch thread only."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
import zmq

from ...buffer.transforms import Transforms
from .. import wire
from ..counters import DropCounter
from ..frame_ids import strip_leading_slash
from ..static_set import invalid_rows

__all__ = ["LatchStore", "LATCHED_BYTES", "EXPIRE_SECONDS", "REPLAY_MIN_INTERVAL",
           "REPLAY_RATE", "RESEND_INTERVAL"]

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

_SET_PREFIX = b"latch/tf_static/"
_ALIVE_PREFIX = b"latch/alive/"
_BYE_PREFIX = b"latch/bye/"
_RESEND_PREFIX = b"latch/resend/"
_ROW_OVERHEAD = 160  # bytes of a latched row besides its two frame ids


class _Publisher:
    """The latched set of one static publisher."""

    __slots__ = ("key", "authority", "rows", "bytes", "version", "pieces", "expected",
                 "seen", "updated", "asked")

    def __init__(self, key: str, authority: str):
        self.key = key
        self.authority = authority
        # stripped child id -> (parent, stamp, values, child as sent): ids are given on as
        # their publisher wrote them (doctor names who sends a leading '/').
        self.rows: dict[str, tuple[str, int, np.ndarray, str]] = {}
        self.bytes = 0
        self.version: int | None = None
        self.pieces: set[int] = set()
        self.expected = 1
        self.seen = time.monotonic()
        self.updated = 0
        self.asked = 0.0


class LatchStore:
    """The latched sets of all static publishers, bounded to ``LATCHED_BYTES`` in all.
    ``ask_resend(topic)`` subscribes and unsubscribes ``topic`` upstream (the core's own
    subscriber on its XPUB), which makes the publisher it names re-send its set."""

    def __init__(self, dropped: DropCounter, ask_resend: Callable[[bytes], None]):
        self.dropped = dropped
        self._ask = ask_resend
        self._lock = threading.Lock()
        self._publishers: dict[str, _Publisher] = {}
        self._asked_unknown: dict[str, float] = {}
        self._latched_bytes = 0
        self.static_messages = 0
        self.replays = 0

    def publish(self, injector: zmq.Socket[bytes], body: bytes) -> int:
        """Publish ``body`` on /tf_static in pieces of at most 16 KiB; the bytes sent."""
        sent = 0
        for piece in wire.split_body(body, wire.MAX_PIECE_BYTES):
            try:
                injector.send_multipart([wire.TOPIC_TF_STATIC, piece], zmq.NOBLOCK)
                sent += len(piece)
            except zmq.Again:
                self.dropped.drop("latch_queue", "the forwarder is behind; a /tf_static "
                                  "message was dropped (the next replay carries it)")
        return sent

    def on_latch(self, topic: bytes, body: bytes, injector: zmq.Socket[bytes]) -> None:
        if topic.startswith(_ALIVE_PREFIX):
            key, version, _, _ = _publisher_id(topic[len(_ALIVE_PREFIX):])
            with self._lock:
                publisher = self._publishers.get(key)
                if publisher is not None:
                    publisher.seen = time.monotonic()
            if (publisher is None or publisher.version != version
                    or len(publisher.pieces) != publisher.expected):
                self._ask_resend(key, publisher)
            return
        if topic.startswith(_BYE_PREFIX):
            key = topic[len(_BYE_PREFIX):].decode("ascii", "replace")
            with self._lock:
                self.forget(key)
            return
        if topic == wire.TOPIC_STATIC_LATCH:
            # Version 1 (a writer without heartbeats or goodbye): the core could never tell
            # when it is gone, so its set would be served for ever (or, expired by silence,
            # dropped while it lives). Refused, counted and logged (docs/protocol.md).
            self.dropped.drop(
                "legacy_latch", "a set on the version-1 latch topic 'latch/tf_static' was "
                "refused: its writer sends no heartbeat, so its statics could never expire; "
                "upgrade that static broadcaster (tf2py >= 0.1 latches per publisher)")
            return
        if topic.startswith(_SET_PREFIX):
            key, version, piece, pieces = _publisher_id(topic[len(_SET_PREFIX):])
        else:
            self.dropped.drop("topic", f"unknown latch topic {topic[:64]!r}")
            return
        try:
            columns = wire.decode_columns(body)
        except wire.UnknownVersionError as exc:
            # Not latched (we cannot read it), but passed on: newer listeners may.
            self.dropped.drop("version", str(exc))
            self.publish(injector, body)
            return
        except wire.FrameIdTooLongError as exc:
            self.dropped.drop(exc.cause, str(exc), n=exc.dropped)
            if exc.columns is None:
                return
            columns = exc.columns
            authority, rows = wire.rows_of(columns)
            body = wire.encode_arrays(rows.parents, rows.children, rows.stamps_ns, rows.values,
                                      authority)
        except wire.WireError as exc:
            self.dropped.drop(exc.cause, str(exc))
            return
        authority, rows = wire.rows_of(columns)
        parents, children = rows.parents, rows.children
        stamps, values = rows.stamps_ns, rows.values
        self.static_messages += 1
        valid = _valid_rows(rows)
        if len(valid) < len(parents):
            self.dropped.drop(
                "invalid", f"{len(parents) - len(valid)} invalid static transform(s) from "
                f"{authority}; the latched ones of those frames are kept",
                n=len(parents) - len(valid))
        with self._lock:
            publisher = self._publishers.get(key)
            if publisher is None:
                publisher = self._publishers[key] = _Publisher(key, authority)
            publisher.authority = authority
            if publisher.version != version:
                publisher.version = version
                publisher.pieces = set()
            publisher.pieces.add(piece)
            publisher.expected = pieces
            publisher.seen = time.monotonic()
            publisher.updated = self.static_messages
            full = 0
            for i in valid:
                child = strip_leading_slash(children[i])
                parent = parents[i]
                cost = len(child) + len(parent) + _ROW_OVERHEAD
                old = publisher.rows.get(child)
                if old is not None:
                    cost -= len(child) + len(old[0]) + _ROW_OVERHEAD
                if cost > 0 and self._latched_bytes + cost > LATCHED_BYTES:
                    full += 1
                    continue
                publisher.rows[child] = (parent, int(stamps[i]), values[i].copy(), children[i])
                publisher.bytes += cost
                self._latched_bytes += cost
        if full:
            self.dropped.drop(
                "latched_bytes", f"the latched statics reached {LATCHED_BYTES // 2**20} MiB "
                f"(the core's bound); {full} new static transform(s) from {authority} were "
                "passed on but not latched", n=full)
        self.publish(injector, body)

    def _ask_resend(self, key: str, publisher: _Publisher | None) -> None:
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
        # Through the core's own subscriber on the XPUB: the proxy passes the subscription up
        # to every publisher, and the one it names re-sends its set.
        topic = _RESEND_PREFIX + key.encode("ascii", "replace")
        self._ask(topic)

    def forget_publisher(self, key: str) -> None:
        """Drop publisher ``key``'s set (as if it had said goodbye)."""
        with self._lock:
            self.forget(key)

    def forget(self, key: str) -> None:
        """Drop publisher ``key``'s set; the caller holds the lock."""
        publisher = self._publishers.pop(key, None)
        if publisher is not None:
            self._latched_bytes -= publisher.bytes

    def expire(self, now: float) -> None:
        with self._lock:
            gone = [key for key, p in self._publishers.items()
                    if now - p.seen > EXPIRE_SECONDS]
            for key in gone:
                self.forget(key)

    def replay(self, injector: zmq.Socket[bytes]) -> int:
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
                [r[1][3] for r in rows],
                [r[1][1] for r in rows],
                np.array([r[1][2] for r in rows], dtype=np.float64).reshape(-1, 7),
                authority,
            )
            sent += self.publish(injector, body)
        if sets:
            self.replays += 1
        return sent

    def latched_frames(self) -> list[str]:
        """Child frames of which a static transform is latched, sorted."""
        with self._lock:
            return sorted({c for p in self._publishers.values() for c in p.rows})

    def latched_bytes(self) -> int:
        """Bytes (estimated) of the latched statics held."""
        with self._lock:
            return self._latched_bytes

    def counts(self) -> tuple[int, int]:
        """``(static publishers, latched transforms)``."""
        with self._lock:
            return (len(self._publishers),
                    sum(len(p.rows) for p in self._publishers.values()))


def _publisher_id(tail: bytes) -> tuple[str, int | None, int, int]:
    """``(id, version, piece, pieces)`` of ``<id>/<version>[/<piece>/<pieces>]``."""
    parts = tail.split(b"/")
    numbers: list[int | None] = []
    for part in parts[1:4]:
        try:
            numbers.append(int(part))
        except ValueError:
            numbers.append(None)
    version = numbers[0] if numbers else None
    piece, pieces = (numbers[1], numbers[2]) if len(numbers) == 3 else (0, 1)
    if piece is None or pieces is None or not 0 <= piece < pieces <= 100_000:
        return parts[0].decode("ascii", "replace"), version, 0, 1
    return parts[0].decode("ascii", "replace"), version, piece, pieces


def _valid_rows(rows: Transforms) -> list[int]:
    """Indices of the rows the buffer itself accepts (its own validation), so the core
    latches exactly what listeners would store."""
    bad = {index for index, _ in invalid_rows(rows.parents, rows.children, rows.stamps_ns,
                                              rows.values)}
    return [i for i in range(len(rows)) if i not in bad]

