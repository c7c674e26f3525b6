"""The factory methods every bus shares: build the object from a class named in a table.

A bus package (``zmq/``, ``ros2/``, ``zenoh/``) lists in ``classes`` which of its classes
serves each ``Transport`` factory method, as ``"module:Class"`` relative to the package;
``BusClasses`` imports that module on first use (so the bus's extra is needed only when an
object is built, and a missing one raises the bus module's own one-line ImportError) and
calls the class with the method's arguments, ``keys`` by keyword. A method the table leaves
out keeps ``Transport``'s default (the listener on the subscriber, the plain bridge side, no
typed topics).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

from .interface import (
    ClockReceiver,
    ClockSender,
    TopicReceiver,
    TopicSender,
    TransformReceiver,
    TransformSender,
    Transport,
)

if TYPE_CHECKING:
    from .listener import TransformBatch
    from .topics import TopicSpec

__all__ = ["BusClasses"]


class BusClasses(Transport):
    """A ``Transport`` whose objects are classes of its own package, named in ``classes``."""

    #: Factory method name -> ``"module:Class"`` in the bus's package, e.g.
    #: ``{"sim_clock": "clock:ZmqSimClock"}``. ``bridge_side`` classes get the transport first.
    classes: ClassVar[Mapping[str, str]] = {}

    def _build(self, method: str, *args: Any, keys: Any) -> Any:
        """The object of ``classes[method]`` built from ``args`` and ``keys=keys``."""
        module_name, _, class_name = self.classes[method].partition(":")
        module = importlib.import_module(f".{module_name}", type(self).__module__)
        return getattr(module, class_name)(*args, keys=keys)

    def transform_broadcaster(self, address: str, authority: str | None,
                              keys: Any = None) -> TransformSender:
        return cast(TransformSender,
                    self._build("transform_broadcaster", address, authority, keys=keys))

    def static_transform_broadcaster(self, address: str, authority: str | None,
                                     keys: Any = None) -> TransformSender:
        return cast(TransformSender,
                    self._build("static_transform_broadcaster", address, authority, keys=keys))

    def transform_subscriber(self, address: str, on_batch: Callable[[TransformBatch], None],
                             keys: Any = None) -> TransformReceiver:
        return cast(TransformReceiver,
                    self._build("transform_subscriber", address, on_batch, keys=keys))

    def transform_listener(self, buffer: Any, address: str,
                           keys: Any = None) -> TransformReceiver:
        if "transform_listener" not in self.classes:
            return super().transform_listener(buffer, address, keys)
        return cast(TransformReceiver,
                    self._build("transform_listener", buffer, address, keys=keys))

    def bridge_side(self, address: str, authority: str, keys: Any = None) -> Any:
        if "bridge_side" not in self.classes:
            return super().bridge_side(address, authority, keys)
        return self._build("bridge_side", self, address, authority, keys=keys)

    def topic_publisher(self, address: str, topic: TopicSpec,
                        keys: Any = None) -> TopicSender:
        if "topic_publisher" not in self.classes:
            return super().topic_publisher(address, topic, keys)
        return cast(TopicSender, self._build("topic_publisher", address, topic, keys=keys))

    def topic_subscriber(self, address: str, topic: TopicSpec,
                         on_message: Callable[[bytes], None],
                         keys: Any = None) -> TopicReceiver:
        if "topic_subscriber" not in self.classes:
            return super().topic_subscriber(address, topic, on_message, keys)
        return cast(TopicReceiver,
                    self._build("topic_subscriber", address, topic, on_message, keys=keys))

    def clock_publisher(self, address: str, keys: Any = None) -> ClockSender:
        return cast(ClockSender, self._build("clock_publisher", address, keys=keys))

    def sim_clock(self, address: str, keys: Any = None) -> ClockReceiver:
        return cast(ClockReceiver, self._build("sim_clock", address, keys=keys))
