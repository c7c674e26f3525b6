"""BufferCore.set_transforms agrees row for row with set_transform_values: same stored
samples, same old-data refusals, same invalid rows with the same messages, same authority,
at every batch size (small batches and the vectorised path with its inlined append)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tf2py import InvalidArgumentException
from tf2py.buffer.core import BatchResult, BufferCore

MS = 1_000_000
FRAMES = ["a", "b", "c", "/c", "d", ""]
UNIT = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
BAD_NUMBERS = [
    (math.nan, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0),
    (0.0, math.inf, 0.0, 0.0, 0.0, 0.0, 1.0),
    (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0),  # not a unit quaternion
    (0.0, 0.0, 0.0, math.nan, 0.0, 0.0, 1.0),
    (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),  # zero quaternion
    (1e200, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0),  # huge but valid: its squares overflow
]

good_values = st.builds(
    lambda x, yaw, w: (x, 0.5, -x, 0.0, 0.0, math.sin(yaw) * w, math.cos(yaw) * w),
    st.floats(-10, 10),
    st.floats(-3, 3),
    # within the tolerance: normalized (the larger ones also fail the batch's quick check,
    # which then takes the per-row mask)
    st.sampled_from([1.0, 1.0001, 0.9999, 1.004, 0.997]),
)
# Mostly valid rows, so that many batches take the quick all-valid path.
row_values = st.one_of(good_values, good_values, good_values, st.sampled_from(BAD_NUMBERS))
rows = st.tuples(
    st.sampled_from(FRAMES),
    st.sampled_from(FRAMES),
    st.integers(0, 60).map(lambda k: k * 10 * MS),
    row_values,
)
batches = st.lists(
    st.tuples(st.lists(rows, min_size=1, max_size=20), st.booleans(), st.sampled_from("xyz")),
    min_size=1,
    max_size=8,
)


def one_by_one(core, parents, children, stamps, values, authority, is_static):
    """The expected BatchResult: each row through set_transform_values."""
    stored = old = 0
    invalid = []
    for k in range(len(parents)):
        try:
            if core.set_transform_values(
                parents[k], children[k], stamps[k], *values[k], authority, is_static
            ):
                stored += 1
            else:
                old += 1
        except InvalidArgumentException as exc:
            invalid.append((k, str(exc)))
    return stored, old, invalid


def state(core):
    return {
        name: (info["is_static"], info["broadcaster"], core.samples(name))
        for name, info in core.frames_info().items()
    }


def assert_same_state(batch_core, single_core):
    a, b = state(batch_core), state(single_core)
    assert a.keys() == b.keys()
    for name in a:
        static_a, authority_a, samples_a = a[name]
        static_b, authority_b, samples_b = b[name]
        assert (static_a, authority_a) == (static_b, authority_b), name
        assert [(s, p) for s, _, p in samples_a] == [(s, p) for s, _, p in samples_b], name
        for (_, va, _), (_, vb, _) in zip(samples_a, samples_b):
            assert va == pytest.approx(vb, rel=1e-15, abs=1e-15), name


def insert_both(batch_core, single_core, parents, children, stamps, values, authority, static):
    result = batch_core.set_transforms(
        parents, children, np.array(stamps, dtype=np.int64),
        np.array(values, dtype=np.float64), authority, static,
    )
    expected = one_by_one(single_core, parents, children, stamps, values, authority, static)
    assert isinstance(result, BatchResult)
    assert (result.stored, result.old, [(k, str(e)) for k, e in result.invalid]) == expected
    assert all(isinstance(e, InvalidArgumentException) for _, e in result.invalid)


@settings(max_examples=150, deadline=None)
@given(batches)
def test_batch_insert_matches_single_inserts(batches):
    batch_core = BufferCore(cache_time=0.2)
    single_core = BufferCore(cache_time=0.2)
    for rows_, static, authority in batches:
        parents = [r[0] for r in rows_]
        children = [r[1] for r in rows_]
        stamps = [r[2] for r in rows_]
        values = [r[3] for r in rows_]
        insert_both(batch_core, single_core, parents, children, stamps, values, authority, static)
    assert_same_state(batch_core, single_core)


@pytest.mark.parametrize("size", [1, 7, 8, 50])
def test_steady_stream_with_pruning_and_compaction_matches_single_inserts(size):
    # In-order messages of `size` frames, 10 ms apart, over a 0.5 s window: every row
    # prunes one sample and the arrays are compacted many times.
    batch_core = BufferCore(cache_time=0.5)
    single_core = BufferCore(cache_time=0.5)
    parents = ["world"] * size
    children = ["f%d" % i for i in range(size)]
    for m in range(300):
        yaw = 0.01 * m
        values = [(m, i, 0.0, 0.0, 0.0, math.sin(yaw), math.cos(yaw)) for i in range(size)]
        insert_both(batch_core, single_core, parents, children, [m * 10 * MS] * size, values,
                    "s", False)
        # Pruned exactly as the single insert prunes, after every message.
        lengths = {n: i["buffer_length"] for n, i in batch_core.frames_info().items()}
        assert lengths == {n: i["buffer_length"] for n, i in single_core.frames_info().items()}
    assert_same_state(batch_core, single_core)
    # Pruned relative to the latest stamp before each insert: 2.48 s .. 2.99 s stay.
    assert batch_core.frames_info()["f0"]["buffer_length"] == 52


def test_large_batch_refuses_old_rows_and_replaces_equal_stamps():
    core = BufferCore(cache_time=1.0)
    stamps = [5000, 5000, 3000, 4500, 6000, 3999, 4000, 6000, 2000, 7000]
    values = np.array([(k, 0, 0, 0, 0, 0, 1) for k in range(10)], dtype=np.float64)
    result = core.set_transforms(["p"] * 10, ["c"] * 10, [s * MS for s in stamps], values, "x")
    # 3000 is older than 5000 - 1 s; 3999 prunes 4500 (older than 6000 - 1 s) and is
    # refused, as are 4000 and 2000; the second 5000 and 6000 replace the first.
    assert result == BatchResult(6, 4, [])
    samples = core.samples("c")
    assert [(s // MS, v[0]) for s, v, _ in samples] == [(5000, 1.0), (6000, 7.0), (7000, 9.0)]


def test_large_batch_switches_static_and_dynamic_caches():
    core = BufferCore()
    values = np.tile(UNIT, (10, 1))
    core.set_transforms(["p"] * 10, ["c%d" % i for i in range(10)], [MS] * 10, values, "x")
    core.set_transforms(["p"] * 10, ["c%d" % i for i in range(10)], [2 * MS] * 10, values,
                        "y", is_static=True)
    assert core.frames_info()["c3"]["is_static"] is True
    assert core.lookup_transform("p", "c3", 123.0).transform.rotation.w == 1.0
    core.set_transforms(["p"] * 10, ["c%d" % i for i in range(10)], [3 * MS] * 10, values, "z")
    info = core.frames_info()["c3"]
    assert (info["is_static"], info["buffer_length"], info["broadcaster"]) == (False, 1, "z")


def test_large_batch_with_unhashable_frame_id_names_it_and_keeps_the_rest():
    core = BufferCore()
    parents = ["p"] * 10
    parents[4] = ["not", "hashable"]
    result = core.set_transforms(parents, ["c%d" % i for i in range(10)], [MS] * 10,
                                 np.tile(UNIT, (10, 1)), "x")
    assert result.stored == 9
    assert [k for k, _ in result.invalid] == [4]
    assert "must be a str" in str(result.invalid[0][1])


def test_large_batch_from_read_only_buffers_is_stored_and_normalized():
    # What the listener passes: np.frombuffer arrays (read-only).
    values = np.tile([1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0001], (20, 1))
    v = np.frombuffer(values.tobytes(), dtype="<f8").reshape(20, 7)
    s = np.frombuffer(np.arange(1, 21, dtype="<i8").tobytes() , dtype="<i8") * MS
    core = BufferCore()
    assert core.set_transforms(["p"] * 20, ["c"] * 20, s, v, "x") == BatchResult(20, 0, [])
    assert core.lookup_transform("p", "c", 0.0105).transform.rotation.w == pytest.approx(
        1.0, abs=1e-15
    )
    assert not v.flags.writeable and v[0, 6] == 1.0001
