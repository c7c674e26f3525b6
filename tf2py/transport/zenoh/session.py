"""Zenoh sessions for ``zenoh://`` addresses: the configuration an address asks for, and one
shared session per process and address (as rmw_zenoh maps one ROS 2 context to one session).

What an address sets, on top of its ``config=`` file (else Zenoh's defaults):

- ``mode``: the address's ``mode=``; without one, the file's mode, else ``peer``.
- A locator (``zenoh://tcp/HOST:PORT``): connect to it, and turn multicast scouting off
  (the locator says where the network is). A peer that reaches its router over loopback and
  whose file does not choose listen endpoints listens on that loopback address only (port
  0), as rmw_zenoh's sessions do (``tcp/localhost:0``).
- Peers must reach each other directly: a Zenoh router (1.9 on) relays between a peer and
  its clients and other routers, never between two peers (``peers_failover_brokering`` is
  gone), so a peer that listened nowhere would hear only clients.
- Timestamping on, as rmw_zenoh's configuration has it: the publication cache behind
  transient-local ``/tf_static`` needs timestamps.
- Keys (``keys=DIR``, else ``$TF2PY_KEYS``): TLS with mutual authentication from the folder's
  certificates (``tls.tls_settings``); every link must then be ``tls/`` or ``quic/``. A peer
  whose file does not choose listen endpoints listens with its identity on its locator's
  protocol, port 0: on that loopback address when the locator is on loopback, else on every
  address (``tls/[::]:0``, as Zenoh's default ``tcp/[::]:0``). Its router tells the other
  peers where (gossip), and they connect with the site's keys; anyone else fails the
  handshake.

A peer opens at once and joins its router or peers in the background when they come; a
client (``mode=client``) needs its router up: without it, ``ConnectionError`` (one line).
"""

from __future__ import annotations

import json
import os
import threading
from typing import TYPE_CHECKING, Any

from .address import ZenohAddress

if TYPE_CHECKING:
    import zenoh

__all__ = [
    "keys_folder",
    "session_config",
    "open_session",
    "SharedSession",
    "import_zenoh",
]

_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


class ExtraMissing(ImportError):
    """The ``zenoh`` extra is not installed; the message is the one line to show (commands
    print it alone, as for ``ros2://``)."""

    one_line = True


def import_zenoh() -> Any:
    """The ``zenoh`` module; ImportError with one line naming the extra when it is missing."""
    try:
        import zenoh
    except ImportError:
        raise ExtraMissing("zenoh:// needs the zenoh extra: pip install 'tf2py[zenoh]'"
                           ) from None
    return zenoh


def keys_folder(keys: Any = None) -> str | None:
    """The keys folder to use: ``keys`` (a folder, or a loaded keys object with ``.folder``),
    else ``$TF2PY_KEYS``, else None (plain links)."""
    folder = getattr(keys, "folder", None)
    if folder:
        return str(folder)
    if keys:
        return str(os.fspath(keys))
    return os.environ.get("TF2PY_KEYS") or None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _insert(config: zenoh.Config, key: str, value: Any) -> None:
    config.insert_json5(key, json.dumps(value))


def _get(config: zenoh.Config, key: str) -> Any:
    """A config entry as a Python value (Zenoh hands it out as JSON text)."""
    return json.loads(config.get_json(key))


def _endpoints(value: Any, mode: str) -> list[str]:
    """A config's endpoint list, which Zenoh allows per mode (``{peer: [...], ...}``)."""
    if isinstance(value, dict):
        value = value.get(mode, [])
    return [str(v) for v in value or []]


def _peer_listen(locator: str | None, keyed: bool) -> list[str] | None:
    """Where a peer listens when its file does not say (see the module docstring), None for
    Zenoh's default. ``locator`` is what it connects to."""
    if locator is None:
        # Keyed: nothing to listen beside (the TLS checks then ask for a locator).
        return [] if keyed else None
    protocol, rest = locator.split("/", 1)
    host = rest.rsplit(":", 1)[0]
    loopback = host in _LOOPBACK_HOSTS
    if keyed:
        return [f"{protocol}/{host if loopback else '[::]'}:0"]
    return [f"tcp/{host}:0"] if loopback else None


