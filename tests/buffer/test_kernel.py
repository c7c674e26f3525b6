"""The compiled kernel seen from Python: batch and single lookups agree (one walk), times
beyond 64-bit nanoseconds are never wrapped, and no input from Python crashes the process."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tf2py.buffer import _kernel_ext
from tf2py.buffer.core import BufferCore
from tf2py.buffer.exceptions import (
    ForwardExtrapolationException,
    InvalidArgumentException,
    TransformException,
)
from tf2py.buffer.messages import Transform, make_transform

S = 1_000_000_000
FRAMES = ["f0", "f1", "f2", "f3", "f4", "f5"]

# --- batch lookups agree with single lookups on random graphs -----------------------------

samples = st.tuples(
    st.sampled_from(FRAMES),  # child
    st.sampled_from(FRAMES),  # parent (re-parenting and loops happen)
    st.integers(1, 40),  # stamp, in tenths of a second
    st.floats(-3.0, 3.0),  # yaw
    st.booleans(),  # static
)


def _single(core, target, source, t):
    try:
        return core.lookup_transform(target, source, t).transform.as_matrix()
    except TransformException as exc:
        return exc


@settings(max_examples=200, deadline=None)
@given(
    st.lists(samples, min_size=1, max_size=40),
    st.sampled_from(FRAMES),
    st.sampled_from(FRAMES),
    st.lists(st.integers(0, 45), min_size=1, max_size=12),
)
def test_batch_and_single_lookups_agree_on_random_graphs(inserts, target, source, stamps):
    core = BufferCore(cache_time=2.0)
    for child, parent, stamp, yaw, static in inserts:
        if child == parent:
            continue
        q = (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))
        t = make_transform(parent, child, (yaw, 1.0, -yaw), q, stamp=stamp / 10)
        core.set_transform(t, "x", is_static=static)
    times = [s / 10 for s in sorted(stamps)]
    singles = [_single(core, target, source, t) for t in times]
    failures = [r for r in singles if isinstance(r, Exception)]
    if not failures:
        batch = core.lookup_transforms(target, source, times)
        for k, expected in enumerate(singles):
            assert batch[k] == pytest.approx(expected, abs=1e-12)
    else:
        with pytest.raises(TransformException) as info:
            core.lookup_transforms(target, source, times)
        assert type(info.value) is type(failures[0])
        assert str(info.value) == str(failures[0])


# --- times: integers and times beyond 64-bit nanoseconds ----------------------------------


@pytest.fixture
def core():
    c = BufferCore()
    for t in (1, 2, 3):
        c.set_transform(make_transform("a", "b", (t, 0, 0), stamp=t), "x")
    c.set_transform_static(make_transform("a", "s", (7, 0, 0)), "x")
    return c


def test_lookup_transforms_takes_integer_seconds(core):
    ints = core.lookup_transforms("a", "b", np.array([1, 2, 3]))
    floats = core.lookup_transforms("a", "b", [1.0, 2.0, 3.0])
    assert np.array_equal(ints, floats)
    assert ints[:, 0, 3].tolist() == [1.0, 2.0, 3.0]
    assert core.lookup_transforms("a", "b", [2])[0, 0, 3] == 2.0
    assert core.lookup_transforms("a", "b", np.array([2], dtype=np.uint64))[0, 0, 3] == 2.0


@pytest.mark.parametrize(
    "times, single",
    [
        (np.array([10**10]), 10**10),  # int seconds beyond int64 ns
        (np.array([2**63 - 1], dtype=np.int64), 2**63 - 1),
        (np.array([2**64 - 1], dtype=np.uint64), 2**64 - 1),
        ([1e30], 1e30),
    ],
)
def test_huge_times_are_forward_extrapolation_never_wrapped(core, times, single):
    with pytest.raises(ForwardExtrapolationException) as batch:
        core.lookup_transforms("a", "b", times)
    with pytest.raises(ForwardExtrapolationException) as one:
        core.lookup_transform("a", "b", single)
    assert str(batch.value) == str(one.value)
    assert "but the latest data is at time 3.000000" in str(one.value)
    assert "Requested time -" not in str(one.value)


def test_huge_negative_times_are_backward_extrapolation(core):
    with pytest.raises(TransformException, match=r"Requested time -10000000000\.000000"):
        core.lookup_transforms("a", "b", np.array([-(10**10)]))


def test_static_links_answer_at_huge_times(core):
    out = core.lookup_transforms("a", "s", np.array([10**10, 1]))
    assert out[:, 0, 3].tolist() == [7.0, 7.0]
    assert core.lookup_transform("a", "s", 10**10).header.stamp.nanoseconds == 10**19


def test_times_that_are_not_numbers_are_invalid(core):
    for bad in (["x"], [math.nan], [math.inf], np.array([True])):
        with pytest.raises(InvalidArgumentException):
            core.lookup_transforms("a", "b", bad)


# --- Transform.from_matrix refuses what is not a rigid transform --------------------------


@pytest.mark.parametrize(
    "matrix, why",
    [
        (np.diag([2.0, 2.0, 2.0, 1.0]), "scale"),
        (np.diag([1.0, 1.0, -1.0, 1.0]), "reflection"),
        (np.array([[1, 0.5, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]]), "orthonormal"),
        (np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1.0]]), "bottom row"),
        (np.full((4, 4), np.nan), "finite"),
    ],
)
def test_from_matrix_refuses_a_matrix_that_is_not_rigid(matrix, why):
    with pytest.raises(ValueError, match=why):
        Transform.from_matrix(matrix)


def test_from_matrix_round_trips_a_rigid_transform():
    t = make_transform("a", "b", (1, 2, 3), rpy=(0.1, -0.2, 2.5)).transform
    back = Transform.from_matrix(t.as_matrix())
    assert back.as_matrix() == pytest.approx(t.as_matrix(), abs=1e-12)


# --- garbage at every entry point never crashes the process -------------------------------

GARBAGE = [None, 1, -1, 2**70, 1.5, math.nan, "x", "", "/x", b"x", [], ["a"], (), {}, object(),
           np.zeros(3), np.zeros((2, 7)), "\udcff"]


def _call_all(kernel, value):
    """Every binding entry point with ``value`` in every argument position."""
    calls = {
        "insert": 12, "insert_batch": 7, "lookup": 3, "lookup_full": 5, "can": 3,
        "common_time": 2, "chain": 5, "lookup_many": 3,
        "ancestors": 2, "get_parent": 2, "exists": 1, "samples": 1,
        "insert_rows": 6, "insert_trajectory": 6, "lookup_transform": 3,
        "lookup_transform_waiting": 4, "can_transform": 3,
        "can_transform_waiting": 4, "set_transform": 3, "set_insert_mode": 1,
    }
    good = {
        "insert": ["p", "c", 1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, "x", False],
        "insert_batch": [["p"], ["c"], np.array([1]), np.array([[0, 0, 0, 0, 0, 0, 1.0]]), "x",
                         False, np.zeros(1, dtype=np.int32)],
        "lookup": ["p", "c", 0], "lookup_full": ["p", 0, "c", 0, "p"],
        "can": ["p", "c", 0],
        "common_time": ["p", "c"], "chain": ["p", 0, "c", 0, "p"],
        "insert_rows": [["p"], ["c"], np.array([1]), np.array([[0, 0, 0, 0, 0, 0, 1.0]]), "x", False],
        "insert_trajectory": ["p", "c", np.array([1]), np.array([[0, 0, 0, 0, 0, 0, 1.0]]), "x",
                                 False],
        "lookup_transform": ["p", "c", 0.0], "can_transform": ["p", "c", 0.0],
        "lookup_transform_waiting": ["p", "c", 0.0, 0.0],
        "can_transform_waiting": ["p", "c", 0.0, 0.0],
        "set_transform": [make_transform("p", "c"), "x", False], "set_insert_mode": [0],
        "lookup_many": ["p", "c", np.array([0, 1])], "ancestors": [["c"], 0],
        "get_parent": ["c", 0], "exists": ["c"], "samples": ["c"],
    }
    for name, n in calls.items():
        method = getattr(kernel, name)
        for k in range(n):
            args = list(good[name])
            args[k] = value
            try:
                method(*args)
            except (TypeError, ValueError, _kernel_ext.KernelError):
                pass
    kernel.frame_table()
    kernel.frames()


@pytest.mark.parametrize("value", GARBAGE, ids=[repr(v)[:20] for v in GARBAGE])
def test_garbage_at_every_binding_entry_point_is_refused_or_handled(value):
    kernel = _kernel_ext.Kernel(10 * S)
    kernel.insert("p", "c", 1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, "x", False)
    _call_all(kernel, value)
    # The store still answers as before.
    assert kernel.lookup("p", "c", 1)[:7] == (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def test_insert_batch_checks_sizes_and_types():
    kernel = _kernel_ext.Kernel(10 * S)
    rows = np.array([[0, 0, 0, 0, 0, 0, 1.0]])
    codes = np.zeros(1, dtype=np.int32)
    for args in [
        (["p", "p"], ["c"], np.array([1]), rows, "x", False, codes),
        (["p"], ["c"], np.array([1, 2]), rows, "x", False, codes),
        (["p"], ["c"], np.array([1]), np.zeros((1, 6)), "x", False, codes),
        (["p"], ["c"], np.array([1]), rows, "x", False, np.zeros(2, dtype=np.int32)),
        (["p"], ["c"], np.array([1.0]), rows, "x", False, codes),
        (["p"], ["c"], np.array([1]), rows.astype(np.float32), "x", False, codes),
        (["p"], ["c"], np.array([1]), np.zeros((1, 14))[:, ::2], "x", False, codes),
    ]:
        with pytest.raises((TypeError, ValueError)):
            kernel.insert_batch(*args)
    assert kernel.frames() == []
    assert kernel.insert_batch([5], ["c"], np.array([1]), rows, "x", False, codes) == (0, 0)
    assert codes[0] == _kernel_ext.NAME_TYPE


def test_public_api_turns_garbage_into_tf2_errors():
    core = BufferCore()
    core.set_transform(make_transform("a", "b", stamp=1.0), "x")
    for target, source in [(None, "b"), ("a", None), (1, "b"), ("a", ["b"])]:
        with pytest.raises(InvalidArgumentException):
            core.lookup_transform(target, source, 1.0)
        assert core.can_transform(target, source, 1.0) is False
        with pytest.raises(InvalidArgumentException):
            core.lookup_transforms(target, source, [1.0])
    for bad_time in (None, "1", [1.0], object()):
        with pytest.raises(InvalidArgumentException):
            core.lookup_transform("a", "b", bad_time)
    with pytest.raises(InvalidArgumentException):
        core.set_transform_values("a", "b", 1, None, 0, 0, 0, 0, 0, 1, "x")
    assert core.get_parent(None, 1.0) is None


def test_a_subprocess_survives_a_garbage_storm():
    # The same storm in a fresh interpreter: a crash there is a non-zero exit, not a pass.
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "import test_kernel as t\n"
        "from tf2py.buffer import _kernel_ext\n"
        "k = _kernel_ext.Kernel(10**10)\n"
        "k.insert('p', 'c', 1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 'x', False)\n"
        "for v in t.GARBAGE: t._call_all(k, v)\n"
        "print('ok')\n" % (__file__.rsplit("/", 1)[0],)
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
