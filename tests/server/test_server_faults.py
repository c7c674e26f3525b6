"""BufferServer under faults: bounded waiting goals, re-checks only when an answer can change,
goals of killed clients dropped, nothing leaked by objects dropped without close(), forged
answers refused by the client."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest
import zmq

from helpers import wait_for
from simulators.forging_server import ForgingServer
from tf2py import (
    BackwardExtrapolationException,
    Buffer,
    InvalidArgumentException,
    Time,
    TimeoutException,
    make_transform,
)
from tf2py.buffer.exceptions import INVALID_ARGUMENT_ERROR
from tf2py.server import goals as goals_module
from tf2py.server import protocol
from tf2py.server.client import BufferClient
from tf2py.server.server import MAX_WAITING_GOALS_PER_CLIENT, BufferServer
from tf2py.transport.wire import unpack


class _Dealer:
    """A raw DEALER that queues what it is sent however long the test leaves it unread, as
    BufferClient's reader thread does. With zmq's default queue of 1 000, a test that sends
    4 000 goals and reads none of the ACCEPTED replies stops its connection reading: the
    server's heartbeat PINGs go unanswered, and after 10 s the server rightly closes the
    connection and drops its goals as disconnected."""

    def __init__(self, address):
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVHWM, 0)
        self.socket.setsockopt(zmq.SNDHWM, 0)
        self.socket.setsockopt(zmq.RCVTIMEO, 20_000)
        self.socket.connect(address)

    def __enter__(self):
        return self.socket

    def __exit__(self, *exc):
        self.socket.close(linger=0)
        self.context.term()


def _goal(goal_id, target="map", source="laser", stamp_ns=0, timeout_s=60.0):
    return protocol.pack_goal(goal_id, target, source, stamp_ns, 0, "", False,
                              int(timeout_s * 1e9))


def _results(dealer, count):
    """The next ``count`` RESULT messages (ACCEPTED ones are skipped)."""
    out = []
    while len(out) < count:
        message = unpack(dealer.recv())
        if message[1] == "result":
            out.append(message)
    return out


def _sync(server):
    """Two answered round trips: every insertion made before this call has been looked at by
    the server's loop (the touched frames are taken in the turn that answers the first)."""
    with BufferClient(server.address) as probe:
        for _ in range(2):
            probe.lookup_transform("map", "laser", 2.0)


# --- limits ---------------------------------------------------------------------------------


def test_one_client_over_its_waiting_goal_limit_is_refused_naming_the_limit(server):
    limit = MAX_WAITING_GOALS_PER_CLIENT
    with _Dealer(server.address) as dealer, _Dealer(server.address) as other:
        for goal_id in range(limit):
            dealer.send(_goal(goal_id, source=f"missing_{goal_id}"))
        dealer.send(_goal(limit, source="one_too_many"))
        while True:
            message = unpack(dealer.recv())
            if message[1] == "result":
                break
        assert message[2:4] == [limit, INVALID_ARGUMENT_ERROR]
        assert "limit of waiting goals per client" in message[5]
        assert server.pending_count == limit
        # another client is not affected by this one's limit
        other.send(_goal(1, source="missing_x"))
        assert unpack(other.recv())[1:3] == ["accepted", 1]
    wait_for(lambda: server.pending_count == 0, message="closed connections drop their goals")


def test_all_clients_together_over_the_total_limit_are_refused(server, monkeypatch):
    monkeypatch.setattr(goals_module, "MAX_WAITING_GOALS", 20)
    with _Dealer(server.address) as first, _Dealer(server.address) as second:
        for goal_id in range(15):
            first.send(_goal(goal_id, source=f"a_{goal_id}"))
        wait_for(lambda: server.pending_count == 15)
        for goal_id in range(6):
            second.send(_goal(goal_id, source=f"b_{goal_id}"))
        result = _results(second, 1)[0]
        assert result[2:4] == [5, INVALID_ARGUMENT_ERROR]
        assert "limit of waiting goals for all clients" in result[5]
        # an answerable goal is still answered at once
        second.send(_goal(99, stamp_ns=2_000_000_000, timeout_s=0))
        assert _results(second, 1)[0][2:4] == [99, 0]
    assert server.stats()["refused"] == 1


def test_refused_goal_reaches_a_blocking_client_as_invalid_argument(server, monkeypatch):
    monkeypatch.setattr(goals_module, "MAX_WAITING_GOALS", 0)
    with BufferClient(server.address) as client:
        with pytest.raises(InvalidArgumentException, match="limit of waiting goals"):
            client.lookup_transform("map", "never", 0, timeout=5.0)
        # what can be answered at once still is
        assert client.lookup_transform("map", "laser", 2.0, timeout=5.0).child_frame_id == "laser"


