"""What a bus hands a batch callback, and what its decoders give: one tf2py.Transforms."""

from __future__ import annotations

import numpy as np

from tf2py import Transforms, TransformStamped, make_transform
from tf2py.transport import wire
from tf2py.transport.listener import TransformBatch
from tf2py.transport.ros2 import cdr


def test_a_batch_holds_its_rows_as_one_transforms():
    sent = [make_transform("map", "odom", (1, 0, 0), stamp=3),
            make_transform("odom", "base", (0, 2, 0), stamp=3)]
    batch = TransformBatch("me@h:1", Transforms.from_messages(sent), True, 42)
    assert len(batch) == 2
    assert batch.transforms.children == ["odom", "base"]
    assert list(batch.transforms) == sent
    assert isinstance(batch.transforms[0], TransformStamped)
    assert repr(batch) == "TransformBatch(/tf_static, 2 transforms from 'me@h:1')"


def test_the_msgpack_decoder_gives_the_authority_and_one_transforms():
    sent = [make_transform("a", "b", (1, 2, 3), stamp=5), make_transform("b", "c", stamp=6)]
    authority, rows = wire.decode_transforms(wire.encode_transforms(sent, "x@h:2"))
    assert authority == "x@h:2"
    assert isinstance(rows, Transforms)
    assert rows == Transforms.from_messages(sent)


def test_the_cdr_decoder_gives_one_transforms():
    values = np.array([[1.0, 2, 3, 0, 0, 0, 1], [4.0, 5, 6, 0, 0, 1, 0]])
    rows = cdr.decode_tf(cdr.encode_tf_columns(["m", "m"], ["a", "b"], [7, 8], values))
    assert isinstance(rows, Transforms)
    assert rows == Transforms(["m", "m"], ["a", "b"], [7, 8], values)
