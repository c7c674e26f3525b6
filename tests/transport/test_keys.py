"""Keys (API.md "Keys"): with a site's keys, bus and buffer-server traffic is encrypted and
authenticated; processes with no keys or another site's keys are refused and nothing they
send reaches a listener or the server; a client refuses a stand-in server."""

from __future__ import annotations

import logging
import shutil
import time

import pytest
import zmq

from helpers import wait_for
from tf2py import SimClock, Time, make_transform
from tf2py.buffer.buffer import Buffer
from tf2py.buffer.exceptions import TimeoutException
from tf2py.server.client import BufferClient
from tf2py.server.server import BufferServer
from tf2py.transport.broadcaster import StaticTransformBroadcaster, TransformBroadcaster
from tf2py.transport.listener import TransformListener
from tf2py.transport.zmq import keys as keys_module
from tf2py.transport.zmq.core import Core
from tf2py.transport.zmq.keys import Keys, KeysError, add_identity, create_site
from transport_support import resources


@pytest.fixture
def site(tmp_path):
    return create_site(tmp_path / "site")


@pytest.fixture
def foreign(tmp_path):
    return create_site(tmp_path / "other-site")


@pytest.fixture
def impostor(tmp_path, site, foreign):
    """Knows the site's public server key, but its own identity is not authorised."""
    folder = tmp_path / "impostor"
    folder.mkdir()
    shutil.copy(site / "server.key", folder / "server.key")
    shutil.copy(foreign / "client.key", folder / "client.key")
    shutil.copy(foreign / "client.key_secret", folder / "client.key_secret")
    return folder


def send_for(broadcaster, child, seconds=1.5):
    """Send /tf for ``seconds`` (a stranger's messages would have every chance to arrive)."""
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        i += 1
        broadcaster.send_transform(make_transform("world", child, (i, 0, 0), stamp=i))
        time.sleep(0.01)


def test_keygen_layout(site):
    assert sorted(p.name for p in site.iterdir()) == [
        "authorized", "client.key", "client.key_secret", "server.key", "server.key_secret"]
    assert [p.name for p in (site / "authorized").iterdir()] == ["site.key"]
    assert (site / "server.key_secret").stat().st_mode & 0o077 == 0
    keys = Keys(site)
    assert keys.server_secret is not None and keys.client_secret is not None


def test_add_identity_makes_a_connect_only_folder(site):
    guest = add_identity(site, "robot")
    assert sorted(p.name for p in guest.iterdir()) == [
        "client.key", "client.key_secret", "server.key"]
    assert (site / "authorized" / "robot.key").exists()
    with pytest.raises(KeysError, match="may connect to a site but not serve"):
        Core("tcp://127.0.0.1:0", keys=guest)
    with pytest.raises(KeysError, match="already exists"):
        add_identity(site, "robot")
    with pytest.raises(KeysError, match="invalid identity name"):
        add_identity(site, "../escape")


