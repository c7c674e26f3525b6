"""``FoxgloveServer``: the bus's frame tree, live, over the Foxglove WebSocket protocol.

One subscription to the bus (a ``TransformSubscriber``: one SUB socket, one thread, on any
bus address the transport accepts) feeds one channel ``/tf`` of schema
``foxglove.FrameTransforms`` (protobuf) on a ``foxglove-sdk`` WebSocket server. Every bus
message becomes one FrameTransforms message holding all its transforms, with their own
stamps, forwarded from the subscriber's thread; the SDK queues it for each subscribed client.

Statics: the SDK has no latched channels, so the server keeps the latest static transform
per child frame and, when a client subscribes to ``/tf``, logs them all as one message. The
SDK's Python binding cannot address one client, so clients that were already subscribed get
that message again; re-receiving a static transform changes nothing for them.

Robot description: with ``robot_description`` (URDF text), or on a bus that carries a
``/robot_description`` (``std_msgs/msg/String``, as a ``RobotStatePublisher`` sends on ROS 2
and Zenoh; the channel is there from the start, its message once one is heard), the server
also has a channel ``/robot_description`` of schema
``std_msgs/msg/String`` in JSON (``{"data": URDF}``), which Foxglove's 3D panel reads to draw
the robot on the live frames. The latest description is logged again to each client that
subscribes, as the transient-local topic gives it to a late joiner.

    with FoxgloveServer(core="tcp://127.0.0.1:7400") as server:
        print(server.app_url)   # open it in a browser
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from ..transport.address import core_address
from ..transport.counters import DropCounter
from .errors import require_foxglove
from .frame_transforms import FrameTransformsBuilder

if TYPE_CHECKING:
    from foxglove.channels import FrameTransformsChannel
    from foxglove.messages import FrameTransform
    from foxglove.websocket import WebSocketServer

    from ..transport.listener import TransformBatch

__all__ = ["FoxgloveServer", "TOPIC", "ROBOT_DESCRIPTION_TOPIC", "DEFAULT_HOST", "DEFAULT_PORT"]

TOPIC = "/tf"
ROBOT_DESCRIPTION_TOPIC = "/robot_description"
#: std_msgs/msg/String as a JSON schema: the schema name Foxglove's URDF layer looks for.
_STRING_SCHEMA = {"type": "object", "properties": {"data": {"type": "string"}},
                  "required": ["data"]}
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765

logger = logging.getLogger("tf2py.viz")


def server_sockets(port: int) -> list[socket.socket]:
    """This process's TCP sockets whose local port is ``port`` (the WebSocket server's
    listening socket and its connections), as duplicated ``socket.socket`` objects for the
    caller to close. Linux only (reads /proc/self/fd); elsewhere none."""
    import os

    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return []
    found: list[socket.socket] = []
    for name in fds:
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(int(name)))
        except (OSError, ValueError):
            continue
        try:
            if (sock.family in (socket.AF_INET, socket.AF_INET6)
                    and sock.type == socket.SOCK_STREAM and sock.getsockname()[1] == port):
                found.append(sock)
                continue
        except OSError:
            pass
        sock.close()
    return found


def disable_nagle(port: int) -> int:
    """Set TCP_NODELAY on the server's sockets; returns how many were set.

    The SDK's server leaves Nagle's algorithm on, and with the client's delayed ACKs a
    stream of small messages then waits for each ACK: 10-40 ms per message at 1 kHz on
    loopback instead of ~0.1 ms (docs/performance.md). Set on the listening socket, the
    option is inherited by every connection Linux accepts from it; each new subscription
    sets it again on the connections, in case it was not."""
    count = 0
    for sock in server_sockets(port):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            count += 1
        except OSError:
            pass
        finally:
            sock.close()
    return count


def _subscribe_description(core: str | None, keys: Any, on_message: Any) -> Any:
    """A subscription to the bus's ``/robot_description``, or None on a bus without typed
    topics."""
    from ..robot.joint_state import ROBOT_DESCRIPTION
    from ..transport.topics import subscribe_topic

    try:
        return subscribe_topic(ROBOT_DESCRIPTION, on_message, core=core, keys=keys)
    except NotImplementedError:
        return None


def _keeps_descriptions(core: str | None) -> bool:
    """Whether the bus keeps ``/robot_description`` for late joiners (ROS 2, Zenoh): then
    one will come, and its channel is made before the server starts."""
    from ..transport.topics import transient_local_topics

    try:
        return bool(transient_local_topics(core))
    except NotImplementedError:
        return False


def _listening(port: int) -> bool:
    """Whether this process still has a listening socket on ``port`` (Linux; else False)."""
    listening = False
    for sock in server_sockets(port):
        with sock:
            try:
                sock.getpeername()
            except OSError:
                listening = True
    return listening


class _Listener:
    """The SDK's server listener: sends the statics to each new subscriber of ``/tf``."""

    def __init__(self, server: FoxgloveServer) -> None:
        self._server = server

    def on_subscribe(self, client: Any, channel: Any) -> None:  # the SDK's Client, ChannelView
        port = getattr(self._server, "_port", None)
        if port is not None:
            disable_nagle(port)
        if channel.topic == TOPIC:
            self._server._send_statics()
        elif channel.topic == ROBOT_DESCRIPTION_TOPIC:
            self._server._description.resend()

    def on_unsubscribe(self, client: Any, channel: Any) -> None:
        return None


