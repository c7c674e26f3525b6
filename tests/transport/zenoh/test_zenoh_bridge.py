"""tf2py bridge between Zenoh and tf2py's own bus (tcp://), both ways, statics latched."""

from __future__ import annotations

import pytest

import tf2py
from helpers import free_address, wait_for
from tf2py import Buffer, StaticTransformBroadcaster, TransformBroadcaster, TransformListener
from tf2py.buffer.messages import TransformStamped
from tf2py.transport.zmq.core import Core
from zenoh_support import start_router


def transform(parent: str, child: str, x: float) -> TransformStamped:
    t = TransformStamped()
    t.header.frame_id = parent
    t.child_frame_id = child
    t.header.stamp = tf2py.Time(3, 0)
    t.transform.translation.x = x
    t.transform.rotation.w = 1.0
    return t


@pytest.fixture
def core():
    with Core(free_address()) as c:
        yield c.address


def test_bridge_both_ways_between_zenoh_and_tcp(spawn, tf2py_command, core):
    _, locator = start_router(spawn, tf2py_command)
    zenoh_address = f"zenoh://{locator}?namespace=/robot7"
    bridge = spawn([*tf2py_command, "bridge", zenoh_address, core, "--both"])
    bridge.wait_for_line("bridge", timeout=30)
    with StaticTransformBroadcaster(core=zenoh_address) as on_zenoh, \
            TransformBroadcaster(core=core) as on_tcp:
        on_zenoh.send_transform(transform("world", "map", 1.0))
        # A listener that starts later on the far side still gets the static.
        tcp_buffer, zenoh_buffer = Buffer(), Buffer()
        with TransformListener(tcp_buffer, core=core):
            wait_for(lambda: tcp_buffer.can_transform("world", "map", tf2py.Time()),
                     timeout=20)
        with TransformListener(zenoh_buffer, core=zenoh_address):
            def relayed():
                on_tcp.send_transform(transform("map", "odom", 2.0))
                return zenoh_buffer.can_transform("map", "odom", tf2py.Time())
            wait_for(relayed, timeout=20)
            assert zenoh_buffer.lookup_transform("map", "odom", tf2py.Time()) \
                .transform.translation.x == 2.0
