"""BufferServer over real sockets: results equal local lookups, errors keep their class and
message, waiting goals are answered by the insertion, timeouts answer with tf2's error,
cancels forget, bad input is answered or dropped and counted."""

from __future__ import annotations

import threading
import time

import pytest
import zmq

from helpers import wait_for
from tf2py import (
    BackwardExtrapolationException,
    ConnectivityException,
    ForwardExtrapolationException,
    InvalidArgumentException,
    LookupException,
    NoDataForExtrapolationException,
    Time,
    make_transform,
)
from tf2py.buffer.exceptions import INVALID_ARGUMENT_ERROR
from tf2py.server import protocol
from tf2py.server.client import BufferClient
from tf2py.server.server import BufferServer
from tf2py.transport.wire import pack, unpack


def _threads_named(prefix):
    return [t for t in threading.enumerate() if t.name.startswith(prefix)]


@pytest.mark.parametrize(
    "target, source, stamp",
    [("map", "laser", 1.5), ("map", "odom", 3.0), ("laser", "map", 2.25), ("map", "laser", 0)],
)
def test_lookup_equals_local_lookup(buffer, client, target, source, stamp):
    assert client.lookup_transform(target, source, stamp) == buffer.lookup_transform(
        target, source, stamp
    )


def test_lookup_full_equals_local_lookup_full(buffer, client):
    args = ("laser", Time.from_seconds(1.0), "laser", Time.from_seconds(3.0), "map")
    assert client.lookup_transform_full(*args) == buffer.lookup_transform_full(*args)


def test_lookup_keeps_nanosecond_stamps(buffer, client):
    stamp = Time(1, 500_000_001)
    assert client.lookup_transform("map", "odom", stamp).header.stamp == stamp


def test_can_transform_answers_like_the_local_buffer(buffer, client):
    assert client.can_transform("map", "laser", 2.0) is True
    assert client.can_transform("map", "laser", 9.0) is False
    assert client.can_transform("map", "island", 2.0) is False
    args = ("laser", 1.0, "laser", 3.0, "map")
    assert client.can_transform_full(*args) is True
    assert client.can_transform_full("laser", 1.0, "laser", 3.0, "nowhere") is False


@pytest.mark.parametrize(
    "args, exc_type",
    [
        (("map", "nowhere", 0), LookupException),
        (("map", "island", 0), ConnectivityException),
        (("map", "laser", 9.0), ForwardExtrapolationException),
        (("map", "laser", 0.5), BackwardExtrapolationException),
        (("", "laser", 0), InvalidArgumentException),
        (("/map", "laser", 0), InvalidArgumentException),
    ],
)
def test_error_arrives_as_the_local_exception_type_and_message(buffer, client, args, exc_type):
    with pytest.raises(exc_type) as local:
        buffer.lookup_transform(*args)
    with pytest.raises(exc_type) as remote:
        client.lookup_transform(*args)
    assert type(remote.value) is type(local.value)
    assert str(remote.value) == str(local.value)


def test_no_data_extrapolation_arrives_as_its_subclass(buffer, client):
    buffer.set_transform(make_transform("map", "single", (1, 0, 0), stamp=5.0), "test")
    with pytest.raises(NoDataForExtrapolationException) as local:
        buffer.lookup_transform("map", "single", 4.0)
    with pytest.raises(NoDataForExtrapolationException) as remote:
        client.lookup_transform("map", "single", 4.0)
    assert str(remote.value) == str(local.value)


def test_full_form_error_arrives_as_the_local_exception(buffer, client):
    args = ("laser", 1.0, "laser", 7.0, "map")
    with pytest.raises(ForwardExtrapolationException) as local:
        buffer.lookup_transform_full(*args)
    with pytest.raises(ForwardExtrapolationException) as remote:
        client.lookup_transform_full(*args)
    assert str(remote.value) == str(local.value)


