"""tf2py.Transforms: N transforms in one object (parents, children, stamps, (N, 7) rows)."""

from __future__ import annotations

import types

import numpy as np
import pytest

import tf2py
from tf2py import Buffer, BufferCore, Time, Transforms, TransformStamped, make_transform
from tf2py.buffer.batch import batch_frames, store_batch

STAMP = 1_700_000_000_123_456_789  # beyond float64's exact integers


def three() -> Transforms:
    return Transforms(
        ["map", "odom", "base_link"], ["odom", "base_link", "laser"],
        np.array([STAMP, STAMP + 1, STAMP + 2]),
        [[1.0, 0, 0, 0, 0, 0, 1], [0, 2.0, 0, 0, 0, np.sin(0.5), np.cos(0.5)],
         [0, 0, 3.0, 0, 0, 0, 1]])


def test_is_exported_from_the_package():
    assert tf2py.Transforms is Transforms
    assert "Transforms" in tf2py.__all__


def test_len_and_columns():
    t = three()
    assert len(t) == 3
    assert t.parents == ["map", "odom", "base_link"]
    assert t.children == ["odom", "base_link", "laser"]
    assert t.stamps_ns.dtype == np.int64 and t.stamps_ns.shape == (3,)
    assert t.values.dtype == np.float64 and t.values.shape == (3, 7)


def test_an_int_index_gives_a_transform_stamped_with_the_exact_stamp():
    row = three()[1]
    assert isinstance(row, TransformStamped)
    assert row.header.frame_id == "odom" and row.child_frame_id == "base_link"
    assert row.header.stamp == Time.from_nanoseconds(STAMP + 1)
    assert row.transform.translation.y == 2.0
    assert row.transform.rotation.w == pytest.approx(np.cos(0.5))


def test_negative_and_numpy_int_indices():
    t = three()
    assert t[-1] == t[2]
    assert t[np.int64(0)] == t[0]


def test_an_index_out_of_range_raises_index_error():
    with pytest.raises(IndexError, match="row 3 is out of range for 3 transforms"):
        three()[3]
    with pytest.raises(IndexError):
        three()[-4]


def test_a_bad_index_type_raises_type_error():
    with pytest.raises(TypeError, match="not str"):
        three()["map"]  # type: ignore[call-overload]


def test_slice_index_array_and_mask_give_transforms():
    t = three()
    assert t[1:].children == ["base_link", "laser"]
    picked = t[np.array([2, 0])]
    assert isinstance(picked, Transforms)
    assert picked.parents == ["base_link", "map"]
    assert picked.stamps_ns.tolist() == [STAMP + 2, STAMP]
    masked = t[np.array([True, False, True])]
    assert masked.children == ["odom", "laser"]
    assert masked.values[1, 2] == 3.0
    assert len(t[[]]) == 0


def test_a_mask_of_the_wrong_length_raises_index_error():
    with pytest.raises(IndexError, match="boolean mask"):
        three()[np.array([True, False])]


def test_a_float_index_array_raises_index_error():
    with pytest.raises(IndexError, match="1-D integers"):
        three()[np.array([0.0, 1.0])]


def test_iteration_gives_every_row_in_order():
    t = three()
    rows = list(t)
    assert [r.child_frame_id for r in rows] == t.children
    assert rows == [t[0], t[1], t[2]]
    assert t.to_messages() == rows


def test_from_messages_round_trips():
    t = three()
    assert Transforms.from_messages(t) == t
    assert Transforms.from_messages(list(t)[:1]) == t[:1]


def test_from_messages_takes_rclpy_shaped_messages():
    ns = types.SimpleNamespace
    message = ns(header=ns(frame_id="map", stamp=ns(sec=12, nanosec=5)),
                 child_frame_id="robot",
                 transform=ns(translation=ns(x=1.0, y=2.0, z=3.0),
                              rotation=ns(x=0.0, y=0.0, z=0.0, w=1.0)))
    t = Transforms.from_messages([message])
    assert t.stamps_ns.tolist() == [12_000_000_005]
    assert t.values.tolist() == [[1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0]]


