"""ROS 2's CDR for TFMessage, Clock and ParticipantEntitiesInfo (no DDS needed)."""

from __future__ import annotations

import numpy as np
import pytest

from tf2py.transport.ros2 import cdr

# What Fast DDS (rclpy, ROS 2 Jazzy) wrote for one transform map -> base_link at 12 s + 345 ns,
# translation (1.5, 0, 0), identity rotation: captured on rt/tf.
FAST_DDS_SAMPLE = bytes.fromhex(
    "00010000010000000c00000059010000040000006d6170000a000000626173655f6c696e6b0000"
    "0000000000000000000000f83f0000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000f03f")


def test_a_fast_dds_sample_decodes_to_columns():
    got = cdr.decode_tf(FAST_DDS_SAMPLE)
    parents, children, stamps, values = got.parents, got.children, got.stamps_ns, got.values
    assert (parents, children, stamps.tolist()) == (["map"], ["base_link"], [12_000_000_345])
    assert values.tolist() == [[1.5, 0, 0, 0, 0, 0, 1]]
    assert cdr.decode_tf_single(FAST_DDS_SAMPLE) == ("map", "base_link", 12_000_000_345,
                                                     (1.5, 0, 0, 0, 0, 0, 1))


def test_encoding_gives_the_bytes_ros2_writes():
    assert cdr.encode_tf_columns(["map"], ["base_link"], [12_000_000_345],
                                 [[1.5, 0, 0, 0, 0, 0, 1]]) == FAST_DDS_SAMPLE


@pytest.mark.parametrize("n", [0, 2, 50])
def test_many_frames_round_trip_exactly(n):
    rng = np.random.default_rng(n)
    parents = [f"p{i}" * (i % 5 + 1) for i in range(n)]  # lengths vary: every padding case
    children = [f"child_{i}" + "x" * (i % 3) for i in range(n)]
    stamps = rng.integers(-(2**40), 2**60, n)
    values = rng.normal(size=(n, 7))
    decoded = cdr.decode_tf(cdr.encode_tf_columns(parents, children, stamps, values))
    assert decoded.parents == parents and decoded.children == children
    assert decoded.stamps_ns.tolist() == stamps.tolist()
    assert np.array_equal(decoded.values, values)
    assert decoded.values.shape == (n, 7)


def test_padding_bytes_are_never_read():
    # ROS 2 leaves padding uninitialised: fill it with garbage, the values stay the same.
    sample = bytearray(FAST_DDS_SAMPLE)
    sample[38:44] = b"\xaa" * 6  # the padding after "base_link\0" (values at 44: 8-aligned)
    assert cdr.decode_tf(bytes(sample)).values.tolist() == [[1.5, 0, 0, 0, 0, 0, 1]]


@pytest.mark.parametrize("sample, cause", [
    (b"\x00\x01", "garbage"),
    (cdr.HEADER_LE + b"\x05\x00\x00\x00", "garbage"),
    (b"\x00\x00\x00\x00" + FAST_DDS_SAMPLE[4:], "too_large"),  # little-endian bytes read as big
    (b"\x00\x07\x00\x00" + FAST_DDS_SAMPLE[4:], "encoding"),  # XCDR2 or unknown
    (cdr.HEADER_LE + (2_000_000).to_bytes(4, "little") + bytes(100), "too_large"),
    (FAST_DDS_SAMPLE[:-8], "garbage"),
    (FAST_DDS_SAMPLE.replace(b"map\x00", b"mapX"), "garbage"),
    (FAST_DDS_SAMPLE.replace(b"map\x00", b"m\xffp\x00"), "garbage"),
    (FAST_DDS_SAMPLE[:16] + b"\xff\xff\x00\x00" + FAST_DDS_SAMPLE[20:], "garbage"),
    (FAST_DDS_SAMPLE[:16] + b"\x00\x00\x00\x00" + FAST_DDS_SAMPLE[20:], "garbage"),
])
def test_bad_samples_raise_a_cdr_error_with_a_cause(sample, cause):
    with pytest.raises(cdr.CdrError) as info:
        single = cdr.decode_tf_single(sample)
        if single is None:
            cdr.decode_tf(sample)
    assert info.value.cause == cause


