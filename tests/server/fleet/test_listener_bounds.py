"""A zenoh:// TransformListener's bounds against forged samples (issue 30): frame ids over the
ZeroMQ bus's 4 096 characters, sequence numbers that jump, and a million publisher ids."""

from __future__ import annotations

import numpy as np

from helpers import wait_for
from tf2py import Buffer, Time, TransformListener
from tf2py.transport.ros2.cdr import encode_tf_columns
from tf2py.transport.zenoh import wire
from tf2py.transport.zenoh.address import parse_zenoh_address
from tf2py.transport.zenoh.session import SharedSession
from tf2py.transport.zenoh.tf import _Receiver

KEY = wire.data_keyexpr(0, "/tf", wire.TYPE_NAME, wire.TYPE_HASH)


def payload(parents: list[str], children: list[str]) -> bytes:
    values = np.zeros((len(parents), 7))
    values[:, 6] = 1.0
    return encode_tf_columns(parents, children, np.full(len(parents), 10**9, np.int64), values)


def test_forged_samples_stay_within_the_listeners_bounds(core, monkeypatch):
    monkeypatch.setattr(_Receiver, "MAX_PUBLISHERS", 200)  # the bound, small for speed
    buffer = Buffer()
    parsed = parse_zenoh_address(core)
    with TransformListener(buffer, core=core) as listener:
        shared = SharedSession.acquire(parsed, None)
        try:
            put = shared.session.put
            gid = b"\x01" * 16
            # A valid row beside one whose child is 5 000 characters: the valid row stays.
            put(KEY, payload(["map", "map"], ["odom", "x" * 5000]),
                attachment=wire.encode_attachment(1, 0, gid))
            # Sequence numbers forged to jump by 10^23, then by 3 (a true gap of 2).
            put(KEY, payload(["map"], ["odom"]), attachment=wire.encode_attachment(10**18, 0, gid))
            put(KEY, payload(["map"], ["odom"]),
                attachment=wire.encode_attachment(10**18 + 3, 0, gid))
            # Many publisher ids, each heard once.
            many = _Receiver.MAX_PUBLISHERS + 500
            for k in range(many):
                put(KEY, payload(["map"], ["base"]),
                    attachment=wire.encode_attachment(1, 0, k.to_bytes(16, "little")))
            # Every message is counted once stored (the first one's valid row included).
            wait_for(lambda: listener.stats()["received_messages"] >= 3 + many, 60)
            wait_for(lambda: buffer.can_transform("map", "odom", Time()), 60)
            dropped = wait_for(lambda: (lambda d: d if d.get("frame_id_too_long") else None)(
                listener.stats()["dropped"]), 60)
        finally:
            shared.release()
        assert dropped["frame_id_too_long"] == 1
        assert dropped.get("sequence_jump") == 1 and dropped.get("gap") == 2
        assert not any(len(f) > 4096 for f in buffer.get_frames())
        assert isinstance(listener, _Receiver)
        assert len(listener._last_sequence) == _Receiver.MAX_PUBLISHERS


def test_new_frame_ids_beyond_the_listeners_byte_budget_are_dropped(core, monkeypatch):
    monkeypatch.setattr(_Receiver, "MAX_NAME_BYTES", 10 * 210)  # about ten names
    buffer = Buffer()
    with TransformListener(buffer, core=core) as listener:
        shared = SharedSession.acquire(parse_zenoh_address(core), None)
        try:
            gid = b"\x02" * 16
            put = shared.session.put
            put(KEY, payload(["map"], ["odom"]), attachment=wire.encode_attachment(1, 0, gid))
            for k in range(30):  # a flood of new frame ids, two per message
                put(KEY, payload(["map", f"flood{k}"], [f"a{k}", f"b{k}"]),
                    attachment=wire.encode_attachment(2 + k, 0, gid))
            wait_for(lambda: listener.stats()["received_messages"] +
                     listener.stats()["dropped"].get("listener_budget", 0) >= 31, 60)
        finally:
            shared.release()
        dropped = listener.stats()["dropped"]
        assert dropped["listener_budget"] > 0
        assert len(buffer.get_frames()) <= 10
        assert buffer.can_transform("map", "odom", Time())  # known names keep flowing
