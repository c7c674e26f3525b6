"""tf2py: ROS tf2's coordinate-frame buffer, broadcasts and tools, without ROS.

Everything public is importable from here. Transport and server names are imported on
first use, so ``import tf2py`` for the buffer alone does not load ZeroMQ.
"""

from __future__ import annotations

import importlib

from .buffer.exceptions import (
    BackwardExtrapolationException,
    ConnectivityException,
    ExtrapolationException,
    ForwardExtrapolationException,
    InvalidArgumentException,
    LookupException,
    NoDataForExtrapolationException,
    TimeoutException,
    TransformException,
)
from .buffer.messages import (
    Header,
    Point,
    PointStamped,
    Pose,
    PoseStamped,
    Quaternion,
    Transform,
    TransformStamped,
    Vector3,
    Vector3Stamped,
    make_transform,
)
from .buffer.time import Duration, Time

__version__ = "0.1.0"

# name -> module that defines it, imported lazily on first attribute access.
_LAZY = {
    "BufferCore": "tf2py.buffer.core",
    "Buffer": "tf2py.buffer.buffer",
    "Core": "tf2py.transport.core",
    "TransformBroadcaster": "tf2py.transport.broadcaster",
    "StaticTransformBroadcaster": "tf2py.transport.broadcaster",
    "TransformListener": "tf2py.transport.listener",
    "BufferServer": "tf2py.server.server",
    "BufferClient": "tf2py.server.client",
    "bag": "tf2py.bag",
    "Twist": "tf2py.buffer.messages",
    "VelocityStamped": "tf2py.buffer.messages",
    "MessageFilter": "tf2py.buffer.message_filter",
    "SimClock": "tf2py.transport.clock",
}

__all__ = [
    "Time",
    "Duration",
    "Vector3",
    "Point",
    "Quaternion",
    "Transform",
    "Pose",
    "Header",
    "TransformStamped",
    "PointStamped",
    "Vector3Stamped",
    "PoseStamped",
    "make_transform",
    "TransformException",
    "LookupException",
    "ConnectivityException",
    "ExtrapolationException",
    "BackwardExtrapolationException",
    "ForwardExtrapolationException",
    "NoDataForExtrapolationException",
    "InvalidArgumentException",
    "TimeoutException",
    *_LAZY,
]


def __getattr__(name):
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tf2py' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if name == "bag" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