def test_waiting_goal_is_answered_by_a_later_insertion_well_before_its_timeout(
    buffer, server, client
):
    future = client.lookup_transform_async("map", "gripper", 0, timeout=60.0)
    wait_for(lambda: server.pending_count == 1, message="goal pending on the server")
    assert not future.done()
    inserted = time.monotonic()
    buffer.set_transform(make_transform("laser", "gripper", (0, 0, 1), stamp=3.0), "test")
    result = future.result(timeout=10)
    assert time.monotonic() - inserted < 5.0  # answered by the insertion, not the 60 s timeout
    assert result == buffer.lookup_transform("map", "gripper", 0)
    assert server.pending_count == 0


def test_blocking_lookup_with_timeout_returns_when_the_data_arrives(buffer, server, client):
    def insert_when_pending():
        wait_for(lambda: server.pending_count == 1)
        buffer.set_transform(make_transform("laser", "late", (0, 0, 1), stamp=3.0), "test")

    inserter = threading.Thread(target=insert_when_pending)
    inserter.start()
    try:
        result = client.lookup_transform("map", "late", 3.0, timeout=60.0)
    finally:
        inserter.join()
    assert result == buffer.lookup_transform("map", "late", 3.0)


def test_timeout_answers_with_the_real_tf2_error_worded_as_a_local_wait(buffer, client):
    with pytest.raises(LookupException) as remote:
        client.lookup_transform("map", "ghost", 0, timeout=0.2)
    with pytest.raises(LookupException) as local:
        buffer.lookup_transform("map", "ghost", 0, timeout=0.2)
    head = '"ghost" passed to lookupTransform argument source_frame does not exist'
    assert str(remote.value).startswith(head)
    assert "canTransform returned after" in str(remote.value)
    assert "timeout was 0.2." in str(remote.value)
    # the same words as the local Buffer's wait, apart from the measured time
    assert str(remote.value).split("after")[0] == str(local.value).split("after")[0]


def test_timeout_reports_extrapolation_when_the_data_stays_too_old(client):
    with pytest.raises(ForwardExtrapolationException, match="extrapolation into the future"):
        client.lookup_transform("map", "laser", 8.0, timeout=0.2)


def test_invalid_argument_is_answered_at_once_despite_a_timeout(server, client):
    started = time.monotonic()
    with pytest.raises(InvalidArgumentException):
        client.lookup_transform("", "laser", 0, timeout=30.0)
    assert time.monotonic() - started < 10.0
    assert server.stats()["waited"] == 0


def test_goal_older_than_the_cache_window_is_answered_at_once_without_waiting(buffer, server):
    for stamp in (30.0, 31.0):
        buffer.set_transform(make_transform("map", "fresh", (1, 0, 0), stamp=stamp), "test")
    with _raw_dealer(server.address) as dealer:
        dealer.send(protocol.pack_goal(4, "map", "fresh", 5_000_000_000, 0, "", False,
                                       60_000_000_000))
        answer = unpack(dealer.recv())  # the result itself, no "accepted" first
    assert answer[1:5] == ["result", 4, 3, "backward"]
    assert "No data can make this transform available" in answer[5]
    assert server.pending_count == 0


def test_cancel_forgets_the_goal_on_the_server(buffer, server, client):
    future = client.lookup_transform_async("map", "never", 0, timeout=60.0)
    wait_for(lambda: server.pending_count == 1, message="goal pending")
    assert future.cancel()
    wait_for(lambda: server.pending_count == 0 and server.stats()["cancelled"] == 1,
             message=lambda: f"goal forgotten: {server.stats()}")
    goals = server._state.goals
    assert not goals.groups and not goals.by_peer
    wait_for(lambda: buffer.pending_request_count == 0, message="the buffer's request withdrawn")


def test_resent_goal_is_not_a_second_goal_and_keeps_the_earlier_deadline(server):
    with _raw_dealer(server.address) as dealer:
        dealer.send(protocol.pack_goal(12, "map", "never", 0, 0, "", False, 60_000_000_000))
        assert unpack(dealer.recv())[1:3] == ["accepted", 12]
        dealer.send(protocol.pack_goal(12, "map", "never", 0, 0, "", False, 100_000_000))
        assert unpack(dealer.recv())[1:3] == ["accepted", 12]
        assert server.pending_count == 1
        answer = unpack(dealer.recv())  # at the 0.1 s deadline, not the 60 s one
        assert answer[1:4] == ["result", 12, 1]
        assert "timeout was 60." in answer[5]
    assert server.stats()["duplicates"] == 1


