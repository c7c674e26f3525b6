"""Keys on Zenoh: TLS certificates in a keys folder, and the Zenoh settings for mutual TLS.

``tf2py keygen DIR`` makes, beside the ZeroMQ CURVE keys, a site certificate authority and a
certificate for the folder's own identity; ``--add NAME`` signs one for ``DIR/NAME``::

    DIR/tls/ca.pem           the site's CA certificate (every folder of the site has it)
    DIR/tls/ca.key           the CA's private key (the site folder only: it signs identities)
    DIR/tls/identity.pem     this folder's certificate, signed by the site CA
    DIR/tls/identity.key     its private key

On a ``zenoh://`` address with keys, a session listens and connects with its identity and
trusts only the site CA, and requires the other end's certificate too (mutual TLS): a process
without the site's keys, or with another site's, fails the handshake and hears nothing.
Host names are not checked (identities are proven by the site CA, and robots move between
addresses).

Certificates are made with ``cryptography`` (the ``zenoh`` extra): ECDSA P-256, ten years.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
from pathlib import Path
from typing import Any

__all__ = [
    "TLS_FOLDER",
    "CA_CERTIFICATE",
    "CA_KEY",
    "IDENTITY_CERTIFICATE",
    "IDENTITY_KEY",
    "tls_settings",
    "has_tls",
    "create_site_tls",
    "add_identity_tls",
    "SERVE_ROLE",
    "may_serve",
]

#: The organizational unit of a certificate whose identity may serve (run a lookup service,
#: a fleet): ``tf2py keygen DIR`` (the site's own identity) and ``--add NAME --serve``.
SERVE_ROLE = "tf2py serve"

TLS_FOLDER = "tls"
CA_CERTIFICATE = "ca.pem"
CA_KEY = "ca.key"
IDENTITY_CERTIFICATE = "identity.pem"
IDENTITY_KEY = "identity.key"
_VALID_DAYS = 3650


def has_tls(folder: str | os.PathLike[str]) -> bool:
    """Whether the keys folder holds TLS certificates."""
    tls = Path(folder) / TLS_FOLDER
    return all((tls / name).is_file()
               for name in (CA_CERTIFICATE, IDENTITY_CERTIFICATE, IDENTITY_KEY))


def tls_settings(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The Zenoh configuration entries (``transport/link/tls/...``) for mutual TLS with the
    keys of ``folder``. ValueError (one line) when the folder has no TLS certificates."""
    path = Path(folder)
    if not path.is_dir():
        raise ValueError(f"keys folder {folder} does not exist (make one with "
                         f"`tf2py keygen {folder}`)")
    if not has_tls(path):
        raise ValueError(
            f"keys folder {folder} has no TLS certificates ({TLS_FOLDER}/{CA_CERTIFICATE}, "
            f"{TLS_FOLDER}/{IDENTITY_CERTIFICATE}); make the site with `tf2py keygen DIR` "
            f"with the zenoh extra installed")
    tls = path.resolve() / TLS_FOLDER
    certificate = str(tls / IDENTITY_CERTIFICATE)
    key = str(tls / IDENTITY_KEY)
    prefix = "transport/link/tls/"
    return {
        prefix + "root_ca_certificate": str(tls / CA_CERTIFICATE),
        prefix + "listen_certificate": certificate,
        prefix + "listen_private_key": key,
        prefix + "connect_certificate": certificate,
        prefix + "connect_private_key": key,
        prefix + "enable_mtls": True,
        prefix + "verify_name_on_connect": False,
    }


def _crypto() -> Any:
    try:
        from cryptography import x509
    except ImportError:
        raise ImportError("TLS certificates for zenoh:// need the zenoh extra: "
                          "pip install 'tf2py[zenoh]'") from None
    return x509


def _new_key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _write_key(file: Path, key: Any) -> None:
    from cryptography.hazmat.primitives import serialization

    data = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _write_certificate(file: Path, certificate: Any) -> None:
    from cryptography.hazmat.primitives import serialization

    file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))


