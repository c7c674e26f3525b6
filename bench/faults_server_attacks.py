"""The attack classes of bench/faults.py on the buffer server: a flood of goals from one client,
huge and negative timeouts, malformed goals, clients SIGKILLed with waiting goals, and a
stranger posing as the server (forged answers)."""

from __future__ import annotations

import os
import random
import subprocess
import textwrap
import time

import zmq

from bench.faults_support import Row, dealer, results
from bench.harness import PY, REPO
from simulators.forging_server import ForgingServer
from tf2py import Buffer
from tf2py.buffer.exceptions import INVALID_ARGUMENT_ERROR, TimeoutException
from tf2py.server import protocol
from tf2py.server.client import BufferClient
from tf2py.server.server import MAX_GOAL_TIMEOUT, MAX_WAITING_GOALS_PER_CLIENT
from tf2py.transport.wire import pack


def attack_goal_flood(server, n_extra):
    """One client: its limit of waiting goals, then n_extra more (refused, INVALID_ARGUMENT)."""
    row = Row("goal flood (one client)")
    d = dealer(server.address)
    limit = MAX_WAITING_GOALS_PER_CLIENT
    for i in range(limit + n_extra):
        d.send(protocol.pack_goal(i, "map", f"flood_{i}", 0, 0, "", False, 60_000_000_000))
    refused = sum(1 for r in results(d, n_extra) if r[2][0] == INVALID_ARGUMENT_ERROR)
    row.tried = limit + n_extra
    row.crashes = 0 if server.alive() else 1
    row.note = f"{refused}/{n_extra} over the limit refused"
    d.close()  # its goals go with its connection
    return row


def attack_timeouts(server, n):
    row = Row("huge / negative timeouts")
    d = dealer(server.address)
    rng = random.Random(1)
    limit_ns = int(MAX_GOAL_TIMEOUT * 1e9)
    for i in range(n):
        timeout = rng.choice([2**63 - 1, -(2**63), limit_ns + 1, limit_ns, 0, -1,
                              rng.randrange(-(2**63), 2**63)])
        d.send(protocol.pack_goal(i, "map", "never", 0, 0, "", False, timeout))
    answers = 0
    deadline = time.monotonic() + 20
    while answers < n and time.monotonic() < deadline:
        try:
            message = protocol.parse_server_message(d.recv(zmq.NOBLOCK))
        except zmq.Again:
            time.sleep(0.005)
            continue
        if message[0] in ("result", "accepted"):
            answers += 1
    d.close()
    row.tried = n
    row.crashes = 0 if server.alive() else 1
    row.note = f"{answers} answered (refused, at once, or accepted within the limit)"
    return row


def attack_garbage(server, n):
    row = Row("malformed / mutated goals")
    d = dealer(server.address)
    rng = random.Random(2)
    good = protocol.pack_goal(1, "map", "base", 0, 0, "", False, 0)
    for i in range(n):
        kind = i % 4
        if kind == 0:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        elif kind == 1:
            b = bytearray(good)
            for _ in range(rng.randrange(1, 6)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            data = bytes(b)
        elif kind == 2:
            data = pack([1, "goal", i, rng.random(), None, "x" * rng.randrange(0, 5000), 0, "",
                         False, 0])
        else:
            data = good[: rng.randrange(1, len(good))]
        d.send(data)
    d.send(protocol.pack_goal(99_999, "map", "base", 0, 0, "", False, 0))
    ok = False
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            message = protocol.parse_server_message(d.recv())
        except (zmq.Again, protocol.ProtocolError):
            continue
        if message[0] == "result" and message[1] == 99_999:
            ok = message[2][0] == 0
            break
    d.close()
    row.tried = n
    row.crashes = 0 if server.alive() and ok else 1
    row.note = "a valid goal after them answered" if ok else "valid goal NOT answered"
    return row


_KILLED = textwrap.dedent("""
    import sys, time, zmq
    from tf2py.server import protocol
    d = zmq.Context().socket(zmq.DEALER)
    d.connect(sys.argv[1])
    for i in range(int(sys.argv[2])):
        d.send(protocol.pack_goal(i, "map", "gone_%d" % i, 0, 0, "", False, 600_000_000_000))
    for i in range(int(sys.argv[2])):
        d.recv()
    print("sent", flush=True)
    time.sleep(600)
""")


def attack_killed_clients(clients, goals):
    """Against an in-process BufferServer (its goal count is readable): client processes
    with waiting goals are SIGKILLed; their goals must go at once, not at their timeouts."""
    from tf2py.server.server import BufferServer

    row = Row("clients SIGKILLed with waiting goals (in-process server)")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    buffer = Buffer()
    with BufferServer(buffer, "tcp://127.0.0.1:0") as local:
        procs = [subprocess.Popen([PY, "-c", _KILLED, local.address, str(goals)],
                                  stdout=subprocess.PIPE, text=True, env=env)
                 for _ in range(clients)]
        for p in procs:
            p.stdout.readline()
        held = local.pending_count
        for p in procs:
            p.kill()
            p.wait()
            p.stdout.close()
        started = time.monotonic()
        while time.monotonic() - started < 30 and local.pending_count:
            time.sleep(0.01)
        row.tried = clients * goals
        row.crashes = local.pending_count  # goals left behind count as failures
        row.note = (f"{held} waiting goals dropped {time.monotonic() - started:.2f} s after "
                    "the kills (their timeouts: 600 s)")
    return row


def attack_forged_answers(n):
    row = Row("forged answers (a stranger as server)")
    forger = ForgingServer()
    accepted = 0
    with BufferClient(forger.address, timeout_padding=0.05) as client:
        for _ in range(n):
            try:
                client.lookup_transform("map", "base_link", 0)
                accepted += 1
            except TimeoutException:
                pass
        refused = client.refused_answers
    forger.close()
    row.tried = n
    row.crashes = accepted  # an accepted forged answer counts as a failure
    row.note = f"{refused} refused, {accepted} accepted"
    return row
