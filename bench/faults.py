"""Fault campaign of the buffer server and the tools: one command, a bounded run of each attack
class, a table of inputs tried, crashes (must be 0), valid transforms lost (must be 0), and the
server's peak memory against its bound; then the server's answer staleness with 10 000 waiting
goals on a 100 Hz frame, against the same server without them, in the same run.

    python -m bench faults [--quick]

The bus (`tf2py core`) and the server (`tf2py server`) run as real subprocesses; this process
broadcasts a 100 Hz frame and plays the attackers and the well-behaved clients. A crash is a
subprocess that exits, or an exception other than the documented error type (BufferServer:
none reaches the caller but tf2's and TimeoutException; bags: BagError; launch files:
LaunchFileError; command-line numbers: CommandError). Valid transforms lost: the 100 Hz frame's
samples sent during the campaign that the server's buffer does not hold at the end (looked up
through the server, one by one, at their own stamps).

If bench/bench/faults_bus.py is present (the bus's own campaign), it runs afterwards.

The attack classes are in fault_attacks_server.py and fault_attacks_tools.py, the processes,
the stream and the /proc readings in faults_support.py; this script holds the staleness
measurement and the campaign itself.
"""

from __future__ import annotations

import argparse
import time

from bench.faults_server_attacks import (
    attack_forged_answers,
    attack_garbage,
    attack_goal_flood,
    attack_killed_clients,
    attack_timeouts,
)
from bench.faults_support import Row, Stream, dealer
from bench.faults_tool_attacks import attack_bags, attack_launch_files, attack_numbers
from bench.harness import PY, REPO, Child, Run, cpu_percent, hwm_mib, percentile, rss_mib
from tf2py import StaticTransformBroadcaster, TransformBroadcaster, make_transform
from tf2py.buffer.exceptions import TransformException
from tf2py.server import protocol
from tf2py.server.client import BufferClient
from tf2py.server.server import MAX_GOAL_TIMEOUT, MAX_WAITING_GOALS, MAX_WAITING_GOALS_PER_CLIENT

# --- staleness with 10 000 waiting goals ------------------------------------------------------


def _sent_at(stream, wanted):
    """When the first sample stamped at or after ``wanted`` was sent. The answer proves it
    was sent; the stream's thread records it just after sending, and a thread paused between
    the two (this VM pauses threads for tenths of a second) records it after the answer."""
    deadline = time.monotonic() + 5.0
    while True:
        sent = next((wall for stamp, wall in list(stream.sent) if stamp >= wanted), None)
        if sent is not None or time.monotonic() > deadline:
            if sent is None:
                raise RuntimeError(f"answered at {wanted} but no sample that late was sent")
            return sent
        time.sleep(0.001)


def staleness(server, stream, probes, waiting_clients):
    """Answer staleness (bus sample sent -> answer received, for goals waiting for that
    sample's stamp) and p99 of an answerable lookup, while ``waiting_clients`` hold goals.
    A probe not answered within its 5 s timeout counts as 5000 ms (a lower bound); after 3
    of those the rest are skipped."""
    client = BufferClient(server.address, timeout_padding=5.0)
    stale = []
    missed = 0
    try:
        client.lookup_transform("map", "base", 0, timeout=5.0)
        for _ in range(5):  # warm-up, not counted
            wanted = time.time() + 0.03
            try:
                client.lookup_transform_async("map", "base", wanted, timeout=5.0).result(10)
            except TransformException:
                pass
        for _ in range(probes):
            wanted = time.time() + 0.03
            future = client.lookup_transform_async("map", "base", wanted, timeout=5.0)
            try:
                answer = future.result(timeout=10)
            except TransformException:
                stale.append(5000.0)
                missed += 1
                if missed >= 3:
                    break
                continue
            got = time.time()
            sent = _sent_at(stream, wanted)
            stale.append((got - sent) * 1e3)
            if answer.child_frame_id != "base":
                raise RuntimeError(f"wrong answer {answer}")
        latency = []
        for _ in range(probes * 3):
            t0 = time.perf_counter()
            client.lookup_transform("map", "laser", 0)
            latency.append((time.perf_counter() - t0) * 1e3)
    finally:
        client.close()
    return stale, latency


STALE_FRAMES = 1000