def _name(common_name: str, serve: bool = False) -> Any:
    x509 = _crypto()
    from cryptography.x509.oid import NameOID

    role = [x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, SERVE_ROLE)] if serve else []
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "tf2py site"), *role,
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def may_serve(certificate: Any) -> bool:
    """Whether a certificate (``cryptography`` x509) names the serve role (``SERVE_ROLE``)."""
    from cryptography.x509.oid import NameOID

    return any(a.value == SERVE_ROLE for a in
               certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATIONAL_UNIT_NAME))


def _validity() -> tuple[datetime.datetime, datetime.datetime]:
    now = datetime.datetime.now(datetime.timezone.utc)
    return now - datetime.timedelta(days=1), now + datetime.timedelta(days=_VALID_DAYS)


def create_site_tls(folder: str | os.PathLike[str]) -> Path:
    """Make ``folder/tls/``: a new site CA and the folder's own identity signed by it.
    Refuses a folder that already has TLS certificates. Returns the tls folder."""
    x509 = _crypto()
    from cryptography.hazmat.primitives import hashes

    tls = Path(folder) / TLS_FOLDER
    if (tls / CA_CERTIFICATE).exists():
        raise ValueError(f"{tls} already holds a site CA")
    tls.mkdir(mode=0o700, parents=True, exist_ok=True)
    ca_key = _new_key()
    subject = _name(f"tf2py site CA {os.urandom(6).hex()}")
    not_before, not_after = _validity()
    ca = (x509.CertificateBuilder()
          .subject_name(subject).issuer_name(subject)
          .public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(not_before).not_valid_after(not_after)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(
              digital_signature=True, content_commitment=False, key_encipherment=False,
              data_encipherment=False, key_agreement=False, key_cert_sign=True,
              crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    _write_key(tls / CA_KEY, ca_key)
    _write_certificate(tls / CA_CERTIFICATE, ca)
    _issue(tls, ca, ca_key, "site", serve=True)
    return tls


def add_identity_tls(folder: str | os.PathLike[str], name: str,
                     target: str | os.PathLike[str], serve: bool = False) -> Path:
    """Sign a certificate for identity ``name`` with the site CA of ``folder`` (with the serve
    role when ``serve``) and write it with the CA certificate into ``target/tls/``. Returns
    that tls folder."""
    x509 = _crypto()
    from cryptography.hazmat.primitives import serialization

    site = Path(folder) / TLS_FOLDER
    if not (site / CA_KEY).is_file():
        raise ValueError(f"{folder} has no site CA ({TLS_FOLDER}/{CA_KEY}); make the site "
                         f"with `tf2py keygen {folder}` with the zenoh extra installed")
    ca = x509.load_pem_x509_certificate((site / CA_CERTIFICATE).read_bytes())
    ca_key = serialization.load_pem_private_key((site / CA_KEY).read_bytes(), password=None)
    tls = Path(target) / TLS_FOLDER
    tls.mkdir(mode=0o700, parents=True, exist_ok=True)
    (tls / CA_CERTIFICATE).write_bytes((site / CA_CERTIFICATE).read_bytes())
    _issue(tls, ca, ca_key, name, serve)
    return tls


def _issue(tls: Path, ca: Any, ca_key: Any, name: str, serve: bool = False) -> None:
    """Write ``identity.pem``/``identity.key`` into ``tls``: a certificate for ``name``,
    usable on both ends of a link (server and client authentication)."""
    x509 = _crypto()
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID

    key = _new_key()
    dns = re.sub(r"[^A-Za-z0-9-]", "-", name).strip("-").lower() or "identity"
    not_before, not_after = _validity()
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(name, serve)).issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=True, key_cert_sign=False, crl_sign=False,
            encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                              ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([
            x509.DNSName(dns), x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(ipaddress.ip_address("::1"))]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256()))
    _write_key(tls / IDENTITY_KEY, key)
    _write_certificate(tls / IDENTITY_CERTIFICATE, certificate)