# --- the cost of waiting goals --------------------------------------------------------------


def test_timed_goals_cost_no_recheck_until_the_frame_reaches_their_time(buffer, server):
    # 500 goals for distinct times ahead of the data, all on the dynamic link map->odom
    base = 20_000_000_000
    with _Dealer(server.address) as dealer:
        for i in range(500):
            dealer.send(_goal(i, stamp_ns=base + i * 1_000_000))
        wait_for(lambda: server.pending_count == 500, message="500 goals wait")
        for k in range(50):  # a 100 Hz stream that has not reached their times
            stamp = 4.0 + k * 0.01
            buffer.set_transform(make_transform("map", "odom", (stamp, 0, 0), stamp=stamp), "t")
        _sync(server)
        assert buffer.recheck_count == 0
        assert server.pending_count == 500
        # the sample that reaches the last goal's time answers all, each re-checked once
        buffer.set_transform(make_transform("map", "odom", (9, 0, 0), stamp=19.0), "t")
        buffer.set_transform(make_transform("map", "odom", (9, 0, 0), stamp=21.0), "t")
        results = _results(dealer, 500)
    assert all(r[3] == 0 for r in results)
    assert buffer.recheck_count == 500
    assert server.pending_count == 0


def test_disconnected_goals_recheck_only_when_a_parent_changes(buffer, server):
    with _Dealer(server.address) as dealer:
        for i in range(300):  # map and island are in two trees: ConnectivityException
            dealer.send(_goal(i, source="island", stamp_ns=0 if i % 2 else 2_000_000_000 + i))
        wait_for(lambda: server.pending_count == 300)
        for k in range(50):  # new data on the path, same parents: cannot connect them
            stamp = 3.5 + k * 0.01
            buffer.set_transform(make_transform("map", "odom", (stamp, 0, 0), stamp=stamp), "t")
        _sync(server)
        assert buffer.recheck_count == 0
        # giving the second tree's root a parent connects them
        buffer.set_transform_static(make_transform("map", "lonely", (0, 0, 0)), "t")
        results = _results(dealer, 300)
    assert all(r[3] == 0 for r in results)
    assert buffer.recheck_count == 151  # 150 distinct timed lookups + the shared time-0 one


def test_a_burst_costs_at_most_one_recheck_per_goal(buffer, server):
    # goals before the oldest sample (backward extrapolation, still inside the cache window):
    # any new sample on the path may change them, so they are re-checked on new data...
    with _Dealer(server.address) as dealer:
        for i in range(200):
            dealer.send(_goal(i, stamp_ns=500_000_000 + i))
        wait_for(lambda: server.pending_count == 200)
        # ... and a burst of 100 samples in one insertion call re-checks each one once; the
        # burst makes their time older than the cache window: answered, no data can help
        stamps = [4.0 + k * 0.1 for k in range(100)]
        buffer.set_transforms(
            ["map"] * 100, ["odom"] * 100, [int(s * 1e9) for s in stamps],
            [[s, 0, 0, 0, 0, 0, 1] for s in stamps], "t",
        )
        results = _results(dealer, 200)
    assert {r[3] for r in results} == {3}  # EXTRAPOLATION_ERROR
    assert all(r[4] == "backward" and "No data can make" in r[5] for r in results)
    assert buffer.recheck_count == 200


def test_goals_of_one_lookup_share_one_recheck(buffer, server):
    with _Dealer(server.address) as dealer:
        for i in range(1000):
            dealer.send(_goal(i, source="late"))
        wait_for(lambda: server.pending_count == 1000)
        buffer.set_transform_static(make_transform("laser", "late", (1, 0, 0)), "t")
        results = _results(dealer, 1000)
    assert all(r[3] == 0 and r[6][1] == "late" for r in results)
    assert buffer.recheck_count == 1
    assert server.stats()["rechecks"] == 1  # one group answered


def test_cancelling_many_goals_returns_the_servers_tables_to_empty(server):
    with _Dealer(server.address) as dealer:
        for i in range(3000):
            dealer.send(_goal(i, source=f"m_{i}" if i % 3 else "island",
                              stamp_ns=0 if i % 2 else 50_000_000_000 + i))
        wait_for(lambda: server.pending_count == 3000)
        for i in range(3000):
            dealer.send(protocol.pack_cancel(i))
        wait_for(lambda: server.stats()["cancelled"] == 3000)
    goals = server._state.goals
    assert server.pending_count == 0
    assert not (goals.groups or goals.by_peer or goals.ready)
    assert len(goals.deadlines) <= 1024
    assert server._state.goals.buffer.pending_request_count == 0


# --- killed clients -------------------------------------------------------------------------