def session_config(address: ZenohAddress, keys: Any = None) -> zenoh.Config:
    """The Zenoh configuration for ``address`` (see the module docstring). ValueError (one
    line) for a config file Zenoh refuses, or keys with links that are not TLS."""
    zenoh = import_zenoh()
    default = zenoh.Config()
    if address.config is not None:
        try:
            config = zenoh.Config.from_file(address.config)
        except Exception as exc:  # zenoh.ZError, or a parse error from the json5 reader
            raise ValueError(
                f"config file {address.config}: {_first_line(exc)}") from None
    else:
        config = zenoh.Config()
    mode = address.mode or (str(_get(config, "mode") or "peer")
                            if address.config is not None else "peer")
    if mode not in ("peer", "client"):
        raise ValueError(f"config file {address.config}: mode {mode!r} is not peer or client "
                         f"(a router is `tf2py router`)")
    _insert(config, "mode", mode)
    listen_chosen = _get(config, "listen/endpoints") != _get(default, "listen/endpoints")
    if address.locator is not None:
        _insert(config, "connect/endpoints", [address.locator])
        _insert(config, "scouting/multicast/enabled", False)
        # Without multicast there is nothing to scout for: open without waiting for it.
        _insert(config, "scouting/delay", 0)
    # A peer opens at once and connects in the background (a router that is not up yet is
    # joined when it comes); a client cannot work without its router, so it fails at once.
    _insert(config, "connect/timeout_ms", -1 if mode == "peer" else 0)
    _insert(config, "connect/exit_on_failure", mode != "peer")
    _insert(config, "timestamping/enabled", True)
    folder = keys_folder(keys)
    if mode == "peer" and not listen_chosen:
        # Keyed, the link to listen beside may come from the file's connect endpoints.
        connect = _endpoints(_get(config, "connect/endpoints"), mode)
        locator = address.locator or (connect[0] if connect and folder else None)
        listen = _peer_listen(locator, folder is not None)
        if listen is not None:
            _insert(config, "listen/endpoints", listen)
    if folder is not None:
        from .tls import tls_settings

        for key, value in tls_settings(folder).items():
            _insert(config, key, value)
        _check_tls_links(config, mode, address)
    elif _get(config, "transport/link/tls/root_ca_certificate") is None:
        _check_plain_links(config, mode, address)
    return config  # type: ignore[no-any-return]


def _check_plain_links(config: zenoh.Config, mode: str, address: ZenohAddress) -> None:
    """Without keys (nor TLS settings in the config file), a ``tls/`` or ``quic/`` link could
    never be made: Zenoh would retry it in the background and the process would hear
    nothing, silently. Say so at once."""
    for kind in ("connect", "listen"):
        for endpoint in _endpoints(_get(config, f"{kind}/endpoints"), mode):
            if endpoint.startswith(("tls/", "quic/")):
                raise ValueError(
                    f"{address}: the {kind} endpoint {endpoint} needs keys: pass keys=DIR "
                    f"(--keys DIR, or $TF2PY_KEYS) with a folder made by `tf2py keygen DIR`")


def _check_tls_links(config: zenoh.Config, mode: str, address: ZenohAddress) -> None:
    for kind in ("connect", "listen"):
        for endpoint in _endpoints(_get(config, f"{kind}/endpoints"), mode):
            if not endpoint.startswith(("tls/", "quic/")):
                raise ValueError(
                    f"keys on {address}: {kind} endpoint {endpoint} is not TLS; with keys, "
                    f"use tls/ (or quic/) locators, e.g. zenoh://tls/127.0.0.1:7447")
    if _get(config, "scouting/multicast/enabled") is not False and address.locator is None:
        raise ValueError(
            f"keys on {address}: a keyed session needs a tls/ locator to connect to "
            f"(Zenoh's multicast discovery finds plain links), e.g. zenoh://tls/HOST:7447")


def open_session(address: ZenohAddress, keys: Any = None) -> zenoh.Session:
    """A new Zenoh session for ``address``. ValueError (one line) when Zenoh refuses the
    configuration (a bad certificate file, a locator it cannot listen on, ...)."""
    zenoh = import_zenoh()
    config = session_config(address, keys)
    try:
        return zenoh.open(config)  # type: ignore[no-any-return]
    except Exception as exc:
        reason = _first_line(exc).split("  at ")[0]
        if address.mode == "client" or "Unable to connect" in reason:
            raise ConnectionError(
                f"{address}: no Zenoh router answers at {address.locator} ({reason}); start "
                f"one (`tf2py router`) or use mode=peer") from None
        raise ValueError(f"cannot open a Zenoh session for {address}: {reason}") from None


