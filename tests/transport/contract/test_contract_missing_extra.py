"""A bus whose extra is not installed: a command prints one line naming the extra and exits
non-zero (no traceback), and the public classes raise ImportError with that line. The extra
is hidden from a real subprocess by a ``sitecustomize`` that refuses to import it."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: scheme -> (an address of it, the top-level module of its extra, the extra's name)
EXTRAS = {
    "ros2": ("ros2://7", "cyclonedds", "ros2"),
    "zenoh": ("zenoh://tcp/127.0.0.1:7447", "zenoh", "zenoh"),
}

HIDE = """
import sys


class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r} or name.startswith({module!r} + "."):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _Hide())
"""

COMMANDS = [["echo", "map", "odom", "--once"], ["frames"], ["monitor"], ["server"]]


@pytest.fixture(params=sorted(EXTRAS))
def without_extra(request, tmp_path):
    """``(address, extra, env)``: an environment in which the bus's extra cannot be imported."""
    address, module, extra = EXTRAS[request.param]
    (tmp_path / "sitecustomize.py").write_text(HIDE.format(module=module))
    env = {"PYTHONPATH": f"{tmp_path}:{':'.join(sys.path[1:])}", "PATH": "/usr/bin:/bin"}
    check = subprocess.run([sys.executable, "-c", f"import {module}"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode != 0, f"{module} is still importable"
    return address, extra, env


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_command_says_the_extra_is_missing_in_one_line(without_extra, command):
    address, extra, env = without_extra
    result = subprocess.run([sys.executable, "-m", "tf2py.cli.main", *command, "--core",
                             address], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"tf2py[{extra}]" in lines[0] and "Traceback" not in result.stderr


def test_the_public_classes_raise_import_error_with_that_line(without_extra):
    address, extra, env = without_extra
    script = ("import sys, tf2py\n"
              "try:\n"
              f"    tf2py.TransformListener(tf2py.Buffer(), core={address!r})\n"
              "except ImportError as exc:\n"
              "    print('ImportError:', exc)\n")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.stdout.startswith("ImportError:") and f"tf2py[{extra}]" in result.stdout, \
        result.stdout + result.stderr