def test_cancel_is_acknowledged(server):
    with _raw_dealer(server.address) as dealer:
        dealer.send(protocol.pack_goal(11, "map", "never", 0, 0, "", False, 60_000_000_000))
        assert unpack(dealer.recv()) == [protocol.PROTOCOL_VERSION, "accepted", 11]
        dealer.send(protocol.pack_cancel(11))
        assert unpack(dealer.recv()) == [protocol.PROTOCOL_VERSION, "cancelled", 11, True]
        dealer.send(protocol.pack_cancel(11))
        assert unpack(dealer.recv()) == [protocol.PROTOCOL_VERSION, "cancelled", 11, False]
    assert server.pending_count == 0


def _answerable_lookup_seconds(address, repeat: int = 20) -> float:
    """Median seconds of an answerable lookup through a fresh, already connected client."""
    with BufferClient(address) as fast:
        fast.lookup_transform("map", "laser", 2.0)  # connect before timing
        samples = []
        for _ in range(repeat):
            started = time.perf_counter()
            fast.lookup_transform("map", "laser", 2.0)
            samples.append(time.perf_counter() - started)
    return sorted(samples)[len(samples) // 2]


def test_answerable_goal_is_not_held_behind_50_clients_waiting_goals(server):
    baseline = _answerable_lookup_seconds(server.address)
    clients = [BufferClient(server.address) for _ in range(50)]
    try:
        futures = [
            c.lookup_transform_async("map", f"missing_{i}", 0, timeout=30.0)
            for i, c in enumerate(clients)
        ]
        wait_for(lambda: server.pending_count == 50, message="50 goals pending")
        loaded = _answerable_lookup_seconds(server.address)
        # Answered while every waiting goal still waits (a server that served goals in
        # order would answer only after their 30 s deadlines), and in the time of an
        # answerable lookup without them (the margin absorbs a loaded 2-core machine).
        assert not any(f.done() for f in futures)
        assert loaded < max(20 * baseline, 0.5)
    finally:
        for c in clients:
            c.close()
    wait_for(lambda: server.pending_count == 0, message="closed clients cancel their goals")


def test_answerable_goal_sent_after_500_waiting_goals_is_answered_before_them(server):
    with _raw_dealer(server.address) as dealer:
        for goal_id in range(500):
            dealer.send(protocol.pack_goal(goal_id, "map", f"missing_{goal_id}", 0, 0, "", False,
                                           30_000_000_000))
        dealer.send(_answerable_goal(9999))  # on the same connection, after all of them
        accepted = set()
        while True:
            message = unpack(dealer.recv())
            if message[1] == "accepted":
                accepted.add(message[2])
                continue
            assert message[1:4] == ["result", 9999, 0]  # the first result is the answerable one
            break
        assert len(accepted) == 500 and server.pending_count == 500


def test_goals_that_time_out_together_do_not_hold_back_an_answerable_goal(server):
    with _raw_dealer(server.address) as dealer:
        for goal_id in range(1000):  # all due in 50 ms, each answered with a lookup
            dealer.send(protocol.pack_goal(goal_id, "map", f"missing_{goal_id}", 0, 0, "", False,
                                           50_000_000))
        wait_for(lambda: server.stats()["goals"] == 1000, message="1000 goals read")
        with BufferClient(server.address) as fast:
            answer = fast.lookup_transform("map", "laser", 2.0)
        assert answer.child_frame_id == "laser"
        timed_out = 0
        while timed_out < 1000:
            message = unpack(dealer.recv())
            if message[1] == "result":
                assert message[3] == 1  # LookupException: the frame does not exist
                timed_out += 1
    assert server.pending_count == 0


def test_a_timeout_over_the_limit_is_refused_naming_the_limit(server, client):
    from tf2py.server.server import MAX_GOAL_TIMEOUT

    with pytest.raises(InvalidArgumentException, match="limit on a goal's timeout"):
        client.lookup_transform("map", "never", 0, timeout=2**62 / 1e9)
    with pytest.raises(InvalidArgumentException, match=f"{MAX_GOAL_TIMEOUT:g} s"):
        client.lookup_transform("map", "never", 0, timeout=MAX_GOAL_TIMEOUT + 1)
    # at the limit: accepted and waiting
    future = client.lookup_transform_async("map", "never", 0, timeout=MAX_GOAL_TIMEOUT)
    wait_for(lambda: server.pending_count == 1, message="goal pending")
    future.cancel()
    wait_for(lambda: server.pending_count == 0, message="goal cancelled")
    assert server.stats()["refused"] == 2


def test_a_timeout_over_the_limit_needs_no_wait_for_what_is_answerable_now(buffer, server,
                                                                           client):
    # As a local Buffer: possible now, or never possible, is answered at once; the limit is
    # on waiting.
    from tf2py.server.server import MAX_GOAL_TIMEOUT

    over = MAX_GOAL_TIMEOUT + 1
    t = client.lookup_transform("map", "laser", 0, timeout=over)
    assert t.child_frame_id == "laser" and client.can_transform("map", "laser", 0, timeout=over)
    assert buffer.can_transform("map", "laser", 0, timeout=over)
    with pytest.raises(InvalidArgumentException, match='Invalid argument "" passed to '
                       "lookupTransform argument target_frame"):
        client.lookup_transform("", "laser", 0, timeout=over)
    assert not client.can_transform("map", "never", 0, timeout=over)  # it would wait: refused
    assert server.stats()["refused"] == 1


def test_finished_goals_leave_no_state_behind(buffer, server, client):
    for i in range(300):
        client.lookup_transform("map", "laser", 2.0)
        future = client.lookup_transform_async("map", f"gone_{i}", 0, timeout=60.0)
        future.cancel()
    with pytest.raises(LookupException):
        client.lookup_transform("map", "ghost", 0, timeout=0.05)
    wait_for(lambda: server.pending_count == 0, message="no goal pending")
    assert buffer.pending_request_count == 0
    goals = server._state.goals
    assert len(goals.deadlines) <= 1024 + 1  # compacted, not one entry per goal ever seen
    assert not goals.groups and not goals.by_peer and not goals.ready


# --- bad input ------------------------------------------------------------------------------


class _raw_dealer:
    def __init__(self, address):
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVHWM, 0)  # unread replies never stall the connection
        self.socket.setsockopt(zmq.SNDHWM, 0)
        self.socket.setsockopt(zmq.RCVTIMEO, 10_000)
        self.socket.connect(address)

    def __enter__(self):
        return self.socket

    def __exit__(self, *exc):
        self.socket.close(linger=0)
        self.context.term()


