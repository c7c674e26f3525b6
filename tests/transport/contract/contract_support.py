"""What the contract tests share: the buses (one ``Bus`` subclass each, isolated: a tcp core
on free loopback ports, its own ROS 2 domain on loopback, a ``tf2py router`` process on a free
loopback port), subprocess environments and waiting helpers. A new bus adds a ``Bus``
subclass here and its name to ``BUSES``; the tests do not change."""


from __future__ import annotations

import sys
import time
from collections.abc import Callable

import pytest

from helpers import Proc, free_port, ros_domain_id, skip_or_fail, wait_for

from tf2py import make_transform

#: Every bus the contract runs on.
BUSES = ["tcp", "ros2", "zenoh"]
#: The buffer server's links.
SERVER_LINKS = ["tcp", "zenoh"]
#: Discovery on a loaded 2-core machine (ROS 2 over DDS takes the longest).
DISCOVERY_TIMEOUT = 40.0


class Bus:
    """One running bus: ``address`` for the public classes, ``env`` for subprocesses, and
    ways to put bad input on it as a stranger would (``bad_inputs``)."""

    name = ""

    def __init__(self) -> None:
        self.address = ""
        self.env: dict[str, str] = {}

    def bad_inputs(self) -> list[tuple[str, Callable[[], None], str]]:
        """``(what, send, cause)``: ``send()`` puts one undecodable ``/tf`` message on the
        bus (raw, not through tf2py's senders); a listener counts it under ``cause``."""
        raise NotImplementedError

    def bad_addresses(self) -> list[tuple[str, str]]:
        """``(address, words)``: addresses refused with one line holding ``words``."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class TcpBus(Bus):
    name = "tcp"

    def __init__(self) -> None:
        super().__init__()
        from tf2py.transport.zmq.core import Core

        self.core = Core("tcp://127.0.0.1:0")
        self.address = self.core.address
        self._raw = None

    def _send_raw(self, body: bytes) -> None:
        import zmq

        from tf2py.transport import wire

        if self._raw is None:
            self._raw = zmq.Context.instance().socket(zmq.PUB)
            self._raw.setsockopt(zmq.LINGER, 0)
            self._raw.connect(self.address)  # the core's publisher port
        self._raw.send_multipart([wire.TOPIC_TF, body])

    def bad_inputs(self) -> list[tuple[str, Callable[[], None], str]]:
        import msgpack

        one = [b"\0" * 8, b"\0" * 48 + b"\0\0\0\0\0\0\xf0\x3f"]  # stamp 0, identity
        negative = msgpack.packb([2, "stranger", ["w"], ["bad_sequence"], *one, 7, -1])
        return [
            ("not msgpack", lambda: self._send_raw(b"\xc1 not msgpack"), "garbage"),
            # The one-transform fast path checks the stream and sequence as a longer one.
            ("a version-2 message with a negative sequence",
             lambda: self._send_raw(negative), "shape"),
        ]

    def bad_addresses(self) -> list[tuple[str, str]]:
        return [("tcp://127.0.0.1:99999", "99999"), ("tcp://127.0.0.1", "tcp://127.0.0.1")]

    def close(self) -> None:
        if self._raw is not None:
            self._raw.close(0)
        self.core.close()


class Ros2Bus(Bus):
    name = "ros2"

    def __init__(self) -> None:
        super().__init__()
        try:
            import cyclonedds  # noqa: F401
        except ImportError as exc:
            skip_or_fail(f"the ros2 extra (cyclonedds) is not installed: {exc}")
        # A range no other test draws from (ROS 2's port mapping allows ids up to 232).
        self.domain = ros_domain_id(201, 233)
        self.address = f"ros2://{self.domain}"
        self.env = {"ROS_DOMAIN_ID": str(self.domain),
                    "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
        self._patch = pytest.MonkeyPatch()
        for key, value in self.env.items():
            self._patch.setenv(key, value)
        for key in ("ROS_LOCALHOST_ONLY", "ROS_STATIC_PEERS", "CYCLONEDDS_URI"):
            self._patch.delenv(key, raising=False)
        self._participant = None
        self._writer = None

    def _send_raw(self, sample: bytes) -> None:
        from tf2py.transport.ros2 import types
        from tf2py.transport.ros2.participant import TF_QOS, Participant

        if self._writer is None:
            self._participant = Participant(self.address)  # its own node: a stranger
            self._writer = self._participant.writer("rt/tf", types.TFMessage, TF_QOS)
        self._writer.write(sample)

    def bad_inputs(self) -> list[tuple[str, Callable[[], None], str]]:
        from tf2py.transport.ros2 import cdr

        good = cdr.encode_tf([make_transform("pq", "bad_utf8", stamp=1)])
        at = good.index(b"pq")
        bad = good[:at] + b"\xff\xfe" + good[at + 2:]
        return [("a frame id that is not UTF-8", lambda: self._send_raw(bad), "garbage")]

    def bad_addresses(self) -> list[tuple[str, str]]:
        return [("ros2://999", "999"), ("ros2://robot", "robot")]

    def close(self) -> None:
        if self._participant is not None:
            self._participant.close()
        self._patch.undo()


class ZenohBus(Bus):
    name = "zenoh"

    def __init__(self) -> None:
        super().__init__()
        self.router = ZenohRouter()
        self.address = f"zenoh://{self.router.locator}"
        self._shared = None

    def _put(self, payload: bytes, attachment: bytes | None) -> None:
        from tf2py.transport.zenoh import wire
        from tf2py.transport.zenoh.address import parse_zenoh_address
        from tf2py.transport.zenoh.session import SharedSession

        parsed = parse_zenoh_address(self.address)
        if self._shared is None:
            self._shared = SharedSession.acquire(parsed)
        self._shared.session.put(wire.topic_keyexpr(parsed.domain, parsed.namespace, False),
                                 payload, attachment=attachment)

    def bad_inputs(self) -> list[tuple[str, Callable[[], None], str]]:
        from tf2py.transport.ros2 import cdr
        from tf2py.transport.zenoh import wire

        good = cdr.encode_tf([make_transform("w", "no_attachment", stamp=1)])
        attachment = wire.encode_attachment(1, time.time_ns(), b"\x07" * 16)
        garbage = b"\x00\x01\x00\x00" + b"\x01\x00\x00\x00" + b"\xff" * 8
        return [("a sample without rmw_zenoh's attachment", lambda: self._put(good, None),
                 "attachment"),
                ("a TFMessage cut short", lambda: self._put(garbage, attachment), "garbage")]

    def bad_addresses(self) -> list[tuple[str, str]]:
        port = free_port()
        return [("zenoh://tcp/127.0.0.1:99999", "99999"),
                ("zenoh://tcp/127.0.0.1:7447?colour=red", "colour"),
                # A tls/ link needs keys: without them, one line (not a silent session).
                (f"zenoh://tls/127.0.0.1:{port}", "needs keys")]

    def close(self) -> None:
        if self._shared is not None:
            self._shared.release()
        self.router.close()


class ZenohRouter:
    """``tf2py router`` in its own process on a free loopback port (``protocol`` ``tls`` and
    ``keys``: a keyed router)."""

    def __init__(self, protocol: str = "tcp", keys: str | None = None) -> None:
        try:
            import zenoh  # noqa: F401
        except ImportError as exc:
            skip_or_fail(f"the zenoh extra is not installed: {exc}")
        self.locator = f"{protocol}/127.0.0.1:{free_port()}"
        self.proc = Proc([sys.executable, "-m", "tf2py.cli.main", "router",
                          "--listen", self.locator, *(["--keys", keys] if keys else [])])
        try:
            self.proc.wait_for_line("tf2py router: ready", timeout=60)
        except BaseException:
            self.proc.stop()
            raise

    def close(self) -> None:
        self.proc.stop()


#: The bus kinds by name (``BUSES`` lists those the contract runs on).
BUS_KINDS: dict[str, type[Bus]] = {"tcp": TcpBus, "ros2": Ros2Bus, "zenoh": ZenohBus}


def subprocess_env(bus: Bus) -> dict[str, str]:
    """The environment for a process that joins ``bus``."""
    env = dict(bus.env)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def wait_until_heard(buffer, parent: str, child: str, timeout: float = DISCOVERY_TIMEOUT,
                     send: Callable[[], None] | None = None) -> None:
    """Wait until ``buffer`` can transform ``child`` into ``parent``; ``send()`` (if given)
    is called on each try, for ``/tf``, which is not latched (what is sent before the two
    sides know each other is lost, as in ROS 2)."""
    def heard() -> bool:
        if send is not None:
            send()
        return buffer.can_transform(parent, child, 0)

    wait_for(heard, timeout, interval=0.05, message=f"{parent} -> {child} on the bus")
