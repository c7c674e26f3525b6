"""rmw_zenoh's wire for ``/tf`` and ``/tf_static``, byte for byte (see docs/protocol.md,
"Zenoh"): key expressions, attachments, liveliness tokens and the QoS text in them.

Public: tf2py's fleet service builds on these. Pure Python (``xxhash`` for the GID, as
rmw_zenoh hashes with XXH3); nothing here opens a session.

- A topic's data travels on ``<domain>/<fully qualified name without its leading
  slash>/<DDS type name>/<type hash>``, e.g.
  ``0/robot7/tf/tf2_msgs::msg::dds_::TFMessage_/RIHS01_e369...``; the payload is the CDR of
  the message (``tf2py.transport.ros2.cdr``), encapsulation header included.
- Every sample carries an attachment of 33 bytes: the publisher's sequence number (int64
  little-endian, from 1), the source timestamp (int64 little-endian, ns since the epoch), then
  the publisher GID as Zenoh's serializer writes a 16-byte array: its length as a LEB128
  varint (one byte, 16) and the 16 bytes.
- Each node and each publisher or subscription declares a liveliness token under
  ``@ros2_lv/<domain>/...`` (``liveliness_keyexpr``); a publisher's GID is the XXH3-128 hash of
  its token's key expression (low 64 bits first, each little-endian).
"""

from __future__ import annotations

import re
import struct
from typing import NamedTuple

from ..ros2.discovery import node_name

__all__ = [
    "TYPE_NAME",
    "TYPE_HASH",
    "ADMIN_SPACE",
    "ENTITY_NODE",
    "ENTITY_PUBLISHER",
    "ENTITY_SUBSCRIPTION",
    "QOS_TF_PUBLISHER",
    "QOS_TF_SUBSCRIPTION",
    "QOS_TF_STATIC_PUBLISHER",
    "QOS_TF_STATIC_SUBSCRIPTION",
    "ATTACHMENT_SIZE",
    "RELIABLE",
    "BEST_EFFORT",
    "TRANSIENT_LOCAL",
    "VOLATILE",
    "KEEP_LAST",
    "KEEP_ALL",
    "WireError",
    "MAX_NAMESPACE_LENGTH",
    "Attachment",
    "Entity",
    "TopicKey",
    "topic_name",
    "data_keyexpr",
    "topic_keyexpr",
    "all_namespaces_keyexpr",
    "parse_topic_keyexpr",
    "qos_keyexpr",
    "mangle",
    "demangle",
    "liveliness_keyexpr",
    "liveliness_domain_keyexpr",
    "parse_liveliness_keyexpr",
    "gid_of",
    "encode_attachment",
    "decode_attachment",
    "node_name",
]

#: The DDS name of tf2_msgs/msg/TFMessage, which rmw_zenoh puts in key expressions.
TYPE_NAME = "tf2_msgs::msg::dds_::TFMessage_"
#: REP-2011's type hash of tf2_msgs/msg/TFMessage (the same in Jazzy and Kilted: the
#: message and the types it holds have not changed).
TYPE_HASH = "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"

ADMIN_SPACE = "@ros2_lv"
ENTITY_NODE = "NN"
ENTITY_PUBLISHER = "MP"
ENTITY_SUBSCRIPTION = "MS"
_ENTITY_KINDS = (ENTITY_NODE, ENTITY_PUBLISHER, ENTITY_SUBSCRIPTION, "SS", "SC")

# rmw's QoS enumerations (rmw/types.h) and rmw_zenoh's defaults (qos.cpp): a value equal to
# the default is left out of the text.
RELIABLE, BEST_EFFORT = 1, 2
TRANSIENT_LOCAL, VOLATILE = 1, 2
KEEP_LAST, KEEP_ALL = 1, 2
_DEFAULT_RELIABILITY = RELIABLE
_DEFAULT_DURABILITY = VOLATILE
_DEFAULT_HISTORY = KEEP_LAST
_DEFAULT_DEPTH = 42


def qos_keyexpr(reliability: int = RELIABLE, durability: int = VOLATILE,
                history: int = KEEP_LAST, depth: int = _DEFAULT_DEPTH) -> str:
    """The QoS part of a liveliness token, as rmw_zenoh's ``qos_to_keyexpr`` writes it:
    ``reliability:durability:history,depth:deadline s,ns:lifespan s,ns:liveliness,s,ns``,
    each value left empty when it is rmw_zenoh's default (deadline, lifespan and liveliness
    are always the defaults here: infinite, automatic)."""

    def part(value: int, default: int) -> str:
        return "" if value == default else str(value)

    return (f"{part(reliability, _DEFAULT_RELIABILITY)}:"
            f"{part(durability, _DEFAULT_DURABILITY)}:"
            f"{part(history, _DEFAULT_HISTORY)},{part(depth, _DEFAULT_DEPTH)}:"
            ",:,:,,")