def test_from_messages_refuses_other_objects():
    with pytest.raises(TypeError, match="from_messages takes TransformStamped"):
        Transforms.from_messages([object()])


def test_empty():
    e = Transforms.empty()
    assert len(e) == 0 and list(e) == [] and e.as_matrices().shape == (0, 4, 4)
    assert e == Transforms([], [], np.zeros(0, dtype=np.int64), np.zeros((0, 7)))
    assert repr(e) == "Transforms(0 rows)"


def test_concatenate_keeps_the_order_of_the_rows():
    t = three()
    both = Transforms.concatenate([t[:1], Transforms.empty(), t[1:]])
    assert both == t
    assert len(Transforms.concatenate([])) == 0


def test_concatenate_refuses_other_objects():
    with pytest.raises(TypeError, match="concatenate takes Transforms"):
        Transforms.concatenate([three(), [1, 2]])  # type: ignore[list-item]


def test_one_id_for_every_row_stays_one_string():
    rows = np.tile([0.0, 0, 0, 0, 0, 0, 1], (4, 1))
    t = Transforms("map", "robot", np.arange(4), rows)
    assert t.shared_parent == "map" and t.shared_child == "robot"
    assert t[1:3].shared_parent == "map"
    assert Transforms.concatenate([t, t]).shared_child == "robot"
    assert t.parents == ["map"] * 4
    mixed = Transforms.concatenate([t, three()])
    assert mixed.shared_parent is None
    assert mixed.parents == ["map"] * 4 + ["map", "odom", "base_link"]


def test_one_stamp_for_every_row():
    t = Transforms(["a", "b"], ["b", "c"], 7, np.tile([0.0, 0, 0, 0, 0, 0, 1], (2, 1)))
    assert t.stamps_ns.tolist() == [7, 7]


def test_as_matrices_matches_transform_as_matrix():
    t = three()
    matrices = t.as_matrices()
    assert matrices.shape == (3, 4, 4)
    for k, row in enumerate(t):
        np.testing.assert_allclose(matrices[k], row.transform.as_matrix(), atol=1e-15)


def test_as_matrices_of_a_rotation():
    t = make_transform("a", "b", translation=(1, 2, 3), rpy=(0, 0, np.pi / 2))
    m = Transforms.from_messages([t]).as_matrices()[0]
    np.testing.assert_allclose(m @ [1, 0, 0, 1], [1, 3, 3, 1], atol=1e-12)


def test_equality():
    assert three() == three()
    other = three()
    other.values[0, 0] = 9.0
    assert three() != other
    assert three() != three()[:2]
    assert (three() == "x") is False


def test_repr_names_the_rows_and_their_stamps():
    text = repr(three())
    assert text.startswith("Transforms(3 rows: map->odom, odom->base_link, base_link->laser;")
    assert "1700000000.123456789" in text
    one = repr(three()[:1])
    assert "1 row:" in one and "stamp 1700000000.123456789 s" in one


def test_values_of_the_wrong_shape_raise_value_error():
    with pytest.raises(ValueError, match=r"values must have shape \(N, 7\).*\(2, 6\)"):
        Transforms(["a", "b"], ["b", "c"], [1, 2], np.zeros((2, 6)))


def test_values_that_are_not_numbers_raise_type_error():
    with pytest.raises(TypeError, match="values must be numbers"):
        Transforms(["a"], ["b"], [1], [["x"] * 7])


def test_parents_of_another_length_raise_value_error():
    with pytest.raises(ValueError, match="2 rows of values but 1 parents"):
        Transforms(["a"], ["b", "c"], [1, 2], np.zeros((2, 7)))


def test_children_of_another_length_raise_value_error():
    with pytest.raises(ValueError, match="1 rows of values but 2 children"):
        Transforms(["a"], ["b", "c"], [1], np.zeros((1, 7)))


def test_a_frame_id_that_is_not_a_string_raises_type_error():
    with pytest.raises(TypeError, match="children must be strings, got 5"):
        Transforms(["a"], [5], [1], np.zeros((1, 7)))  # type: ignore[list-item]


