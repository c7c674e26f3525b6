"""Keys: ZeroMQ CURVE encryption and authentication of the bus and the buffer server.

A keys folder holds one site (made by ``tf2py keygen DIR``)::

    DIR/server.key            the site's public key (clients check the core/server is the site's)
    DIR/server.key_secret     the site's secret key (only a folder that may run a core or server)
    DIR/client.key            this folder's own identity (public)
    DIR/client.key_secret     this folder's own identity (secret)
    DIR/authorized/NAME.key   the public keys allowed to connect (ZAP checks this folder)

``tf2py keygen DIR --add NAME`` makes ``DIR/NAME/``, a folder for another identity (its own
``client.key*`` and the site's public ``server.key`` only: it may connect, not serve), and
authorises it by writing ``DIR/authorized/NAME.key``; a running core or server accepts it at
once (the folder is read again when an unknown key knocks).

Bound sockets (core, buffer server) are CURVE servers whose connections go through a ZAP
handler (pyzmq's ``ThreadAuthenticator``, one per process, started while a keyed socket is
open) that accepts only the public keys under ``authorized/``. Connecting sockets are CURVE
clients that know the site's public key, so they also refuse a stand-in server with other
keys. A peer with no keys, or with another site's keys, fails the handshake: nothing it sends
is ever delivered.
"""

from __future__ import annotations

import errno
import hashlib
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import zmq
import zmq.auth

if TYPE_CHECKING:
    from zmq.auth.thread import ThreadAuthenticator

from ..address import is_loopback
from .sockets import context, logger

__all__ = [
    "KeysError",
    "Keys",
    "keys_folder",
    "load_keys",
    "create_site",
    "add_identity",
    "warn_if_exposed",
]

SERVER = "server"
CLIENT = "client"
AUTHORIZED = "authorized"


class KeysError(ValueError):
    """A keys folder that cannot be used (missing, incomplete, unreadable)."""


def keys_folder(keys: Keys | str | os.PathLike[str] | None = None) -> str | None:
    """The keys folder to use: ``keys`` (a folder or a loaded ``Keys``), else
    ``$TF2PY_KEYS``, else None (plain traffic)."""
    if isinstance(keys, Keys):
        return keys.folder
    if keys:
        return os.fspath(keys)
    return os.environ.get("TF2PY_KEYS") or None


def _read_pair(folder: Path, name: str, need_secret: bool) -> tuple[bytes, bytes | None]:
    public_file = folder / f"{name}.key"
    secret_file = folder / f"{name}.key_secret"
    try:
        if secret_file.exists():
            public, secret = zmq.auth.load_certificate(str(secret_file))
        elif need_secret:
            raise KeysError(f"keys folder {folder} has no {secret_file.name}")
        elif not public_file.exists():
            raise KeysError(f"keys folder {folder} has no {public_file.name} (make a site "
                            f"with `tf2py keygen DIR`)")
        else:
            public, secret = zmq.auth.load_certificate(str(public_file))
    except KeysError:
        raise
    except (OSError, ValueError) as exc:
        raise KeysError(f"keys folder {folder}: cannot read {name}.key: {exc}") from None
    if public is None:
        raise KeysError(f"keys folder {folder}: {name}.key holds no public key")
    return public, secret


