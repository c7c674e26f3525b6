"""/tf and /tf_static on a ROS 2 graph: the broadcasters, the listener and the subscriber that
``TransformBroadcaster(core="ros2://...")`` and the others become (same methods, same counters
as their ZeroMQ twins in ``tf2py.transport``).

Topics ``rt/tf`` and ``rt/tf_static`` of type ``tf2_msgs::msg::dds_::TFMessage_``, with
tf2_ros's QoS. Received samples are decoded straight into the buffer's batch insert (one call
per message, no object per transform); what cannot be decoded is dropped and counted per cause.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from ...buffer.messages import TransformStamped
from ...buffer.transforms import Transforms
from .. import wire
from ..counters import DropCounter
from ..fill import BufferFiller, FillingListener
from ..lifetime import release_all, release_when_collected, weak_callback
from ..static_set import StaticSet, transform_items
from . import cdr, types
from .participant import (
    Subscription,
    STATIC_READER_QOS,
    STATIC_WRITER_QOS,
    TF_QOS,
    Participant,
)

if TYPE_CHECKING:
    from cyclonedds.internal import SampleInfo
    from cyclonedds.qos import Qos

    from ...buffer.core import BufferCore
    from ..listener import TransformBatch

#: A transform's columns from a one-transform message: parent, child, stamp ns, (tx..qw).
_Single = cdr.SingleTransform
_E = TypeVar("_E")

__all__ = [
    "TOPIC_TF",
    "TOPIC_TF_STATIC",
    "Ros2TransformBroadcaster",
    "Ros2StaticTransformBroadcaster",
    "Ros2TransformListener",
    "Ros2TransformSubscriber",
]

TOPIC_TF = "rt/tf"
TOPIC_TF_STATIC = "rt/tf_static"


class _Node:
    """Holds a participant: the shared one of the address, or a private one."""

    _participant: Participant | None

    def _join(self, core: str | None, participant: Participant | None, keys: Any = None) -> None:
        from ..address import core_address

        if keys is not None:
            # CURVE keys protect tf2py's own buses; ROS 2 traffic is plain DDS (SROS 2 is
            # not supported), so asking for keys there is a mistake worth refusing.
            raise ValueError("keys= applies to tf2py buses (tcp://, ipc://), not to ROS 2 "
                             "(ros2://), whose traffic is plain DDS")

        self.address = core_address(core)
        self._own_participant = participant is None
        self._participant = Participant.acquire(self.address) if participant is None \
            else participant

    def _leave(self) -> None:
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer.detach()
        if self._own_participant and self._participant is not None:
            self._participant.release()
        self._participant = None

    def _release_when_collected(self, entities: list[Any]) -> None:
        """Release ``entities`` (writers, subscriptions) and our share of the participant
        when this object is collected without ``close()`` (with a ResourceWarning)."""
        participant = self._participant if self._own_participant else None
        release = release_all(entities) if participant is None else \
            release_all(entities, participant.release)
        self._finalizer = release_when_collected(self, release, type(self).__name__)

    @property
    def node_name(self) -> str:
        return self._live_participant().node_name

    def _live_participant(self) -> Participant:
        if self._participant is None:
            raise RuntimeError("this ROS 2 endpoint is closed")
        return self._participant


class _Ros2Writer(_Node):
    """What both broadcasters share: one writer on the participant, closed with it."""

    def _open(
        self, core: str | None, authority: str | None, participant: Participant | None,
        keys: Any, topic: str, qos: Qos,
    ) -> None:
        self.authority = wire.authority_or_default(authority)
        self._lock = threading.Lock()
        self._closed = False
        self._participant = None
        self._join(core, participant, keys)
        try:
            self._writer = self._live_participant().writer(topic, types.TFMessage, qos)
        except BaseException:
            self._leave()
            raise
        self._release_when_collected([self._writer])

    def matched_listeners(self) -> int:
        """How many DDS readers of this broadcaster's topic it has found."""
        return self._writer.matched_subscriptions()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._writer.close()
        self._leave()

    def __enter__(self: _E) -> _E:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Ros2TransformBroadcaster(_Ros2Writer):
    """Publishes on ROS 2's ``/tf`` (reliable, volatile, keep-last 100). ``authority`` is kept
    for the API's sake: ROS 2 messages carry none."""

    def __init__(self, core: str | None = None, authority: str | None = None, *,
                 participant: Participant | None = None, keys: Any = None) -> None:
        self.sent_messages = 0
        self.sent_transforms = 0
        self._open(core, authority, participant, keys, TOPIC_TF, TF_QOS)

    def send_transform(self, transform: TransformStamped | Iterable[TransformStamped]) -> None:
        """Publish a TransformStamped, or a list of them as ONE TFMessage."""
        items = transform_items(transform)
        if not items:
            return
        sample = cdr.encode_tf(items)
        self.send_columns_sample(sample, len(items))

    def send_columns(
        self, parents: Sequence[str], children: Sequence[str], stamps_ns: Iterable[int],
        values: npt.ArrayLike,
    ) -> None:
        """Publish N transforms given as columns (what a listener decodes), as one message."""
        if len(parents):
            self.send_columns_sample(
                cdr.encode_tf_columns(parents, children, stamps_ns, values), len(parents))

    def send_columns_sample(self, sample: bytes, n: int) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("send_transform on a closed TransformBroadcaster")
            self._writer.write(sample)
            self.sent_messages += 1
            self.sent_transforms += n