def test_clock_round_trip_and_errors():
    assert cdr.decode_time(cdr.encode_time(1_700_000_000_123_456_789)) == 1_700_000_000_123_456_789
    with pytest.raises(cdr.CdrError):
        cdr.decode_time(cdr.HEADER_LE + b"\x01\x00\x00\x00")
    with pytest.raises(cdr.CdrError):
        cdr.decode_time(cdr.HEADER_LE + b"\x01\x00\x00\x00" + (10**9).to_bytes(4, "little"))
    with pytest.raises(ValueError):
        cdr.encode_time(2**31 * 10**9)


def test_participant_entities_info_layout():
    gid = bytes(range(16))
    sample = cdr.encode_participant_entities_info(gid, [("/", "tf2py_1", [b"r" * 16],
                                                          [b"w" * 16, b"v" * 16])])
    assert sample[:4] == cdr.HEADER_LE and sample[4:20] == gid
    assert sample[20:24] == (1).to_bytes(4, "little")
    assert sample[24:30] == b"\x02\x00\x00\x00/\x00"
    assert sample[32:44] == b"\x08\x00\x00\x00tf2py_1\x00"
    assert sample[44:48] == (1).to_bytes(4, "little") and sample[48:64] == b"r" * 16
    assert sample[64:68] == (2).to_bytes(4, "little") and sample[68:100] == b"w" * 16 + b"v" * 16


def _tf(children, x, stamp=5, parent="map"):
    n = len(children)
    values = np.zeros((n, 7))
    values[:, 0] = x
    values[:, 6] = 1.0
    return cdr.encode_tf_columns([parent] * n, children, [stamp] * n, values)


def test_the_decoder_reuses_a_layout_only_for_the_same_frames():
    decoder = cdr.TfDecoder()
    children = [f"f{j}" for j in range(7)]
    first = decoder.decode(_tf(children, 1.0, stamp=5))
    second = decoder.decode(_tf(children, 2.0, stamp=6))  # same frames: the cached layout
    assert second.parents == ["map"] * 7 and second.children == children
    assert second.stamps_ns.tolist() == [6] * 7 and second.values[:, 0].tolist() == [2.0] * 7
    assert first.values[:, 0].tolist() == [1.0] * 7  # the earlier result is not overwritten
    # Same size, other frame ids: decoded afresh.
    other = decoder.decode(_tf([f"g{j}" for j in range(7)], 3.0))
    assert other.children == [f"g{j}" for j in range(7)] and other.values[:, 0].tolist() == [3.0] * 7
    # A caller changing the returned lists does not change the next result.
    result = decoder.decode(_tf(children, 5.0))
    result.children[0] = "changed"
    assert decoder.decode(_tf(children, 6.0)).children == children


def test_the_decoder_ignores_padding_but_not_bytes_left_over():
    decoder = cdr.TfDecoder()
    base = _tf(["ab"], 1.0)
    # "map\0" ends at 24; "ab\0" at 31; the values start at 36 (8-aligned from offset 4).
    decoder.decode(base)
    padded = bytearray(base)
    padded[31:36] = b"\xee" * 5  # the padding between "ab\0" and the values (8-aligned)
    assert decoder.decode(bytes(padded)).values[0, 0] == 1.0
    # A two-transform message whose count says one: the second transform's bytes are left
    # over, more than a serialiser's padding, so the sample is refused.
    two = _tf(["a", "b"], 2.0)
    decoder.decode(two)
    forged = bytearray(two)
    forged[4:8] = (1).to_bytes(4, "little")
    with pytest.raises(cdr.CdrError, match="left over") as info:
        decoder.decode(bytes(forged))
    assert info.value.cause == "garbage"