class Keys:
    """A loaded keys folder: the site's public (and maybe secret) key, this identity."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        path = Path(folder)
        if not path.is_dir():
            raise KeysError(f"keys folder {folder} does not exist (make one with "
                            f"`tf2py keygen {folder}`)")
        self.folder = str(path.resolve())
        self.client_public, self.client_secret = _read_pair(path, CLIENT, need_secret=True)
        self.server_public, self.server_secret = _read_pair(path, SERVER, need_secret=False)
        if self.client_secret is None:
            raise KeysError(f"keys folder {folder} has no client.key_secret")
        self.authorized = path / AUTHORIZED
        #: The ZAP domain of this site's bound sockets (one per folder, so one process may
        #: serve several sites).
        self.domain = "tf2py-" + hashlib.sha1(self.folder.encode()).hexdigest()[:16]

    # -- socket set-up ----------------------------------------------------------------------

    def apply_server(self, sock: zmq.Socket[Any], what: str = "this socket") -> None:
        """Make ``sock`` (before it binds) a CURVE server that accepts only authorised keys.
        Holds the authenticator of the socket's context until ``release_server`` is called."""
        if self.server_secret is None:
            raise KeysError(
                f"keys folder {self.folder} has no server.key_secret: it may connect to a "
                f"site but not serve one ({what})")
        _authenticator.acquire(self, sock.context)
        try:
            sock.setsockopt(zmq.ZAP_DOMAIN, self.domain.encode())
            sock.curve_secretkey = self.server_secret
            sock.curve_publickey = self.server_public
            sock.curve_server = True
        except BaseException:
            _authenticator.release(sock.context)
            raise

    def release_server(self, ctx: zmq.Context[Any] | None = None) -> None:
        """Give back what ``apply_server`` took (call once per keyed socket, after closing
        it, before terminating its context)."""
        _authenticator.release(ctx if ctx is not None else context())

    def apply_client(self, sock: zmq.Socket[Any]) -> None:
        """Make ``sock`` (before it connects) a CURVE client of this site, with this identity."""
        sock.curve_secretkey = self.client_secret
        sock.curve_publickey = self.client_public
        sock.curve_serverkey = self.server_public

    def __repr__(self) -> str:
        return f"Keys({self.folder!r})"


def load_keys(keys: Keys | str | os.PathLike[str] | None = None) -> Keys | None:
    """``Keys`` of ``keys`` (folder or Keys), else of ``$TF2PY_KEYS``, else None."""
    if isinstance(keys, Keys):
        return keys
    folder = keys_folder(keys)
    if folder is None:
        return None
    if not zmq.has("curve"):
        raise KeysError("this libzmq has no CURVE support; keys cannot be used")
    return Keys(folder)


class _Authorized:
    """ZAP credentials provider: the public keys under ``authorized/``, read again when an
    unknown key knocks and the folder changed since (one ``stat`` per unknown key), so an
    identity added while a core runs is accepted at once."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.keys: set[bytes] = set()
        self.stamp: tuple[int, int, int] | None = None
        self._read()

    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.folder)
            return (st.st_mtime_ns, st.st_ino, st.st_size)
        except OSError:
            return None

    def _read(self) -> None:
        self.stamp = self._stamp()
        keys: set[bytes] = set()
        try:
            names = sorted(os.listdir(self.folder))
        except OSError:
            names = []
        for name in names:
            if not name.endswith(".key"):
                continue
            try:
                public, _ = zmq.auth.load_certificate(str(self.folder / name))
            except (OSError, ValueError):
                continue
            if public:
                keys.add(public)
        self.keys = keys

    def callback(self, domain: str, key: bytes) -> bool:
        # ``key`` is the client's public key in Z85, as the certificate files hold it.
        if key in self.keys:
            return True
        if self._stamp() != self.stamp:
            self._read()
            if key in self.keys:
                return True
        _refused.note(domain)
        return False


class _RefusedLog:
    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def note(self, domain: str) -> None:
        with self._lock:
            self.count += 1
            first = self.count == 1
        if first:
            logger.warning("tf2py keys: refused a connection whose key is not authorised "
                           "(further refusals are only counted)")


_refused = _RefusedLog()


class _ProcessAuthenticator:
    """One ThreadAuthenticator per ZeroMQ context (the process's shared one, or an object's
    own), running while at least one keyed bound socket of that context is open; one CURVE
    domain per keys folder."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # id(context) -> [authenticator, users, domains]
        self._running: dict[int, list[Any]] = {}

    def acquire(self, keys: Keys, ctx: zmq.Context[Any]) -> None:
        with self._lock:
            entry = self._running.get(id(ctx))
            if entry is None:
                entry = self._running[id(ctx)] = [_start_authenticator(ctx), 0, set()]
            if keys.domain not in entry[2]:
                entry[0].configure_curve_callback(
                    keys.domain, credentials_provider=_Authorized(keys.authorized))
                entry[2].add(keys.domain)
            entry[1] += 1

    def release(self, ctx: zmq.Context[Any]) -> None:
        with self._lock:
            entry = self._running.get(id(ctx))
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del self._running[id(ctx)]
        entry[0].stop()


