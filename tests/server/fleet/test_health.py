"""The fleet says when its router is unreachable, lost and back (issue 26.3)."""

from __future__ import annotations

import sys

from fleet_support import ROBOTS, zenoh_config
from helpers import Proc, free_port, wait_for
from test_fleet import Lines
from tf2py.server.fleet.service import Fleet


def test_the_fleet_says_when_its_router_is_unreachable_lost_and_back(tmp_path):
    locator = f"tcp/127.0.0.1:{free_port()}"
    core = f"zenoh://{locator}?domain=0&mode=peer&config={zenoh_config(tmp_path)}"
    lines = Lines()
    router = None
    with Fleet(core, stale_after=0.5, on_event=lines) as fleet:
        wait_for(lambda: lines.has(f"router {locator} unreachable"), 30)
        assert fleet.stats()["router"] == "unreachable"
        for cycle in range(2):
            router = Proc([sys.executable, ROBOTS, "--router", locator])
            router.wait_for_line("ready", timeout=90)
            count = sum("back" in line for line in lines.lines)
            wait_for(lambda: sum("back" in line for line in lines.lines) == count + 1, 60,
                     message="the fleet sees its router come")
            assert fleet.stats()["router"] == "connected"
            router.stop()
            wait_for(lambda: sum(f"router {locator} lost" in line for line in lines.lines)
                     == cycle + 1, 60, message="the fleet sees its router go")