_GOAL_SENDER = textwrap.dedent("""
    import sys, time
    import zmq
    from tf2py.server import protocol
    ctx = zmq.Context()
    d = ctx.socket(zmq.DEALER)
    d.connect(sys.argv[1])
    for i in range(200):
        d.send(protocol.pack_goal(i, "map", "never_%d" % i, 0, 0, "", False, 60_000_000_000))
    for i in range(200):
        d.recv()
    print("sent", flush=True)
    time.sleep(120)
""")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_goals_of_a_killed_client_are_dropped_at_once(server, how):
    proc = subprocess.Popen([sys.executable, "-c", _GOAL_SENDER, server.address],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "sent"
        wait_for(lambda: server.pending_count == 200, message="the client's goals wait")
        os.kill(proc.pid, how)
        proc.wait(timeout=10)
        # dropped with the connection, long before their 60 s timeouts
        wait_for(lambda: server.pending_count == 0, message="goals of the dead client dropped")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert server.stats()["disconnected"] == 200


def test_a_client_reconnecting_keeps_its_goals_by_sending_them_again(buffer):
    server = BufferServer(buffer, "tcp://127.0.0.1:0")
    address = server.address
    with BufferClient(address, timeout_padding=5.0) as client:
        future = client.lookup_transform_async("map", "comes_later", 0, timeout=30.0)
        wait_for(lambda: server.pending_count == 1)
        server.close()  # its connection drops; a new server on the same port
        server = BufferServer(buffer, address)
        try:
            wait_for(lambda: server.pending_count == 1, message="goal sent again")
            buffer.set_transform_static(make_transform("map", "comes_later", (1, 0, 0)), "t")
            assert future.result(timeout=10).child_frame_id == "comes_later"
        finally:
            server.close()


# --- objects dropped without close() ---------------------------------------------------------


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _native_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_servers_and_clients_dropped_without_close_leak_nothing(buffer):
    # warm up the shared context (its own I/O thread and fds stay for the process)
    with BufferServer(buffer, "tcp://127.0.0.1:0") as srv, BufferClient(srv.address) as c:
        c.lookup_transform("map", "laser", 2.0)
    gc.collect()
    fds, threads = _fds(), _native_threads()
    for _ in range(10):
        srv = BufferServer(buffer, "tcp://127.0.0.1:0")
        client = BufferClient(srv.address)
        client.lookup_transform("map", "laser", 2.0)
        client.lookup_transform_async("map", "laser", 2.0).result(timeout=10)
        del srv, client  # no close()
    gc.collect()
    wait_for(lambda: _native_threads() <= threads and _fds() <= fds,
             message=f"threads {_native_threads()} (was {threads}), fds {_fds()} (was {fds})")
    assert not [t for t in threading.enumerate() if t.name.startswith("tf2py-")]


def test_one_zeromq_context_per_process(buffer):
    shared_context = zmq.Context.instance()
    with BufferServer(buffer, "tcp://127.0.0.1:0") as srv, BufferClient(srv.address) as c:
        c.lookup_transform("map", "laser", 2.0)
        assert srv._state.link._context is shared_context
        assert c._state.io.link._socket.context is shared_context
        assert all(ch.link._socket.context is shared_context for ch in c._channels)


# --- forged answers -------------------------------------------------------------------------


@pytest.mark.parametrize("blocking", [True, False])
def test_client_refuses_an_answer_for_other_frames(blocking):
    forger = ForgingServer()
    try:
        with BufferClient(forger.address, timeout_padding=0.5) as client:
            if blocking:
                with pytest.raises(TimeoutException):
                    client.lookup_transform("map", "base_link", 0)
                with pytest.raises(TimeoutException):
                    client.can_transform("anything", "else", 0)
            else:
                future = client.lookup_transform_async("map", "base_link", Time(5))
                with pytest.raises(TimeoutException):
                    future.result(timeout=20)
            assert client.refused_answers >= 1
    finally:
        forger.close()


def test_client_accepts_an_answer_for_the_frames_and_time_it_asked():
    forger = ForgingServer("map", "base_link")
    try:
        with BufferClient(forger.address, timeout_padding=0.5) as client:
            # the forger answers at the asked stamp: accepted (frames and time match)
            answer = client.lookup_transform("map", "base_link", 5.0)
            assert answer.transform.translation.x == 666
            assert client.refused_answers == 0
    finally:
        forger.close()


def test_backward_goal_older_than_the_window_is_still_answered_at_once(buffer, client):
    for stamp in (30.0, 31.0):
        buffer.set_transform(make_transform("map", "fresh", (1, 0, 0), stamp=stamp), "test")
    with pytest.raises(BackwardExtrapolationException, match="No data can make"):
        client.lookup_transform("map", "fresh", 5.0, timeout=30.0)


def test_the_port_is_free_again_as_soon_as_close_returns(buffer):
    # One shared ZeroMQ context: no term() waits for the listener, close() itself must.
    server = BufferServer(buffer, "tcp://127.0.0.1:0")
    address = server.address
    for _ in range(20):
        with BufferClient(address) as client:
            client.lookup_transform("map", "laser", 2.0)
            server.close()
            server = BufferServer(buffer, address)  # binds at once, every time
    server.close()


class _BufferWithoutListeners(Buffer):
    """A Buffer without the insert-listener hook (e.g. another Buffer implementation): the
    server falls back to one wait_for_transform_async per group of goals."""

    @property
    def add_insert_listener(self):
        raise AttributeError("add_insert_listener")


def test_a_buffer_without_insert_listeners_still_answers_waiting_goals():
    buffer = _BufferWithoutListeners(cache_time=10.0)
    buffer.set_transform_static(make_transform("map", "laser", (1, 0, 0)), "t")
    with BufferServer(buffer, "tcp://127.0.0.1:0") as server, \
            BufferClient(server.address, timeout_padding=5.0) as client:
        futures = [client.lookup_transform_async("map", "later", 0, timeout=30.0)
                   for _ in range(20)]
        cancelled = client.lookup_transform_async("map", "never", 0, timeout=30.0)
        wait_for(lambda: server.pending_count == 21)
        # an answer on the same connection, after the 21 goals: all of them are indexed
        client.lookup_transform_async("map", "laser", 0).result(timeout=10)
        assert buffer.pending_request_count == 2  # one request per group, not per goal
        buffer.set_transform_static(make_transform("laser", "later", (1, 0, 0)), "t")
        assert all(f.result(timeout=10).child_frame_id == "later" for f in futures)
        cancelled.cancel()
        wait_for(lambda: server.pending_count == 0)
        wait_for(lambda: buffer.pending_request_count == 0, message="buffer request dropped")


@pytest.mark.timeout(400)
def test_memory_of_cancelled_goals_is_returned(server):
    import tracemalloc

    def traced():
        gc.collect()
        return tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        with _Dealer(server.address) as dealer:
            dealer.send(_goal(0, source="warm_up"))  # first-use allocations, then cancel
            dealer.send(protocol.pack_cancel(0))
            wait_for(lambda: server.stats()["cancelled"] == 1)
            before = traced()
            for i in range(1, 4_001):
                dealer.send(_goal(i, source=f"m_{i}" if i % 2 else "island",
                                  stamp_ns=0 if i % 3 else 60_000_000_000 + i))
            # (tracemalloc slows Python several times: generous deadlines)
            wait_for(lambda: server.pending_count == 4_000, timeout=180,
                     message=lambda: f"4 000 goals waiting: {server.stats()}")
            waiting = traced() - before
            for i in range(1, 4_001):
                dealer.send(protocol.pack_cancel(i))
            wait_for(lambda: server.pending_count == 0 and server.stats()["cancelled"] == 4_001,
                     timeout=180, message=lambda: f"4 000 goals cancelled: {server.stats()}")
            left = traced() - before
    finally:
        tracemalloc.stop()
    assert waiting > 2_000_000  # 4 000 waiting goals take megabytes...
    assert left < waiting / 10  # ... and they are given back when the goals go


def test_latest_goals_held_back_by_an_old_frame_wait_until_that_frame_moves(buffer, server):
    # 'stale' has one old sample: the latest common time of odom/base_link/laser and stale is
    # 0.5 s, before odom's oldest sample (1 s): backward extrapolation at time 0.
    buffer.set_transform(make_transform("map", "stale", (1, 0, 0), stamp=0.5), "t")
    targets = ("odom", "base_link", "laser")
    with _Dealer(server.address) as dealer:
        for i in range(300):
            dealer.send(_goal(i, target=targets[i % 3], source="stale"))
        wait_for(lambda: server.pending_count == 300)
        for k in range(50):  # new odom data cannot move the latest common time
            stamp = 3.1 + k * 0.01
            buffer.set_transform(make_transform("map", "odom", (stamp, 0, 0), stamp=stamp), "t")
        _sync(server)
        # each insertion re-checks at most the 3 lookups (a can_transform each), answers none
        assert buffer.recheck_count <= 3 * 50
        assert server.stats()["rechecks"] == 0
        assert server.pending_count == 300
        # the frame that holds it back moves on: all answered, one re-check per lookup
        buffer.set_transform(make_transform("map", "stale", (1, 0, 0), stamp=2.0), "t")
        results = _results(dealer, 300)
    assert all(r[3] == 0 for r in results)
    assert server.stats()["rechecks"] == 3  # three groups answered
