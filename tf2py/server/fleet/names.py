"""Which robot a Zenoh key expression or liveliness token belongs to, and its frame ids.

A ROS 2 node on rmw_zenoh publishes ``/tf`` of namespace ``/robot7`` on the key expression
``<domain>/robot7/tf/tf2_msgs::msg::dds_::TFMessage_/RIHS01_<hash>`` (the fully qualified topic
name without its leading slash between the domain and the type), and announces every
publisher with a liveliness token::

    @ros2_lv/<domain>/<session id>/<node id>/<entity id>/<entity kind>/<enclave>/<namespace>/
    <node name>/<topic>/<type>/<hash>/<qos>

where names are mangled: every ``/`` becomes ``%`` (so the root namespace is ``%`` and
``/robot7`` is ``%robot7``). A robot is a namespace; the root namespace is the robot ``""``.

In the fleet's one Buffer a robot's frames carry its namespace: ``robot7/base_link``; the root
namespace keeps plain names.
"""

from __future__ import annotations

import fnmatch
import re

__all__ = [
    "TF_TYPE",
    "TF_TOPICS",
    "LIVELINESS_PREFIX",
    "robot_of_data_key",
    "robot_of_token",
    "Token",
    "prefix_frame",
    "robot_label",
    "RobotFilter",
]

#: The DDS type name of tf2_msgs/msg/TFMessage as rmw_zenoh writes it in key expressions.
TF_TYPE = "tf2_msgs::msg::dds_::TFMessage_"
TF_TOPICS = ("tf", "tf_static")
LIVELINESS_PREFIX = "@ros2_lv"
_PUBLISHER = "MP"
_SLASH = "%"
# A namespace chunk as ROS 2 allows it (letters, digits, underscores; not starting with a
# digit); anything else on the key is not a robot we can name in frame ids.
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _namespace_of(chunks: list[str]) -> str | None:
    for chunk in chunks:
        if not _NAME.match(chunk):
            return None
    return "/".join(chunks)


def robot_of_data_key(key: str) -> tuple[str, str, str] | None:
    """``(robot, topic, type)`` of a /tf or /tf_static sample's key expression: topic ``"tf"``
    or ``"tf_static"``, the robot the namespace without slashes at its ends (``"robot7"``,
    ``"site/robot7"``, ``""`` for the root), type the DDS type name on the key (``TF_TYPE`` for
    ROS 2's). None for a key that is not a /tf topic of a namespace we can name frames with."""
    chunks = key.split("/")
    if len(chunks) < 4 or chunks[-3] not in TF_TOPICS or not chunks[0].isdigit():
        return None
    robot = _namespace_of(chunks[1:-3])
    if robot is None:
        return None
    return robot, chunks[-3], chunks[-2]


class Token:
    """A parsed rmw_zenoh liveliness token: the entity's kind, its node's namespace (as a
    robot name), node name and, for publishers and subscriptions, the topic."""

    __slots__ = ("domain", "kind", "robot", "node", "topic", "entity")

    def __init__(self, domain: int, kind: str, robot: str, node: str, topic: str, entity: str):
        self.domain = domain
        self.kind = kind
        self.robot = robot
        self.node = node
        self.topic = topic
        self.entity = entity  # session/node/entity ids: what identifies this token

    def __repr__(self) -> str:
        return (f"Token(domain={self.domain}, kind={self.kind!r}, robot={self.robot!r}, "
                f"node={self.node!r}, topic={self.topic!r})")


def _demangle(chunk: str) -> str:
    return chunk.replace(_SLASH, "/")


def robot_of_token(key: str) -> Token | None:
    """The Token of an rmw_zenoh liveliness key expression, or None if it is not one."""
    chunks = key.split("/")
    if len(chunks) < 9 or chunks[0] != LIVELINESS_PREFIX or not chunks[1].isdigit():
        return None
    kind = chunks[5]
    namespace = _demangle(chunks[7]).strip("/")
    robot = _namespace_of(namespace.split("/")) if namespace else ""
    if robot is None:
        return None
    topic = _demangle(chunks[9]) if len(chunks) > 9 else ""
    return Token(int(chunks[1]), kind, robot, _demangle(chunks[8]), topic,
                 "/".join(chunks[2:5]))


def is_tf_publisher(token: Token) -> bool:
    """Whether the token announces a publisher of its namespace's /tf or /tf_static."""
    if token.kind != _PUBLISHER:
        return False
    base = "/" + token.robot if token.robot else ""
    return token.topic in (f"{base}/tf", f"{base}/tf_static")


def prefix_frame(robot: str, frame_id: str) -> str:
    """The fleet's name for ``frame_id`` of ``robot``: ``robot7/base_link``; the root namespace
    keeps the plain name. A leading ``/`` on the frame id is dropped first, as tf2 does."""
    if frame_id.startswith("/"):
        frame_id = frame_id[1:]
    return f"{robot}/{frame_id}" if robot else frame_id


def robot_label(robot: str) -> str:
    """How a robot is named in messages: its namespace with the leading slash."""
    return "/" + robot


_PLAIN = re.compile(r"^[A-Za-z0-9_]+$")  # a namespace chunk with no wildcard in it


class RobotFilter:
    """``--robots GLOB``: which namespaces the fleet keeps (fnmatch, on the name without the
    leading slash, e.g. ``robot*``; a leading slash in the pattern is ignored). None keeps
    every robot."""

    def __init__(self, pattern: str | None = None):
        if pattern is not None:
            pattern = pattern.strip()
            if not pattern:
                raise ValueError("--robots needs a pattern such as 'robot*'")
            pattern = pattern.lstrip("/")
        self.pattern = pattern
        self._regex = re.compile(fnmatch.translate(pattern)) if pattern else None
        self._seen: dict[str, bool] = {}

    def key_chunks(self) -> str:
        """The namespace part of a Zenoh key expression that selects at least the robots
        the pattern keeps, so the router sends nothing else: ``**`` (every namespace),
        ``robot7`` (a plain name) or ``robot$*/**`` (a plain prefix then ``*``, which fnmatch
        lets span nested namespaces too); any other pattern hears all and filters."""
        pattern = self.pattern
        if pattern is None:
            return "**"
        if _PLAIN.match(pattern):
            return pattern
        if pattern.endswith("*") and _PLAIN.match(pattern[:-1]):
            return f"{pattern[:-1]}$*/**"
        return "**"

    def __call__(self, robot: str) -> bool:
        if self._regex is None:
            return True
        known = self._seen.get(robot)
        if known is None:
            known = self._regex.match(robot) is not None
            if len(self._seen) < 100_000:
                self._seen[robot] = known
        return known
