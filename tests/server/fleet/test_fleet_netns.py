"""The fleet across hosts: a router, two robots, the fleet and a client, each in a network
namespace of its own that this test creates (veth pairs to a bridge in the router's namespace;
addresses 10.231.1.0/24 exist only inside the namespaces; all removed after, also on failure).
So the lookups below cross a real network path, not loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from helpers import REPO, Proc

ROBOTS = str(REPO / "simulators" / "fleet_robots.py")

SUBNET = "10.231.1"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


def _netns_unavailable() -> str | None:
    try:
        probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                               timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`ip netns` is unavailable: {exc}"
    if probe.returncode != 0:
        return f"`ip netns` is unavailable: {probe.stderr.strip()}"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    return None


class Hosts:
    """Network namespaces named tf2fl-<role>-<run id>, one per role, on one bridge."""

    def __init__(self, roles: list[str]):
        self.run = uuid.uuid4().hex[:8]
        self.names = {role: f"tf2fl-{role}-{self.run}" for role in roles}
        self.addresses: dict[str, str] = {}
        self.created: list[str] = []

    def up(self) -> None:
        hub = self.names["router"]
        for name in self.names.values():
            _ip("netns", "add", name)
            self.created.append(name)
            _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", hub, "addr", "add", f"{SUBNET}.1/24", "dev", "br0")
        _ip("-n", hub, "link", "set", "br0", "up")
        self.addresses["router"] = f"{SUBNET}.1"
        for k, (role, name) in enumerate(
                (r, n) for r, n in self.names.items() if r != "router"):
            host_end, hub_end = f"v{k}", f"v{k}-hub"
            _ip("-n", hub, "link", "add", hub_end, "type", "veth", "peer", "name", host_end,
                "netns", name)
            _ip("-n", hub, "link", "set", hub_end, "master", "br0")
            _ip("-n", hub, "link", "set", hub_end, "up")
            address = f"{SUBNET}.{k + 2}"
            _ip("-n", name, "addr", "add", f"{address}/24", "dev", host_end)
            _ip("-n", name, "link", "set", host_end, "up")
            self.addresses[role] = address

    def down(self) -> None:
        for name in self.created:
            _ip("netns", "del", name, check=False)
        self.created.clear()

    def run_in(self, role: str, args: list[str]) -> Proc:
        return Proc(["ip", "netns", "exec", self.names[role], *args])


@pytest.fixture
def hosts():
    reason = _netns_unavailable()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"across-hosts test cannot run under CI: {reason}")
        pytest.skip(reason)
    net = Hosts(["router", "robot_a", "robot_b", "fleet"])
    try:
        net.up()
        yield net
    finally:
        net.down()
        leftover = _ip("netns", "list").stdout
        assert net.run not in leftover, f"network namespaces left behind: {leftover}"


def test_cross_robot_lookup_across_hosts(hosts, tmp_path):
    config = tmp_path / "zenoh.json5"
    config.write_text("{ scouting: { multicast: { enabled: false } } }\n")
    world = tmp_path / "world.yaml"
    world.write_text("- {parent: world, child: robot0/map, translation: [10, 0, 0]}\n"
                     "- {parent: world, child: robot1/map, translation: [0, 5, 0]}\n")
    router_locator = f"tcp/{hosts.addresses['router']}:7447"
    core = f"zenoh://{router_locator}?domain=0&mode=client&config={config}"
    procs = []
    try:
        procs.append(hosts.run_in("router", [sys.executable, ROBOTS, "--router", router_locator]))
        procs[-1].wait_for_line("ready", timeout=90)
        fleet = hosts.run_in("fleet", [sys.executable, "-m", "tf2py.cli.main", "fleet",
                                       "--core", core, "--world", str(world)])
        procs.append(fleet)
        fleet.wait_for_line("tf2py fleet: ready at", timeout=90)
        for role, first in (("robot_a", 0), ("robot_b", 1)):
            procs.append(hosts.run_in(role, [sys.executable, ROBOTS, "--connect",
                                             router_locator, "--robots", "1", "--first",
                                             str(first), "--frames", "5"]))
            procs[-1].wait_for_line("ready", timeout=90)
        fleet.wait_for_line("robot /robot0 joined", timeout=90)
        fleet.wait_for_line("robot /robot1 joined", timeout=90)
        ask = ("import sys; from tf2py import Time; from tf2py.server.client import BufferClient\n"
               "with BufferClient(sys.argv[1]) as c:\n"
               "    t = c.lookup_transform('robot1/base_link', 'robot0/base_link', Time(), "
               "timeout=15).transform.translation\n"
               "    print('answer', round(t.x, 6), round(t.y, 6), flush=True)\n")
        client = hosts.run_in("robot_a", [sys.executable, "-c", ask, core])
        procs.append(client)
        line = client.wait_for_line("answer", timeout=30)
        assert line.split()[1:] == ["10.0", "-5.0"]
        assert client.wait() == 0
    finally:
        for proc in reversed(procs):
            proc.stop()


# Keyed hosts: a script per role (the network namespaces share this filesystem, so the test
# tells the strangers when the member has heard by a file, not by a sleep).
TALKER = """
import sys, threading
from tf2py import StaticTransformBroadcaster, make_transform
core, keys = sys.argv[1:3]
with StaticTransformBroadcaster(core=core, keys=keys) as b:
    b.send_transform(make_transform("world", "secret", (1.0, 2.0, 3.0)))
    print("ready", flush=True)
    threading.Event().wait()
