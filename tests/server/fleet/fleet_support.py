"""What the fleet tests share besides fixtures (a module of its own: several test folders have a
conftest.py, so ``from conftest import ...`` is not reliable once they run together)."""

from __future__ import annotations

from helpers import REPO

#: The simulated robots; ``ROBOTS --router LOCATOR`` runs a Zenoh router.
ROBOTS = str(REPO / "simulators" / "fleet_robots.py")


def zenoh_config(tmp_path) -> str:
    """A Zenoh configuration file with multicast scouting off (nothing leaves loopback)."""
    path = tmp_path / "zenoh.json5"
    path.write_text('{ scouting: { multicast: { enabled: false } } }\n')
    return str(path)