def hold_waiting_goals(address, count):
    """``count`` goals waiting on the 100 Hz frame, a third of each kind: for times far ahead
    of the data (timed, all distinct), untimed towards a frame of another tree
    (ConnectivityException), and untimed towards one of STALE_FRAMES frames whose only
    sample is older than the 100 Hz frame's oldest (backward extrapolation at the latest
    common time: distinct lookups that a naive server re-checks on every 100 Hz sample)."""
    per = MAX_WAITING_GOALS_PER_CLIENT // 2
    dealers = []
    far = int((time.time() + 10**6) * 1e9)
    for start in range(0, count, per):
        d = dealer(address)
        for i in range(start, min(count, start + per)):
            if i % 3 == 0:
                d.send(protocol.pack_goal(i, "map", "base", far + i, 0, "", False,
                                          int(600e9)))
            elif i % 3 == 1:
                d.send(protocol.pack_goal(i, "base", "island", 0, 0, "", False, int(600e9)))
            else:
                d.send(protocol.pack_goal(i, "base", f"stale_{i % STALE_FRAMES}", 0, 0, "",
                                          False, int(600e9)))
        dealers.append(d)
    for j, d in enumerate(dealers):
        expected = min(count, (j + 1) * per) - j * per
        n = 0
        while n < expected:
            message = protocol.parse_server_message(d.recv())
            if message[0] == "result":
                raise RuntimeError(f"a goal meant to wait was answered: {message}")
            n += message[0] == "accepted"
    return dealers


#: The server's cache: longer than the whole campaign, so that every sample sent during it can
#: be looked up at the end (with 120 s, a campaign of 5 min on a slow machine counted its first
#: minutes' samples, aged out of the window, as lost).
SERVER_CACHE_S = 1800


def lost_transforms(server, stream, first, last):
    """Samples of the stream sent between ``first`` and ``last`` (wall) that the server's
    buffer does not hold (a lookup at their own stamp gives another translation)."""
    lost = 0
    checked = 0
    with BufferClient(server.address, timeout_padding=5.0) as client:
        for k, (stamp, wall) in enumerate(list(stream.sent)):
            if not first <= wall <= last:
                continue
            checked += 1
            try:
                t = client.lookup_transform("map", "base", stamp)
                if abs(t.transform.translation.x - k * 0.01) > 1e-9:
                    lost += 1
            except TransformException:
                lost += 1
    return lost, checked


