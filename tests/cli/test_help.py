"""Every command of the CLI and bag areas answers --help with a usage text and exit code 0."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("command", ["echo", "static-transform-publisher", "frames",
                                     "view-frames", "monitor", "launch", "play", "record"])
def test_help_prints_usage_and_exits_zero(tf2py, command):
    result = tf2py(command, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith(f"usage: tf2py {command} ")
    assert result.stderr == ""
