"""Which transport an address names: the scheme decides (API.md, "ROS 2 and other buses").

``tcp://`` and ``ipc://``: tf2py's own ZeroMQ bus (``broadcaster``, ``listener``);
``ros2://`` / ``ros2://DOMAIN_ID``: ROS 2's /tf and /tf_static over DDS (``ros2``).

Every transport offers the same four classes, with the same methods and counters:
``TransformBroadcaster(core, authority)`` and ``StaticTransformBroadcaster(core, authority)``
(``send_transform``, ``close``), ``TransformListener(buffer, core)`` and
``TransformSubscriber(core, on_batch)`` (``stats``, ``close``). The ZeroMQ classes hand a
``ros2://`` address to ``ros2.transport_class`` when constructed, so ``TransformListener(buffer,
core="ros2://")`` simply works.
"""

from __future__ import annotations

from .address import core_address
from .ros2.discovery import is_ros2_address

__all__ = ["scheme", "is_ros2", "other_transport", "check_core_address"]


def scheme(core=None) -> str:
    """``"ros2"`` or ``"zmq"`` for the bus address ``core`` (None: $TF2PY_CORE, else default)."""
    return "ros2" if is_ros2_address(core_address(core)) else "zmq"


def is_ros2(core=None) -> bool:
    return scheme(core) == "ros2"


def other_transport(name: str, core):
    """The class that serves ``core`` instead of tf2py.transport's ``name``, or None for the
    ZeroMQ bus itself. Raises ImportError (one line) when the ros2 extra is missing."""
    if not is_ros2(core):
        return None
    from .ros2 import transport_class

    return transport_class(name)


def check_core_address(core=None) -> str:
    """The bus address if it is usable, else ValueError naming it: ``tcp://HOST:PORT`` or
    ``ros2://[DOMAIN_ID]``."""
    address = core_address(core)
    if is_ros2_address(address):
        from .ros2.discovery import parse_ros2_address

        parse_ros2_address(address)
        return address
    from .address import bus_endpoints

    bus_endpoints(address)
    return address


def construct(cls, name: str, args: tuple, kwargs: dict, core_index: int):
    """For ``cls.__new__`` of the ZeroMQ classes: a new ``cls`` for a ZeroMQ address, else the
    other transport's object, built with the same arguments (``core`` is positional argument
    ``core_index`` or the keyword)."""
    core = kwargs["core"] if "core" in kwargs else (
        args[core_index] if len(args) > core_index else None)
    other = other_transport(name, core) if cls.__name__ == name else None
    if other is None:
        return object.__new__(cls)
    return other(*args, **kwargs)
