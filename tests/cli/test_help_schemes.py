"""Every command that takes a bus address says, in its --help, the three kinds it takes:
tcp:// (a tf2py core), ros2:// (ROS 2 over DDS) and zenoh:// (rmw_zenoh's wire)."""

from __future__ import annotations

import subprocess
import sys

from tf2py.cli.main import build_parser, subparsers

#: Commands whose --core is one kind of bus only (the fleet lives on Zenoh).
ONE_KIND = {"fleet"}


def _core_help(parser) -> str | None:
    for action in parser._actions:
        if "--core" in action.option_strings:
            return action.help
    return None


def test_every_bus_command_names_the_three_schemes_in_its_help():
    parser, _ = build_parser()
    checked = []
    for name, sub in subparsers(parser).items():
        text = _core_help(sub)
        if text is None or name in ONE_KIND:
            continue
        for scheme in ("tcp://", "ros2://", "zenoh://"):
            assert scheme in text, (name, scheme, text)
        checked.append(name)
    assert {"echo", "frames", "monitor", "doctor", "record", "play", "rerun",
            "foxglove"} <= set(checked)


def test_the_help_a_user_reads_shows_them():
    result = subprocess.run([sys.executable, "-m", "tf2py.cli.main", "echo", "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    flat = " ".join(result.stdout.split())
    assert "tcp://HOST:PORT" in flat and "ros2://DOMAIN_ID" in flat
    assert "zenoh://tcp/HOST:PORT" in flat and "?namespace=/robot1" in flat
