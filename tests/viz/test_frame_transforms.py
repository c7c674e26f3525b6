"""FrameTransformsBuilder: transport columns -> foxglove.FrameTransforms, with tf2's insert
rules; the one-transform fast path and the batch path give the same bytes and verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("foxglove")

from foxglove_schemas_protobuf.FrameTransforms_pb2 import FrameTransforms

from tf2py.viz.frame_transforms import FrameTransformsBuilder

GOOD = ("odom", "base", 1_700_000_000_123_456_789, (1.5, -2.0, 0.25, 0.0, 0.0, 0.6, 0.8))
CASES = {
    "good": GOOD,
    "leading slashes": ("/odom", "/base", 5, (0, 0, 0, 0, 0, 0, 1)),
    "slightly off unit": ("a", "b", 5, (0, 0, 0, 0, 0, 0.6, 0.8004)),
    "nan": ("a", "b", 5, (math.nan, 0, 0, 0, 0, 0, 1)),
    "infinite": ("a", "b", 5, (0, 0, 0, 0, 0, math.inf, 1)),
    "not a rotation": ("a", "b", 5, (0, 0, 0, 0, 0, 0, 2)),
    "zero quaternion": ("a", "b", 5, (0, 0, 0, 0, 0, 0, 0)),
    "empty parent": ("", "b", 5, (0, 0, 0, 0, 0, 0, 1)),
    "self parent": ("a", "/a", 5, (0, 0, 0, 0, 0, 0, 1)),
    "before 1970": ("a", "b", -1, (0, 0, 0, 0, 0, 0, 1)),
    "after 2106": ("a", "b", 2**32 * 10**9, (0, 0, 0, 0, 0, 0, 1)),
    "last second of 2106": ("a", "b", 2**32 * 10**9 - 1, (0, 0, 0, 0, 0, 0, 1)),
}


def _build(builder, rows):
    parents, children, stamps, values = zip(*rows)
    return builder.build(list(parents), list(children), np.array(stamps, dtype=np.int64),
                         np.array(values, dtype=np.float64))


@pytest.mark.parametrize("case", list(CASES))
def test_one_transform_and_a_batch_give_the_same_result(case):
    builder = FrameTransformsBuilder()
    row = CASES[case]
    one, one_children, one_left = _build(builder, [row])
    batch, batch_children, batch_left = _build(builder, [row, GOOD])
    assert one_children == batch_children[:-1]
    assert (one_left is None) == (batch_left is None)
    if one_left:
        assert [(c, n) for c, _, n in one_left] == [(c, n) for c, _, n in batch_left]
    if one:
        assert builder.message(one).encode() == builder.message(batch[:1]).encode()


def test_values_stamps_and_names_are_encoded_exactly():
    builder = FrameTransformsBuilder()
    data, left = builder.encode(*[[v] for v in GOOD[:2]], np.array([GOOD[2]]),
                                np.array([GOOD[3]]))
    assert left is None
    (t,) = FrameTransforms.FromString(data).transforms
    assert (t.parent_frame_id, t.child_frame_id) == ("odom", "base")
    assert (t.timestamp.seconds, t.timestamp.nanos) == (1_700_000_000, 123_456_789)
    assert (t.translation.x, t.translation.y, t.translation.z) == (1.5, -2.0, 0.25)
    assert (t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w) == (0.0, 0.0, 0.6, 0.8)


def test_invalid_rows_are_counted_by_cause_and_the_rest_kept():
    builder = FrameTransformsBuilder()
    rows = [CASES[c] for c in ("nan", "not a rotation", "self parent", "before 1970", "good")]
    transforms, children, left = _build(builder, rows)
    assert children == ["base"]
    counts = {}
    for cause, _, n in left:
        counts[cause] = counts.get(cause, 0) + n
    assert counts == {"invalid": 3, "stamp": 1}


def test_a_slightly_off_quaternion_is_normalized():
    builder = FrameTransformsBuilder()
    transforms, _, _ = _build(builder, [CASES["slightly off unit"]])
    (t,) = FrameTransforms.FromString(builder.message(transforms).encode()).transforms
    norm = math.sqrt(t.rotation.z ** 2 + t.rotation.w ** 2)
    assert abs(norm - 1.0) < 1e-15


def test_schema_is_foxgloves_protobuf_frame_transforms():
    schema = FrameTransformsBuilder().schema()
    assert (schema.name, schema.encoding) == ("foxglove.FrameTransforms", "protobuf")
    assert len(schema.data) > 100
