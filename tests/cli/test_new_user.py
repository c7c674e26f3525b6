"""What a new user meets: echo says when nothing at all is received, a misspelt frame gets a
"did you mean", a client with no server names `tf2py server`."""

from __future__ import annotations

import re

import pytest

from cli_support import free_bus_address, wait_for
from tf2py import Buffer, LookupException, make_transform
from tf2py.server.client import BufferClient, ServerTimeoutException
from tf2py.server.server import BufferServer


def test_echo_with_no_core_says_nothing_is_received_once_without_a_timeout(spawn,
                                                                         tf2py_command):
    where = free_bus_address()
    proc = spawn([*tf2py_command, "echo", "map", "base_link", "--core", where])
    notice = proc.wait_for_line("no transforms received at all", timeout=30)
    # the time it really waited: 3 s, or a little more on a loaded machine
    seconds = re.fullmatch(
        rf"tf2py echo: no transforms received at all from the core at {re.escape(where)} in "
        r"(\d+) s: is `tf2py core` running there, and is anything broadcasting\?", notice)
    assert seconds is not None, notice
    assert 3 <= int(seconds.group(1)) < 30
    # a few more waiting lines, and the notice is not repeated
    count = proc.output().count("Waiting for transform")
    wait_for(lambda: proc.output().count("Waiting for transform") >= count + 2, timeout=30)
    assert proc.output().count("no transforms received at all") == 1


def test_lookup_of_a_misspelt_frame_suggests_the_close_one():
    buffer = Buffer()
    buffer.set_transform_static(make_transform("map", "base_link"), "test")
    with pytest.raises(LookupException) as error:
        buffer.lookup_transform("map", "base_lnk", 0)
    # tf2's message first, intact; the suggestion appended as a sentence
    assert str(error.value) == ('"base_lnk" passed to lookupTransform argument source_frame does '
                                "not exist. Did you mean 'base_link'?")
    with pytest.raises(LookupException) as error:
        buffer.lookup_transform("map", "zebra", 0)
    assert str(error.value) == ('"zebra" passed to lookupTransform argument source_frame does '
                                "not exist. ")


def test_remote_lookup_of_a_misspelt_frame_carries_the_suggestion():
    buffer = Buffer()
    buffer.set_transform_static(make_transform("map", "base_link"), "test")
    with BufferServer(buffer, "tcp://127.0.0.1:0") as server, \
            BufferClient(server.address) as client:
        with pytest.raises(LookupException, match="Did you mean 'base_link'"):
            client.lookup_transform("map", "base_lnk", 0)


def test_echo_of_a_misspelt_frame_suggests_the_close_one(spawn, tf2py_command, core, latch):
    latch(core, [make_transform("map", "base_link")])
    proc = spawn([*tf2py_command, "echo", "map", "base_lnik", "--core", core])
    line = proc.wait_for_line("Waiting for transform", timeout=30)
    wait_for(lambda: "Did you mean" in proc.output(), timeout=30)
    assert ('Invalid frame ID "base_lnik" passed to canTransform argument source_frame - frame '
            "does not exist. Did you mean 'base_link'?") in proc.output()
    assert line.startswith("Waiting for transform map ->  base_lnik: ")


def test_client_with_no_server_names_the_command_to_start_one():
    where = free_bus_address()
    with BufferClient(where, timeout_padding=0.3) as client:
        with pytest.raises(ServerTimeoutException) as error:
            client.lookup_transform("map", "base_link", 0)
    assert f"Start it with `tf2py server --address {where}`" in str(error.value)
