"""A Zenoh router in this process (what ``tf2py router`` runs), as ``rmw_zenohd`` is for ROS 2:
routers carry discovery and traffic between hosts; peers on one host find each other
through theirs.

Configured as rmw_zenohd's default (``DEFAULT_RMW_ZENOH_ROUTER_CONFIG.json5``): listen on
``tcp/[::]:7447``, no multicast scouting, gossip on, timestamping on; plus the admin space
(read only), from which the listening locators are read back (port 0 picks a free port).
With keys, every link is mutual TLS (``tls.tls_settings``) and must be ``tls/``/``quic/``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from typing import Any

from ..lifetime import CloseOnce, ClosingContext
from .address import LOCATOR_PROTOCOLS
from .session import import_zenoh, keys_folder

__all__ = ["DEFAULT_LISTEN", "Router", "check_locator"]

#: Where rmw_zenohd listens by default.
DEFAULT_LISTEN = "tcp/[::]:7447"

_LOCATOR = re.compile(r"^(?P<protocol>[A-Za-z0-9]+)/(?P<host>\[[^\]]+\]|[^/:\[\]\s]+)"
                      r":(?P<port>[^/:\s]*)$")


def check_locator(locator: str, what: str = "locator", allow_port_zero: bool = True) -> str:
    """``locator`` if it is ``PROTOCOL/HOST:PORT`` (tcp, udp, tls, quic), else ValueError
    with one line naming it."""
    m = _LOCATOR.match(locator.strip())
    if not m or m.group("protocol").lower() not in LOCATOR_PROTOCOLS:
        raise ValueError(f"invalid {what} {locator!r}: expected PROTOCOL/HOST:PORT with "
                         f"PROTOCOL one of {', '.join(LOCATOR_PROTOCOLS)} "
                         f"(e.g. tcp/0.0.0.0:7447)")
    port = m.group("port")
    low = 0 if allow_port_zero else 1
    if not port.isdigit() or not low <= int(port) <= 65535:
        raise ValueError(f"invalid {what} {locator!r}: port {port!r} is not {low}..65535")
    return f"{m.group('protocol').lower()}/{m.group('host')}:{int(port)}"


def _first_line(exc: BaseException) -> str:
    text = (str(exc).strip() or type(exc).__name__).splitlines()[0]
    return text.split(" at /")[0]


class Router(ClosingContext):
    """A Zenoh router listening on ``listen`` (locators), connected to the routers of
    ``connect`` (other sites, for fleets across networks), configured from ``config`` (a Zenoh
    file, applied first) and ``keys`` (a keys folder, else ``$TF2PY_KEYS``: mutual TLS).
    ``locators`` are the ones it listens on (ports resolved); ``close()``; context manager.
    ValueError (one line) for a bad locator, a config file Zenoh refuses, keys with plain
    links, or a port it cannot listen on."""

    def __init__(self, listen: Sequence[str] = (DEFAULT_LISTEN,), connect: Sequence[str] = (),
                 keys: Any = None, config: str | None = None):
        zenoh = import_zenoh()
        listen = [check_locator(x, "listen locator") for x in listen]
        connect = [check_locator(x, "connect locator", allow_port_zero=False)
                   for x in connect]
        folder = keys_folder(keys)
        if folder is not None:
            for locator in [*listen, *connect]:
                if not locator.startswith(("tls/", "quic/")):
                    raise ValueError(f"with keys, the router's links must be TLS: {locator} "
                                     f"is plain (use tls/HOST:PORT)")
        if config is not None:
            try:
                conf = zenoh.Config.from_file(config)
            except Exception as exc:
                raise ValueError(f"config file {config}: {_first_line(exc)}") from None
        else:
            conf = zenoh.Config()
        settings: dict[str, Any] = {
            "mode": "router",
            "listen/endpoints": listen,
            "connect/endpoints": connect,
            "scouting/multicast/enabled": False,
            "scouting/delay": 0,
            "timestamping/enabled": True,
            "adminspace/enabled": True,
            "adminspace/permissions/read": True,
            "adminspace/permissions/write": False,
        }
        if folder is not None:
            from .tls import tls_settings

            settings.update(tls_settings(folder))
        for key, value in settings.items():
            conf.insert_json5(key, json.dumps(value))
        try:
            self.session = zenoh.open(conf)
        except Exception as exc:
            raise ValueError(f"cannot run a Zenoh router on {', '.join(listen)}: "
                             f"{_first_line(exc)}") from None
        self.zid = str(self.session.zid())
        self.keys = folder
        self._lock = threading.Lock()
        self._closing = CloseOnce(self._lock)
        self.locators = self._read_locators() or listen

    def _read_locators(self) -> list[str]:
        try:
            for reply in self.session.get(f"@/{self.zid}/router", timeout=5.0):
                if reply.ok is not None:
                    info = json.loads(reply.ok.payload.to_bytes())
                    return [str(x) for x in info.get("locators", [])]
        except Exception:  # an admin space that does not answer: fall back to the request
            pass
        return []

    def addresses(self) -> list[str]:
        """The ``zenoh://`` addresses a peer or client may use for this router: one per
        locator, loopback ones first."""
        def loopback_first(locator: str) -> int:
            return 0 if ("127.0.0.1" in locator or "[::1]" in locator) else 1

        return ["zenoh://" + x for x in sorted(self.locators, key=loopback_first)]

    def close(self) -> None:
        if not self._closing.begin():
            return
        try:
            self.session.close()
        except Exception:  # the runtime is already going down
            pass
