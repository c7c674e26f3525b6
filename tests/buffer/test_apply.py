"""Applying transforms to points, vectors, poses, transforms and (N, 3) arrays, checked
against numbers worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf2py.buffer.apply import (
    copy_transform_stamped,
    do_transform,
    do_transform_point,
    do_transform_pose,
    do_transform_transform,
    do_transform_vector3,
    rotation_matrix,
    transform_point_array,
)
from tf2py.buffer.messages import (
    Header,
    Point,
    PointStamped,
    Pose,
    PoseStamped,
    Quaternion,
    Vector3,
    Vector3Stamped,
    make_transform,
)
from tf2py.buffer.time import Time

S = math.sqrt(0.5)
STAMP = Time(12, 345)


def yaw90_a_from_b():
    """Maps data in b into a: rotate 90° about z, then translate by (1, 2, 3)."""
    return make_transform("a", "b", (1.0, 2.0, 3.0), (0.0, 0.0, S, S), stamp=STAMP)


def roll180_a_from_b():
    """Maps data in b into a: rotate 180° about x, no translation."""
    return make_transform("a", "b", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0), stamp=STAMP)


def assert_xyz(v, expected):
    assert (v.x, v.y, v.z) == pytest.approx(expected, abs=1e-12)


def assert_same_rotation(q, expected):
    got = np.array([q.x, q.y, q.z, q.w])
    want = np.array(expected)
    assert min(np.abs(got - want).max(), np.abs(got + want).max()) < 1e-12


def test_point_is_rotated_then_translated():
    point = PointStamped(Header(STAMP, "b"), Point(1.0, 0.0, 0.0))
    out = do_transform_point(point, yaw90_a_from_b())
    assert_xyz(out.point, (1.0, 3.0, 3.0))


def test_point_result_carries_the_transform_header():
    point = PointStamped(Header(Time(1), "b"), Point(1.0, 0.0, 0.0))
    out = do_transform_point(point, yaw90_a_from_b())
    assert out.header.frame_id == "a"
    assert out.header.stamp == STAMP


def test_point_rotated_180_about_x_flips_y_and_z():
    point = PointStamped(Header(STAMP, "b"), Point(0.5, 1.0, 2.0))
    out = do_transform_point(point, roll180_a_from_b())
    assert_xyz(out.point, (0.5, -1.0, -2.0))


def test_vector_ignores_translation():
    vector = Vector3Stamped(Header(STAMP, "b"), Vector3(1.0, 0.0, 0.0))
    out = do_transform_vector3(vector, yaw90_a_from_b())
    assert_xyz(out.vector, (0.0, 1.0, 0.0))
    assert out.header.frame_id == "a"


def test_pose_position_and_orientation_are_composed():
    # orientation 90° about x, then the transform's 90° about z: 120° about (1, 1, 1).
    pose = PoseStamped(
        Header(STAMP, "b"), Pose(Point(1.0, 0.0, 0.0), Quaternion(S, 0.0, 0.0, S))
    )
    out = do_transform_pose(pose, yaw90_a_from_b())
    assert_xyz(out.pose.position, (1.0, 3.0, 3.0))
    assert_same_rotation(out.pose.orientation, (0.5, 0.5, 0.5, 0.5))


def test_transform_stamped_maps_its_child_into_the_target_frame():
    b_from_c = make_transform("b", "c", (1.0, 0.0, 0.0), (S, 0.0, 0.0, S), stamp=Time(1))
    out = do_transform_transform(b_from_c, yaw90_a_from_b())
    assert out.header.frame_id == "a"
    assert out.header.stamp == STAMP
    assert out.child_frame_id == "c"
    assert_xyz(out.transform.translation, (1.0, 3.0, 3.0))
    assert_same_rotation(out.transform.rotation, (0.5, 0.5, 0.5, 0.5))


def test_transform_stamped_result_matches_matrix_product():
    a_from_b = make_transform("a", "b", (0.3, -1.0, 2.0), rpy=(0.1, -0.7, 2.5))
    b_from_c = make_transform("b", "c", (-2.0, 0.5, 0.25), rpy=(1.2, 0.4, -0.3))
    out = do_transform_transform(b_from_c, a_from_b)
    expected = a_from_b.transform.as_matrix() @ b_from_c.transform.as_matrix()
    np.testing.assert_allclose(out.transform.as_matrix(), expected, atol=1e-12)


def test_inputs_are_not_modified():
    point = PointStamped(Header(Time(1), "b"), Point(1.0, 0.0, 0.0))
    transform = yaw90_a_from_b()
    do_transform_point(point, transform)
    assert point == PointStamped(Header(Time(1), "b"), Point(1.0, 0.0, 0.0))
    assert transform == yaw90_a_from_b()


def test_slightly_unnormalised_rotation_does_not_scale_the_point():
    transform = make_transform("a", "b", rotation=(0.0, 0.0, 0.0, 1.004))
    out = do_transform_point(PointStamped(Header(STAMP, "b"), Point(2.0, 0.0, 0.0)), transform)
    assert_xyz(out.point, (2.0, 0.0, 0.0))


def test_do_transform_dispatches_on_type():
    transform = yaw90_a_from_b()
    for obj in (
        PointStamped(Header(STAMP, "b")),
        Vector3Stamped(Header(STAMP, "b")),
        PoseStamped(Header(STAMP, "b")),
        make_transform("b", "c"),
    ):
        assert type(do_transform(obj, transform)) is type(obj)


def test_do_transform_of_unsupported_type_names_it_and_the_supported_ones():
    with pytest.raises(TypeError) as info:
        do_transform(Point(1.0, 2.0, 3.0), yaw90_a_from_b())
    message = str(info.value)
    assert "Point" in message
    for name in ("PointStamped", "Vector3Stamped", "PoseStamped", "TransformStamped"):
        assert name in message


def test_point_array_matches_hand_computed_rows():
    points = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    out = transform_point_array(points, yaw90_a_from_b())
    np.testing.assert_allclose(
        out, [[1.0, 3.0, 3.0], [0.0, 2.0, 3.0], [1.0, 2.0, 4.0]], atol=1e-12
    )


def test_point_array_matches_per_point_transform():
    rng = np.random.default_rng(7)
    points = rng.normal(size=(50, 3)) * 10.0
    transform = make_transform("a", "b", (0.3, -1.0, 2.0), rpy=(0.1, -0.7, 2.5))
    out = transform_point_array(points, transform)
    for row, p in zip(out, points):
        single = do_transform_point(PointStamped(Header(STAMP, "b"), Point(*p)), transform)
        np.testing.assert_allclose(row, tuple(single.point), atol=1e-9)


def test_point_array_leaves_input_untouched_and_returns_float64():
    points = np.array([[1, 2, 3]], dtype=np.int32)
    out = transform_point_array(points, yaw90_a_from_b())
    assert out.dtype == np.float64 and out.shape == (1, 3)
    assert points.tolist() == [[1, 2, 3]]


def test_point_array_of_zero_points_is_empty():
    out = transform_point_array(np.empty((0, 3)), yaw90_a_from_b())
    assert out.shape == (0, 3)


@pytest.mark.parametrize("shape", [(3,), (4, 2), (2, 4), (2, 3, 1), ()])
def test_point_array_of_wrong_shape_raises_value_error_naming_the_shape(shape):
    with pytest.raises(ValueError, match=r"\(N, 3\).*got shape"):
        transform_point_array(np.zeros(shape), yaw90_a_from_b())


def test_point_array_of_non_numbers_raises_value_error():
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        transform_point_array([["a", "b", "c"]], yaw90_a_from_b())


def test_rotation_matrix_of_yaw90():
    np.testing.assert_allclose(
        rotation_matrix(yaw90_a_from_b()), [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12
    )


def test_copy_transform_stamped_is_equal_and_independent():
    original = yaw90_a_from_b()
    copy = copy_transform_stamped(original)
    assert copy == original
    copy.transform.translation.x = 99.0
    copy.header.frame_id = "z"
    assert original == yaw90_a_from_b()
