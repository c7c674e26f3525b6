"""A frame's history over long streams (pruned, its storage compacted and grown many times)
holds exactly what a plain model of tf2's cache holds, and one frame's trajectory given as an
(N, 7) array with one parent and one child name is stored as the same rows given name by name."""

from __future__ import annotations

import bisect
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tf2py import InvalidArgumentException
from tf2py.buffer.core import BufferCore

MS = 1_000_000


class ModelCache:
    """tf2's cache rules, plainly: prune relative to the latest stamp before the insert, refuse
    older than that limit, a repeated stamp replaces."""

    def __init__(self, window_ns: int):
        self.window = window_ns
        self.stamps: list[int] = []
        self.values: list[float] = []

    def insert(self, stamp: int, x: float) -> bool:
        if self.stamps:
            limit = self.stamps[-1] - self.window
            while self.stamps and self.stamps[0] < limit:
                del self.stamps[0], self.values[0]
            if stamp < limit:
                return False
        i = bisect.bisect_left(self.stamps, stamp)
        if i < len(self.stamps) and self.stamps[i] == stamp:
            self.values[i] = x
        else:
            self.stamps.insert(i, stamp)
            self.values.insert(i, x)
        return True


# A stream: runs of in-order samples at a rate that changes (a fast burst, a slow trickle,
# a gap), with now and then one a little out of order.
runs = st.lists(
    st.tuples(st.integers(1, 400), st.sampled_from([1, 3, 10, 40]), st.integers(0, 5_000),
              st.booleans()),
    min_size=1, max_size=6,
)


def stream(runs):
    """Each run of the stream as a list of (stamp, x): x counts the samples, a late one is
    stamped 7 periods back."""
    t = 1_000 * MS
    k = 0
    for count, period_ms, gap_ms, late in runs:
        t += gap_ms * MS
        samples = []
        for i in range(count):
            t += period_ms * MS
            samples.append((t - 7 * period_ms * MS if late and i % 13 == 5 else t, float(k)))
            k += 1
        yield samples


def assert_holds(core, model):
    samples = core.samples("robot")
    assert [s for s, _, _ in samples] == model.stamps
    assert [v[0] for _, v, _ in samples] == model.values


def assert_lookups_interpolate(core, model):
    """Lookups between the samples interpolate the model's neighbours."""
    for a, b, xa, xb in zip(model.stamps, model.stamps[1:], model.values, model.values[1:]):
        mid = a + (b - a) // 2
        got = core.lookup_transform("world", "robot", mid * 1e-9).transform.translation.x
        assert got == pytest.approx(xa + (xb - xa) * (mid - a) / (b - a), abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(runs, st.sampled_from([0.05, 0.2, 1.0]))
def test_long_streams_hold_what_the_model_holds(runs, window_s):
    core = BufferCore(cache_time=window_s)
    model = ModelCache(int(window_s * 1e9))
    for samples in stream(runs):
        for stamp, x in samples:
            stored = core.set_transform_values("world", "robot", stamp, x, 0.0, 0.0,
                                               0.0, 0.0, 0.0, 1.0, "s")
            assert stored == model.insert(stamp, x)
        assert_holds(core, model)
    assert_lookups_interpolate(core, model)


@settings(max_examples=40, deadline=None)
@given(runs, st.sampled_from([0.05, 0.2, 1.0]), st.integers(0, 9))
def test_streams_given_as_arrays_hold_what_the_model_holds(runs, window_s, bad_every):
    # Each run of the stream arrives as one (N, 7) array (up to 400 rows, so the runs of
    # rising stamps that are stored together end inside and across arrays), now and then
    # with a row out of order or with a NaN: the rows a model inserts one by one, the same
    # refusals, the same answers.
    core = BufferCore(cache_time=window_s)
    model = ModelCache(int(window_s * 1e9))
    for samples in stream(runs):
        rows, expected = [], []
        for stamp, x in samples:
            row = [x, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
            if bad_every and int(x) % (13 * bad_every) == 3:
                row[4] = math.nan
                expected.append("invalid")
            else:
                expected.append("stored" if model.insert(stamp, x) else "old")
            rows.append(row)
        result = core.set_transforms("world", "robot",
                                     np.array([s for s, _ in samples], dtype=np.int64),
                                     np.array(rows), "s")
        assert (result.stored, result.old) == (expected.count("stored"), expected.count("old"))
        assert [i for i, _ in result.invalid] == \
            [i for i, e in enumerate(expected) if e == "invalid"]
        assert_holds(core, model)
    assert_lookups_interpolate(core, model)


def _rows(n, rng, bad_every=0):
    yaw = rng.uniform(-3, 3, n)
    rows = np.zeros((n, 7))
    rows[:, 0] = np.arange(n) * 0.5
    rows[:, 1] = rng.uniform(-5, 5, n)
    rows[:, 5] = np.sin(yaw / 2)
    rows[:, 6] = np.cos(yaw / 2)
    if bad_every:
        rows[::bad_every, 3] = math.nan
    return rows


@pytest.mark.parametrize("n", [1, 10, 63, 64, 1000])
@pytest.mark.parametrize("names", [("world", "robot"), ("/world", "/robot"), ("world", "")
                                   , ("robot", "robot"), ("world", "NO_PARENT"), ("", "robot")])
def test_one_frames_trajectory_is_stored_as_rows_name_by_name(n, names):
    rng = np.random.default_rng(n)
    stamps = (10_000 + np.arange(n) * 10) * MS
    rng.shuffle(stamps[n // 2:])  # the second half out of order
    rows = _rows(n, rng, bad_every=7)
    by_array, by_rows = BufferCore(cache_time=3.0), BufferCore(cache_time=3.0)
    got = by_array.set_transforms(names[0], names[1], stamps, rows, "auth")
    want = by_rows.set_transforms([names[0]] * n, [names[1]] * n, stamps, rows, "auth")
    assert (got.stored, got.old) == (want.stored, want.old)
    assert [(k, type(e), str(e)) for k, e in got.invalid] == \
        [(k, type(e), str(e)) for k, e in want.invalid]
    assert all(isinstance(e, InvalidArgumentException) for _, e in got.invalid)
    assert by_array.frames_info() == by_rows.frames_info()
    if got.stored:
        child = names[1].lstrip("/")
        assert by_array.samples(child) == by_rows.samples(child)


def test_a_trajectory_of_other_types_is_converted_or_refused_in_one_line():
    core = BufferCore()
    stamps = np.array([1, 2, 3], dtype=np.int64) * 10 * MS
    rows = _rows(3, np.random.default_rng(0))
    # float32 rows and a list of stamps are converted
    result = core.set_transforms("world", "robot", list(stamps), rows.astype(np.float32), "a")
    assert result.stored == 3
    with pytest.raises(InvalidArgumentException, match=r"shape \(N, 7\)"):
        core.set_transforms("world", "robot", stamps, rows[:, :6], "a")
    with pytest.raises(InvalidArgumentException):
        core.set_transforms("world", "robot", stamps[:2], rows, "a")
    assert len(core.samples("robot")) == 3  # nothing lost


def test_a_name_that_cannot_be_encoded_is_refused_per_row():
    core = BufferCore()
    stamps = np.array([1, 2], dtype=np.int64) * 10 * MS
    result = core.set_transforms("world", "bad\udc80name", stamps,
                                 _rows(2, np.random.default_rng(1)), "a")
    assert result.stored == 0 and [k for k, _ in result.invalid] == [0, 1]
    assert core.get_frames() == []
