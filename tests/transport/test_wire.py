"""The wire format: round trips, exact stamps, bounds, and clear errors on bad bytes."""

from __future__ import annotations

import math

import msgpack
import numpy as np
import pytest

from tf2py import Time, make_transform
from tf2py.transport import wire, wire_common


def test_transforms_round_trip_as_columns():
    sent = [
        make_transform("odom", "base_link", (1.0, 2.0, 3.0), (0.0, 0.0, 0.6, 0.8), stamp=5),
        make_transform("base_link", "laser", (0.1, 0.0, 0.2), stamp=6),
    ]
    authority, arrays = wire.decode_transforms(wire.encode_transforms(sent, "robot@host:1"))
    assert authority == "robot@host:1"
    assert arrays.parents == ["odom", "base_link"]
    assert arrays.children == ["base_link", "laser"]
    assert arrays.stamps_ns.dtype == np.int64
    assert arrays.stamps_ns.tolist() == [5_000_000_000, 6_000_000_000]
    assert arrays.values.shape == (2, 7)
    assert arrays.values[0].tolist() == [1.0, 2.0, 3.0, 0.0, 0.0, 0.6, 0.8]
    assert arrays.to_messages() == sent


def test_stamps_travel_as_exact_integer_nanoseconds():
    stamp = Time(1_700_000_000, 123_456_789)
    _, arrays = wire.decode_transforms(
        wire.encode_transforms(make_transform("a", "b", stamp=stamp), "x"))
    assert arrays.stamps_ns.tolist() == [1_700_000_000_123_456_789]


def test_single_transform_and_list_are_one_message_each():
    one = msgpack.unpackb(wire.encode_transforms(make_transform("a", "b"), "x"))
    many = msgpack.unpackb(
        wire.encode_transforms([make_transform("a", f"c{i}") for i in range(50)], "x"))
    assert len(one[2]) == 1 and len(many[2]) == 50


def test_encode_arrays_matches_encode_transforms():
    t = make_transform("a", "b", (1, 2, 3), stamp=2)
    by_objects = wire.encode_transforms([t], "x")
    by_arrays = wire.encode_arrays(["a"], ["b"], [2_000_000_000],
                                   np.array([[1, 2, 3, 0, 0, 0, 1.0]]), "x")
    assert by_objects == by_arrays


def test_nan_travels_unchanged_for_the_buffer_to_refuse():
    _, arrays = wire.decode_transforms(
        wire.encode_transforms(make_transform("a", "b", (math.nan, 0, 0)), "x"))
    assert math.isnan(arrays.values[0, 0])


def test_encoding_a_non_string_frame_id_raises_type_error():
    t = make_transform("a", "b")
    t.child_frame_id = 5
    with pytest.raises(TypeError, match="frame ids must be strings"):
        wire.encode_transforms(t, "x")


@pytest.mark.parametrize(
    "data",
    [b"", b"\xc1", b"\x92\x01", b"\xdb\xff\xff\xff\xff", bytes(range(256))],
    ids=["empty", "reserved-byte", "truncated-array", "huge-string-header", "noise"],
)
def test_garbage_bytes_raise_wire_error_with_cause_garbage(data):
    with pytest.raises(wire.WireError) as info:
        wire.decode_transforms(data)
    assert info.value.cause == "garbage"


@pytest.mark.parametrize(
    "obj",
    [
        {"version": 1},
        [],
        ["1", "a", [], [], b"", b""],
        [1, "a", ["p"], [], b"", b""],
        [1, "a", ["p"], ["c"], b"\0" * 8, b"\0" * 55],
        [1, "a", ["p"], ["c"], [0], [0.0] * 7],
        [1, "a", [1], ["c"], b"\0" * 8, b"\0" * 56],
        [1, 7, ["p"], ["c"], b"\0" * 8, b"\0" * 56],
        [1, "a", ["p"], ["c"], b"\0" * 8],
    ],
    ids=["map", "empty-array", "string-version", "count-mismatch", "short-values",
         "lists-not-bin", "int-frame-id", "int-authority", "missing-field"],
)
def test_wrong_shape_raises_wire_error_with_cause_shape(obj):
    with pytest.raises(wire.WireError) as info:
        wire.decode_transforms(msgpack.packb(obj, use_bin_type=True))
    assert info.value.cause == "shape"


