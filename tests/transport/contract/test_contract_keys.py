"""Keys on every bus: a keyed bus (``tf2py keygen``) carries transforms between processes that
hold the site's keys; one with another site's keys, or none, is refused and hears nothing. A
bus that cannot use keys (``ros2://``: plain DDS) refuses ``keys=`` in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from contract_support import DISCOVERY_TIMEOUT, ZenohRouter, wait_until_heard

from helpers import skip_or_fail
from tf2py import Buffer, StaticTransformBroadcaster, TransformListener, make_transform


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    """Two sites' keys folders: ``(site, other)``."""
    root = tmp_path_factory.mktemp("keys")
    folders = []
    for name in ("site", "other"):
        subprocess.run([sys.executable, "-m", "tf2py.cli.main", "keygen", str(root / name)],
                       check=True, capture_output=True, timeout=120)
        folders.append(str(root / name))
    return tuple(folders)


@pytest.fixture(scope="module", params=["tcp", "zenoh"])
def keyed_bus(request, sites):
    """The address of a bus run with the first site's keys."""
    site, _ = sites
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TF2PY_KEYS", raising=False)
        if request.param == "tcp":
            from tf2py.transport.zmq.core import Core

            with Core("tcp://127.0.0.1:0", keys=site) as core:
                yield core.address
        else:
            router = ZenohRouter(protocol="tls", keys=site)
            try:
                yield f"zenoh://{router.locator}"
            finally:
                router.close()


def test_the_sites_processes_hear_each_other_and_strangers_nothing(keyed_bus, sites, names):
    site, other = sites
    secret = names("secret")
    member, stranger, keyless = Buffer(), Buffer(), Buffer()
    listeners = [TransformListener(member, core=keyed_bus, keys=site),
                 TransformListener(stranger, core=keyed_bus, keys=other)]
    try:
        try:
            listeners.append(TransformListener(keyless, core=keyed_bus))
        except ValueError as refused:  # refused at once (a tls/ link needs keys): fine
            assert "\n" not in str(refused)
        with StaticTransformBroadcaster(core=keyed_bus, keys=site) as broadcaster:
            broadcaster.send_transform(make_transform("world", secret, (1.0, 0.0, 0.0)))
            wait_until_heard(member, "world", secret, DISCOVERY_TIMEOUT)
            later = names("later")
            broadcaster.send_transform(make_transform("world", later, (2.0, 0.0, 0.0)))
            wait_until_heard(member, "world", later, DISCOVERY_TIMEOUT)
        assert stranger.get_frames() == [] and keyless.get_frames() == []
    finally:
        for listener in listeners:
            listener.close()


def test_a_bus_that_cannot_use_keys_refuses_them_in_one_line(sites):
    site, _ = sites
    try:
        import cyclonedds  # noqa: F401
    except ImportError as exc:
        skip_or_fail(f"the ros2 extra (cyclonedds) is not installed: {exc}")
    for make in (lambda: TransformListener(Buffer(), core="ros2://7", keys=site),
                 lambda: StaticTransformBroadcaster(core="ros2://7", keys=site)):
        with pytest.raises(ValueError) as refused:
            make().close()
        assert "\n" not in str(refused.value) and "keys" in str(refused.value)
