"""A minimal Foxglove WebSocket protocol client for the tests, written from the protocol
(subprotocol ``foxglove.sdk.v1``) on the ``websockets`` package, not the SDK under test:
it reads ``serverInfo`` and ``advertise``, subscribes, and decodes the binary message-data
frames with Foxglove's published protobuf schemas (``foxglove-schemas-protobuf``)."""

from __future__ import annotations

import json
import struct
import time

from foxglove_schemas_protobuf.FrameTransforms_pb2 import FrameTransforms
from websockets.sync.client import connect

SUBPROTOCOL = "foxglove.sdk.v1"
_MESSAGE_DATA = 0x01
_HEADER = struct.Struct("<BIQ")  # opcode, subscription id, log time (ns)


class FoxgloveClient:
    def __init__(self, url: str, timeout: float = 10.0):
        self.ws = connect(url, subprotocols=[SUBPROTOCOL], open_timeout=timeout).__enter__()
        self.server_info = None
        self.channels: dict[int, dict] = {}
        self.messages: list[tuple[int, int, bytes]] = []  # (subscription id, log ns, payload)
        self.statuses: list[dict] = []

    def close(self):
        self.ws.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _receive(self, timeout: float) -> bool:
        """Read one frame (False when none came within ``timeout``)."""
        try:
            frame = self.ws.recv(timeout=timeout)
        except TimeoutError:
            return False
        if isinstance(frame, str):
            message = json.loads(frame)
            op = message["op"]
            if op == "serverInfo":
                self.server_info = message
            elif op == "advertise":
                for channel in message["channels"]:
                    self.channels[channel["id"]] = channel
            elif op == "unadvertise":
                for channel_id in message["channelIds"]:
                    self.channels.pop(channel_id, None)
            elif op == "status":
                self.statuses.append(message)
        else:
            opcode, subscription, log_ns = _HEADER.unpack_from(frame)
            if opcode == _MESSAGE_DATA:
                self.messages.append((subscription, log_ns, bytes(frame[_HEADER.size:])))
        return True

    def wait(self, condition, timeout: float = 15.0, what: str = ""):
        """Read frames until ``condition()`` holds; AssertionError at the deadline."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}"
                                     f"; server info {self.server_info}, channels "
                                     f"{list(self.channels.values())[:3]}, "
                                     f"{len(self.messages)} messages, statuses "
                                     f"{self.statuses[-3:]}")
            self._receive(min(left, 0.5))

    def channel(self, topic: str) -> dict:
        def find():
            return next((c for c in self.channels.values() if c["topic"] == topic), None)

        return self.wait(find, what=f"the advertisement of {topic}")

    def subscribe(self, channel_id: int, subscription_id: int = 1) -> None:
        self.ws.send(json.dumps({"op": "subscribe", "subscriptions": [
            {"id": subscription_id, "channelId": channel_id}]}))

    def frame_transforms(self, subscription_id: int = 1) -> list:
        """Every FrameTransforms received so far on that subscription, decoded."""
        return [FrameTransforms.FromString(payload)
                for sub, _, payload in self.messages if sub == subscription_id]

    def transforms(self, subscription_id: int = 1) -> list:
        """All FrameTransform entries received so far, in order."""
        return [t for m in self.frame_transforms(subscription_id) for t in m.transforms]


def values_of(t) -> tuple:
    """(parent, child, stamp_ns, (tx, ty, tz), (qx, qy, qz, qw)) of a decoded FrameTransform."""
    return (t.parent_frame_id, t.child_frame_id,
            t.timestamp.seconds * 1_000_000_000 + t.timestamp.nanos,
            (t.translation.x, t.translation.y, t.translation.z),
            (t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w))
