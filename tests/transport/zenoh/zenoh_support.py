"""What the Zenoh tests share: a real router in its own process (``tf2py router`` on a free
loopback port), the reference rmw_zenoh peer (reference_peer.py) in its own processes, and
addresses that keep every link on loopback (multicast scouting off, listening on 127.0.0.1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from helpers import free_port

pytest.importorskip("zenoh")
pytest.importorskip("xxhash")

HERE = Path(__file__).resolve().parent
PEER = str(HERE / "reference_peer.py")


def start_router(spawn, tf2py_command, *extra: str, protocol: str = "tcp"):
    """``(process, locator)`` of a tf2py router listening on a free loopback port."""
    locator = f"{protocol}/127.0.0.1:{free_port()}"
    proc = spawn([*tf2py_command, "router", "--listen", locator, *extra])
    proc.wait_for_line("tf2py router: ready", timeout=30)
    return proc, locator


def start_peer(spawn, locator: str, domain: int, namespace: str, *command: str):
    """The reference peer, once it says it is ready."""
    proc = spawn([sys.executable, PEER, locator, str(domain), namespace, *command])
    proc.wait_for_line('"ready"', timeout=30)
    return proc


def records(proc, kind: str) -> list[dict]:
    """The peer's JSON lines holding ``kind`` ("sample", "token", ...)."""
    out = []
    for line in proc.output().splitlines():
        if line.startswith("{"):
            obj = json.loads(line)
            if kind in obj:
                out.append(obj)
    return out
