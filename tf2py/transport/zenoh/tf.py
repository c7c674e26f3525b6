"""/tf and /tf_static on Zenoh, as rmw_zenoh carries them: the broadcasters, the subscriber and
the listener that ``TransformBroadcaster(core="zenoh://...")`` and the others build.

Samples are tf2_msgs/msg/TFMessage in CDR (``ros2.cdr``) with rmw_zenoh's attachment; a
received message becomes one ``TransformBatch`` (or one buffer insertion) whose authority
names the publisher: ``zenoh:<namespace>:<GID in hex>``. What cannot be decoded is dropped
and counted per cause: ``attachment`` (missing or not rmw_zenoh's), ``garbage``,
``encoding``, ``too_large`` (the CDR), ``key`` (a key expression that is not /tf or
/tf_static of TFMessage), ``invalid`` (a listener's invalid transforms), ``error`` (an
``on_batch`` that raised); messages missed on the way, seen as a gap in a publisher's
sequence numbers, under ``gap``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...buffer.transforms import Transforms
from ..counters import DropCounter
from ..fill import BufferFiller, FillingListener
from ..lifetime import CloseOnce, ClosingContext, release_all, release_when_collected, weak_callback
from ..ros2 import cdr
from ..static_set import StaticSet, transform_items
from ..wire import authority_or_default
from ..wire_common import MAX_FRAME_ID_LENGTH
from . import wire
from .address import ZenohAddress, parse_zenoh_address
from .endpoint import Publisher, Subscription, Topic

if TYPE_CHECKING:
    from ..listener import TransformBatch

__all__ = [
    "tf_topic",
    "ZenohTransformBroadcaster",
    "ZenohStaticTransformBroadcaster",
    "ZenohTransformSubscriber",
    "ZenohTransformListener",
    "authority_of",
]

#: tf2_ros's depths: /tf keep last 100 both ways; /tf_static 1 (broadcaster), 100 (listener).
_TF_DEPTH = 100
_STATIC_PUBLISHER_DEPTH = 1
_STATIC_SUBSCRIPTION_DEPTH = 100


def tf_topic(address: ZenohAddress, is_static: bool) -> Topic:
    """/tf (or /tf_static) in the address's namespace and domain, with tf2_ros's QoS."""
    name = wire.topic_name(address.namespace, "tf_static" if is_static else "tf")
    return Topic(name, wire.topic_keyexpr(address.domain, address.namespace, is_static),
                 wire.TYPE_NAME, wire.TYPE_HASH, reliable=True, transient_local=is_static,
                 publisher_depth=_STATIC_PUBLISHER_DEPTH if is_static else _TF_DEPTH,
                 subscription_depth=_STATIC_SUBSCRIPTION_DEPTH if is_static else _TF_DEPTH)


def authority_of(namespace: str, gid: bytes) -> str:
    """The authority tf2py gives messages of the Zenoh publisher ``gid`` in ``namespace``."""
    return f"zenoh:{namespace}:{gid.hex()}"


class _Sender(ClosingContext):
    """What both broadcasters share: the address, the authority and one rmw_zenoh publisher."""

    def _open(self, address: str, authority: str | None, keys: Any, is_static: bool) -> None:
        self.address = address
        self.authority = authority_or_default(authority)
        self._lock = threading.Lock()
        self._closing = CloseOnce(self._lock)
        parsed = parse_zenoh_address(address)
        self._publisher = Publisher(parsed, tf_topic(parsed, is_static), keys)
        self._finalizer = release_when_collected(self, self._publisher.close,
                                                 type(self).__name__)

    @property
    def gid(self) -> bytes:
        """The publisher's rmw_zenoh GID (what receivers see in its attachments)."""
        return self._publisher.gid

    def close(self) -> None:
        if not self._closing.begin():
            return
        self._finalizer.detach()
        self._publisher.close()


