"""BufferCore lookups: walk, interpolation, time 0, full form, errors and their wording
(tf2-reference §4, §13.3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf2py import (
    BackwardExtrapolationException,
    ConnectivityException,
    ExtrapolationException,
    ForwardExtrapolationException,
    InvalidArgumentException,
    LookupException,
    NoDataForExtrapolationException,
    Time,
    make_transform,
)
from tf2py.buffer.core import BufferCore

CONNECT = (
    "Could not find a connection between '{}' and '{}' because they are not part of the same "
    "tree.Tf has two or more unconnected trees."
)


def suffix(source, target):
    return ", when looking up transform from frame [%s] to frame [%s]" % (source, target)


def xyz(ts):
    t = ts.transform.translation
    return (t.x, t.y, t.z)


def quat(ts):
    q = ts.transform.rotation
    return (q.x, q.y, q.z, q.w)


def same_rotation(a, b, tol=1e-9):
    return abs(abs(sum(x * y for x, y in zip(a, b))) - 1.0) < tol


def yaw(angle):
    return (0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2))


@pytest.fixture
def core():
    return BufferCore()


def put(core, parent, child, t, xyz=(0, 0, 0), rotation=(0, 0, 0, 1), static=False):
    ts = make_transform(parent, child, xyz, rotation, stamp=t)
    if static:
        return core.set_transform_static(ts, "test")
    return core.set_transform(ts, "test")


# --- basic semantics ---------------------------------------------------------------------


def test_lookup_gives_pose_of_source_in_target(core):
    put(core, "map", "robot", 1.0, (1, 0, 0), yaw(math.pi / 2))
    ts = core.lookup_transform("map", "robot", 1.0)
    assert xyz(ts) == pytest.approx((1, 0, 0))
    assert same_rotation(quat(ts), yaw(math.pi / 2))


def test_lookup_inverse_direction(core):
    put(core, "map", "robot", 1.0, (1, 0, 0), yaw(math.pi / 2))
    ts = core.lookup_transform("robot", "map", 1.0)
    assert xyz(ts) == pytest.approx((0, 1, 0))
    assert same_rotation(quat(ts), yaw(-math.pi / 2))


def test_header_frames_are_as_passed_and_stamp_is_query_time(core):
    put(core, "a", "b", 1.0)
    put(core, "a", "b", 3.0)
    ts = core.lookup_transform("b", "a", Time(2, 5))
    assert ts.header.frame_id == "b"
    assert ts.child_frame_id == "a"
    assert ts.header.stamp == Time(2, 5)


def test_lookup_through_common_ancestor(core):
    put(core, "base", "left", 1.0, (0, 1, 0))
    put(core, "base", "right", 1.0, (0, -1, 0))
    assert xyz(core.lookup_transform("left", "right", 1.0)) == pytest.approx((0, -2, 0))


def test_lookup_interpolates_every_link(core):
    for t in (1.0, 3.0):
        put(core, "a", "b", t, (t, 0, 0))
        put(core, "b", "c", t, (0, t, 0))
    assert xyz(core.lookup_transform("a", "c", 2.0)) == pytest.approx((2, 2, 0))


def test_lookup_accepts_seconds_int_float_and_time(core):
    put(core, "a", "b", 2.0, (2, 0, 0))
    for t in (2, 2.0, Time(2)):
        assert xyz(core.lookup_transform("a", "b", t)) == (2.0, 0.0, 0.0)


def test_lookup_5_seconds_back_interpolates(core):
    for k in range(1001):
        put(core, "odom", "base", 100.0 + k * 0.01, (k * 0.01, 0, 0))
    assert xyz(core.lookup_transform("odom", "base", 105.005))[0] == pytest.approx(5.005)


def test_reparented_frame_follows_parent_at_time(core):
    put(core, "world", "a", 0.0, (1, 0, 0), static=True)
    put(core, "world", "b", 0.0, (2, 0, 0), static=True)
    put(core, "a", "robot", 1.0, (0, 1, 0))
    put(core, "b", "robot", 2.0, (0, 1, 0))
    assert xyz(core.lookup_transform("world", "robot", 1.0)) == pytest.approx((1, 1, 0))
    assert xyz(core.lookup_transform("world", "robot", 2.0)) == pytest.approx((2, 1, 0))
    # Between samples with different parents: the older one wins, no interpolation.
    assert xyz(core.lookup_transform("world", "robot", 1.5)) == pytest.approx((1, 1, 0))
    assert core.get_parent("robot", 1.5) == "a"


# --- static -------------------------------------------------------------------------------


def test_static_link_valid_at_any_time_with_query_stamp(core):
    put(core, "base", "laser", 5.0, (0, 0, 1), static=True)
    ts = core.lookup_transform("base", "laser", 123.0)
    assert xyz(ts) == (0.0, 0.0, 1.0)
    assert ts.header.stamp == Time(123)


def test_static_chain_at_time_zero_has_stamp_zero(core):
    put(core, "base", "laser", 5.0, (0, 0, 1), static=True)
    put(core, "laser", "lens", 5.0, (0, 0, 1), static=True)
    ts = core.lookup_transform("base", "lens", 0)
    assert ts.header.stamp == Time()
    assert xyz(ts) == (0.0, 0.0, 2.0)


def test_static_survives_clear(core):
    put(core, "base", "laser", 0.0, static=True)
    put(core, "odom", "base", 1.0)
    core.clear()
    assert core.can_transform("base", "laser", 7.0)
    assert not core.can_transform("odom", "base", 1.0)


# --- time zero ------------------------------------------------------------------------------


def test_time_zero_is_min_of_latest_dynamic_stamps(core):
    put(core, "a", "b", 1.0)
    put(core, "a", "b", 5.0)
    put(core, "b", "c", 1.0)
    put(core, "b", "c", 3.0)
    assert core.lookup_transform("a", "c", 0).header.stamp == Time(3)
    assert core.get_latest_common_time("a", "c") == Time(3)
    assert core.get_latest_common_time("c", "a") == Time(3)


def test_time_zero_ignores_static_links(core):
    put(core, "a", "b", 4.0)
    put(core, "b", "c", 0.0, static=True)
    assert core.lookup_transform("a", "c", 0).header.stamp == Time(4)


def test_time_zero_ignores_zero_stamped_samples(core):
    put(core, "a", "b", 4.0)
    put(core, "b", "c", 0.0)
    assert core.get_latest_common_time("a", "c") == Time(4)


def test_time_zero_ignores_links_above_common_ancestor(core):
    put(core, "world", "base", 1.0)  # old link above the common ancestor
    put(core, "base", "left", 5.0)
    put(core, "base", "left", 7.0)
    put(core, "base", "right", 6.0)
    put(core, "base", "right", 8.0)
    assert core.get_latest_common_time("left", "right") == Time(7)
    assert core.lookup_transform("left", "right", 0).header.stamp == Time(7)


def test_time_zero_all_static_resolves_to_zero(core):
    put(core, "a", "b", 3.0, static=True)
    assert core.get_latest_common_time("a", "b") == Time()


def test_time_zero_can_still_fail_on_a_link_starting_later(core):
    put(core, "a", "b", 5.0)
    put(core, "a", "b", 10.0)
    put(core, "b", "c", 15.0)
    put(core, "b", "c", 20.0)
    with pytest.raises(BackwardExtrapolationException) as info:
        core.lookup_transform("a", "c", 0)
    assert str(info.value) == (
        "Lookup would require extrapolation into the past.  Requested time 10.000000 but the "
        "earliest data is at time 15.000000" + suffix("c", "a")
    )


def test_latest_common_time_same_frame_is_its_latest_stamp(core):
    put(core, "a", "b", 4.0)
    assert core.get_latest_common_time("b", "b") == Time(4)
    assert core.get_latest_common_time("a", "a") == Time()


def test_latest_common_time_unknown_frame_raises_lookup(core):
    put(core, "a", "b", 4.0)
    with pytest.raises(LookupException, match='"x" passed to get_latest_common_time'):
        core.get_latest_common_time("a", "x")


def test_latest_common_time_disconnected_raises_connectivity(core):
    put(core, "a", "b", 4.0)
    put(core, "c", "d", 4.0)
    with pytest.raises(ConnectivityException, match=CONNECT.format("a", "d").replace(".", r"\.")):
        core.get_latest_common_time("a", "d")


# --- identity rules (§4.1 step 1) ------------------------------------------------------------


def test_identity_lookup_of_unknown_frame_returns_query_time(core):
    ts = core.lookup_transform("nowhere", "nowhere", 3.0)
    assert xyz(ts) == (0, 0, 0) and quat(ts) == (0, 0, 0, 1)
    assert ts.header.stamp == Time(3)


def test_identity_lookup_never_validates(core):
    for name in ("", "/x"):
        ts = core.lookup_transform(name, name, 0)
        assert ts.header.stamp == Time() and ts.header.frame_id == name


def test_identity_lookup_at_zero_uses_frame_latest_stamp(core):
    put(core, "a", "b", 4.0)
    put(core, "a", "b", 6.0)
    assert core.lookup_transform("b", "b", 0).header.stamp == Time(6)
    assert core.lookup_transform("a", "a", 0).header.stamp == Time()  # root: no cache


def test_identity_lookup_static_frame_at_zero_is_zero(core):
    put(core, "a", "b", 4.0, static=True)
    assert core.lookup_transform("b", "b", 0).header.stamp == Time()


def test_can_transform_same_frame_is_true_even_if_unknown(core):
    assert core.can_transform("x", "x", 5.0)


# --- errors: wording, subclasses, precedence --------------------------------------------------


def test_empty_target_is_invalid_argument(core):
    put(core, "a", "b", 1.0)
    with pytest.raises(InvalidArgumentException) as info:
        core.lookup_transform("", "b", 1.0)
    assert str(info.value) == (
        'Invalid argument "" passed to lookupTransform argument target_frame - in tf2 '
        "frame_ids cannot be empty"
    )


def test_leading_slash_is_invalid_argument(core):
    put(core, "a", "b", 1.0)
    with pytest.raises(InvalidArgumentException) as info:
        core.lookup_transform("/b", "a", 1.0)
    assert str(info.value) == (
        'Invalid argument "/b" passed to lookupTransform argument target_frame - in tf2 '
        "frame_ids cannot start with a '/'"
    )


def test_unknown_source_is_lookup_exception_with_trailing_space(core):
    put(core, "a", "b", 1.0)
    with pytest.raises(LookupException) as info:
        core.lookup_transform("a", "bar", 1.0)
    assert str(info.value) == '"bar" passed to lookupTransform argument source_frame does not exist. '


def test_target_validated_fully_before_source(core):
    put(core, "a", "b", 1.0)
    with pytest.raises(LookupException, match="target_frame"):
        core.lookup_transform("nope", "", 1.0)
    with pytest.raises(InvalidArgumentException, match="target_frame"):
        core.lookup_transform("", "nope", 1.0)


def test_forward_extrapolation_message_and_class(core):
    put(core, "a", "b", 1.0)
    put(core, "a", "b", 2.0)
    with pytest.raises(ForwardExtrapolationException) as info:
        core.lookup_transform("a", "b", 3.0)
    assert isinstance(info.value, ExtrapolationException)
    assert str(info.value) == (
        "Lookup would require extrapolation into the future.  Requested time 3.000000 but the "
        "latest data is at time 2.000000" + suffix("b", "a")
    )


def test_backward_extrapolation_message_and_class(core):
    put(core, "a", "b", 1.0)
    put(core, "a", "b", 2.0)
    with pytest.raises(BackwardExtrapolationException) as info:
        core.lookup_transform("b", "a", 0.5)
    assert str(info.value) == (
        "Lookup would require extrapolation into the past.  Requested time 0.500000 but the "
        "earliest data is at time 1.000000" + suffix("a", "b")
    )


def test_single_sample_other_time_is_no_data(core):
    put(core, "a", "b", 1.0)
    with pytest.raises(NoDataForExtrapolationException) as info:
        core.lookup_transform("a", "b", 1.5)
    assert str(info.value) == (
        "Lookup would require extrapolation at time 1.500000, but only time 1.000000 is in "
        "the buffer" + suffix("b", "a")
    )


def test_times_print_with_six_decimals(core):
    put(core, "a", "b", 1.0)
    put(core, "a", "b", 2.0)
    with pytest.raises(ForwardExtrapolationException, match=r"Requested time 2\.000000 "):
        core.lookup_transform("a", "b", Time(2, 1))


def test_after_clear_dynamic_link_is_no_data_at_nonzero_time(core):
    put(core, "a", "b", 1.0)
    core.clear()
    with pytest.raises(NoDataForExtrapolationException, match="but only time 0.000000 is in"):
        core.lookup_transform("a", "b", 1.0)


def test_after_clear_dynamic_link_at_time_zero_is_connectivity(core):
    put(core, "a", "b", 1.0)
    core.clear()
    with pytest.raises(ConnectivityException):
        core.lookup_transform("a", "b", 0)


def test_disconnected_trees_connectivity_message(core):
    put(core, "a", "b", 1.0)
    put(core, "c", "d", 1.0)
    with pytest.raises(ConnectivityException) as info:
        core.lookup_transform("b", "d", 1.0)
    assert str(info.value) == CONNECT.format("b", "d")


def test_source_side_extrapolation_beats_connectivity(core):
    put(core, "a", "b", 1.0)
    put(core, "a", "b", 2.0)
    put(core, "c", "d", 5.0)
    with pytest.raises(ForwardExtrapolationException) as info:
        core.lookup_transform("d", "b", 5.0)
    assert str(info.value).endswith(suffix("b", "d"))


def test_target_side_extrapolation_has_suffix(core):
    put(core, "a", "b", 1.0)
    put(core, "a", "b", 2.0)
    put(core, "a", "c", 5.0)
    put(core, "a", "c", 6.0)
    with pytest.raises(BackwardExtrapolationException) as info:
        core.lookup_transform("c", "b", 1.5)
    assert str(info.value) == (
        "Lookup would require extrapolation into the past.  Requested time 1.500000 but the "
        "earliest data is at time 5.000000" + suffix("b", "c")
    )


def test_links_above_common_ancestor_are_not_needed(core):
    put(core, "world", "base", 100.0)  # no data at 1 s
    put(core, "base", "left", 1.0, (0, 1, 0))
    put(core, "base", "right", 1.0, (0, -1, 0))
    assert xyz(core.lookup_transform("left", "right", 1.0)) == pytest.approx((0, -2, 0))


# --- loops and depth ------------------------------------------------------------------------


def test_loop_is_detected_with_tf2_message(core):
    put(core, "a", "b", 1.0)
    put(core, "b", "a", 1.0)
    put(core, "c", "d", 1.0)
    with pytest.raises(LookupException) as info:
        core.lookup_transform("d", "a", 1.0)
    assert str(info.value) == (
        "The tf tree is invalid because it contains a loop.\n"
        + core.all_frames_as_string()
        + "\n"
    )


def test_loop_detected_at_time_zero(core):
    put(core, "a", "b", 1.0)
    put(core, "b", "a", 1.0)
    put(core, "c", "d", 1.0)
    with pytest.raises(LookupException, match="contains a loop"):
        core.lookup_transform("d", "a", 0)


def test_lookup_hitting_target_inside_loop_succeeds(core):
    put(core, "a", "b", 1.0, (1, 0, 0))
    put(core, "b", "a", 1.0, (1, 0, 0))
    assert xyz(core.lookup_transform("a", "b", 1.0)) == (1.0, 0.0, 0.0)


def _chain(core, links):
    for i in range(links):
        put(core, "f%d" % (i + 1), "f%d" % i, 1.0, (1, 0, 0))


@pytest.mark.parametrize("t", [1.0, 0])
def test_depth_1000_links_works(core, t):
    _chain(core, 1000)
    assert xyz(core.lookup_transform("f1000", "f0", t))[0] == pytest.approx(1000.0)
    assert xyz(core.lookup_transform("f0", "f1000", t))[0] == pytest.approx(-1000.0)


@pytest.mark.parametrize("t", [1.0, 0])
def test_depth_1001_links_fails_with_loop_message(core, t):
    _chain(core, 1001)
    with pytest.raises(LookupException, match="contains a loop"):
        core.lookup_transform("f1001", "f0", t)
    assert not core.can_transform("f1001", "f0", t)


# --- can_transform ----------------------------------------------------------------------------


def test_can_transform_true_and_false(core):
    put(core, "a", "b", 1.0)
    put(core, "a", "b", 2.0)
    assert core.can_transform("a", "b", 1.5)
    assert not core.can_transform("a", "b", 2.5)


def test_can_transform_never_raises_for_bad_frames(core):
    put(core, "a", "b", 1.0)
    for target, source in (("", "b"), ("/a", "b"), ("a", "nope"), ("nope", "a")):
        assert core.can_transform(target, source, 1.0) is False


def test_can_transform_core_messages(core):
    put(core, "a", "b", 1.0)
    assert core._can_transform_core("a", "b", 1.0) == (True, "")
    assert core._can_transform_core("q", "b", 1.0) == (
        False,
        'Invalid frame ID "q" passed to canTransform argument target_frame - frame does not exist',
    )
    assert core._can_transform_core("", "b", 1.0) == (
        False,
        'Invalid frame ID "" passed to canTransform argument target_frame - in tf2 frame_ids '
        "cannot be empty",
    )
    assert core._can_transform_core("a", "/b", 1.0) == (
        False,
        "Invalid frame ID \"/b\" passed to canTransform argument source_frame - in tf2 "
        "frame_ids cannot start with a '/'",
    )
    ok, message = core._can_transform_core("a", "b", 2.0)
    assert not ok and message.endswith(suffix("b", "a"))


def test_transform_error_returns_exception_lookup_would_raise(core):
    put(core, "a", "b", 1.0)
    assert core._transform_error("a", "b", 1.0) is None
    assert isinstance(core._transform_error("", "b", 1.0), InvalidArgumentException)
    assert isinstance(core._transform_error("a", "b", 3.0), NoDataForExtrapolationException)


def test_can_transform_full(core):
    put(core, "odom", "base", 1.0, (1, 0, 0))
    put(core, "odom", "base", 2.0, (2, 0, 0))
    assert core.can_transform_full("base", 2.0, "base", 1.0, "odom")
    assert not core.can_transform_full("base", 3.0, "base", 1.0, "odom")
    ok, message = core._can_transform_full_core("base", 2.0, "base", 1.0, "nope")
    assert not ok and "fixed_frame - frame does not exist" in message


# --- full (time-travel) form -----------------------------------------------------------------


def test_lookup_full_moves_data_through_fixed_frame(core):
    put(core, "odom", "base", 1.0, (1, 0, 0))
    put(core, "odom", "base", 2.0, (3, 0, 0), yaw(math.pi / 2))
    ts = core.lookup_transform_full("base", 2.0, "base", 1.0, "odom")
    # A point at the robot's origin at 1 s is at odom (1,0,0): seen from the robot at 2 s
    # (at (3,0,0) facing +y), it is 2 m behind-right: (0, 2, 0) in the new base frame.
    assert xyz(ts) == pytest.approx((0, 2, 0))
    assert same_rotation(quat(ts), yaw(-math.pi / 2))
    assert ts.header.stamp == Time(2)
    assert ts.header.frame_id == "base" and ts.child_frame_id == "base"


def test_lookup_full_matches_composition(core):
    put(core, "map", "odom", 1.0, (5, 0, 0), yaw(0.3))
    put(core, "map", "odom", 3.0, (6, 1, 0), yaw(0.5))
    put(core, "odom", "base", 1.0, (1, 2, 0), yaw(0.1))
    put(core, "odom", "base", 3.0, (2, 2, 0), yaw(0.9))
    ts = core.lookup_transform_full("base", 3.0, "odom", 1.0, "map")
    a = core.lookup_transform("map", "odom", 1.0).transform.as_matrix()
    b = core.lookup_transform("base", "map", 3.0).transform.as_matrix()
    np.testing.assert_allclose(ts.transform.as_matrix(), b @ a, atol=1e-12)


def test_lookup_full_stamp_zero_resolves_target_side(core):
    put(core, "odom", "base", 1.0)
    put(core, "odom", "base", 2.0)
    assert core.lookup_transform_full("base", 0, "base", 1.0, "odom").header.stamp == Time(2)


def test_lookup_full_validates_target_source_fixed_in_order(core):
    put(core, "odom", "base", 1.0)
    with pytest.raises(LookupException, match="source_frame"):
        core.lookup_transform_full("base", 1.0, "x", 1.0, "")
    with pytest.raises(InvalidArgumentException, match="fixed_frame"):
        core.lookup_transform_full("base", 1.0, "base", 1.0, "")
    with pytest.raises(LookupException, match='"nope" passed to lookupTransform argument fixed_frame'):
        core.lookup_transform_full("base", 1.0, "base", 1.0, "nope")


def test_lookup_full_source_side_error_raises(core):
    put(core, "odom", "base", 1.0)
    put(core, "odom", "base", 2.0)
    with pytest.raises(ForwardExtrapolationException):
        core.lookup_transform_full("base", 1.0, "base", 5.0, "odom")


# --- get_parent -----------------------------------------------------------------------------


def test_get_parent(core):
    put(core, "odom", "base", 1.0)
    put(core, "odom", "base", 2.0)
    assert core.get_parent("base", 1.5) == "odom"
    assert core.get_parent("base", 0) == "odom"
    assert core.get_parent("base", 5.0) is None
    assert core.get_parent("odom", 1.0) is None
    assert core.get_parent("unknown", 1.0) is None


def test_time_that_is_not_a_time_raises_invalid_argument(core):
    put(core, "a", "b", 1.0)
    with pytest.raises(InvalidArgumentException):
        core.lookup_transform("a", "b", "yesterday")
    with pytest.raises(InvalidArgumentException):
        core.lookup_transform("a", "b", float("nan"))
