"""ROS bags for tf2py: load a recording's ``/tf`` and ``/tf_static`` into a ``Buffer``, read
them as one ``tf2py.Transforms`` (``read_transforms`` -> ``BagTransforms``: ``.transforms``
with each message's log time, offset and static flag), and write transforms as a ROS 2
MCAP file (``BagWriter.write`` takes a ``Transforms``).

Reads MCAP files, ROS 2 bag folders (sqlite3 or MCAP storage) and ROS 1 ``.bag`` files, with
``tf2_msgs/TFMessage`` (ROS 1 and 2) and ROS 1's legacy ``tf/tfMessage``. Needs the optional
extra: ``pip install 'tf2py[bag]'`` (rosbags to read, mcap to write); without it every
function raises ``BagDependencyError`` saying so.

``reader`` finds and decodes the messages (``codec``: TFMessage in ROS 2 CDR, through tf2py's
one CDR codec that the kernel decodes, and in ROS 1's serialisation, decoded here, into a
``RowBuilder`` whose ``build()`` is one ``Transforms``), ``writer`` writes MCAP, and
``robot`` makes a bag of joint states whole: with ``load(..., robot=...)`` the bag's
``/joint_states`` become the robot's transforms through a ``RobotModel`` (a URDF or xacro
path, or the bag's own ``/robot_description``).

    buffer = tf2py.bag.load("robot.mcap")
    buffer.lookup_transform("odom", "base_link", stamp)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TypeVar, overload

from .errors import INSTALL_HINT, BagDependencyError, BagError, BagWarning
from .reader import TRANSFORM_TYPES, BagTransforms, bag_name, read_transforms
from .robot import RobotArgument
from .writer import BagWriter

if TYPE_CHECKING:
    from ..buffer.buffer import Buffer
    from ..buffer.core import BufferCore

_B = TypeVar("_B", bound="BufferCore")

__all__ = [
    "load",
    "read_transforms",
    "BagTransforms",
    "BagWriter",
    "BagError",
    "BagDependencyError",
    "BagWarning",
    "TRANSFORM_TYPES",
    "INSTALL_HINT",
]

# Extra room on top of the recording's span, so nothing at its edges counts as old data.
_CACHE_MARGIN_S = 1.0
_MIN_CACHE_S = 10.0


@overload
def load(
    path: str | os.PathLike[str],
    buffer: None = None,
    cache_time: float | None = None,
    tf_topic: str = "/tf",
    tf_static_topic: str = "/tf_static",
    *,
    strict: bool = True,
    robot: RobotArgument = None,
) -> Buffer: ...


@overload
def load(
    path: str | os.PathLike[str],
    buffer: _B,
    cache_time: None = None,
    tf_topic: str = "/tf",
    tf_static_topic: str = "/tf_static",
    *,
    strict: bool = True,
    robot: RobotArgument = None,
) -> _B: ...


def load(
    path: str | os.PathLike[str],
    buffer: BufferCore | None = None,
    cache_time: float | None = None,
    tf_topic: str = "/tf",
    tf_static_topic: str = "/tf_static",
    *,
    strict: bool = True,
    robot: RobotArgument = None,
) -> BufferCore:
    """Load every transform of a bag's ``tf_topic`` and ``tf_static_topic`` into a Buffer.

    ``path``: an MCAP file, a ROS 2 bag folder (sqlite3 or MCAP storage) or a ROS 1 ``.bag``.
    Without ``buffer`` a new ``Buffer`` is made whose cache holds the whole recording (its
    span of stamps plus a second, at least 10 s), or ``cache_time`` seconds if given. With
    ``buffer`` (a ``Buffer`` or ``BufferCore``) the transforms are added to it and
    ``cache_time`` must be ``None``. Authority: ``bag:<file name>``. Returns the buffer.

    Raises ``BagError`` (one line) for a file that cannot be read in full (see
    ``read_transforms``; ``strict=False`` loads the readable part with a ``BagWarning``);
    nothing is inserted then. Invalid transforms, or transforms older than the cache
    window of a given ``buffer``, are skipped with a ``BagWarning`` giving the counts.

    ``robot``: a ``RobotModel``, a URDF or xacro path, or ``True`` for the bag's own latest
    ``/robot_description``: the bag's ``/joint_states`` then also become the robot's
    transforms, as robot_state_publisher would have sent them (see ``tf2py.bag.robot``);
    ``BagError`` when the bag has no joint states (or, with ``True``, no description).
    """
    if buffer is not None and cache_time is not None:
        raise ValueError("give either buffer or cache_time, not both (the buffer has its own)")
    if robot is None:
        data = read_transforms(path, tf_topic, tf_static_topic, strict=strict)
    else:
        from .robot import read_with_robot

        data = read_with_robot(path, robot, tf_topic, tf_static_topic, strict=strict)
    if buffer is None:
        from ..buffer.buffer import Buffer

        if cache_time is None:
            cache_time = max(_MIN_CACHE_S, data.recording_span_s() + _CACHE_MARGIN_S)
        buffer = Buffer(cache_time=cache_time)
    data.insert_into(buffer, authority=f"bag:{bag_name(path)}")
    return buffer