def _answerable_goal(goal_id):
    return protocol.pack_goal(goal_id, "map", "laser", 2_000_000_000, 0, "", False, 0)


def test_malformed_goal_with_an_id_gets_invalid_argument_and_the_server_goes_on(server):
    with _raw_dealer(server.address) as dealer:
        dealer.send(pack([protocol.PROTOCOL_VERSION, "goal", 5, 42, "laser", 0, 0, "", False, 0]))
        answer = unpack(dealer.recv())
        assert answer[:4] == [protocol.PROTOCOL_VERSION, "result", 5, INVALID_ARGUMENT_ERROR]
        assert "target_frame must be a string" in answer[5]
        dealer.send(_answerable_goal(6))
        assert unpack(dealer.recv())[2:4] == [6, 0]
    assert server.stats()["invalid_answered"] == 1


def test_goal_of_an_unknown_version_gets_invalid_argument(server):
    with _raw_dealer(server.address) as dealer:
        dealer.send(pack([2, "goal", 5, "map", "laser", 0, 0, "", False, 0]))
        answer = unpack(dealer.recv())
        assert answer[2:4] == [5, INVALID_ARGUMENT_ERROR]
        assert "unsupported protocol version 2" in answer[5]


@pytest.mark.parametrize(
    "frames, cause",
    [
        ([b"\xc1 garbage"], "undecodable"),
        ([pack({"not": "a goal"})], "no goal id"),
        ([b"\x00" * (protocol.MAX_GOAL_BYTES + 100)], "oversized"),
        ([_answerable_goal(1), b"an extra frame"], "framing"),
    ],
    ids=["garbage", "no-id", "oversized", "two-frames"],
)
def test_unanswerable_message_is_dropped_and_counted_and_the_server_goes_on(
    server, frames, cause
):
    with _raw_dealer(server.address) as dealer:
        dealer.send_multipart(frames)
        dealer.send(_answerable_goal(7))
        answer = unpack(dealer.recv())
        assert answer[2:4] == [7, 0]  # the next message is the good goal's answer
    assert server.stats()["dropped"] == 1
    assert server.stats()["dropped_by_cause"] == {cause: 1}