class _DescriptionChannel:
    """The ``/robot_description`` channel: created with the first description, which it
    keeps (the latest) and logs again on ``resend`` (a new subscriber)."""

    def __init__(self, foxglove: Any, context: Any) -> None:
        self._foxglove = foxglove
        self._context = context
        self._lock = threading.Lock()
        self._channel: Any = None
        self._message = b""
        self.fixed = False  # a description given by the caller: the bus's are not used

    def open(self) -> None:
        """Create the channel now, before any client connects, for a bus whose description
        comes later: a channel created while a client connects can be advertised to it and
        still miss its subscription (seen once in ~2 300 runs), never one that was there."""
        with self._lock:
            self._open_locked()

    def _open_locked(self) -> Any:
        import json

        if self._channel is None:
            schema = self._foxglove.Schema(name="std_msgs/msg/String", encoding="jsonschema",
                                           data=json.dumps(_STRING_SCHEMA).encode("utf-8"))
            self._channel = self._foxglove.Channel(
                ROBOT_DESCRIPTION_TOPIC, schema=schema, message_encoding="json",
                context=self._context)
        return self._channel

    def set(self, text: str) -> None:
        import json

        with self._lock:
            self._message = json.dumps({"data": text}).encode("utf-8")
            self._open_locked().log(self._message)

    def resend(self) -> None:
        with self._lock:
            if self._channel is not None and self._message:
                self._channel.log(self._message)

    @property
    def text(self) -> str | None:
        import json

        with self._lock:
            return str(json.loads(self._message)["data"]) if self._message else None

    def on_bus_message(self, data: bytes) -> None:
        """A ``std_msgs/msg/String`` CDR sample from the bus (ignored when ``fixed``)."""
        from ..robot.joint_state import decode_string

        if self.fixed:
            return
        try:
            text = decode_string(data)
        except ValueError:
            return  # (counted by the bus's receiver when it cannot be decoded there)
        self.set(text)

    def close(self) -> None:
        with self._lock:
            channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()


