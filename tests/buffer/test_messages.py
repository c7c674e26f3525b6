"""Message classes, make_transform and the matrix helpers."""

import math

import numpy as np
import pytest

from tf2py import (
    Header,
    Point,
    Quaternion,
    Time,
    Transform,
    TransformStamped,
    Vector3,
    make_transform,
)
from tf2py.buffer.messages import quaternion_from_rpy, rpy_from_quaternion


def test_default_quaternion_is_identity():
    assert tuple(Quaternion()) == (0.0, 0.0, 0.0, 1.0)


def test_default_transform_stamped_has_identity_rotation_and_empty_ids():
    t = TransformStamped()
    assert t.header.frame_id == "" and t.child_frame_id == ""
    assert t.header.stamp == Time()
    assert tuple(t.transform.rotation) == (0.0, 0.0, 0.0, 1.0)


def test_messages_compare_by_value_and_type():
    assert Vector3(1, 2, 3) == Vector3(1, 2, 3)
    assert Vector3(1, 2, 3) != Vector3(1, 2, 4)
    assert Point(1, 2, 3) != Vector3(1, 2, 3)


def test_header_accepts_seconds_as_stamp():
    assert Header(1.5, "map").stamp == Time(1, 500_000_000)


def test_make_transform_builds_parent_child_and_values():
    t = make_transform("map", "odom", (1, 2, 3), (0, 0, 1, 0), stamp=Time(4, 5))
    assert t.header.frame_id == "map" and t.child_frame_id == "odom"
    assert t.header.stamp == Time(4, 5)
    assert tuple(t.transform.translation) == (1.0, 2.0, 3.0)
    assert tuple(t.transform.rotation) == (0.0, 0.0, 1.0, 0.0)


def test_make_transform_rpy_matches_tf2_set_rpy():
    # tf2_echo's reference example: setRPY(0.1, 0.2, 0.3) -> [0.034, 0.106, 0.144, 0.983]
    q = make_transform("a", "b", rpy=(0.1, 0.2, 0.3)).transform.rotation
    assert [round(v, 3) for v in q] == [0.034, 0.106, 0.144, 0.983]


def test_make_transform_refuses_rotation_and_rpy_together():
    with pytest.raises(ValueError, match="not both"):
        make_transform("a", "b", rotation=(0, 0, 1, 0), rpy=(0, 0, 1))


def test_make_transform_refuses_wrong_lengths():
    with pytest.raises(ValueError, match="translation"):
        make_transform("a", "b", translation=(1, 2))
    with pytest.raises(ValueError, match="rotation"):
        make_transform("a", "b", rotation=(0, 0, 1))


def test_rpy_round_trip():
    for rpy in [(0.1, 0.2, 0.3), (-1.0, 0.5, 3.0), (0.0, 0.0, -math.pi / 2)]:
        assert np.allclose(rpy_from_quaternion(*quaternion_from_rpy(*rpy)), rpy)


def test_as_matrix_of_a_yaw_of_90_degrees():
    t = make_transform("a", "b", (1, 2, 3), rpy=(0, 0, math.pi / 2)).transform
    expected = np.array([[0, -1, 0, 1], [1, 0, 0, 2], [0, 0, 1, 3], [0, 0, 0, 1.0]])
    assert np.allclose(t.as_matrix(), expected)


@pytest.mark.parametrize(
    "q",
    [(0, 0, 0, 1), (1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0.5, -0.5, 0.5, 0.5),
     (0.034270798550482096, 0.10602051106179562, 0.1435721750273919, 0.9833474432563558)],
)
def test_from_matrix_inverts_as_matrix(q):
    t = Transform(Vector3(1, -2, 0.5), Quaternion(*q))
    back = Transform.from_matrix(t.as_matrix())
    assert np.allclose(back.as_matrix(), t.as_matrix())
    assert (back.translation.x, back.translation.y, back.translation.z) == (1, -2, 0.5)


def test_from_matrix_refuses_wrong_shape():
    with pytest.raises(ValueError, match="4x4"):
        Transform.from_matrix(np.eye(3))
