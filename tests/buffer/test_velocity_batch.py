"""lookup_velocities: lookup_velocity at N times in one kernel call, as (N, 6) rows
(linear xyz, angular xyz)."""

from __future__ import annotations

import numpy as np
import pytest

from tf2py import (
    BackwardExtrapolationException,
    Buffer,
    ExtrapolationException,
    InvalidArgumentException,
    LookupException,
    Time,
    make_transform,
)
from tf2py.buffer.core import BufferCore


def put(core, parent, child, t, xyz, rpy, static=False):
    ts = make_transform(parent, child, tuple(xyz), rpy=tuple(rpy), stamp=t)
    if static:
        core.set_transform_static(ts, "test")
    else:
        core.set_transform(ts, "test")


def row(v):
    lin, ang = v.velocity.linear, v.velocity.angular
    return [lin.x, lin.y, lin.z, ang.x, ang.y, ang.z]


def random_core(seed, make=BufferCore):
    rng = np.random.default_rng(seed)
    core = make()
    rates = rng.normal(size=(2, 6)) * [1, 1, 1, 0.5, 0.5, 0.5]
    for k in range(61):
        t = 50.0 + 0.05 * k
        for i, (parent, child) in enumerate((("world", "a"), ("a", "tracking"))):
            pose = rates[i] * (t - 50.0) + 0.3 * np.sin(3 * (t - 50.0) + i)
            put(core, parent, child, t, pose[:3], pose[3:])
    put(core, "world", "viewer", 0, (1, 2, 3), (0.3, -0.2, 1.0), static=True)
    return core, rng


@pytest.mark.parametrize("tf2_compatible", [False, True])
@pytest.mark.parametrize("form", ["short", "full"])
def test_each_row_is_lookup_velocity_at_that_time(form, tf2_compatible):
    core, rng = random_core(11)
    times = [Time.from_seconds(50.0 + x) for x in rng.uniform(0.2, 3.0, size=40)]
    times += [Time.from_seconds(53.0), Time()]  # the window cut at the end; time 0
    args = () if form == "short" else ("viewer", (0.5, -1.0, 2.0), "a")
    if tf2_compatible:
        times.pop()  # time 0 is near 0 s for tf2: an extrapolation (tested below)
    rows = core.lookup_velocities("tracking", "world", times, 0.3, *args,
                                  tf2_compatible=tf2_compatible)
    assert rows.shape == (len(times), 6) and rows.dtype == np.float64
    for k, t in enumerate(times):
        v = core.lookup_velocity("tracking", "world", t, 0.3, *args,
                                 tf2_compatible=tf2_compatible)
        assert rows[k].tolist() == row(v), k  # the same computation, bit for bit


def test_times_as_float_seconds_an_array_or_ints():
    core, _ = random_core(3)
    expected = [row(core.lookup_velocity("tracking", "world", t, 0.2)) for t in (51.0, 52.0)]
    for times in ([51.0, 52.0], np.array([51.0, 52.0]), [51, 52], np.array([51, 52]),
                  (Time(51), Time(52)), np.array([[51.0], [52.0]])):
        assert core.lookup_velocities("tracking", "world", times, 0.2).tolist() == expected


def test_no_times_give_an_empty_array():
    rows = Buffer().lookup_velocities("a", "b", [], 0.1)
    assert rows.shape == (0, 6)


def test_the_first_failing_time_raises_lookup_velocitys_exception():
    core, _ = random_core(3)
    with pytest.raises(BackwardExtrapolationException) as batch:
        core.lookup_velocities("tracking", "world", [51.0, 10.0, 100.0], 0.2)
    with pytest.raises(BackwardExtrapolationException) as single:
        core.lookup_velocity("tracking", "world", 10.0, 0.2)
    assert str(batch.value) == str(single.value)
    with pytest.raises(ExtrapolationException):
        core.lookup_velocities("tracking", "world", [0], 0.2, tf2_compatible=True)
    with pytest.raises(LookupException, match='"nowhere" passed to lookupTransform argument '
                                              'source_frame does not exist'):
        core.lookup_velocities("nowhere", "world", [51.0], 0.2)
    with pytest.raises(LookupException, match='"nowhere" passed to lookupTransform argument '
                                              'target_frame does not exist'):
        core.lookup_velocities("tracking", "world", [51.0], 0.2, "nowhere")


@pytest.mark.parametrize("times", [[float("nan")], ["51"], [None], [Time(51), "x"],
                                   np.array([np.inf]), object()])
def test_bad_times_raise_invalid_argument(times):
    core, _ = random_core(3)
    with pytest.raises(InvalidArgumentException):
        core.lookup_velocities("tracking", "world", times, 0.2)


@pytest.mark.parametrize("bad", [dict(averaging_interval=0), dict(averaging_interval=-1.0),
                                 dict(reference_point=(1, 2)), dict(tracking_frame=3),
                                 dict(tf2_compatible="yes"), dict(reference_frame=1.5)])
def test_bad_arguments_raise_invalid_argument(bad):
    core, _ = random_core(3)
    args = dict(tracking_frame="tracking", observation_frame="world", times=[51.0],
                averaging_interval=0.2)
    args.update(bad)
    with pytest.raises(InvalidArgumentException):
        core.lookup_velocities(**args)


def test_buffer_has_it():
    core, _ = random_core(4)
    buffer, _ = random_core(4, make=Buffer)
    times = np.linspace(50.5, 52.5, 9)
    assert np.array_equal(buffer.lookup_velocities("tracking", "world", times, 0.2),
                          core.lookup_velocities("tracking", "world", times, 0.2))