class FoxgloveServer:
    """Serves the frame tree of the bus at ``core`` on ``ws://host:port`` (Foxglove WebSocket
    protocol, subprotocol ``foxglove.sdk.v1``): channel ``/tf``, schema
    ``foxglove.FrameTransforms``, statics included for clients that subscribe late.

    ``core``: the bus address (``None``: ``$TF2PY_CORE``, else the loopback default).
    ``host``: where to listen, loopback by default (the protocol has no authentication).
    ``port``: 0 picks a free one; ``.port`` tells which. ``robot_description``: URDF text
    to serve on ``/robot_description`` (else the bus's, when it carries one; see above).
    ``close()`` stops the subscriber,
    then the server; a context manager. Needs ``pip install 'tf2py[viz]'``
    (``VizDependencyError`` otherwise).
    """

    #: How long close() waits for the SDK to release the port.
    close_timeout = 2.0

    def __init__(self, core: str | None = None, host: str = DEFAULT_HOST,
                 port: int = DEFAULT_PORT, *, name: str = "tf2py", keys: Any = None,
                 robot_description: str | None = None) -> None:
        foxglove = require_foxglove()
        from ..transport.listener import TransformSubscriber

        self.core = core_address(core)
        self.host = host
        self._builder = FrameTransformsBuilder()
        self._statics: dict[str, FrameTransform] = {}  # child frame -> latest static one
        self._static_lock = threading.Lock()
        self._closed = False
        self.dropped = DropCounter("tf2py foxglove")
        self.forwarded_messages = 0
        self.forwarded_transforms = 0
        self._server: WebSocketServer | None = None
        self._channel: FrameTransformsChannel | None = None
        self._subscriber: Any = None  # a TransformSubscriber of the bus's scheme
        self._description_receiver: Any = None
        try:
            # A context of our own: two servers in one process never share a channel.
            self._context = foxglove.Context()
            self._channel = foxglove.channels.FrameTransformsChannel(
                TOPIC, context=self._context)
            self._description = _DescriptionChannel(foxglove, self._context)
            if robot_description is not None:
                self._description.fixed = True
                self._description.set(robot_description)
            # The subscriber first: it refuses a malformed bus address before a port opens;
            # what it forwards before the server is up reaches no client, and the statics
            # among it are kept for the first subscriber.
            self._subscriber = TransformSubscriber(core=core, on_batch=self._on_batch,
                                                   keys=keys)
            if robot_description is None:
                self._description_receiver = _subscribe_description(
                    core, keys, self._description.on_bus_message)
                if _keeps_descriptions(core):
                    self._description.open()
            try:
                server: WebSocketServer = foxglove.start_server(
                    name=name, host=host, port=port, context=self._context,
                    server_listener=_Listener(self))
            except Exception as exc:
                reason = str(exc).removeprefix("FoxgloveError: ")
                raise OSError(f"cannot serve on {host}:{port}: {reason}") from None
            self._server = server
            self._port: int = server.port
            disable_nagle(self._port)
        except BaseException:
            self.close()
            raise

    @property
    def port(self) -> int:
        """The TCP port the WebSocket server listens on."""
        return self._port

    @property
    def url(self) -> str:
        """``ws://HOST:PORT`` of the server."""
        host = self.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"ws://{host}:{self.port}"

    @property
    def app_url(self) -> str:
        """The Foxglove app link that opens this server as a data source."""
        from urllib.parse import quote

        return ("https://app.foxglove.dev/?ds=foxglove-websocket&ds.url="
                + quote(self.url, safe=""))

    def _on_batch(self, batch: TransformBatch) -> None:
        # On the subscriber's thread: one bus message -> one FrameTransforms message.
        rows = batch.transforms
        transforms, children, left_out = self._builder.build(
            rows.parents, rows.children, rows.stamps_ns, rows.values)
        if left_out:
            for cause, detail, count in left_out:
                self.dropped.drop(cause, f"{count} transform(s) from {batch.authority}: "
                                  f"{detail}", n=count)
        if not transforms:
            return
        message = self._builder.message(transforms)
        channel = self._channel
        if channel is None:  # (set before the subscriber that calls this exists)
            return
        if batch.is_static:
            # Under the lock, so a subscriber's snapshot never overtakes a newer static.
            with self._static_lock:
                if self._closed:
                    return
                self._statics.update(zip(children, transforms))
                channel.log(message, log_time=batch.received_ns)
        else:
            channel.log(message, log_time=batch.received_ns)
        self.forwarded_messages += 1
        self.forwarded_transforms += len(transforms)

    def _send_statics(self) -> None:
        with self._static_lock:
            if self._closed or not self._statics or self._channel is None:
                return
            message = self._builder.message(list(self._statics.values()))
            self._channel.log(message)

    @property
    def robot_description(self) -> str | None:
        """The URDF served on ``/robot_description`` (None until there is one)."""
        return self._description.text

    def static_frames(self) -> list[str]:
        """The child frames whose static transform a new client receives."""
        with self._static_lock:
            return sorted(self._statics)

    def stats(self) -> dict[str, Any]:
        """Counters: bus messages and transforms forwarded, left out per cause, and the
        bus subscriber's own counters."""
        return {
            "forwarded_messages": self.forwarded_messages,
            "forwarded_transforms": self.forwarded_transforms,
            "dropped": self.dropped.snapshot(),
            "bus": self._subscriber.stats() if self._subscriber is not None else {},
        }

    def close(self) -> None:
        """Stop listening to the bus, then stop the WebSocket server. Idempotent."""
        with self._static_lock:
            if self._closed and self._server is None:
                return
            self._closed = True
        subscriber = self._subscriber
        try:
            if self._description_receiver is not None:
                self._description_receiver.close()
            if subscriber is not None:
                subscriber.close()
        finally:
            server, self._server = self._server, None
            if server is not None:
                server.stop()
                # stop() only asks the SDK's runtime to stop: wait (briefly) until the port
                # is released, so that after close() nothing answers there and the same port
                # can be served again at once.
                deadline = time.monotonic() + self.close_timeout
                while _listening(self._port) and time.monotonic() < deadline:
                    time.sleep(0.001)
            if self._channel is not None:
                self._channel.close()
            description = getattr(self, "_description", None)
            if description is not None:
                description.close()

    def __enter__(self) -> FoxgloveServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
