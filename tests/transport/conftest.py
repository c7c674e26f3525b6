"""Fixtures of the transport tests outside the contract: ``core``, a tf2py core on free
loopback ports for one test (``transport_support``)."""

from transport_support import core

__all__ = ["core"]