def _start_authenticator(ctx: zmq.Context[Any]) -> ThreadAuthenticator:
    """A started ThreadAuthenticator on ``ctx``. ZeroMQ frees the ZAP endpoint of one that
    was just stopped asynchronously: retry the bind for a moment."""
    from zmq.auth.thread import ThreadAuthenticator

    deadline = time.monotonic() + 5.0
    while True:
        auth = ThreadAuthenticator(ctx, log=logger.getChild("zap"))
        try:
            auth.start()
            return auth
        except zmq.ZMQError as exc:
            try:
                auth.stop()
            except zmq.ZMQError:
                pass
            if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


_authenticator = _ProcessAuthenticator()


def refused_connections() -> int:
    """How many connections this process's ZAP handler refused."""
    return _refused.count


# -- making folders -------------------------------------------------------------------------


def _write_pair(folder: Path, name: str) -> None:
    public_file, secret_file = zmq.auth.create_certificates(str(folder), name)
    os.chmod(secret_file, 0o600)


def create_site(folder: str | os.PathLike[str]) -> Path:
    """Make ``folder`` a new site: its server keys, its own client identity, authorised.
    Refuses a folder that already holds keys."""
    path = Path(folder)
    if (path / f"{SERVER}.key").exists() or (path / f"{CLIENT}.key").exists():
        raise KeysError(f"{folder} already holds keys; use --add NAME to add an identity")
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    _write_pair(path, SERVER)
    _write_pair(path, CLIENT)
    (path / AUTHORIZED).mkdir(exist_ok=True)
    public, _ = zmq.auth.load_certificate(str(path / f"{CLIENT}.key"))
    _write_public(path / AUTHORIZED / "site.key", public)
    return path


def _write_public(file: Path, public: bytes) -> None:
    file.write_text(
        "#   tf2py authorised identity (ZeroMQ CURVE public key)\n"
        "metadata\ncurve\n"
        f'    public-key = "{public.decode("ascii")}"\n'
    )


def add_identity(folder: str | os.PathLike[str], name: str, serve: bool = False) -> Path:
    """Make ``folder/NAME/`` (a connect-only keys folder for another identity; with ``serve``,
    one that may also run a core, a server or a fleet: it gets the site's server secret) and
    authorise it in ``folder/authorized/NAME.key``. Returns the new folder."""
    path = Path(folder)
    if not (path / f"{SERVER}.key_secret").exists():
        raise KeysError(f"{folder} is not a site folder (no server.key_secret); make one with "
                        f"`tf2py keygen {folder}`")
    if not name or name in (".", "..", SERVER, CLIENT, AUTHORIZED, "site") or any(
            c in name for c in "/\\\0") or name.startswith("."):
        raise KeysError(f"invalid identity name {name!r}")
    target = path / name
    if target.exists():
        raise KeysError(f"{target} already exists")
    target.mkdir(mode=0o700)
    _write_pair(target, CLIENT)
    server_public, _ = zmq.auth.load_certificate(str(path / f"{SERVER}.key"))
    (target / f"{SERVER}.key").write_text((path / f"{SERVER}.key").read_text())
    assert server_public
    if serve:
        secret = target / f"{SERVER}.key_secret"
        secret.write_text((path / f"{SERVER}.key_secret").read_text())
        os.chmod(secret, 0o600)
    public, _ = zmq.auth.load_certificate(str(target / f"{CLIENT}.key"))
    (path / AUTHORIZED).mkdir(exist_ok=True)
    _write_public(path / AUTHORIZED / f"{name}.key", public)
    return target


# -- plain traffic on a network -------------------------------------------------------------


def warn_if_exposed(host: str, keys: Keys | None, what: str) -> None:
    """One warning line when ``what`` binds a non-loopback ``host`` without keys."""
    if keys is None and not is_loopback(host):
        logger.warning(
            "%s binds %s without keys: anyone who can reach it can read and inject "
            "transforms; make keys with `tf2py keygen DIR` and pass --keys DIR (or "
            "TF2PY_KEYS)", what, host)
