"""`tf2py fleet` as a command: ready line, join/leave lines, clean stops, one-line errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from helpers import Proc
from tf2py import Time
from tf2py.server.client import BufferClient

FLEET = [sys.executable, "-m", "tf2py.cli.main", "fleet"]


def test_fleet_prints_ready_joins_leaves_and_stops_on_sigterm(core, robots, tmp_path):
    world = tmp_path / "world.yaml"
    world.write_text("- {parent: world, child: robot0/map, translation: [1, 2, 3]}\n")
    proc = Proc(FLEET + ["--core", core, "--world", str(world), "--stale-after", "1"])
    try:
        ready = proc.wait_for_line("tf2py fleet: ready at ", timeout=90)
        address = ready.split("ready at ", 1)[1].split(";")[0]
        assert f"ask it with BufferClient('{address}')" in ready
        robot = robots.start(robots=1)
        proc.wait_for_line("tf2py fleet: robot /robot0 joined", timeout=90)
        with BufferClient(address) as client:
            t = client.lookup_transform("world", "robot0/laser", Time(), timeout=10)
            assert t.transform.translation.z == pytest.approx(3.5)
        robot.stop()
        proc.wait_for_line("tf2py fleet: robot /robot0 left", timeout=90)
        proc.wait_for_line("robot /robot0 gone for 1 s", timeout=90)
        proc.signal(signal.SIGTERM)
        assert proc.wait() == 0
    finally:
        proc.stop()


@pytest.mark.parametrize("args, words", [
    (["--core", "tcp://127.0.0.1:7400"], "--core must be a zenoh:// address"),
    ([], "no --core given and TF2PY_CORE is not set"),
    (["--core", "zenoh://", "--stats", "-1"], "--stats must be a number of seconds"),
    (["--core", "zenoh://", "--stats", "x"], "--stats must be a number of seconds"),
    (["--core", "zenoh://", "--world", "/dev/zero"], "not a regular file"),
    (["--core", "zenoh://tcp/127.0.0.1:99999"], "port '99999'"),
    (["--core", "zenoh://tcp/127.0.0.1:7447?colour=red"], "unknown parameter 'colour'"),
    (["--core", "zenoh://tcp/127.0.0.1:7447?config=/nonexistent.json5"], "config file"),
    (["--core", "zenoh://", "--stale-after", "-1"], "--stale-after must be a positive"),
    (["--core", "zenoh://", "--robots", " "], "--robots needs a pattern"),
    (["--core", "zenoh://", "--world", "/nonexistent/world.yaml"], "cannot read world file"),
])
def test_bad_input_gives_one_line(args, words):
    env = {k: v for k, v in os.environ.items() if k != "TF2PY_CORE"}
    result = subprocess.run(FLEET + args, capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr
    assert lines[0].startswith("tf2py fleet: error: ")


def test_bad_world_file_gives_one_line(tmp_path):
    world = tmp_path / "world.yaml"
    world.write_text("- {parent: world, child: robot0/map, rotation: [0, 0, 0, 3]}\n")
    result = subprocess.run(FLEET + ["--core", "zenoh://", "--world", str(world)],
                            capture_output=True, text=True, timeout=60)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "not a unit quaternion" in lines[0]


def test_a_keyed_fleet_answers_the_sites_clients_and_refuses_others(tmp_path):
    from helpers import free_port
    from tf2py import StaticTransformBroadcaster, TimeoutException, make_transform

    for site in ("site", "other"):
        subprocess.run([sys.executable, "-m", "tf2py.cli.main", "keygen", str(tmp_path / site)],
                       check=True, capture_output=True, timeout=60)
    site, other = str(tmp_path / "site"), str(tmp_path / "other")
    locator = f"tls/127.0.0.1:{free_port()}"
    core = f"zenoh://{locator}"
    router = Proc([sys.executable, "-m", "tf2py.cli.main", "router", "--listen", locator,
                   "--keys", site])
    fleet = Proc(FLEET + ["--core", core, "--keys", site])
    try:
        router.wait_for_line("tf2py router: ready", timeout=60)
        fleet.wait_for_line("tf2py fleet: ready at ", timeout=90)
        with StaticTransformBroadcaster(core=f"{core}?namespace=/robot7", keys=site) as robot:
            robot.send_transform(make_transform("map", "dock", (4.0, 0.0, 0.0)))
            fleet.wait_for_line("tf2py fleet: robot /robot7 joined", timeout=90)
            with BufferClient(core, keys=site) as member:
                t = member.lookup_transform("robot7/map", "robot7/dock", Time(), timeout=20)
                assert t.transform.translation.x == 4.0
            with BufferClient(core, keys=other) as stranger:
                with pytest.raises(TimeoutException):
                    stranger.lookup_transform("robot7/map", "robot7/dock", Time(), timeout=3)
        fleet.signal(signal.SIGTERM)
        assert fleet.wait() == 0
    finally:
        fleet.stop()
        router.stop()


def test_stats_lines_say_what_the_fleet_does_and_json_gives_the_same(core, robots):
    robots.start(robots=2, rate=20)
    for extra, parse in ((["--stats", "0.5"], None), (["--stats", "0.5", "--json"], json.loads)):
        proc = Proc(FLEET + ["--core", core, *extra])
        try:
            proc.wait_for_line("tf2py fleet: ready at ", timeout=90)
            if parse is None:
                line = proc.wait_for_line("tf2py fleet: stats: 2 robots", timeout=90)
                assert "transforms/s" in line and "worst lag" in line and "dropped:" in line
            else:
                line = proc.wait_for_line('"robots": 2', timeout=90)
                stats = parse(line)["stats"]
                assert stats["robots"] == 2 and stats["transforms_per_s"] > 0
                assert {"samples_per_s", "worst_lag_s", "lookup_ms", "dropped_by_cause",
                        "bytes"} <= set(stats)
            proc.signal(signal.SIGTERM)
            assert proc.wait() == 0
        finally:
            proc.stop()


def test_a_client_mode_fleet_waits_for_its_router_and_says_so(tmp_path):
    # mode=client cannot open without its router; the fleet, a service, waits for it
    from fleet_support import ROBOTS, zenoh_config
    from helpers import free_port

    locator = f"tcp/127.0.0.1:{free_port()}"
    core = f"zenoh://{locator}?domain=0&mode=client&config={zenoh_config(tmp_path)}"
    proc = Proc(FLEET + ["--core", core, "--stats", "0"])
    router = None
    try:
        proc.wait_for_line(f"tf2py fleet: router {locator} unreachable (waiting for it)",
                           timeout=60)
        router = Proc([sys.executable, ROBOTS, "--router", locator])
        router.wait_for_line("ready", timeout=90)
        proc.wait_for_line(f"tf2py fleet: router {locator} back", timeout=60)
        proc.wait_for_line("tf2py fleet: ready at ", timeout=60)
        proc.signal(signal.SIGTERM)
        assert proc.wait() == 0
        assert proc.output().count("unreachable") == 1
    finally:
        proc.stop()
        if router is not None:
            router.stop()
