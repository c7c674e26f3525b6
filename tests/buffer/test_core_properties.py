"""Property tests: a lookup and its inverse compose to identity; chained lookups compose
(T(a<-c) == T(a<-b)·T(b<-c)); the batch form agrees with the single form."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tf2py import make_transform
from tf2py.buffer.core import BufferCore

FRAMES = ["f0", "f1", "f2", "f3", "f4", "f5"]

finite = st.floats(-100.0, 100.0, allow_nan=False)
unit_quaternion = (
    st.tuples(*[st.floats(-1.0, 1.0, allow_nan=False)] * 4)
    .filter(lambda q: sum(x * x for x in q) > 0.01)
    .map(lambda q: tuple(np.array(q) / np.linalg.norm(q)))
)
sample = st.tuples(st.tuples(finite, finite, finite), unit_quaternion)


@st.composite
def trees(draw):
    """A random tree over FRAMES (each frame's parent is an earlier frame), two samples per
    link at 1 s and 2 s, some links static."""
    core = BufferCore()
    for i in range(1, len(FRAMES)):
        parent = FRAMES[draw(st.integers(0, i - 1))]
        if draw(st.booleans()):
            translation, rotation = draw(sample)
            core.set_transform_static(
                make_transform(parent, FRAMES[i], translation, rotation), "h"
            )
        else:
            for t in (1.0, 2.0):
                translation, rotation = draw(sample)
                core.set_transform(
                    make_transform(parent, FRAMES[i], translation, rotation, stamp=t), "h"
                )
    return core


frame = st.sampled_from(FRAMES)
when = st.floats(1.0, 2.0)


def matrix(core, target, source, t):
    return core.lookup_transform(target, source, t).transform.as_matrix()


@settings(max_examples=60, deadline=None)
@given(trees(), frame, frame, when)
def test_lookup_and_inverse_compose_to_identity(core, a, b, t):
    np.testing.assert_allclose(matrix(core, a, b, t) @ matrix(core, b, a, t), np.eye(4), atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(trees(), frame, frame, frame, when)
def test_chained_lookups_compose(core, a, b, c, t):
    np.testing.assert_allclose(
        matrix(core, a, c, t), matrix(core, a, b, t) @ matrix(core, b, c, t), atol=1e-9
    )


@settings(max_examples=40, deadline=None)
@given(trees(), frame, frame, st.lists(when, min_size=1, max_size=20))
def test_batch_agrees_with_single(core, a, b, times):
    batch = core.lookup_transforms(a, b, np.array(times))
    for k, t in enumerate(times):
        np.testing.assert_allclose(batch[k], matrix(core, a, b, t), atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(trees(), frame, frame, when)
def test_rotation_stays_unit(core, a, b, t):
    q = core.lookup_transform(a, b, t).transform.rotation
    assert abs(q.x**2 + q.y**2 + q.z**2 + q.w**2 - 1.0) < 1e-9


@st.composite
def forests(draw):
    """Random forests (some frames without parent), links with data over random ranges,
    a few reparented frames and static links."""
    core = BufferCore()
    for i in range(1, len(FRAMES)):
        for _ in range(draw(st.integers(0, 3))):
            parent = FRAMES[draw(st.integers(0, i - 1))]
            t = draw(st.sampled_from([0.0, 1.0, 1.5, 2.0, 3.0]))
            translation, rotation = draw(sample)
            ts = make_transform(parent, FRAMES[i], translation, rotation, stamp=t)
            if draw(st.integers(0, 4)) == 0:
                core.set_transform_static(ts, "h")
            else:
                core.set_transform(ts, "h")
    return core


@settings(max_examples=150, deadline=None)
@given(forests(), frame, frame, st.sampled_from([0.0, 0.5, 1.0, 1.25, 2.0, 2.5, 3.0, 4.0]))
def test_can_transform_agrees_with_lookup(core, a, b, t):
    try:
        core.lookup_transform(a, b, t)
        expected = True
    except Exception as exc:  # noqa: BLE001 - any TransformException
        from tf2py import TransformException

        assert isinstance(exc, TransformException)
        expected = False
    assert core.can_transform(a, b, t) is expected
    assert core._can_transform_core(a, b, t)[0] is expected


@settings(max_examples=150, deadline=None)
@given(
    forests(),
    frame,
    frame,
    st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.25, 1.75, 2.0, 2.5, 3.0, 4.0]), min_size=1, max_size=8),
)
def test_batch_agrees_with_single_on_forests(core, a, b, times):
    from tf2py import TransformException

    expected = []
    first_error = None
    for t in times:
        try:
            expected.append(matrix(core, a, b, t))
        except TransformException as exc:
            first_error = exc
            break
    if first_error is None:
        np.testing.assert_allclose(core.lookup_transforms(a, b, np.array(times)), expected, atol=1e-9)
    else:
        try:
            core.lookup_transforms(a, b, np.array(times))
        except TransformException as exc:
            assert type(exc) is type(first_error)
            assert str(exc) == str(first_error)
        else:
            raise AssertionError("lookup_transforms did not raise %r" % first_error)


@settings(max_examples=60, deadline=None)
@given(trees(), frame, frame, frame, when, when)
def test_full_lookup_is_composition_through_fixed_frame(core, target, source, fixed, tt, ts):
    full = core.lookup_transform_full(target, tt, source, ts, fixed).transform.as_matrix()
    np.testing.assert_allclose(
        full, matrix(core, target, fixed, tt) @ matrix(core, fixed, source, ts), atol=1e-9
    )
