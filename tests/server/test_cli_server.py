"""``tf2py server`` as a subprocess, filled from a ``tf2py core`` subprocess.

(Kept beside the other server tests; it tests tf2py/cli/server.py.)"""

from __future__ import annotations

import signal

import pytest

from helpers import free_address
from tf2py import LookupException, StaticTransformBroadcaster, TransformBroadcaster, make_transform
from tf2py.server.client import BufferClient


def _address(line: str) -> str:
    return line.split("ready at ", 1)[1].strip()


@pytest.fixture
def core(spawn, tf2py_command):
    proc = spawn(tf2py_command + ["core", "--address", "tcp://127.0.0.1:0"])
    return _address(proc.wait_for_line("tf2py core: ready at "))


def test_server_prints_ready_answers_lookups_and_exits_0_on_sigterm(spawn, tf2py_command, core):
    address = free_address()
    server = spawn(tf2py_command + ["server", "--core", core, "--address", address])
    line = server.wait_for_line("tf2py server: ready at ")
    assert line == f"tf2py server: ready at {address}"
    with StaticTransformBroadcaster(core=core) as static, TransformBroadcaster(core=core) as tf:
        static.send_transform(make_transform("map", "odom", (1.0, 2.0, 3.0)))
        with BufferClient(address) as client:
            # Waits on the server for the data to arrive through the bus (no sleep).
            result = client.lookup_transform("map", "odom", 0, timeout=15.0)
            assert result.transform.translation.y == 2.0
            tf.send_transform(make_transform("odom", "base_link", (0, 0, 1), stamp=100.0))
            moved = client.lookup_transform("map", "base_link", 100.0, timeout=15.0)
            assert moved.transform.translation.z == 4.0
            with pytest.raises(LookupException, match="nowhere"):
                client.lookup_transform("map", "nowhere", 0)
    server.signal(signal.SIGTERM)
    assert server.wait(timeout=15) == 0


def test_server_port_zero_prints_the_chosen_port_and_stops_on_sigint(spawn, tf2py_command, core):
    server = spawn(tf2py_command + ["server", "--core", core, "--address", "tcp://127.0.0.1:0"])
    address = _address(server.wait_for_line("tf2py server: ready at "))
    assert not address.endswith(":0")
    with BufferClient(address) as client:
        assert client.can_transform("map", "odom", 0) is False
    server.signal(signal.SIGINT)
    assert server.wait(timeout=15) == 0


@pytest.mark.parametrize("cache_time", ["-1", "0", "inf", "nan"])
def test_server_refuses_a_bad_cache_time_with_one_line(spawn, tf2py_command, cache_time):
    proc = spawn(tf2py_command + ["server", f"--cache-time={cache_time}", "--address",
                                  "tcp://127.0.0.1:0"])
    assert proc.wait(timeout=15) != 0
    assert proc.output().strip().count("\n") == 0
    assert "--cache-time" in proc.output()


@pytest.mark.parametrize("address", ["nonsense", "tcp://127.0.0.1:99999"])
def test_server_refuses_an_address_it_cannot_serve(spawn, tf2py_command, core, address):
    proc = spawn(tf2py_command + ["server", "--core", core, "--address", address])
    assert proc.wait(timeout=15) != 0
    assert proc.output().startswith("tf2py server: error:")
    assert proc.output().strip().count("\n") == 0
