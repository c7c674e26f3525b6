"""Fixtures for the buffer server tests: a small frame tree, a running server, clients."""

from __future__ import annotations

import pytest

from tf2py import Buffer, make_transform
from tf2py.server.client import BufferClient
from tf2py.server.server import BufferServer


def fill(buffer: Buffer) -> Buffer:
    """map -> odom (dynamic, stamps 1..3 s) -> base_link -> laser (static);
    lonely -> island (static, a second tree)."""
    for stamp in (1.0, 2.0, 3.0):
        buffer.set_transform(
            make_transform("map", "odom", (stamp, 0.5, 0.0), rpy=(0, 0, 0.1 * stamp), stamp=stamp),
            "test",
        )
    buffer.set_transform_static(make_transform("odom", "base_link", (0.1, 0.0, 0.2)), "test")
    buffer.set_transform_static(
        make_transform("base_link", "laser", (0.3, 0.0, 0.1), rpy=(0, 0.2, 0)), "test"
    )
    buffer.set_transform_static(make_transform("lonely", "island", (1.0, 1.0, 1.0)), "test")
    return buffer


@pytest.fixture
def buffer():
    return fill(Buffer(cache_time=10.0))


@pytest.fixture
def server(buffer):
    with BufferServer(buffer, "tcp://127.0.0.1:0") as srv:
        yield srv


@pytest.fixture
def client(server):
    with BufferClient(server.address, timeout_padding=5.0) as c:
        yield c