#: tf2_ros's QoS (Jazzy/Kilted): /tf reliable, volatile, keep last 100 on both sides;
#: /tf_static transient-local, keep last 1 for the broadcaster, 100 for the listener.
QOS_TF_PUBLISHER = qos_keyexpr(depth=100)
QOS_TF_SUBSCRIPTION = qos_keyexpr(depth=100)
QOS_TF_STATIC_PUBLISHER = qos_keyexpr(durability=TRANSIENT_LOCAL, depth=1)
QOS_TF_STATIC_SUBSCRIPTION = qos_keyexpr(durability=TRANSIENT_LOCAL, depth=100)

_ATTACHMENT = struct.Struct("<qqB16s")
ATTACHMENT_SIZE = _ATTACHMENT.size  # 33
_GID_SIZE = 16


class WireError(ValueError):
    """Bytes or a key expression that are not rmw_zenoh's; ``cause`` names the kind for drop
    counters (``"attachment"``, ``"key"``, ``"token"``)."""

    def __init__(self, message: str, cause: str):
        super().__init__(message)
        self.cause = cause


class Attachment(NamedTuple):
    """What rmw_zenoh attaches to every sample."""

    sequence_number: int
    source_timestamp_ns: int
    gid: bytes


class TopicKey(NamedTuple):
    """A /tf or /tf_static data key expression, parsed: the domain, the namespace (``/`` or
    ``/robot7``) and whether it is /tf_static."""

    domain: int
    namespace: str
    is_static: bool


class Entity(NamedTuple):
    """A parsed ``@ros2_lv`` liveliness token. Names are demangled (``/robot7``); topic
    fields are empty for a node."""

    domain: int
    zid: str
    node_id: str
    entity_id: str
    kind: str
    enclave: str
    namespace: str
    node_name: str
    topic_name: str
    type_name: str
    type_hash: str
    qos: str


def topic_name(namespace: str, topic: str) -> str:
    """The fully qualified name of ``topic`` (``tf`` or ``tf_static``) in ``namespace``:
    ``/tf``, ``/robot7/tf``."""
    return ("" if namespace == "/" else namespace.rstrip("/")) + "/" + topic


def data_keyexpr(domain: int, name: str, type_name: str, type_hash: str) -> str:
    """The key expression of topic ``name`` (fully qualified) of a type, as rmw_zenoh's
    ``TopicInfo`` builds it: ``<domain>/<name without its outer slashes>/<type>/<hash>``."""
    return f"{domain}/{name.strip('/')}/{type_name}/{type_hash}"


def topic_keyexpr(domain: int, namespace: str, is_static: bool) -> str:
    """The key expression of /tf (or /tf_static) in ``namespace`` on ``domain``."""
    name = topic_name(namespace, "tf_static" if is_static else "tf")
    return data_keyexpr(domain, name, TYPE_NAME, TYPE_HASH)


def all_namespaces_keyexpr(domain: int, is_static: bool) -> str:
    """A key expression matching /tf (or /tf_static) of every namespace on ``domain``, the
    root namespace included (``**`` matches zero or more chunks)."""
    topic = "tf_static" if is_static else "tf"
    return f"{domain}/**/{topic}/{TYPE_NAME}/{TYPE_HASH}"


#: Longest namespace (in characters) a reader keeps: ROS 2's limit on a topic name (255), so no
#: ROS 2 robot is refused. Frame ids have the ZeroMQ bus's limit (wire_common.MAX_FRAME_ID_LENGTH).
MAX_NAMESPACE_LENGTH = 255

_TOPIC_KEY = re.compile(
    r"^(?P<domain>\d+)/(?:(?P<namespace>[^@*$#?]+)/)?(?P<topic>tf|tf_static)/"
    + re.escape(TYPE_NAME) + "/" + re.escape(TYPE_HASH) + "$")


def parse_topic_keyexpr(keyexpr: str) -> TopicKey:
    """The domain, namespace and topic of a /tf or /tf_static data key expression; WireError
    (cause ``"key"``) for anything else (another type, another hash, another topic)."""
    m = _TOPIC_KEY.match(str(keyexpr))
    if not m:
        raise WireError(f"key expression {str(keyexpr)!r} is not /tf or /tf_static of "
                        f"{TYPE_NAME}/{TYPE_HASH}", "key")
    namespace = "/" + m.group("namespace") if m.group("namespace") else "/"
    return TopicKey(int(m.group("domain")), namespace, m.group("topic") == "tf_static")