class Ros2StaticTransformBroadcaster(_Ros2Writer):
    """Publishes on ROS 2's ``/tf_static`` (transient-local, keep-last 1): the latest transform
    per child frame, the whole set in every message, so a late joiner gets all of it."""

    def __init__(self, core: str | None = None, authority: str | None = None, *,
                 participant: Participant | None = None, keys: Any = None) -> None:
        self._latched = StaticSet(DropCounter("tf2py-ros2-static-broadcaster"))
        self.dropped = self._latched.dropped  # invalid transforms, never latched
        self.published = 0
        self._open(core, authority, participant, keys, TOPIC_TF_STATIC, STATIC_WRITER_QOS)

    def send_transform(self, transform: TransformStamped | Iterable[TransformStamped]) -> None:
        """Latch a TransformStamped or a list of them (latest per child frame wins) and
        publish the whole latched set as one message."""
        items = transform_items(transform)
        cdr.encode_tf(items)  # type and range errors raise here, before anything is latched
        self._latch(lambda: self._latched.add_transforms(items))

    def send_columns(
        self, parents: Sequence[str], children: Sequence[str], stamps_ns: Iterable[int],
        values: npt.ArrayLike,
    ) -> None:
        """Latch N transforms given as columns and publish the whole set."""
        self._latch(lambda: self._latched.add_columns(parents, children, stamps_ns, values))

    def _latch(self, add: Callable[[], None]) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("send_transform on a closed StaticTransformBroadcaster")
            add()
            columns = self._latched.columns()
            if columns is not None:
                self._writer.write(cdr.encode_tf_columns(*columns))
                self.published += 1


