"""Across hosts: core, broadcaster and listener in three network namespaces joined by veth
pairs, with addresses inside those namespaces only. Needs root and ``ip netns``; skipped with
the reason otherwise. The namespaces are always removed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid

import pytest

from transport_support import DYNAMIC_BROADCASTER, STATIC_BROADCASTER

LISTENER = """
import sys, time
from tf2py.transport.listener import TransformSubscriber
seen = set()
def on_batch(batch):
    for t in batch.transforms:
        key = ("static" if batch.is_static else "tf", t.child_frame_id)
        if key not in seen:
            seen.add(key)
            print("got", *key, batch.authority, flush=True)
sub = TransformSubscriber(sys.argv[1], on_batch=on_batch)
print("listening", flush=True)
try:
    while True:
        time.sleep(1)
except KeyboardInterrupt:
    pass
sub.close()
"""


def _run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=20)


def _netns_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return "the 'ip' command (iproute2) is not installed"
    probe = f"tf2pyprobe{uuid.uuid4().hex[:6]}"
    try:
        _run("ip", "netns", "add", probe)
    except (subprocess.SubprocessError, OSError) as exc:
        return f"'ip netns add' is not allowed here: {exc}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=20)
    return None


@pytest.fixture
def three_hosts():
    """Namespaces core, bcast, listen; bcast<->core on 10.231.1.0/24, listen<->core on
    10.231.2.0/24. Yields (names, core_ip_for_bcast, core_ip_for_listen)."""
    reason = _netns_unavailable()
    if reason:
        pytest.skip(reason)
    tag = uuid.uuid4().hex[:6]
    names = {role: f"tf2py{role}{tag}" for role in ("core", "bcast", "listen")}
    links = []
    try:
        for name in names.values():
            _run("ip", "netns", "add", name)
            _run("ip", "-n", name, "link", "set", "lo", "up")
        for index, role in ((1, "bcast"), (2, "listen")):
            a, b = f"tc{index}{tag}", f"tp{index}{tag}"
            links.append(a)
            _run("ip", "link", "add", a, "type", "veth", "peer", "name", b)
            _run("ip", "link", "set", a, "netns", names["core"])
            _run("ip", "link", "set", b, "netns", names[role])
            _run("ip", "-n", names["core"], "addr", "add", f"10.231.{index}.1/24", "dev", a)
            _run("ip", "-n", names[role], "addr", "add", f"10.231.{index}.2/24", "dev", b)
            _run("ip", "-n", names["core"], "link", "set", a, "up")
            _run("ip", "-n", names[role], "link", "set", b, "up")
        yield names, "10.231.1.1", "10.231.2.1"
    finally:
        for name in names.values():
            # Deleting a namespace also removes the veth pairs with an end inside it.
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=20)
        for link in links:
            # A pair created but not yet moved (set-up failed half-way) is still here.
            subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=20)
        leftover = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
        assert not any(n in leftover.stdout for n in names.values())


def test_transforms_flow_between_three_network_namespaces(three_hosts, spawn):
    names, core_ip_bcast, core_ip_listen = three_hosts
    netns = ["ip", "netns", "exec"]
    core = spawn(netns + [names["core"], sys.executable, "-m", "tf2py.cli.main", "core",
                          "--address", "tcp://0.0.0.0:0"])
    line = core.wait_for_line("tf2py core: ready at ")
    port = line.rsplit(":", 1)[1]
    listener = spawn(netns + [names["listen"], sys.executable, "-c", LISTENER,
                              f"tcp://{core_ip_listen}:{port}"])
    listener.wait_for_line("listening")
    spawn(netns + [names["bcast"], sys.executable, "-c", DYNAMIC_BROADCASTER,
                   f"tcp://{core_ip_bcast}:{port}", "rover"])
    spawn(netns + [names["bcast"], sys.executable, "-c", STATIC_BROADCASTER,
                   f"tcp://{core_ip_bcast}:{port}", "mast"])
    listener.wait_for_line("got tf rover", timeout=20)
    listener.wait_for_line("got static mast", timeout=20)
