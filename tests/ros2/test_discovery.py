"""ros2:// addresses and ROS 2's discovery variables, as Cyclone DDS configuration."""

from __future__ import annotations

import pytest

from tf2py.transport.interface import check_core_address, scheme
from tf2py.transport.ros2.discovery import (
    cyclone_config,
    discovery_settings,
    is_ros2_address,
    parse_ros2_address,
)


@pytest.mark.parametrize("address, environ, domain", [
    ("ros2://", {}, 0),
    ("ros2://", {"ROS_DOMAIN_ID": "42"}, 42),
    ("ros2://7", {"ROS_DOMAIN_ID": "42"}, 7),
    ("ROS2://232/", {}, 232),
])
def test_the_domain_comes_from_the_address_else_ros_domain_id(address, environ, domain):
    assert parse_ros2_address(address, environ) == domain


@pytest.mark.parametrize("address, environ", [
    ("ros2://233", {}), ("ros2://-1", {}), ("ros2://x", {}), ("ros2://1/2", {}),
    ("ros2:///tf", {}), ("ros2://", {"ROS_DOMAIN_ID": "abc"}), ("ros2://", {"ROS_DOMAIN_ID": "300"}),
])
def test_bad_domains_are_refused_naming_the_problem(address, environ):
    with pytest.raises(ValueError, match="domain|ROS_DOMAIN_ID|ros2://"):
        parse_ros2_address(address, environ)


def test_the_scheme_picks_the_transport(monkeypatch):
    monkeypatch.delenv("TF2PY_CORE", raising=False)
    assert scheme("ros2://3") == "ros2" and scheme("tcp://127.0.0.1:7400") == "tcp"
    assert scheme(None) == "tcp" and scheme("nothing-known://x") == "tcp"
    monkeypatch.setenv("TF2PY_CORE", "ros2://")
    assert scheme(None) == "ros2" and is_ros2_address("ros2://")
    assert check_core_address("ros2://12") == "ros2://12"
    with pytest.raises(ValueError, match="tcp://HOST:PORT"):
        check_core_address("udp://1.2.3.4:5")


def test_default_range_is_subnet_and_localhost_only_still_works():
    assert discovery_settings({}).range == "SUBNET"
    assert discovery_settings({"ROS_LOCALHOST_ONLY": "1"}).range == "LOCALHOST"
    # The range, when set, wins over the deprecated variable (as in rcl).
    assert discovery_settings({"ROS_LOCALHOST_ONLY": "1",
                               "ROS_AUTOMATIC_DISCOVERY_RANGE": "subnet"}).range == "SUBNET"
    with pytest.raises(ValueError, match="ROS_AUTOMATIC_DISCOVERY_RANGE"):
        discovery_settings({"ROS_AUTOMATIC_DISCOVERY_RANGE": "PLANET"})


def test_localhost_uses_loopback_only_without_multicast():
    xml = cyclone_config(discovery_settings({"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
                                             "ROS_STATIC_PEERS": "10.0.0.5; robot.local"}))
    assert '<NetworkInterface address="127.0.0.1"/>' in xml
    assert "<AllowMulticast>false</AllowMulticast>" in xml
    assert ('<Peers><Peer address="localhost"/><Peer address="10.0.0.5"/>'
            '<Peer address="robot.local"/></Peers>') in xml


def test_subnet_adds_static_peers_and_keeps_multicast():
    xml = cyclone_config(discovery_settings({"ROS_STATIC_PEERS": "10.0.0.5"}))
    assert "AllowMulticast" not in xml and '<Peer address="10.0.0.5"/>' in xml


def test_off_discovers_nothing_and_system_default_changes_nothing():
    xml = cyclone_config(discovery_settings({"ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF",
                                             "ROS_STATIC_PEERS": "10.0.0.5"}), pid=99)
    assert "<Tag>ros_discovery_off_99</Tag>" in xml and "Peer" not in xml
    assert cyclone_config(discovery_settings({"ROS_AUTOMATIC_DISCOVERY_RANGE":
                                              "SYSTEM_DEFAULT"})) is None


def test_peer_addresses_are_escaped_in_the_xml():
    xml = cyclone_config(discovery_settings({"ROS_STATIC_PEERS": 'a"b<c&d'}))
    assert "<Peer address='a\"b&lt;c&amp;d'/>" in xml