def test_frame_ids_that_are_not_a_sequence_raise_type_error():
    with pytest.raises(TypeError, match="parents must be a frame id or a sequence"):
        Transforms(None, ["b"], [1], np.zeros((1, 7)))  # type: ignore[arg-type]


def test_float_stamps_raise_type_error():
    with pytest.raises(TypeError, match="stamps_ns must be integer nanoseconds"):
        Transforms(["a"], ["b"], [1.5], np.zeros((1, 7)))


def test_stamps_of_another_length_raise_value_error():
    with pytest.raises(ValueError, match=r"2 rows need stamps_ns of shape \(2,\)"):
        Transforms(["a", "b"], ["b", "c"], [1, 2, 3], np.zeros((2, 7)))


def test_stamps_beyond_int64_raise_value_error():
    with pytest.raises(ValueError, match="beyond int64"):
        Transforms(["a"], ["b"], np.array([2**63], dtype=np.uint64), np.zeros((1, 7)))


def test_rows_are_carried_not_judged():
    # A NaN row is kept: the buffer refuses it row by row when storing.
    t = Transforms(["a", "a"], ["b", ""], [1, 2], [[np.nan, 0, 0, 0, 0, 0, 1], [0] * 6 + [1]])
    assert len(t) == 2
    result = store_batch(BufferCore(), t, "test")
    assert result.stored == 0 and [k for k, _ in result.invalid] == [0, 1]


def test_store_batch_stores_a_transforms_and_the_columns():
    core = BufferCore()
    t = three()
    t = Transforms(t.parents, t.children, STAMP, t.values)  # one stamp for every row
    assert store_batch(core, t, "test").stored == 3
    got = core.lookup_transform("map", "laser", Time.from_nanoseconds(STAMP))
    assert got.transform.translation.x == pytest.approx(1.0)
    assert got.transform.translation.z == pytest.approx(3.0)
    other = BufferCore()
    assert store_batch(other, t.parents, t.children, t.stamps_ns, t.values, "test",
                       is_static=True).stored == 3


def test_store_batch_takes_one_frames_trajectory():
    core = BufferCore()
    rows = np.tile([0.0, 0, 0, 0, 0, 0, 1], (5, 1))
    rows[:, 0] = np.arange(5)
    t = Transforms("map", "robot", np.arange(5) * 1_000_000_000, rows)
    assert store_batch(core, t, authority="test").stored == 5
    got = core.lookup_transform("map", "robot", Time(2, 500_000_000))
    assert got.transform.translation.x == pytest.approx(2.5)


def test_batch_frames_names_the_frames_of_either_form():
    t = three()
    assert batch_frames(t, "test") == ({"map", "odom", "base_link"},
                                       {"odom", "base_link", "laser"})
    assert batch_frames(Transforms("m", "r", [1], np.zeros((1, 7)))) == ({"m"}, {"r"})
    assert batch_frames(["a"], ["b"], [1], np.zeros((1, 7)), "x") == ({"a"}, {"b"})


@pytest.mark.parametrize("store", [BufferCore, Buffer])
def test_set_transforms_takes_a_transforms_with_its_authority(store):
    buffer = store()
    t = three()
    statics = Transforms(t.parents, t.children, STAMP, t.values)
    result = buffer.set_transforms(statics, "test", is_static=True)
    assert (result.stored, result.old, result.invalid) == (3, 0, [])
    got = buffer.lookup_transform("map", "laser", Time.from_nanoseconds(STAMP + 99))
    assert got.transform.translation.z == pytest.approx(3.0)  # static: valid at every time
    assert "test" in buffer.all_frames_as_yaml()


def test_a_buffer_wait_is_woken_by_a_transforms_insert():
    buffer = Buffer()
    future = buffer.wait_for_transform_async("map", "robot", Time(2))
    rows = np.tile([0.0, 0, 0, 0, 0, 0, 1], (3, 1))
    rows[:, 0] = [1.0, 2.0, 3.0]
    buffer.set_transforms(Transforms("map", "robot", np.arange(1, 4) * 1_000_000_000, rows),
                          authority="test")
    assert future.result(timeout=5).transform.translation.x == pytest.approx(2.0)
