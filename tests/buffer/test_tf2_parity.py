"""The six points where tf2py used to differ from the real tf2 core (issue 9), each checked
against tf2's behaviour as tf2-reference.md records it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf2py.buffer.core import BufferCore
from tf2py.buffer.exceptions import (
    ConnectivityException,
    ForwardExtrapolationException,
    InvalidArgumentException,
    LookupException,
)
from tf2py.buffer.messages import make_transform
from tf2py.buffer.time import Time

S = 1_000_000_000


def put(core, parent, child, stamp, xyz=(0.0, 0.0, 0.0), q=(0.0, 0.0, 0.0, 1.0)):
    return core.set_transform(make_transform(parent, child, xyz, q, stamp=stamp), "test")


# 1. get_latest_common_time's errors name no argument (tf2_py's wording) -------------------


def test_get_latest_common_time_unknown_frame_names_no_argument():
    core = BufferCore()
    put(core, "a", "b", 1.0)
    with pytest.raises(LookupException) as info:
        core.get_latest_common_time("nope", "b")
    assert str(info.value) == '"nope" passed to get_latest_common_time does not exist. '
    with pytest.raises(LookupException) as info:
        core.get_latest_common_time("a", "gone")
    assert str(info.value) == '"gone" passed to get_latest_common_time does not exist. '


# 2. times printed as tf2 computes them: sec + nsec * 1e-9 (two roundings) ----------------


def test_message_time_is_rounded_as_tf2_rounds_it():
    core = BufferCore()
    put(core, "a", "b", Time(5, 0))
    put(core, "a", "b", Time(5, 500_000_000))
    with pytest.raises(ForwardExtrapolationException) as info:
        core.lookup_transform("a", "b", Time(5, 500_000_500))
    # 5 + 500000500e-9 rounds up at the sixth decimal; 5500000500 / 1e9 would not.
    assert "Requested time 5.500001 but the latest data is at time 5.500000" in str(info.value)


def test_yaml_buffer_length_is_rounded_as_tf2_rounds_it():
    core = BufferCore()
    put(core, "a", "b", Time(1, 0))
    put(core, "a", "b", Time(1, 37_500_000))
    assert "  buffer_length: 0.038\n" in core.all_frames_as_yaml()


# 3. quaternions stored sign-canonical, as tf2 reads them back from the rotation ----------


def test_stored_quaternion_is_sign_canonical():
    core = BufferCore()
    put(core, "a", "b", 1.0, q=(0.0, 0.0, 0.0, -1.0))
    q = core.lookup_transform("a", "b", 1.0).transform.rotation
    assert (q.x, q.y, q.z, q.w) == (0.0, 0.0, 0.0, 1.0)
    put(core, "a", "c", 1.0, q=(0.0, 0.0, -1.0, 0.0))  # 180° about z: z made positive
    q = core.lookup_transform("a", "c", 1.0).transform.rotation
    assert (q.x, q.y, q.z, q.w) == (0.0, 0.0, 1.0, 0.0)


@pytest.mark.parametrize("half_turn", [(0.0, 0.0, 1.0, 0.0), (0.0, 0.0, -1.0, 0.0)])
def test_interpolating_across_a_half_turn_turns_the_way_tf2_turns(half_turn):
    # Identity, then 180° about z given with either sign: tf2 stores both as (0, 0, 1, 0),
    # so half way is +90° about z whichever sign was sent.
    core = BufferCore()
    put(core, "a", "b", 1.0)
    put(core, "a", "b", 2.0, q=half_turn)
    q = core.lookup_transform("a", "b", 1.5).transform.rotation
    assert (q.x, q.y, q.z, q.w) == pytest.approx((0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5)))


# 4. batch lookups on graphs with a loop behave exactly as single lookups ------------------


def looped_core():
    # x -> y -> x is a loop; z hangs below x; w is elsewhere.
    core = BufferCore()
    for t in (1.0, 2.0):
        put(core, "x", "z", t, (1.0, 0.0, 0.0))
        put(core, "y", "x", t, (0.0, 1.0, 0.0))
        put(core, "x", "y", t, (0.0, 0.0, 1.0))
        put(core, "v", "w", t)
    return core


def test_batch_lookup_through_a_loop_raises_the_loop_error_as_single():
    core = looped_core()
    with pytest.raises(LookupException) as single:
        core.lookup_transform("w", "z", 1.5)
    with pytest.raises(LookupException) as batch:
        core.lookup_transforms("w", "z", [1.5])
    assert "contains a loop" in str(single.value)
    assert str(batch.value) == str(single.value)


def test_batch_lookup_that_meets_the_target_inside_a_loop_matches_single():
    core = looped_core()
    single = core.lookup_transform("y", "z", 1.5).transform.as_matrix()
    batch = core.lookup_transforms("y", "z", [1.5, 1.25])
    assert batch[0] == pytest.approx(single)
    assert batch[1] == pytest.approx(core.lookup_transform("y", "z", 1.25).transform.as_matrix())


# 5. NO_PARENT is tf2's reserved name ------------------------------------------------------


def test_parent_no_parent_makes_the_child_a_root():
    core = BufferCore()
    put(core, "NO_PARENT", "a", 1.0)
    put(core, "a", "b", 1.0, (2.0, 0.0, 0.0))
    put(core, "c", "d", 1.0)
    assert core.lookup_transform("a", "b", 1.0).transform.translation.x == 2.0
    assert core.get_parent("a", 1.0) is None
    with pytest.raises(ConnectivityException):
        core.lookup_transform("c", "b", 1.0)


def test_no_parent_is_never_a_frame_lookups_find():
    core = BufferCore()
    put(core, "NO_PARENT", "a", 1.0)
    assert "NO_PARENT" not in core.get_frames()
    with pytest.raises(LookupException) as info:
        core.lookup_transform("NO_PARENT", "a", 1.0)
    assert str(info.value) == '"NO_PARENT" passed to lookupTransform argument target_frame does not exist. '
    assert not core.can_transform("NO_PARENT", "a", 1.0)
    assert not core.can_transform("a", "NO_PARENT", 0)


def test_no_parent_as_a_child_is_refused():
    core = BufferCore()
    with pytest.raises(InvalidArgumentException, match="reserved"):
        put(core, "a", "NO_PARENT", 1.0)
    assert core.get_frames() == []


# 6. get_parent takes the name as it is (tf2's _getParent: lookupFrameNumber, no stripping)


def test_get_parent_does_not_strip_a_leading_slash():
    core = BufferCore()
    put(core, "/base", "/f1", 1.0)
    assert core.get_parent("f1", 1.0) == "base"
    assert core.get_parent("/f1", 1.0) is None
    assert core.get_parent("//f1", 1.0) is None


def test_frame_stored_with_two_leading_slashes_keeps_one():
    core = BufferCore()
    put(core, "base", "//f1", 1.0, (1.0, 0.0, 0.0))
    assert "/f1" in core.get_frames()
    assert "/f1" in core.get_frames() and "f1" not in core.get_frames()
    assert core.get_parent("/f1", 1.0) == "base"  # as tf2's _getParent finds it
    with pytest.raises(InvalidArgumentException, match="cannot start with a '/'"):
        core.lookup_transform("base", "/f1", 1.0)
    with pytest.raises(InvalidArgumentException, match="cannot start with a '/'"):
        core.lookup_transforms("base", "/f1", [1.0])
    assert not core.can_transform("base", "/f1", 1.0)


def test_get_parent_of_no_parent_is_none():
    core = BufferCore()
    put(core, "NO_PARENT", "a", 1.0)
    assert core.get_parent("NO_PARENT", 1.0) is None
    assert core.get_parent("a", 1.0) is None


def test_batch_lookup_names_no_parent_as_single_lookup_does():
    core = BufferCore()
    put(core, "NO_PARENT", "a", 1.0)
    put(core, "a", "b", 1.0)
    for target, source in (("NO_PARENT", "b"), ("b", "NO_PARENT")):
        with pytest.raises(LookupException) as single:
            core.lookup_transform(target, source, 1.0)
        with pytest.raises(LookupException) as batch:
            core.lookup_transforms(target, source, [1.0])
        assert str(batch.value) == str(single.value)
    identity = core.lookup_transforms("NO_PARENT", "NO_PARENT", [1.0, 0.0])
    assert np.array_equal(identity, np.stack([np.eye(4)] * 2))



def test_batch_and_single_share_the_walk_on_reparenting():
    core = BufferCore()
    put(core, "a", "c", 1.0, (1.0, 0.0, 0.0))
    put(core, "b", "c", 2.0, (2.0, 0.0, 0.0))
    put(core, "a", "b", 1.0)
    put(core, "a", "b", 2.0)
    times = np.array([1.0, 1.5, 2.0])
    batch = core.lookup_transforms("a", "c", times)
    for k, t in enumerate(times.tolist()):
        assert batch[k] == pytest.approx(core.lookup_transform("a", "c", t).transform.as_matrix())