def test_future_version_raises_unknown_version_before_reading_the_layout():
    future = msgpack.packb([wire.NEWEST_VERSION + 1, {"new": "layout"}])
    with pytest.raises(wire.UnknownVersionError, match="wire version 3") as info:
        wire.decode_transforms(future)
    assert info.value.cause == "version"


def test_oversized_message_is_refused_without_decoding(monkeypatch):
    # The bound lives in wire_common (wire re-exports it); unpack reads it there.
    monkeypatch.setattr(wire_common, "MAX_MESSAGE_BYTES", 100)
    with pytest.raises(wire.WireError) as info:
        wire.unpack(b"\x00" * 101)
    assert info.value.cause == "too_large"


def test_oversized_string_is_refused():
    with pytest.raises(wire.WireError):
        wire.unpack(msgpack.packb("x" * (wire.MAX_STRING + 1)))


def test_pack_unpack_round_trip_generic_objects():
    obj = {"goal": 3, "frames": ["a", "b"], "blob": b"\x00\x01", "t": 1.5}
    assert wire.unpack(wire.pack(obj)) == obj


def test_unpack_garbage_raises_wire_error():
    with pytest.raises(wire.WireError):
        wire.unpack(b"\xc1\xc1")


def test_transform_to_and_from_wire_round_trip():
    t = make_transform("map", "odom", (1, 2, 3), (0, 0, 0.6, 0.8), stamp=Time(3, 7))
    obj = wire.unpack(wire.pack(wire.transform_to_wire(t)))
    assert obj[2] == 3_000_000_007
    assert wire.transform_from_wire(obj) == t


@pytest.mark.parametrize(
    "obj",
    [None, [], ["a", "b", 0] + [0.0] * 6, [1, "b", 0] + [0.0] * 7,
     ["a", "b", 1.5] + [0.0] * 7, ["a", "b", 0, "x"] + [0.0] * 6],
    ids=["none", "empty", "short", "int-parent", "float-stamp", "string-value"],
)
def test_transform_from_wire_rejects_wrong_shapes(obj):
    with pytest.raises(wire.WireError):
        wire.transform_from_wire(obj)


def test_default_authority_names_program_host_and_pid():
    import os

    authority = wire.default_authority()
    assert authority.endswith(f":{os.getpid()}") and "@" in authority


def test_documented_example_encodes_to_the_bytes_in_protocol_doc():
    body = wire.encode_transforms(make_transform("world", "base", (1, 2, 3), stamp=1.5), "me@h")
    expected = (
        b"\x96\x01\xa4me@h\x91\xa5world\x91\xa4base"
        + b"\xc4\x08" + bytes.fromhex("002f685900000000")
        + b"\xc4\x38" + np.array([1, 2, 3, 0, 0, 0, 1], dtype="<f8").tobytes()
    )
    assert body == expected


@pytest.mark.parametrize(
    "parents, children",
    [(["p", "q", "r"], ["c", 2, "e"]), (["p", None, "r"], ["c", "d", "e"]),
     (["p", "q", "r"], ["c", "d", b"e"]), (["p", ["q"], "r"], ["c", "d", "e"])],
    ids=["int-child", "none-parent", "bytes-child", "list-parent"],
)
def test_a_non_string_frame_id_anywhere_in_a_batch_is_a_shape_error(parents, children):
    obj = [wire.WIRE_VERSION, "a", parents, children, b"\0" * 24, b"\0" * 168]
    with pytest.raises(wire.WireError, match="frame ids must be strings") as info:
        wire.decode_transforms(msgpack.packb(obj, use_bin_type=True))
    assert info.value.cause == "shape"
