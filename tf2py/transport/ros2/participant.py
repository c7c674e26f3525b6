"""A ROS 2 node over Cyclone DDS: one DDS participant, raw (CDR bytes) writers and readers on
ROS 2 topics, one receive thread, and the ``ros_discovery_info`` that names the node in the
ROS 2 graph (what ``ros2 node list`` and rclpy's ``get_node_names()`` read).

Samples are written and taken as their serialized bytes (cyclonedds-python's C layer keeps
them so; its ``IdlStruct`` types here only name the DDS types and their shape for matching), so
tf2py decodes them itself, straight into arrays.

Adding a topic is one call: ``participant.subscribe(name, TYPE, qos, callback)`` with a type
from ``types`` (``subscribe_clock`` is such a call), ``participant.writer(name, TYPE, qos)``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..counters import DropCounter
from ..lifetime import CloseOnce, ClosingContext, join_thread
from . import cdr, discovery, types
from ._dds import dds, ddspy_take, ddspy_write
from .discovery import node_name

if TYPE_CHECKING:
    from cyclonedds.idl import IdlStruct
    from cyclonedds.internal import SampleInfo
    from cyclonedds.pub import DataWriter
    from cyclonedds.qos import Qos
    from cyclonedds.sub import DataReader
    from cyclonedds.topic import Topic

    #: ``callback(data, info)``: one raw sample (CDR bytes, header included) and its info.
    SampleCallback = Callable[[bytes, SampleInfo], None]

__all__ = ["Participant", "Subscription", "RawWriter", "TF_QOS", "STATIC_WRITER_QOS",
           "STATIC_READER_QOS", "CLOCK_QOS", "node_name"]

logger = logging.getLogger("tf2py.ros2")

_MS = 1_000_000


def _qos(*policies: Any) -> Qos:
    qos: Qos = dds.qos.Qos(*policies, dds.qos.Policy.DataRepresentation(use_cdrv0_representation=True))
    return qos


_P = dds.qos.Policy
#: tf2_ros's QoS: /tf reliable volatile keep-last 100; /tf_static transient-local, keep-last 1
#: for a broadcaster, 100 for a listener. /clock as rclcpp's ClockQoS (best effort; a
#: listener's depth a little deeper, so a burst is not cut to its last tick).
TF_QOS = _qos(_P.Reliability.Reliable(100 * _MS), _P.Durability.Volatile, _P.History.KeepLast(100))
STATIC_WRITER_QOS = _qos(_P.Reliability.Reliable(100 * _MS), _P.Durability.TransientLocal,
                         _P.History.KeepLast(1))
STATIC_READER_QOS = _qos(_P.Reliability.Reliable(100 * _MS), _P.Durability.TransientLocal,
                         _P.History.KeepLast(100))
CLOCK_QOS = _qos(_P.Reliability.BestEffort, _P.Durability.Volatile, _P.History.KeepLast(10))
CLOCK_WRITER_QOS = _qos(_P.Reliability.BestEffort, _P.Durability.Volatile, _P.History.KeepLast(1))
_DISCOVERY_QOS = _qos(_P.Reliability.Reliable(100 * _MS), _P.Durability.TransientLocal,
                      _P.History.KeepLast(1))

_UNSET = object()
_ANY = dds.core.SampleState.Any | dds.core.ViewState.Any | dds.core.InstanceState.Any
_TAKE = 256  # samples taken per call


def _destroy(entity: Any) -> None:  # any cyclonedds entity
    """Delete a DDS entity now (cyclonedds-python otherwise waits for the garbage collector)."""
    try:
        entity.__del__()
    except Exception:  # already gone with its parent
        pass


class _Endpoint:
    """What a participant's raw writers and readers share: the topic, the entity's C
    reference (for the raw calls) and its GUID (announced on ros_discovery_info)."""

    def __init__(self, participant: Participant, topic: Topic[Any],
                 entity: DataWriter[Any] | DataReader[Any]) -> None:
        self._participant = participant
        self.topic = topic
        self._ref = entity._ref
        self.gid = entity.guid.bytes
        self._closed = False


class RawWriter(_Endpoint):
    """Writes CDR samples (header included) on one topic."""

    def __init__(
        self, participant: Participant, topic: Topic[Any], writer: DataWriter[Any]
    ) -> None:
        super().__init__(participant, topic, writer)
        self._writer = writer

    def write(self, sample: bytes) -> None:
        if len(sample) & 3:
            sample = sample + bytes(4 - (len(sample) & 3))
        ret = ddspy_write(self._ref, sample)
        if ret < 0:
            raise dds.core.DDSException(ret, f"writing on {self.topic.name}")

    def matched_subscriptions(self) -> int:
        return len(self._writer.get_matched_subscriptions())

    def wait_for_acks(self, timeout_s: float) -> bool:
        return bool(self._writer.wait_for_acks(int(timeout_s * 1e9)))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._participant._forget(self, writer=True)
            _destroy(self._writer)


class Subscription(_Endpoint):
    """A reader whose samples (CDR bytes, header included) go to ``callback(data, info)`` on
    the participant's receive thread; ``close()`` stops it."""

    def __init__(
        self, participant: Participant, topic: Topic[Any], reader: DataReader[Any],
        callback: SampleCallback,
    ) -> None:
        super().__init__(participant, topic, reader)
        self._reader = reader
        self.callback = callback
        self.condition = dds.core.ReadCondition(reader, _ANY)

    def matched_publications(self) -> int:
        return len(self._reader.get_matched_publications())

    def _drain(self) -> None:
        while True:
            samples = ddspy_take(self._ref, _ANY, _TAKE)
            if isinstance(samples, int):
                if samples < 0:
                    raise dds.core.DDSException(samples, f"taking from {self.topic.name}")
                return
            for data, info in samples:
                if info.valid_data and not self._closed:
                    self.callback(data, info)
            if len(samples) < _TAKE or self._closed:
                return

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._participant._forget(self, writer=False)


