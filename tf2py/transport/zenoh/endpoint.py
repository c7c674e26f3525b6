"""rmw_zenoh's publishers and subscriptions, one topic each, on a shared session: what the
broadcasters, listeners and clocks of this package are made of.

A ``Publisher`` is rmw_zenoh's ``PublisherData``: an advanced publisher on the topic's key
expression (with a cache of ``depth`` samples, publisher detection and sporadic heartbeats
when transient-local), its ``MP`` liveliness token, its GID and sequence numbers. A
``Subscription`` is ``SubscriptionData``: an advanced subscriber (querying the caches of
live and late-joining publishers when transient-local) and its ``MS`` token. Both belong to
this process's node in the address's namespace (``SharedSession.node``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any

from . import wire
from .address import ZenohAddress
from .session import SharedSession, import_zenoh

__all__ = ["Topic", "Publisher", "Subscription", "HEARTBEAT_PERIOD"]

#: rmw_zenoh's SAMPLE_MISS_DETECTION_HEARTBEAT_PERIOD for reliable transient-local
#: publishers (500 ms, sporadic: only when something new was published).
HEARTBEAT_PERIOD = 0.5


@dataclass(frozen=True)
class Topic:
    """One ROS 2 topic as rmw_zenoh maps it: its fully qualified name, data key expression,
    DDS type name and hash, and the QoS of each side (rmw's enumeration values)."""

    name: str
    keyexpr: str
    type_name: str
    type_hash: str
    _: KW_ONLY
    reliable: bool
    transient_local: bool
    publisher_depth: int
    subscription_depth: int

    def qos(self, depth: int) -> str:
        return wire.qos_keyexpr(
            reliability=wire.RELIABLE if self.reliable else wire.BEST_EFFORT,
            durability=wire.TRANSIENT_LOCAL if self.transient_local else wire.VOLATILE,
            depth=depth)


def _undeclare(declared: Any) -> None:
    """Undeclare a Zenoh token, publisher or subscriber (None: nothing to do)."""
    if declared is not None:
        try:
            declared.undeclare()
        except Exception:  # the session is already closing
            pass


class _Entity:
    """A node's endpoint: the shared session, the node, an entity id and a liveliness
    token. ``close()`` undeclares in the reverse order and releases the session."""

    def __init__(self, address: ZenohAddress, keys: Any):
        self.address = address
        self.shared: SharedSession | None = None
        self._node = False
        self._token: Any = None
        self.shared = SharedSession.acquire(address, keys)
        self.session = self.shared.session

    def _declare_token(self, kind: str, topic: Topic, depth: int) -> str:
        assert self.shared is not None
        node_id = self.shared.node(self.address.domain, self.address.namespace)
        self._node = True
        entity_id = self.shared.next_entity_id()
        keyexpr = wire.liveliness_keyexpr(
            self.address.domain, self.shared.zid, node_id, entity_id, kind,
            self.address.namespace, wire.node_name(), topic.name, topic.qos(depth),
            type_name=topic.type_name, type_hash=topic.type_hash)
        self._token = self.session.liveliness().declare_token(keyexpr)
        return keyexpr

    def _release(self) -> None:
        shared, self.shared = self.shared, None
        if shared is None:
            return
        token, self._token = self._token, None
        _undeclare(token)
        if self._node:
            shared.release_node(self.address.domain, self.address.namespace)
        shared.release()


class Publisher(_Entity):
    """An rmw_zenoh publisher of ``topic``: ``put(payload)`` sends one sample with its
    attachment (sequence number from 1, source timestamp, GID). Never blocks (congestion
    drops, as rmw_zenoh's keep-last publishers do)."""

    def __init__(self, address: ZenohAddress, topic: Topic, keys: Any = None):
        super().__init__(address, keys)
        self._lock = threading.Lock()
        self._sequence = 0
        try:
            zenoh = import_zenoh()
            import zenoh.ext as zext

            options: dict[str, Any] = {}
            if topic.transient_local:
                options["cache"] = zext.CacheConfig(max_samples=topic.publisher_depth)
                options["publisher_detection"] = True
                if topic.reliable:
                    options["sample_miss_detection"] = zext.MissDetectionConfig(
                        heartbeat=None, sporadic_heartbeat=HEARTBEAT_PERIOD)
            self._publisher = zext.declare_advanced_publisher(
                self.session, topic.keyexpr,
                congestion_control=zenoh.CongestionControl.DROP,
                reliability=(zenoh.Reliability.RELIABLE if topic.reliable
                             else zenoh.Reliability.BEST_EFFORT),
                **options)
            token = self._declare_token(wire.ENTITY_PUBLISHER, topic, topic.publisher_depth)
            self.gid = wire.gid_of(token)
        except BaseException:
            self.close()
            raise

    def put(self, payload: bytes) -> None:
        """Send ``payload`` (a CDR sample) with rmw_zenoh's attachment."""
        with self._lock:
            if self.shared is None:
                raise RuntimeError("put on a closed publisher")
            self._sequence += 1
            attachment = wire.encode_attachment(self._sequence, time.time_ns(), self.gid)
            self._publisher.put(payload, attachment=attachment)

    def close(self) -> None:
        with self._lock:
            if self.shared is None:
                return
            _undeclare(getattr(self, "_publisher", None))
            self._release()


class Subscription(_Entity):
    """An rmw_zenoh subscription of ``topic`` (or of ``keyexpr``, e.g. every namespace's):
    ``on_sample(sample)`` for every sample, on Zenoh's callback thread of this
    subscription. Transient-local: the caches of live publishers are queried at once, and
    those of publishers that appear later when they appear."""

    def __init__(self, address: ZenohAddress, topic: Topic,
                 on_sample: Callable[[Any], None], keys: Any = None, *,
                 keyexpr: str | None = None):
        super().__init__(address, keys)
        self._closed = False
        try:
            import_zenoh()
            import zenoh.ext as zext

            options: dict[str, Any] = {}
            if topic.transient_local:
                options["subscriber_detection"] = True
                options["history"] = zext.HistoryConfig(
                    detect_late_publishers=True, max_samples=topic.subscription_depth)
                if topic.reliable:
                    options["recovery"] = zext.RecoveryConfig(periodic_queries=None,
                                                              heartbeat=True)
            self._subscriber = zext.declare_advanced_subscriber(
                self.session, keyexpr or topic.keyexpr, on_sample, **options)
            self._declare_token(wire.ENTITY_SUBSCRIPTION, topic, topic.subscription_depth)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        _undeclare(getattr(self, "_subscriber", None))
        self._release()
