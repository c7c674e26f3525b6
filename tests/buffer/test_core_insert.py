"""BufferCore insertion: set_transform, set_transform_values, set_transforms, validation
(tf2-reference §2 with the §13.2 departures)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf2py import (
    InvalidArgumentException,
    Time,
    TransformStamped,
    make_transform,
)
from tf2py.buffer.core import BatchResult, BufferCore
from tf2py.buffer.time import Duration

S = 1_000_000_000


@pytest.fixture
def core():
    return BufferCore()


def test_set_transform_returns_true_and_stores(core):
    assert core.set_transform(make_transform("odom", "base_link", (1, 2, 3), stamp=1.0), "a") is True
    t = core.lookup_transform("odom", "base_link", 1.0).transform.translation
    assert (t.x, t.y, t.z) == (1.0, 2.0, 3.0)


def test_old_data_returns_false_and_is_not_stored(core):
    core.set_transform(make_transform("odom", "base_link", stamp=20.0), "a")
    assert core.set_transform(make_transform("odom", "base_link", stamp=9.5), "a") is False
    assert not core.can_transform("odom", "base_link", 9.5)


def test_old_data_still_registers_the_frames(core):
    core.set_transform(make_transform("odom", "base_link", stamp=20.0), "a")
    core.set_transform(make_transform("map", "base_link", stamp=1.0), "a")
    assert "map" in core.get_frames()


def test_cache_time_accepts_duration_and_seconds():
    a = BufferCore(cache_time=Duration(sec=2))
    b = BufferCore(cache_time=2.0)
    for core in (a, b):
        core.set_transform(make_transform("p", "c", stamp=10.0), "x")
        assert core.set_transform(make_transform("p", "c", stamp=8.0), "x")
        assert not core.set_transform(make_transform("p", "c", stamp=7.9), "x")


def test_repeated_stamp_replaces_and_returns_true(core):
    core.set_transform(make_transform("p", "c", (1, 0, 0), stamp=1.0), "x")
    assert core.set_transform(make_transform("p", "c", (2, 0, 0), stamp=1.0), "x") is True
    assert core.lookup_transform("p", "c", 1.0).transform.translation.x == 2.0
    assert core.frames_info()["c"]["buffer_length"] == 1


def test_one_leading_slash_is_stripped(core):
    core.set_transform(make_transform("/odom", "/base_link", stamp=1.0), "x")
    assert core.get_frames() == ["base_link", "odom"]
    assert core.can_transform("odom", "base_link", 1.0)


def test_only_one_leading_slash_is_stripped(core):
    core.set_transform(make_transform("odom", "//base_link", stamp=1.0), "x")
    assert "/base_link" in core.get_frames()


def test_nanosecond_stamps_are_kept_exactly(core):
    stamp = Time(1_700_000_000, 123_456_789)
    core.set_transform(make_transform("p", "c", stamp=stamp), "x")
    assert core.lookup_transform("p", "c", 0).header.stamp == stamp
    assert core.can_transform("p", "c", stamp)
    assert not core.can_transform("p", "c", Time(1_700_000_000, 123_456_790))


def test_quaternion_within_tolerance_is_normalized(core):
    core.set_transform(make_transform("p", "c", rotation=(0, 0, 0, 1.004)), "x")
    q = core.lookup_transform("p", "c", 0).transform.rotation
    assert (q.x, q.y, q.z, q.w) == pytest.approx((0, 0, 0, 1.0), abs=1e-15)


def test_authority_last_writer_wins(core):
    core.set_transform(make_transform("p", "c", stamp=1.0), "first")
    core.set_transform(make_transform("p", "c", stamp=2.0), "second")
    assert core.frames_info()["c"]["broadcaster"] == "second"


def test_static_then_dynamic_replaces_the_cache(core):
    core.set_transform_static(make_transform("p", "c", (1, 0, 0)), "x")
    core.set_transform(make_transform("p", "c", (2, 0, 0), stamp=5.0), "x")
    assert not core.frames_info()["c"]["is_static"]
    assert not core.can_transform("p", "c", 1.0)  # no longer valid at every time


def test_dynamic_then_static_replaces_the_cache(core):
    core.set_transform(make_transform("p", "c", (2, 0, 0), stamp=5.0), "x")
    core.set_transform(make_transform("p", "c", (2, 0, 0), stamp=6.0), "x")
    core.set_transform_static(make_transform("p", "c", (1, 0, 0)), "x")
    info = core.frames_info()["c"]
    assert info["is_static"] and info["buffer_length"] == 1
    assert core.lookup_transform("p", "c", 100.0).transform.translation.x == 1.0


def test_set_transform_values_stores(core):
    assert core.set_transform_values("p", "c", 5 * S, 1, 2, 3, 0, 0, 0, 1, "x")
    assert core.lookup_transform("p", "c", 5.0).transform.translation.z == 3.0


def test_set_transform_values_static(core):
    core.set_transform_values("p", "c", 5 * S, 1, 2, 3, 0, 0, 0, 1, "x", is_static=True)
    assert core.lookup_transform("p", "c", 99.0).transform.translation.z == 3.0


def test_set_transform_values_old_data_false(core):
    core.set_transform_values("p", "c", 50 * S, 1, 2, 3, 0, 0, 0, 1, "x")
    assert core.set_transform_values("p", "c", 1 * S, 1, 2, 3, 0, 0, 0, 1, "x") is False


# --- validation: every bad field raises and stores nothing ---------------------------------


def _assert_nothing_stored(core):
    assert core.get_frames() == []
    assert core.all_frames_as_yaml() == "[]"


@pytest.mark.parametrize("field", range(7))
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_value_raises_naming_field_and_frame(core, field, bad):
    values = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    values[field] = bad
    names = ["translation.x", "translation.y", "translation.z", "rotation.x", "rotation.y",
             "rotation.z", "rotation.w"]
    ts = make_transform("odom", "base_link", values[:3], values[3:], stamp=1.0)
    with pytest.raises(InvalidArgumentException) as info:
        core.set_transform(ts, "x")
    assert str(info.value) == 'transform.%s of frame "base_link" (parent "odom") is %r' % (
        names[field],
        bad,
    )
    _assert_nothing_stored(core)


def test_nan_message_example(core):
    with pytest.raises(InvalidArgumentException, match=r'^transform\.translation\.x of frame '
                       r'"base_link" \(parent "odom"\) is nan$'):
        core.set_transform(make_transform("odom", "base_link", (math.nan, 0, 0)), "x")


@pytest.mark.parametrize("q", [(0, 0, 0, 2), (0, 0, 0, 0), (0, 0, 0, 1.0051), (0.2, 0, 0, 0.99)])
def test_denormalized_quaternion_raises(core, q):
    with pytest.raises(InvalidArgumentException, match='rotation of frame "c" .*unit quaternion'):
        core.set_transform(make_transform("p", "c", rotation=q), "x")
    _assert_nothing_stored(core)


def test_empty_child_raises(core):
    with pytest.raises(InvalidArgumentException, match="child_frame_id .* is empty"):
        core.set_transform(make_transform("p", ""), "x")
    _assert_nothing_stored(core)


def test_slash_only_child_is_empty_after_strip(core):
    with pytest.raises(InvalidArgumentException, match="child_frame_id .* is empty"):
        core.set_transform(make_transform("p", "/"), "x")
    _assert_nothing_stored(core)


def test_empty_parent_raises(core):
    with pytest.raises(InvalidArgumentException, match='frame_id .* of frame "c" is empty'):
        core.set_transform(make_transform("", "c"), "x")
    _assert_nothing_stored(core)


def test_self_transform_raises(core):
    with pytest.raises(InvalidArgumentException, match='frame "a" cannot be its own parent'):
        core.set_transform(make_transform("/a", "a"), "x")
    _assert_nothing_stored(core)


def test_non_string_frame_id_raises(core):
    with pytest.raises(InvalidArgumentException, match="must be a str"):
        core.set_transform_values("p", 5, 0, 0, 0, 0, 0, 0, 0, 1, "x")
    _assert_nothing_stored(core)


def test_non_number_value_raises(core):
    with pytest.raises(InvalidArgumentException, match=r"translation\.y .* is not a number"):
        core.set_transform_values("p", "c", 0, 0, "1", 0, 0, 0, 0, 1, "x")
    _assert_nothing_stored(core)


def test_non_message_raises_invalid_argument(core):
    with pytest.raises(InvalidArgumentException, match="needs a TransformStamped"):
        core.set_transform("odom", "x")


def test_default_transform_stamped_is_rejected(core):
    with pytest.raises(InvalidArgumentException):
        core.set_transform(TransformStamped(), "x")


def test_set_transform_values_validates_like_set_transform(core):
    with pytest.raises(InvalidArgumentException, match="rotation.w .* is inf"):
        core.set_transform_values("p", "c", 0, 0, 0, 0, 0, 0, 0, math.inf, "x")
    _assert_nothing_stored(core)


def test_invalid_insert_keeps_existing_data(core):
    core.set_transform(make_transform("p", "c", (1, 0, 0), stamp=1.0), "x")
    with pytest.raises(InvalidArgumentException):
        core.set_transform(make_transform("p", "c", (math.nan, 0, 0), stamp=1.0), "x")
    assert core.lookup_transform("p", "c", 1.0).transform.translation.x == 1.0


# --- notification hook --------------------------------------------------------------------


class Counting(BufferCore):
    def __init__(self):
        super().__init__()
        self.notified = 0

    def _notify_new_data(self):
        self.notified += 1


def test_notify_called_once_per_storing_call():
    core = Counting()
    core.set_transform(make_transform("p", "c", stamp=10.0), "x")
    core.set_transform_values("p", "c", 11 * S, 0, 0, 0, 0, 0, 0, 1, "x")
    core.set_transforms(["p"] * 3, ["c"] * 3, [12 * S, 13 * S, 14 * S],
                        np.tile([0, 0, 0, 0, 0, 0, 1.0], (3, 1)), "x")
    assert core.notified == 3


def test_notify_not_called_when_nothing_stored():
    core = Counting()
    core.set_transform(make_transform("p", "c", stamp=100.0), "x")
    core.set_transform(make_transform("p", "c", stamp=1.0), "x")  # old
    with pytest.raises(InvalidArgumentException):
        core.set_transform(make_transform("p", "p", stamp=100.0), "x")
    core.set_transforms(["p"], ["c"], [0], np.array([[0, 0, 0, 0, 0, 0, 1.0]]), "x")
    assert core.notified == 1


# --- batch insert ---------------------------------------------------------------------------


def test_set_transforms_stores_valid_rows_and_reports_invalid(core):
    values = np.array(
        [
            [1, 0, 0, 0, 0, 0, 1],
            [np.nan, 0, 0, 0, 0, 0, 1],
            [2, 0, 0, 0, 0, 0, 2],
            [3, 0, 0, 0, 0, 0, 1.002],
            [4, 0, 0, 0, 0, 0, 1],
            [5, 0, 0, 0, 0, 0, 1],
        ],
        dtype=float,
    )
    result = core.set_transforms(
        ["odom", "odom", "odom", "odom", "x", "/odom"],
        ["base", "base", "base", "arm", "x", "/arm"],
        [1 * S, 2 * S, 3 * S, 4 * S, 5 * S, 5 * S],
        values,
        "batch",
    )
    assert isinstance(result, BatchResult)
    assert result.stored == 3
    assert result.old == 0
    assert [k for k, _ in result.invalid] == [1, 2, 4]
    assert all(isinstance(e, InvalidArgumentException) for _, e in result.invalid)
    assert "translation.x of frame \"base\" (parent \"odom\") is nan" in str(result.invalid[0][1])
    assert "unit quaternion" in str(result.invalid[1][1])
    assert "own parent" in str(result.invalid[2][1])
    assert core.lookup_transform("odom", "arm", 4.5).transform.translation.x == pytest.approx(4.0)
    assert core.lookup_transform("odom", "arm", 4.0).transform.rotation.w == pytest.approx(1.0)
    assert not core.can_transform("odom", "base", 2.0)


def test_set_transforms_counts_old_rows(core):
    result = core.set_transforms(
        ["p", "p", "p"], ["c", "c", "c"], [100 * S, 1 * S, 99 * S],
        np.tile([0, 0, 0, 0, 0, 0, 1.0], (3, 1)), "x",
    )
    assert result == BatchResult(2, 1, [])


def test_set_transforms_static(core):
    core.set_transforms(["p"], ["c"], [5 * S], np.array([[1, 0, 0, 0, 0, 0, 1.0]]), "x",
                        is_static=True)
    assert core.lookup_transform("p", "c", 1234.0).transform.translation.x == 1.0


def test_set_transforms_wrong_shape_raises(core):
    with pytest.raises(InvalidArgumentException, match="shape"):
        core.set_transforms(["p"], ["c"], [0], np.zeros((1, 6)), "x")
    _assert_nothing_stored(core)


def test_set_transforms_float_stamps_raise(core):
    with pytest.raises(InvalidArgumentException, match="integer nanosecond"):
        core.set_transforms(["p"], ["c"], [0.5], np.array([[0, 0, 0, 0, 0, 0, 1.0]]), "x")


def test_set_transforms_equal_stamps_in_one_batch_last_wins(core):
    values = np.array([[1, 0, 0, 0, 0, 0, 1.0], [2, 0, 0, 0, 0, 0, 1.0]])
    core.set_transforms(["p", "p"], ["c", "c"], [S, S], values, "x")
    assert core.lookup_transform("p", "c", 1.0).transform.translation.x == 2.0


def test_array_value_raises_invalid_argument(core):
    with pytest.raises(InvalidArgumentException, match=r"translation\.x .* is not a number"):
        core.set_transform_values("p", "c", 0, np.array([1.0, 2.0]), 0, 0, 0, 0, 0, 1, "x")
    _assert_nothing_stored(core)


def test_numpy_scalars_are_accepted(core):
    core.set_transform_values("p", "c", np.int64(5), np.float64(1), 0, 0, 0, 0, 0, np.float32(1), "x")
    assert core.lookup_transform("p", "c", 5e-9).transform.translation.x == 1.0


def test_set_transforms_non_numeric_values_raise(core):
    with pytest.raises(InvalidArgumentException, match="float array"):
        core.set_transforms(["p"], ["c"], [0], [["a"] * 7], "x")
    _assert_nothing_stored(core)


def test_set_transforms_mismatched_lengths_raise(core):
    with pytest.raises(InvalidArgumentException, match="as many children"):
        core.set_transforms(["p", "p"], ["c"], [0, 1], np.zeros((2, 7)) + [0, 0, 0, 0, 0, 0, 1], "x")
    _assert_nothing_stored(core)


def test_array_value_for_known_frames_raises_and_keeps_data(core):
    core.set_transform_values("p", "c", 0, 1.0, 0, 0, 0, 0, 0, 1, "x")  # names known
    with pytest.raises(InvalidArgumentException, match="is not a number"):
        core.set_transform_values("p", "c", 1, np.array([2.0]), 0, 0, 0, 0, 0, 1, "x", True)
    assert core.lookup_transform("p", "c", 0).transform.translation.x == 1.0
    assert not core.frames_info()["c"]["is_static"]


# --- stamps outside 64-bit nanoseconds (year 2262) ---------------------------------------


@pytest.mark.parametrize("stamp", [2**63, -(2**63) - 1, 2**80])
def test_stamp_outside_64_bits_raises_invalid_argument_and_stores_nothing(core, stamp):
    core.set_transform_values("p", "q", 5 * S, 0, 0, 0, 0, 0, 0, 1, "x")
    with pytest.raises(InvalidArgumentException, match="stamp of frame \"q\" .*64-bit"):
        core.set_transform_values("p", "q", stamp, 1, 0, 0, 0, 0, 0, 1, "x")
    assert core.frames_info()["q"]["buffer_length"] == 1


def test_stamp_outside_64_bits_raises_for_a_new_frame_and_registers_nothing(core):
    with pytest.raises(InvalidArgumentException, match="64-bit"):
        core.set_transform_values("p", "q", 2**63, 1, 0, 0, 0, 0, 0, 1, "x")
    assert core.get_frames() == []


def test_stamp_outside_64_bits_raises_for_static_transforms_too(core):
    core.set_transform_values("p", "q", 0, 0, 0, 0, 0, 0, 0, 1, "x", True)
    with pytest.raises(InvalidArgumentException, match="64-bit"):
        core.set_transform_values("p", "q", 2**63, 1, 0, 0, 0, 0, 0, 1, "x", True)
    assert core.lookup_transform("p", "q", 0).transform.translation.x == 0.0


def test_time_stamp_outside_64_bits_raises_invalid_argument(core):
    with pytest.raises(InvalidArgumentException, match="64-bit"):
        core.set_transform(make_transform("p", "q", stamp=Time(sec=2**40)), "x")


@pytest.mark.parametrize("size", [2, 10])
def test_batch_rows_with_stamps_outside_64_bits_are_invalid_and_the_rest_stored(core, size):
    stamps = np.arange(1, size + 1, dtype=np.uint64) * S
    stamps[1] = 2**63
    result = core.set_transforms(["p"] * size, ["q"] * size, stamps,
                                 np.tile([0, 0, 0, 0, 0, 0, 1.0], (size, 1)), "x")
    assert (result.stored, result.old, [k for k, _ in result.invalid]) == (size - 1, 0, [1])
    assert "64-bit" in str(result.invalid[0][1])