class ZenohTransformBroadcaster(_Sender):
    """Publishes on /tf (reliable, volatile, keep last 100, as tf2_ros): each
    ``send_transform`` is one TFMessage."""

    def __init__(self, address: str, authority: str | None = None, keys: Any = None):
        self.sent_messages = 0
        self.sent_transforms = 0
        self._open(address, authority, keys, False)

    def send_transform(self, transform: Any) -> None:
        """Publish a TransformStamped, or a list of them as ONE TFMessage."""
        items = transform_items(transform)
        if items:
            self._send(cdr.encode_tf(items), len(items))

    def send_columns(self, parents: Sequence[str], children: Sequence[str],
                     stamps_ns: Any, values: Any) -> None:
        """Publish N transforms given as columns (what a subscriber decodes) as one message."""
        if len(parents):
            self._send(cdr.encode_tf_columns(parents, children, stamps_ns, values),
                       len(parents))

    def _send(self, sample: bytes, n: int) -> None:
        with self._lock:
            if self._closing.closed:
                raise RuntimeError("send_transform on a closed TransformBroadcaster")
            self._publisher.put(sample)
            self.sent_messages += 1
            self.sent_transforms += n


class ZenohStaticTransformBroadcaster(_Sender):
    """Publishes on /tf_static (transient-local, keep last 1, as tf2_ros's static broadcaster):
    the latest transform per child frame, the whole set in every message; the publisher's
    cache hands the latest message to late joiners while this object lives."""

    def __init__(self, address: str, authority: str | None = None, keys: Any = None):
        self._latched = StaticSet(DropCounter("tf2py-zenoh-static-broadcaster"))
        self.dropped = self._latched.dropped  # invalid transforms, never latched
        self.published = 0
        self._open(address, authority, keys, True)

    def send_transform(self, transform: Any) -> None:
        """Latch a TransformStamped or a list of them (latest per child frame wins) and
        publish the whole latched set as one message."""
        items = transform_items(transform)
        cdr.encode_tf(items)  # type and range errors raise here, before anything is latched
        self._latch(lambda: self._latched.add_transforms(items))

    def send_columns(self, parents: Sequence[str], children: Sequence[str],
                     stamps_ns: Any, values: Any) -> None:
        """Latch N transforms given as columns and publish the whole set."""
        self._latch(lambda: self._latched.add_columns(parents, children, stamps_ns, values))

    def _latch(self, add: Callable[[], None]) -> None:
        with self._lock:
            if self._closing.closed:
                raise RuntimeError("send_transform on a closed StaticTransformBroadcaster")
            add()
            columns = self._latched.columns()
            if columns is not None:
                self._publisher.put(cdr.encode_tf_columns(*columns))
                self.published += 1