def test_missing_or_incomplete_folder_is_a_clear_error(tmp_path):
    with pytest.raises(KeysError, match="does not exist"):
        Keys(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(KeysError, match="no client.key_secret"):
        TransformBroadcaster("tcp://127.0.0.1:7400", keys=tmp_path / "empty")


def test_authorised_peers_talk_and_strangers_are_refused(site, foreign, impostor, caplog):
    guest = add_identity(site, "guest")
    with Core("tcp://127.0.0.1:0", keys=site) as core:
        buffer = Buffer()
        with caplog.at_level(logging.WARNING, logger="tf2py.transport"), \
                TransformListener(buffer, core.address, keys=site) as listener, \
                TransformBroadcaster(core.address, keys=guest) as good, \
                TransformBroadcaster(core.address) as keyless, \
                TransformBroadcaster(core.address, keys=foreign) as other_site, \
                TransformBroadcaster(core.address, keys=impostor) as not_authorised, \
                StaticTransformBroadcaster(core.address) as keyless_static, \
                StaticTransformBroadcaster(core.address, keys=impostor) as impostor_static:
            keyless_static.send_transform(make_transform("world", "keyless_static"))
            impostor_static.send_transform(make_transform("world", "impostor_static"))
            wait_for(lambda: good.send_transform(make_transform("world", "good", stamp=1))
                     or buffer.can_transform("world", "good", 0), interval=0.02)
            for b, child in ((keyless, "keyless"), (other_site, "foreign"),
                             (not_authorised, "impostor")):
                send_for(b, child, 0.7)
            frames = set(buffer.get_frames())
            assert frames == {"world", "good"}
            assert core.latched_frames() == []
            assert listener.stats()["dropped"] == {}
        assert keys_module.refused_connections() >= 1
        # (counted, then logged outside the count's lock)
        wait_for(lambda: "refused a connection whose key is not authorised" in caplog.text)
        # a keyless listener gets nothing from a keyed core
        plain = Buffer()
        with TransformListener(plain, core.address) as plain_listener, \
                StaticTransformBroadcaster(core.address, keys=site) as static, \
                TransformBroadcaster(core.address, keys=site) as b:
            static.send_transform(make_transform("world", "secret_static"))
            wait_for(lambda: core.latched_frames() == ["secret_static"])
            send_for(b, "secret", 1.0)
            assert plain_listener.stats()["received_messages"] == 0
            assert plain.get_frames() == []


def test_an_identity_added_while_the_core_runs_is_accepted(site):
    with Core("tcp://127.0.0.1:0", keys=site) as core:
        late_guest = add_identity(site, "late")
        buffer = Buffer()
        with TransformListener(buffer, core.address, keys=late_guest), \
                StaticTransformBroadcaster(core.address, keys=late_guest) as static:
            static.send_transform(make_transform("world", "late_static"))
            wait_for(lambda: buffer.can_transform("world", "late_static", 0))


def test_keys_from_the_environment(site, monkeypatch):
    monkeypatch.setenv("TF2PY_KEYS", str(site))
    with Core("tcp://127.0.0.1:0") as core:
        buffer = Buffer()
        with TransformListener(buffer, core.address), \
                StaticTransformBroadcaster(core.address) as static:
            static.send_transform(make_transform("world", "env"))
            wait_for(lambda: buffer.can_transform("world", "env", 0))
        monkeypatch.delenv("TF2PY_KEYS")
        plain = Buffer()
        with TransformListener(plain, core.address) as listener:
            time.sleep(1.0)
            assert listener.stats()["received_messages"] == 0


def test_buffer_server_with_keys_answers_its_site_and_refuses_strangers(site, foreign):
    buffer = Buffer()
    buffer.set_transform(make_transform("map", "base", (1, 0, 0), stamp=1), "test")
    with BufferServer(buffer, "tcp://127.0.0.1:0", keys=site) as server:
        with BufferClient(server.address, keys=site) as client:
            t = client.lookup_transform("map", "base", 0, timeout=5.0)
            assert t.transform.translation.x == 1.0
        for stranger_keys in (None, foreign):
            with BufferClient(server.address, timeout_padding=0.5, keys=stranger_keys) as c:
                with pytest.raises(TimeoutException):
                    c.lookup_transform("map", "base", 0)
        assert server.stats()["goals"] == 1


def test_client_with_keys_refuses_a_stand_in_server(site, foreign):
    """Issue 11: a fake server answered `evil_parent -> evil_child` for map -> base_link. A
    stand-in without the site's keys cannot even complete the handshake."""
    evil = Buffer()
    evil.set_transform(make_transform("map", "base_link", (666, 0, 0), stamp=1), "evil")
    for fake_keys in (None, foreign):
        with BufferServer(evil, "tcp://127.0.0.1:0", keys=fake_keys) as fake:
            with BufferClient(fake.address, timeout_padding=0.5, keys=site) as client:
                with pytest.raises(TimeoutException):
                    client.lookup_transform("map", "base_link", 0)
                try:  # "no" or "no server": never the stand-in's yes
                    assert client.can_transform("map", "base_link", 0) is False
                except TimeoutException:
                    pass
            assert fake.stats()["goals"] == 0


def test_binding_beyond_loopback_without_keys_warns_once(caplog):
    with caplog.at_level(logging.WARNING, logger="tf2py.transport"):
        with Core("tcp://0.0.0.0:0"):
            pass
        with Core("tcp://127.0.0.1:0"):
            pass
    lines = [r.getMessage() for r in caplog.records if "without keys" in r.getMessage()]
    assert len(lines) == 1 and "0.0.0.0" in lines[0] and "tf2py keygen" in lines[0]


def test_keyed_objects_leave_no_threads_or_fds(site):
    with Core("tcp://127.0.0.1:0", keys=site) as warm:
        TransformListener(Buffer(), warm.address, keys=site).close()
    before = resources()
    with Core("tcp://127.0.0.1:0", keys=site) as core:
        with TransformListener(Buffer(), core.address, keys=site), \
                StaticTransformBroadcaster(core.address, keys=site) as s:
            s.send_transform(make_transform("a", "b"))
        with BufferServer(Buffer(), "tcp://127.0.0.1:0", keys=site) as server, \
                BufferClient(server.address, keys=site) as client:
            assert not client.can_transform("a", "b", 0)
    wait_for(lambda: resources() <= before, timeout=5,
             message=f"back to {before}, now {resources()}")
    assert zmq.Context.instance().closed is False


def test_simulated_time_on_a_keyed_bus(site, foreign):
    """/clock is bus traffic like /tf: a keyed ClockPublisher reaches a keyed SimClock (also
    through $TF2PY_KEYS), and a clock without the site's keys hears nothing."""
    from tf2py.transport.clock import ClockPublisher

    with Core("tcp://127.0.0.1:0", keys=site) as core, \
            SimClock(core.address, keys=site) as clock, \
            SimClock(core.address, keys=foreign) as stranger, \
            ClockPublisher(core.address, keys=site) as publisher:
        def ticked():
            publisher.publish(Time(42))
            return clock.now() == Time(42)

        wait_for(ticked, message="a tick on the keyed bus")
        for _ in range(20):
            publisher.publish(Time(43))
        wait_for(lambda: clock.now() == Time(43))
        assert stranger.now() == Time()
