"""docs/cli.md's "A fleet in five minutes" runs as written (on a free port instead of 7447): a
router, a fleet with the world file, three simulated robots, and a lookup across robots,
each command taken from the page itself."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

pytest.importorskip("zenoh")

from helpers import REPO

SECTION = "### A fleet in five minutes"
PORT = "127.0.0.1:7447"


def walkthrough_lines() -> list[str]:
    """The code lines of the walkthrough (indented under its numbered steps), in order."""
    text = (REPO / "docs" / "cli.md").read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start)
    section = text[start:end if end != -1 else len(text)]
    return [line.strip() for line in section.splitlines() if line.startswith("       ")
            and line.strip()]


def argv(command: str, port: str) -> list[str]:
    words = shlex.split(command.replace(PORT, port))
    if words[0] == "tf2py":
        return [sys.executable, "-m", "tf2py.cli.main", *words[1:]]
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    raise AssertionError(f"not a command of the walkthrough: {command}")


def test_the_fleet_walkthrough_runs_as_written(spawn, tmp_path):
    lines = walkthrough_lines()
    router_line, *rest = lines
    assert router_line == f"tf2py router --listen tcp/{PORT}"
    router = spawn(argv(router_line.replace(":7447", ":0"), PORT), cwd=tmp_path)
    ready = router.wait_for_line("tf2py router: ready", timeout=60)
    port = re.search(r"--core zenoh://tcp/(127\.0\.0\.1:\d+)", ready).group(1)

    world = [line for line in rest if line.startswith("- {")]
    assert len(world) == 3
    (tmp_path / "world.yaml").write_text("\n".join(world) + "\n")
    (fleet_line,) = [line for line in rest if line.startswith("tf2py fleet")]
    fleet = spawn(argv(fleet_line, port), cwd=tmp_path)
    fleet.wait_for_line("tf2py fleet: ready at", timeout=60)

    (loop,) = [line for line in rest if line.startswith("for n in")]
    numbers, command = re.fullmatch(r"for n in ([\d ]+); do (.*) & done", loop).groups()
    for n in numbers.split():
        spawn(argv(command.replace("$n", n), port), cwd=tmp_path)
    for n in numbers.split():
        fleet.wait_for_line(f"robot /robot{n} joined", timeout=60)

    (echo_line,) = [line for line in rest if line.startswith("tf2py echo")]
    echo = subprocess.run(argv(echo_line, port), capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert echo.returncode == 0, echo.stderr
    assert "- Translation: [" in echo.stdout
    (frames_line,) = [line for line in rest if line.startswith("tf2py frames")]
    frames = subprocess.run(argv(frames_line, port), capture_output=True, text=True,
                            timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert frames.returncode == 0, frames.stderr
    assert frames.stdout.startswith("7 frames with a parent")

    import tf2py

    with tf2py.BufferClient(f"zenoh://tcp/{port}") as client:
        seen = client.lookup_transform("world", "robot2/map", tf2py.Time(), timeout=5.0)
        across = client.lookup_transform("robot1/base_link", "robot3/base_link",
                                         tf2py.Time(), timeout=5.0)
    assert seen.transform.translation.x == 10.0  # robot 2's map, ten metres east
    assert across.header.frame_id == "robot1/base_link"
