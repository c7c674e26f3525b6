"""zenoh:// addresses: what they mean, and one line for each kind of mistake."""

from __future__ import annotations

import pytest

from tf2py.transport.zenoh.address import parse_zenoh_address


def test_bare_address_is_a_peer_with_zenohs_discovery_in_the_root_namespace():
    a = parse_zenoh_address("zenoh://", environ={})
    assert (a.locator, a.namespace, a.domain, a.mode, a.config) == (None, "/", 0, None, None)


def test_locator_and_parameters():
    a = parse_zenoh_address("zenoh://tls/[::1]:7447?namespace=robot7/&domain=42&mode=client",
                            environ={})
    assert (a.locator, a.protocol, a.namespace, a.domain, a.mode) == (
        "tls/[::1]:7447", "tls", "/robot7", 42, "client")


def test_domain_defaults_to_ros_domain_id():
    assert parse_zenoh_address("zenoh://", environ={"ROS_DOMAIN_ID": "7"}).domain == 7
    with pytest.raises(ValueError, match="ROS_DOMAIN_ID"):
        parse_zenoh_address("zenoh://", environ={"ROS_DOMAIN_ID": "x"})


def test_config_file_is_resolved(tmp_path):
    file = tmp_path / "z.json5"
    file.write_text("{}")
    assert parse_zenoh_address(f"zenoh://?config={file}").config == str(file.resolve())


@pytest.mark.parametrize("address, words", [
    ("zenoh://tcp/127.0.0.1:99999", "port '99999'"),
    ("zenoh://tcp/127.0.0.1:0", "port '0'"),
    ("zenoh://tcp/127.0.0.1:x", "port 'x'"),
    ("zenoh://ftp/127.0.0.1:1", "protocol 'ftp'"),
    ("zenoh://tcp/127.0.0.1", "PROTOCOL/HOST:PORT"),
    ("zenoh://?colour=red", "unknown parameter 'colour'"),
    ("zenoh://?domain=233", "domain 233 is out of range"),
    ("zenoh://?domain=-1", "domain '-1'"),
    ("zenoh://?mode=router", "mode 'router'"),
    ("zenoh://?namespace=/7up", "namespace '/7up'"),
    ("zenoh://?config=/no/such/file.json5", "'/no/such/file.json5' does not exist"),
    ("zenoh://?domain=1&domain=2", "'domain' given twice"),
    ("zenoh://?namespace", "NAME=VALUE"),
])
def test_malformed_addresses_give_one_line_naming_the_fault(address, words):
    with pytest.raises(ValueError) as info:
        parse_zenoh_address(address, environ={})
    message = str(info.value)
    assert words in message and "\n" not in message


def test_a_command_with_a_bad_address_says_one_line(tf2py_command):
    import subprocess

    result = subprocess.run([*tf2py_command, "echo", "a", "b", "--once", "--core",
                             "zenoh://?colour=red"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "colour" in lines[0]


def test_a_config_file_zenoh_refuses_is_one_line(tmp_path):
    pytest.importorskip("zenoh")
    from tf2py.transport.zenoh.session import session_config

    file = tmp_path / "bad.json5"
    file.write_text("{ mode: ")
    with pytest.raises(ValueError) as info:
        session_config(parse_zenoh_address(f"zenoh://?config={file}"))
    assert str(file) in str(info.value) and "\n" not in str(info.value)
