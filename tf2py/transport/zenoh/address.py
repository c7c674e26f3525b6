"""``zenoh://`` addresses: where a Zenoh session connects, and which ROS 2 names it uses.

::

    zenoh://                                   a peer, found and finding others by Zenoh's
                                               own discovery (scouting)
    zenoh://tcp/HOST:PORT                      connect to that router or peer (any Zenoh
    zenoh://tls/HOST:PORT  (udp/, quic/)       locator: tcp, udp, tls, quic)
    ...?namespace=/robot7&domain=3&mode=client&config=/etc/zenoh.json5

Query parameters: ``namespace`` (the ROS 2 namespace of ``/tf`` and ``/tf_static``, default
the root ``/``), ``domain`` (the ROS 2 domain id, default ``$ROS_DOMAIN_ID``, else 0),
``mode`` (``peer`` or ``client``; default: the config file's, else peer), ``config`` (a
Zenoh configuration file, applied first; the address's own settings go on top). Anything
else, a bad port, a missing file: ``ValueError`` with one line naming it.

Pure: no Zenoh import, so an address can be checked without the ``zenoh`` extra.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, quote

__all__ = [
    "SCHEME",
    "LOCATOR_PROTOCOLS",
    "MAX_DOMAIN_ID",
    "ZenohAddress",
    "is_zenoh_address",
    "parse_zenoh_address",
    "check_namespace",
]

SCHEME = "zenoh://"
#: The Zenoh link protocols an address may name.
LOCATOR_PROTOCOLS = ("tcp", "udp", "tls", "quic")
#: ROS 2's domain ids (as for ros2://: the DDS port arithmetic stops at 232; rmw_zenoh
#: puts the number in key expressions and follows ROS 2's range).
MAX_DOMAIN_ID = 232
MODES = ("peer", "client")
_PARAMETERS = ("namespace", "domain", "mode", "config")

_LOCATOR = re.compile(
    r"^(?P<protocol>[A-Za-z0-9]+)/(?P<host>\[[0-9A-Fa-f:.%a-zA-Z0-9]+\]|[^/:\[\]?#\s]+)"
    r":(?P<port>[^/:?#\s]*)$")
# ROS 2 name tokens: a letter or underscore, then letters, digits, underscores.
_TOKEN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class ZenohAddress:
    """A parsed ``zenoh://`` address.

    ``locator`` is the Zenoh locator to connect to (``"tcp/127.0.0.1:7447"``) or None (Zenoh's
    discovery); ``namespace`` the ROS 2 namespace (``"/"`` or ``"/robot7"``); ``domain`` the ROS
    2 domain id; ``mode`` ``"peer"``, ``"client"`` or None (not given: the config file's
    mode, else a peer); ``config`` the absolute path of a Zenoh configuration file or None."""

    locator: str | None
    namespace: str
    domain: int
    mode: str | None
    config: str | None

    @property
    def protocol(self) -> str | None:
        """The locator's link protocol (``"tcp"``, ``"tls"``, ...), None without a locator."""
        return None if self.locator is None else self.locator.split("/", 1)[0]

    def session_key(self) -> tuple[str | None, str | None, str | None]:
        """What decides the Zenoh session (not namespace and domain: one session serves
        every namespace and domain, as one rmw_zenoh context serves every node)."""
        return (self.locator, self.mode, self.config)

    def __str__(self) -> str:
        """The address in canonical form (every parameter that differs from its default)."""
        text = SCHEME + (self.locator or "")
        params = []
        if self.namespace != "/":
            params.append(f"namespace={quote(self.namespace, safe='/')}")
        params.append(f"domain={self.domain}")
        if self.mode is not None:
            params.append(f"mode={self.mode}")
        if self.config is not None:
            params.append(f"config={quote(self.config, safe='/')}")
        return text + "?" + "&".join(params)


def is_zenoh_address(address: object) -> bool:
    """Whether ``address`` (a string) names a Zenoh network."""
    return isinstance(address, str) and address.strip().lower().startswith(SCHEME)


