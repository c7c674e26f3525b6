"""The buffer server over each of its links (``tcp://`` and ``zenoh://``): the answers and
exceptions of a local Buffer; a client's first lookups, made at once by a new process, all
come back; a script that never closes its client still exits, and an unclosed client lets go
of its threads when it is collected."""

from __future__ import annotations

import gc
import sys
import threading

import pytest

from helpers import wait_for
from tf2py import Buffer, LookupException, make_transform
from tf2py.server.client import BufferClient
from tf2py.server.server import BufferServer

#: New clients, one after another, each asking at once (argv: address, count); prints how
#: many answers came back. Each client is closed, so a Zenoh client opens a new session.
FIRST_LOOKUPS = """
import sys
from tf2py.server.client import BufferClient
address, count = sys.argv[1], int(sys.argv[2])
answered = 0
for _ in range(count):
    with BufferClient(address, timeout_padding=10.0) as client:
        t = client.lookup_transform("map", "odom", 0, timeout=1.0)
        answered += t.transform.translation.x == 1.5
print("answered", answered, flush=True)
"""

#: A client used once and never closed.
NEVER_CLOSED = """
import sys
from tf2py.server.client import BufferClient
client = BufferClient(sys.argv[1])
print("x", client.lookup_transform("map", "odom", 0, timeout=10.0).transform.translation.x,
      flush=True)
"""


@pytest.fixture(scope="module")
def served(server_address):
    buffer = Buffer()
    buffer.set_transform_static(make_transform("map", "odom", (1.5, 0.0, 0.0)), "contract")
    for stamp in (1.0, 2.0):
        buffer.set_transform(make_transform("odom", "base_link", (stamp, 0.0, 0.0),
                                            stamp=stamp), "contract")
    with BufferServer(buffer, address=server_address) as server:
        yield buffer, server


def test_the_server_answers_as_the_local_buffer(served):
    buffer, server = served
    with BufferClient(server.address) as client:
        for time_ in (0, 1.5):
            remote = client.lookup_transform("map", "base_link", time_, timeout=10)
            local = buffer.lookup_transform("map", "base_link", time_)
            assert remote.transform.translation.x == local.transform.translation.x
            assert remote.header.stamp == local.header.stamp
        with pytest.raises(LookupException) as remote_error:
            client.lookup_transform("map", "nowhere", 0)
        with pytest.raises(LookupException) as local_error:
            buffer.lookup_transform("map", "nowhere", 0)
        assert str(remote_error.value) == str(local_error.value)


def test_a_new_clients_first_lookups_all_come_back(served, spawn):
    _, server = served
    count = 5
    proc = spawn([sys.executable, "-c", FIRST_LOOKUPS, server.address, str(count)])
    line = proc.wait_for_line("answered", timeout=count * 11.0 + 30)
    assert line == f"answered {count}", proc.output()
    assert proc.wait() == 0


def test_a_script_that_never_closes_its_client_exits(served, spawn):
    _, server = served
    proc = spawn([sys.executable, "-c", NEVER_CLOSED, server.address])
    proc.wait_for_line("x 1.5", timeout=60)
    wait_for(lambda: proc.popen.poll() is not None, 30,
             message=lambda: f"the script to exit; output:\n{proc.output()}")
    assert proc.wait() == 0, proc.output()


def test_an_unclosed_client_lets_go_of_its_threads(served):
    _, server = served
    with BufferClient(server.address) as warm:  # the link's shared parts (a Zenoh session)
        warm.lookup_transform("map", "odom", 0, timeout=10)
        before = set(threading.enumerate())
        client = BufferClient(server.address)
        assert client.lookup_transform_async("map", "odom", 0, timeout=10).result(30)
        del client
        gc.collect()
        wait_for(lambda: not [t for t in threading.enumerate()
                              if t not in before and t.is_alive()], 10,
                 message=lambda: f"threads left by an unclosed client: "
                 f"{[t.name for t in threading.enumerate() if t not in before]}")


@pytest.mark.parametrize("address, words", [
    ("tcp://127.0.0.1:99999", "99999"), ("tcp://127.0.0.1", "tcp://127.0.0.1"),
    ("zenoh://tcp/127.0.0.1:99999", "99999"), ("zenoh://tcp/127.0.0.1:7447?colour=red", "colour"),
    ("udp://127.0.0.1:7402", "udp://"),
])
def test_a_bad_server_address_is_refused_at_once_in_one_line(address, words):
    for make in (lambda: BufferClient(address), lambda: BufferServer(Buffer(), address)):
        with pytest.raises(ValueError) as refused:
            make().close()
        assert "\n" not in str(refused.value) and words in str(refused.value)