"""
MEMBER = """
import sys, time
from tf2py import Buffer, Time, TransformListener
core, keys = sys.argv[1:3]
buffer = Buffer()
with TransformListener(buffer, core=core, keys=keys):
    deadline = time.monotonic() + 60
    while not buffer.can_transform("world", "secret", Time()) and time.monotonic() < deadline:
        time.sleep(0.05)
    t = buffer.lookup_transform("world", "secret", Time()).transform.translation
    print("heard", t.x, t.y, t.z, flush=True)
"""
STRANGERS = """
import os, sys, time
from tf2py import Buffer, Time, TransformListener
core, other_keys, done = sys.argv[1:4]
other, outsider = Buffer(), Buffer()
# Without keys a tls/ locator is refused at once: the outsider tries the router over plain tcp/
plain = core.replace("zenoh://tls/", "zenoh://tcp/", 1)
with TransformListener(other, core=core, keys=other_keys), TransformListener(outsider, core=plain):
    print("listening", flush=True)
    deadline = time.monotonic() + 90
    while not os.path.exists(done) and time.monotonic() < deadline:
        time.sleep(0.05)
    print("other", other.can_transform("world", "secret", Time()), other.get_frames(),
          "outsider", outsider.can_transform("world", "secret", Time()), outsider.get_frames(),
          flush=True)
"""


def test_keyed_hosts_hear_each_other_and_a_host_without_the_keys_hears_nothing(
        hosts, tmp_path):
    for site in ("site", "other"):
        subprocess.run([sys.executable, "-m", "tf2py.cli.main", "keygen", str(tmp_path / site)],
                       check=True, capture_output=True, timeout=60)
    subprocess.run([sys.executable, "-m", "tf2py.cli.main", "keygen", str(tmp_path / "site"),
                    "--add", "robot7"], check=True, capture_output=True, timeout=60)
    locator = f"tls/{hosts.addresses['router']}:7447"
    core = f"zenoh://{locator}"
    done = tmp_path / "member-heard"
    procs = []
    try:
        procs.append(hosts.run_in("router", [sys.executable, "-m", "tf2py.cli.main", "router",
                                             "--listen", locator, "--keys",
                                             str(tmp_path / "site")]))
        procs[-1].wait_for_line("tf2py router: ready", timeout=90)
        strangers = hosts.run_in("fleet", [sys.executable, "-c", STRANGERS, core,
                                           str(tmp_path / "other"), str(done)])
        procs.append(strangers)
        strangers.wait_for_line("listening", timeout=90)
        procs.append(hosts.run_in("robot_a", [sys.executable, "-c", TALKER, core,
                                              str(tmp_path / "site")]))
        procs[-1].wait_for_line("ready", timeout=90)
        member = hosts.run_in("robot_b", [sys.executable, "-c", MEMBER, core,
                                          str(tmp_path / "site" / "robot7")])
        procs.append(member)
        assert member.wait_for_line("heard", timeout=90).split()[1:] == ["1.0", "2.0", "3.0"]
        assert member.wait() == 0
        # The strangers listened all along, on a host of the same network: nothing reached them.
        done.touch()
        line = strangers.wait_for_line("outsider", timeout=30)
        assert line.split() == ["other", "False", "[]", "outsider", "False", "[]"]
        assert strangers.wait() == 0
    finally:
        for proc in reversed(procs):
            proc.stop()