def check_namespace(namespace: str, where: str = "namespace") -> str:
    """``namespace`` as ROS 2 writes it (``/`` or ``/a/b``: absolute, no trailing slash);
    a relative one (``robot7``) is made absolute. ValueError naming it otherwise."""
    text = namespace.strip()
    if text in ("", "/"):
        return "/"
    body = text[1:] if text.startswith("/") else text
    if body.endswith("/"):
        body = body[:-1]
    tokens = body.split("/")
    for token in tokens:
        if not _TOKEN.match(token):
            raise ValueError(
                f"{where} {namespace!r} is not a ROS 2 namespace: each part is a letter or _ "
                f"then letters, digits or _ (e.g. /robot7)")
    return "/" + "/".join(tokens)


def _domain(text: str, where: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise ValueError(
            f"{where} {text!r} is not a ROS 2 domain id (0..{MAX_DOMAIN_ID})") from None
    if not 0 <= value <= MAX_DOMAIN_ID:
        raise ValueError(
            f"{where} {value} is out of range: a ROS 2 domain id is 0..{MAX_DOMAIN_ID}")
    return value


def _locator(text: str, address: str) -> str:
    m = _LOCATOR.match(text)
    if not m:
        raise ValueError(
            f"invalid address {address!r}: expected zenoh:// or zenoh://PROTOCOL/HOST:PORT "
            f"(e.g. zenoh://tcp/127.0.0.1:7447)")
    protocol = m.group("protocol").lower()
    if protocol not in LOCATOR_PROTOCOLS:
        raise ValueError(
            f"invalid address {address!r}: locator protocol {protocol!r} is not one of "
            f"{', '.join(LOCATOR_PROTOCOLS)}")
    port_text = m.group("port")
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"invalid address {address!r}: port {port_text!r} is not 1..65535")
    return f"{protocol}/{m.group('host')}:{int(port_text)}"


def _parameters(query: str, address: str) -> dict[str, str]:
    params: dict[str, str] = {}
    if not query:
        return params
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise ValueError(
            f"invalid address {address!r}: the query {query!r} is not NAME=VALUE&...") from None
    for name, value in pairs:
        if name not in _PARAMETERS:
            raise ValueError(
                f"invalid address {address!r}: unknown parameter {name!r} (zenoh:// takes "
                f"{', '.join(_PARAMETERS)})")
        if name in params:
            raise ValueError(f"invalid address {address!r}: parameter {name!r} given twice")
        params[name] = value
    return params


def parse_zenoh_address(address: str,
                        environ: Mapping[str, str] | None = None) -> ZenohAddress:
    """The parts of a ``zenoh://`` address; ValueError with one line naming what is wrong.
    ``environ`` (default ``os.environ``) supplies ``ROS_DOMAIN_ID`` when no domain is given."""
    environ = os.environ if environ is None else environ
    text = address.strip()
    if not text.lower().startswith(SCHEME):
        raise ValueError(f"invalid address {address!r}: a Zenoh address starts with zenoh://")
    rest = text[len(SCHEME):]
    location, _, query = rest.partition("?")
    if "#" in query or "#" in location:
        raise ValueError(f"invalid address {address!r}: '#' has no meaning here")
    locator = _locator(location, address) if location else None
    params = _parameters(query, address)

    namespace = check_namespace(params["namespace"], f"invalid address {address!r}: namespace") \
        if "namespace" in params else "/"
    if "domain" in params:
        domain = _domain(params["domain"], f"invalid address {address!r}: domain")
    else:
        env = environ.get("ROS_DOMAIN_ID", "").strip()
        domain = _domain(env, "ROS_DOMAIN_ID") if env else 0
    mode = params["mode"].strip().lower() if "mode" in params else None
    if mode is not None and mode not in MODES:
        raise ValueError(f"invalid address {address!r}: mode {params['mode']!r} is not "
                         f"peer or client (a router is `tf2py router`)")
    config = None
    if "config" in params:
        path = Path(params["config"]).expanduser()
        if not params["config"]:
            raise ValueError(f"invalid address {address!r}: config= needs a file path")
        if not path.is_file():
            raise ValueError(
                f"invalid address {address!r}: config file {params['config']!r} does not exist")
        config = str(path.resolve())
    return ZenohAddress(locator, namespace, domain, mode, config)