def main(run: Run, argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench faults", description=__doc__.splitlines()[0])
    parser.add_argument("--waiting", type=int, default=1_000 if run.quick else 10_000)
    parser.add_argument("--server-root", default=str(REPO),
                        help="run `tf2py server` from this source tree (e.g. an export of an "
                        "older commit, to compare; with --staleness-only)")
    parser.add_argument("--staleness-only", action="store_true",
                        help="only the waiting-goals figures (staleness, lookups, CPU)")
    opts = parser.parse_args(argv)
    scale = 0.03 if run.quick else 1.0

    core = Child([PY, "-m", "tf2py.cli.main", "core", "--address", "tcp://127.0.0.1:0"],
                 ready="ready at ")
    server = Child([PY, "-m", "tf2py.cli.main", "server", "--core", core.address, "--address",
                    "tcp://127.0.0.1:0", "--cache-time", str(SERVER_CACHE_S)], ready="ready at ",
                   cwd=opts.server_root, env={"PYTHONPATH": opts.server_root})
    statics = StaticTransformBroadcaster(core=core.address)
    statics.send_transform([make_transform("base", "laser", (0.1, 0, 0)),
                            make_transform("lonely", "island", (1, 0, 0))])
    stream = Stream(core.address)
    rows = []
    try:
        with BufferClient(server.address, timeout_padding=5.0) as c:
            c.lookup_transform("map", "laser", 0, timeout=10.0)  # the stream reaches the server
            stale_stamp = time.time() - 60.0  # older than the stream's first sample
            with TransformBroadcaster(core=core.address) as once:
                for _ in range(20):  # a new publisher's first messages may precede its link
                    once.send_transform([make_transform("map", f"stale_{k}", (k, 0, 0),
                                                        stamp=stale_stamp)
                                         for k in range(STALE_FRAMES)])
                    if c.can_transform("map", f"stale_{STALE_FRAMES - 1}", stale_stamp,
                                       timeout=1.0):
                        break
                else:
                    raise RuntimeError("the old frames did not reach the server")
        base_rss = rss_mib(server.pid) * 1024
        campaign_start = time.time()

        # staleness first without, then with the waiting goals
        stale0, lat0 = staleness(server, stream, int(300 * scale) + 20, 0)
        cpu0 = cpu_percent(server.pid, 1.0 if run.quick else 3.0)
        dealers = hold_waiting_goals(server.address, opts.waiting)
        cpu1 = cpu_percent(server.pid, 1.0 if run.quick else 3.0)
        stale1, lat1 = staleness(server, stream, int(300 * scale) + 20, opts.waiting)

        if not opts.staleness_only:
            rows.append(attack_goal_flood(server, int(2000 * scale)))
            rows.append(attack_timeouts(server, int(2000 * scale)))
            rows.append(attack_garbage(server, int(5000 * scale)))
            rows.append(attack_killed_clients(4, int(2000 * scale)))
            rows.append(attack_forged_answers(int(50 * scale) + 5))
        for d in dealers:
            d.close()
        campaign_end = time.time() - 0.2
        time.sleep(0.3)
        if campaign_end - campaign_start > SERVER_CACHE_S - 60:
            raise RuntimeError(f"the campaign ran {campaign_end - campaign_start:.0f} s, near "
                               f"the server's {SERVER_CACHE_S} s cache: its samples cannot be checked")
        lost, checked = lost_transforms(server, stream, campaign_start, campaign_end)
        server_row = Row("100 Hz stream during the server attacks")
        server_row.tried = checked
        server_row.lost = lost
        server_row.note = (f"every sample of {campaign_end - campaign_start:.0f} s looked up "
                           f"at its stamp")
        server_row.crashes = 0 if server.alive() and core.alive() else 1
        rows.append(server_row)
        peak = hwm_mib(server.pid) * 1024
        if not opts.staleness_only:
            rows.append(attack_bags(int(200 * scale) + 5))
            rows.append(attack_launch_files(int(1000 * scale)))
            rows.append(attack_numbers(int(2000 * scale)))
    finally:
        stream.close()
        statics.close()
        server.stop()
        core.stop()

    table = run.table("attack classes", ["attack class", "inputs", "crashes", "lost", "note"],
                      [56, 8, 8, 6, 20])
    for row in rows:
        table.add(row.name, row.tried, row.crashes, row.lost, row.note, inputs=row.tried,
                  crashes=row.crashes, lost=row.lost)
    bound_mib = MAX_WAITING_GOALS * 2 / 1024  # ~2 KiB per waiting goal, all clients together
    run.note(f"server peak memory (VmHWM): {peak / 1024:.0f} MiB (after start-up "
             f"{base_rss / 1024:.0f} MiB; bound: start-up + {MAX_WAITING_GOALS} waiting goals "
             f"x ~2 KiB = {base_rss / 1024 + bound_mib:.0f} MiB; per client "
             f"{MAX_WAITING_GOALS_PER_CLIENT} goals; goal timeout <= {MAX_GOAL_TIMEOUT:g} s)")
    latency = run.table(f"with and without {opts.waiting} waiting goals (ms)",
                        ["figure", "without p50", "without p99", "with p50", "with p99", "target"],
                        [62, 12, 12, 9, 9, 14])
    for name, before, after, target in (
            ("answer staleness (100 Hz sample sent on the bus -> waiting goal's answer)",
             stale0, stale1, "p99 ≤ 10 ms"),
            ("answerable lookup for another client (blocking, round trip)", lat0, lat1,
             "p99 ≤ 5 ms")):
        figures = [percentile(before, 50), percentile(before, 99), percentile(after, 50),
                   percentile(after, 99)]
        latency.add(name, *(f"{x:.2f}" for x in figures), target, p50_without=figures[0],
                    p99_without=figures[1], p50_with=figures[2], p99_with=figures[3])
    run.note(f"server CPU with the 100 Hz stream (3 s): {cpu0:.1f} % without waiting goals, "
             f"{cpu1:.1f} % with {opts.waiting} waiting")
    failed = sum(r.crashes for r in rows) + sum(r.lost for r in rows)
    run.note("campaign: " + ("PASS (0 crashes, 0 lost)" if not failed else f"FAIL ({failed})"))
    if failed:
        raise SystemExit(1)
