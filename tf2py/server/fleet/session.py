"""Opening the fleet's Zenoh session from a ``zenoh://`` address.

Until tf2py.transport.zenoh's own address parser is merged, this reads what the fleet needs of
API.md's ``zenoh://`` form: ``zenoh://`` (a peer, Zenoh's own discovery) or
``zenoh://PROTO/HOST:PORT`` (connect to that router or peer), with ``domain=N``,
``mode=peer|client`` and ``config=PATH``; anything else is a one-line ValueError naming it.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import parse_qsl

__all__ = ["ZenohAddress", "parse_zenoh_address", "open_session", "is_zenoh_address"]

_LOCATOR = re.compile(r"^(tcp|udp|tls|quic)/(\[[^\]]+\]|[^:/\[\]]+):(\d+)$")
_PARAMETERS = {"domain", "mode", "config", "namespace", "keys"}


def is_zenoh_address(address: object) -> bool:
    return isinstance(address, str) and address.startswith("zenoh://")


class ZenohAddress:
    __slots__ = ("address", "locators", "domain", "mode", "config", "namespace", "keys")

    def __init__(self, address: str, locators: list[str], domain: int, mode: str | None,
                 config: str | None, namespace: str, keys: str | None):
        self.address = address
        self.locators = locators
        self.domain = domain
        self.mode = mode
        self.config = config
        self.namespace = namespace
        self.keys = keys


def parse_zenoh_address(address: str) -> ZenohAddress:
    """The parts of a ``zenoh://`` address; ValueError (one line) naming what is wrong."""
    if not is_zenoh_address(address):
        raise ValueError(f"invalid address {address!r}: expected zenoh://[PROTO/HOST:PORT]")
    rest = address[len("zenoh://"):]
    path, _, query = rest.partition("?")
    locators = []
    for part in filter(None, path.split(",")):
        m = _LOCATOR.match(part)
        if not m:
            raise ValueError(f"invalid address {address!r}: {part!r} is not a Zenoh locator "
                             "such as tcp/127.0.0.1:7447")
        if not 0 <= int(m.group(3)) <= 65535:
            raise ValueError(f"invalid address {address!r}: port {m.group(3)} is not 0..65535")
        locators.append(part)
    params: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name not in _PARAMETERS:
            raise ValueError(f"invalid address {address!r}: unknown parameter {name!r}")
        params[name] = value
    domain_text = params.get("domain", os.environ.get("ROS_DOMAIN_ID", "0") or "0")
    if not domain_text.isdigit() or int(domain_text) > 232:
        raise ValueError(f"invalid address {address!r}: domain must be 0..232, "
                         f"got {domain_text!r}")
    mode = params.get("mode")
    if mode not in (None, "peer", "client"):
        raise ValueError(f"invalid address {address!r}: mode must be peer or client")
    config = params.get("config")
    if config is not None and not os.path.isfile(config):
        raise ValueError(f"invalid address {address!r}: config file {config!r} not found")
    return ZenohAddress(address, locators, int(domain_text), mode, config,
                        params.get("namespace", "").strip("/"), params.get("keys"))


def zenoh_config(parsed: ZenohAddress, listen: list[str] | None = None) -> Any:
    """A zenoh.Config for the address: the config file first, then mode and locators."""
    import json

    import zenoh

    config = zenoh.Config.from_file(parsed.config) if parsed.config else zenoh.Config()
    if parsed.mode or parsed.locators:
        config.insert_json5("mode", json.dumps(parsed.mode or ("client" if parsed.locators
                                                               else "peer")))
    if parsed.locators:
        config.insert_json5("connect/endpoints", json.dumps(parsed.locators))
    if listen is not None:
        config.insert_json5("listen/endpoints", json.dumps(listen))
    return config


def open_session(address: str) -> tuple[Any, ZenohAddress]:
    """An open zenoh.Session for ``address`` and the parsed address. ImportError (one line)
    without the zenoh extra; ValueError for a bad address."""
    parsed = parse_zenoh_address(address)
    try:
        import zenoh
    except ImportError:
        raise ImportError("zenoh:// addresses need the zenoh extra: pip install 'tf2py[zenoh]'"
                          ) from None
    return zenoh.open(zenoh_config(parsed)), parsed
