"""BufferServer(buffer, address="zenoh://...") and BufferClient over Zenoh: the same calls,
results, exceptions, waits, timeouts and bounds as over ZeroMQ."""

from __future__ import annotations

import threading
import time

import pytest

from helpers import wait_for
from tf2py import (
    Buffer,
    ConnectivityException,
    ExtrapolationException,
    LookupException,
    Time,
    TimeoutException,
    make_transform,
)
from tf2py.server.client import BufferClient
from tf2py.server.server import MAX_GOAL_TIMEOUT, BufferServer


def small_tree() -> Buffer:
    buffer = Buffer(cache_time=10.0)
    for stamp in (1.0, 2.0, 3.0):
        buffer.set_transform(make_transform("map", "odom", (stamp, 0.5, 0.0), stamp=stamp), "t")
    buffer.set_transform_static(make_transform("odom", "base_link", (0.1, 0.0, 0.2)), "t")
    buffer.set_transform_static(make_transform("lonely", "island", (1.0, 1.0, 1.0)), "t")
    return buffer


@pytest.fixture
def served(core):
    buffer = small_tree()
    with BufferServer(buffer, address=core) as server:
        with BufferClient(core) as client:
            yield buffer, server, client


def test_same_results_as_a_local_buffer(served):
    buffer, server, client = served
    for time_ in (Time(), 1.5, 2.0):
        remote = client.lookup_transform("map", "base_link", time_, timeout=5)
        local = buffer.lookup_transform("map", "base_link", time_)
        assert remote.transform.translation.x == pytest.approx(local.transform.translation.x)
        assert remote.header.stamp == local.header.stamp
    assert client.can_transform("map", "base_link", 2.0)
    assert server.address.startswith("zenoh://")


@pytest.mark.parametrize("target, source, time_, exc", [
    ("map", "nowhere", Time(), LookupException),
    ("map", "island", Time(), ConnectivityException),
    ("map", "base_link", 50.0, ExtrapolationException),
])
def test_same_exceptions_as_a_local_buffer(served, target, source, time_, exc):
    buffer, _, client = served
    with pytest.raises(exc) as remote:
        client.lookup_transform(target, source, time_)
    with pytest.raises(exc) as local:
        buffer.lookup_transform(target, source, time_)
    assert str(remote.value) == str(local.value)


def test_a_waiting_goal_is_answered_when_the_data_arrives(served):
    buffer, server, client = served
    future = client.lookup_transform_async("map", "late", Time(), timeout=10)
    wait_for(lambda: server.pending_count == 1, 60, message="the goal waiting on the server")
    assert not future.done()
    buffer.set_transform_static(make_transform("odom", "late", (4.0, 0, 0)), "t")
    assert future.result(timeout=60).transform.translation.x == pytest.approx(7.0)


def test_a_goal_that_times_out_raises_tf2s_error_with_the_wait(served):
    _, _, client = served
    started = time.monotonic()
    with pytest.raises(LookupException, match="canTransform returned after"):
        client.lookup_transform("map", "never", Time(), timeout=0.5)
    assert 0.4 < time.monotonic() - started < 5


def test_cancel_forgets_the_goal_on_the_server(served):
    _, server, client = served
    future = client.lookup_transform_async("map", "never", Time(), timeout=60)
    wait_for(lambda: server.pending_count == 1, 60)
    assert future.cancel()
    wait_for(lambda: server.pending_count == 0, 60)


def test_a_client_that_closes_loses_its_waiting_goals(core):
    with BufferServer(small_tree(), address=core) as server:
        client = BufferClient(core)
        client.lookup_transform_async("map", "never", Time(), timeout=60)
        wait_for(lambda: server.pending_count == 1, 60)
        client.close()
        wait_for(lambda: server.pending_count == 0, 60)


def test_a_goal_over_the_timeout_bound_is_refused(served):
    _, _, client = served
    from tf2py import InvalidArgumentException

    with pytest.raises(InvalidArgumentException, match="over the BufferServer.s limit"):
        client.lookup_transform("map", "never", Time(), timeout=MAX_GOAL_TIMEOUT * 2)


def test_no_server_gives_the_clients_timeout(core):
    with BufferClient(core, timeout_padding=0.5) as client:
        with pytest.raises(TimeoutException):
            client.lookup_transform("map", "odom", Time(), timeout=0.2)


def test_many_threads_ask_at_once(served):
    _, _, client = served
    errors = []

    def ask():
        try:
            for _ in range(20):
                client.lookup_transform("map", "base_link", 2.0, timeout=5)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors


def test_goals_of_clients_without_a_liveliness_token_never_wait_on_the_server(core):
    """Goals under made-up client ids (no token) are held a moment, then dropped and counted:
    they never fill the server's limits, and a real client is served meanwhile (issue 30)."""
    from tf2py.server import protocol
    from tf2py.server.zenoh_link import service_prefix
    from tf2py.transport.zenoh.address import parse_zenoh_address
    from tf2py.transport.zenoh.session import SharedSession

    parsed = parse_zenoh_address(core)
    prefix = service_prefix(parsed)
    goal = protocol.pack_goal(1, "map", "never", 0, 0, "", False, 3600 * 10**9)
    with BufferServer(small_tree(), address=core) as server:
        shared = SharedSession.acquire(parsed, None)
        try:
            forged = 3000
            for k in range(forged):
                shared.session.put(f"{prefix}/goal/{k:016x}/{k:016x}", goal)
            wait_for(lambda: server.stats()["dropped_by_cause"].get("absent client", 0)
                     >= forged - 1000, 60, message="the forged goals are dropped")
            with BufferClient(core) as client:
                future = client.lookup_transform_async("map", "never", Time(), timeout=60)
                wait_for(lambda: server.pending_count == 1, 60)
                assert client.lookup_transform("map", "base_link", 2.0, timeout=5)
                assert server.pending_count == 1  # only the real client's goal waits
                future.cancel()
        finally:
            shared.release()
        assert server.stats()["refused"] == 0


def test_client_sockets_over_the_bound_of_one_process_are_not_served(core, monkeypatch):
    """One process's link may hold so many client sockets at once; a socket over the bound
    is refused (counted) and its goals never wait on the server."""
    from tf2py.server import zenoh_link
    from tf2py.server.client_common import ServerTimeoutException

    monkeypatch.setattr(zenoh_link, "_MAX_CHANNELS_PER_LINK", 4)  # a client has two sockets
    with BufferServer(small_tree(), address=core) as server:
        clients = []
        try:
            for _ in range(2):  # each served in turn: two sockets each, the bound reached
                clients.append(BufferClient(core, timeout_padding=0.5))
                assert clients[-1].lookup_transform("map", "base_link", 2.0, timeout=5)
            clients.append(BufferClient(core, timeout_padding=0.5))
            with pytest.raises(ServerTimeoutException):
                clients[2].lookup_transform("map", "base_link", 2.0)
            assert server.stats()["dropped_by_cause"]["client limit"] >= 1
            assert server.pending_count == 0
        finally:
            for client in clients:
                client.close()
