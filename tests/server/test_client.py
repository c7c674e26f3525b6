"""BufferClient: timeouts when no server answers, recovery after a server restart, many
threads, futures, and closing without leaks."""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers import free_address, wait_for
from tf2py import InvalidArgumentException, LookupException, TimeoutException, make_transform
from tf2py.server.client import BufferClient

# A buffer server in its own process: map -> odom static, and "late" once told on stdin.
SERVER_SCRIPT = textwrap.dedent(
    """
    import sys
    from tf2py import Buffer, make_transform
    from tf2py.server.server import BufferServer
    buffer = Buffer()
    buffer.set_transform_static(make_transform("map", "odom", (1, 2, 3)), "test")
    with BufferServer(buffer, sys.argv[1]) as server:
        print("serving", server.address, flush=True)
        for line in sys.stdin:
            if line.strip() == "late":
                buffer.set_transform_static(make_transform("odom", "late", (0, 0, 1)), "test")
                print("inserted", flush=True)
            elif line.strip() == "pending":
                print(server.pending_count, flush=True)
    """
)


def _client_threads():
    return [t for t in threading.enumerate() if t.name.startswith("tf2py-client")]


class _ServerProcess:
    def __init__(self, address):
        import subprocess

        self.popen = subprocess.Popen(
            [sys.executable, "-c", SERVER_SCRIPT, address],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        line = self.popen.stdout.readline()
        assert line.startswith("serving"), line

    def insert_late(self):
        self.popen.stdin.write("late\n")
        self.popen.stdin.flush()
        assert self.popen.stdout.readline().strip() == "inserted"

    def pending_count(self) -> int:
        self.popen.stdin.write("pending\n")
        self.popen.stdin.flush()
        return int(self.popen.stdout.readline())

    def kill(self):
        self.popen.kill()
        self.popen.wait(timeout=10)
        self.popen.stdout.close()
        self.popen.stdin.close()


@pytest.fixture
def server_process():
    procs = []

    def start(address):
        proc = _ServerProcess(address)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.popen.poll() is None:
            proc.kill()


def test_timeout_exception_when_no_server_answers():
    with BufferClient(free_address(), timeout_padding=0.2) as client:
        started = time.monotonic()
        with pytest.raises(TimeoutException, match="did not come back in the specified time"):
            client.lookup_transform("map", "odom", 0, timeout=0.1)
        assert 0.25 <= time.monotonic() - started < 5.0


def test_async_lookup_fails_with_timeout_exception_when_no_server_answers():
    with BufferClient(free_address(), timeout_padding=0.2) as client:
        future = client.lookup_transform_async("map", "odom", 0)
        with pytest.raises(TimeoutException, match="Something is likely wrong with the server"):
            future.result(timeout=10)
        assert client.pending_count == 0


def test_can_transform_raises_rather_than_answer_false_when_no_server_answers():
    with BufferClient(free_address(), timeout_padding=0.1) as client:
        with pytest.raises(TimeoutException):
            client.can_transform("map", "odom", 0)


def test_client_recovers_after_the_server_restarts_on_the_same_port(server_process):
    address = free_address()
    first = server_process(address)
    with BufferClient(address, timeout_padding=10.0) as client:
        assert client.lookup_transform("map", "odom", 0).transform.translation.x == 1
        first.kill()
        server_process(address)
        result = client.lookup_transform("map", "odom", 0)
        assert result.transform.translation.z == 3


def test_waiting_goal_is_sent_again_to_the_restarted_server(server_process):
    address = free_address()
    first = server_process(address)
    with BufferClient(address, timeout_padding=10.0) as client:
        client.lookup_transform("map", "odom", 0)  # connected
        blocking = ThreadPoolExecutor(1)
        try:
            waiting = client.lookup_transform_async("map", "late", 0, timeout=60.0)
            waiting_blocking = blocking.submit(client.lookup_transform, "map", "late", 0, 60.0)
            wait_for(lambda: first.pending_count() == 2, message="both goals wait on the server")
            first.kill()
            second = server_process(address)
            # The new server knows nothing of the goals until the clients re-send them.
            second.insert_late()
            assert waiting.result(timeout=30).child_frame_id == "late"
            assert waiting_blocking.result(timeout=30).child_frame_id == "late"
        finally:
            blocking.shutdown()


def test_lookups_from_many_threads_each_get_their_own_answer(buffer, server, client):
    expected = {s: buffer.lookup_transform("map", "odom", s) for s in (1.0, 1.5, 2.0, 2.5, 3.0)}

    def worker(stamp):
        return all(client.lookup_transform("map", "odom", stamp) == expected[stamp]
                   for _ in range(40))

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(worker, list(expected) * 4))


