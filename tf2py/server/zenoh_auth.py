"""Answers of a keyed Zenoh lookup service, signed by an identity that may serve.

Mutual TLS keeps strangers off a keyed domain, but every identity of the site reaches it, and
Zenoh does not tell a subscriber which identity published a sample. So with keys, the server
signs each answer, and clients accept only answers signed by an identity the site CA made with
the serve role (``tf2py keygen DIR``, ``keygen --add NAME --serve``; tls.py ``SERVE_ROLE``):
an added robot identity cannot stand in for the service.

The signature travels in the answer's Zenoh attachment::

    u16 little-endian  length of the certificate (DER)
    certificate        the signer's, issued by the site CA
    signature          ECDSA P-256 / SHA-256 over the reply key expression, a zero byte and
                       the payload (so an answer cannot be replayed to another client)

A client checks a certificate once (issued and signed by its site CA, in its validity, with the
serve role) and then one signature per answer.
"""

from __future__ import annotations

import datetime
import struct
import threading
from pathlib import Path
from typing import Any

from ..transport.zenoh.session import keys_folder
from ..transport.zenoh.tls import (
    CA_CERTIFICATE,
    IDENTITY_CERTIFICATE,
    IDENTITY_KEY,
    TLS_FOLDER,
    has_tls,
    may_serve,
)

__all__ = ["ReplySigner", "ReplyChecker", "signer_for", "checker_for"]

_LENGTH = struct.Struct("<H")
_MAX_CERTIFICATES = 64  # distinct certificates a client remembers (checked once each)


def _message(key: str, payload: bytes) -> bytes:
    return key.encode() + b"\0" + payload


class ReplySigner:
    """Signs a server's answers with the identity of keys folder ``folder``; ValueError (one
    line) if that identity may not serve."""

    def __init__(self, folder: str):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        tls = Path(folder) / TLS_FOLDER
        certificate = x509.load_pem_x509_certificate((tls / IDENTITY_CERTIFICATE).read_bytes())
        if not may_serve(certificate):
            raise ValueError(f"the identity of keys folder {folder} may connect, not serve: "
                             "make one that may with `tf2py keygen SITE --add NAME --serve`")
        self._key: Any = serialization.load_pem_private_key(
            (tls / IDENTITY_KEY).read_bytes(), password=None)
        self._algorithm = ec.ECDSA(hashes.SHA256())
        der = certificate.public_bytes(serialization.Encoding.DER)
        self._prefix = _LENGTH.pack(len(der)) + der

    def sign(self, key: str, payload: bytes) -> bytes:
        """The attachment of the answer ``payload`` published on ``key``."""
        signature: bytes = self._key.sign(_message(key, payload), self._algorithm)
        return self._prefix + signature


class ReplyChecker:
    """Checks answers against the site CA of keys folder ``folder``."""

    def __init__(self, folder: str):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        self._x509 = x509
        self._ca = x509.load_pem_x509_certificate(
            (Path(folder) / TLS_FOLDER / CA_CERTIFICATE).read_bytes())
        self._algorithm = ec.ECDSA(hashes.SHA256())
        self._known: dict[bytes, Any] = {}  # certificate DER -> public key, or None: refused
        self._lock = threading.Lock()

    def check(self, key: str, payload: bytes, attachment: bytes | None) -> bool:
        """Whether ``payload`` on ``key`` is signed by an identity that may serve."""
        if attachment is None or len(attachment) < _LENGTH.size:
            return False
        (length,) = _LENGTH.unpack_from(attachment)
        der = attachment[_LENGTH.size:_LENGTH.size + length]
        signature = attachment[_LENGTH.size + length:]
        if len(der) != length or not signature:
            return False
        public = self._public_key(der)
        if public is None:
            return False
        try:
            public.verify(signature, _message(key, payload), self._algorithm)
        except Exception:  # InvalidSignature, or a signature that is not DER
            return False
        return True

    def _public_key(self, der: bytes) -> Any:
        with self._lock:
            if der in self._known:
                return self._known[der]
        public = self._verify_certificate(der)
        with self._lock:
            if len(self._known) >= _MAX_CERTIFICATES:
                self._known.clear()
            self._known[der] = public
        return public

    def _verify_certificate(self, der: bytes) -> Any:
        try:
            certificate = self._x509.load_der_x509_certificate(der)
            if certificate.issuer != self._ca.subject or not may_serve(certificate):
                return None
            from cryptography.hazmat.primitives.asymmetric import ec

            ca_key = self._ca.public_key()
            hash_algorithm = certificate.signature_hash_algorithm
            if not isinstance(ca_key, ec.EllipticCurvePublicKey) or hash_algorithm is None:
                return None  # the site CA is ECDSA P-256 (tls.py)
            ca_key.verify(certificate.signature, certificate.tbs_certificate_bytes,
                          ec.ECDSA(hash_algorithm))
            now = datetime.datetime.now(datetime.timezone.utc)
            if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
                return None
            return certificate.public_key()
        except Exception:  # not a certificate, not the site's, a bad signature
            return None


def _tls_folder(keys: Any) -> str | None:
    folder = keys_folder(keys)
    return folder if folder is not None and has_tls(folder) else None


def signer_for(keys: Any) -> ReplySigner | None:
    """The signer of a keyed server (None without keys)."""
    folder = _tls_folder(keys)
    return ReplySigner(folder) if folder is not None else None


def checker_for(keys: Any) -> ReplyChecker | None:
    """The checker of a keyed client (None without keys)."""
    folder = _tls_folder(keys)
    return ReplyChecker(folder) if folder is not None else None