class _Receiver(ClosingContext):
    """Subscriptions to /tf and /tf_static (of the address's namespace, or of every namespace
    on its domain); ``_handle(authority, is_static, received_ns, columns)`` per message,
    one call at a time."""

    _name = "tf2py-zenoh-receiver"
    #: Publishers whose sequence numbers are remembered (the least recently heard go first).
    MAX_PUBLISHERS = 4096
    #: The largest jump in a publisher's sequence counted as messages missed: a bigger one
    #: is a restart or a forgery, counted once as ``sequence_jump`` (so ``gap`` stays within
    #: MAX_GAP per message received).
    MAX_GAP = 1024
    #: Bytes of distinct frame ids one listener brings into its Buffer, each counted with
    #: 200 bytes of overhead (the Buffer never forgets a name): rows naming a new frame
    #: beyond it are dropped, ``listener_budget``.
    MAX_NAME_BYTES = 128 * 1024 * 1024

    def _open(self, address: str, keys: Any, all_namespaces: bool,
              ignore_gids: set[bytes] | None) -> None:
        self.address = address
        self.received_messages = 0
        self.received_transforms = 0
        self.dropped = DropCounter(self._name)
        self._lock = threading.Lock()  # one message at a time, whichever thread brings it
        self._closing = CloseOnce(self._lock)
        self._decode = cdr.TfDecoder().decode
        self._last_sequence: dict[bytes, int] = {}
        self._names: set[str] = set()  # the frame ids this listener let into its Buffer
        self._name_bytes = 0
        self._ignore = ignore_gids if ignore_gids is not None else set()
        self._subscriptions: list[Subscription] = []
        self._finalizer = release_when_collected(self, release_all(self._subscriptions),
                                                 type(self).__name__)
        parsed = parse_zenoh_address(address)
        self._namespace = parsed.namespace
        self._all = all_namespaces
        try:
            for is_static in (True, False):
                keyexpr = wire.all_namespaces_keyexpr(parsed.domain, is_static) \
                    if all_namespaces else None
                # Zenoh keeps its callbacks: a weak one lets an unclosed receiver be collected
                callback = weak_callback(self._on_static if is_static else self._on_dynamic)
                self._subscriptions.append(Subscription(
                    parsed, tf_topic(parsed, is_static), callback, keys, keyexpr=keyexpr))
        except BaseException:
            self.close()
            raise

    def _on_static(self, sample: Any) -> None:
        self._receive(sample, True)

    def _on_dynamic(self, sample: Any) -> None:
        self._receive(sample, False)

    def _receive(self, sample: Any, is_static: bool) -> None:
        received_ns = time.time_ns()
        with self._lock:
            if self._closing.closed:
                return
            try:
                attachment = wire.decode_attachment(
                    None if sample.attachment is None else sample.attachment.to_bytes())
                if attachment.gid in self._ignore:
                    return
                namespace = wire.parse_topic_keyexpr(str(sample.key_expr)).namespace \
                    if self._all else self._namespace
                if len(namespace) > wire.MAX_NAMESPACE_LENGTH + 1:
                    raise wire.WireError(f"a namespace over {wire.MAX_NAMESPACE_LENGTH} "
                                         "characters", "namespace_too_long")
                payload = sample.payload.to_bytes()
                single = cdr.decode_tf_single(payload)
                columns = self._decode(payload) if single is None else None
                if len(payload) > MAX_FRAME_ID_LENGTH:  # only then can an id be too long
                    single, columns = self._short_ids(single, columns)
                single, columns = self._known_names(single, columns)
            except (wire.WireError, cdr.CdrError) as exc:
                self.dropped.drop(exc.cause, f"{str(sample.key_expr)[:300]}: {exc}")
                return
            self._count_gap(attachment)
            authority = authority_of(namespace, attachment.gid)
            try:
                if single is not None:
                    self._handle_one(authority, is_static, received_ns, single)
                elif columns is not None and len(columns):
                    self._handle(authority, is_static, received_ns, columns)
            finally:  # counted once stored: who sees the count sees the transforms
                self.received_messages += 1
                self.received_transforms += 1 if columns is None else len(columns)

    def _known_names(self, single: Any, columns: Any) -> tuple[Any, Any]:
        """The message without the rows that would name a frame beyond ``MAX_NAME_BYTES``."""
        names = self._names
        if single is not None:
            if single[0] in names and single[1] in names:
                return single, None
            if not self._admit(single[0]) or not self._admit(single[1]):
                raise wire.WireError("a new frame id over the listener's byte budget",
                                     "listener_budget")
            return single, None
        if columns is None:
            return None, None
        parents, children = columns.parents, columns.children
        if names.issuperset(parents) and names.issuperset(children):
            return None, columns
        keep = [k for k, (p, c) in enumerate(zip(parents, children))
                if self._admit(p) and self._admit(c)]
        if len(keep) == len(parents):
            return None, columns
        self.dropped.drop("listener_budget", f"{len(parents) - len(keep)} transform(s) naming "
                          f"frames beyond the listener's {self.MAX_NAME_BYTES} bytes of names",
                          n=len(parents) - len(keep))
        return None, columns[keep]

    def _admit(self, name: str) -> bool:
        if name in self._names:
            return True
        cost = len(name) + 200
        if self._name_bytes + cost > self.MAX_NAME_BYTES:
            return False
        self._names.add(name)
        self._name_bytes += cost
        return True

    def _short_ids(self, single: Any, columns: Any) -> tuple[Any, Any]:
        """The message without its rows whose frame id is over MAX_FRAME_ID_LENGTH (the
        ZeroMQ bus's limit), each counted ``frame_id_too_long``."""
        if single is not None:
            if max(len(single[0]), len(single[1])) > MAX_FRAME_ID_LENGTH:
                raise wire.WireError("a frame id over the limit", "frame_id_too_long")
            return single, None
        parents, children = columns.parents, columns.children
        if max(map(len, parents), default=0) <= MAX_FRAME_ID_LENGTH and \
                max(map(len, children), default=0) <= MAX_FRAME_ID_LENGTH:
            return None, columns
        keep = [k for k, (p, c) in enumerate(zip(parents, children))
                if len(p) <= MAX_FRAME_ID_LENGTH and len(c) <= MAX_FRAME_ID_LENGTH]
        self.dropped.drop("frame_id_too_long", f"{len(parents) - len(keep)} transform(s) "
                          f"with a frame id over {MAX_FRAME_ID_LENGTH} characters",
                          n=len(parents) - len(keep))
        return None, columns[keep]

    def _count_gap(self, attachment: wire.Attachment) -> None:
        table = self._last_sequence
        last = table.pop(attachment.gid, None)  # re-inserted last: least recent first
        table[attachment.gid] = attachment.sequence_number
        if len(table) > self.MAX_PUBLISHERS:
            del table[next(iter(table))]
        if last is not None and attachment.sequence_number > last + 1:
            missed = attachment.sequence_number - last - 1
            if missed > self.MAX_GAP:
                self.dropped.drop("sequence_jump", f"publisher {attachment.gid.hex()}'s "
                                  f"sequence jumped by {missed} (a restart, or forged)")
                return
            self.dropped.drop("gap", f"{missed} message(s) of publisher "
                              f"{attachment.gid.hex()} missed", n=missed)

    def _handle_one(self, authority: str, is_static: bool, received_ns: int,
                    single: tuple[str, str, int, Sequence[float]]) -> None:
        parent, child, stamp, values = single
        self._handle(authority, is_static, received_ns,
                     Transforms._of([parent], [child], np.array([stamp], dtype=np.int64),
                                    np.array([values], dtype=np.float64)))

    def _handle(self, authority: str, is_static: bool, received_ns: int,
                columns: Transforms) -> None:
        raise NotImplementedError

    def stats(self) -> dict[str, Any]:
        return {"received_messages": self.received_messages,
                "received_transforms": self.received_transforms,
                "dropped": self.dropped.snapshot()}

    def close(self) -> None:
        if not self._closing.begin():
            return
        self._finalizer.detach()
        for subscription in self._subscriptions:
            subscription.close()
        self._subscriptions = []


