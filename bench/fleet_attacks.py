"""tf2py fleet under the attacks of issue 30: a namespace flood, then a robot joining; robots
coming and going in cycles.

    python -m bench fleet_attacks [--flood 130000] [--tokens 10000] [--cycles 10] [--robots 100]
    (--quick: 2 000 namespaces, 200 tokens, 2 cycles of 10 robots)

A Zenoh router, ``tf2py fleet`` (its own process, ``--stale-after 1 --stats 0.5 --json``)
and, in this process, one Zenoh session that floods: ``--flood`` samples on as many distinct
namespaces (no liveliness token, as fast as Zenoh takes them), then ``--tokens`` rmw_zenoh
/tf publisher tokens on as many namespaces, all from that one session. Then one robot
(simulators/fleet_robots.py) joins: the time from its "ready" to the first BufferClient lookup of
its frames that the fleet answers. Then ``--robots`` robots come and go ``--cycles`` times:
the fleet's frames with data and its RSS with the robots there and after they are forgotten.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from bench.fleet import ROBOTS
from bench.harness import PY, Child, Run, free_port, rss_mib, tf2py_command
from simulators.fleet_robots import TF_HASH, TF_TYPE, robot_frames, token_keys


def latest_stats(fleet: Child) -> dict[str, Any]:
    for line in reversed(fleet.lines):
        if line.startswith('{"stats"'):
            return json.loads(line)["stats"]
    return {}


def wait_stats(fleet: Child, test: Callable[[dict[str, Any]], bool], timeout: float = 120.0
               ) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = latest_stats(fleet)
        if stats and test(stats):
            return stats
        time.sleep(0.1)
    raise RuntimeError(f"the fleet never reached the state: {latest_stats(fleet)}")


def flood(locator: str, namespaces: int, tokens: int) -> tuple[float, float]:
    """Samples on ``namespaces`` namespaces, then ``tokens`` tokens, from one session;
    the seconds each took."""
    import numpy as np

    import zenoh
    from tf2py.transport.ros2.cdr import encode_tf_columns

    config = zenoh.Config()
    config.insert_json5("mode", '"client"')
    config.insert_json5("connect/endpoints", json.dumps([locator]))
    config.insert_json5("scouting/multicast/enabled", "false")
    session = zenoh.open(config)
    parents, children = robot_frames(5)
    values = np.zeros((5, 7))
    values[:, 6] = 1.0
    payload = encode_tf_columns(parents, children, np.full(5, time.time_ns()), values)
    started = time.monotonic()
    for k in range(namespaces):
        session.put(f"0/flood{k}/tf/{TF_TYPE}/{TF_HASH}", payload)
    flooded = time.monotonic() - started
    started = time.monotonic()
    zid = str(session.info.zid())
    declared = []
    for k in range(tokens):
        declared.append(session.liveliness().declare_token(
            token_keys(0, zid, f"tokenflood{k}", f"n{k}")[1]))
    tokened = time.monotonic() - started
    flood.session = session  # type: ignore[attr-defined]  # kept open: its tokens stay
    flood.tokens = declared  # type: ignore[attr-defined]
    return flooded, tokened


def join_time(core: str, locator: str) -> float:
    from tf2py import Time
    from tf2py.server.client import BufferClient
    from tf2py.server.client_common import ServerTimeoutException

    with BufferClient(core) as client:
        robot = Child([PY, ROBOTS, "--connect", locator, "--robots", "1",
                       "--prefix", "late", "--frames", "5"])
        try:
            robot.wait_line("ready")
            started = time.monotonic()
            while True:
                try:
                    if client.can_transform("late0/map", "late0/base_link", Time()):
                        return time.monotonic() - started
                except ServerTimeoutException:
                    print("  (a lookup went unanswered for 2 s)", flush=True)
                if time.monotonic() - started > 120:
                    return float("inf")
                time.sleep(0.02)
        finally:
            robot.stop()


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench fleet_attacks",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=2_000 if run.quick else 130_000)
    parser.add_argument("--tokens", type=int, default=200 if run.quick else 10_000)
    parser.add_argument("--cycles", type=int, default=2 if run.quick else 10)
    parser.add_argument("--robots", type=int, default=10 if run.quick else 100)
    args = parser.parse_args(argv)
    locator = f"tcp/127.0.0.1:{free_port()}"
    core = f"zenoh://{locator}?domain=0&mode=client"
    router = Child([PY, ROBOTS, "--router", locator])
    fleet = None
    try:
        router.wait_line("ready")
        fleet = Child(tf2py_command("fleet", "--core", core, "--stale-after", "1", "--stats", "0.5",
                                    "--json"))
        fleet.wait_line("tf2py fleet: ready")
        pid = fleet.popen.pid
        run.note(f"fleet RSS at start: {rss_mib(pid):.0f} MiB")
        flooded, tokened = flood(locator, args.flood, args.tokens)
        stats = wait_stats(fleet, lambda s: s.get("pending", 1) == 0)
        run.note(f"flood: {args.flood} namespaces in {flooded:.1f} s, {args.tokens} tokens in "
              f"{tokened:.1f} s from one session; fleet holds {stats['robots_held']} robots, "
              f"dropped {stats['dropped_by_cause']}, RSS {rss_mib(pid):.0f} MiB")
        run.note(f"a robot joining after the flood is heard in {join_time(core, locator):.3f} s")
        # The late robot and the flood's samples are forgotten; the tokens' robots stay.
        settled = wait_stats(fleet, lambda s: s["robots_held"] == s["robots"])
        held_before, present = settled["robots_held"], settled["robots"]
        rows = []
        table = run.table(f"{args.robots} robots come and go, {args.cycles} cycles",
                          ["cycle", "frame ids", "cache bytes", "RSS MiB", "frame ids after",
                           "bytes after", "RSS MiB after"], [6, 10, 12, 8, 16, 12, 14])
        for cycle in range(args.cycles):
            robots = Child([PY, ROBOTS, "--connect", locator, "--robots",
                            str(args.robots), "--prefix", "churn", "--frames", "10"])
            robots.wait_line("ready")
            here = wait_stats(fleet, lambda s: s["robots"] >= args.robots + present
                              and s["names"] >= args.robots * 13
                              and s["bytes"]["caches"] > 0)
            rss_here = rss_mib(pid)
            robots.stop()
            gone = wait_stats(fleet, lambda s: s["robots"] <= present and
                              s["robots_held"] <= held_before and s["bytes"]["caches"] == 0)
            rows.append((cycle + 1, here["names"], rss_here, gone["names"], rss_mib(pid)))
            table.add(cycle + 1, here["names"], here["bytes"]["caches"], f"{rss_here:.0f}",
                      gone["names"], gone["bytes"]["caches"], f"{rss_mib(pid):.0f}",
                      names=here["names"], rss_mib=rss_here, names_after=gone["names"])
        first, last = rows[0], rows[-1]
        run.note(f"after {args.cycles} cycles: frame ids {first[1]} -> {last[1]} with the robots "
                 f"(x{last[1] / first[1]:.2f}), RSS {first[2]:.0f} -> {last[2]:.0f} MiB "
                 f"(x{last[2] / first[2]:.2f})")
    finally:
        if fleet is not None:
            fleet.stop()
        router.stop()
