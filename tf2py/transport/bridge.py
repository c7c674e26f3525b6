"""Relaying /tf and /tf_static from one bus to another (``tf2py bridge``): a tf2py core and a
ROS 2 graph, two cores, or two ROS 2 domains.

Statics stay latched on the far side (a static broadcaster there holds the latest transform
per child frame). Nothing is ever sent back to the bus it came from: on a ROS 2 side the
bridge's own DDS participant ignores its own writers; on a tf2py side the bridge's messages
carry its own authority, and its subscriber drops messages with that authority.
"""

from __future__ import annotations

import os
import socket
import threading

from .interface import is_ros2

__all__ = ["Bridge"]


class _Side:
    """One bus as the bridge uses it: a subscriber, a broadcaster and a static broadcaster."""

    def __init__(self, address: str, authority: str, keys=None):
        self.address = address
        self.authority = authority
        self.keys = None if is_ros2(address) else keys  # CURVE keys are for tf2py buses
        self.participant = None
        self.subscriber = None
        self._broadcaster = None
        self._static = None
        if is_ros2(address):
            from .ros2.participant import Participant

            self.participant = Participant(address, ignore_local=True)

    def subscribe(self, on_batch) -> None:
        if self.participant is not None:
            from .ros2.tf import Ros2TransformSubscriber

            self.subscriber = Ros2TransformSubscriber(self.address, on_batch,
                                                      participant=self.participant)
        else:
            from .listener import TransformSubscriber

            self.subscriber = TransformSubscriber(core=self.address, on_batch=on_batch,
                                                  keys=self.keys)

    def broadcaster(self):
        if self._broadcaster is None:
            if self.participant is not None:
                from .ros2.tf import Ros2TransformBroadcaster

                self._broadcaster = Ros2TransformBroadcaster(
                    self.address, self.authority, participant=self.participant)
            else:
                from .broadcaster import TransformBroadcaster

                self._broadcaster = TransformBroadcaster(self.address, self.authority,
                                                         keys=self.keys)
        return self._broadcaster

    def static_broadcaster(self):
        if self._static is None:
            if self.participant is not None:
                from .ros2.tf import Ros2StaticTransformBroadcaster

                self._static = Ros2StaticTransformBroadcaster(
                    self.address, self.authority, participant=self.participant)
            else:
                from .broadcaster import StaticTransformBroadcaster

                self._static = StaticTransformBroadcaster(self.address, self.authority,
                                                          keys=self.keys)
        return self._static

    def send(self, batch) -> None:
        arrays = batch.arrays
        target = self.static_broadcaster() if batch.is_static else self.broadcaster()
        if hasattr(target, "send_columns"):
            target.send_columns(arrays.parents, arrays.children, arrays.stamps_ns,
                                arrays.values)
        else:
            target.send_transform(batch.transforms)

    def close(self) -> None:
        for thing in (self.subscriber, self._broadcaster, self._static, self.participant):
            if thing is not None:
                try:
                    thing.close()
                except Exception:
                    pass


class Bridge:
    """Relays ``source`` -> ``target`` (and back with ``both=True``). ``stats()`` counts
    messages and transforms relayed per direction, and what was dropped (echoes of our own
    relays, undecodable input, failed sends). ``source_keys`` / ``target_keys``: the keys
    folder of each tf2py bus (default ``$TF2PY_KEYS``; ignored for ``ros2://``), so a keyed
    site can be bridged to a plain bus or to another site."""

    def __init__(self, source: str, target: str, both: bool = False, *, source_keys=None,
                 target_keys=None):
        self.authority = f"tf2py-bridge@{socket.gethostname()}:{os.getpid()}"
        self._lock = threading.Lock()
        self.relayed = {}
        self.dropped = {}
        self._sides = []
        try:
            a = _Side(source, self.authority, source_keys)
            self._sides.append(a)
            b = _Side(target, self.authority, target_keys)
            self._sides.append(b)
            self._directions = [(a, b)] + ([(b, a)] if both else [])
            for origin, destination in self._directions:
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

    def _relay_to(self, destination: _Side, name: str):
        def on_batch(batch):
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

    def stats(self) -> dict:
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
