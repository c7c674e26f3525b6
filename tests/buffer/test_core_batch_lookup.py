"""BufferCore.lookup_transforms: the vectorised batch lookup agrees with single lookups and
raises what they raise for the first bad stamp."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf2py import (
    BackwardExtrapolationException,
    ConnectivityException,
    ForwardExtrapolationException,
    InvalidArgumentException,
    LookupException,
    Time,
    make_transform,
)
from tf2py.buffer.core import BufferCore

S = 1_000_000_000


def yaw(angle):
    return (0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2))


@pytest.fixture
def tree():
    """map -> odom -> base -> laser (static), base -> arm; samples at 10..20 s."""
    core = BufferCore()
    rng = np.random.default_rng(1)
    for k in range(11):
        t = 10.0 + k
        for parent, child in (("map", "odom"), ("odom", "base"), ("base", "arm")):
            q = rng.normal(size=4)
            q /= np.linalg.norm(q)
            core.set_transform(make_transform(parent, child, rng.normal(size=3), q, stamp=t), "x")
    core.set_transform_static(make_transform("base", "laser", (0.1, 0, 0.3), yaw(0.2)), "x")
    return core


def singles(core, target, source, times):
    return np.array([core.lookup_transform(target, source, t).transform.as_matrix() for t in times])


@pytest.mark.parametrize(
    "target, source",
    [("map", "laser"), ("laser", "map"), ("arm", "laser"), ("odom", "arm"), ("base", "map")],
)
def test_batch_matches_single_lookups(tree, target, source):
    times = np.linspace(10.0, 20.0, 57)
    batch = tree.lookup_transforms(target, source, times)
    assert batch.shape == (57, 4, 4)
    np.testing.assert_allclose(batch, singles(tree, target, source, times), atol=1e-12)


def test_batch_accepts_times(tree):
    times = [Time(12, 500_000_000), Time(15)]
    np.testing.assert_allclose(
        tree.lookup_transforms("map", "arm", times),
        singles(tree, "map", "arm", times),
        atol=1e-12,
    )


def test_batch_time_zero_is_latest_common_time(tree):
    batch = tree.lookup_transforms("map", "arm", np.array([0.0, 20.0]))
    np.testing.assert_allclose(batch[0], batch[1], atol=1e-12)


def test_batch_same_frame_is_identity(tree):
    batch = tree.lookup_transforms("base", "base", np.array([1.0, 2.0]))
    np.testing.assert_array_equal(batch, np.broadcast_to(np.eye(4), (2, 4, 4)))


def test_batch_static_only(tree):
    batch = tree.lookup_transforms("base", "laser", np.array([0.0, 5.0, 500.0]))
    np.testing.assert_allclose(batch[2], tree.lookup_transform("base", "laser", 0).transform.as_matrix())


def test_batch_empty_times(tree):
    assert tree.lookup_transforms("map", "arm", np.array([])).shape == (0, 4, 4)


def test_batch_raises_for_first_out_of_range_stamp(tree):
    times = np.array([11.0, 25.0, 5.0])
    with pytest.raises(ForwardExtrapolationException) as info:
        tree.lookup_transforms("map", "arm", times)
    assert "Requested time 25.000000" in str(info.value)
    with pytest.raises(BackwardExtrapolationException, match="Requested time 5.000000"):
        tree.lookup_transforms("map", "arm", np.array([11.0, 5.0, 25.0]))


def test_batch_validates_frames(tree):
    with pytest.raises(InvalidArgumentException, match="target_frame"):
        tree.lookup_transforms("", "arm", np.array([11.0]))
    with pytest.raises(LookupException, match="source_frame"):
        tree.lookup_transforms("map", "nope", np.array([11.0]))


def test_batch_disconnected_raises_connectivity(tree):
    tree.set_transform(make_transform("x", "y", stamp=11.0), "x")
    with pytest.raises(ConnectivityException):
        tree.lookup_transforms("map", "y", np.array([11.0]))


def test_batch_follows_reparenting():
    core = BufferCore()
    core.set_transform_static(make_transform("world", "a", (1, 0, 0)), "x")
    core.set_transform_static(make_transform("world", "b", (2, 0, 0)), "x")
    core.set_transform(make_transform("a", "robot", (0, 1, 0), stamp=1.0), "x")
    core.set_transform(make_transform("b", "robot", (0, 1, 0), stamp=2.0), "x")
    batch = core.lookup_transforms("world", "robot", np.array([1.0, 1.5, 2.0]))
    assert batch[:, 0, 3].tolist() == [1.0, 1.0, 2.0]


def test_batch_interpolates_between_parents_links_above_ancestor_not_needed():
    core = BufferCore()
    core.set_transform(make_transform("world", "base", stamp=100.0), "x")
    for t in (1.0, 2.0):
        core.set_transform(make_transform("base", "left", (0, t, 0), stamp=t), "x")
        core.set_transform(make_transform("base", "right", (0, -t, 0), stamp=t), "x")
    batch = core.lookup_transforms("left", "right", np.array([1.0, 1.5, 2.0]))
    assert batch[:, 1, 3].tolist() == pytest.approx([-2.0, -3.0, -4.0])


def test_batch_rejects_times_that_are_not_times(tree):
    with pytest.raises(InvalidArgumentException, match="times"):
        tree.lookup_transforms("map", "arm", ["soon", "later"])
    with pytest.raises(InvalidArgumentException, match="finite"):
        tree.lookup_transforms("map", "arm", np.array([11.0, np.nan]))


def test_inserts_work_while_a_batch_lookup_exception_is_alive(tree):
    # The exception's traceback keeps the lookup's frames alive; no numpy view on the
    # caches' arrays may survive in them, or the next insert could not grow the arrays.
    try:
        tree.lookup_transforms("map", "arm", np.array([11.0, 99.0]))
    except ForwardExtrapolationException as exc:
        kept = exc
    for k in range(200):
        assert tree.set_transform(make_transform("map", "odom", stamp=21.0 + k * 0.01), "x")
    assert kept.__traceback__ is not None