def test_async_lookups_from_many_threads_resolve_to_their_own_answers(buffer, server, client):
    def worker(stamp):
        futures = [client.lookup_transform_async("map", "odom", stamp) for _ in range(30)]
        return all(f.result(timeout=10).header.stamp.to_seconds() == stamp for f in futures)

    with ThreadPoolExecutor(6) as pool:
        assert all(pool.map(worker, [1.0, 1.25, 1.5, 2.0, 2.5, 3.0]))


def test_async_future_raises_the_tf2_error(client):
    future = client.lookup_transform_async("map", "nowhere", 0)
    with pytest.raises(LookupException, match="nowhere"):
        future.result(timeout=10)


def test_async_full_form_resolves(buffer, client):
    future = client.lookup_transform_full_async("laser", 1.0, "laser", 3.0, "map", timeout=1.0)
    assert future.result(timeout=10) == buffer.lookup_transform_full(
        "laser", 1.0, "laser", 3.0, "map"
    )


@pytest.mark.parametrize(
    "args",
    [(3, "odom", 0), ("map", None, 0), ("map", "odom", "noon"), ("map", "odom", float("nan"))],
)
def test_bad_argument_raises_the_local_invalid_argument_without_a_round_trip(
    buffer, server, client, args
):
    with pytest.raises(InvalidArgumentException) as local:
        buffer.lookup_transform(*args)
    with pytest.raises(InvalidArgumentException) as remote:
        client.lookup_transform(*args)
    assert str(remote.value) == str(local.value)
    assert server.stats()["goals"] == 0


@pytest.mark.parametrize("call", ["blocking", "future"])
def test_a_frame_id_longer_than_the_protocol_carries_is_refused_at_once(server, client, call):
    """100 000 characters would make a goal over the server's size limit, dropped unanswered
    (the caller used to wait for the padding and get a TimeoutException)."""
    frame = "x" * 100_000
    with pytest.raises(InvalidArgumentException, match="at most 4096 characters"):
        if call == "blocking":
            client.lookup_transform(frame, "odom", 0)
        else:
            client.lookup_transform_async("map", frame, 0).result(timeout=10)
    assert server.stats()["goals"] == 0  # refused by the client: no goal, no wait


def test_a_time_outside_int64_nanoseconds_is_an_invalid_argument(server, client):
    with pytest.raises(InvalidArgumentException, match="out of range"):
        client.lookup_transform("map", "odom", 1e30)
    assert server.stats()["goals"] == 0


def test_bad_fixed_frame_raises_the_local_invalid_argument(buffer, client):
    args = ("map", 0, "odom", 0, 5)
    with pytest.raises(InvalidArgumentException) as local:
        buffer.lookup_transform_full(*args)
    with pytest.raises(InvalidArgumentException) as remote:
        client.lookup_transform_full(*args)
    assert str(remote.value) == str(local.value)


def test_close_fails_waiting_futures_and_leaves_no_threads(server):
    before = len(_client_threads())
    client = BufferClient(server.address)
    future = client.lookup_transform_async("map", "never", 0, timeout=60.0)
    wait_for(lambda: server.pending_count == 1)
    client.close()
    with pytest.raises(TimeoutException, match="closed"):
        future.result(timeout=5)
    assert len(_client_threads()) == before
    wait_for(lambda: server.pending_count == 0, message="close cancels the goal on the server")
    with pytest.raises(RuntimeError, match="closed"):
        client.lookup_transform("map", "odom", 0)