class Participant(ClosingContext):
    """One DDS participant for a ROS 2 address, shared by everything in this process that uses
    the same domain (``acquire``/``release``), or private (``Participant(address)``: the bridge
    uses one that never hears its own writers)."""

    _shared: dict[tuple[int, str | None], Participant] = {}
    _shared_lock = threading.Lock()

    @classmethod
    def acquire(cls, address: str) -> Participant:
        domain_id = discovery.parse_ros2_address(address)
        config = _domain_config()
        key = (domain_id, config)
        with cls._shared_lock:
            participant = cls._shared.get(key)
            if participant is None or participant._closing.closed:
                participant = cls(address, _domain_id=domain_id, _config=config)
                cls._shared[key] = participant
            participant._users += 1
            return participant

    def release(self) -> None:
        with Participant._shared_lock:
            self._users -= 1
            if self._users > 0:
                return
            for key, value in list(Participant._shared.items()):
                if value is self:
                    del Participant._shared[key]
        self.close()

    def __init__(self, address: str, ignore_local: bool = False, _domain_id: int | None = None,
                 _config: str | None | object = _UNSET) -> None:
        self.address = address
        self.domain_id = discovery.parse_ros2_address(address) if _domain_id is None else _domain_id
        config = _domain_config() if _config is _UNSET else cast("str | None", _config)
        self.node_name = node_name()
        self._ignore_local = ignore_local
        self._users = 0
        self._lock = threading.RLock()
        self._closing = CloseOnce(self._lock)
        self._topics: dict[tuple[str, type[IdlStruct]], Topic[Any]] = {}
        self._writers: list[RawWriter] = []
        self._subscriptions: list[Subscription] = []
        self.dropped = DropCounter(f"tf2py ros2 node {self.node_name}")
        self._thread: threading.Thread | None = None
        self._domain: list[Any] | None = None
        try:
            self._domain = _acquire_domain(self.domain_id, config)
            self._dp = dds.domain.DomainParticipant(self.domain_id, qos=dds.qos.Qos(
                _P.Userdata(b"enclave=/;")))
            self.gid = self._dp.guid.bytes
            self._waitset = dds.core.WaitSet(self._dp)
            self._wake = dds.core.GuardCondition(self._dp)
            self._waitset.attach(self._wake)
            self._discovery_writer = self._raw_writer(
                "ros_discovery_info", types.ParticipantEntitiesInfo, _DISCOVERY_QOS)
            self._publish_graph()
            self._thread = threading.Thread(target=self._run, name="tf2py-ros2-receiver",
                                            daemon=True)
            self._thread.start()
        except BaseException:
            self.close()
            raise

    # -- entities ---------------------------------------------------------------------------
    def _topic(self, name: str, data_type: type[IdlStruct]) -> Topic[Any]:
        key = (name, data_type)
        topic = self._topics.get(key)
        if topic is None:
            topic = self._topics[key] = dds.topic.Topic(self._dp, name, data_type)
        return topic

    def _raw_writer(self, name: str, data_type: type[IdlStruct], qos: Qos) -> RawWriter:
        topic = self._topic(name, data_type)
        return RawWriter(self, topic, dds.pub.DataWriter(self._dp, topic, qos=qos))

    def writer(self, topic_name: str, data_type: type[IdlStruct], qos: Qos) -> RawWriter:
        """A writer of raw samples on DDS topic ``topic_name`` (e.g. ``rt/tf``)."""
        with self._lock:
            self._check_open()
            writer = self._raw_writer(topic_name, data_type, qos)
            self._writers.append(writer)
            self._publish_graph()
            return writer

    def subscribe(
        self, topic_name: str, data_type: type[IdlStruct], qos: Qos, callback: SampleCallback
    ) -> Subscription:
        """Call ``callback(data: bytes, info)`` on the receive thread for every sample on DDS
        topic ``topic_name`` of type ``data_type`` (one of ``types``)."""
        if self._ignore_local:
            qos = dds.qos.Qos(*qos, _P.IgnoreLocal.Participant)
        with self._lock:
            self._check_open()
            topic = self._topic(topic_name, data_type)
            reader = dds.sub.DataReader(self._dp, topic, qos=qos)
            subscription = Subscription(self, topic, reader, callback)
            self._subscriptions.append(subscription)
            self._waitset.attach(subscription.condition)
            self._publish_graph()
        self._wake.set(True)
        return subscription

    def subscribe_clock(self, callback: Callable[[int], object]) -> Subscription:
        """``callback(stamp_ns: int)`` for every ``/clock`` tick (rosgraph_msgs/Clock);
        undecodable ticks are dropped and counted."""
        def on_sample(data: bytes, info: SampleInfo) -> None:
            try:
                stamp = cdr.decode_time(data)
            except cdr.CdrError as exc:
                self.dropped.drop(exc.cause, f"/clock: {exc}")
                return
            callback(stamp)
        return self.subscribe("rt/clock", types.Clock, CLOCK_QOS, on_sample)

    def _forget(self, entity: RawWriter | Subscription, writer: bool) -> None:
        with self._lock:
            if writer:
                if entity in self._writers:
                    self._writers.remove(entity)
            elif entity in self._subscriptions:
                self._subscriptions.remove(entity)
                try:
                    self._waitset.detach(entity.condition)
                except Exception:
                    pass
                _destroy(entity.condition)
                _destroy(entity._reader)
            if not self._closing.closed:
                self._publish_graph()

    def _check_open(self) -> None:
        if self._closing.closed:
            raise RuntimeError(f"the ROS 2 node {self.node_name} is closed")

    def _publish_graph(self) -> None:
        """Announce this node and its endpoints on ros_discovery_info (as rmw does)."""
        info = cdr.encode_participant_entities_info(self.gid, [(
            "/", self.node_name, [s.gid for s in self._subscriptions],
            [w.gid for w in self._writers])])
        self._discovery_writer.write(info)

    # -- receiving --------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._closing.closed:
                self._waitset.wait(1_000 * _MS)
                if self._closing.closed:
                    return
                self._wake.set(False)
                with self._lock:
                    subscriptions = list(self._subscriptions)
                for subscription in subscriptions:
                    if subscription._closed:
                        continue
                    try:
                        with self._lock:
                            if not subscription._closed:
                                subscription._drain()
                    except Exception as exc:  # a long-running node never dies
                        self.dropped.drop("error", f"{subscription.topic.name}: "
                                          f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            if not self._closing.closed:
                logger.error("tf2py ROS 2 receive thread stopped: %s: %s", type(exc).__name__, exc)

    def close(self) -> None:
        """Leave the graph: stop the thread, delete the participant (and all it holds)."""
        if not self._closing.begin():
            return
        try:
            self._wake.set(True)
        except Exception:
            pass
        if self._thread is not None and self._thread is not threading.current_thread():
            join_thread(self._thread, 5)
        for subscription in list(self._subscriptions):
            subscription._closed = True
        self._subscriptions.clear()
        self._writers.clear()
        dp = getattr(self, "_dp", None)
        if dp is not None:
            _destroy(dp)
        if self._domain is not None:
            _release_domain(self.domain_id)
            self._domain = None


_domains: dict[int, list[Any]] = {}  # domain id -> [Domain or None, users, config]
_domains_lock = threading.Lock()


def _acquire_domain(domain_id: int, config: str | None) -> list[Any]:
    """The process's Cyclone domain ``domain_id`` with ``config`` (Cyclone has one domain per
    id in a process: a second participant joins it, and must want the same settings)."""
    with _domains_lock:
        entry = _domains.get(domain_id)
        if entry is None:
            # Cyclone reads CYCLONEDDS_URI itself only for a domain created without a config.
            domain = dds.domain.Domain(domain_id, config) if config else None
            entry = _domains[domain_id] = [domain, 0, config]
        elif entry[2] != config:
            raise ValueError(f"ROS 2 domain {domain_id} is already in use in this process with "
                             "other discovery settings (ROS_* variables changed?)")
        entry[1] += 1
        return entry


def _release_domain(domain_id: int) -> None:
    with _domains_lock:
        entry = _domains.get(domain_id)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _domains[domain_id]
            if entry[0] is not None:
                _destroy(entry[0])


def _domain_config() -> str | None:
    config = discovery.cyclone_config(discovery.discovery_settings())
    uri = os.environ.get("CYCLONEDDS_URI", "").strip()
    if config and uri:
        return f"{config},{uri}"  # as rmw_cyclonedds: the user's file refines ours
    return config
