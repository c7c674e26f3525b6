"""Addresses: argument, else environment, else default; the core's two ports."""

from __future__ import annotations

import pytest

from tf2py.transport.address import core_address, server_address
from tf2py.transport.zmq.address import bus_endpoints, check_server_address


def test_core_address_prefers_the_argument(monkeypatch):
    monkeypatch.setenv("TF2PY_CORE", "tcp://10.0.0.5:7400")
    assert core_address("tcp://10.0.0.9:9000") == "tcp://10.0.0.9:9000"


def test_core_address_falls_back_to_environment(monkeypatch):
    monkeypatch.setenv("TF2PY_CORE", "tcp://10.0.0.5:7400")
    assert core_address() == "tcp://10.0.0.5:7400"


def test_core_address_default_is_loopback_7400(monkeypatch):
    monkeypatch.delenv("TF2PY_CORE", raising=False)
    assert core_address() == "tcp://127.0.0.1:7400"


def test_server_address_order(monkeypatch):
    monkeypatch.delenv("TF2PY_SERVER", raising=False)
    assert server_address() == "tcp://127.0.0.1:7402"
    monkeypatch.setenv("TF2PY_SERVER", "tcp://10.1.1.1:1")
    assert server_address() == "tcp://10.1.1.1:1"
    assert server_address("tcp://h:2") == "tcp://h:2"


def test_bus_endpoints_are_port_and_port_plus_one():
    assert bus_endpoints("tcp://10.0.0.5:7400") == ("tcp://10.0.0.5:7400", "tcp://10.0.0.5:7401")


@pytest.mark.parametrize("bad", ["bogus", "tcp://host", "udp://h:1", "tcp://h:99999"])
def test_invalid_address_raises_value_error_naming_it(bad):
    with pytest.raises(ValueError, match="invalid address"):
        bus_endpoints(bad)


def test_port_zero_is_not_a_client_address():
    with pytest.raises(ValueError, match="real port"):
        bus_endpoints("tcp://127.0.0.1:0")


def test_a_running_core_object_stands_for_its_address():
    from tf2py.transport.zmq.core import Core

    with Core("tcp://127.0.0.1:0") as core:
        assert core_address(core) == core.address


def test_server_address_may_use_port_65535_but_not_more():
    assert check_server_address("tcp://127.0.0.1:65535") == "tcp://127.0.0.1:65535"
    with pytest.raises(ValueError, match="invalid buffer server address .*port must be 0..65535"):
        check_server_address("tcp://127.0.0.1:65536")


def test_server_address_of_another_zeromq_transport_is_left_to_zeromq():
    assert check_server_address("ipc:///tmp/tf2py-server") == "ipc:///tmp/tf2py-server"


def test_a_core_bound_on_every_interface_gives_an_address_clients_can_use():
    from helpers import wait_for
    from tf2py import Buffer, Core, StaticTransformBroadcaster, Time, TransformListener
    from tf2py.buffer.messages import make_transform

    with Core("tcp://*:0") as core:
        assert core.address.startswith("tcp://0.0.0.0:")
        buffer = Buffer()
        with TransformListener(buffer, core.address), \
                StaticTransformBroadcaster(core.address) as broadcaster:
            broadcaster.send_transform(make_transform("map", "odom", (1, 0, 0)))
            wait_for(lambda: buffer.can_transform("map", "odom", Time()), timeout=10)
