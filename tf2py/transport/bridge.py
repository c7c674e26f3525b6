"""Relaying /tf and /tf_static from one bus to another (``tf2py bridge``): any two addresses,
whatever their schemes (a tf2py core and a ROS 2 graph, ROS 2 and Zenoh, two cores, two
domains).

Statics stay latched on the far side (a static broadcaster there holds the latest transform
per child frame). Nothing is ever sent back to the bus it came from: on a ROS 2 side the
bridge's own DDS participant ignores its own writers; on a tf2py side the bridge's messages
carry its own authority, and its subscriber drops messages with that authority.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from .interface import Transport, transport_for
from .lifetime import ClosingContext
from .listener import TransformBatch

__all__ = ["Bridge", "BusSide"]


class BusSide:
    """One bus as the bridge uses it: a subscriber, and a broadcaster and a static broadcaster
    made on first use, all of ``transport``. What a bus's ``Transport.bridge_side`` returns
    unless it has its own (ROS 2 shares one participant that ignores its own writers)."""

    def __init__(self, transport: Transport, address: str, authority: str, keys: Any = None):
        self.transport = transport
        self.address = address
        self.authority = authority
        self.keys = keys
        self.subscriber: Any = None
        self._broadcaster: Any = None
        self._static: Any = None

    def subscribe(self, on_batch: Callable[[TransformBatch], None]) -> None:
        self.subscriber = self.transport.transform_subscriber(self.address, on_batch,
                                                              self.keys)

    def broadcaster(self) -> Any:
        if self._broadcaster is None:
            self._broadcaster = self.transport.transform_broadcaster(
                self.address, self.authority, self.keys)
        return self._broadcaster

    def static_broadcaster(self) -> Any:
        if self._static is None:
            self._static = self.transport.static_transform_broadcaster(
                self.address, self.authority, self.keys)
        return self._static

    def send(self, batch: TransformBatch) -> None:
        rows = batch.transforms
        target = self.static_broadcaster() if batch.is_static else self.broadcaster()
        if hasattr(target, "send_columns"):
            target.send_columns(rows.parents, rows.children, rows.stamps_ns, rows.values)
        else:
            target.send_transform(rows.to_messages())

    def _parts(self) -> list[Any]:
        return [self.subscriber, self._broadcaster, self._static]

    def close(self) -> None:
        for thing in self._parts():
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # closing the others matters more
                    pass


def _side(address: str, authority: str, keys: Any) -> BusSide:
    transport, address = transport_for(address)
    side: BusSide = transport.bridge_side(address, authority, keys)
    return side


class Bridge(ClosingContext):
    """Relays ``source`` -> ``target`` (and back with ``both=True``), any two buses (their
    addresses' schemes pick them). ``stats()`` counts messages and transforms relayed per
    direction, and what was dropped (echoes of our own relays, undecodable input, failed
    sends). ``source_keys`` / ``target_keys``: the keys folder of each side (default
    ``$TF2PY_KEYS`` where the bus uses keys; ignored for ``ros2://``), so a keyed site can be
    bridged to a plain bus or to another site."""

    def __init__(self, source: str, target: str, both: bool = False, *,
                 source_keys: Any = None, target_keys: Any = None):
        self.authority = f"tf2py-bridge@{socket.gethostname()}:{os.getpid()}"
        self._lock = threading.Lock()
        self.relayed: dict[str, list[int]] = {}
        self.dropped: dict[str, int] = {}
        self._sides: list[BusSide] = []
        try:
            a = _side(source, self.authority, source_keys)
            self._sides.append(a)
            b = _side(target, self.authority, target_keys)
            self._sides.append(b)
            self._directions = [(a, b)] + ([(b, a)] if both else [])
            for _origin, destination in self._directions:
                # The far side's broadcasters first, so they are connected (a ZeroMQ
                # publisher drops what it sends before) when the first message comes.
                destination.broadcaster()
                destination.static_broadcaster()
            for origin, destination in self._directions:
                name = f"{origin.address} -> {destination.address}"
                self.relayed[name] = [0, 0]
                origin.subscribe(self._relay_to(destination, name))
        except BaseException:
            self.close()
            raise

    def _relay_to(self, destination: BusSide,
                  name: str) -> Callable[[TransformBatch], None]:
        def on_batch(batch: TransformBatch) -> None:
            if batch.authority == self.authority:
                self._drop("echo")  # our own relay, heard back on a tf2py bus
                return
            try:
                destination.send(batch)
            except Exception as exc:
                self._drop(f"send failed: {type(exc).__name__}")
                return
            with self._lock:
                counts = self.relayed[name]
                counts[0] += 1
                counts[1] += len(batch)
        return on_batch

    def _drop(self, cause: str) -> None:
        with self._lock:
            self.dropped[cause] = self.dropped.get(cause, 0) + 1

    def stats(self) -> dict[str, Any]:
        """``{"relayed": {direction: (messages, transforms)}, "dropped": {cause: n}}``; the
        subscribers' own drops (undecodable input) are included per cause."""
        with self._lock:
            dropped = dict(self.dropped)
            relayed = {k: tuple(v) for k, v in self.relayed.items()}
        for side in self._sides:
            if side.subscriber is not None:
                for cause, n in side.subscriber.stats()["dropped"].items():
                    dropped[cause] = dropped.get(cause, 0) + n
        return {"relayed": relayed, "dropped": dropped}

    def close(self) -> None:
        for side in self._sides:
            side.close()
        self._sides = []
