"""Fixtures for the fleet tests: a real Zenoh router and simulated robots, each a process."""

from __future__ import annotations

import sys

import pytest

from fleet_support import ROBOTS, zenoh_config
from helpers import Proc, free_port

zenoh = pytest.importorskip("zenoh", reason="the zenoh extra is not installed")



@pytest.fixture
def router():
    """A Zenoh router on a free loopback port: its locator, e.g. tcp/127.0.0.1:PORT."""
    locator = f"tcp/127.0.0.1:{free_port()}"
    proc = Proc([sys.executable, ROBOTS, "--router", locator])
    try:
        proc.wait_for_line("ready", timeout=90)
        yield locator
    finally:
        proc.stop()


@pytest.fixture
def core(router, tmp_path):
    """The zenoh:// address of the router, domain 0, multicast scouting off."""
    return f"zenoh://{router}?domain=0&mode=client&config={zenoh_config(tmp_path)}"


class Robots:
    """Simulated robot processes (simulators/fleet_robots.py), all stopped at the end."""

    def __init__(self, router: str):
        self.router = router
        self.procs: list[Proc] = []

    def start(self, *args: str, prefix="robot", robots=1, first=0, rate=20.0, frames=5,
              wait=True) -> Proc:
        proc = Proc([sys.executable, ROBOTS, "--connect", self.router, "--prefix", prefix,
                     "--robots", str(robots), "--first", str(first), "--rate", str(rate),
                     "--frames", str(frames), *args])
        self.procs.append(proc)
        if wait:
            proc.wait_for_line("ready", timeout=90)
        return proc

    def stop_all(self) -> None:
        for proc in self.procs:
            proc.stop()


@pytest.fixture
def robots(router):
    sims = Robots(router)
    try:
        yield sims
    finally:
        sims.stop_all()