class _Ros2Receiver(_Node):
    """Readers of rt/tf and rt/tf_static; ``_handle(transforms, authority, is_static,
    received_ns)`` per message, on the participant's thread."""

    _name = "tf2py-ros2-receiver"

    def __init__(
        self, core: str | None = None, participant: Participant | None = None, keys: Any = None
    ) -> None:
        self.received_messages = 0
        self.received_transforms = 0
        self.dropped = DropCounter(self._name)
        self._closed = False
        self._subscriptions: list[Subscription] = []
        self._decode = cdr.TfDecoder().decode  # both topics are read on one thread
        self._participant = None
        self._join(core, participant, keys)
        self._release_when_collected(self._subscriptions)
        try:
            for topic, qos, is_static in ((TOPIC_TF_STATIC, STATIC_READER_QOS, True),
                                          (TOPIC_TF, TF_QOS, False)):
                # The participant keeps its callbacks: a weak one lets an unclosed receiver
                # be collected.
                self._subscriptions.append(self._live_participant().subscribe(
                    topic, types.TFMessage, qos, weak_callback(
                        self._on_sample_static if is_static else self._on_sample)))
        except BaseException:
            self.close()
            raise

    def _authority_of(self, info: SampleInfo) -> str:
        return f"ros2:{self.address}:{info.publication_handle:x}"

    def _on_sample(self, data: bytes, info: SampleInfo) -> None:
        self._receive(data, info, False)

    def _on_sample_static(self, data: bytes, info: SampleInfo) -> None:
        self._receive(data, info, True)

    def _receive(self, data: bytes, info: SampleInfo, is_static: bool) -> None:
        if self._closed:
            return
        received_ns = time.time_ns()
        try:
            single = cdr.decode_tf_single(data)
            if single is not None:
                try:
                    self._handle_one(single, self._authority_of(info), is_static, received_ns)
                finally:  # counted once stored: who sees the count sees the transforms
                    self.received_messages += 1
                    self.received_transforms += 1
                return
            transforms = self._decode(data)
        except cdr.CdrError as exc:
            self.dropped.drop(exc.cause, str(exc))
            return
        try:
            if len(transforms):
                self._handle(transforms, self._authority_of(info), is_static, received_ns)
        finally:
            self.received_messages += 1
            self.received_transforms += len(transforms)

    def _handle_one(
        self, single: _Single, authority: str, is_static: bool, received_ns: int
    ) -> None:
        parent, child, stamp, values = single
        self._handle(Transforms._of([parent], [child], np.array([stamp], dtype=np.int64),
                                    np.array([values], dtype=np.float64)),
                     authority, is_static, received_ns)

    def _handle(self, transforms: Transforms, authority: str, is_static: bool,
                received_ns: int) -> None:
        raise NotImplementedError

    def matched_publishers(self) -> int:
        """How many DDS writers of /tf and /tf_static this receiver has found."""
        return sum(s.matched_publications() for s in self._subscriptions)

    def stats(self) -> dict[str, Any]:
        stats = {
            "received_messages": self.received_messages,
            "received_transforms": self.received_transforms,
            "dropped": self.dropped.snapshot(),
        }
        return stats

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for subscription in self._subscriptions:
            subscription.close()
        self._subscriptions = []
        self._leave()

    def __enter__(self: _E) -> _E:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Ros2TransformListener(FillingListener, _Ros2Receiver):
    """Fills ``buffer`` from ROS 2's /tf and /tf_static (tf2_ros's TransformListener)."""

    _name = "tf2py-ros2-transform-listener"

    def __init__(self, buffer: BufferCore, core: str | None = None, keys: Any = None, *,
                 participant: Participant | None = None) -> None:
        self.buffer = buffer
        self._filler = BufferFiller(buffer, DropCounter(self._name))
        super().__init__(core, participant, keys)
        self._filler.dropped = self.dropped

    def _handle_one(
        self, single: _Single, authority: str, is_static: bool, received_ns: int
    ) -> None:
        parent, child, stamp, values = single
        self._filler.insert_one(parent, child, stamp, values, authority, is_static)

    def _handle(self, transforms: Transforms, authority: str, is_static: bool,
                received_ns: int) -> None:
        self._filler.insert(authority, transforms, is_static)

    def stats(self) -> dict[str, Any]:
        return self._filled(super().stats())


class Ros2TransformSubscriber(_Ros2Receiver):
    """Calls ``on_batch(batch)`` (a ``TransformBatch``) for every ROS 2 /tf and /tf_static
    message, on the receive thread."""

    _name = "tf2py-ros2-transform-subscriber"

    def __init__(self, core: str | None = None,
                 on_batch: Callable[[TransformBatch], object] | None = None, keys: Any = None, *,
                 participant: Participant | None = None) -> None:
        if on_batch is None:
            raise TypeError("TransformSubscriber needs on_batch=callable(batch)")
        self._on_batch = on_batch
        super().__init__(core, participant, keys)

    def _handle(self, transforms: Transforms, authority: str, is_static: bool,
                received_ns: int) -> None:
        from ..listener import TransformBatch

        try:
            self._on_batch(TransformBatch(authority, transforms, is_static, received_ns))
        except Exception as exc:  # a long-running subscriber never dies
            self.dropped.drop("error", f"{type(exc).__name__}: {exc}")


def _register() -> None:
    from ..broadcaster import StaticTransformBroadcaster, TransformBroadcaster
    from ..listener import TransformListener, TransformSubscriber

    TransformBroadcaster.register(Ros2TransformBroadcaster)
    StaticTransformBroadcaster.register(Ros2StaticTransformBroadcaster)
    TransformListener.register(Ros2TransformListener)
    TransformSubscriber.register(Ros2TransformSubscriber)


_register()