def test_close_unblocks_a_thread_waiting_in_a_blocking_lookup(server):
    client = BufferClient(server.address)
    outcome = []

    def lookup():
        try:
            client.lookup_transform("map", "never", 0, timeout=60.0)
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=lookup)
    thread.start()
    wait_for(lambda: server.pending_count == 1)
    client.close()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert isinstance(outcome[0], TimeoutException)


def test_channel_of_an_ended_thread_is_closed(server):
    with BufferClient(server.address) as client:
        thread = threading.Thread(target=client.lookup_transform, args=("map", "odom", 0))
        thread.start()
        thread.join()
        del thread
        wait_for(lambda: not client._channels, message="channel closed with its thread")


def test_insertion_answers_waiting_async_goal(buffer, server, client):
    future = client.lookup_transform_async("map", "new", 0, timeout=60.0)
    wait_for(lambda: server.pending_count == 1)
    buffer.set_transform_static(make_transform("map", "new", (1, 0, 0)), "test")
    assert future.result(timeout=10).child_frame_id == "new"


def test_an_invalid_server_address_is_a_value_error_naming_it():
    import threading

    before = set(threading.enumerate())
    with pytest.raises(ValueError, match="invalid buffer server address 'junk'"):
        BufferClient("junk")
    assert set(threading.enumerate()) <= before


def test_a_server_address_with_a_port_out_of_range_is_refused():
    """ZeroMQ alone would connect to port 99999 - 65536 = 34463 without a word."""
    with pytest.raises(ValueError, match="'tcp://127.0.0.1:99999': port must be 0..65535"):
        BufferClient("tcp://127.0.0.1:99999")


def test_close_from_a_future_callback_ends_the_client(server):
    """Done callbacks run on the client's I/O thread; closing the client there must not
    wait for that very thread (it used to hang in the context's term() for ever)."""
    client = BufferClient(server.address)
    closed = threading.Event()
    future = client.lookup_transform_async("map", "odom", 0)
    future.add_done_callback(lambda f: (client.close(), closed.set()))
    assert closed.wait(10)
    wait_for(lambda: _client_threads() == [])


def test_ctrl_c_during_a_blocking_lookup_cancels_the_goal_on_the_server(server, client):
    import os
    import signal

    def interrupt():
        # A real SIGINT to the process, as Ctrl-C sends: the kernel may hand it to any thread
        # (here often the server's own loop thread), and the lookup must still be interrupted.
        deadline = time.monotonic() + 30
        while server.pending_count != 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        os.kill(os.getpid(), signal.SIGINT)

    interrupter = threading.Thread(target=interrupt)
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            client.lookup_transform("map", "never", 0, timeout=60.0)
    finally:
        interrupter.join()
    # (the server forgets the goal, then counts it: wait for both)
    wait_for(lambda: server.pending_count == 0 and server.stats()["cancelled"] == 1,
             message=lambda: f"goal cancelled, not left to time out: {server.stats()}")


def test_ctrl_c_delivered_to_another_thread_still_interrupts_a_blocking_lookup(server, client):
    """Ctrl-C's SIGINT may land on any thread; Python raises KeyboardInterrupt in the main
    thread only once it runs Python code again, so a lookup blocked in one long poll would
    hold the interrupt back until its timeout (60 s here)."""
    import signal

    def interrupt():
        deadline = time.monotonic() + 30
        while server.pending_count != 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # this thread, not main

    interrupter = threading.Thread(target=interrupt)
    interrupter.start()
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            client.lookup_transform("map", "never", 0, timeout=60.0)
    finally:
        interrupter.join()
    assert time.monotonic() - start < 20
    wait_for(lambda: server.pending_count == 0, message="goal cancelled, not left to time out")
