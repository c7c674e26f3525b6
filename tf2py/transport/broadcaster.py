"""Broadcasters on any bus: ``/tf`` (``TransformBroadcaster``) and latched ``/tf_static``
(``StaticTransformBroadcaster``), as tf2_ros's. The address's scheme picks the bus
(``interface.transport_for``); the object returned is that bus's broadcaster."""

from __future__ import annotations

from abc import ABCMeta
from typing import Any

from .interface import transport_for

__all__ = ["TransformBroadcaster", "StaticTransformBroadcaster"]


class TransformBroadcaster(metaclass=ABCMeta):
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
                keys: Any = None) -> Any:
        transport, address = transport_for(core)
        return transport.transform_broadcaster(address, authority, keys)


class StaticTransformBroadcaster(metaclass=ABCMeta):
    """Publishes latched transforms on ``/tf_static``, as tf2_ros's StaticTransformBroadcaster.

    Keeps the latest transform per child frame and publishes the whole set on every
    ``send_transform``; a listener that starts later, even much later, still receives it,
    until this publisher closes or its process dies (then, within 5 s, late joiners no longer
    get it). Arguments as for ``TransformBroadcaster``.
    """

    def __new__(cls, core: Any = None, authority: str | None = None,
                keys: Any = None) -> Any:
        transport, address = transport_for(core)
        return transport.static_transform_broadcaster(address, authority, keys)
