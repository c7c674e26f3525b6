"""tf2py router as a command, and keys on Zenoh: mutual TLS from `tf2py keygen` folders; a
process without the site's keys, or with another site's, is refused and hears nothing."""

from __future__ import annotations

import subprocess

import pytest

import tf2py
from helpers import free_port, wait_for
from tf2py import Buffer, StaticTransformBroadcaster, TransformListener
from tf2py.buffer.messages import TransformStamped
from zenoh_support import start_router


def static(parent: str, child: str) -> TransformStamped:
    t = TransformStamped()
    t.header.frame_id = parent
    t.child_frame_id = child
    t.transform.rotation.w = 1.0
    return t


def test_router_prints_its_address_and_stops_on_sigterm(spawn, tf2py_command):
    import signal

    proc, locator = start_router(spawn, tf2py_command)
    assert f"--core zenoh://{locator}" in proc.output()
    proc.signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 0


@pytest.mark.parametrize("args, words", [
    (["--listen", "tcp/127.0.0.1:99999"], "port '99999'"),
    (["--listen", "carrier-pigeon/x:1"], "PROTOCOL/HOST:PORT"),
])
def test_router_bad_input_is_one_line(tf2py_command, args, words):
    result = subprocess.run([*tf2py_command, "router", *args], capture_output=True, text=True,
                            timeout=60)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and words in lines[0]


def test_router_port_in_use_is_one_line(spawn, tf2py_command):
    _, locator = start_router(spawn, tf2py_command)
    result = subprocess.run([*tf2py_command, "router", "--listen", locator],
                            capture_output=True, text=True, timeout=60)
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1 and "in use" in lines[0]


@pytest.fixture
def sites(tmp_path, tf2py_command):
    for name in ("site", "other"):
        subprocess.run([*tf2py_command, "keygen", str(tmp_path / name)], check=True,
                       capture_output=True, timeout=60)
    subprocess.run([*tf2py_command, "keygen", str(tmp_path / "site"), "--add", "robot7"],
                   check=True, capture_output=True, timeout=60)
    return tmp_path


def test_keygen_makes_tls_certificates(sites):
    for folder in (sites / "site", sites / "site" / "robot7", sites / "other"):
        for name in ("ca.pem", "identity.pem", "identity.key"):
            assert (folder / "tls" / name).is_file()
    assert not (sites / "site" / "robot7" / "tls" / "ca.key").exists()


def test_keyed_router_serves_the_sites_processes_only(spawn, tf2py_command, sites):
    _, locator = start_router(spawn, tf2py_command, "--keys", str(sites / "site"),
                              protocol="tls")
    address = f"zenoh://{locator}"
    with StaticTransformBroadcaster(core=address, keys=str(sites / "site")) as broadcaster:
        broadcaster.send_transform(static("world", "secret"))
        member, stranger, outsider = Buffer(), Buffer(), Buffer()
        # Without keys, a tls/ locator is a one-line error, not a listener that hears nothing
        with pytest.raises(ValueError, match="needs keys"):
            TransformListener(outsider, core=address)
        with TransformListener(member, core=address, keys=str(sites / "site" / "robot7")), \
                TransformListener(stranger, core=address, keys=str(sites / "other")):
            wait_for(lambda: member.can_transform("world", "secret", tf2py.Time()), timeout=20)
            broadcaster.send_transform(static("world", "secret2"))
            wait_for(lambda: member.can_transform("world", "secret2", tf2py.Time()), timeout=20)
            assert not stranger.can_transform("world", "secret", tf2py.Time())


def test_keys_with_a_plain_locator_are_refused(sites):
    from tf2py.transport.zenoh.address import parse_zenoh_address
    from tf2py.transport.zenoh.session import session_config

    with pytest.raises(ValueError, match="not TLS"):
        session_config(parse_zenoh_address(f"zenoh://tcp/127.0.0.1:{free_port()}"),
                       keys=str(sites / "site"))


@pytest.mark.parametrize("locator, listen", [
    ("tls/127.0.0.1:7447", ["tls/127.0.0.1:0"]),
    ("quic/localhost:7447", ["quic/localhost:0"]),
    ("tls/192.0.2.7:7447", ["tls/[::]:0"]),
])
def test_a_keyed_peer_listens_with_its_keys_where_other_peers_can_reach_it(sites, locator,
                                                                            listen):
    # A Zenoh router never relays between two peers: a keyed peer listening nowhere would
    # hear only clients.
    import json

    from tf2py.transport.zenoh.address import parse_zenoh_address
    from tf2py.transport.zenoh.session import session_config

    config = session_config(parse_zenoh_address(f"zenoh://{locator}"),
                            keys=str(sites / "site"))
    assert json.loads(config.get_json("listen/endpoints")) == listen
