"""Answers first (issue 26): a lookup asked while a burst is ingested is answered before the
burst is in, proven by what it returns, not by how long it took.

The ingest is driven directly (samples as Zenoh hands them over, CDR on rmw_zenoh's keys) into
a real Buffer. The burst is queued whole while the ingest thread is held (in an insert
listener, a Buffer hook that runs on the inserting thread), so the ingest finds all of it at
once; the lookup is asked after the burst's first insert and asks for the robot queued last,
whose newest stamp is the burst's last. Answered before the burst's last insert, it returns an
older stamp; a fleet that inserted the burst in one go (or let its inserts run ahead of the
answer) returns the last.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from helpers import wait_for
from tf2py import Time
from tf2py.buffer.buffer import Buffer
from tf2py.server.client import BufferClient
from tf2py.server.fleet.answers import AnswerGate, AnsweringBuffer
from tf2py.server.fleet.ingest import Ingest
from tf2py.server.fleet.names import TF_TYPE
from tf2py.server.fleet.slots import RobotSlots
from tf2py.server.server import BufferServer
from tf2py.transport.ros2.cdr import encode_tf_columns

HASH = "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"
ROBOTS = 120
CYCLES = 4  # samples per robot in the burst (within a robot's turn of 8)
FRAMES = 50
S = 1_000_000_000
LAST = f"robot{ROBOTS - 1}/base_link"


def message(stamp_ns: int) -> bytes:
    parents = ["map", "odom"] + ["base_link"] * (FRAMES - 2)
    children = ["odom", "base_link"] + [f"link_{i}" for i in range(1, FRAMES - 1)]
    values = np.zeros((FRAMES, 7))
    values[:, 6] = 1.0
    return encode_tf_columns(parents, children, np.full(FRAMES, stamp_ns, np.int64), values)


class Held:
    """An insert listener that, when armed, holds the ingest thread on its next insert until
    ``until()`` holds (or 30 s), after running ``first()``."""

    def __init__(self) -> None:
        self.armed: tuple[Callable[[], object], Callable[[], bool]] | None = None
        self.holding = threading.Event()

    def arm(self, first: Callable[[], object], until: Callable[[], bool]) -> None:
        self.holding.clear()
        self.armed = (first, until)

    def __call__(self, parents: Any, children: Any) -> None:
        armed, self.armed = self.armed, None
        if armed is None:
            return
        first, until = armed
        first()
        self.holding.set()
        deadline = time.monotonic() + 30
        while not until() and time.monotonic() < deadline:
            time.sleep(0.001)


@pytest.fixture
def fleet_parts():
    buffer = Buffer(cache_time=1000.0)
    n = ROBOTS
    values = np.zeros((n, 7))
    values[:, 6] = 1.0
    buffer.set_transforms(["world"] * n, [f"robot{i}/map" for i in range(n)],
                          np.zeros(n, np.int64), values, "world", True)
    gate = AnswerGate()
    ingest = Ingest(buffer, lambda robot: True, RobotSlots(1 << 40), 3600.0, set(),
                    lambda *args: None, gate=gate)
    keys = [f"0/robot{i}/tf/{TF_TYPE}/{HASH}" for i in range(n)]
    first = message(1 * S)
    for key in keys:
        ingest.on_sample(key, first)
    wait_for(lambda: ingest.transforms == n * FRAMES, timeout=30)
    held = Held()
    buffer.add_insert_listener(held)
    yield buffer, gate, ingest, keys, held
    held.armed = None
    ingest.close()


def burst_with_lookup(parts: Any, ask: Callable[[], int]) -> tuple[int, int]:
    """Queue the burst whole, then ask ``ask()`` (returns a stamp, ns) after its first insert;
    returns (the stamp the lookup returned, inserts the burst took)."""
    buffer, gate, ingest, keys, held = parts
    queued = threading.Event()
    held.arm(lambda: None, queued.is_set)  # hold the ingest while the burst is queued
    ingest.on_sample(keys[0], message(1 * S + 1))
    assert held.holding.wait(30), "the ingest never inserted the priming sample"
    for key in keys:  # robot by robot: the last robot's samples are the last taken
        for cycle in range(CYCLES):
            ingest.on_sample(key, message((2 + cycle) * S))
    answers = gate.answers
    entered = threading.Event()
    result: list[int] = []
    asker = threading.Thread(target=lambda: result.append(ask()))
    started = gate_started(gate)
    # On the burst's first insert: ask, and hold that insert until the lookup is in the gate.
    held.arm(lambda: (entered.set(), asker.start()),
             lambda: gate_started(gate) > started)
    before = ingest.batches
    queued.set()
    wait_for(lambda: ingest.transforms == ROBOTS * FRAMES * (CYCLES + 1) + FRAMES, timeout=60)
    assert entered.is_set()
    asker.join(30)
    assert result and gate.answers > answers
    return result[0], ingest.batches - before


def gate_started(gate: AnswerGate) -> int:
    return gate.started


def test_a_lookup_asked_during_a_burst_is_answered_before_the_burst_is_in(fleet_parts):
    view = AnsweringBuffer(fleet_parts[0], fleet_parts[1])
    stamp, inserts = burst_with_lookup(
        fleet_parts, lambda: view.lookup_transform("world", LAST, Time()).header.stamp.nanoseconds)
    assert 1 * S <= stamp < (1 + CYCLES) * S  # answered before the burst's last round
    assert inserts > 2  # the burst went in several rounds, not in one


def test_a_goal_that_registers_its_wait_is_answered_before_the_burst_is_in(fleet_parts):
    view = AnsweringBuffer(fleet_parts[0], fleet_parts[1])

    def ask() -> int:
        future = view.wait_for_transform_async("world", LAST, Time())
        return int(future.result(30).header.stamp.nanoseconds)

    stamp, inserts = burst_with_lookup(fleet_parts, ask)
    assert 1 * S <= stamp < (1 + CYCLES) * S and inserts > 2


def test_a_client_goal_through_the_buffer_server_is_answered_before_the_burst_is_in(
        fleet_parts):
    server = BufferServer(AnsweringBuffer(fleet_parts[0], fleet_parts[1]),
                          address="tcp://127.0.0.1:0")
    client = BufferClient(server.address)
    try:
        client.lookup_transform("world", LAST, Time(), timeout=30)  # connected
        stamp, inserts = burst_with_lookup(
            fleet_parts, lambda: client.lookup_transform(
                "world", LAST, Time(), timeout=30).header.stamp.nanoseconds)
    finally:
        client.close()
        server.close()
    assert 1 * S <= stamp < (1 + CYCLES) * S and inserts > 2


def test_the_ingest_waits_only_for_answers_already_started():
    gate = AnswerGate(max_yield_s=60.0)
    first = gate.enter()
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (gate.let_answers_pass(), done.set()))
    waiter.start()
    wait_for(lambda: gate.yields == 1, timeout=10)
    later = gate.enter()  # started after the ingest asked: it does not hold the ingest
    assert not done.is_set()
    gate.leave(first)
    assert done.wait(10), "the ingest kept waiting for an answer that started after it asked"
    gate.leave(later)
    assert gate.stats()["ingest_yield_timeouts"] == 0 and gate.in_flight() == 0


def test_an_answer_that_never_ends_delays_the_ingest_once_per_round_and_is_counted():
    gate = AnswerGate(max_yield_s=0.01)
    gate.enter()  # never left
    for _ in range(3):
        gate.let_answers_pass()  # each round waits once, then goes on
    assert gate.yields == 3 and gate.yield_timeouts == 3
    assert gate.stats()["ingest_yield_timeouts"] == 3 and gate.in_flight() == 1


def test_with_nothing_in_flight_the_ingest_does_not_wait():
    gate = AnswerGate()
    gate.leave(gate.enter())
    gate.let_answers_pass()
    assert gate.yields == 0 and gate.answers == 1
