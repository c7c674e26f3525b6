"""The core of tf2py's ZeroMQ bus (``Core``, what ``tf2py core`` runs): it lives in
``tf2py.transport.zmq.core``; this name stays for ``from tf2py.transport.core import Core``."""

from __future__ import annotations

from .zmq.core import Core

__all__ = ["Core"]
