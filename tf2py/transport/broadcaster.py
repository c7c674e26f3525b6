"""Broadcasters on any bus: ``/tf`` (``TransformBroadcaster``) and latched ``/tf_static``
(``StaticTransformBroadcaster``), as tf2_ros's. The address's scheme picks the bus
(``interface.transport_for``); the object returned is that bus's broadcaster."""

from __future__ import annotations

from abc import ABCMeta
from collections.abc import Sequence
from typing import Any, TypeVar, cast

from .interface import transport_for

_B = TypeVar("_B", bound="_Sender")

__all__ = ["TransformBroadcaster", "StaticTransformBroadcaster"]


class _Sender(metaclass=ABCMeta):
    """What every bus's broadcaster offers (its methods are the bus's own; these say what
    they do, for ``help()``, IDEs and type checkers)."""

    #: The name receivers see as this sender (tf2py buses; ROS 2 messages carry none).
    authority: str

    def __init__(self, core: Any = None, authority: str | None = None,
                 keys: Any = None) -> None:
        """Never runs: the object made is the bus's own broadcaster (see ``__new__``)."""

    def send_columns(self, parents: Sequence[str], children: Sequence[str], stamps_ns: Any,
                     values: Any) -> None:
        """Send N transforms given as columns (parent and child frame ids, stamps in integer
        nanoseconds, (N, 7) values tx, ty, tz, qx, qy, qz, qw), as ``send_transform`` sends
        a list of them."""
        raise NotImplementedError(f"{type(self).__name__} is built by its bus")

    def close(self) -> None:
        """Release the sockets and threads (idempotent)."""
        raise NotImplementedError(f"{type(self).__name__} is built by its bus")

    def __enter__(self: _B) -> _B:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TransformBroadcaster(_Sender):
    """Publishes transforms on ``/tf``, as tf2_ros's TransformBroadcaster.

    ``core`` is the bus address (default ``$TF2PY_CORE``, else tcp://127.0.0.1:7400;
    ``ros2://``, ``zenoh://`` pick those buses). Started before the bus, it joins when the bus
    comes up; what is sent while nobody listens is dropped (``/tf`` is not latched). Never
    blocks. ``send_transform(t)`` takes a TransformStamped or a list of them (one message);
    ``close()``; a context manager. ``authority`` names the sender (default
    ``<program>@<host>:<pid>``); ``keys``: a keys folder made by ``tf2py keygen`` (default
    ``$TF2PY_KEYS``) for an authenticated, encrypted bus. The object is the bus's own
    broadcaster (``isinstance(b, TransformBroadcaster)`` holds for every bus).
    """

    def __new__(cls, core: Any = None, authority: str | None = None,
                keys: Any = None) -> TransformBroadcaster:
        transport, address = transport_for(core)
        # Each bus's broadcaster class is registered as a virtual subclass (isinstance holds).
        return cast("TransformBroadcaster",
                    transport.transform_broadcaster(address, authority, keys))

    def send_transform(self, transform: Any) -> None:
        """Publish a ``TransformStamped``, or a list of them as one message. Never blocks;
        TypeError for anything but transforms, RuntimeError once closed."""
        raise NotImplementedError(f"{type(self).__name__} is built by its bus")


class StaticTransformBroadcaster(_Sender):
    """Publishes latched transforms on ``/tf_static``, as tf2_ros's StaticTransformBroadcaster.

    Keeps the latest transform per child frame and publishes the whole set on every
    ``send_transform``; a listener that starts later, even much later, still receives it,
    until this publisher closes or its process dies (then, within 5 s, late joiners no longer
    get it). Arguments as for ``TransformBroadcaster``.
    """

    def __new__(cls, core: Any = None, authority: str | None = None,
                keys: Any = None) -> StaticTransformBroadcaster:
        transport, address = transport_for(core)
        return cast("StaticTransformBroadcaster",
                    transport.static_transform_broadcaster(address, authority, keys))

    def send_transform(self, transform: Any) -> None:
        """Latch a ``TransformStamped`` or a list of them (latest per child frame wins) and
        publish the whole latched set as one message."""
        raise NotImplementedError(f"{type(self).__name__} is built by its bus")
