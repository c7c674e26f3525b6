"""tf2py: ROS tf2's coordinate-frame buffer, broadcasts and tools, without ROS.

Everything public is importable from here. ``Time``, ``Duration``, ``convert``, the messages
and the tf2 exceptions are imported at once (the last two as their modules' ``__all__`` say,
with the compiled kernel the messages' maths use); every other name (the buffers,
``MessageFilter``, ``Transforms``, the transport, server, fleet, bag, viz and robot names) is imported
on first use, so ``import tf2py`` for messages and times alone does not load ZeroMQ or the
buses. Type checkers see those through the ``TYPE_CHECKING`` imports below, so ``from tf2py
import Buffer`` is typed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .buffer import exceptions as _exceptions
from .buffer import messages as _messages
from .buffer.convert import convert
from .buffer.exceptions import *  # noqa: F403 - the names in its __all__, added to ours below
from .buffer.messages import *  # noqa: F403 - the names in its __all__, added to ours below
from .buffer.time import Duration, Time

if TYPE_CHECKING:
    # What the lazy ``__getattr__`` below returns, for mypy and pyright (never run). Keep
    # this list and ``_LAZY`` the same.
    from . import bag as bag
    from . import viz as viz
    from .bag import BagError as BagError
    from .buffer.buffer import Buffer as Buffer
    from .buffer.core import BufferCore as BufferCore
    from .buffer.message_filter import MessageFilter as MessageFilter
    from .buffer.transforms import Transforms as Transforms
    from .robot.errors import RobotModelError as RobotModelError
    from .robot.joint_state import JointState as JointState
    from .robot.model import Joint as Joint
    from .robot.model import RobotModel as RobotModel
    from .robot.publishers import JointStatePublisher as JointStatePublisher
    from .robot.publishers import RobotStatePublisher as RobotStatePublisher
    from .server.client import BufferClient as BufferClient
    from .server.fleet import Fleet as Fleet
    from .server.server import BufferServer as BufferServer
    from .transport.broadcaster import StaticTransformBroadcaster as StaticTransformBroadcaster
    from .transport.broadcaster import TransformBroadcaster as TransformBroadcaster
    from .transport.clock import SimClock as SimClock
    from .transport.listener import TransformListener as TransformListener
    from .transport.zmq.core import Core as Core

__version__ = "0.1.0"

# name -> module that defines it, imported lazily on first attribute access. Keep its keys
# and the end of ``__all__`` the same.
_LAZY = {
    "BufferCore": "tf2py.buffer.core",
    "Buffer": "tf2py.buffer.buffer",
    "Core": "tf2py.transport.zmq.core",
    "TransformBroadcaster": "tf2py.transport.broadcaster",
    "StaticTransformBroadcaster": "tf2py.transport.broadcaster",
    "TransformListener": "tf2py.transport.listener",
    "BufferServer": "tf2py.server.server",
    "BufferClient": "tf2py.server.client",
    "bag": "tf2py.bag",
    "MessageFilter": "tf2py.buffer.message_filter",
    "SimClock": "tf2py.transport.clock",
    "RobotModelError": "tf2py.robot.errors",
    "Joint": "tf2py.robot.model",
    "RobotModel": "tf2py.robot.model",
    "JointState": "tf2py.robot.joint_state",
    "JointStatePublisher": "tf2py.robot.publishers",
    "RobotStatePublisher": "tf2py.robot.publishers",
    "Transforms": "tf2py.buffer.transforms",
    "BagError": "tf2py.bag",
    "Fleet": "tf2py.server.fleet",
    "viz": "tf2py.viz",
}

# The eager names: the times, ``convert``, and the messages' and the tf2 exceptions' own
# ``__all__`` (mypy and pyright both follow ``__all__ += module.__all__``).
__all__ = ["Time", "Duration", "convert"]
__all__ += _messages.__all__
__all__ += _exceptions.__all__
__all__ += [
    # the lazy names: the keys of ``_LAZY``, in its order (spelt out for type checkers)
    "BufferCore",
    "Buffer",
    "Core",
    "TransformBroadcaster",
    "StaticTransformBroadcaster",
    "TransformListener",
    "BufferServer",
    "BufferClient",
    "bag",
    "MessageFilter",
    "SimClock",
    "RobotModelError",
    "Joint",
    "RobotModel",
    "JointState",
    "JointStatePublisher",
    "RobotStatePublisher",
    "Transforms",
    "BagError",
    "Fleet",
    "viz",
]


if not TYPE_CHECKING:  # a module __getattr__ would make every unknown name Any to mypy

    def __getattr__(name: str) -> object:
        module_name = _LAZY.get(name)
        if module_name is None:
            raise AttributeError(f"module 'tf2py' has no attribute {name!r}")
        module = importlib.import_module(module_name)
        value = module if name in ("bag", "viz") else getattr(module, name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    """The public names and the package's own dunders, not its imports' helpers."""
    return sorted(set(__all__) | {"__version__", "__doc__", "__name__", "__path__", "__file__"})