def mangle(name: str) -> str:
    """A name as a single key-expression chunk: every ``/`` becomes ``%``."""
    return name.replace("/", "%")


def demangle(chunk: str) -> str:
    """The name a mangled chunk stands for: every ``%`` becomes ``/``."""
    return chunk.replace("%", "/")


def liveliness_keyexpr(domain: int, zid: str, node_id: int, entity_id: int, kind: str,
                       namespace: str, node: str, topic: str | None = None,
                       qos: str | None = None, enclave: str = "/", *,
                       type_name: str = TYPE_NAME, type_hash: str = TYPE_HASH) -> str:
    """The liveliness token of a node (``kind`` ``NN``, no topic) or of a publisher (``MP``)
    or subscription (``MS``) on ``topic`` (a fully qualified name) of ``type_name`` (default
    TFMessage), as rmw_zenoh's ``liveliness::Entity`` writes it."""
    if kind not in _ENTITY_KINDS:
        raise ValueError(f"unknown entity kind {kind!r}")
    parts = [ADMIN_SPACE, str(domain), zid, str(node_id), str(entity_id), kind,
             mangle(enclave), mangle(namespace), mangle(node)]
    if kind != ENTITY_NODE:
        if topic is None or qos is None:
            raise ValueError("a publisher's or subscription's token needs its topic and QoS")
        parts += [mangle(topic), mangle(type_name), mangle(type_hash), qos]
    return "/".join(parts)


def liveliness_domain_keyexpr(domain: int) -> str:
    """What rmw_zenoh's graph cache subscribes to: every token on ``domain``."""
    return f"{ADMIN_SPACE}/{domain}/**"


def parse_liveliness_keyexpr(keyexpr: str) -> Entity:
    """A liveliness token's fields; WireError (cause ``"token"``) when it is not one of
    rmw_zenoh's (as its ``Entity::make`` refuses: too few parts, empty parts, another admin
    space, an unknown kind, a topic entity without its four topic parts)."""
    text = str(keyexpr)
    parts = text.split("/")
    if len(parts) < 9 or any(not p for p in parts) or parts[0] != ADMIN_SPACE:
        raise WireError(f"{text!r} is not an rmw_zenoh liveliness token", "token")
    kind = parts[5]
    if kind not in _ENTITY_KINDS or not parts[1].isdigit():
        raise WireError(f"{text!r}: unknown entity kind or domain", "token")
    topic = ("", "", "", "")
    if kind != ENTITY_NODE:
        if len(parts) < 13:
            raise WireError(f"{text!r}: a {kind} token without its topic parts", "token")
        topic = (demangle(parts[9]), demangle(parts[10]), demangle(parts[11]), parts[12])
    return Entity(int(parts[1]), parts[2], parts[3], parts[4], kind, demangle(parts[6]),
                  demangle(parts[7]), demangle(parts[8]), *topic)


def gid_of(token_keyexpr: str) -> bytes:
    """The 16-byte GID rmw_zenoh gives the entity of this liveliness token: XXH3-128 of the
    key expression, its low 64 bits then its high 64 bits, each little-endian."""
    import xxhash

    digest = xxhash.xxh3_128_intdigest(token_keyexpr.encode())
    return struct.pack("<QQ", digest & 0xFFFF_FFFF_FFFF_FFFF, digest >> 64)


def encode_attachment(sequence_number: int, source_timestamp_ns: int, gid: bytes) -> bytes:
    """The 33-byte attachment of a sample (see the module docstring)."""
    if len(gid) != _GID_SIZE:
        raise ValueError(f"a GID is {_GID_SIZE} bytes, got {len(gid)}")
    return _ATTACHMENT.pack(sequence_number, source_timestamp_ns, _GID_SIZE, gid)


def decode_attachment(data: bytes | bytearray | memoryview | None) -> Attachment:
    """The fields of a sample's attachment; WireError (cause ``"attachment"``) if it is
    missing or not rmw_zenoh's 33 bytes (rmw_zenoh drops such samples too)."""
    if data is None:
        raise WireError("a sample without an attachment", "attachment")
    if len(data) != ATTACHMENT_SIZE:
        raise WireError(f"an attachment of {len(data)} bytes (expected {ATTACHMENT_SIZE})",
                        "attachment")
    sequence_number, stamp, length, gid = _ATTACHMENT.unpack(bytes(data))
    if length != _GID_SIZE:
        raise WireError(f"an attachment whose GID says {length} bytes", "attachment")
    return Attachment(sequence_number, stamp, gid)