def test_bad_input_is_logged_once_per_cause(server, caplog):
    with caplog.at_level("WARNING", logger="tf2py.server"):
        with _raw_dealer(server.address) as dealer:
            for _ in range(3):
                dealer.send(b"\xc1 garbage")
            dealer.send(_answerable_goal(8))
            assert unpack(dealer.recv())[2] == 8
    assert server.stats()["dropped"] == 3
    assert len([r for r in caplog.records if "dropped" in r.getMessage()]) == 1


def test_goal_of_a_client_that_went_away_is_dropped_without_harm(server, client):
    with _raw_dealer(server.address) as dealer:
        dealer.send(protocol.pack_goal(1, "map", "never", 0, 0, "", False, 60_000_000_000))
        wait_for(lambda: server.pending_count == 1, message="goal pending")
    # the client is gone: its goal goes with its connection, not at its 60 s deadline
    wait_for(lambda: server.pending_count == 0 and server.stats()["disconnected"] == 1,
             message=lambda: f"goal of the closed connection dropped: {server.stats()}")
    assert client.lookup_transform("map", "laser", 2.0).child_frame_id == "laser"


# --- resources ------------------------------------------------------------------------------


def test_port_zero_reports_the_chosen_port(buffer):
    with BufferServer(buffer, "tcp://127.0.0.1:0") as srv:
        assert srv.address.startswith("tcp://127.0.0.1:")
        assert int(srv.address.rsplit(":", 1)[1]) > 0


def test_close_ends_the_thread_and_frees_the_port(buffer):
    srv = BufferServer(buffer, "tcp://127.0.0.1:0")
    address = srv.address
    assert _threads_named("tf2py-server")
    srv.close()
    srv.close()  # idempotent
    assert not _threads_named("tf2py-server")
    with BufferServer(buffer, address) as again:  # the same port binds again
        assert again.address == address


def test_close_drops_pending_goals_and_their_buffer_requests(buffer):
    srv = BufferServer(buffer, "tcp://127.0.0.1:0")
    with BufferClient(srv.address, timeout_padding=0.2) as c:
        c.lookup_transform_async("map", "never", 0, timeout=60.0)
        wait_for(lambda: srv.pending_count == 1)
        srv.close()
    assert buffer.pending_request_count == 0


def test_bind_failure_raises_and_leaks_no_thread(buffer, server):
    before = len(threading.enumerate())
    with pytest.raises(OSError, match=f"cannot bind the buffer server at {server.address}"):
        BufferServer(buffer, server.address)  # already taken
    assert len(threading.enumerate()) == before


@pytest.mark.parametrize(
    "address", ["tcp://127.0.0.1:99999", "tcp://127.0.0.1", "junk"],
    ids=["port-out-of-range", "no-port", "not-an-address"],
)
def test_an_invalid_address_is_a_value_error_naming_it(buffer, address):
    before = len(threading.enumerate())
    with pytest.raises(ValueError, match=f"invalid buffer server address '{address}'"):
        BufferServer(buffer, address)
    assert len(threading.enumerate()) == before


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:0", "tcp://*:7402"])
def test_a_client_given_an_address_only_a_server_binds_is_one_value_error(address):
    with pytest.raises(ValueError, match="a client needs the server's real address"):
        BufferClient(address)


def test_an_address_no_interface_has_is_an_os_error_naming_it(buffer):
    with pytest.raises(OSError, match="cannot bind the buffer server at tcp://192.0.2.1:0"):
        BufferServer(buffer, "tcp://192.0.2.1:0")  # TEST-NET-1: on no interface here
