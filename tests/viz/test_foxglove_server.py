"""`tf2py.viz.FoxgloveServer` in-process: a real core, real broadcasters, and a real
WebSocket client speaking the Foxglove protocol, decoding FrameTransforms with Foxglove's
published protobuf schemas."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("foxglove")

from google.protobuf import descriptor_pb2

from foxglove_client import FoxgloveClient, values_of
from helpers import wait_for
from tf2py import (
    StaticTransformBroadcaster,
    Time,
    TransformBroadcaster,
    make_transform,
)
from tf2py.transport.zmq.core import Core
from tf2py.viz.foxglove import FoxgloveServer

# Quaternions whose squared norm is exactly 1.0 in binary floating point, so nothing is
# renormalized and the values must arrive bit for bit.
Q_HALF = (0.5, 0.5, 0.5, 0.5)
Q_Z = (0.0, 0.0, 0.6, 0.8)


@pytest.fixture
def core():
    with Core("tcp://127.0.0.1:0") as c:
        yield c.address


@pytest.fixture
def server(core):
    with FoxgloveServer(core=core, port=0) as s:
        yield s


def _static(parent, child, translation, rotation, stamp):
    return make_transform(parent, child, translation, rotation, stamp=stamp)


def test_advertises_tf_as_foxglove_frame_transforms_in_protobuf(server):
    with FoxgloveClient(server.url) as client:
        channel = client.channel("/tf")
        assert client.server_info["op"] == "serverInfo"
        assert client.server_info["name"] == "tf2py"
        assert channel["schemaName"] == "foxglove.FrameTransforms"
        assert channel["encoding"] == "protobuf"
        assert channel["schemaEncoding"] == "protobuf"
        files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
        messages = {f"{f.package}.{m.name}" for f in files.file for m in f.message_type}
        assert {"foxglove.FrameTransforms", "foxglove.FrameTransform"} <= messages


def test_forwards_broadcast_transforms_with_their_own_stamps_exactly(core, server):
    stamp = Time(1_700_000_000, 123_456_789)
    sent = [
        make_transform("odom", "base_link", (1.25, -2.5, 0.125), Q_HALF, stamp=stamp),
        make_transform("base_link", "laser", (0.1, 0.2, 0.3), Q_Z, stamp=stamp),
    ]
    with FoxgloveClient(server.url) as client, TransformBroadcaster(core=core) as broadcaster:
        client.subscribe(client.channel("/tf")["id"])
        # /tf is not latched: repeat until the client has it (the subscription is async).
        client.wait(lambda: broadcaster.send_transform(sent) or client.transforms(),
                    what="the broadcast transforms")
        message = client.frame_transforms()[-1]
    assert [values_of(t) for t in message.transforms] == [
        ("odom", "base_link", stamp.nanoseconds, (1.25, -2.5, 0.125), Q_HALF),
        ("base_link", "laser", stamp.nanoseconds, (0.1, 0.2, 0.3), Q_Z),
    ]


def test_one_bus_message_is_one_frame_transforms_message(core, server):
    batch = [make_transform("map", f"f{i}", (i, 0, 0), stamp=5.0 + i) for i in range(20)]
    with FoxgloveClient(server.url) as client, TransformBroadcaster(core=core) as broadcaster:
        client.subscribe(client.channel("/tf")["id"])
        client.wait(lambda: broadcaster.send_transform(batch) or client.frame_transforms(),
                    what="a message")
        assert all(len(m.transforms) == 20 for m in client.frame_transforms())
        assert [values_of(t)[1:3] for t in client.frame_transforms()[0].transforms] == [
            (f"f{i}", (5 + i) * 1_000_000_000) for i in range(20)]


def test_statics_sent_before_the_client_connected_reach_it(core, server):
    statics = [_static("base_link", "camera", (0.05, 0.0, 0.3), Q_Z, Time(42, 7)),
               _static("base_link", "imu", (0.0, 0.01, 0.02), Q_HALF, Time(0, 0))]
    with StaticTransformBroadcaster(core=core) as broadcaster:
        broadcaster.send_transform(statics)
        wait_for(lambda: server.static_frames() == ["camera", "imu"], message="statics held")
        with FoxgloveClient(server.url) as client:
            client.subscribe(client.channel("/tf")["id"])
            client.wait(lambda: len(client.transforms()) >= 2, what="the statics")
            got = sorted(values_of(t) for t in client.transforms())
    assert got == [
        ("base_link", "camera", 42_000_000_007, (0.05, 0.0, 0.3), Q_Z),
        ("base_link", "imu", 0, (0.0, 0.01, 0.02), Q_HALF),
    ]


def test_statics_latched_before_the_server_started_reach_a_late_client(core):
    with StaticTransformBroadcaster(core=core) as broadcaster:
        broadcaster.send_transform(_static("map", "landmark", (3, 4, 5), Q_HALF, Time(9)))
        with FoxgloveServer(core=core, port=0) as server:
            wait_for(lambda: server.static_frames() == ["landmark"], message="statics held")
            with FoxgloveClient(server.url) as client:
                client.subscribe(client.channel("/tf")["id"])
                client.wait(lambda: client.transforms(), what="the static")
                assert [values_of(t) for t in client.transforms()] == [
                    ("map", "landmark", 9_000_000_000, (3.0, 4.0, 5.0), Q_HALF)]


def test_a_late_client_gets_only_the_latest_static_of_each_child(core, server):
    with StaticTransformBroadcaster(core=core) as broadcaster:
        broadcaster.send_transform(_static("base", "arm", (1, 0, 0), Q_Z, Time(1)))
        wait_for(lambda: server.static_frames() == ["arm"])
        with FoxgloveClient(server.url) as probe:
            # The second static has reached the server once a client sees it (the bus may
            # also replay the first one, so counting forwarded messages is not enough).
            probe.subscribe(probe.channel("/tf")["id"])
            broadcaster.send_transform(_static("base", "arm", (2, 0, 0), Q_Z, Time(2)))
            probe.wait(lambda: any(values_of(t)[3] == (2.0, 0.0, 0.0)
                                   for t in probe.transforms()), what="the second static")
        with FoxgloveClient(server.url) as first:
            first.subscribe(first.channel("/tf")["id"])
            first.wait(lambda: first.transforms(), what="the static")
            assert [values_of(t)[3] for t in first.transforms()] == [(2.0, 0.0, 0.0)]
            # A second client connecting later gets them too.
            with FoxgloveClient(server.url) as second:
                second.subscribe(second.channel("/tf")["id"], subscription_id=7)
                second.wait(lambda: second.transforms(7), what="the static on the 2nd client")
                assert [values_of(t)[1:4] for t in second.transforms(7)] == [
                    ("arm", 2_000_000_000, (2.0, 0.0, 0.0))]


def test_invalid_transforms_are_left_out_and_counted_the_rest_forwarded(core, server):
    nan = make_transform("odom", "bad", (float("nan"), 0, 0), stamp=1.0)
    unnormal = make_transform("odom", "tilted", (0, 0, 0), (0, 0, 0, 2.0), stamp=1.0)
    self_parent = make_transform("odom", "odom", (0, 0, 0), stamp=1.0)
    before_1970 = make_transform("odom", "early", (0, 0, 0), stamp=-1.0)
    good = make_transform("/odom", "/good", (1, 2, 3), stamp=1.0)
    with FoxgloveClient(server.url) as client, TransformBroadcaster(core=core) as broadcaster:
        client.subscribe(client.channel("/tf")["id"])
        client.wait(lambda: broadcaster.send_transform(
            [nan, unnormal, self_parent, before_1970, good]) or client.transforms(),
            what="the good transform")
        assert {values_of(t)[:2] for t in client.transforms()} == {("odom", "good")}
    dropped = server.stats()["dropped"]
    assert dropped["invalid"] >= 3 and dropped["stamp"] >= 1


def test_a_quaternion_slightly_off_unit_length_is_normalized_as_tf2_does(core, server):
    t = make_transform("a", "b", (0, 0, 0), (0, 0, 0, 1.004), stamp=1.0)
    with FoxgloveClient(server.url) as client, TransformBroadcaster(core=core) as broadcaster:
        client.subscribe(client.channel("/tf")["id"])
        client.wait(lambda: broadcaster.send_transform(t) or client.transforms())
        assert values_of(client.transforms()[0])[4] == (0.0, 0.0, 0.0, 1.0)


def test_two_servers_in_one_process_keep_their_own_channels(core):
    with FoxgloveServer(core=core, port=0) as one, FoxgloveServer(core=core, port=0) as two:
        for server in (one, two):
            with FoxgloveClient(server.url) as client:
                client.channel("/tf")
                client.wait(lambda: True)
                assert [c["topic"] for c in client.channels.values()] == ["/tf"]


def test_close_stops_the_server_and_is_idempotent(core):
    server = FoxgloveServer(core=core, port=0)
    url = server.url
    with FoxgloveClient(url) as client:
        client.channel("/tf")
    server.close()
    server.close()
    with pytest.raises(OSError):
        FoxgloveClient(url, timeout=2.0)


def test_a_port_in_use_is_a_clear_error(core, server):
    with pytest.raises(OSError, match=rf"cannot serve on 127\.0\.0\.1:{server.port}: .*in use"):
        FoxgloveServer(core=core, port=server.port)


def test_a_malformed_bus_address_is_refused_before_a_port_opens():
    with pytest.raises(ValueError, match="invalid address 'nowhere'"):
        FoxgloveServer(core="nowhere", port=0)


def test_app_url_opens_the_websocket_in_foxglove(server):
    assert server.url == f"ws://127.0.0.1:{server.port}"
    assert server.app_url == ("https://app.foxglove.dev/?ds=foxglove-websocket&ds.url="
                              f"ws%3A%2F%2F127.0.0.1%3A{server.port}")


def test_the_server_sends_without_nagle_delays(server):
    # The SDK leaves Nagle's algorithm on, which holds each small message for the client's
    # delayed ACK (10-40 ms at 1 kHz); the server turns it off on its connections.
    import socket
    import sys

    from tf2py.viz.foxglove import server_sockets

    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc")
    with FoxgloveClient(server.url) as client:
        client.subscribe(client.channel("/tf")["id"])
        client_port = client.ws.socket.getsockname()[1]

        def accepted():
            for sock in server_sockets(server.port):
                with sock:
                    try:
                        peer = sock.getpeername()[1]
                    except OSError:
                        continue  # the listening socket
                    if peer == client_port:
                        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) or -1
            return None

        assert wait_for(accepted) > 0


def test_servers_opened_and_closed_leave_no_sockets_or_threads_behind(core):
    import os
    import threading

    def fds():
        return len(os.listdir("/proc/self/fd"))

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("reads /proc")
    with FoxgloveServer(core=core, port=0):
        pass  # the SDK's runtime starts once per process
    before, threads = fds(), threading.active_count()
    for _ in range(5):
        with FoxgloveServer(core=core, port=0) as server:
            with FoxgloveClient(server.url) as client:
                client.subscribe(client.channel("/tf")["id"])
    wait_for(lambda: fds() <= before and threading.active_count() <= threads,
             message=f"fds {fds()} vs {before}, threads {threading.active_count()} vs {threads}")


def test_the_same_port_can_be_served_again_right_after_close(core):
    for _ in range(5):
        with FoxgloveServer(core=core, port=0) as server:
            port = server.port
        with FoxgloveServer(core=core, port=port) as again:
            with FoxgloveClient(again.url) as client:
                assert client.channel("/tf")["schemaName"] == "foxglove.FrameTransforms"
