"""TimeCache: tf2's per-frame history (tf2-reference.md §3.1-§3.3, §13.2)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tf2py.buffer.exceptions import (
    BackwardExtrapolationException,
    ForwardExtrapolationException,
    NoDataForExtrapolationException,
)
from tf2py.buffer.time_cache import TimeCache

S = 1_000_000_000
IDENT = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def put(cache, stamp, x=0.0, parent=1, q=(0.0, 0.0, 0.0, 1.0)):
    return cache.insert(stamp, x, 0.0, 0.0, *q, parent)


def yaw(angle):
    return (0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2))


# --- §3.3 table, row by row ---------------------------------------------------------------


def test_empty_cache_lookup_fails_with_no_data():
    cache = TimeCache()
    assert cache.get(5 * S) is None
    cls, message = cache.error(5 * S)
    assert cls is NoDataForExtrapolationException
    assert message == (
        "Lookup would require extrapolation at time 5.000000, but only time 0.000000 is in "
        "the buffer"
    )


def test_time_zero_returns_latest_sample():
    cache = TimeCache()
    put(cache, 1 * S, x=1.0)
    put(cache, 2 * S, x=2.0)
    assert cache.get(0)[0] == 2.0


def test_single_sample_matches_its_own_stamp():
    cache = TimeCache()
    put(cache, 3 * S, x=3.0)
    assert cache.get(3 * S)[0] == 3.0


def test_single_sample_other_time_is_no_data_naming_the_stamp():
    cache = TimeCache()
    put(cache, 3 * S, x=3.0)
    assert cache.get(4 * S) is None
    assert cache.get(2 * S) is None
    cls, message = cache.error(4 * S)
    assert cls is NoDataForExtrapolationException
    assert message == (
        "Lookup would require extrapolation at time 4.000000, but only time 3.000000 is in "
        "the buffer"
    )


def test_exact_latest_stamp_returns_latest():
    cache = TimeCache()
    put(cache, 1 * S, x=1.0)
    put(cache, 2 * S, x=2.0)
    assert cache.get(2 * S)[0] == 2.0


def test_exact_earliest_stamp_returns_earliest():
    cache = TimeCache()
    put(cache, 1 * S, x=1.0)
    put(cache, 2 * S, x=2.0)
    assert cache.get(1 * S)[0] == 1.0


def test_after_latest_is_forward_extrapolation():
    cache = TimeCache()
    put(cache, 1 * S)
    put(cache, 3 * S)
    assert cache.get(4 * S) is None
    cls, message = cache.error(4 * S)
    assert cls is ForwardExtrapolationException
    assert message == (
        "Lookup would require extrapolation into the future.  Requested time 4.000000 but "
        "the latest data is at time 3.000000"
    )


def test_before_earliest_is_backward_extrapolation():
    cache = TimeCache()
    put(cache, 2 * S)
    put(cache, 3 * S)
    assert cache.get(1 * S) is None
    cls, message = cache.error(1 * S)
    assert cls is BackwardExtrapolationException
    assert message == (
        "Lookup would require extrapolation into the past.  Requested time 1.000000 but the "
        "earliest data is at time 2.000000"
    )


def test_between_samples_interpolates_translation_linearly():
    cache = TimeCache()
    put(cache, 1 * S, x=1.0)
    put(cache, 3 * S, x=5.0)
    assert cache.get(2 * S)[0] == pytest.approx(3.0)
    assert cache.get(1 * S + S // 2)[0] == pytest.approx(2.0)


def test_between_samples_slerps_rotation():
    cache = TimeCache()
    put(cache, 0 * S + 1, q=yaw(0.0))
    put(cache, 1 * S + 1, q=yaw(1.0))
    got = cache.get(S // 2 + 1)[3:7]
    assert got == pytest.approx(yaw(0.5))


def test_slerp_takes_the_shortest_path():
    # yaw 170° then yaw -170° (stored as the negated quaternion of 190°): halfway is 180°,
    # not 0°.
    a = yaw(math.radians(170))
    b = yaw(math.radians(-170))
    cache = TimeCache()
    put(cache, S, q=a)
    put(cache, 2 * S, q=b)
    out = cache.get(S + S // 2)[3:7]
    angle = 2 * math.atan2(math.hypot(*out[:3]), abs(out[3]))
    assert math.degrees(angle) == pytest.approx(180.0)


def test_slerp_of_equal_rotations_returns_the_first():
    q = (0.0, 0.0, 0.0, 1.0)
    cache = TimeCache()
    put(cache, S, x=0.0, q=q)
    put(cache, 2 * S, x=1.0, q=q)
    out = cache.get(S + 7 * S // 10)
    assert out[3:7] == q
    assert out[0] == pytest.approx(0.7)


def test_between_samples_with_different_parents_returns_older_unchanged():
    cache = TimeCache()
    put(cache, 1 * S, x=1.0, parent=1)
    put(cache, 3 * S, x=3.0, parent=2)
    got = cache.get(2 * S)
    assert got[0] == 1.0
    assert got[7] == 1


def test_parent_at_follows_the_older_sample():
    cache = TimeCache()
    put(cache, 1 * S, parent=1)
    put(cache, 3 * S, parent=2)
    assert cache.parent_at(2 * S) == 1
    assert cache.parent_at(3 * S) == 2
    assert cache.parent_at(0) == 2
    assert cache.parent_at(4 * S) == 0


# --- insertion, pruning, replacement --------------------------------------------------------


def test_out_of_order_inserts_land_sorted():
    cache = TimeCache()
    for t in (5, 1, 3, 2, 4):
        assert put(cache, t * S, x=float(t))
    assert [s for s, _, _ in cache.samples()] == [t * S for t in (1, 2, 3, 4, 5)]
    assert cache.get(2 * S + S // 2)[0] == pytest.approx(2.5)


def test_equal_stamp_replaces_the_earlier_sample():
    cache = TimeCache()
    put(cache, 1 * S, x=1.0)
    put(cache, 2 * S, x=2.0)
    assert put(cache, 2 * S, x=20.0, parent=7)
    assert len(cache) == 2
    assert cache.get(2 * S)[0] == 20.0
    assert cache.get(2 * S)[7] == 7


def test_equal_stamp_in_the_middle_replaces_it():
    cache = TimeCache()
    for t in (1, 2, 3):
        put(cache, t * S, x=float(t))
    assert put(cache, 2 * S, x=-2.0)
    assert len(cache) == 3
    assert cache.get(2 * S)[0] == -2.0


def test_insert_exactly_cache_time_older_than_latest_is_accepted():
    cache = TimeCache(10 * S)
    put(cache, 20 * S)
    assert put(cache, 10 * S)


def test_insert_older_than_cache_window_is_refused():
    cache = TimeCache(10 * S)
    put(cache, 20 * S)
    assert put(cache, 10 * S - 1) is False
    assert len(cache) == 1


def test_prune_happens_before_insert_relative_to_previous_latest():
    # Samples at 0..20 s with a 10 s cache: the list holds 9..20 (12 entries) and a lookup
    # at 9 s still succeeds (tf2-reference §3.2).
    cache = TimeCache(10 * S)
    for t in range(21):
        put(cache, t * S, x=float(t))
    assert len(cache) == 12
    assert cache.oldest_stamp() == 9 * S
    assert cache.get(9 * S)[0] == 9.0


def test_prune_keeps_sample_exactly_cache_time_old():
    cache = TimeCache(10 * S)
    put(cache, 0)
    put(cache, 10 * S)
    put(cache, 11 * S)  # prunes relative to 10 s: 0 + 10 s < 10 s is false
    assert cache.oldest_stamp() == 0
    put(cache, 12 * S)  # relative to 11 s: 0 is dropped
    assert cache.oldest_stamp() == 10 * S


def test_long_stream_compacts_and_keeps_window():
    cache = TimeCache(1 * S)
    step = S // 100
    for k in range(5000):
        put(cache, k * step, x=float(k))
    assert len(cache) == 102  # 100 Hz over 1 s, +1 inclusive, +1 pruned lazily
    assert cache.get(4990 * step)[0] == 4990.0
    assert [s for s, _, _ in cache.samples()] == [k * step for k in range(4898, 5000)]


def test_clear_empties_the_cache():
    cache = TimeCache()
    put(cache, 1 * S)
    cache.clear()
    assert len(cache) == 0
    assert cache.latest() == (0, 0)
    assert cache.get(0) is None


def test_latest_and_oldest():
    cache = TimeCache()
    put(cache, 2 * S, parent=3)
    put(cache, 1 * S, parent=4)
    assert cache.latest() == (2 * S, 3)
    assert cache.latest_stamp() == 2 * S
    assert cache.oldest_stamp() == 1 * S


def _batch_against_single(stamps, parents, ts):
    """lookup_transforms on a one-link tree agrees, stamp by stamp, with lookup_transform
    (the per-frame cache's answers seen through both entry points)."""
    import numpy as np

    from tf2py.buffer.core import BufferCore

    core = BufferCore(cache_time=1e6)
    for k, (s, p) in enumerate(zip(stamps, parents)):
        q = yaw(0.01 * k)
        core.set_transform_values(p, "c", s, float(k), 0, 0, *q, "x")
    good = []
    for t in ts:
        try:
            single = core.lookup_transform("p1", "c", t * 1e-9 if t else 0)
        except Exception:
            continue
        good.append((t, single))
    if not good:
        return
    batch = core.lookup_transforms("p1", "c", np.array([t for t, _ in good]) * 1e-9)
    for k, (_, single) in enumerate(good):
        assert batch[k] == pytest.approx(single.transform.as_matrix(), abs=1e-9)


def test_get_many_matches_get():
    stamps = [t * S for t in range(1, 11)]
    parents = ["p1" if t < 6 else "p2" for t in range(1, 11)]
    ts = [0, 1 * S, S + S // 3, 5 * S + S // 2, 6 * S, 9 * S, 10 * S, 11 * S]
    _batch_against_single(stamps, parents, ts)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 300),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0.0, 0.1, 0.45, 3.0]),
    st.integers(1, 100),
)
def test_get_many_matches_get_on_jittery_streams(n, seed, jitter, count):
    # Batch lookups find each stamp's neighbours from the previous stamp's; whatever the
    # spacing, they must find what the binary search of a single lookup finds.
    import numpy as np

    rng = np.random.default_rng(seed)
    steps = np.maximum(1, np.round(1000 * (1 + jitter * rng.standard_normal(n)))).astype(int)
    stamps = (10_000 + np.cumsum(steps)).tolist()
    parents = ["p1" if (k // 50) % 2 == 0 else "p2" for k in range(n)]
    ts = sorted(rng.integers(stamps[0] - 3000, stamps[-1] + 3000, count).tolist())
    _batch_against_single(stamps, parents, ts + stamps[:3])


# --- against a plain reference model of tf2's insert rules -----------------------------------



def reference_insert(model, stamp, cache_time):
    """tf2's insertData (R2 §3.2) with the tf2py equal-stamp replacement, on a dict."""
    if model:
        latest = max(model)
        for s in [s for s in model if s + cache_time < latest]:
            del model[s]
        if stamp < latest - cache_time:
            return False
    model[stamp] = stamp
    return True


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 400), min_size=1, max_size=300),
    st.sampled_from([0, 5, 50, 100]),
)
def test_inserts_match_reference_model(stamps, cache_time):
    cache = TimeCache(cache_time)
    model = {}
    for stamp in stamps:
        assert put(cache, stamp, x=float(stamp)) == reference_insert(model, stamp, cache_time)
        assert [s for s, _, _ in cache.samples()] == sorted(model)
        assert [v[0] for _, v, _ in cache.samples()] == [float(s) for s in sorted(model)]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-3, 10), min_size=100, max_size=1500), st.sampled_from([20, 100]))
def test_long_mostly_ordered_streams_match_reference_model(steps, cache_time):
    # Long streams exercise the start offset and the compaction of the pruned prefix.
    cache = TimeCache(cache_time)
    model = {}
    stamp = 1000
    for step in steps:
        stamp += step
        assert put(cache, stamp, x=float(stamp)) == reference_insert(model, stamp, cache_time)
    assert [s for s, _, _ in cache.samples()] == sorted(model)
    assert [v[0] for _, v, _ in cache.samples()] == [float(s) for s in sorted(model)]
    for s in sorted(model):
        assert cache.get(s)[0] == float(s)
