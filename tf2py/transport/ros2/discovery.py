"""ROS 2 addresses and discovery settings, as a ROS 2 user sets them.

``ros2://`` (domain ``$ROS_DOMAIN_ID``, else 0) or ``ros2://DOMAIN_ID``. Discovery follows
ROS 2 Jazzy's variables, translated to a Cyclone DDS configuration the way rmw_cyclonedds does:

- ``ROS_AUTOMATIC_DISCOVERY_RANGE``: ``SUBNET`` (the default: multicast), ``LOCALHOST`` (this
  machine only: no multicast, the loopback interface, localhost as a peer), ``OFF`` (nothing is
  discovered but the static peers... which OFF also ignores, as in rmw_cyclonedds),
  ``SYSTEM_DEFAULT`` (Cyclone's own defaults, ``CYCLONEDDS_URI`` included).
- ``ROS_STATIC_PEERS``: ``;``-separated hosts added as unicast peers (SUBNET and LOCALHOST).
- ``ROS_LOCALHOST_ONLY=1`` (deprecated in ROS 2, still honoured): LOCALHOST, when no range is
  set.

Pure: no DDS import, so the address check works without the ``ros2`` extra.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import NamedTuple
from xml.sax.saxutils import quoteattr

__all__ = [
    "SCHEME",
    "is_ros2_address",
    "parse_ros2_address",
    "DiscoverySettings",
    "discovery_settings",
    "cyclone_config",
    "node_name",
]

SCHEME = "ros2://"
#: DDS domain ids a ROS 2 node may use (ports 7400 + 250 * domain must stay below 65536).
MAX_DOMAIN_ID = 232
_RANGES = ("SUBNET", "LOCALHOST", "OFF", "SYSTEM_DEFAULT")
_DOMAIN = re.compile(r"^ros2://(?P<domain>\d*)/?$")


def is_ros2_address(address: object) -> bool:
    """Whether ``address`` (a string) names a ROS 2 graph rather than a tf2py core."""
    return isinstance(address, str) and address.strip().lower().startswith(SCHEME)


def _domain_id(text: str, where: str) -> int:
    try:
        domain = int(text)
    except ValueError:
        raise ValueError(f"{where} {text!r} is not a DDS domain id (0..{MAX_DOMAIN_ID})") from None
    if not 0 <= domain <= MAX_DOMAIN_ID:
        raise ValueError(f"{where} {domain} is out of range: a DDS domain id is 0..{MAX_DOMAIN_ID}")
    return domain


def parse_ros2_address(address: str, environ: Mapping[str, str] | None = None) -> int:
    """The DDS domain id of ``ros2://`` / ``ros2://DOMAIN_ID``; ValueError naming the address
    otherwise."""
    environ = os.environ if environ is None else environ
    m = _DOMAIN.match(address.strip().lower())
    if not m:
        raise ValueError(f"invalid address {address!r}: expected ros2:// or ros2://DOMAIN_ID, "
                         "e.g. ros2://42")
    if m.group("domain"):
        return _domain_id(m.group("domain"), f"invalid address {address!r}: domain")
    text = environ.get("ROS_DOMAIN_ID", "").strip()
    return _domain_id(text, "ROS_DOMAIN_ID") if text else 0


class DiscoverySettings(NamedTuple):
    range: str  # one of SUBNET, LOCALHOST, OFF, SYSTEM_DEFAULT
    static_peers: tuple[str, ...]


def discovery_settings(environ: Mapping[str, str] | None = None) -> DiscoverySettings:
    """What the ROS 2 variables of ``environ`` (default: os.environ) ask for."""
    environ = os.environ if environ is None else environ
    chosen = environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "").strip().upper()
    if chosen and chosen not in _RANGES:
        raise ValueError(f"ROS_AUTOMATIC_DISCOVERY_RANGE={chosen!r} is not one of "
                         f"{', '.join(_RANGES)}")
    if not chosen:
        chosen = "LOCALHOST" if environ.get("ROS_LOCALHOST_ONLY", "").strip() == "1" else "SUBNET"
    peers = tuple(p.strip() for p in environ.get("ROS_STATIC_PEERS", "").split(";") if p.strip())
    return DiscoverySettings(chosen, peers)


def cyclone_config(settings: DiscoverySettings, pid: int | None = None) -> str | None:
    """The Cyclone DDS configuration XML for ``settings`` (None: Cyclone's defaults)."""
    pid = os.getpid() if pid is None else pid
    if settings.range == "SYSTEM_DEFAULT":
        return None
    general, discovery, peers = [], [], []
    if settings.range == "SUBNET":
        peers = list(settings.static_peers)
        discovery.append("<ParticipantIndex>auto</ParticipantIndex>"
                         "<MaxAutoParticipantIndex>32</MaxAutoParticipantIndex>")
    elif settings.range == "LOCALHOST":
        # The loopback interface too (rmw_cyclonedds leaves it to Cyclone, which picks the
        # first real interface: peers that only listen on loopback, as Fast DDS's LOCALHOST
        # does, then never hear us).
        general.append('<Interfaces><NetworkInterface address="127.0.0.1"/></Interfaces>'
                       "<AllowMulticast>false</AllowMulticast>")
        discovery.append("<ParticipantIndex>auto</ParticipantIndex>"
                         "<MaxAutoParticipantIndex>32</MaxAutoParticipantIndex>")
        peers = ["localhost", *settings.static_peers]
    else:  # OFF: no multicast, and a domain tag no one else has
        general.append("<AllowMulticast>false</AllowMulticast>")
        discovery.append("<ParticipantIndex>none</ParticipantIndex>"
                         f"<Tag>ros_discovery_off_{pid}</Tag>")
    if not general and not discovery and not peers:
        return None
    xml = "<CycloneDDS><Domain>"
    if general:
        xml += "<General>" + "".join(general) + "</General>"
    xml += "<Discovery>" + "".join(discovery)
    if peers:
        xml += "<Peers>" + "".join(f"<Peer address={quoteattr(p)}/>" for p in peers) + "</Peers>"
    xml += "</Discovery></Domain></CycloneDDS>"
    return xml


def node_name(environ: Mapping[str, str] | None = None) -> str:
    """This process's ROS 2 node name: ``$TF2PY_ROS2_NODE``, else ``tf2py_<program>_<pid>``
    (letters, digits and underscores, as ROS 2 requires)."""
    environ = os.environ if environ is None else environ
    name = environ.get("TF2PY_ROS2_NODE", "").strip()
    if not name:
        program = os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else "python")
        program = os.path.splitext(program)[0]
        name = "tf2py" if program in ("tf2py", "", "-c") else f"tf2py_{program}"
        name = f"{name}_{os.getpid()}"
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if name[0].isdigit():
        name = "_" + name
    return name
