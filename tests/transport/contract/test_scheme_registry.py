"""The one scheme registry (``transport/interface.py``'s ``register_scheme`` lines): buses and
the buffer server's links are looked up there, and a bus registered with one line is served
by the factory, the hints and the server's address check with no other change."""

from __future__ import annotations

import importlib
import sys

import pytest

from tf2py.server.link import check_link_address
from tf2py.transport import interface
from tf2py.transport.hints import bus_name, no_data_hint
from tf2py.transport.interface import (
    Transport,
    register_scheme,
    registered_schemes,
    scheme_entry,
    transport_for,
    transports,
)

TOY_BUS = '''
from tf2py.transport.interface import Transport


class ToyTransport(Transport):
    schemes = ("toy",)
    bus_kind = "the toy bus"

    def check_address(self, address):
        if not address.startswith("toy://") or address == "toy://":
            raise ValueError(f"invalid address {address!r}: a toy address is toy://NAME")
        return address

    def no_data_hint(self, address, broadcasting=True, probe=False):
        return "is the toy switched on?"

    transform_broadcaster = static_transform_broadcaster = transform_subscriber = \\
        clock_publisher = sim_clock = lambda self, *a, **k: None


transport = ToyTransport()
'''


def test_every_registered_scheme_names_modules_that_exist():
    for name in registered_schemes():
        entry = scheme_entry(name)
        assert isinstance(importlib.import_module(entry.module).transport, Transport)
        assert entry.example.startswith(f"{name}://")
    linked = [name for name in ("tcp", "ipc", "inproc", "zenoh") if scheme_entry(name).server_link]
    assert linked == ["tcp", "ipc", "inproc", "zenoh"]
    for name in linked:
        link = importlib.import_module(scheme_entry(name).server_link)
        assert callable(link.open_server_link) and callable(link.open_client_link)
        assert callable(link.check_address)
    assert [name for name, bus in transports() if bus.hosts_fleet] == ["zenoh"]


@pytest.fixture
def toy_bus(tmp_path, monkeypatch):
    """A bus package ``toybus`` registered for ``toy://`` with one line, taken out after."""
    (tmp_path / "toybus.py").write_text(TOY_BUS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(interface, "_SCHEMES", dict(interface._SCHEMES))
    register_scheme("toy", "toybus", example="toy://NAME")
    yield
    sys.modules.pop("toybus", None)


def test_a_bus_registered_with_one_line_is_served_everywhere(toy_bus):
    transport, address = transport_for("toy://kitchen")
    assert type(transport).__name__ == "ToyTransport" and address == "toy://kitchen"
    assert "toy" in registered_schemes()
    assert bus_name("toy://kitchen") == "the toy bus at toy://kitchen"
    assert no_data_hint("toy://kitchen") == "is the toy switched on?"
    with pytest.raises(ValueError, match="a toy address is toy://NAME"):
        transport_for("toy://")
    with pytest.raises(ValueError, match=r"starts with toy:// \(e\.g\. toy://NAME\)"):
        transport_for("toy:/kitchen")
    # No server link registered for it: the server's address check says which schemes have one.
    with pytest.raises(ValueError, match="expected one of tcp://, ipc://, inproc://, zenoh://"):
        check_link_address("toy://kitchen")


@pytest.mark.parametrize("address, words", [
    ("foo://x", "expected one of tcp://, ipc://, inproc://, zenoh://"),
    ("zenoh:tcp/127.0.0.1:7447", "a zenoh address starts with zenoh://"),
    ("tcp://127.0.0.1:99999", "port must be 0..65535"),
    ("zenoh://tcp/127.0.0.1:7447?colour=red", "colour"),
])
def test_a_server_address_is_checked_by_its_schemes_link(address, words):
    with pytest.raises(ValueError, match=words) as refused:
        check_link_address(address)
    assert "\n" not in str(refused.value)


def test_a_good_server_address_passes_unchanged():
    assert check_link_address("ipc:///tmp/tf2py-server") == "ipc:///tmp/tf2py-server"
    assert check_link_address("zenoh://tcp/127.0.0.1:7447") == "zenoh://tcp/127.0.0.1:7447"
