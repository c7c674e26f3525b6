"""Transitional name of ``tf2py.transport.zmq.sockets`` (the buffer server imports the shared
ZeroMQ context from here)."""

from __future__ import annotations

from .zmq.sockets import (
    LINGER_MS,
    RECEIVE_HWM,
    SEND_HWM,
    DropCounter,
    client_options,
    context,
    inproc_name,
    join_thread,
    logger,
    make_socket,
)

__all__ = ["LINGER_MS", "RECEIVE_HWM", "SEND_HWM", "DropCounter", "client_options", "context",
           "inproc_name", "join_thread", "logger", "make_socket"]