class ZenohTransformSubscriber(_Receiver):
    """Calls ``on_batch(batch)`` (a ``TransformBatch``) for every /tf and /tf_static message,
    the cached statics of every live publisher included. ``all_namespaces``: hear every
    namespace on the domain (the batch's authority names the namespace)."""

    _name = "tf2py-zenoh-transform-subscriber"

    def __init__(self, address: str, on_batch: Callable[[TransformBatch], None],
                 keys: Any = None, *, all_namespaces: bool = False,
                 ignore_gids: set[bytes] | None = None):
        if not callable(on_batch):
            raise TypeError("TransformSubscriber needs on_batch=callable(batch)")
        self._on_batch = on_batch
        self._open(address, keys, all_namespaces, ignore_gids)

    def _handle(self, authority: str, is_static: bool, received_ns: int,
                columns: Transforms) -> None:
        from ..listener import TransformBatch

        try:
            self._on_batch(TransformBatch(authority, columns, is_static, received_ns))
        except Exception as exc:  # a long-running subscriber never dies
            self.dropped.drop("error", f"{type(exc).__name__}: {exc}")


class ZenohTransformListener(FillingListener, _Receiver):
    """Fills ``buffer`` from /tf and /tf_static (tf2_ros's TransformListener), one insertion
    per message."""

    _name = "tf2py-zenoh-transform-listener"

    def __init__(self, buffer: Any, address: str, keys: Any = None):
        self.buffer = buffer
        self._filler = BufferFiller(buffer, DropCounter(self._name))
        self._open(address, keys, False, None)
        self._filler.dropped = self.dropped

    def _handle_one(self, authority: str, is_static: bool, received_ns: int,
                    single: tuple[str, str, int, Sequence[float]]) -> None:
        parent, child, stamp, values = single
        self._filler.insert_one(parent, child, stamp, values, authority, is_static)

    def _handle(self, authority: str, is_static: bool, received_ns: int,
                columns: Transforms) -> None:
        self._filler.insert(authority, columns, is_static)

    def stats(self) -> dict[str, Any]:
        return self._filled(super().stats())


def _register() -> None:
    """Make ``isinstance(b, TransformBroadcaster)`` (and the others) hold for this bus."""
    from ..broadcaster import StaticTransformBroadcaster, TransformBroadcaster
    from ..listener import TransformListener, TransformSubscriber

    TransformBroadcaster.register(ZenohTransformBroadcaster)
    StaticTransformBroadcaster.register(ZenohStaticTransformBroadcaster)
    TransformListener.register(ZenohTransformListener)
    TransformSubscriber.register(ZenohTransformSubscriber)


_register()
