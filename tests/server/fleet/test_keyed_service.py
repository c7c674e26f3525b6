"""With keys, only an identity allowed to serve can answer lookups over Zenoh, and clients
check it cryptographically (issue 30.3): an added robot identity cannot impersonate the
service; one added with --serve can serve."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import Proc, free_port, wait_for
from tf2py import Buffer, Time, TimeoutException, make_transform
from tf2py.server import protocol
from tf2py.server.client import BufferClient
from tf2py.server.server import BufferServer
from tf2py.server.zenoh_link import service_prefix
from tf2py.transport.zenoh.address import parse_zenoh_address
from tf2py.transport.zenoh.session import SharedSession

pytest.importorskip("zenoh", reason="the zenoh extra is not installed")
TF2PY = [sys.executable, "-m", "tf2py.cli.main"]


def keygen(*args: str) -> str:
    done = subprocess.run(TF2PY + ["keygen", *args], capture_output=True, text=True,
                          timeout=60, check=True)
    return done.stdout


@pytest.fixture
def site(tmp_path):
    folder = str(tmp_path / "site")
    keygen(folder)
    assert "may connect, not serve" in keygen(folder, "--add", "robot")
    assert "(may serve)" in keygen(folder, "--add", "fleet2", "--serve")
    locator = f"tls/127.0.0.1:{free_port()}"
    router = Proc(TF2PY + ["router", "--listen", locator, "--keys", folder])
    try:
        router.wait_for_line("tf2py router: ready", timeout=60)
        yield folder, f"zenoh://{locator}"
    finally:
        router.stop()


def tree() -> Buffer:
    buffer = Buffer()
    buffer.set_transform_static(make_transform("map", "dock", (4.0, 0.0, 0.0)), "t")
    return buffer


def test_an_identity_added_without_serve_cannot_run_a_server(site):
    folder, core = site
    with pytest.raises(ValueError, match="may connect, not serve.*--serve"):
        BufferServer(tree(), address=core, keys=f"{folder}/robot")


def test_an_identity_added_with_serve_serves_the_sites_clients(site):
    folder, core = site
    with BufferServer(tree(), address=core, keys=f"{folder}/fleet2"):
        with BufferClient(core, keys=f"{folder}/robot") as client:
            t = client.lookup_transform("map", "dock", Time(), timeout=20)
            assert t.transform.translation.x == 4.0


def test_answers_forged_by_a_robot_identity_are_refused(site):
    """A process with a robot's keys stands in for the service: it declares the server's
    token and answers every goal with x = 666, signed with the robot's own certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    folder, core = site
    robot = f"{folder}/robot"
    der = x509.load_pem_x509_certificate(open(f"{robot}/tls/identity.pem", "rb").read()
                                         ).public_bytes(serialization.Encoding.DER)
    key = serialization.load_pem_private_key(open(f"{robot}/tls/identity.key", "rb").read(),
                                             password=None)
    prefix = service_prefix(parse_zenoh_address(core))
    shared = SharedSession.acquire(parse_zenoh_address(core), robot)
    forged = []

    def answer(sample):
        peer = str(sample.key_expr)[len(prefix) + len("/goal/"):]
        kind, goal_id, _ = protocol.parse_client_message(sample.payload.to_bytes())
        reply_key = f"{prefix}/reply/{peer}"
        payload = protocol.pack_result(goal_id, make_transform("map", "dock", (666.0, 0, 0)))
        signature = key.sign(reply_key.encode() + b"\0" + payload, ec.ECDSA(hashes.SHA256()))
        shared.session.put(reply_key, payload,
                           attachment=len(der).to_bytes(2, "little") + der + signature)
        forged.append(goal_id)

    entities = [shared.session.declare_subscriber(f"{prefix}/goal/*/*", answer),
                shared.session.liveliness().declare_token(f"{prefix}/server/{shared.zid}")]
    try:
        with BufferClient(core, keys=folder) as client:
            with pytest.raises(TimeoutException):
                client.lookup_transform("map", "dock", Time(), timeout=1.0)
            assert forged, "the stand-in heard the goal"
        # A true server of the site is believed meanwhile.
        with BufferServer(tree(), address=core, keys=folder):
            with BufferClient(core, keys=folder) as client:
                wait_for(lambda: _answered(client), 60)
    finally:
        for entity in entities:
            entity.undeclare()
        shared.release()


def _answered(client: BufferClient) -> bool:
    try:
        t = client.lookup_transform("map", "dock", Time(), timeout=5)
    except TimeoutException:
        return False
    # Either answer may come first; the client keeps only the signed one, x = 4.
    assert t.transform.translation.x == 4.0
    return True


def test_keygen_serve_gives_the_server_secret_and_the_role_only_to_serving_identities(tmp_path):
    import os

    from cryptography import x509

    from tf2py.transport.zenoh.tls import may_serve

    folder = str(tmp_path / "site")
    keygen(folder)
    keygen(folder, "--add", "robot")
    keygen(folder, "--add", "fleet2", "--serve")
    for name, serves in (("robot", False), ("fleet2", True)):
        assert os.path.exists(f"{folder}/{name}/server.key_secret") is serves
        pem = open(f"{folder}/{name}/tls/identity.pem", "rb").read()
        assert may_serve(x509.load_pem_x509_certificate(pem)) is serves
    done = subprocess.run(TF2PY + ["keygen", folder, "--serve"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "--serve goes with --add NAME" in done.stderr