_exit_hook_lock = threading.Lock()
_exit_hook = False


def _close_open_sessions() -> None:
    """Close every session still open (their users were never closed), so the threads that
    zenoh-python runs our callbacks on end, and the process can exit."""
    with SharedSession._lock:
        sessions = list(SharedSession._open.values())
        SharedSession._open.clear()
    for shared in sessions:
        try:
            shared.session.close()  # type: ignore[no-untyped-call]
        except Exception:  # its runtime is already gone
            pass


def _close_at_exit() -> None:
    """Once per process: close the sessions left open when the interpreter exits. zenoh-python
    runs each callback subscriber on a thread that is not a daemon and lives as long as the
    session, and Python joins such threads before ``atexit`` handlers run, so the hook must
    run before that join (``threading._register_atexit``, as concurrent.futures does)."""
    global _exit_hook
    with _exit_hook_lock:
        if _exit_hook:
            return
        _exit_hook = True
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        try:
            register(_close_open_sessions)
        except RuntimeError:  # the interpreter is already shutting down
            pass


class SharedSession:
    """One Zenoh session per process and (locator, mode, config file, keys folder), shared by
    every broadcaster, listener and clock of those addresses and closed with the last one.
    It hands out rmw_zenoh's entity ids (one counter for nodes and their endpoints) and the
    node liveliness tokens (one node per domain and namespace, named ``wire.node_name()``)."""

    _lock = threading.Lock()
    _open: dict[tuple[Any, ...], SharedSession] = {}

    def __init__(self, key: tuple[Any, ...], session: zenoh.Session):
        self._key = key
        self.session = session
        self.zid = str(session.zid())
        self._users = 0
        self._next_id = 0
        self._id_lock = threading.Lock()
        # (domain, namespace) -> [node id, token, users]
        self._nodes: dict[tuple[int, str], list[Any]] = {}

    @classmethod
    def acquire(cls, address: ZenohAddress, keys: Any = None) -> SharedSession:
        """The process's session for ``address`` (opened on first use); ``release()`` it."""
        key = (*address.session_key(), keys_folder(keys))
        with cls._lock:
            shared = cls._open.get(key)
            if shared is None:
                _close_at_exit()
                shared = cls._open[key] = SharedSession(key, open_session(address, keys))
            shared._users += 1
            return shared

    def release(self) -> None:
        """Drop one user; the last one closes the session."""
        with SharedSession._lock:
            self._users -= 1
            if self._users > 0:
                return
            SharedSession._open.pop(self._key, None)
        try:
            self.session.close()  # type: ignore[no-untyped-call]
        except Exception:  # closing a session whose runtime is already gone
            pass

    def next_entity_id(self) -> int:
        """A new entity id, unique in this session (rmw_zenoh counts nodes and endpoints
        alike)."""
        with self._id_lock:
            value = self._next_id
            self._next_id += 1
            return value

    def node(self, domain: int, namespace: str) -> int:
        """The id of this process's node in ``namespace`` on ``domain``, declaring its
        liveliness token the first time; ``release_node`` when done."""
        from . import wire

        with self._id_lock:
            entry = self._nodes.get((domain, namespace))
            if entry is None:
                node_id = self._next_id
                self._next_id += 1
                token = self.session.liveliness().declare_token(wire.liveliness_keyexpr(
                    domain, self.zid, node_id, node_id, wire.ENTITY_NODE, namespace,
                    wire.node_name()))
                entry = self._nodes[(domain, namespace)] = [node_id, token, 0]
            entry[2] += 1
            return int(entry[0])

    def release_node(self, domain: int, namespace: str) -> None:
        """Drop one user of the node; the last one undeclares its token."""
        with self._id_lock:
            entry = self._nodes.get((domain, namespace))
            if entry is None:
                return
            entry[2] -= 1
            if entry[2] > 0:
                return
            del self._nodes[(domain, namespace)]
        try:
            entry[1].undeclare()
        except Exception:  # the session closed under it
            pass
