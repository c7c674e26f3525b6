"""Receiving from any bus: ``TransformListener`` fills a Buffer; ``TransformSubscriber`` hands
each message, with its sender's authority, to a callback (for tools such as monitor, record,
doctor and the bridge). The address's scheme picks the bus (``interface.transport_for``)."""

from __future__ import annotations

import weakref
from abc import ABCMeta
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..buffer.transforms import Transforms
from .hints import listener_hint
from .interface import transport_for

__all__ = ["TransformListener", "TransformSubscriber", "TransformBatch"]


class TransformBatch:
    """One message received on ``/tf`` or ``/tf_static``, on any bus.

    ``authority`` is the sender (tf2py: ``<program>@<host>:<pid>``; ROS 2: ``ros2:...`` naming
    the writer), ``is_static`` whether it came on ``/tf_static``, ``received_ns`` the wall
    clock at receipt (ns), ``transforms`` its rows as one ``tf2py.Transforms`` (``.parents``,
    ``.children``, ``.stamps_ns`` int64 (N,), ``.values`` float64 (N, 7) as tx, ty, tz, qx,
    qy, qz, qw; iterating gives ``TransformStamped``s); ``len(batch)`` is N.
    """

    __slots__ = ("authority", "transforms", "is_static", "received_ns")

    def __init__(self, authority: str, transforms: Transforms, is_static: bool,
                 received_ns: int) -> None:
        self.authority = authority
        self.transforms = transforms
        self.is_static = is_static
        self.received_ns = received_ns

    def __len__(self) -> int:
        return len(self.transforms)

    def __repr__(self) -> str:
        kind = "/tf_static" if self.is_static else "/tf"
        return f"TransformBatch({kind}, {len(self)} transforms from {self.authority!r})"


class TransformListener(metaclass=ABCMeta):
    """Fills ``buffer`` from /tf and /tf_static on a background thread (tf2_ros's listener).

    Each message is inserted with ONE call, with the sender's authority:
    ``buffer.set_transform_values(...)`` for a single transform, ``buffer.set_transforms(...)``
    for several (a buffer with only ``set_transform`` also works); invalid transforms (NaN,
    empty frame id, ...) are dropped and counted, the rest of the message is stored.
    Undecodable messages, and messages lost on the way (a gap in a publisher's sequence), are
    counted per cause (``stats()``) and logged at a bounded rate. A listener started before
    the bus joins it when it comes up; on (re)connection it gets every live static publisher's
    latched set. ``core``: the bus address (as for ``TransformBroadcaster``); ``close()``; a
    context manager.
    """

    def __new__(cls, buffer: Any, core: Any = None, keys: Any = None) -> TransformListener:
        transport, address = transport_for(core)
        # Each bus's listener class is registered as a virtual subclass (isinstance holds).
        listener = cast("TransformListener", transport.transform_listener(buffer, address, keys))
        add_hint = getattr(buffer, "add_lookup_hint", None)
        if add_hint is not None:
            # A failed lookup on a buffer this listener has never fed says which bus was
            # silent and what to start, as the command line does.
            add_hint(listener_hint(address, _received_by(listener)))
        return listener

    if TYPE_CHECKING:  # what every bus's listener offers, for type checkers
        received_messages: int
        received_transforms: int
        stored_transforms: int
        old_transforms: int

        def __init__(self, buffer: Any, core: Any = None, keys: Any = None) -> None: ...
        def stats(self) -> dict[str, Any]: ...
        def close(self) -> None: ...
        def __enter__(self) -> TransformListener: ...
        def __exit__(self, *exc: object) -> None: ...


def _received_by(listener: Any) -> Callable[[], bool]:
    """Whether ``listener`` has handed the buffer anything (True once it is collected: its
    silence is no longer news), without keeping the listener alive."""
    ref = weakref.ref(listener)

    def received() -> bool:
        alive = ref()
        return alive is None or bool(alive.received_messages)

    return received


class TransformSubscriber(metaclass=ABCMeta):
    """Calls ``on_batch(batch)`` (a ``TransformBatch``, with the sender's authority) on the
    bus's receive thread for every /tf and /tf_static message, the latched statics of every
    live publisher included when it starts. The public way to watch raw traffic on any bus
    (monitor, record, doctor, the bridge). An exception from ``on_batch`` is counted
    (``stats()["dropped"]["error"]``), never stops the thread. ``close()``; context manager.
    """

    def __new__(cls, core: Any = None, on_batch: Callable[[TransformBatch], None] | None = None,
                keys: Any = None) -> Any:
        if on_batch is None:
            raise TypeError("TransformSubscriber needs on_batch=callable(batch)")
        transport, address = transport_for(core)
        return transport.transform_subscriber(address, on_batch, keys)
